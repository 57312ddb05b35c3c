//! Prometheus metrics of the replicated store, refreshed from openraft's metrics feed.

use std::sync::atomic::Ordering;

use prometheus::{
    Histogram, HistogramOpts, IntCounter, IntCounterVec, IntGauge, IntGaugeVec, Opts, Registry,
};

use crate::error::StoreError;
use crate::store::SharedState;
use crate::typ::RaftMetrics;

/// The gauges and counters this crate exports.
pub(crate) struct RaftMetricsExporter {
    term: IntGauge,
    leader_id: IntGauge,
    is_leader: IntGauge,
    commit_index: IntGauge,
    applied_index: IntGauge,
    last_log_index: IntGauge,
    snapshot_index: IntGauge,
    replication_lag: IntGaugeVec,
    elections: IntCounter,
    leader_changes: IntCounter,
    snapshots_built: IntGauge,
    snapshots_installed: IntGauge,
    last_term: std::sync::atomic::AtomicU64,
    last_leader: std::sync::Mutex<Option<u64>>,
}

fn gauge(registry: &Registry, name: &str, help: &str) -> Result<IntGauge, StoreError> {
    let gauge = IntGauge::new(name, help).map_err(metric_error)?;
    registry.register(Box::new(gauge.clone())).map_err(metric_error)?;
    Ok(gauge)
}

fn counter(registry: &Registry, name: &str, help: &str) -> Result<IntCounter, StoreError> {
    let counter = IntCounter::new(name, help).map_err(metric_error)?;
    registry
        .register(Box::new(counter.clone()))
        .map_err(metric_error)?;
    Ok(counter)
}

/// Pre-vote rounds this node ran before campaigning, by `outcome` (`won`: a majority would vote
/// for it and it campaigned; `lost`: it did not campaign).
pub(crate) fn pre_vote_counter(registry: &Registry) -> Result<IntCounterVec, StoreError> {
    let counter = IntCounterVec::new(
        Opts::new(
            "drover_raft_pre_votes_total",
            "Pre-vote rounds this node ran before campaigning, by outcome (won, lost)",
        ),
        &["outcome"],
    )
    .map_err(metric_error)?;
    registry
        .register(Box::new(counter.clone()))
        .map_err(metric_error)?;
    Ok(counter)
}

/// Read indexes this node answered as leader, by how: `lease` (within the read lease, without a
/// quorum round) or `round` (after one).
pub(crate) fn read_index_counter(registry: &Registry) -> Result<IntCounterVec, StoreError> {
    let counter = IntCounterVec::new(
        Opts::new(
            "drover_raft_read_indexes_total",
            "Read indexes this node answered as leader, by how (lease: within its read lease; round: after a quorum round)",
        ),
        &["how"],
    )
    .map_err(metric_error)?;
    registry
        .register(Box::new(counter.clone()))
        .map_err(metric_error)?;
    Ok(counter)
}

fn histogram(
    registry: &Registry,
    name: &str,
    help: &str,
    buckets: Vec<f64>,
) -> Result<Histogram, StoreError> {
    let histogram =
        Histogram::with_opts(HistogramOpts::new(name, help).buckets(buckets)).map_err(metric_error)?;
    registry
        .register(Box::new(histogram.clone()))
        .map_err(metric_error)?;
    Ok(histogram)
}

/// How long each durable append to the Raft log took, write and sync together: this node's
/// share of every commit (etcd's `etcd_disk_wal_fsync_duration_seconds`).
pub(crate) fn log_append_histogram(registry: &Registry) -> Result<Histogram, StoreError> {
    histogram(
        registry,
        "drover_raft_log_append_duration_seconds",
        "Time to write and sync one append to the Raft log",
        prometheus::exponential_buckets(0.0001, 2.0, 16).map_err(metric_error)?,
    )
}

/// How many writes the leader's group commit put in each log entry.
pub(crate) fn group_commit_histogram(registry: &Registry) -> Result<Histogram, StoreError> {
    histogram(
        registry,
        "drover_raft_group_commit_writes",
        "Writes the leader committed together in one log entry",
        prometheus::exponential_buckets(1.0, 2.0, 8).map_err(metric_error)?,
    )
}

