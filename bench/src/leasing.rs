//! The leasing workload alone: Boskos acquire+release pairs per second and their latency,
//! against Drover only.

use std::time::Duration;

use anyhow::{bail, Result};
use clap::Args;

use crate::driver::{drive, http_client, Worker};
use crate::drover::{BoskosPair, DroverCluster};

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

/// Runs the leasing benchmark and prints a Markdown table.
pub async fn run(args: LeasingArgs) -> Result<()> {
    if args.concurrency.contains(&0) {
        bail!("--concurrency values must be at least 1");
    }
    let max_clients = args.concurrency.iter().copied().max().unwrap_or(1);
    let cluster = DroverCluster::start(max_clients * 2, &[]).await?;
    println!("Boskos acquire+release pairs, three `drover` processes on 127.0.0.1,");
    println!(
        "clients spread over all nodes, {} s measured after {} s warm-up per row.\n",
        args.duration, args.warmup
    );
    println!("| clients | pairs/s | p50 ms | p90 ms | p99 ms | max ms | errors |");
    println!("|---:|---:|---:|---:|---:|---:|---:|");
    for clients in args.concurrency {
        let http = http_client(clients);
        let workers: Vec<Box<dyn Worker>> = (0..clients)
            .map(|i| {
                Box::new(BoskosPair {
                    http: http.clone(),
                    base: format!("http://{}", cluster.node_for(i)),
                    owner: format!("bench-{i}"),
                }) as Box<dyn Worker>
            })
            .collect();
        let cell = drive(
            workers,
            Duration::from_secs(args.warmup),
            Duration::from_secs(args.duration),
        )
        .await;
        println!(
            "| {clients} | {:.0} | {:.2} | {:.2} | {:.2} | {:.2} | {} |",
            cell.rate(),
            cell.samples.quantile_ms(0.5),
            cell.samples.quantile_ms(0.9),
            cell.samples.quantile_ms(0.99),
            cell.samples.quantile_ms(1.0),
            cell.errors,
        );
    }
    Ok(())
}
