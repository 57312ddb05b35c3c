//! `drover-bench`: starts its own three-node cluster of `drover` processes on loopback, drives a
//! fixed-concurrency workload for a fixed time (after a warm-up that is not counted), and prints
//! throughput and latency percentiles. Figures are printed, never asserted.
//!
//! `drover-bench leasing --concurrency 1,16,64 --duration 10s` measures Boskos acquire+release
//! pairs: each client acquires a resource of a pool large enough that nobody waits, releases it,
//! and records the latency of the pair.

mod histogram;
mod leasing;

use anyhow::Result;
use clap::{Parser, Subcommand};

/// Drover's benchmark programs.
#[derive(Debug, Parser)]
#[command(name = "drover-bench")]
struct Cli {
    #[command(subcommand)]
    workload: Workload,
}

#[derive(Debug, Subcommand)]
enum Workload {
    /// Boskos acquire+release pairs against a three-node cluster.
    Leasing(leasing::LeasingArgs),
}

#[tokio::main]
async fn main() -> Result<()> {
    match Cli::parse().workload {
        Workload::Leasing(args) => leasing::run(args).await,
    }
}
