//! The summary of a run: per-fault figures, failover times, violations; printed as a table and
//! written as JSON.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::config::RunConfig;
use crate::faults::FaultKind;
use crate::history::History;

/// One injected fault.
#[derive(Debug, Clone, Serialize)]
pub struct FaultRecord {
    /// Its kind.
    pub kind: FaultKind,
    /// The nodes it hit.
    pub nodes: Vec<u64>,
    /// The agent it hit, by its cluster's name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// When it began (µs from the start).
    pub start: u64,
    /// When it was healed.
    pub end: u64,
}

impl FaultRecord {
    /// A fault on `nodes` from `start` to `end`.
    pub fn new(kind: FaultKind, nodes: Vec<u64>, start: u64, end: u64) -> Self {
        Self {
            kind,
            nodes,
            agent: None,
            start,
            end,
        }
    }

    /// The same fault, on the agent of `cluster`.
    pub fn on_agent(mut self, cluster: &str) -> Self {
        self.agent = Some(cluster.to_string());
        self
    }
}

/// Figures for one fault kind.
#[derive(Debug, Clone, Default, Serialize)]
pub struct FaultSummary {
    /// How many were injected.
    pub count: usize,
    /// Writes that succeeded while one was in force.
    pub writes_ok: usize,
    /// Operations that certainly failed while one was in force.
    pub failures: usize,
    /// Longest time without a successful write that overlapped one of them, in ms.
    pub max_unavailable_ms: u64,
}

/// The outcome of a run.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// The seed that reproduces it.
    pub seed: u64,
    /// Register operations recorded.
    pub register_ops: usize,
    /// Acknowledged unique creates.
    pub acknowledged_creates: usize,
    /// Pool resources granted.
    pub grants: usize,
    /// Pool heartbeats and releases accepted.
    pub token_uses: usize,
    /// Service changes acknowledged (creates, scales, program changes, deletions).
    pub service_changes: usize,
    /// Of those, rollbacks.
    pub service_rollbacks: usize,
    /// Service changes whose outcome was unknown (read back before the next).
    pub service_changes_unknown: usize,
    /// Instances the agents ran as the services' accepted revisions ask, after healing.
    pub service_instances_checked: usize,
    /// Fences read from the agents during the run (for the monotonicity check).
    pub agent_fences_sampled: usize,
    /// Instance ids seen on both agents during the run (moved between clusters).
    pub service_instances_moved: usize,
    /// Successful writes.
    pub writes_ok: usize,
    /// Operations that certainly failed.
    pub failed: u64,
    /// Operations with unknown outcome.
    pub unknown: u64,
    /// Per fault kind.
    pub faults: BTreeMap<String, FaultSummary>,
    /// For each leader kill: ms from the kill to the first success of a write sent after it.
    pub failover_ms: Vec<u64>,
    /// Time from healing to every node holding the same state, in ms.
    pub converged_ms: Option<u64>,
    /// Broken promises; empty when the run passed.
    pub violations: Vec<String>,
    /// Every fault, in order.
    pub fault_log: Vec<FaultRecord>,
    /// Faults that could not be injected (no root, no iptables, …): a run with any did not test
    /// what it claims, and `drover-chaos` exits with status 2.
    pub faults_skipped: Vec<String>,
}

/// The longest stretch without a successful write that overlaps `[from, to]`.
fn longest_gap(successes: &[u64], from: u64, to: u64) -> u64 {
    let mut points: Vec<u64> = successes.to_vec();
    points.sort_unstable();
    let mut longest = 0;
    let mut previous = points.iter().rev().find(|t| **t <= from).copied().unwrap_or(from);
    for point in points.iter().copied().filter(|t| *t > from) {
        longest = longest.max(point - previous);
        previous = point;
        if point > to {
            break;
        }
    }
    if points.last().is_none_or(|last| *last <= to) {
        longest = longest.max(to.saturating_sub(previous));
    }
    longest / 1000
}

impl Report {
    /// Summarises a history.
    pub fn new(config: &RunConfig, history: &History, fault_log: Vec<FaultRecord>) -> Self {
        let mut faults: BTreeMap<String, FaultSummary> = BTreeMap::new();
        let mut failover_ms = Vec::new();
        for fault in &fault_log {
            let summary = faults.entry(fault.kind.to_string()).or_default();
            summary.count += 1;
            let within = |t: u64| t >= fault.start && t <= fault.end;
            summary.writes_ok += history.write_successes.iter().filter(|(_, r)| within(*r)).count();
            summary.failures += history.failures.iter().filter(|t| within(**t)).count();
            let returns: Vec<u64> = history
                .write_successes
                .iter()
                .map(|(_, returned)| *returned)
                .collect();
            summary.max_unavailable_ms =
                summary
                    .max_unavailable_ms
                    .max(longest_gap(&returns, fault.start, fault.end));
            if fault.kind == FaultKind::KillLeader {
                // Writes already in flight at the kill say nothing about the new leader.
                let next = history
                    .write_successes
                    .iter()
                    .filter(|(invoked, _)| *invoked > fault.start)
                    .map(|(_, returned)| *returned)
                    .min();
                if let Some(next) = next {
                    failover_ms.push((next - fault.start) / 1000);
                }
            }
        }
        Self {
            seed: config.seed,
            register_ops: history.register.len(),
            acknowledged_creates: history.acknowledged.len(),
            grants: history.grants.len(),
            token_uses: history.accepted.len(),
            service_changes: 0,
            service_changes_unknown: 0,
            service_instances_checked: 0,
            agent_fences_sampled: 0,
            service_instances_moved: 0,
            service_rollbacks: 0,
            writes_ok: history.write_successes.len(),
            failed: history.failed,
            unknown: history.unknown,
            faults,
            failover_ms,
            converged_ms: None,
            violations: Vec::new(),
            fault_log,
            faults_skipped: Vec::new(),
        }
    }

