//! Every dialect's request parsing, fed generated requests: paths built from each dialect's
//! routes with generated segments, generated query strings, headers and bodies (random bytes,
//! deep or odd JSON, YAML). Whatever comes in, the node answers below `500` and stays up. A
//! bounded number of cases (`DROVER_FUZZ_CASES`, default 1,000 per dialect) keeps it in the test
//! command; the seed is fixed so a failure repeats.

use std::time::Duration;

use anyhow::{ensure, Result};
use drover_api::claimer::ClaimerOptions;
use drover_tests::client::http_client;
use drover_tests::cluster::{ClusterOptions, TestCluster};
use drover_tests::platform::{token, TEST_STATIC_TOKEN};
use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
use reqwest::Method;

/// A generated request.
#[derive(Debug, Clone)]
struct Probe {
    method: Method,
    path: String,
    query: String,
    content_type: Option<String>,
    idempotency_key: Option<String>,
    body: Vec<u8>,
}

fn segment() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("default".to_string()),
        Just("shop".to_string()),
        "[a-z0-9-]{1,70}",
        "[A-Za-z0-9._~%-]{0,20}",
        Just("%00".to_string()),
        Just("..".to_string()),
        Just("a".repeat(300)),
    ]
}

fn query() -> impl Strategy<Value = String> {
    let key = prop_oneof![
        Just("type"),
        Just("state"),
        Just("dest"),
        Just("owner"),
        Just("name"),
        Just("names"),
        Just("request_id"),
        Just("expire"),
        Just("fencing_token"),
        Just("watch"),
        Just("resourceVersion"),
        Just("labelSelector"),
        Just("fieldSelector"),
        Just("limit"),
        Just("continue"),
        Just("timeoutSeconds"),
        Just("consistency"),
        Just("fieldValidation"),
        Just("strict"),
        Just("role"),
    ];
    let value = prop_oneof![
        Just("free".to_string()),
        Just("true".to_string()),
        Just("18446744073709551615".to_string()),
        Just("-1".to_string()),
        Just("1".to_string()),
        "[ -~]{0,40}",
        "\\PC{0,10}",
    ];
    prop::collection::vec((key, value), 0..5).prop_map(|pairs| {
        pairs
            .into_iter()
            .map(|(k, v)| {
                let encoded: String = v
                    .bytes()
                    .map(|b| {
                        if b.is_ascii_alphanumeric() {
                            (b as char).to_string()
                        } else {
                            format!("%{b:02X}")
                        }
                    })
                    .collect();
                format!("{k}={encoded}")
            })
            .collect::<Vec<_>>()
            .join("&")
    })
}

fn json_value() -> impl Strategy<Value = serde_json::Value> {
    let leaf = prop_oneof![
        Just(serde_json::Value::Null),
        any::<bool>().prop_map(serde_json::Value::from),
        any::<i64>().prop_map(serde_json::Value::from),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(serde_json::Value::from),
        "\\PC{0,30}".prop_map(serde_json::Value::from),
    ];
    leaf.prop_recursive(6, 48, 6, |inner| {
        let key = prop_oneof![
            Just("metadata".to_string()),
            Just("spec".to_string()),
            Just("name".to_string()),
            Just("labels".to_string()),
            Just("holderIdentity".to_string()),
            Just("max_time".to_string()),
            Just("data".to_string()),
            Just("resourceVersion".to_string()),
            Just("apiVersion".to_string()),
            Just("kind".to_string()),
            Just("marks".to_string()),
            "[a-zA-Z]{1,10}",
        ];
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(serde_json::Value::from),
            prop::collection::btree_map(key, inner, 0..5)
                .prop_map(|m| serde_json::Value::Object(m.into_iter().collect())),
        ]
    })
}

