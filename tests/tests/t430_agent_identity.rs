//! Issue #31, defect 11: one agent registered twice is driven by one cluster only. An `exec`
//! agent registered as `edge` at `http://127.0.0.1:P` runs a pinned set; registering it again
//! as `edge-alias` at `http://localhost:P` (which a comparison of endpoints cannot tell from the
//! first) is refused with `409`, since the registration asks the agent whose it is; an alias
//! registered elsewhere and then pointed at the agent is accepted, but never drives the agent: it is
//! `NOTREADY`, naming the agent's id and `acme/edge`, and over many probe rounds the agent — its
//! own inventory and `/proc`, not only Drover's status — keeps running edge's instances as they
//! were (same processes, no restarts) and runs nothing of the alias's. Before the fix the two
//! cluster actors removed each other's sets and the pinned instances were restarted again and
//! again. Once `edge` is deregistered, the alias takes the agent over and drives it.

use std::collections::BTreeMap;
use std::time::Duration;

use anyhow::{ensure, Context, Result};
use drover_model::cluster::agent_api::Inventory;
use drover_tests::agent::{processes_of_instance, AgentProcess, AGENT_TOKEN};
use drover_tests::platform::{process_platform_args, token, PlatformClient};
use drover_tests::process::ProcessCluster;
use drover_tests::services::{cluster_at, cluster_state_at};
use drover_tests::wait::eventually;
use reqwest::{Method, StatusCode};
use serde_json::json;
use tempfile::TempDir;
use tokio::time::Instant;

const ELECTION: Duration = Duration::from_secs(20);
const CONVERGE: Duration = Duration::from_secs(30);
/// How long the two registrations are watched side by side: fifteen probe intervals.
const WATCH: Duration = Duration::from_secs(3);

fn alice(nodes: &ProcessCluster, id: u64) -> PlatformClient {
    PlatformClient::new(&nodes.api_addr(id), Some(token("alice")))
}

async fn register(client: &PlatformClient, name: &str, endpoint: &str) -> Result<()> {
    let body = json!({"endpoint": endpoint, "join_token": AGENT_TOKEN});
    let answer = client
        .post(&format!("/tenant/acme/cluster/{name}"), &body)
        .await?;
    ensure!(answer.status == StatusCode::OK, "registering {name}: {answer:?}");
    Ok(())
}

async fn pin(client: &PlatformClient, cluster: &str, set: &str, count: u32) -> Result<()> {
    let body = json!({
        "count": count,
        "exec": {"argv": ["sh", "-c", "echo started $DROVER_INSTANCE_ID; exec sleep 1000"]},
        "resources": {"cpu_millis": 10, "memory_mib": 8},
    });
    let answer = client
        .put(&format!("/tenant/acme/cluster/{cluster}/set/{set}"), &body)
        .await?;
    ensure!(answer.status == StatusCode::OK, "pinning {set}: {answer:?}");
    Ok(())
}

/// The platform path of tenant acme's cluster `name`.
fn at(name: &str) -> String {
    format!("/tenant/acme/cluster/{name}")
}

