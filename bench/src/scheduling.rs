//! `drover-bench scheduling`: decisions per second of the pure scheduler
//! (`drover_model::scheduling::schedule`) for 10,000 services over 100 clusters, each cluster
//! with labels and three weighted metrics, a third of the services with a label constraint and
//! a tenth with a metric constraint. Single-threaded, in this process; figures are printed,
//! never asserted. End-to-end placements through Raft are `drover-bench services`.

use std::collections::BTreeMap;
use std::time::Instant;

use anyhow::Result;
use clap::Args;
use drover_model::cluster::agent_api::Resources;
use drover_model::cluster::{ClusterRef, ClusterState};
use drover_model::scheduling::score::MetricValue;
use drover_model::scheduling::{schedule, Candidate, LabelConstraint, MetricConstraint, Needs, STICKINESS};
use drover_model::service::Usage;

/// `drover-bench scheduling` flags.
#[derive(Debug, Args)]
pub struct SchedulingArgs {
    /// Services to decide for.
    #[arg(long, default_value_t = 10_000)]
    services: usize,
    /// Clusters to choose among.
    #[arg(long, default_value_t = 100)]
    clusters: usize,
    /// Timed passes over every service.
    #[arg(long, default_value_t = 3)]
    runs: usize,
}

/// A fraction in [0, 1) from two numbers (deterministic, so runs compare).
fn fraction(a: usize, b: usize) -> f64 {
    let mut x =
        (a as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ (b as u64).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x ^= x >> 31;
    (x % 10_000) as f64 / 10_000.0
}

pub async fn run(args: SchedulingArgs) -> Result<()> {
    let labels: Vec<BTreeMap<String, String>> = (0..args.clusters)
        .map(|i| {
            BTreeMap::from([
                ("zone".to_string(), format!("z{}", i % 10)),
                (
                    "tier".to_string(),
                    if i % 3 == 0 { "gold" } else { "silver" }.to_string(),
                ),
            ])
        })
        .collect();
    let metrics: Vec<BTreeMap<String, MetricValue>> = (0..args.clusters)
        .map(|i| {
            ["green", "cheap", "load"]
                .iter()
                .enumerate()
                .map(|(k, name)| {
                    let v = fraction(i, k);
                    let metric = MetricValue {
                        value: v,
                        normalised: v,
                        weight: 1.0 + k as f64,
                    };
                    (name.to_string(), metric)
                })
                .collect()
        })
        .collect();
    let candidates: Vec<Candidate<'_>> = (0..args.clusters)
        .map(|i| Candidate {
            cluster: ClusterRef {
                tenant: "operator".into(),
                name: format!("c{i:03}"),
            },
            state: if i % 25 == 0 {
                ClusterState::Offline
            } else {
                ClusterState::Online
            },
            labels: &labels[i],
            free: Some(Resources {
                cpu_millis: 64_000,
                memory_mib: 256 * 1024,
            }),
            metrics: Some(&metrics[i]),
            executor: Some("sim"),
            custom_resources: &[],
        })
        .collect();
    let zone = LabelConstraint::parse("zone in (z1, z2, z3)")?;
    let load = MetricConstraint::parse("load < 0.8")?;
    let needs: Vec<Needs> = (0..args.services)
        .map(|i| Needs {
            service: format!("2b7d4c11-9e3a-4f6c-0a1e-{i:012}"),
            usage: Usage {
                vcpu_millis: 300,
                memory_mib: 256,
            },
            surge: Usage {
                vcpu_millis: 300,
                memory_mib: 256,
            },
            labels: if i % 3 == 0 {
                vec![zone.clone()]
            } else {
                Vec::new()
            },
            metrics: if i % 10 == 0 {
                vec![load.clone()]
            } else {
                Vec::new()
            },
            custom_resources: Vec::new(),
            containers: false,
            programs: true,
        })
        .collect();
    println!(
        "scheduling: {} services over {} clusters (4 % OFFLINE, 3 weighted metrics each; a third with a label constraint, a tenth with a metric constraint)",
        args.services, args.clusters
    );
    for run in 1..=args.runs {
        let started = Instant::now();
        let mut placed = 0usize;
        for (i, need) in needs.iter().enumerate() {
            let current = (i % 2 == 0).then(|| &candidates[i % args.clusters].cluster);
            if schedule(need, &candidates, current, STICKINESS).chosen.is_some() {
                placed += 1;
            }
        }
        let elapsed = started.elapsed().as_secs_f64();
        println!(
            "scheduling: run {run}: {} decisions in {:.3} s, {:.0} decisions/s ({placed} placed), {:.1} µs each",
            needs.len(),
            elapsed,
            needs.len() as f64 / elapsed,
            elapsed * 1e6 / needs.len() as f64
        );
    }
    Ok(())
}