fn body() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        Just(Vec::new()),
        prop::collection::vec(any::<u8>(), 0..200),
        json_value().prop_map(|v| v.to_string().into_bytes()),
        (1usize..5_000).prop_map(|depth| format!("{}{}", "[".repeat(depth), "]".repeat(depth)).into_bytes()),
        "[ -~\\n]{0,200}".prop_map(String::into_bytes),
        Just(b"resources:\n  - type: t\n    names: [a, b]\n".to_vec()),
    ]
}

fn probe(routes: &'static [&'static str]) -> impl Strategy<Value = Probe> {
    // Weighted toward the methods the routes serve, so that most cases reach a handler.
    let method = prop_oneof![
        3 => Just(Method::GET), 4 => Just(Method::POST), 2 => Just(Method::PUT),
        1 => Just(Method::PATCH), 1 => Just(Method::DELETE),
    ];
    let content_type = prop_oneof![
        Just(None),
        Just(Some("application/json".to_string())),
        Just(Some("application/merge-patch+json".to_string())),
        Just(Some("application/apply-patch+yaml".to_string())),
        Just(Some("text/plain".to_string())),
        "[ -~]{0,30}".prop_map(Some),
    ];
    let key = prop_oneof![
        Just(None),
        "[ -~]{1,20}".prop_map(Some),
        Just(Some("k".repeat(300)))
    ];
    (
        method,
        prop::sample::select(routes),
        prop::collection::vec(segment(), 4),
        query(),
        content_type,
        key,
        body(),
    )
        .prop_map(
            |(method, route, segments, query, content_type, idempotency_key, body)| {
                let mut segments = segments.into_iter();
                let path = route
                    .split('/')
                    .map(|part| {
                        if part == "*" {
                            segments.next().unwrap_or_default()
                        } else {
                            part.to_string()
                        }
                    })
                    .collect::<Vec<_>>()
                    .join("/");
                Probe {
                    method,
                    path,
                    query,
                    content_type,
                    idempotency_key,
                    body,
                }
            },
        )
}

const KUBE: &[&str] = &[
    "/apis/coordination.k8s.io/v1/namespaces/*/leases",
    "/apis/coordination.k8s.io/v1/namespaces/*/leases/*",
    "/apis/akka.io/v1/namespaces/*/leases",
    "/apis/akka.io/v1/namespaces/*/leases/*",
    "/apis/coordination.k8s.io/v1/leases",
    "/apis/*/*/namespaces/*/*",
    "/apis",
    "/api",
    "/version",
];
const BOSKOS: &[&str] = &[
    "/acquire",
    "/acquirebystate",
    "/release",
    "/update",
    "/reset",
    "/metric",
    "/pools/config",
    "/pools/resources",
];
const CLAIMER: &[&str] = &["/lease", "/lease/*", "/lease/*/*"];
const PLATFORM: &[&str] = &[
    "/api/1.0-beta/user",
    "/api/1.0-beta/user/info",
    "/api/1.0-beta/tenant",
    "/api/1.0-beta/tenant/*",
    "/api/1.0-beta/tenant/*/account/*",
    "/api/1.0-beta/tenant/*/account/*/environment/*",
    "/api/1.0-beta/tenant/*/secret/*",
    "/api/1.0-beta/tenant/*/port/*",
    "/api/1.0-beta/tenant/*/user/*",
    "/api/1.0-beta/user/provider",
    "/api/1.0-beta/platform",
];
// Membership changes are left out: an operator's generated `DELETE /cluster/members/2` would
// really remove a member.
const OPS: &[&str] = &[
    "/healthz",
    "/readyz",
    "/cluster",
    "/metrics",
    "/docs/",
    "/api/1.0-beta/openapi.json",
];

