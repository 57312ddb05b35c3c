//! Separate `drover` processes: the leader is killed with SIGKILL; every acknowledged write
//! survives, the survivors keep serving, and the restarted node catches up.
//!
//! What this cannot show: a process killed with SIGKILL loses only what it had not yet handed
//! to the kernel; its written-but-unsynced data stays in the page cache and reaches the disk
//! anyway. A missing fsync passes this test. The deterministic simulation's disk drops unsynced
//! writes when a host crashes, and `chaos/tests/simulation.rs` proves the checkers catch a
//! planted missing fsync there (`drover-chaos --simulate --planted-no-fsync`).

use std::time::Duration;

use anyhow::{ensure, Result};
use drover_tests::process::ProcessCluster;
use drover_tests::wait::eventually;
use reqwest::StatusCode;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn killing_the_leader_loses_no_acknowledged_write() -> Result<()> {
    let mut cluster = ProcessCluster::start(3)?;
    let leader = match cluster.leader(Duration::from_secs(30)).await {
        Ok(leader) => leader,
        Err(e) => anyhow::bail!("{e}\nnode 1 log:\n{}", cluster.log_of(1)),
    };
    let mut acknowledged = Vec::new();
    for i in 0..30u64 {
        let via = cluster.running_ids()[(i as usize) % 3];
        let name = format!("before-{i}");
        let answer = cluster.client(via).create("crash", &name, "h").await?;
        ensure!(answer.status == StatusCode::CREATED, "write {i}: {answer:?}");
        acknowledged.push(name);
    }
    cluster.kill(leader)?;
    let next = cluster.leader(Duration::from_secs(30)).await?;
    ensure!(next != leader, "a new leader");
    for i in 0..10u64 {
        let via = cluster.running_ids()[(i as usize) % 2];
        let name = format!("after-{i}");
        let answer = cluster.client(via).create("crash", &name, "h").await?;
        ensure!(
            answer.status == StatusCode::CREATED,
            "write after kill {i}: {answer:?}"
        );
        acknowledged.push(name);
    }
    for id in cluster.running_ids() {
        let list = cluster.client(id).list("crash").await?;
        let names: Vec<&str> = list.body["items"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|o| o["metadata"]["name"].as_str())
            .collect();
        for name in &acknowledged {
            ensure!(names.contains(&name.as_str()), "node {id} lost {name}");
        }
    }
    cluster.restart(leader)?;
    let restarted = cluster.client(leader);
    let expected = acknowledged.len();
    eventually(
        Duration::from_secs(30),
        "the restarted node to catch up",
        || async {
            let list = restarted.list("crash").await.ok()?;
            let count = list.body["items"].as_array()?.len();
            (count == expected).then_some(())
        },
    )
    .await?;
    let stale = restarted.get("crash", "after-9", "?consistency=stale").await?;
    ensure!(
        stale.status == StatusCode::OK,
        "the restarted node holds the state locally: {stale:?}"
    );
    Ok(())
}
