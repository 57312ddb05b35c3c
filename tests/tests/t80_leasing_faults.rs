//! Leasing under crashes, with `drover` processes killed by SIGKILL: 200 clients contend for a
//! pool of 20 while the leader dies, and no resource is ever held by two owners (checked from the
//! clients' own history); heartbeats keep a resource across two leader changes while a silent
//! holder is reaped after its expiry and not before.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{bail, ensure, Result};
use drover_tests::boskos::{static_pool_yaml, BoskosClient};
use drover_tests::process::ProcessCluster;
use drover_tests::wait::eventually;
use reqwest::StatusCode;

/// One grant as a client saw it: held at least from `acked` until `releasing`.
#[derive(Debug, Clone)]
struct Hold {
    resource: String,
    owner: String,
    token: u64,
    acked: Instant,
    releasing: Instant,
}

fn pool_file(dir: &std::path::Path, names: &[String]) -> Result<String> {
    let path = dir.join("pools.yaml");
    std::fs::write(&path, static_pool_yaml("t", names))?;
    Ok(path.display().to_string())
}

fn clients(cluster: &ProcessCluster) -> Vec<BoskosClient> {
    (1..=3).map(|id| cluster.boskos(id)).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_hundred_clients_and_a_killed_leader_never_share_a_resource() -> Result<()> {
    let dir = tempfile::tempdir()?;
    let names: Vec<String> = (0..20).map(|i| format!("r{i:02}")).collect();
    let file = pool_file(dir.path(), &names)?;
    let mut cluster = ProcessCluster::start_with_args(
        3,
        &[format!("--pools={file}"), "--pool-sync-interval=200ms".into()],
    )?;
    let leader = cluster.leader(Duration::from_secs(30)).await?;
    let nodes = clients(&cluster);
    nodes[0].wait_for_free("t", 20, Duration::from_secs(20)).await?;

    let history = Arc::new(Mutex::new(Vec::<Hold>::new()));
    let stop = Arc::new(AtomicBool::new(false));
    let mut tasks = Vec::new();
    for client in 0..200usize {
        let (nodes, history, stop) = (nodes.clone(), history.clone(), stop.clone());
        tasks.push(tokio::spawn(async move {
            let owner = format!("client-{client}");
            let mut turn = client;
            while !stop.load(Ordering::Relaxed) {
                turn += 1;
                let node = &nodes[turn % nodes.len()];
                let Ok(reply) = node.acquire("t", "free", "busy", &owner, None).await else {
                    continue;
                };
                if reply.status != StatusCode::OK {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                    continue;
                }
                let acked = Instant::now();
                let resource = reply.json["name"].as_str().unwrap_or_default().to_string();
                let token = reply.json["fencing_token"].as_u64().unwrap_or_default();
                tokio::time::sleep(Duration::from_millis(5 + (turn % 20) as u64)).await;
                let releasing = Instant::now();
                if let Ok(mut history) = history.lock() {
                    history.push(Hold {
                        resource: resource.clone(),
                        owner: owner.clone(),
                        token,
                        acked,
                        releasing,
                    });
                }
                // Release through whichever node answers; an ambiguous release is settled below.
                for attempt in 0..3 {
                    let node = &nodes[(turn + attempt) % nodes.len()];
                    if let Ok(reply) = node.release(&resource, "free", &owner).await {
                        if reply.status == StatusCode::OK || reply.status == StatusCode::UNAUTHORIZED {
                            break;
                        }
                    }
                }
            }
        }));
    }
    // Phases end on progress, not on time: grants before the kill, through the failover, and
    // after the old leader is back.
    let grants = || history.lock().map(|h| h.len()).unwrap_or(0);
    let progress = |after: usize, what: &'static str| {
        eventually(Duration::from_secs(60), what, move || async move {
            (grants() >= after + 100).then_some(())
        })
    };
    progress(0, "100 grants before the leader is killed").await?;
    cluster.kill(leader)?;
    progress(grants(), "100 grants with the leader dead").await?;
    cluster.restart(leader)?;
    cluster.leader(Duration::from_secs(30)).await?;
    progress(grants(), "100 grants after the old leader is back").await?;
    stop.store(true, Ordering::Relaxed);
    for task in tasks {
        task.await?;
    }

    let history = history.lock().map_err(|e| anyhow::anyhow!("{e}"))?.clone();
    ensure!(
        history.len() > 200,
        "the workload made progress: {} grants",
        history.len()
    );
    println!(
        "200 clients, pool of 20, leader {leader} killed once: {} grants checked",
        history.len()
    );
    let mut by_resource: BTreeMap<&str, Vec<&Hold>> = BTreeMap::new();
    for hold in &history {
        by_resource.entry(&hold.resource).or_default().push(hold);
    }
    for (resource, holds) in &mut by_resource {
        holds.sort_by_key(|h| h.acked);
        for pair in holds.windows(2) {
            if pair[1].acked < pair[0].releasing {
                bail!(
                    "{resource} was held by {} and {} at once: {:?}",
                    pair[0].owner,
                    pair[1].owner,
                    pair
                );
            }
        }
        let mut tokens: Vec<u64> = holds.iter().map(|h| h.token).collect();
        let count = tokens.len();
        tokens.sort_unstable();
        tokens.dedup();
        ensure!(
            tokens.len() == count,
            "{resource}: every grant has its own fencing token"
        );
    }

    // Settle acquires whose answer was lost in the failover, then account for every resource.
    let leader = cluster.leader(Duration::from_secs(30)).await?;
    let client = cluster.boskos(leader);
    for resource in client.resources("t").await? {
        let owner = resource["owner"].as_str().unwrap_or_default();
        if !owner.is_empty() {
            let name = resource["name"].as_str().unwrap_or_default();
            ensure!(
                client.release(name, "free", owner).await?.status == StatusCode::OK,
                "settling {name}"
            );
        }
    }
    let metric = client.metric("t").await?;
    ensure!(
        metric.json["current"]["free"] == 20,
        "every resource is accounted for: {:?}",
        metric.json
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_heartbeat_keeps_a_resource_across_two_leader_changes_and_silence_is_reaped_on_time() -> Result<()>
{
    let dir = tempfile::tempdir()?;
    let file = pool_file(dir.path(), &["kept".to_string(), "silent".to_string()])?;
    let expire = Duration::from_secs(6);
    let mut cluster = ProcessCluster::start_with_args(
        3,
        &[
            format!("--pools={file}"),
            "--pool-sync-interval=200ms".into(),
            "--reaper-expire=6s".into(),
        ],
    )?;
    cluster.leader(Duration::from_secs(30)).await?;
    let nodes = clients(&cluster);
    nodes[0].wait_for_free("t", 2, Duration::from_secs(20)).await?;
    let kept = nodes[1]
        .post(
            "/acquirebystate",
            &[
                ("state", "free"),
                ("dest", "busy"),
                ("owner", "worker"),
                ("names", "kept"),
            ],
            None,
        )
        .await?;
    ensure!(kept.status == StatusCode::OK);
    let silent = nodes[2]
        .post(
            "/acquirebystate",
            &[
                ("state", "free"),
                ("dest", "busy"),
                ("owner", "quiet"),
                ("names", "silent"),
            ],
            None,
        )
        .await?;
    ensure!(silent.status == StatusCode::OK);
    let silent_since = Instant::now();

    let stop = Arc::new(AtomicBool::new(false));
    let lost = Arc::new(AtomicBool::new(false));
    let heartbeat = {
        let (nodes, stop, lost) = (nodes.clone(), stop.clone(), lost.clone());
        tokio::spawn(async move {
            let mut turn = 0;
            while !stop.load(Ordering::Relaxed) {
                turn += 1;
                match nodes[turn % 3].update("kept", "worker", "busy", None).await {
                    Ok(reply)
                        if reply.status == StatusCode::UNAUTHORIZED
                            || reply.status == StatusCode::CONFLICT =>
                    {
                        lost.store(true, Ordering::Relaxed);
                    }
                    _ => {}
                }
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
        })
    };
    for _ in 0..2 {
        let leader = cluster.leader(Duration::from_secs(30)).await?;
        cluster.kill(leader)?;
        cluster.leader(Duration::from_secs(30)).await?;
        cluster.restart(leader)?;
        let restarted = cluster.boskos(leader);
        eventually(
            Duration::from_secs(30),
            "the restarted node to serve the pool",
            || async { restarted.resources("t").await.ok().map(|_| ()) },
        )
        .await?;
    }
    let reaped_after = eventually(
        Duration::from_secs(40),
        "the silent holder to be reaped",
        || async {
            for node in &nodes {
                if let Ok(resources) = node.resources("t").await {
                    let silent = resources.iter().find(|r| r["name"] == "silent")?;
                    return (silent["owner"] == "").then(|| silent_since.elapsed());
                }
            }
            None
        },
    )
    .await?;
    stop.store(true, Ordering::Relaxed);
    heartbeat.await?;
    ensure!(
        reaped_after >= expire,
        "reaped after {reaped_after:?}, before its {expire:?} expiry"
    );
    ensure!(
        !lost.load(Ordering::Relaxed),
        "the heartbeating holder never lost its lease"
    );
    let leader = cluster.leader(Duration::from_secs(30)).await?;
    let resources = cluster.boskos(leader).resources("t").await?;
    let kept = resources
        .iter()
        .find(|r| r["name"] == "kept")
        .cloned()
        .unwrap_or_default();
    ensure!(
        kept["owner"] == "worker" && kept["state"] == "busy",
        "kept across two leader changes: {kept}"
    );
    Ok(())
}
