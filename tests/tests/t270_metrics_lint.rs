//! Every node's `/metrics` passes `promtool check metrics` (Debian's Prometheus package): three
//! `drover serve` processes with a Boskos pool and a platform-wide `sim` cluster running a
//! service, so that the pool, cluster, service and Raft families all have samples; each node's
//! text is checked, the leader's and the followers'.

use std::io::Write;
use std::process::{Command, Stdio};
use std::time::Duration;

use anyhow::{ensure, Context, Result};
use drover_tests::agent::AgentProcess;
use drover_tests::boskos::static_pool_yaml;
use drover_tests::platform::{process_platform_args, token, PlatformClient, OPERATOR_SUBJECT};
use drover_tests::process::ProcessCluster;
use drover_tests::services::{cluster_state, expect_ok, tenant_with_clusters};
use drover_tests::wait::eventually;
use reqwest::Method;
use serde_json::json;

const CONVERGE: Duration = Duration::from_secs(30);

/// `promtool check metrics` of `text`: its exit status and what it printed.
fn promtool_check(text: &str) -> Result<(bool, String)> {
    let mut child = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .context("promtool is not installed: run `make setup` (Debian package prometheus)")?;
    child
        .stdin
        .take()
        .context("promtool's stdin")?
        .write_all(text.as_bytes())?;
    let output = child.wait_with_output()?;
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    Ok((output.status.success(), said))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_nodes_metrics_pass_promtool() -> Result<()> {
    let dir = tempfile::tempdir()?;
    let names: Vec<String> = (0..3).map(|i| format!("r{i}")).collect();
    let pools = dir.path().join("pools.yaml");
    std::fs::write(&pools, static_pool_yaml("t", &names))?;
    let mut args = process_platform_args(dir.path())?;
    args.push(format!("--pools={}", pools.display()));
    args.push("--cluster-probe-interval=200ms".into());
    args.push("--pool-sync-interval=200ms".into());
    let nodes = ProcessCluster::start_with_args(3, &args)?;
    let agent = AgentProcess::start(&["--executor=sim"])?;
    let leader = nodes.leader(CONVERGE).await?;
    let root = PlatformClient::new(&nodes.api_addr(leader), Some(token(OPERATOR_SUBJECT)));
    let alice = PlatformClient::new(&nodes.api_addr(leader), Some(token("alice")));
    tenant_with_clusters(&root, &alice, &[(&agent, "edge")], 8000).await?;
    cluster_state(&root, "edge", "ONLINE", CONVERGE).await?;
    let service = json!({"deployment": {"roles": {"web": {"instances": 1, "exec": {"argv": ["web"]}}}}});
    expect_ok(
        &alice,
        Method::POST,
        "/tenant/acme/service/web?accept=true&wait=30",
        Some(&service),
    )
    .await?;

    let http = reqwest::Client::builder().no_proxy().build()?;
    for id in 1..=3 {
        let url = format!("http://{}/metrics", nodes.api_addr(id));
        // Every family the node serves is there once its actors (on the leader) have run.
        let text = eventually(CONVERGE, &format!("node {id}'s metrics"), || async {
            let text = http.get(&url).send().await.ok()?.text().await.ok()?;
            let complete =
                text.contains("drover_raft_") && (id != leader || text.contains("drover_service_actors "));
            complete.then_some(text)
        })
        .await?;
        let (clean, said) = promtool_check(&text)?;
        ensure!(
            clean && said.trim().is_empty(),
            "node {id}: promtool check metrics says:\n{said}"
        );
    }
    Ok(())
}
