//! Timing and retention settings of the replicated store.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::error::StoreError;

/// Settings of one node's Raft instance. Every member of a cluster should use the same values.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RaftConfig {
    /// How often the leader sends heartbeats.
    pub heartbeat_interval: Duration,
    /// Lower bound of the randomised election timeout.
    pub election_timeout_min: Duration,
    /// Upper bound of the randomised election timeout.
    pub election_timeout_max: Duration,
    /// Deadline of one peer RPC (append, vote); snapshots get ten times as long.
    pub rpc_timeout: Duration,
    /// How long a client request may wait for a leader and a commit before it gets `503`.
    pub request_timeout: Duration,
    /// A snapshot is built after this many log entries since the last one.
    pub snapshot_every_logs: u64,
    /// How many log entries to keep behind a snapshot for slow followers.
    pub logs_kept_after_snapshot: u64,
    /// How many recent changes each node keeps for watches that resume from an older revision.
    pub watch_history: usize,
}

impl Default for RaftConfig {
    fn default() -> Self {
        Self {
            // A follower campaigns only after the leader's lease (the maximum election
            // timeout, during which openraft's voters refuse any vote) plus a random part of
            // an election timeout, and only after a pre-vote round (`elector`): 300 + 20 +
            // 0..150 ms here, so a dead leader is replaced in about 400 ms. The lease is six
            // heartbeats: a follower that misses five in a row is not enough to campaign, the
            // pre-vote also needs the other follower to have missed them.
            heartbeat_interval: Duration::from_millis(50),
            election_timeout_min: Duration::from_millis(150),
            election_timeout_max: Duration::from_millis(300),
            rpc_timeout: Duration::from_millis(1000),
            request_timeout: Duration::from_secs(5),
            snapshot_every_logs: 10_000,
            logs_kept_after_snapshot: 1_000,
            watch_history: 50_000,
        }
    }
}

/// Log entries per AppendEntries RPC (each may hold up to a batch of writes).
pub const MAX_ENTRIES_PER_APPEND: u64 = 16;

impl RaftConfig {
    /// Checks the settings against each other.
    pub fn validate(&self) -> Result<(), StoreError> {
        let bad = |message: String| Err(StoreError::Config(message));
        if self.heartbeat_interval.is_zero() {
            return bad("heartbeat interval must be greater than zero".into());
        }
        if self.election_timeout_min <= self.heartbeat_interval {
            return bad(format!(
                "election timeout min ({:?}) must be greater than the heartbeat interval ({:?})",
                self.election_timeout_min, self.heartbeat_interval
            ));
        }
        if self.election_timeout_max <= self.election_timeout_min {
            return bad(format!(
                "election timeout max ({:?}) must be greater than min ({:?})",
                self.election_timeout_max, self.election_timeout_min
            ));
        }
        if self.rpc_timeout.is_zero() || self.request_timeout.is_zero() {
            return bad("rpc and request timeouts must be greater than zero".into());
        }
        if self.snapshot_every_logs == 0 {
            return bad("snapshot interval must be at least one log entry".into());
        }
        Ok(())
    }

    pub(crate) fn to_openraft(&self) -> Result<openraft::Config, StoreError> {
        let millis = |d: Duration| u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
        let config = openraft::Config {
            cluster_name: "drover".to_string(),
            heartbeat_interval: millis(self.heartbeat_interval),
            election_timeout_min: millis(self.election_timeout_min),
            election_timeout_max: millis(self.election_timeout_max),
            install_snapshot_timeout: millis(self.rpc_timeout) * 10,
            snapshot_policy: openraft::SnapshotPolicy::LogsSinceLast(self.snapshot_every_logs),
            max_in_snapshot_log_to_keep: self.logs_kept_after_snapshot,
            // openraft 0.9 gives an AppendEntries RPC one heartbeat interval to finish, and an
            // entry may be a batch of writes: a follower catching up must get small RPCs, or
            // every one times out and is sent again, forever.
            max_payload_entries: MAX_ENTRIES_PER_APPEND,
            // Elections are started by `elector` after a pre-vote round, not on openraft's timer.
            enable_elect: false,
            ..Default::default()
        };
        config.validate().map_err(|e| StoreError::Config(e.to_string()))
    }
}
