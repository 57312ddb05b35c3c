//! The same verifier guards the other dialects once a node has credentials: lease objects by
//! namespace (a static token's `namespace:` group, or membership of the tenant of that name),
//! Boskos and pools for any valid credential in the form Boskos clients send it (HTTP Basic),
//! k8s-claimer for static tokens sent bare, pool configuration and membership changes for
//! operators only; health, readiness, metrics and the cluster view stay open.

use std::time::Duration;

use anyhow::{ensure, Result};
use base64::Engine;
use drover_api::claimer::ClaimerOptions;
use drover_tests::boskos::{static_pool_yaml, BoskosClient};
use drover_tests::client::{http_client, LeaseClient};
use drover_tests::cluster::{ClusterOptions, TestCluster};
use drover_tests::platform::{expired_token, token, OPERATOR_SUBJECT, TEST_SHOP_TOKEN, TEST_STATIC_TOKEN};
use drover_tests::TEST_SECRET;
use reqwest::StatusCode;
use serde_json::json;

const ELECTION: Duration = Duration::from_secs(15);

fn bearer(token: &str) -> String {
    format!("Bearer {token}")
}

fn basic(token: &str) -> String {
    let encoded = base64::engine::general_purpose::STANDARD.encode(format!("boskos:{token}"));
    format!("Basic {encoded}")
}

#[tokio::test]
async fn lease_objects_are_guarded_by_namespace() -> Result<()> {
    let cluster = TestCluster::start_with_options(3, ClusterOptions::with_credentials()).await?;
    cluster.leader(ELECTION).await?;
    let addr = cluster.api_addr(1);
    let anonymous = LeaseClient::new(&addr);
    let refused = anonymous.list("shop").await?;
    ensure!(refused.status == StatusCode::UNAUTHORIZED, "{refused:?}");
    ensure!(
        refused.body["kind"] == "Status" && refused.body["reason"] == "Unauthorized",
        "{}",
        refused.body
    );
    let expired = LeaseClient::authorized(&addr, Some(&bearer(&expired_token("alice"))));
    ensure!(expired.list("shop").await?.status == StatusCode::UNAUTHORIZED);
    let peer = LeaseClient::authorized(&addr, Some(&bearer(TEST_SECRET)));
    ensure!(
        peer.list("shop").await?.status == StatusCode::UNAUTHORIZED,
        "the peer secret is not a user credential"
    );

    // A static token scoped to one namespace.
    let shop = LeaseClient::authorized(&addr, Some(&bearer(TEST_SHOP_TOKEN)));
    ensure!(shop.create("shop", "singleton", "shop-0").await?.status == StatusCode::CREATED);
    let elsewhere = shop.create("billing", "singleton", "shop-0").await?;
    ensure!(
        elsewhere.status == StatusCode::FORBIDDEN && elsewhere.body["reason"] == "Forbidden",
        "{elsewhere:?}"
    );
    let (all, _) = shop.get_path("/apis/coordination.k8s.io/v1/leases").await?;
    ensure!(
        all == StatusCode::FORBIDDEN,
        "a namespace token listed every namespace: {all}"
    );
    let (discovery, _) = shop.get_path("/apis/coordination.k8s.io/v1").await?;
    ensure!(discovery == StatusCode::OK, "discovery answered {discovery}");
    let (anonymous_discovery, _) = anonymous.get_path("/apis").await?;
    ensure!(anonymous_discovery == StatusCode::UNAUTHORIZED);
    let operators = LeaseClient::authorized(&addr, Some(&bearer(TEST_STATIC_TOKEN)));
    let (listed, _) = operators.get_path("/apis/coordination.k8s.io/v1/leases").await?;
    ensure!(
        listed == StatusCode::OK,
        "an operator token could not list every namespace: {listed}"
    );

    // Users: the namespace is the tenant of that name.
    let alice = cluster.platform(2, Some(token("alice")));
    alice.register("Alice").await?;
    ensure!(alice.post("/tenant/team", &json!({})).await?.status == StatusCode::OK);
    let alice_leases = LeaseClient::authorized(&cluster.api_addr(2), Some(&bearer(&token("alice"))));
    ensure!(alice_leases.create("team", "leader", "a-0").await?.status == StatusCode::CREATED);
    ensure!(alice_leases.create("shop", "leader", "a-0").await?.status == StatusCode::FORBIDDEN);
    let bob = cluster.platform(2, Some(token("bob")));
    let bob_id = bob.register("Bob").await?;
    let bob_leases = LeaseClient::authorized(&cluster.api_addr(2), Some(&bearer(&token("bob"))));
    ensure!(bob_leases.get("team", "leader", "").await?.status == StatusCode::FORBIDDEN);
    ensure!(
        alice
            .post(&format!("/tenant/team/user/{bob_id}"), &json!({}))
            .await?
            .status
            == StatusCode::OK
    );
    ensure!(
        bob_leases.get("team", "leader", "").await?.status == StatusCode::FORBIDDEN,
        "a pending invitation grants nothing"
    );
    ensure!(bob.put("/tenant/team/user?role=plain", &json!({})).await?.status == StatusCode::OK);
    ensure!(bob_leases.get("team", "leader", "").await?.status == StatusCode::OK);
    // Operators (members of the operator tenant) reach every namespace.
    let root = cluster.platform(2, Some(token(OPERATOR_SUBJECT)));
    root.register("Root").await?;
    let root_leases = LeaseClient::authorized(&cluster.api_addr(2), Some(&bearer(&token(OPERATOR_SUBJECT))));
    ensure!(root_leases.get("shop", "singleton", "").await?.status == StatusCode::OK);
    cluster.shutdown().await
}

