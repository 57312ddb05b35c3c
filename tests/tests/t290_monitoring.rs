//! The monitoring recipes in `deploy/monitoring/` hold: `promtool check rules` and `promtool
//! test rules` pass on the alert rules, and a real Prometheus (Debian's package) scraping three
//! `drover serve` processes (with a pool, a `sim` cluster and a service, so that every family has
//! samples) gets data for every query of the Grafana dashboard (`dashboard-queries.txt`), then
//! sees a leader change after the leader is SIGKILLed.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use anyhow::{ensure, Context, Result};
use drover_tests::agent::AgentProcess;
use drover_tests::boskos::static_pool_yaml;
use drover_tests::platform::{process_platform_args, token, PlatformClient, OPERATOR_SUBJECT};
use drover_tests::process::ProcessCluster;
use drover_tests::prometheus::Prometheus;
use drover_tests::services::{cluster_state, expect_ok, tenant_with_clusters};
use drover_tests::wait::eventually;
use reqwest::Method;
use serde_json::json;

const CONVERGE: Duration = Duration::from_secs(60);

fn monitoring_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../deploy/monitoring")
}

fn promtool(args: &[&str]) -> Result<()> {
    let output = Command::new("promtool")
        .args(args)
        .current_dir(monitoring_dir())
        .output()
        .context("promtool is not installed: run `make setup` (Debian package prometheus)")?;
    ensure!(
        output.status.success(),
        "promtool {}: {}{}",
        args.join(" "),
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    Ok(())
}

#[test]
fn the_alert_rules_check_and_their_unit_tests_pass() -> Result<()> {
    promtool(&["check", "rules", "drover-alerts.yml"])?;
    promtool(&["test", "rules", "drover-alerts.test.yml"])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prometheus_sees_a_leader_change_and_every_dashboard_query_has_data() -> Result<()> {
    let queries = std::fs::read_to_string(monitoring_dir().join("dashboard-queries.txt"))?;
    let queries: Vec<&str> = queries.lines().filter(|l| !l.trim().is_empty()).collect();
    ensure!(queries.len() > 20, "the dashboard's queries: {}", queries.len());

    let dir = tempfile::tempdir()?;
    let names: Vec<String> = (0..3).map(|i| format!("r{i}")).collect();
    let pools = dir.path().join("pools.yaml");
    std::fs::write(&pools, static_pool_yaml("t", &names))?;
    let mut args = process_platform_args(dir.path())?;
    args.extend([
        format!("--pools={}", pools.display()),
        "--pool-sync-interval=200ms".into(),
        "--cluster-probe-interval=200ms".into(),
    ]);
    let mut nodes = ProcessCluster::start_with_args(3, &args)?;
    let agent = AgentProcess::start(&["--executor=sim"])?;
    let targets: Vec<SocketAddr> = (1..=3)
        .map(|id| nodes.api_addr(id).parse())
        .collect::<Result<_, _>>()?;
    let agents: Vec<SocketAddr> = vec![agent.addr().parse()?];
    let prometheus = Prometheus::start_jobs(
        &[("drover", targets), ("drover-agent", agents)],
        Duration::from_secs(1),
    )
    .await?;

    let leader = nodes.leader(CONVERGE).await?;
    let root = PlatformClient::new(&nodes.api_addr(leader), Some(token(OPERATOR_SUBJECT)));
    let alice = PlatformClient::new(&nodes.api_addr(leader), Some(token("alice")));
    tenant_with_clusters(&root, &alice, &[(&agent, "edge")], 8000).await?;
    cluster_state(&root, "edge", "ONLINE", CONVERGE).await?;
    // A pinned set (sent by the cluster actor) and a service (by its service actor).
    let pinned = json!({"count": 1, "exec": {"argv": ["hello"]}});
    expect_ok(
        &root,
        Method::PUT,
        "/tenant/operator/cluster/edge/set/hello",
        Some(&pinned),
    )
    .await?;
    let service = json!({"deployment": {"roles": {"web": {"instances": 1, "exec": {"argv": ["web"]}}}}});
    expect_ok(
        &alice,
        Method::POST,
        "/tenant/acme/service/web?accept=true&wait=30",
        Some(&service),
    )
    .await?;

    // Prometheus sees the three nodes agree on the leader, `leader`.
    let agreed = |leader: u64| {
        let prometheus = &prometheus;
        async move {
            let low = format!("min(drover_raft_leader_id{{job=\"drover\"}}) == {leader}");
            let high = format!("max(drover_raft_leader_id{{job=\"drover\"}}) == {leader}");
            let low = prometheus.query(&low).await.ok()?;
            let high = prometheus.query(&high).await.ok()?;
            (!low.as_array()?.is_empty() && !high.as_array()?.is_empty()).then_some(())
        }
    };
    eventually(CONVERGE, "three nodes up in Prometheus", || async {
        let up = prometheus.query("sum(up{job=\"drover\"})").await.ok()?;
        (up[0]["value"][1] == "3").then_some(())
    })
    .await?;
    eventually(CONVERGE, "Prometheus to see the first leader", || agreed(leader)).await?;
    // Every dashboard query returns data.
    for query in queries {
        eventually(CONVERGE, &format!("data for {query}"), || async {
            let result = prometheus.query(query).await.ok()?;
            (!result.as_array()?.is_empty()).then_some(())
        })
        .await?;
    }
    // The leader killed: Prometheus sees the leader change.
    nodes.kill(leader)?;
    let new_leader = nodes.leader(CONVERGE).await?;
    ensure!(new_leader != leader);
    let root = PlatformClient::new(&nodes.api_addr(new_leader), Some(token(OPERATOR_SUBJECT)));
    expect_ok(&root, Method::GET, "/tenant/operator/cluster/edge", None).await?;
    eventually(CONVERGE, "Prometheus to see the new leader", || {
        agreed(new_leader)
    })
    .await?;

    Ok(())
}
