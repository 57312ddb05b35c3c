//! Krake's Clusters on Drover (#33): a Krake `Cluster` is a Drover cluster whose kubeconfig
//! names a `drover agent` and its join token. Three `drover serve` processes and a `sim` agent:
//! registered through Krake's route with `?blocking=ONLINE`, it is the platform API's cluster
//! (one uid, its labels and metrics); its token is never shown and a reader's object sent back
//! keeps it; a watch sees the agent go `DEGRADED`/`OFFLINE` when it is paused, with Krake's
//! reason; a kubeconfig naming something that is not an agent is refused; `/status` is refused;
//! a delete deregisters it. A cluster registered through the platform API reads the same
//! through Krake. Krake's own client library (`krake.client`) drives a Cluster through it all.

use std::time::Duration;

use anyhow::{ensure, Result};
use drover_tests::agent::{AgentProcess, AGENT_TOKEN};
use drover_tests::client::http_client;
use drover_tests::platform::{process_platform_args, token, PlatformClient, OPERATOR_SUBJECT};
use drover_tests::process::ProcessCluster;
use drover_tests::wait::eventually;
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
use tempfile::TempDir;

const ELECTION: Duration = Duration::from_secs(20);
const CONVERGE: Duration = Duration::from_secs(30);

fn kubeconfig(server: &str, token: &str) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "edge-cluster", "cluster": {"server": server}}],
        "users": [{"name": "edge-user", "user": {"token": token}}],
        "contexts": [{"name": "edge", "context": {"cluster": "edge-cluster", "user": "edge-user"}}],
        "current-context": "edge",
    })
}

fn cluster(name: &str, server: &str, token: &str) -> Value {
    json!({
        "api": "kubernetes", "kind": "Cluster",
        "metadata": {"name": name, "labels": {"zone": "a"}},
        "spec": {"kubeconfig": kubeconfig(server, token), "custom_resources": [],
                 "constraints": {"cloud": {"labels": [], "metrics": []}},
                 "metrics": [{"name": "load", "weight": 1.0, "namespaced": true}]},
    })
}

