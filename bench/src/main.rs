//! `drover-bench`: starts its own three-node cluster of `drover` processes on loopback, drives a
//! fixed-concurrency workload for a fixed time (after a warm-up that is not counted), and prints
//! throughput and latency percentiles. Figures are printed, never asserted.
//!
//! `drover-bench leasing --concurrency 1,16,64 --duration 10` measures Boskos acquire+release
//! pairs: each client acquires a resource of a pool large enough that nobody waits, releases it,
//! and records the latency of the pair. `drover-bench compare` runs Drover and a three-member
//! etcd cluster side by side on the same workloads and writes the table into
//! `docs/BENCHMARKS.md`. `drover-bench soak --minutes 5` repeats the exhaustion findings of the
//! hardening issue and prints every node's memory each minute.

mod clusters;
mod compare;
mod compare_args;
mod containers;
mod driver;
mod drover;
mod etcd;
mod failover;
mod goals;
mod grpc;
mod histogram;
mod leasing;
mod proc;
mod report;
mod scale;
mod scheduling;
mod services;
mod soak;

use anyhow::Result;
use clap::{Parser, Subcommand};

// The load generator shares the machine's cores with the nodes it measures: the lighter it is,
// the less it takes from them (glibc's malloc was an eighth of its CPU).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

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
    /// Drover and etcd side by side: writes, reads, leasing and heartbeats.
    Compare(compare_args::CompareArgs),
    /// Leader SIGKILLs under an outside write probe, Drover and etcd in one run.
    Failover(failover::FailoverArgs),
    /// Memory, disk, restart and catch-up figures with many objects stored.
    Scale(scale::ScaleArgs),
    /// One cluster actor observing many `sim` instances, and its steady-state Raft writes.
    Clusters(clusters::ClustersArgs),
    /// Services placed and run on three `sim` clusters.
    Services(services::ServicesArgs),
    /// Pod start latency of the `container` executor with a cached image (needs root).
    Containers(containers::ContainersArgs),
    /// Decisions per second of the pure scheduler (10,000 services over 100 clusters).
    Scheduling(scheduling::SchedulingArgs),
    /// The hardening issue's exhaustion findings repeated for minutes, RSS printed each minute.
    Soak(soak::SoakArgs),
}

#[tokio::main]
async fn main() -> Result<()> {
    match Cli::parse().workload {
        Workload::Leasing(args) => leasing::run(args).await,
        Workload::Compare(args) => compare::run(args).await,
        Workload::Failover(args) => failover::run(args).await,
        Workload::Scale(args) => scale::run(args).await,
        Workload::Soak(args) => soak::run(args).await,
        Workload::Clusters(args) => clusters::run(args).await,
        Workload::Services(args) => services::run(args).await,
        Workload::Scheduling(args) => scheduling::run(args).await,
        Workload::Containers(args) => containers::run(args).await,
    }
}