    /// Prints the summary table.
    pub fn print(&self) {
        println!(
            "seed {}: {} register ops, {} ok writes, {} failed, {} unknown, {} acknowledged creates, \
             {} pool grants, {} token uses, {} service changes ({} rollbacks, {} unknown, {} instances checked \
             on the agents, {} moved between agents, {} fences sampled)",
            self.seed,
            self.register_ops,
            self.writes_ok,
            self.failed,
            self.unknown,
            self.acknowledged_creates,
            self.grants,
            self.token_uses,
            self.service_changes,
            self.service_rollbacks,
            self.service_changes_unknown,
            self.service_instances_checked,
            self.service_instances_moved,
            self.agent_fences_sampled
        );
        print_fault_table(&self.faults);
        if !self.failover_ms.is_empty() {
            println!(
                "failover after a leader kill (ms to the first success of a write sent after it): {:?}",
                self.failover_ms
            );
        }
        match self.converged_ms {
            Some(ms) => println!("converged {ms} ms after healing"),
            None => println!("did not converge"),
        }
        if self.violations.is_empty() {
            println!("violations: none");
        } else {
            for violation in &self.violations {
                println!("VIOLATION: {violation}");
            }
        }
    }
}

/// Prints the per-fault-kind table of one run or of several.
fn print_fault_table(faults: &BTreeMap<String, FaultSummary>) {
    println!("| fault | count | ok writes during | failures during | max unavailable ms |");
    println!("|---|---:|---:|---:|---:|");
    for (kind, summary) in faults {
        println!(
            "| {kind} | {} | {} | {} | {} |",
            summary.count, summary.writes_ok, summary.failures, summary.max_unavailable_ms
        );
    }
}

/// The `q` quantile of sorted `values` (nearest rank), if any.
fn quantile(sorted: &[u64], q: f64) -> Option<u64> {
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len().max(1));
    sorted.get(rank - 1).copied()
}

/// Prints the totals of several runs: every count summed, faults by kind, failovers and
/// convergence as distributions, and the seeds with violations.
pub fn print_totals(reports: &[Report]) {
    let sum = |field: fn(&Report) -> u64| reports.iter().map(field).sum::<u64>();
    println!(
        "totals over {} seeds: {} register ops, {} ok writes, {} failed, {} unknown, {} acknowledged \
         creates, {} pool grants, {} token uses, {} service changes ({} rollbacks, {} unknown), {} instances \
         checked on the agents, {} moved between agents, {} fences sampled",
        reports.len(),
        sum(|r| r.register_ops as u64),
        sum(|r| r.writes_ok as u64),
        sum(|r| r.failed),
        sum(|r| r.unknown),
        sum(|r| r.acknowledged_creates as u64),
        sum(|r| r.grants as u64),
        sum(|r| r.token_uses as u64),
        sum(|r| r.service_changes as u64),
        sum(|r| r.service_rollbacks as u64),
        sum(|r| r.service_changes_unknown as u64),
        sum(|r| r.service_instances_checked as u64),
        sum(|r| r.service_instances_moved as u64),
        sum(|r| r.agent_fences_sampled as u64),
    );
    let mut faults: BTreeMap<String, FaultSummary> = BTreeMap::new();
    for (kind, summary) in reports.iter().flat_map(|r| &r.faults) {
        let total = faults.entry(kind.clone()).or_default();
        total.count += summary.count;
        total.writes_ok += summary.writes_ok;
        total.failures += summary.failures;
        total.max_unavailable_ms = total.max_unavailable_ms.max(summary.max_unavailable_ms);
    }
    print_fault_table(&faults);
    let mut failovers: Vec<u64> = reports
        .iter()
        .flat_map(|r| r.failover_ms.iter().copied())
        .collect();
    failovers.sort_unstable();
    if let (Some(median), Some(worst)) = (quantile(&failovers, 0.5), failovers.last()) {
        println!(
            "failover after {} leader kills: median {median} ms, worst {worst} ms",
            failovers.len()
        );
    }
    let mut converged: Vec<u64> = reports.iter().filter_map(|r| r.converged_ms).collect();
    converged.sort_unstable();
    if let (Some(median), Some(worst)) = (quantile(&converged, 0.5), converged.last()) {
        println!(
            "converged after healing in {} of {} seeds: median {median} ms, worst {worst} ms",
            converged.len(),
            reports.len()
        );
    }
    let violated: Vec<u64> = reports
        .iter()
        .filter(|r| !r.violations.is_empty())
        .map(|r| r.seed)
        .collect();
    println!(
        "violations: {} in {} seeds {violated:?}",
        reports.iter().map(|r| r.violations.len()).sum::<usize>(),
        violated.len()
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gaps_are_measured_across_the_fault_window() {
        let successes = [1_000_000, 2_000_000, 5_000_000, 5_500_000];
        assert_eq!(longest_gap(&successes, 2_500_000, 4_000_000), 3_000);
        assert_eq!(longest_gap(&successes, 5_100_000, 5_200_000), 500);
        assert_eq!(longest_gap(&[], 0, 2_000_000), 2_000);
    }
}