async fn call(addr: &str, method: Method, path: &str, body: Option<&Value>) -> Result<(StatusCode, Value)> {
    drover_tests::krake_calls::call(addr, OPERATOR_SUBJECT, method, path, body).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_krake_cluster_is_a_drover_cluster_run_by_an_agent() -> Result<()> {
    let dir = TempDir::new()?;
    let mut args = process_platform_args(dir.path())?;
    args.push("--cluster-probe-interval=200ms".to_string());
    args.push("--cluster-offline-after=2s".to_string());
    let nodes = ProcessCluster::start_with_args(3, &args)?;
    nodes.leader(ELECTION).await?;
    let root = PlatformClient::new(&nodes.api_addr(1), Some(token(OPERATOR_SUBJECT)));
    root.register(OPERATOR_SUBJECT).await?;
    let made = root.post("/tenant/ns1", &json!({})).await?;
    ensure!(made.status == StatusCode::OK, "{made:?}");
    let agent = AgentProcess::sim(&[])?;
    let addr = nodes.api_addr(2);
    let server = format!("http://{}", agent.addr());
    let base = "/kubernetes/namespaces/ns1/clusters";

    // Registered through Krake's route; the answer comes once the cluster is ONLINE.
    let (status, online) = call(
        &addr,
        Method::POST,
        &format!("{base}?blocking=online"),
        Some(&cluster("edge", &server, AGENT_TOKEN)),
    )
    .await?;
    ensure!(status == StatusCode::OK, "{status} {online}");
    ensure!(
        online["status"]["state"] == "ONLINE" && online["status"]["reason"].is_null(),
        "{online}"
    );
    let shown_token = &online["spec"]["kubeconfig"]["users"][0]["user"]["token"];
    ensure!(
        shown_token.as_str().is_some_and(|t| !t.contains(AGENT_TOKEN)),
        "the token is shown: {online}"
    );
    ensure!(
        online["spec"]["kubeconfig"]["clusters"][0]["cluster"]["server"] == server.as_str(),
        "{online}"
    );
    ensure!(
        online["spec"]["kubeconfig"]["contexts"][0]["name"] == "edge",
        "{online}"
    );

    // The platform API's cluster: one uid, its labels and metrics.
    let drover = root.get("/tenant/ns1/cluster/edge").await?;
    ensure!(drover.status == StatusCode::OK, "{drover:?}");
    let data = &drover.body["data"];
    ensure!(data["uid"] == online["metadata"]["uid"], "{data} {online}");
    ensure!(
        data["labels"]["zone"] == "a" && data["metrics"][0]["name"] == "load",
        "{data}"
    );
    ensure!(
        !drover.body.to_string().contains(AGENT_TOKEN),
        "the platform API shows the token"
    );

    // A reader's object sent back (token redacted) keeps the token; labels change.
    let mut relabelled = online.clone();
    relabelled["metadata"]["labels"] = json!({"zone": "b"});
    let (status, updated) = call(&addr, Method::PUT, &format!("{base}/edge"), Some(&relabelled)).await?;
    ensure!(status == StatusCode::OK, "{status} {updated}");
    let drover = root.get("/tenant/ns1/cluster/edge").await?;
    ensure!(drover.body["data"]["labels"]["zone"] == "b", "{drover:?}");
    eventually(
        CONVERGE,
        "the cluster is still ONLINE with its token kept",
        || async {
            let (_, now) = call(&addr, Method::GET, &format!("{base}/edge"), None)
                .await
                .ok()?;
            (now["status"]["state"] == "ONLINE" && now["metadata"]["labels"]["zone"] == "b").then_some(())
        },
    )
    .await?;

    // The object exactly as read (its token shown redacted) is no update, as on Krake's
    // server: nothing moves, and a later update from the same read still applies.
    let (_, as_read) = call(&addr, Method::GET, &format!("{base}/edge"), None).await?;
    let (status, problem) = call(&addr, Method::PUT, &format!("{base}/edge"), Some(&as_read)).await?;
    ensure!(
        status == StatusCode::BAD_REQUEST
            && problem["title"] == "UPDATE_ERROR"
            && problem["detail"] == "The body contained no update.",
        "{status} {problem}"
    );
    let mut from_the_same_read = as_read.clone();
    from_the_same_read["metadata"]["labels"] = json!({"zone": "a"});
    let (status, updated) = call(
        &addr,
        Method::PUT,
        &format!("{base}/edge"),
        Some(&from_the_same_read),
    )
    .await?;
    ensure!(status == StatusCode::OK, "{status} {updated}");

    // A watch sees the paused agent's cluster change state, with Krake's reason.
    let authorization = format!("Bearer {}", token(OPERATOR_SUBJECT));
    let mut watch = http_client(Some(&authorization))
        .get(format!("http://{addr}{base}?watch&heartbeat=0"))
        .send()
        .await?;
    ensure!(watch.status() == StatusCode::OK);
    agent.freeze(true)?;
    let seen = tokio::time::timeout(CONVERGE, async {
        let mut buffer = String::new();
        while let Some(chunk) = watch.chunk().await? {
            buffer.push_str(&String::from_utf8_lossy(&chunk));
            for line in buffer.lines() {
                let event: Value = serde_json::from_str(line).unwrap_or(Value::Null);
                let state = event["object"]["status"]["state"].as_str().unwrap_or_default();
                if event["type"] == "MODIFIED" && (state == "DEGRADED" || state == "OFFLINE") {
                    return anyhow::Ok(event);
                }
            }
        }
        anyhow::bail!("the watch ended")
    })
    .await??;
    ensure!(
        seen["object"]["status"]["reason"]["code"] == 20,
        "CLUSTER_NOT_REACHABLE: {seen}"
    );
    agent.freeze(false)?;

    // What Drover does not do is refused, saying why.
    let not_an_agent = cluster(
        "other",
        &format!("http://{}", nodes.api_addr(3)),
        "any-token-0123456789",
    );
    let (status, problem) = call(&addr, Method::POST, base, Some(&not_an_agent)).await?;
    ensure!(
        status == StatusCode::UNPROCESSABLE_ENTITY
            && problem["detail"]
                .as_str()
                .is_some_and(|d| d.contains("drover agent")),
        "{status} {problem}"
    );
    let mut tosca = cluster("tosca", &server, AGENT_TOKEN);
    tosca["spec"]["tosca"] = json!({"tosca_definitions_version": "tosca_simple_yaml_1_2"});
    let (status, problem) = call(&addr, Method::POST, base, Some(&tosca)).await?;
    ensure!(
        status == StatusCode::UNPROCESSABLE_ENTITY
            && problem["detail"].as_str().is_some_and(|d| d.contains("tosca")),
        "{status} {problem}"
    );
    let (status, problem) = call(&addr, Method::PUT, &format!("{base}/edge/status"), Some(&online)).await?;
    ensure!(status == StatusCode::UNPROCESSABLE_ENTITY, "{status} {problem}");

    // A cluster registered through the platform API reads the same through Krake.
    let agent2 = AgentProcess::sim(&[])?;
    let registered = root
        .post(
            "/tenant/ns1/cluster/axebow",
            &json!({"endpoint": format!("http://{}", agent2.addr()), "join_token": AGENT_TOKEN}),
        )
        .await?;
    ensure!(registered.status == StatusCode::OK, "{registered:?}");
    let (status, listed) = call(&addr, Method::GET, "/kubernetes/clusters", None).await?;
    ensure!(status == StatusCode::OK, "{status} {listed}");
    let names: Vec<&str> = listed["items"]
        .as_array()
        .map(|i| i.iter().filter_map(|c| c["metadata"]["name"].as_str()).collect())
        .unwrap_or_default();
    ensure!(names == vec!["axebow", "edge"], "{listed}");
    let axebow = &listed["items"][0];
    ensure!(
        axebow["metadata"]["uid"].as_str().is_some_and(|u| !u.is_empty()),
        "{axebow}"
    );
    ensure!(
        axebow["spec"]["kubeconfig"]["clusters"][0]["cluster"]["server"]
            == format!("http://{}", agent2.addr()),
        "{axebow}"
    );

    // A forced delete removes it at once and answers with the time of its deletion, as Krake's.
    let (status, forced) = call(&addr, Method::DELETE, &format!("{base}/axebow?force=True"), None).await?;
    ensure!(
        status == StatusCode::OK && forced["metadata"]["deleted"].is_string(),
        "{status} {forced}"
    );
    let (status, _) = call(&addr, Method::GET, &format!("{base}/axebow"), None).await?;
    ensure!(status == StatusCode::NOT_FOUND, "{status}");

    // A platform-wide cluster (the operator tenant's) is a Krake Cluster of namespace "operator".
    let agent3 = AgentProcess::sim(&[])?;
    let platform_wide = root
        .post(
            "/tenant/operator/cluster/shared",
            &json!({"endpoint": format!("http://{}", agent3.addr()), "join_token": AGENT_TOKEN}),
        )
        .await?;
    ensure!(platform_wide.status == StatusCode::OK, "{platform_wide:?}");
    let (status, shared) = call(
        &addr,
        Method::GET,
        "/kubernetes/namespaces/operator/clusters/shared",
        None,
    )
    .await?;
    ensure!(
        status == StatusCode::OK && shared["metadata"]["namespace"] == "operator",
        "{status} {shared}"
    );
    let (_, everywhere) = call(&addr, Method::GET, "/kubernetes/clusters", None).await?;
    ensure!(
        everywhere["items"]
            .as_array()
            .is_some_and(|items| items.iter().any(|c| c["metadata"]["name"] == "shared")),
        "{everywhere}"
    );

    // Deleting it through Krake deregisters the Drover cluster.
    let (status, deleted) = call(
        &addr,
        Method::DELETE,
        &format!("{base}/edge?blocking=deleted"),
        None,
    )
    .await?;
    ensure!(
        status == StatusCode::OK && deleted["metadata"]["deleted"].is_string(),
        "{status} {deleted}"
    );
    let gone = root.get("/tenant/ns1/cluster/edge").await?;
    ensure!(gone.status == StatusCode::NOT_FOUND, "{gone:?}");
    let (status, _) = call(&addr, Method::GET, &format!("{base}/edge"), None).await?;
    ensure!(status == StatusCode::NOT_FOUND);

    // Krake's own client library drives the same, unchanged.
    let said = drover_tests::krake::run(
        "cluster_client.py",
        vec![
            format!("http://{}", nodes.api_addr(3)),
            token(OPERATOR_SUBJECT),
            server.clone(),
            AGENT_TOKEN.to_string(),
        ],
    )
    .await?;
    ensure!(said.contains("all checks passed"), "{said}");
    Ok(())
}