#[tokio::test]
async fn pools_membership_and_claims_need_credentials() -> Result<()> {
    let options = ClusterOptions {
        claimer: Some(ClaimerOptions {
            rtype: "k8s-cluster".into(),
            auth_token: "claimer-only-token".into(),
        }),
        ..ClusterOptions::with_credentials()
    };
    let cluster = TestCluster::start_with_options(3, options).await?;
    cluster.leader(ELECTION).await?;
    let addr = cluster.api_addr(3);
    let yaml = static_pool_yaml("gce-project", &["p-1", "p-2"]);

    // Pool configuration: operators only.
    // A missing or wrong credential on the Boskos routes is 403: the Boskos Go client reads 401
    // as "owned by someone else" and would poll forever.
    let anonymous = BoskosClient::new(&addr);
    let refused = anonymous.set_config(&yaml).await?;
    ensure!(refused.status == StatusCode::FORBIDDEN, "{refused:?}");
    let shop = BoskosClient::authorized(&addr, Some(&basic(TEST_SHOP_TOKEN)));
    ensure!(shop.set_config(&yaml).await?.status == StatusCode::FORBIDDEN);
    let operator = BoskosClient::authorized(&addr, Some(&basic(TEST_STATIC_TOKEN)));
    ensure!(operator.set_config(&yaml).await?.status == StatusCode::OK);
    operator.wait_for_free("gce-project", 2, ELECTION).await?;

    // Acquire and release: any valid credential, as the Boskos client sends it.
    ensure!(
        anonymous
            .acquire("gce-project", "free", "busy", "ci-job", None)
            .await?
            .status
            == StatusCode::FORBIDDEN
    );
    ensure!(anonymous.metric("gce-project").await?.status == StatusCode::FORBIDDEN);
    let peer = BoskosClient::authorized(&addr, Some(&basic(TEST_SECRET)));
    ensure!(peer.metric("gce-project").await?.status == StatusCode::FORBIDDEN);
    let held = shop
        .acquire("gce-project", "free", "busy", "ci-job", None)
        .await?;
    ensure!(held.status == StatusCode::OK, "{held:?}");
    let name = held.json["name"].as_str().unwrap_or_default().to_string();
    ensure!(shop.release(&name, "free", "ci-job").await?.status == StatusCode::OK);
    let user = BoskosClient::authorized(&addr, Some(&bearer(&token("alice"))));
    ensure!(
        user.metric("gce-project").await?.status == StatusCode::OK,
        "a user's JWT works for pools too"
    );

    // Claims: the claimer's own token and static tokens sent bare. Two clusters with
    // kubeconfigs, one for each allowed credential.
    let clusters = "resources:\n  - type: gce-project\n    state: free\n    names: [p-1, p-2]\n  - type: k8s-cluster\n    state: free\n    names: [k-1, k-2]\n";
    ensure!(operator.set_config(clusters).await?.status == StatusCode::OK);
    operator.wait_for_free("k8s-cluster", 2, ELECTION).await?;
    for cluster_name in ["k-1", "k-2"] {
        let held = operator
            .post(
                "/acquirebystate",
                &[
                    ("state", "free"),
                    ("dest", "busy"),
                    ("owner", "setup"),
                    ("names", cluster_name),
                ],
                None,
            )
            .await?;
        ensure!(held.status == StatusCode::OK, "{held:?}");
        ensure!(
            operator
                .update(
                    cluster_name,
                    "setup",
                    "busy",
                    Some(r#"{"kubeconfig":"apiVersion: v1"}"#)
                )
                .await?
                .status
                == StatusCode::OK
        );
        ensure!(operator.release(cluster_name, "free", "setup").await?.status == StatusCode::OK);
    }
    let lease = |authorization: Option<&str>| {
        let http = http_client(authorization);
        let url = format!("http://{addr}/lease");
        async move {
            http.post(url)
                .json(&json!({"max_time": 5}))
                .send()
                .await
                .map(|r| r.status())
        }
    };
    ensure!(lease(None).await? == StatusCode::UNAUTHORIZED);
    ensure!(lease(Some("wrong-claimer-token")).await? == StatusCode::UNAUTHORIZED);
    for credential in ["claimer-only-token", TEST_STATIC_TOKEN] {
        let status = lease(Some(credential)).await?;
        ensure!(
            status == StatusCode::OK,
            "{credential} did not get a cluster: {status}"
        );
    }

    // Membership changes: operators only; probes and the cluster view stay open.
    let members = |authorization: Option<&str>| {
        let http = http_client(authorization);
        let url = format!("http://{addr}/cluster/members/99");
        async move { http.delete(url).send().await.map(|r| r.status()) }
    };
    ensure!(members(None).await? == StatusCode::UNAUTHORIZED);
    ensure!(members(Some(&bearer(TEST_SHOP_TOKEN))).await? == StatusCode::FORBIDDEN);
    // An operator passes the guard; removing a node that is no member is then a conflict.
    let by_operator = members(Some(&bearer(TEST_STATIC_TOKEN))).await?;
    ensure!(
        by_operator == StatusCode::CONFLICT,
        "an operator removing non-member 99: {by_operator}"
    );
    for path in ["/healthz", "/readyz", "/metrics", "/cluster"] {
        let status = http_client(None)
            .get(format!("http://{addr}{path}"))
            .send()
            .await?
            .status();
        ensure!(
            status == StatusCode::OK,
            "{path} answered {status} without credentials"
        );
    }
    cluster.shutdown().await
}

/// The official Kubernetes Python client, unchanged, against node 1 (`tests/compat`).
fn python_client(server: String, token: Option<&'static str>) -> Result<std::process::Output> {
    let script = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("compat/kube_python.py");
    let mut command = std::process::Command::new("python3");
    command.arg(script).arg(server);
    if let Some(token) = token {
        command.arg(token);
    }
    Ok(command.output()?)
}

// kubectl (client-go) sends bearer tokens only over TLS, which the API listener does not serve
// yet; the Python client sends them over plain HTTP as well.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_python_client_sends_its_token_and_is_refused_without_one() -> Result<()> {
    let cluster = TestCluster::start_with_options(3, ClusterOptions::with_credentials()).await?;
    cluster.leader(ELECTION).await?;
    let server = format!("http://{}", cluster.api_addr(1));
    let with_token = {
        let server = server.clone();
        tokio::task::spawn_blocking(move || python_client(server, Some(TEST_STATIC_TOKEN))).await??
    };
    let said = String::from_utf8_lossy(&with_token.stdout);
    let complained = String::from_utf8_lossy(&with_token.stderr);
    ensure!(
        with_token.status.success(),
        "the python client with its token: {said} {complained}"
    );
    let without = tokio::task::spawn_blocking(move || python_client(server, None)).await??;
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&without.stdout),
        String::from_utf8_lossy(&without.stderr)
    );
    ensure!(
        !without.status.success() && said.contains("401"),
        "without a token: {said}"
    );
    cluster.shutdown().await
}
