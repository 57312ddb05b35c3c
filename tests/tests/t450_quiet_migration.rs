//! Time passes in a quiet cluster (issue #31, defect 1): a service that moved shortly before its
//! new cluster fails is moved again once its migration interval has passed, though nothing else
//! is written in the meantime. Three `drover serve` processes, two `sim` clusters, one service.
//! The service moves off cluster X when X goes `OFFLINE`; X comes back; within the migration
//! interval of that move its new cluster Y goes `OFFLINE` too. With no other write, the service
//! must run on X again (in X's agent's own inventory) within the interval plus the offline
//! threshold plus 2 s of Y's freeze. Before the fix the pass judged the interval by the committed
//! clock, which stands still while nothing is written, and the service stayed on Y.

use std::time::{Duration, Instant};

use anyhow::{ensure, Context, Result};
use drover_model::cluster::agent_api::InstanceState;
use drover_tests::agent::{AgentClient, AgentProcess};
use drover_tests::platform::{process_platform_args, token, PlatformClient, OPERATOR_SUBJECT};
use drover_tests::process::ProcessCluster;
use drover_tests::services::{cluster_state, expect_ok, tenant_with_clusters};
use drover_tests::wait::eventually;
use reqwest::Method;
use serde_json::json;

const ELECTION: Duration = Duration::from_secs(20);
const CONVERGE: Duration = Duration::from_secs(60);
const OFFLINE_AFTER: Duration = Duration::from_secs(2);
const MIGRATION_INTERVAL: Duration = Duration::from_secs(8);

/// The cluster the platform has the service on, once it is not moving.
async fn settled_on(alice: &PlatformClient) -> Option<String> {
    let answer = alice.get("/tenant/acme/service/quiet").await.ok()?;
    let data = &answer.body["data"];
    if !data["migratingTo"].is_null() {
        return None;
    }
    data["cluster"]["name"].as_str().map(str::to_string)
}

/// How many instances of the service `agent` runs, by its own inventory.
async fn running_on(agent: &AgentClient) -> Option<usize> {
    let inventory = agent.inventory().await.ok()?;
    Some(
        inventory
            .instances
            .iter()
            .filter(|i| i.id.as_str().starts_with("acme.quiet."))
            .filter(|i| i.state == InstanceState::Running)
            .count(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_migration_interval_elapses_while_nothing_is_written() -> Result<()> {
    let dir = tempfile::TempDir::new()?;
    let mut args = process_platform_args(dir.path())?;
    args.extend([
        "--cluster-probe-interval=200ms".to_string(),
        format!("--cluster-offline-after={}s", OFFLINE_AFTER.as_secs()),
        format!("--service-migration-interval={}s", MIGRATION_INTERVAL.as_secs()),
        // No periodic rescoring: nothing but the interval may let the service move.
        "--service-reschedule-after=0s".to_string(),
    ]);
    let nodes = ProcessCluster::start_with_args(3, &args)?;
    let agents = [AgentProcess::sim(&[])?, AgentProcess::sim(&[])?];
    let leader = nodes.leader(ELECTION).await?;
    let root = PlatformClient::new(&nodes.api_addr(leader), Some(token(OPERATOR_SUBJECT)));
    let alice = PlatformClient::new(&nodes.api_addr(leader), Some(token("alice")));
    let named = [(&agents[0], "a"), (&agents[1], "b")];
    tenant_with_clusters(&root, &alice, &named, 1_000_000).await?;
    for zone in ["a", "b"] {
        cluster_state(&root, zone, "ONLINE", CONVERGE).await?;
    }
    let body = json!({"deployment": {"roles": {"web": {"instances": 1, "exec": {"argv": ["web"]},
        "resources": {"cpu_millis": 10, "memory_mib": 4}}}}});
    expect_ok(
        &alice,
        Method::POST,
        "/tenant/acme/service/quiet?accept=true",
        Some(&body),
    )
    .await?;
    let first = eventually(CONVERGE, "the service placed", || settled_on(&alice)).await?;
    let (x, y) = if first == "a" { (0, 1) } else { (1, 0) };
    let (x_name, y_name) = (named[x].1, named[y].1);
    let (x_agent, y_agent) = (agents[x].client(), agents[y].client());
    eventually(CONVERGE, "the service running on its first cluster", || async {
        (running_on(&x_agent).await? == 1).then_some(())
    })
    .await?;

    // X fails: the service moves to Y (its first move, so no interval holds it back).
    x_agent.set_unreachable(true).await?;
    eventually(CONVERGE, "the service moved to the other cluster", || async {
        (settled_on(&alice).await? == y_name && running_on(&y_agent).await? == 1).then_some(())
    })
    .await?;
    let moved = Instant::now();
    // X comes back.
    x_agent.set_unreachable(false).await?;
    cluster_state(&root, x_name, "ONLINE", CONVERGE).await?;
    ensure!(
        moved.elapsed() < MIGRATION_INTERVAL - OFFLINE_AFTER,
        "the test needs Y to fail within the migration interval of the move; X took {:?} to come back",
        moved.elapsed()
    );

    // Within the interval of that move, Y fails; nothing else is written from now on.
    y_agent.set_unreachable(true).await?;
    let frozen = Instant::now();
    let limit = MIGRATION_INTERVAL + OFFLINE_AFTER + Duration::from_secs(2);
    let back = eventually(
        limit + Duration::from_secs(10),
        "the service running on X again",
        || async { (settled_on(&alice).await? == x_name && running_on(&x_agent).await? == 1).then_some(()) },
    )
    .await;
    let took = frozen.elapsed();
    y_agent.set_unreachable(false).await?;
    back.context("the service never left the failed cluster")?;
    eprintln!("t450: moved back {took:?} after its cluster froze (limit {limit:?})");
    ensure!(
        took <= limit,
        "the service ran on X again {took:?} after Y froze, past the interval plus the offline threshold plus 2 s ({limit:?})"
    );
    Ok(())
}
