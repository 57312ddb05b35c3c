//! The leasing workload: acquire+release pairs per second and their latency.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Result};
use clap::Args;
use drover_tests::boskos::BoskosClient;
use drover_tests::process::ProcessCluster;
use reqwest::StatusCode;

use crate::histogram::Samples;

/// Arguments of `drover-bench leasing`.
#[derive(Debug, Args)]
pub struct LeasingArgs {
    /// Client counts to run, one after another.
    #[arg(long, value_delimiter = ',', default_value = "1,16,64")]
    concurrency: Vec<usize>,
    /// Measured time per client count, in seconds.
    #[arg(long, default_value_t = 10)]
    duration: u64,
    /// Unmeasured warm-up per client count, in seconds.
    #[arg(long, default_value_t = 2)]
    warmup: u64,
}

struct Outcome {
    samples: Samples,
    errors: u64,
    elapsed: Duration,
}

/// One client: acquire, release, record; errors are counted, not retried.
async fn client(
    node: BoskosClient,
    owner: String,
    measuring: Arc<AtomicBool>,
    stop: Arc<AtomicBool>,
    errors: Arc<AtomicU64>,
) -> Samples {
    let mut samples = Samples::default();
    while !stop.load(Ordering::Relaxed) {
        let started = Instant::now();
        let acquired = match node.acquire("bench", "free", "busy", &owner, None).await {
            Ok(reply) if reply.status == StatusCode::OK => {
                reply.json["name"].as_str().unwrap_or_default().to_string()
            }
            _ => {
                errors.fetch_add(u64::from(measuring.load(Ordering::Relaxed)), Ordering::Relaxed);
                continue;
            }
        };
        let released = node.release(&acquired, "free", &owner).await;
        if !matches!(released, Ok(ref reply) if reply.status == StatusCode::OK) {
            errors.fetch_add(u64::from(measuring.load(Ordering::Relaxed)), Ordering::Relaxed);
            continue;
        }
        if measuring.load(Ordering::Relaxed) {
            samples.record(started.elapsed());
        }
    }
    samples
}

async fn run_once(nodes: &[BoskosClient], clients: usize, warmup: Duration, duration: Duration) -> Outcome {
    let measuring = Arc::new(AtomicBool::new(false));
    let stop = Arc::new(AtomicBool::new(false));
    let errors = Arc::new(AtomicU64::new(0));
    let tasks: Vec<_> = (0..clients)
        .map(|i| {
            let node = nodes[i % nodes.len()].clone();
            tokio::spawn(client(
                node,
                format!("bench-{i}"),
                measuring.clone(),
                stop.clone(),
                errors.clone(),
            ))
        })
        .collect();
    tokio::time::sleep(warmup).await;
    measuring.store(true, Ordering::Relaxed);
    let started = Instant::now();
    tokio::time::sleep(duration).await;
    measuring.store(false, Ordering::Relaxed);
    let elapsed = started.elapsed();
    stop.store(true, Ordering::Relaxed);
    let mut samples = Samples::default();
    for task in tasks {
        if let Ok(client_samples) = task.await {
            samples.merge(client_samples);
        }
    }
    Outcome {
        samples,
        errors: errors.load(Ordering::Relaxed),
        elapsed,
    }
}

/// Runs the leasing benchmark and prints a Markdown table.
pub async fn run(args: LeasingArgs) -> Result<()> {
    let max_clients = args.concurrency.iter().copied().max().unwrap_or(1);
    let dir = tempfile_dir()?;
    let names: Vec<String> = (0..max_clients * 2).map(|i| format!("r{i}")).collect();
    let file = dir.join("pools.yaml");
    std::fs::write(
        &file,
        format!(
            "resources:\n  - type: bench\n    state: free\n    names: [{}]\n",
            names.join(", ")
        ),
    )?;
    let cluster = ProcessCluster::start_with_args(3, &[format!("--pools={}", file.display())])?;
    let leader = cluster.leader(Duration::from_secs(30)).await?;
    let nodes: Vec<BoskosClient> = (1..=3).map(|id| cluster.boskos(id)).collect();
    nodes[0]
        .wait_for_free("bench", names.len() as u64, Duration::from_secs(30))
        .await?;
    println!("Boskos acquire+release pairs, three `drover` processes on 127.0.0.1 (leader: node {leader}),");
    println!(
        "clients spread over all nodes, {} s measured after {} s warm-up per row.\n",
        args.duration, args.warmup
    );
    println!("| clients | pairs/s | p50 ms | p90 ms | p99 ms | max ms | errors |");
    println!("|---:|---:|---:|---:|---:|---:|---:|");
    for clients in &args.concurrency {
        if *clients == 0 {
            bail!("--concurrency values must be at least 1");
        }
        let mut outcome = run_once(
            &nodes,
            *clients,
            Duration::from_secs(args.warmup),
            Duration::from_secs(args.duration),
        )
        .await;
        let rate = outcome.samples.len() as f64 / outcome.elapsed.as_secs_f64();
        println!(
            "| {clients} | {rate:.0} | {:.2} | {:.2} | {:.2} | {:.2} | {} |",
            outcome.samples.quantile_ms(0.5),
            outcome.samples.quantile_ms(0.9),
            outcome.samples.quantile_ms(0.99),
            outcome.samples.quantile_ms(1.0),
            outcome.errors,
        );
    }
    drop(cluster);
    std::fs::remove_dir_all(&dir)?;
    Ok(())
}

fn tempfile_dir() -> Result<std::path::PathBuf> {
    let dir = std::env::temp_dir().join(format!("drover-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    Ok(dir)
}
