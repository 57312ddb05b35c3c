//! Applies a planned fault to the cluster and heals it: signals, iptables rules in the harness's
//! namespace, a restart under libfaketime, or a membership change through the API.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use drover_tests::process::{Hosts, ProcessCluster};
use drover_tests::wait::eventually;
use serde_json::json;

use crate::faults::FaultKind;
use crate::netns;
use crate::rng::Rng;

/// Where the nodes of a chaos cluster listen: one loopback address each, so partitions can
/// single them out.
pub const HOSTS: Hosts = Hosts::Separate;

/// How long a healing membership change may take (a catch-up may need a snapshot).
const REJOIN: Duration = Duration::from_secs(30);

/// The followers' clocks in a [`FaultKind::LeaseSkew`]: twice as fast as the leader's, no offset.
const LEASE_SKEW_CLOCK: &str = "+0 x2";

/// Finds libfaketime's multi-threaded library.
pub fn libfaketime() -> Result<PathBuf> {
    let candidates = std::fs::read_dir("/usr/lib")?
        .flatten()
        .map(|entry| entry.path().join("faketime/libfaketimeMT.so.1"))
        .chain([PathBuf::from("/usr/lib/faketime/libfaketimeMT.so.1")]);
    for path in candidates {
        if path.is_file() {
            return Ok(path);
        }
    }
    bail!("clock skew needs libfaketime (apt install faketime)")
}

/// Checks that every enabled fault can be injected here, before the run starts.
pub fn prepare(kinds: &[FaultKind]) -> Result<()> {
    if kinds.iter().any(|kind| kind.partitions()) {
        netns::prepare()?;
    }
    if kinds.contains(&FaultKind::ClockSkew) || kinds.contains(&FaultKind::LeaseSkew) {
        libfaketime()?;
    }
    Ok(())
}

fn pick(rng: &mut Rng, among: &[u64]) -> Result<u64> {
    if among.is_empty() {
        bail!("no node to pick");
    }
    Ok(among[rng.below(among.len() as u64) as usize])
}

/// Applies `kind`; returns the nodes it hit (for the heal and the report).
pub async fn apply(cluster: &mut ProcessCluster, rng: &mut Rng, kind: FaultKind) -> Result<Vec<u64>> {
    let running = cluster.running_ids();
    let leader = || cluster.leader(Duration::from_secs(15));
    match kind {
        FaultKind::KillLeader | FaultKind::KillRandom => {
            let target = if kind == FaultKind::KillLeader {
                leader().await?
            } else {
                pick(rng, &running)?
            };
            cluster.kill(target)?;
            Ok(vec![target])
        }
        FaultKind::PauseLeader | FaultKind::PauseRandom => {
            let target = if kind == FaultKind::PauseLeader {
                leader().await?
            } else {
                pick(rng, &running)?
            };
            cluster.pause(target, true)?;
            Ok(vec![target])
        }
        FaultKind::PartitionLeader => {
            let target = leader().await?;
            let rest: Vec<u64> = running.iter().copied().filter(|id| *id != target).collect();
            cut_between(&[target], &rest)?;
            Ok(vec![target])
        }
        FaultKind::PartitionRandom => {
            // A random minority (one node of three; one or two of five) against the majority.
            let order = shuffled(rng, &running);
            let minority = 1 + rng.below(((order.len() as u64).saturating_sub(1) / 2).max(1)) as usize;
            let (cut, rest) = order.split_at(minority.min(order.len()));
            cut_between(cut, rest)?;
            Ok(cut.to_vec())
        }
        FaultKind::PartitionBridge => {
            // Two halves that cannot see each other and one node that sees both (of three: two
            // nodes cut, the third reaches both; of five: two against two, with a bridge).
            let order = shuffled(rng, &running);
            let Some((_bridge, others)) = order.split_first() else {
                bail!("no running node to partition");
            };
            let (left, right) = others.split_at(others.len() / 2);
            cut_between(left, right)?;
            Ok(others.to_vec())
        }
        FaultKind::ClockSkew => {
            let target = pick(rng, &running)?;
            let library = libfaketime()?;
            let offset = rng.below(61) as i64 - 30;
            let rate = ["0.5", "0.8", "1.25", "1.5"][rng.below(4) as usize];
            cluster.kill(target)?;
            let spec = format!("{offset:+}s x{rate}");
            println!("  node {target} runs with its clock at {spec}");
            cluster.restart_with_env(
                target,
                &[
                    ("LD_PRELOAD", &library.display().to_string()),
                    ("FAKETIME", &spec),
                ],
            )?;
            Ok(vec![target])
        }
        FaultKind::LeaseSkew => {
            let library = libfaketime()?.display().to_string();
            let first = leader().await?;
            let followers: Vec<u64> = running.iter().copied().filter(|id| *id != first).collect();
            for id in &followers {
                cluster.kill(*id)?;
                cluster.restart_with_env(*id, &[("LD_PRELOAD", &library), ("FAKETIME", LEASE_SKEW_CLOCK)])?;
                // Back in the cluster (it names the leader) before the next one goes down.
                cluster.leader(Duration::from_secs(15)).await?;
            }
            // Usually still the first leader; whoever leads now is the one cut off.
            let target = cluster.leader(Duration::from_secs(15)).await?;
            println!(
                "  nodes {followers:?} run with their clocks at {LEASE_SKEW_CLOCK}; node {target} (leading, \
                 first {first}) is cut off from the others"
            );
            let rest: Vec<u64> = running.iter().copied().filter(|id| *id != target).collect();
            cut_between(&[target], &rest)?;
            Ok(followers)
        }
        FaultKind::KillAgent | FaultKind::PauseAgent | FaultKind::FlapCluster => {
            bail!("{kind} is the agent's, injected beside the control plane's faults")
        }
        FaultKind::MemberChange => {
            let leader = leader().await?;
            let followers: Vec<u64> = running.iter().copied().filter(|id| *id != leader).collect();
            let target = pick(rng, &followers)?;
            remove_member(cluster, leader, target).await?;
            Ok(vec![target])
        }
    }
}

