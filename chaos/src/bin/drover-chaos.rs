//! `drover-chaos`: runs seeded chaos runs and exits non-zero on any violation.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{bail, Result};
use clap::Parser;
use drover_chaos::config::RunConfig;
use drover_chaos::faults::FaultKind;
use drover_chaos::netns;
use drover_chaos::runner::run;
use drover_chaos::sim::{simulate_seeds, SimOptions};

/// Chaos runs against a three-node Drover cluster on loopback, or in a deterministic simulation.
#[derive(Debug, Parser)]
#[command(name = "drover-chaos")]
struct Cli {
    /// First seed; runs use seed, seed+1, ….
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Number of runs.
    #[arg(long, default_value_t = 1)]
    runs: u64,
    /// Seconds of workload per run.
    #[arg(long, default_value_t = 30)]
    duration: u64,
    /// Concurrent clients.
    #[arg(long, default_value_t = 6)]
    clients: usize,
    /// Register keys.
    #[arg(long, default_value_t = 4)]
    keys: usize,
    /// Concurrent Boskos clients.
    #[arg(long, default_value_t = 3)]
    pool_clients: usize,
    /// Concurrent clients of the services workload, on a `sim` agent the nemesis also kills
    /// and pauses (0: no services). With `--simulate`: on two simulated agents, whose hosts
    /// the nemesis crashes and cuts off, with the actor tree on every member.
    #[arg(long, default_value_t = 2)]
    service_clients: usize,
    /// Fault kinds, comma separated (default: all): kill-leader, kill-random, pause-leader,
    /// pause-random, partition-leader, partition-random, partition-bridge, clock-skew,
    /// lease-skew, member-change; `none` for a fault-free run.
    #[arg(long, default_value_t = FaultKind::names())]
    faults: String,
    /// Cluster size: 3 or 5 nodes.
    #[arg(long, default_value_t = 3)]
    nodes: u64,
    /// Run in the deterministic simulation (the nodes' Raft and actors in-process on simulated
    /// hosts, with simulated network, clock, disks and agents) instead of real processes:
    /// `--duration` is then simulated seconds, and `--faults`, `--nodes` and `--pool-clients`
    /// do not apply.
    #[arg(long)]
    simulate: bool,
    /// With `--simulate`: serve reads without the read barrier (the planted bug the checker
    /// must find).
    #[arg(long, requires = "simulate")]
    planted_stale_read: bool,
    /// With `--simulate`: disks whose fsync of a log append lies, so a crashed node loses
    /// acknowledged entries (the planted missing fsync).
    #[arg(long, requires = "simulate")]
    planted_no_fsync: bool,
    /// With `--simulate`: run every seed a second time in this process and count a seed whose
    /// replay recorded anything else (another digest) as a failure.
    #[arg(long, requires = "simulate")]
    replay: bool,
    /// Where to write the JSON reports (one array).
    #[arg(long, default_value = "chaos-report.json")]
    out: PathBuf,
}

fn main() -> Result<ExitCode> {
    let cli = Cli::parse();
    if cli.simulate {
        return simulate_all(&cli);
    }
    if cli.nodes != 3 && cli.nodes != 5 {
        bail!("--nodes must be 3 or 5, not {}", cli.nodes);
    }
    let mut faults = Vec::new();
    for name in cli
        .faults
        .split(',')
        .map(str::trim)
        .filter(|n| !n.is_empty() && *n != "none")
    {
        match FaultKind::parse(name) {
            Some(kind) => faults.push(kind),
            None => bail!("unknown fault {name:?}: use some of {}", FaultKind::names()),
        }
    }
    // Partitions are iptables rules in a network namespace that lives as long as the harness.
    if faults.iter().any(|kind| kind.partitions()) && !netns::inside() {
        let code = netns::reexec_inside()?;
        return Ok(ExitCode::from(u8::try_from(code).unwrap_or(1)));
    }
    tokio::runtime::Runtime::new()?.block_on(run_all(&cli, faults))
}

fn simulate_all(cli: &Cli) -> Result<ExitCode> {
    // A replay's logs: every member's and actor's, e.g. DROVER_SIM_LOG=drover_actors=info.
    // Simulated time on every line, so that a replay's log is the same line for line.
    if let Ok(filter) = std::env::var("DROVER_SIM_LOG") {
        drover_chaos::sim::log::init(&filter).map_err(anyhow::Error::msg)?;
    }
    let template = SimOptions {
        clients: cli.clients,
        keys: cli.keys as u64,
        duration: Duration::from_secs(cli.duration),
        planted_stale_read: cli.planted_stale_read,
        planted_no_fsync: cli.planted_no_fsync,
        service_clients: cli.service_clients,
        replay: cli.replay,
        ..SimOptions::new(cli.seed)
    };
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let outcomes = simulate_seeds(cli.seed, cli.runs, &template, threads);
    let (mut failed, mut differed) = (0, 0);
    for outcome in &outcomes {
        println!("{}", outcome.summary());
        for violation in &outcome.violations {
            println!("  violation: {violation}");
        }
        failed += usize::from(!outcome.violations.is_empty());
        differed += usize::from(outcome.replay_differs());
    }
    println!("{failed} of {} simulated seeds had violations", outcomes.len());
    if cli.replay {
        println!(
            "{differed} of {} simulated seeds replayed differently",
            outcomes.len()
        );
    }
    std::fs::write(&cli.out, serde_json::to_vec_pretty(&outcomes)?)?;
    println!("reports written to {}", cli.out.display());
    Ok(if failed + differed > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

async fn run_all(cli: &Cli, faults: Vec<FaultKind>) -> Result<ExitCode> {
    let mut reports = Vec::new();
    let mut failed = false;
    let mut broken = false;
    for seed in cli.seed..cli.seed + cli.runs {
        let config = RunConfig {
            seed,
            duration: Duration::from_secs(cli.duration),
            clients: cli.clients,
            keys: cli.keys,
            pool_clients: cli.pool_clients,
            faults: faults.clone(),
            nodes: cli.nodes,
            service_clients: cli.service_clients,
        };
        // Ctrl-C drops the cluster, which kills (and resumes) every process it started.
        let report = tokio::select! {
            report = run(&config) => report?,
            _ = tokio::signal::ctrl_c() => {
                eprintln!("interrupted: every node was stopped");
                return Ok(ExitCode::from(130));
            }
        };
        report.print();
        failed |= !report.violations.is_empty();
        broken |= !report.faults_skipped.is_empty();
        reports.push(report);
    }
    if reports.len() > 1 {
        drover_chaos::report::print_totals(&reports);
    }
    std::fs::write(&cli.out, serde_json::to_vec_pretty(&reports)?)?;
    println!("reports written to {}", cli.out.display());
    // 1: a promise was broken; 2: a fault could not be injected, so the run proved less than
    // it claims (run as root, with iptables).
    Ok(if failed {
        ExitCode::from(1)
    } else if broken {
        eprintln!("some faults could not be injected: the run is not valid");
        ExitCode::from(2)
    } else {
        ExitCode::SUCCESS
    })
}
