//! Watches that resume from a revision on a follower, across a leader change; and membership
//! changes at run time, with a new member catching up by snapshot after the log was purged.

use std::time::Duration;

use anyhow::{ensure, Context, Result};
use drover_raft::RaftConfig;
use drover_tests::client::read_events;
use drover_tests::cluster::{test_raft_config, TestCluster};
use drover_tests::wait::eventually;
use reqwest::StatusCode;
use serde_json::Value;

const ELECTION: Duration = Duration::from_secs(15);

/// Each event's type and object name, in order.
fn types_and_names(events: &[Value]) -> Vec<(String, String)> {
    events
        .iter()
        .map(|e| {
            (
                e["type"].as_str().unwrap_or("").to_string(),
                e["object"]["metadata"]["name"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_watch_on_a_follower_sees_every_change_once_in_order_across_a_leader_change() -> Result<()> {
    let mut cluster = TestCluster::start(3).await?;
    let leader = cluster.leader(ELECTION).await?;
    let watcher = cluster
        .running_ids()
        .into_iter()
        .find(|id| *id != leader)
        .unwrap_or(leader);
    let writer_before = cluster.client(leader);

    let first = writer_before.create("default", "w1", "a").await?;
    ensure!(first.status == StatusCode::CREATED, "{first:?}");
    let start = first.resource_version().unwrap_or_default();
    // Changes made before the watch opens, but after its revision, must be delivered too.
    let modified = writer_before.replace("default", "w1", "b", None).await?;
    ensure!(modified.status == StatusCode::OK);

    let mut watch = cluster.client(watcher).watch("default", &start).await?;
    ensure!(watch.status() == StatusCode::OK, "watch: {}", watch.status());
    let created = writer_before.create("default", "w2", "c").await?;
    ensure!(created.status == StatusCode::CREATED);

    cluster.stop(leader).await?;
    let next = cluster.leader(ELECTION).await?;
    ensure!(next != leader);
    let writer_after = cluster.client(next);
    let replaced = writer_after.replace("default", "w2", "d", None).await?;
    ensure!(replaced.status == StatusCode::OK, "{replaced:?}");
    let deleted = writer_after.delete("default", "w1").await?;
    ensure!(deleted.status == StatusCode::OK, "{deleted:?}");

    let events = read_events(&mut watch, 4, Duration::from_secs(15)).await?;
    let seen = types_and_names(&events);
    let expected = [
        ("MODIFIED", "w1"),
        ("ADDED", "w2"),
        ("MODIFIED", "w2"),
        ("DELETED", "w1"),
    ];
    ensure!(
        seen.iter()
            .map(|(t, n)| (t.as_str(), n.as_str()))
            .collect::<Vec<_>>()
            == expected,
        "events: {seen:?}"
    );
    let versions: Vec<u64> = events
        .iter()
        .filter_map(|e| e["object"]["metadata"]["resourceVersion"].as_str()?.parse().ok())
        .collect();
    ensure!(versions.windows(2).all(|w| w[0] < w[1]), "in order: {versions:?}");
    ensure!(versions.len() == 4, "every event has a version: {events:?}");
    cluster.shutdown().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_watch_from_a_purged_revision_gets_410_expired() -> Result<()> {
    let config = RaftConfig {
        watch_history: 3,
        ..test_raft_config()
    };
    let cluster = TestCluster::start_with(3, config).await?;
    cluster.leader(ELECTION).await?;
    let client = cluster.client(1);
    let first = client.create("default", "old", "a").await?;
    let start = first.resource_version().unwrap_or_default();
    for i in 0..5 {
        ensure!(
            client
                .replace("default", "old", &format!("h{i}"), None)
                .await?
                .status
                == StatusCode::OK
        );
    }
    let mut watch = client.watch("default", &start).await?;
    let events = read_events(&mut watch, 1, Duration::from_secs(10)).await?;
    ensure!(
        events[0]["type"] == "ERROR" && events[0]["object"]["code"] == 410,
        "{events:?}"
    );
    cluster.shutdown().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_new_member_catches_up_by_snapshot_becomes_voter_and_a_member_is_removed() -> Result<()> {
    let config = RaftConfig {
        snapshot_every_logs: 40,
        logs_kept_after_snapshot: 5,
        ..test_raft_config()
    };
    let mut cluster = TestCluster::start_with(3, config).await?;
    let leader = cluster.leader(ELECTION).await?;
    let client = cluster.client(leader);
    ensure!(client.create("default", "grow", "v0").await?.status == StatusCode::CREATED);
    for i in 1..=120 {
        let answer = client.replace("default", "grow", &format!("v{i}"), None).await?;
        ensure!(answer.status == StatusCode::OK, "write {i}: {answer:?}");
    }
    eventually(
        Duration::from_secs(20),
        "the leader to snapshot and purge",
        || async {
            let status = cluster.node(leader).ok()?.raft.status();
            (status.snapshot_index > 40 && status.purged_index > 0).then_some(())
        },
    )
    .await?;

    let joiner = cluster.start_joiner().await?;
    let joiner_config = cluster
        .nodes
        .get(&joiner)
        .map(|n| n.config.clone())
        .context("joiner")?;
    let via = cluster
        .running_ids()
        .into_iter()
        .find(|id| *id != leader && *id != joiner)
        .unwrap_or(leader);
    let add = cluster
        .client(via)
        .http()
        .post(format!("{}/cluster/members", cluster.client(via).base()))
        .json(&serde_json::json!({
            "id": joiner,
            "peerAddr": joiner_config.peer_addr.to_string(),
            "apiAddr": joiner_config.api_addr.to_string(),
        }))
        .send()
        .await?;
    ensure!(
        add.status() == StatusCode::CREATED,
        "add member: {} {}",
        add.status(),
        add.text().await?
    );

    let read = cluster.client(joiner).get("default", "grow", "").await?;
    ensure!(
        read.body["spec"]["holderIdentity"] == "v120",
        "joiner reads the latest: {read:?}"
    );
    let (_, metrics) = cluster.client(joiner).get_path("/metrics").await?;
    ensure!(
        metrics
            .lines()
            .any(|l| l.starts_with("drover_raft_snapshots_installed ") && !l.ends_with(" 0")),
        "the joiner installed a snapshot"
    );
    let (_, view) = cluster.client(leader).get_path("/cluster").await?;
    let view: Value = serde_json::from_str(&view)?;
    let joined = view["members"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|m| m["id"] == joiner)
        .cloned();
    ensure!(
        joined.as_ref().is_some_and(|m| m["membership"] == "voter"),
        "joiner is a voter: {view}"
    );

    let removed = cluster
        .running_ids()
        .into_iter()
        .find(|id| *id != leader && *id != joiner)
        .context("a follower")?;
    let answer = cluster
        .client(joiner)
        .http()
        .delete(format!(
            "{}/cluster/members/{removed}",
            cluster.client(joiner).base()
        ))
        .send()
        .await?;
    ensure!(answer.status() == StatusCode::OK, "remove: {}", answer.status());
    cluster.stop(removed).await?;
    let after = cluster
        .client(joiner)
        .replace("default", "grow", "after", None)
        .await?;
    ensure!(
        after.status == StatusCode::OK,
        "the cluster keeps serving: {after:?}"
    );
    let (_, view) = cluster.client(leader).get_path("/cluster").await?;
    let view: Value = serde_json::from_str(&view)?;
    ensure!(
        view["members"].as_array().map(Vec::len) == Some(3),
        "three members left: {view}"
    );
    cluster.shutdown().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_watch_lost_with_its_node_resumes_on_another_without_gaps() -> Result<()> {
    let mut cluster = TestCluster::start(3).await?;
    let leader = cluster.leader(ELECTION).await?;
    let lost = cluster
        .running_ids()
        .into_iter()
        .find(|id| *id != leader)
        .unwrap_or(leader);
    let other = cluster
        .running_ids()
        .into_iter()
        .find(|id| *id != leader && *id != lost)
        .unwrap_or(leader);
    let writer = cluster.client(leader);
    let first = writer.create("default", "r1", "a").await?;
    ensure!(first.status == StatusCode::CREATED, "{first:?}");
    let start = first.resource_version().unwrap_or_default();
    let mut watch = cluster.client(lost).watch("default", &start).await?;
    ensure!(watch.status() == StatusCode::OK);
    ensure!(writer.create("default", "r2", "b").await?.status == StatusCode::CREATED);
    let seen = read_events(&mut watch, 1, Duration::from_secs(15)).await?;
    let last_seen = seen[0]["object"]["metadata"]["resourceVersion"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    // The watched node goes away; changes go on while no watch is open.
    cluster.stop(lost).await?;
    let mut ended = false;
    for _ in 0..100 {
        match tokio::time::timeout(Duration::from_secs(15), watch.chunk()).await {
            Ok(Ok(Some(_))) => continue,
            _ => {
                ended = true;
                break;
            }
        }
    }
    ensure!(ended, "the watch did not end with its node");
    ensure!(writer.replace("default", "r1", "c", None).await?.status == StatusCode::OK);
    ensure!(writer.create("default", "r3", "d").await?.status == StatusCode::CREATED);
    // Reopened on another node from the last version seen: the missed changes, then new ones.
    let mut resumed = cluster.client(other).watch("default", &last_seen).await?;
    ensure!(resumed.status() == StatusCode::OK);
    ensure!(writer.delete("default", "r2").await?.status == StatusCode::OK);
    let events = read_events(&mut resumed, 3, Duration::from_secs(15)).await?;
    let seen = types_and_names(&events);
    let expected = [("MODIFIED", "r1"), ("ADDED", "r3"), ("DELETED", "r2")];
    ensure!(
        seen.iter()
            .map(|(t, n)| (t.as_str(), n.as_str()))
            .collect::<Vec<_>>()
            == expected,
        "events after resuming: {seen:?}"
    );
    cluster.shutdown().await
}
