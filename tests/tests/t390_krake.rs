//! Krake's API on Drover (#33), checked with Krake 1.0.1's own client library: every kind of
//! the `core` group through `krake.client`, Krake's errors and RBAC (`tests/compat/krake`);
//! one state for two dialects (a metric or provider made through Krake is the platform API's,
//! and the other way round); anonymous and static users when the node allows them.

use std::time::Duration;

use anyhow::{ensure, Result};
use drover_api::krake::KrakeOptions;
use drover_tests::client::http_client;
use drover_tests::cluster::{ClusterOptions, TestCluster};
use drover_tests::platform::{token, PlatformClient, OPERATOR_SUBJECT, TEST_STATIC_TOKEN};
use reqwest::StatusCode;
use serde_json::{json, Value};

const ELECTION: Duration = Duration::from_secs(15);

/// A three-node cluster with credentials, the operator registered and tenants `ns1` and `ns2`.
async fn cluster_with_namespaces(krake: KrakeOptions) -> Result<TestCluster> {
    let options = ClusterOptions {
        krake,
        ..ClusterOptions::with_credentials()
    };
    let cluster = TestCluster::start_with_options(3, options).await?;
    cluster.leader(ELECTION).await?;
    let root = cluster.platform(1, Some(token(OPERATOR_SUBJECT)));
    root.register(OPERATOR_SUBJECT).await?;
    for tenant in ["ns1", "ns2"] {
        let made = root.post(&format!("/tenant/{tenant}"), &json!({})).await?;
        ensure!(made.status == StatusCode::OK, "tenant {tenant}: {made:?}");
    }
    Ok(cluster)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn krakes_client_drives_every_core_kind_through_a_follower() -> Result<()> {
    let cluster = cluster_with_namespaces(KrakeOptions::default()).await?;
    let leader = cluster.leader(ELECTION).await?;
    let follower = cluster
        .running_ids()
        .into_iter()
        .find(|id| *id != leader)
        .unwrap_or(leader);
    let said = drover_tests::krake::run(
        "core_client.py",
        vec![
            format!("http://{}", cluster.api_addr(follower)),
            TEST_STATIC_TOKEN.to_string(),
            token("ann"),
            "ann".to_string(),
        ],
    )
    .await?;
    ensure!(said.contains("all checks passed"), "{said}");
    cluster.shutdown().await
}

async fn call(
    addr: &str,
    authorization: Option<&str>,
    method: reqwest::Method,
    path: &str,
    body: Option<Value>,
) -> Result<(StatusCode, Value)> {
    let mut request = http_client(authorization).request(method, format!("http://{addr}{path}"));
    if let Some(body) = body {
        request = request.json(&body);
    }
    let response = request.send().await?;
    let status = response.status();
    let text = response.text().await?;
    Ok((status, serde_json::from_str(&text).unwrap_or(Value::Null)))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_metric_and_a_provider_are_one_object_in_both_dialects() -> Result<()> {
    let cluster = cluster_with_namespaces(KrakeOptions::default()).await?;
    let addr = cluster.api_addr(2);
    let operator = Some(TEST_STATIC_TOKEN);
    let root = PlatformClient::new(&cluster.api_addr(3), Some(token(OPERATOR_SUBJECT)));

    // Made through Krake, read and used through the platform API.
    let metric = json!({"api": "core", "kind": "Metric", "metadata": {"name": "load", "labels": {"team": "a"}},
        "spec": {"min": 0, "max": 100, "provider": {"name": "static-load", "metric": "load"}}});
    let (status, made) = call(
        &addr,
        operator,
        reqwest::Method::POST,
        "/core/namespaces/ns1/metrics",
        Some(metric),
    )
    .await?;
    ensure!(status == StatusCode::OK, "{status} {made}");
    let provider = json!({"metadata": {"name": "static-load"}, "spec": {"type": "static", "static": {"metrics": {"load": 42}}}});
    let (status, _) = call(
        &addr,
        operator,
        reqwest::Method::POST,
        "/core/namespaces/ns1/metricsproviders",
        Some(provider),
    )
    .await?;
    ensure!(status == StatusCode::OK);
    let seen = root.get("/tenant/ns1/metric/load").await?;
    ensure!(
        seen.status == StatusCode::OK && seen.body["data"]["spec"]["max"] == 100.0,
        "{seen:?}"
    );
    let seen = root.get("/tenant/ns1/metricsprovider/static-load").await?;
    ensure!(
        seen.status == StatusCode::OK && seen.body["data"]["spec"]["static"]["metrics"]["load"] == 42.0,
        "{seen:?}"
    );

    // Changed through the platform API: Krake shows the change, same uid, a later `modified`.
    let changed = root
        .put(
            "/tenant/ns1/metric/load",
            &json!({"min": 0, "max": 50, "provider": {"name": "static-load", "metric": "load"}}),
        )
        .await?;
    ensure!(changed.status == StatusCode::OK, "{changed:?}");
    let (_, now) = call(
        &addr,
        operator,
        reqwest::Method::GET,
        "/core/namespaces/ns1/metrics/load",
        None,
    )
    .await?;
    ensure!(now["spec"]["max"] == 50.0, "{now}");
    ensure!(now["metadata"]["uid"] == made["metadata"]["uid"], "{now} {made}");
    ensure!(now["metadata"]["labels"]["team"] == "a", "labels kept: {now}");
    ensure!(
        now["metadata"]["modified"].as_str() > made["metadata"]["modified"].as_str(),
        "{now}"
    );

    // Made through the platform API (the operator tenant's: Krake's global kinds), read through Krake.
    let put = root
        .put(
            "/tenant/operator/metricsprovider/prom",
            &json!({"type": "prometheus", "prometheus": {"url": "http://127.0.0.1:9/", "timeout_seconds": 7}}),
        )
        .await?;
    ensure!(put.status == StatusCode::OK, "{put:?}");
    let (status, global) = call(
        &addr,
        operator,
        reqwest::Method::GET,
        "/core/globalmetricsproviders/prom",
        None,
    )
    .await?;
    ensure!(
        status == StatusCode::OK
            && global["spec"] == json!({"type": "prometheus", "prometheus": {"url": "http://127.0.0.1:9/"}}),
        "{global}"
    );
    ensure!(
        global["metadata"]["uid"].as_str().is_some_and(|u| u.len() == 36),
        "{global}"
    );
    // A Krake update keeps what Krake's shape has no field for (the query timeout).
    let mut relabelled = global.clone();
    relabelled["metadata"]["labels"] = json!({"tier": "gold"});
    let (status, _) = call(
        &addr,
        operator,
        reqwest::Method::PUT,
        "/core/globalmetricsproviders/prom",
        Some(relabelled),
    )
    .await?;
    ensure!(status == StatusCode::OK);
    let kept = root.get("/tenant/operator/metricsprovider/prom").await?;
    ensure!(
        kept.body["data"]["spec"]["prometheus"]["timeout_seconds"] == 7,
        "{kept:?}"
    );

    // A Krake delete removes the tenant's object (no dependent, no finalizer holds it).
    let (status, _) = call(
        &addr,
        operator,
        reqwest::Method::DELETE,
        "/core/namespaces/ns1/metrics/load",
        None,
    )
    .await?;
    ensure!(status == StatusCode::OK);
    drover_tests::wait::eventually(
        Duration::from_secs(10),
        "the metric is gone from the platform API",
        || async {
            (root.get("/tenant/ns1/metric/load").await.ok()?.status == StatusCode::NOT_FOUND).then_some(())
        },
    )
    .await?;
    // A namespace that is no tenant is Krake's 404, saying what to do.
    let (status, body) = call(
        &addr,
        operator,
        reqwest::Method::GET,
        "/core/namespaces/nowhere/metrics",
        None,
    )
    .await?;
    ensure!(
        status == StatusCode::OK && body["items"] == json!([]),
        "{status} {body}"
    );
    let metric = json!({"metadata": {"name": "x"}, "spec": {"min": 0, "max": 1, "provider": {"name": "p", "metric": "x"}}});
    let (status, body) = call(
        &addr,
        operator,
        reqwest::Method::POST,
        "/core/namespaces/nowhere/metrics",
        Some(metric),
    )
    .await?;
    ensure!(
        status == StatusCode::NOT_FOUND
            && body["detail"]
                .as_str()
                .is_some_and(|d| d.contains("POST /api/1.0-beta/tenant/nowhere")),
        "{status} {body}"
    );
    cluster.shutdown().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn anonymous_and_static_users_are_subject_to_rbac() -> Result<()> {
    let anonymous = cluster_with_namespaces(KrakeOptions {
        static_user: None,
        allow_anonymous: true,
        ..KrakeOptions::default()
    })
    .await?;
    let addr = anonymous.api_addr(1);
    let (status, me) = call(&addr, None, reqwest::Method::GET, "/me", None).await?;
    ensure!(
        status == StatusCode::OK && me == json!({"user": "system:anonymous", "roles": []}),
        "{status} {me}"
    );
    let (status, body) = call(&addr, None, reqwest::Method::GET, "/core/roles", None).await?;
    ensure!(
        status == StatusCode::FORBIDDEN && body["title"].is_null(),
        "{status} {body}"
    );
    // An operator binds a role to the anonymous user: reads are allowed, writes are not.
    let role = json!({"metadata": {"name": "read-roles"}, "rules": [{"api": "core", "resources": ["roles"], "namespaces": [], "verbs": ["list", "get"]}]});
    let binding = json!({"metadata": {"name": "anonymous-reads"}, "users": ["system:anonymous"], "roles": ["read-roles"]});
    for (path, body) in [("/core/roles", role), ("/core/rolebindings", binding)] {
        let (status, answer) = call(
            &addr,
            Some(TEST_STATIC_TOKEN),
            reqwest::Method::POST,
            path,
            Some(body),
        )
        .await?;
        ensure!(status == StatusCode::OK, "{path}: {status} {answer}");
    }
    let (status, listed) = call(&addr, None, reqwest::Method::GET, "/core/roles", None).await?;
    ensure!(
        status == StatusCode::OK && listed["items"].as_array().is_some_and(|i| i.len() == 1),
        "{status} {listed}"
    );
    let (status, _) = call(
        &addr,
        None,
        reqwest::Method::DELETE,
        "/core/roles/read-roles",
        None,
    )
    .await?;
    ensure!(status == StatusCode::FORBIDDEN);
    // A credential that does not verify is refused, whatever anonymous access allows.
    let (status, _) = call(
        &addr,
        Some("not-a-known-token-000"),
        reqwest::Method::GET,
        "/core/roles",
        None,
    )
    .await?;
    ensure!(status == StatusCode::UNAUTHORIZED);
    anonymous.shutdown().await?;

    let fixed = cluster_with_namespaces(KrakeOptions {
        static_user: Some("system:admin".to_string()),
        allow_anonymous: false,
        ..KrakeOptions::default()
    })
    .await?;
    let (status, me) = call(&fixed.api_addr(2), None, reqwest::Method::GET, "/me", None).await?;
    ensure!(
        status == StatusCode::OK && me["user"] == "system:admin",
        "{status} {me}"
    );
    let (status, _) = call(
        &fixed.api_addr(2),
        None,
        reqwest::Method::GET,
        "/core/globalmetrics",
        None,
    )
    .await?;
    ensure!(
        status == StatusCode::FORBIDDEN,
        "the static user has no role yet: {status}"
    );
    fixed.shutdown().await
}

/// Lists then watches from the list's version: what happened in between is told first.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watch_resumes_from_a_lists_version() -> Result<()> {
    let cluster = cluster_with_namespaces(KrakeOptions::default()).await?;
    let addr = cluster.api_addr(3);
    let operator = Some(TEST_STATIC_TOKEN);
    let role = |name: &str| json!({"metadata": {"name": name}, "rules": []});
    for name in ["kept", "changed", "removed"] {
        let (status, _) = call(
            &addr,
            operator,
            reqwest::Method::POST,
            "/core/roles",
            Some(role(name)),
        )
        .await?;
        ensure!(status == StatusCode::OK);
    }
    let (status, listed) = call(&addr, operator, reqwest::Method::GET, "/core/roles", None).await?;
    ensure!(
        status == StatusCode::OK && listed["items"].as_array().map(Vec::len) == Some(3),
        "{listed}"
    );
    let version = listed["metadata"]["resourceVersion"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    ensure!(version.parse::<u64>().is_ok(), "{listed}");

    // Changes while nobody watches, through other nodes.
    let (_, mut changed) = call(
        &cluster.api_addr(1),
        operator,
        reqwest::Method::GET,
        "/core/roles/changed",
        None,
    )
    .await?;
    changed["metadata"]["labels"] = json!({"new": "label"});
    let (status, _) = call(
        &cluster.api_addr(1),
        operator,
        reqwest::Method::PUT,
        "/core/roles/changed",
        Some(changed),
    )
    .await?;
    ensure!(status == StatusCode::OK);
    let (status, _) = call(
        &cluster.api_addr(2),
        operator,
        reqwest::Method::DELETE,
        "/core/roles/removed",
        None,
    )
    .await?;
    ensure!(status == StatusCode::OK);
    let (status, _) = call(
        &cluster.api_addr(2),
        operator,
        reqwest::Method::POST,
        "/core/roles",
        Some(role("added")),
    )
    .await?;
    ensure!(status == StatusCode::OK);

    let mut watch = http_client(operator)
        .get(format!(
            "http://{addr}/core/roles?watch&heartbeat=0&resourceVersion={version}"
        ))
        .send()
        .await?;
    ensure!(watch.status() == StatusCode::OK);
    let mut events = Vec::new();
    let mut buffer = String::new();
    while events.len() < 3 {
        let chunk = tokio::time::timeout(Duration::from_secs(10), watch.chunk()).await??;
        let Some(chunk) = chunk else { break };
        buffer.push_str(&String::from_utf8_lossy(&chunk));
        while let Some(end) = buffer.find('\n') {
            let line: String = buffer.drain(..=end).collect();
            let event: Value = serde_json::from_str(line.trim())?;
            events.push(format!(
                "{} {}",
                event["type"].as_str().unwrap_or_default(),
                event["object"]["metadata"]["name"].as_str().unwrap_or_default()
            ));
        }
    }
    events.sort();
    ensure!(
        events == vec!["ADDED added", "DELETED removed", "MODIFIED changed"],
        "{events:?}"
    );
    // A heartbeat past a watch's life (a caller's i64::MAX) is a 422, not a stream.
    let (status, _) = call(
        &addr,
        operator,
        reqwest::Method::GET,
        "/core/roles?watch&heartbeat=9223372036854775807",
        None,
    )
    .await?;
    ensure!(status == StatusCode::UNPROCESSABLE_ENTITY, "{status}");
    // A version that is no number is Krake's 422.
    let (status, _) = call(
        &addr,
        operator,
        reqwest::Method::GET,
        "/core/roles?watch&resourceVersion=soon",
        None,
    )
    .await?;
    ensure!(status == StatusCode::UNPROCESSABLE_ENTITY, "{status}");
    cluster.shutdown().await
}

/// Reads a watch's events (`"TYPE name"`, heartbeats left out) until `done` holds of them, for
/// at most `within`.
async fn watch_events(
    watch: &mut reqwest::Response,
    within: Duration,
    done: impl Fn(&[String]) -> bool,
) -> Result<Vec<String>> {
    let deadline = tokio::time::Instant::now() + within;
    let mut events = Vec::new();
    let mut buffer = String::new();
    while !done(&events) {
        let chunk = tokio::time::timeout_at(deadline, watch.chunk()).await;
        let Ok(chunk) = chunk else { break };
        let Some(chunk) = chunk? else { break };
        buffer.push_str(&String::from_utf8_lossy(&chunk));
        while let Some(end) = buffer.find('\n') {
            let line: String = buffer.drain(..=end).collect();
            if line.trim().is_empty() {
                continue;
            }
            let event: Value = serde_json::from_str(line.trim())?;
            events.push(format!(
                "{} {}",
                event["type"].as_str().unwrap_or_default(),
                event["object"]["metadata"]["name"].as_str().unwrap_or_default()
            ));
        }
    }
    Ok(events)
}

/// Roles that live a few milliseconds each (made and at once removed through node 1): a plain
/// HTTP watch on node 3 and `krake.client`'s own watch on node 2 are each told every one,
/// `ADDED` then `DELETED`, once (#50: the watch compared snapshots every 200 ms and told none).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watch_tells_every_object_made_and_removed_within_a_poll() -> Result<()> {
    let cluster = cluster_with_namespaces(KrakeOptions::default()).await?;
    let operator = Some(TEST_STATIC_TOKEN);
    let mut watch = http_client(operator)
        .get(format!(
            "http://{}/core/roles?watch&heartbeat=0",
            cluster.api_addr(3)
        ))
        .send()
        .await?;
    ensure!(watch.status() == StatusCode::OK);
    let count = 5;
    let said = drover_tests::krake::run(
        "quick_watch.py",
        vec![
            format!("http://{}", cluster.api_addr(2)),
            format!("http://{}", cluster.api_addr(1)),
            TEST_STATIC_TOKEN.to_string(),
            "quick-".to_string(),
            count.to_string(),
        ],
    )
    .await?;
    ensure!(said.contains("all checks passed"), "{said}");
    let told = |events: &[String]| events.iter().filter(|e| e.starts_with("DELETED")).count() >= count;
    let events = watch_events(&mut watch, Duration::from_secs(10), told).await?;
    let expected: Vec<String> = (0..count)
        .flat_map(|i| [format!("ADDED quick-{i}"), format!("DELETED quick-{i}")])
        .collect();
    ensure!(events == expected, "told {events:?}, expected {expected:?}");
    cluster.shutdown().await
}

/// A watch resumed on another node from the version of a list taken right after a write tells
/// nothing the list showed (the last object written before it was told again, #50) and then
/// every later change.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watch_resumed_from_a_list_repeats_nothing_and_misses_nothing() -> Result<()> {
    let cluster = cluster_with_namespaces(KrakeOptions::default()).await?;
    let operator = Some(TEST_STATIC_TOKEN);
    let role = |name: &str| json!({"metadata": {"name": name}, "rules": []});
    let first = cluster.api_addr(1);
    for name in ["first", "last"] {
        let (status, _) = call(
            &first,
            operator,
            reqwest::Method::POST,
            "/core/roles",
            Some(role(name)),
        )
        .await?;
        ensure!(status == StatusCode::OK);
    }
    let (status, listed) = call(&first, operator, reqwest::Method::GET, "/core/roles", None).await?;
    ensure!(status == StatusCode::OK, "{listed}");
    let version = listed["metadata"]["resourceVersion"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let mut watch = http_client(operator)
        .get(format!(
            "http://{}/core/roles?watch&heartbeat=1&resourceVersion={version}",
            cluster.api_addr(3)
        ))
        .send()
        .await?;
    ensure!(watch.status() == StatusCode::OK);
    let (status, _) = call(
        &cluster.api_addr(2),
        operator,
        reqwest::Method::POST,
        "/core/roles",
        Some(role("after")),
    )
    .await?;
    ensure!(status == StatusCode::OK);
    let told = |events: &[String]| events.iter().any(|e| e == "ADDED after");
    let events = watch_events(&mut watch, Duration::from_secs(10), told).await?;
    ensure!(events == vec!["ADDED after"], "{events:?}");
    // A version this cluster never reached is refused, not waited for.
    let (status, _) = call(
        &cluster.api_addr(3),
        operator,
        reqwest::Method::GET,
        "/core/roles?watch&resourceVersion=999999999999",
        None,
    )
    .await?;
    ensure!(status == StatusCode::UNPROCESSABLE_ENTITY, "{status}");
    cluster.shutdown().await
}

/// Requests no route takes are answered with words (#50): under Krake's groups a problem
/// document, elsewhere a line naming the path; a bad `heartbeat` is Krake's `422` on every
/// list, a watch or not.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unmatched_routes_and_bad_queries_are_answered_with_words() -> Result<()> {
    let cluster = cluster_with_namespaces(KrakeOptions::default()).await?;
    let addr = cluster.api_addr(2);
    let client = http_client(Some(TEST_STATIC_TOKEN));
    let problem = client
        .get(format!("http://{addr}/core/namespaces/ns1/metrics/x/y/z"))
        .send()
        .await?;
    ensure!(problem.status() == StatusCode::NOT_FOUND);
    let kind = problem
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_string();
    let body: Value = problem.json().await?;
    ensure!(
        kind.starts_with("application/problem+json")
            && body["status"] == 404
            && body["detail"] == "404: Not Found"
            && body["type"] == "about:blank",
        "{kind} {body}"
    );
    let release = client.get(format!("http://{addr}/release")).send().await?;
    ensure!(release.status() == StatusCode::METHOD_NOT_ALLOWED);
    let allow = release
        .headers()
        .get("allow")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_string();
    let text = release.text().await?;
    ensure!(
        allow.contains("POST") && text.contains("/release") && text.contains("GET"),
        "allow {allow:?}: {text:?}"
    );
    let nowhere = client.get(format!("http://{addr}/no/such/route")).send().await?;
    ensure!(nowhere.status() == StatusCode::NOT_FOUND);
    let text = nowhere.text().await?;
    ensure!(text.contains("/no/such/route"), "{text:?}");
    for query in ["heartbeat=abc", "heartbeat=-1", "watch&heartbeat=abc"] {
        let (status, body) = call(
            &addr,
            Some(TEST_STATIC_TOKEN),
            reqwest::Method::GET,
            &format!("/core/roles?{query}"),
            None,
        )
        .await?;
        ensure!(
            status == StatusCode::UNPROCESSABLE_ENTITY
                && body["detail"].as_str().is_some_and(|d| d.contains("heartbeat")),
            "{query}: {status} {body}"
        );
    }
    let (status, _) = call(
        &addr,
        Some(TEST_STATIC_TOKEN),
        reqwest::Method::GET,
        "/core/roles?heartbeat=5",
        None,
    )
    .await?;
    ensure!(status == StatusCode::OK, "{status}");
    cluster.shutdown().await
}

/// CORS as Krake's server serves it, for the origins the operator allows (#50): a preflight
/// from an allowed origin is answered with `Access-Control-Allow-*`, one from another origin is
/// `403`, and a call from an allowed origin carries `Access-Control-Allow-Origin`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cross_origin_calls_are_answered_for_allowed_origins() -> Result<()> {
    let cluster = cluster_with_namespaces(KrakeOptions {
        cors_origins: vec!["https://console.example".to_string()],
        ..KrakeOptions::default()
    })
    .await?;
    let addr = cluster.api_addr(3);
    let client = http_client(None);
    let header = |response: &reqwest::Response, name: &str| {
        response
            .headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_string()
    };
    let preflight = client
        .request(
            reqwest::Method::OPTIONS,
            format!("http://{addr}/core/namespaces/ns1/metrics/m"),
        )
        .header("Origin", "https://console.example")
        .header("Access-Control-Request-Method", "PUT")
        .header("Access-Control-Request-Headers", "authorization, content-type")
        .send()
        .await?;
    ensure!(preflight.status() == StatusCode::OK, "{}", preflight.status());
    ensure!(
        header(&preflight, "access-control-allow-origin") == "https://console.example"
            && header(&preflight, "access-control-allow-credentials") == "true"
            && header(&preflight, "access-control-allow-methods") == "PUT"
            && header(&preflight, "access-control-allow-headers").contains("AUTHORIZATION"),
        "{:?}",
        preflight.headers()
    );
    let refused = client
        .request(reqwest::Method::OPTIONS, format!("http://{addr}/core/roles"))
        .header("Origin", "https://elsewhere.example")
        .header("Access-Control-Request-Method", "GET")
        .send()
        .await?;
    ensure!(refused.status() == StatusCode::FORBIDDEN, "{}", refused.status());
    ensure!(header(&refused, "access-control-allow-origin").is_empty());
    let listed = http_client(Some(TEST_STATIC_TOKEN))
        .get(format!("http://{addr}/core/roles"))
        .header("Origin", "https://console.example")
        .send()
        .await?;
    ensure!(listed.status() == StatusCode::OK);
    ensure!(
        header(&listed, "access-control-allow-origin") == "https://console.example"
            && header(&listed, "access-control-allow-credentials") == "true",
        "{:?}",
        listed.headers()
    );
    let other = http_client(Some(TEST_STATIC_TOKEN))
        .get(format!("http://{addr}/core/roles"))
        .header("Origin", "https://elsewhere.example")
        .send()
        .await?;
    ensure!(header(&other, "access-control-allow-origin").is_empty());
    cluster.shutdown().await
}