/// A histogram registered nowhere, for tests that build a store without a node.
#[cfg(test)]
pub(crate) fn unregistered_histogram() -> Result<Histogram, prometheus::Error> {
    Histogram::with_opts(HistogramOpts::new("test_histogram", "registered nowhere"))
}

fn metric_error(e: prometheus::Error) -> StoreError {
    StoreError::Config(format!("metrics registry: {e}"))
}

impl RaftMetricsExporter {
    pub(crate) fn register(registry: &Registry) -> Result<Self, StoreError> {
        let replication_lag = IntGaugeVec::new(
            Opts::new(
                "drover_raft_replication_lag_entries",
                "Log entries a follower is behind the leader (on the leader)",
            ),
            &["follower"],
        )
        .map_err(metric_error)?;
        registry
            .register(Box::new(replication_lag.clone()))
            .map_err(metric_error)?;
        Ok(Self {
            term: gauge(registry, "drover_raft_term", "Current Raft term")?,
            leader_id: gauge(
                registry,
                "drover_raft_leader_id",
                "Id of the known leader, 0 when none",
            )?,
            is_leader: gauge(
                registry,
                "drover_raft_is_leader",
                "1 when this node is the leader",
            )?,
            commit_index: gauge(
                registry,
                "drover_raft_commit_index",
                "Highest log index known committed",
            )?,
            applied_index: gauge(
                registry,
                "drover_raft_applied_index",
                "Highest log index applied to the state machine",
            )?,
            last_log_index: gauge(
                registry,
                "drover_raft_last_log_index",
                "Index of the last log entry",
            )?,
            snapshot_index: gauge(
                registry,
                "drover_raft_snapshot_index",
                "Last log index in the current snapshot",
            )?,
            replication_lag,
            elections: counter(
                registry,
                "drover_raft_elections_total",
                "Term changes this node has seen",
            )?,
            leader_changes: counter(
                registry,
                "drover_raft_leader_changes_total",
                "Leader changes this node has seen",
            )?,
            snapshots_built: gauge(
                registry,
                "drover_raft_snapshots_built",
                "Snapshots this node has built since start",
            )?,
            snapshots_installed: gauge(
                registry,
                "drover_raft_snapshots_installed",
                "Snapshots this node has installed from a leader since start",
            )?,
            last_term: std::sync::atomic::AtomicU64::new(0),
            last_leader: std::sync::Mutex::new(None),
        })
    }

    pub(crate) fn update(&self, metrics: &RaftMetrics, committed: u64, shared: &SharedState) {
        let as_i64 = |v: u64| i64::try_from(v).unwrap_or(i64::MAX);
        let applied = metrics.last_applied.as_ref().map_or(0, |id| id.index);
        self.term.set(as_i64(metrics.current_term));
        self.leader_id.set(as_i64(metrics.current_leader.unwrap_or(0)));
        self.is_leader
            .set(i64::from(metrics.current_leader == Some(metrics.id)));
        self.commit_index.set(as_i64(committed.max(applied)));
        self.applied_index.set(as_i64(applied));
        let last_log = metrics.last_log_index.unwrap_or(0);
        self.last_log_index.set(as_i64(last_log));
        self.snapshot_index
            .set(as_i64(metrics.snapshot.as_ref().map_or(0, |id| id.index)));
        self.replication_lag.reset();
        if let Some(replication) = &metrics.replication {
            for (follower, matched) in replication {
                let matched = matched.as_ref().map_or(0, |id| id.index);
                self.replication_lag
                    .with_label_values(&[&follower.to_string()])
                    .set(as_i64(last_log.saturating_sub(matched)));
            }
        }
        let previous_term = self.last_term.swap(metrics.current_term, Ordering::Relaxed);
        if metrics.current_term > previous_term && previous_term != 0 {
            self.elections.inc_by(metrics.current_term - previous_term);
        }
        let mut last_leader = self.last_leader.lock().unwrap_or_else(|p| p.into_inner());
        if metrics.current_leader.is_some() && *last_leader != metrics.current_leader {
            self.leader_changes.inc();
            *last_leader = metrics.current_leader;
        }
        self.snapshots_built
            .set(as_i64(shared.snapshots_built.load(Ordering::Relaxed)));
        self.snapshots_installed
            .set(as_i64(shared.snapshots_installed.load(Ordering::Relaxed)));
    }
}