/// Each instance of the inventory: its set, pid, restarts and start time.
fn runs(inventory: &Inventory) -> BTreeMap<String, (String, Option<u32>, u32, Option<String>)> {
    inventory
        .instances
        .iter()
        .map(|i| {
            let run = (i.set.to_string(), i.pid, i.restarts, i.started_at.clone());
            (i.id.to_string(), run)
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_agent_registered_twice_is_driven_by_one_cluster() -> Result<()> {
    let dir = TempDir::new()?;
    let mut args = process_platform_args(dir.path())?;
    args.push("--cluster-probe-interval=200ms".to_string());
    args.push("--cluster-offline-after=2s".to_string());
    let nodes = ProcessCluster::start_with_args(3, &args)?;
    let agent = AgentProcess::exec(&[])?;
    let leader = nodes.leader(ELECTION).await?;
    let alice = alice(&nodes, leader);
    alice.register("alice").await?;
    let created = alice.post("/tenant/acme", &json!({})).await?;
    ensure!(created.status == StatusCode::OK, "creating acme: {created:?}");

    // `edge` drives the agent and runs two pinned instances as processes.
    let port = agent
        .addr()
        .rsplit_once(':')
        .map(|(_, port)| port.to_string())
        .context("no port")?;
    register(&alice, "edge", &format!("http://127.0.0.1:{port}")).await?;
    pin(&alice, "edge", "t430-web", 2).await?;
    let client = agent.client();
    client.running_set("t430-web", 2, CONVERGE).await?;
    let edge = cluster_state_at(&alice, &at("edge"), "ONLINE", CONVERGE).await?;
    let edge_uid = edge["uid"].as_str().context("no uid")?.to_string();
    let before = runs(&client.inventory().await?);

    // The same agent, registered again under another spelling of its address: refused, since
    // the registration asks the agent who it is and whose it is.
    let alias_endpoint = format!("http://localhost:{port}");
    let refused = alice
        .post(
            "/tenant/acme/cluster/edge-alias",
            &json!({"endpoint": alias_endpoint, "join_token": AGENT_TOKEN}),
        )
        .await?;
    ensure!(
        refused.status == StatusCode::CONFLICT,
        "registering the alias: {refused:?}"
    );
    ensure!(
        refused
            .body
            .to_string()
            .contains("already driven by cluster acme/edge"),
        "the refusal names the cluster that drives the agent: {refused:?}"
    );
    // An alias registered while nothing answered at its endpoint, then pointed at the agent (a
    // change of endpoint does not ask the agent), with a set of its own: its actor reaches the
    // agent, which refuses it.
    register(&alice, "edge-alias", "http://127.0.0.1:1").await?;
    let moved = alice
        .call(
            Method::PATCH,
            "/tenant/acme/cluster/edge-alias",
            Some(&json!({"endpoint": alias_endpoint})),
        )
        .await?;
    ensure!(
        moved.status == StatusCode::OK,
        "pointing the alias at the agent: {moved:?}"
    );
    pin(&alice, "edge-alias", "t430-alias", 1).await?;
    eventually(CONVERGE, "edge-alias's actor to reach the agent", || async {
        cluster_at(&alice, &at("edge-alias"))
            .await
            .filter(|c| c["status"]["state"] != "PENDING")
    })
    .await?;

    // Over many probe rounds of both actors the agent runs edge's instances as they were —
    // the same processes, never restarted — and nothing of the alias's; edge stays ONLINE and
    // the alias never is.
    let watch_until = Instant::now() + WATCH;
    while Instant::now() < watch_until {
        let inventory = client.inventory().await?;
        let now = runs(&inventory);
        ensure!(
            now == before,
            "the agent's instances changed while two clusters were registered for it: {before:?} became {now:?}"
        );
        for (id, (_, pid, _, _)) in &now {
            let pids = processes_of_instance(id);
            ensure!(
                pids == vec![pid.unwrap_or_default()],
                "instance {id} runs as {pids:?}, the agent says {pid:?}"
            );
        }
        let edge = cluster_at(&alice, &at("edge")).await.context("edge")?;
        ensure!(edge["status"]["state"] == "ONLINE", "edge: {edge}");
        let alias = cluster_at(&alice, &at("edge-alias"))
            .await
            .context("edge-alias")?;
        ensure!(alias["status"]["state"] == "NOTREADY", "edge-alias: {alias}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let alias = cluster_at(&alice, &at("edge-alias"))
        .await
        .context("edge-alias")?;
    let restarts =
        drover_tests::process::scraped(agent.addr(), "drover_agent_instance_restarts_total").await?;
    ensure!(restarts == 0, "the agent restarted instances {restarts} times");

    // The agent says who it is and whose it is; the alias's reason names both.
    let facts = client.identified_facts().await?;
    let agent_id = facts.agent_id.context("the agent reports no id")?;
    ensure!(
        facts.cluster_uid.as_deref() == Some(edge_uid.as_str()),
        "the agent is bound to {:?}, not edge ({edge_uid})",
        facts.cluster_uid
    );
    let reason = alias["status"]["reason"].as_str().unwrap_or_default();
    ensure!(
        reason.contains(agent_id.as_str()) && reason.contains("acme/edge"),
        "edge-alias's reason: {reason:?}"
    );
    let events = alias["events"].as_array().context("no events")?;
    ensure!(
        events
            .iter()
            .any(|e| e["to"] == "NOTREADY" && e["reason"].as_str() == Some(reason)),
        "no NOTREADY transition with its reason: {events:?}"
    );

    // Once edge is deregistered, the alias takes the agent over: it removes what no cluster
    // of its own pins and runs its set.
    let gone = alice.delete("/tenant/acme/cluster/edge").await?;
    ensure!(gone.status == StatusCode::OK, "deregistering edge: {gone:?}");
    cluster_state_at(&alice, &at("edge-alias"), "ONLINE", CONVERGE).await?;
    let after = client.running_set("t430-alias", 1, CONVERGE).await?;
    let alias_uid = alias["uid"].as_str().context("no uid")?;
    eventually(CONVERGE, "edge's set to be removed", || async {
        let inventory = client.inventory().await.ok()?;
        (!inventory.instances.iter().any(|i| i.set.as_str() == "t430-web")).then_some(())
    })
    .await?;
    let facts = client.identified_facts().await?;
    ensure!(
        facts.cluster_uid.as_deref() == Some(alias_uid),
        "after the takeover the agent is bound to {:?}",
        facts.cluster_uid
    );
    ensure!(facts.agent_id == Some(agent_id), "the agent's id changed");
    ensure!(after.instances.iter().all(|i| i.restarts == 0), "{after:?}");
    Ok(())
}
