//! `drover-bench scale`: what a large store costs. For each object count it starts a fresh
//! three-node cluster, creates that many lease objects, and reports the load rate, resident
//! memory per object, the data directory's size, the time for the whole cluster to start again
//! after SIGKILL, and the time for a new member to catch up by snapshot and become a voter.

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use clap::Args;
use drover_tests::status::applied_index;
use drover_tests::wait::eventually;
use reqwest::{Client, StatusCode};
use serde_json::json;

use crate::driver::http_client;
use crate::drover::DroverCluster;

/// Arguments of `drover-bench scale`.
#[derive(Debug, Args)]
pub struct ScaleArgs {
    /// Object counts to measure, each on a fresh cluster.
    #[arg(long, value_delimiter = ',', default_value = "10000")]
    pub objects: Vec<u64>,
    /// Concurrent clients loading the objects.
    #[arg(long, default_value_t = 256)]
    pub clients: u64,
}

const NAMESPACE: &str = "scale";

/// Creates objects `worker, worker + step, …` below `count`; counts failures after retries.
async fn load_slice(http: Client, node: String, worker: u64, step: u64, count: u64, failed: Arc<AtomicU64>) {
    let url = format!("http://{node}/apis/coordination.k8s.io/v1/namespaces/{NAMESPACE}/leases");
    let mut i = worker;
    while i < count {
        let body = json!({"metadata": {"name": format!("s-{i}")}, "spec": {"holderIdentity": "scale", "leaseDurationSeconds": 10}});
        let mut created = false;
        for _ in 0..5 {
            match http.post(&url).json(&body).send().await {
                Ok(r) if r.status() == StatusCode::CREATED || r.status() == StatusCode::CONFLICT => {
                    created = true;
                    break;
                }
                _ => tokio::time::sleep(Duration::from_millis(100)).await,
            }
        }
        if !created {
            failed.fetch_add(1, Ordering::Relaxed);
        }
        i += step;
    }
}

fn dir_size(path: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(path) else {
        return 0;
    };
    entries
        .flatten()
        .map(|entry| match entry.metadata() {
            Ok(meta) if meta.is_dir() => dir_size(&entry.path()),
            Ok(meta) => meta.len(),
            Err(_) => 0,
        })
        .sum()
}

async fn all_ready(http: &Client, nodes: &[String], timeout: Duration) -> Result<()> {
    eventually(timeout, "every node to answer /readyz", || async {
        for node in nodes {
            let response = http.get(format!("http://{node}/readyz")).send().await.ok()?;
            if response.status() != StatusCode::OK {
                return None;
            }
        }
        Some(())
    })
    .await
}

async fn wait_applied(http: &Client, node: &str, index: u64, timeout: Duration) -> Result<()> {
    eventually(timeout, &format!("{node} to apply index {index}"), || async {
        (applied_index(http, node).await? >= index).then_some(())
    })
    .await
}

fn mib(kib: &[u64]) -> String {
    let shown: Vec<String> = kib.iter().map(|k| format!("{:.0}", *k as f64 / 1024.0)).collect();
    shown.join(" / ")
}

async fn measure(objects: u64, clients: u64) -> Result<String> {
    let mut cluster = DroverCluster::start(1, &[]).await?;
    let http = http_client(clients as usize);
    let before = cluster.rss_kib();

    let failed = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    let tasks: Vec<_> = (0..clients)
        .map(|w| {
            tokio::spawn(load_slice(
                http.clone(),
                cluster.node_for(w as usize).to_string(),
                w,
                clients,
                objects,
                failed.clone(),
            ))
        })
        .collect();
    for task in tasks {
        task.await?;
    }
    let load = started.elapsed();
    let failed = failed.load(Ordering::Relaxed);
    if failed > 0 {
        bail!("{failed} of {objects} creates failed");
    }
    let after = cluster.rss_kib();
    let per_object: Vec<String> = before
        .iter()
        .zip(&after)
        .map(|(b, a)| format!("{:.0}", a.saturating_sub(*b) as f64 * 1024.0 / objects as f64))
        .collect();
    let disk: Vec<String> = (1..=3)
        .map(|id| {
            format!(
                "{:.1}",
                dir_size(&cluster.processes.data_dir(id)) as f64 / 1_048_576.0
            )
        })
        .collect();

    // Every node killed at once, then started again: time until each answers /readyz.
    for id in 1..=3 {
        cluster.processes.kill(id)?;
    }
    let restarted = Instant::now();
    for id in 1..=3 {
        cluster.processes.restart(id)?;
    }
    all_ready(&http, &cluster.nodes, Duration::from_secs(600)).await?;
    let startup = restarted.elapsed();

    // A new member: it gets the snapshot, then becomes a voter.
    let target = applied_index(&http, &cluster.nodes[0])
        .await
        .context("reading the applied index")?;
    let joiner = cluster.processes.spawn_joiner()?;
    let joined = Instant::now();
    let response = http
        .post(format!("http://{}/cluster/members", cluster.nodes[0]))
        .timeout(Duration::from_secs(600))
        .json(&json!({
            "id": joiner,
            "peerAddr": cluster.processes.peer_addr(joiner),
            "apiAddr": cluster.processes.api_addr(joiner),
        }))
        .send()
        .await
        .context("adding a member")?;
    if !response.status().is_success() {
        bail!("adding a member answered {}", response.status());
    }
    // A voter may still be installing the snapshot: it has caught up once it has applied
    // everything the cluster had applied when it was added.
    let joiner_api = cluster.processes.api_addr(joiner);
    wait_applied(&http, &joiner_api, target, Duration::from_secs(600)).await?;
    let catch_up = joined.elapsed();
    let joiner_rss = cluster.rss_kib();

    Ok(format!(
        "| {objects} | {:.0} | {} | {} | {} | {} | {:.2} | {:.2} | {} |",
        objects as f64 / load.as_secs_f64(),
        mib(&after),
        per_object.join(" / "),
        disk.join(" / "),
        mib(&before),
        startup.as_secs_f64(),
        catch_up.as_secs_f64(),
        mib(&joiner_rss[3..]),
    ))
}

/// Runs every object count and prints a Markdown table.
pub async fn run(args: ScaleArgs) -> Result<()> {
    if args.clients == 0 || args.objects.contains(&0) {
        bail!("--clients and --objects values must be at least 1");
    }
    println!(
        "Lease objects created by {} clients over three `drover` processes (release build, default timings); \
         figures per node 1 / 2 / 3.\n",
        args.clients
    );
    println!(
        "| objects | creates/s | RSS MiB | RSS bytes per object | data dir MiB | RSS empty MiB | restart all, s to ready | new member, s to caught up | new member RSS MiB |"
    );
    println!("|---:|---:|---|---|---|---|---:|---:|---:|");
    for objects in args.objects {
        println!("{}", measure(objects, args.clients).await?);
    }
    Ok(())
}