fn cases() -> u32 {
    std::env::var("DROVER_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000)
}

async fn fuzz(cluster: &TestCluster, name: &str, routes: &'static [&'static str], seed: u8) -> Result<()> {
    let strategy = probe(routes);
    let mut runner = TestRunner::new_with_rng(
        Config::default(),
        TestRng::from_seed(RngAlgorithm::ChaCha, &[seed; 32]),
    );
    // Mostly the operators' token, so that most cases get past authentication.
    let operator = Some(format!("Bearer {TEST_STATIC_TOKEN}"));
    let credentials = [
        operator.clone(),
        operator.clone(),
        operator.clone(),
        operator,
        Some(format!("Bearer {}", token("fuzzer"))),
        None,
        Some("Basic !!!".to_string()),
    ];
    let clients: Vec<_> = credentials.iter().map(|c| http_client(c.as_deref())).collect();
    let mut answered = 0u32;
    let mut by_status = std::collections::BTreeMap::<u16, u32>::new();
    for case in 0..cases() {
        let Ok(tree) = strategy.new_tree(&mut runner) else {
            continue;
        };
        let probe = tree.current();
        let node = 1 + u64::from(case % 3);
        let url = format!("http://{}{}?{}", cluster.api_addr(node), probe.path, probe.query);
        let mut request = clients[case as usize % clients.len()]
            .request(probe.method.clone(), &url)
            .timeout(Duration::from_secs(10))
            .body(probe.body.clone());
        if let Some(content_type) = &probe.content_type {
            request = request.header("Content-Type", content_type.as_str());
        }
        if let Some(key) = &probe.idempotency_key {
            request = request.header("Idempotency-Key", key.as_str());
        }
        // A watch that was accepted streams until its timeout: only its status matters.
        match request.send().await {
            // The one 5xx that is an answer, not a failure: a watch from a resource version the
            // cluster never reached gets Kubernetes' `504 Too large resource version`, which
            // client-go's reflector recognises (by reason and cause) and answers by listing.
            Ok(response) if response.status().as_u16() == 504 => {
                answered += 1;
                *by_status.entry(504).or_default() += 1;
                let text = response.text().await.unwrap_or_default();
                ensure!(
                    text.contains("ResourceVersionTooLarge") && probe.query.contains("resourceVersion"),
                    "{name} case {case}: {url} answered 504 to {probe:?}: {text}"
                );
            }
            Ok(response) => {
                answered += 1;
                *by_status.entry(response.status().as_u16()).or_default() += 1;
                ensure!(
                    response.status().as_u16() < 500,
                    "{name} case {case}: {} answered {} to {probe:?}",
                    url,
                    response.status()
                );
            }
            Err(e) if e.is_builder() => {}
            Err(e) => anyhow::bail!("{name} case {case}: {url} failed: {e} ({probe:?})"),
        }
    }
    // Not vacuous: nearly every case reached the node (a few URLs the client refuses to build).
    println!(
        "{name}: {answered} of {} cases answered, by status {by_status:?}",
        cases()
    );
    ensure!(
        answered * 10 >= cases() * 9,
        "{name}: only {answered} of {} cases were sent",
        cases()
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_request_makes_a_node_fail_or_panic() -> Result<()> {
    let options = ClusterOptions {
        claimer: Some(ClaimerOptions {
            rtype: "k8s-cluster".into(),
            auth_token: "claimer-token-0123456789".into(),
        }),
        ..ClusterOptions::with_credentials()
    };
    let cluster = TestCluster::start_with_options(3, options).await?;
    cluster.leader(Duration::from_secs(15)).await?;
    fuzz(&cluster, "kubernetes", KUBE, 1).await?;
    fuzz(&cluster, "boskos", BOSKOS, 2).await?;
    fuzz(&cluster, "claimer", CLAIMER, 3).await?;
    fuzz(&cluster, "platform", PLATFORM, 4).await?;
    fuzz(&cluster, "operations", OPS, 5).await?;
    // Every node is still up and writes still commit.
    for id in 1..=3 {
        let ready = http_client(None)
            .get(format!("http://{}/readyz", cluster.api_addr(id)))
            .send()
            .await?;
        ensure!(
            ready.status().is_success(),
            "node {id} is not ready after the fuzzing"
        );
    }
    cluster.shutdown().await
}