/// `among` in a random order drawn from `rng`.
fn shuffled(rng: &mut Rng, among: &[u64]) -> Vec<u64> {
    let mut rest = among.to_vec();
    let mut order = Vec::with_capacity(rest.len());
    while !rest.is_empty() {
        let index = rng.below(rest.len() as u64) as usize;
        order.push(rest.swap_remove(index));
    }
    order
}

/// Cuts every link between a node of `a` and a node of `b`, both ways.
fn cut_between(a: &[u64], b: &[u64]) -> Result<()> {
    for x in a {
        for y in b {
            netns::cut(HOSTS.of(*x), HOSTS.of(*y))?;
        }
    }
    Ok(())
}

/// Undoes what [`apply`] did to `nodes`.
pub async fn heal(cluster: &mut ProcessCluster, kind: FaultKind, nodes: &[u64]) -> Result<()> {
    match kind {
        FaultKind::KillLeader | FaultKind::KillRandom => nodes.iter().try_for_each(|id| cluster.restart(*id)),
        FaultKind::PauseLeader | FaultKind::PauseRandom => {
            nodes.iter().try_for_each(|id| cluster.pause(*id, false))
        }
        FaultKind::PartitionLeader | FaultKind::PartitionRandom | FaultKind::PartitionBridge => netns::heal(),
        FaultKind::ClockSkew => nodes.iter().try_for_each(|id| {
            cluster.kill(*id)?;
            cluster.restart(*id)
        }),
        FaultKind::LeaseSkew => {
            netns::heal()?;
            for id in nodes {
                cluster.kill(*id)?;
                cluster.restart(*id)?;
                cluster.leader(Duration::from_secs(15)).await?;
            }
            Ok(())
        }
        FaultKind::KillAgent | FaultKind::PauseAgent | FaultKind::FlapCluster => Ok(()),
        FaultKind::MemberChange => {
            for id in nodes {
                add_member(cluster, *id).await?;
            }
            Ok(())
        }
    }
}

fn http() -> Result<reqwest::Client> {
    Ok(crate::credentials::client_builder()
        .timeout(Duration::from_secs(10))
        .build()?)
}

async fn remove_member(cluster: &ProcessCluster, via: u64, target: u64) -> Result<()> {
    let url = format!("http://{}/cluster/members/{target}", cluster.api_addr(via));
    let response = http()?.delete(url).send().await?;
    if !response.status().is_success() {
        bail!("removing node {target} answered {}", response.status());
    }
    Ok(())
}

/// Adds `target` back, through any node, until one accepts it.
async fn add_member(cluster: &ProcessCluster, target: u64) -> Result<()> {
    let http = http()?;
    let body = json!({
        "id": target,
        "peerAddr": cluster.peer_addr(target),
        "apiAddr": cluster.api_addr(target),
    });
    let nodes: Vec<String> = cluster
        .running_ids()
        .into_iter()
        .filter(|id| *id != target)
        .map(|id| cluster.api_addr(id))
        .collect();
    eventually(REJOIN, "the removed node to be added back", || async {
        for node in &nodes {
            let sent = http
                .post(format!("http://{node}/cluster/members"))
                .json(&body)
                .send()
                .await;
            if sent.is_ok_and(|response| response.status().is_success()) {
                return Some(());
            }
        }
        None
    })
    .await
    .with_context(|| format!("node {target} could not rejoin"))
}
