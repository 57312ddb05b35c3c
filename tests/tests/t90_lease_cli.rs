//! `drover lease acquire … -- CMD`: holds while CMD runs, heartbeats, releases on exit and on
//! Ctrl-C, waits in the queue, and stops CMD when the lease is lost.

use std::process::Stdio;
use std::time::Duration;

use anyhow::{ensure, Context, Result};
use drover_tests::cluster::TestCluster;
use drover_tests::process::drover_binary;
use drover_tests::wait::eventually;
use reqwest::StatusCode;
use serde_json::Value;

const ELECTION: Duration = Duration::from_secs(15);

async fn cluster() -> Result<(TestCluster, String)> {
    let cluster = TestCluster::start(3).await?;
    cluster.leader(ELECTION).await?;
    ensure!(
        cluster
            .boskos(1)
            .set_config("resources:\n  - type: t\n    state: free\n    names: [a]\n")
            .await?
            .status
            == StatusCode::OK
    );
    let servers = (1..=3)
        .map(|id| format!("http://{}", cluster.api_addr(id)))
        .collect::<Vec<_>>()
        .join(",");
    Ok((cluster, servers))
}

async fn resource(cluster: &TestCluster) -> Result<Value> {
    let list = cluster.boskos(2).resources("t").await?;
    list.into_iter().next().context("resource a")
}

fn cli(servers: &str, extra: &[&str], command: &[&str]) -> Result<tokio::process::Child> {
    Ok(cli_command(servers, extra, command)?.spawn()?)
}

fn cli_command(servers: &str, extra: &[&str], command: &[&str]) -> Result<tokio::process::Command> {
    let mut args = vec![
        "lease", "acquire", "--type", "t", "--owner", "cli", "--server", servers,
    ];
    args.extend_from_slice(extra);
    args.push("--");
    args.extend_from_slice(command);
    let mut cli = tokio::process::Command::new(drover_binary()?);
    cli.args(args).stdin(Stdio::null()).kill_on_drop(true);
    Ok(cli)
}

/// Acquires every node has answered with `404` (nothing free), from their metrics.
async fn refused_acquires(cluster: &TestCluster) -> Result<u64> {
    let mut total = 0;
    for id in 1..=3 {
        let (_, text) = cluster.client(id).get_path("/metrics").await?;
        total += text
            .lines()
            .filter(|line| line.starts_with("drover_http_requests_total{"))
            .filter(|line| line.contains(r#"route="/acquire""#) && line.contains(r#"status="404""#))
            .filter_map(|line| line.rsplit(' ').next()?.parse::<u64>().ok())
            .sum::<u64>();
    }
    Ok(total)
}

async fn owner_is(cluster: &TestCluster, owner: &str) -> Result<Value> {
    eventually(
        Duration::from_secs(20),
        &format!("the owner to be {owner:?}"),
        || async {
            let r = resource(cluster).await.ok()?;
            (r["owner"] == owner).then_some(r)
        },
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn acquire_holds_heartbeats_and_releases_when_the_command_ends() -> Result<()> {
    let (cluster, servers) = cluster().await?;
    let dir = tempfile::tempdir()?;
    let out = dir.path().join("name");
    let script = format!("echo $DROVER_LEASE_NAME > {}; sleep 3", out.display());
    let mut child = cli(&servers, &["--heartbeat", "300ms"], &["sh", "-c", &script])?;
    let first = owner_is(&cluster, "cli").await?;
    let beaten = eventually(
        Duration::from_secs(10),
        "a heartbeat to move lastupdate",
        || async {
            let r = resource(&cluster).await.ok()?;
            (r["owner"] == "cli" && r["lastupdate"] != first["lastupdate"]).then_some(())
        },
    )
    .await;
    let status = tokio::time::timeout(Duration::from_secs(30), child.wait()).await??;
    ensure!(status.success(), "the CLI exits like the command: {status}");
    beaten?;
    let after = resource(&cluster).await?;
    ensure!(
        after["owner"] == "" && after["state"] == "dirty",
        "released to dirty: {after}"
    );
    ensure!(
        std::fs::read_to_string(&out)?.trim() == "a",
        "the command saw DROVER_LEASE_NAME"
    );
    cluster.shutdown().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn ctrl_c_stops_the_command_and_releases() -> Result<()> {
    let (cluster, servers) = cluster().await?;
    let mut child = cli(&servers, &[], &["sleep", "60"])?;
    owner_is(&cluster, "cli").await?;
    let pid = child.id().context("pid")?;
    let sent = tokio::process::Command::new("kill")
        .args(["-INT", &pid.to_string()])
        .status()
        .await?;
    ensure!(sent.success());
    let status = tokio::time::timeout(Duration::from_secs(30), child.wait()).await??;
    ensure!(!status.success(), "an interrupted run exits non-zero: {status}");
    let after = resource(&cluster).await?;
    ensure!(after["owner"] == "", "released after Ctrl-C: {after}");
    cluster.shutdown().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn wait_queues_until_free_and_a_lost_lease_stops_the_command() -> Result<()> {
    let (cluster, servers) = cluster().await?;
    let other = cluster.boskos(3);
    ensure!(other.acquire("t", "free", "busy", "other", None).await?.status == StatusCode::OK);
    let mut child = cli_command(
        &servers,
        &["--wait", "--poll", "200ms", "--heartbeat", "300ms"],
        &["sleep", "60"],
    )?
    .stderr(Stdio::piped())
    .spawn()?;
    // Waiting means polling: the nodes answer several acquires with 404 while the CLI runs.
    let before = refused_acquires(&cluster).await?;
    eventually(Duration::from_secs(20), "the CLI to poll three times", || async {
        let now = refused_acquires(&cluster).await.ok()?;
        (now >= before + 3).then_some(())
    })
    .await?;
    ensure!(
        child.try_wait()?.is_none(),
        "the CLI waits while the pool is empty"
    );
    ensure!(other.release("a", "free", "other").await?.status == StatusCode::OK);
    owner_is(&cluster, "cli").await?;
    // An operator reclaims it: the next heartbeat is refused and the command is stopped.
    let reset = other
        .post(
            "/reset",
            &[
                ("type", "t"),
                ("state", "busy"),
                ("dest", "dirty"),
                ("expire", "1ns"),
            ],
            None,
        )
        .await?;
    ensure!(reset.json["a"] == "cli", "{reset:?}");
    let status = tokio::time::timeout(Duration::from_secs(30), child.wait()).await??;
    ensure!(!status.success(), "a lost lease is a failure: {status}");
    // Not a terminal: progress came as timestamped lines on stderr, with the queue position.
    let mut progress = String::new();
    use tokio::io::AsyncReadExt;
    child
        .stderr
        .take()
        .context("stderr")?
        .read_to_string(&mut progress)
        .await?;
    let waiting = progress
        .lines()
        .find(|line| line.contains("waiting for a free t resource: 1st in the queue"))
        .with_context(|| format!("no queue position in {progress:?}"))?;
    ensure!(
        waiting.starts_with("20") && waiting.split(' ').next().is_some_and(|t| t.ends_with('Z')),
        "not timestamped: {waiting:?}"
    );
    ensure!(progress.contains("acquired a (type t"), "{progress}");
    cluster.shutdown().await
}
