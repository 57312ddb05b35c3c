//! `drover cluster status` against three `drover serve` processes: healthy, it prints every
//! member (role, term, indexes, lag, version, reachability) and exits 0, its JSON being what
//! `GET /cluster` answers; with a follower SIGKILLed it exits 1 and says which member does not
//! answer; with no node up it exits 6.

use std::process::{Command, Output};
use std::time::Duration;

use anyhow::{ensure, Context, Result};
use drover_tests::process::{drover_binary, ProcessCluster};
use drover_tests::wait::eventually;
use serde_json::Value;

fn status(servers: &str, output: &str) -> Result<Output> {
    Ok(Command::new(drover_binary()?)
        .args(["cluster", "status", "--server", servers, "-o", output])
        .env_remove("DROVER_TOKEN")
        .output()?)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cluster_status_shows_every_member_and_exits_non_zero_when_degraded() -> Result<()> {
    let mut nodes = ProcessCluster::start(3)?;
    let leader = nodes.leader(Duration::from_secs(20)).await?;
    let servers: Vec<String> = (1..=3)
        .map(|id| format!("http://{}", nodes.api_addr(id)))
        .collect();
    let all = servers.join(",");

    // Healthy: the JSON is the API's view, with a version and a role for every member.
    let healthy = eventually(Duration::from_secs(20), "every member answering", || async {
        let out = status(&all, "json").ok()?;
        out.status.success().then_some(out)
    })
    .await?;
    let view: Value = serde_json::from_slice(&healthy.stdout).context("JSON on stdout")?;
    let members = view["members"].as_array().context("members")?;
    ensure!(members.len() == 3, "{view}");
    ensure!(view["leader"].as_u64() == Some(leader), "{view}");
    for member in members {
        ensure!(
            member["reachable"] == true && member["version"] == env!("CARGO_PKG_VERSION"),
            "{member}"
        );
        ensure!(
            member["role"].is_string() && member["appliedIndex"].is_u64(),
            "{member}"
        );
    }
    let table = status(&all, "table")?;
    let printed = String::from_utf8_lossy(&table.stdout).to_string();
    ensure!(
        table.status.success() && printed.lines().count() == 4,
        "{printed}"
    );
    ensure!(
        printed.starts_with("ID  ROLE") && printed.contains("leader"),
        "{printed}"
    );

    // A follower killed: degraded, exit 1, and the reason names it.
    let follower = (1..=3).find(|id| *id != leader).context("a follower")?;
    nodes.kill(follower)?;
    let degraded = eventually(
        Duration::from_secs(20),
        "status to see the dead member",
        || async {
            let out = status(&all, "json").ok()?;
            (out.status.code() == Some(1)).then_some(out)
        },
    )
    .await?;
    let said = String::from_utf8_lossy(&degraded.stderr).to_string();
    ensure!(
        said.contains(&format!("member {follower} does not answer")),
        "{said}"
    );

    // Nothing answers: exit 6.
    let nowhere = status(&servers[follower as usize - 1], "json")?;
    ensure!(nowhere.status.code() == Some(6), "{nowhere:?}");
    Ok(())
}
