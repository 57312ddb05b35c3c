//! The faults a run can inject and how a run plans them from its seed: crashes, pauses,
//! partitions, clock skew and membership changes. Each is bounded in time; `nemesis` applies
//! and heals them.

use std::fmt;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::rng::Rng;

/// One kind of fault.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum FaultKind {
    /// SIGKILL the leader, restart it after a while.
    KillLeader,
    /// SIGKILL a random node, restart it after a while.
    KillRandom,
    /// SIGSTOP the leader past the election timeout, then SIGCONT.
    PauseLeader,
    /// SIGSTOP a random node, then SIGCONT.
    PauseRandom,
    /// Cut the leader off from every other node (it keeps serving its clients).
    PartitionLeader,
    /// Cut a random minority (one node of three, one or two of five) off from the majority.
    PartitionRandom,
    /// Split the others into two halves that cannot see each other while one node still
    /// reaches both (of three: two nodes cut apart; of five: two and two with a bridge).
    PartitionBridge,
    /// Restart a random node with its clocks (wall and monotonic) offset and running at
    /// another rate through libfaketime, then restart it with the true clock.
    ClockSkew,
    /// Restart every follower with its clocks running twice as fast through libfaketime — the
    /// leader's clock then runs at half their rate, inside the bound its read lease is built
    /// for (`drover_raft::lease`) — and cut the leader off from them while it serves reads from
    /// its lease; heal, then restart the followers with the true clock.
    LeaseSkew,
    /// Remove a random follower from the membership, then add it back.
    MemberChange,
    /// SIGKILL one agent of the services workload, restart it after a while (its instances
    /// keep running).
    KillAgent,
    /// SIGSTOP one agent, then SIGCONT.
    PauseAgent,
    /// Make the `sim` agent answer `503` to the control plane past `--cluster-offline-after`,
    /// so its cluster goes `OFFLINE` and its services move, then reachable again.
    FlapCluster,
}

impl FaultKind {
    /// Every kind.
    pub const ALL: [FaultKind; 10] = [
        Self::KillLeader,
        Self::KillRandom,
        Self::PauseLeader,
        Self::PauseRandom,
        Self::PartitionLeader,
        Self::PartitionRandom,
        Self::PartitionBridge,
        Self::ClockSkew,
        Self::LeaseSkew,
        Self::MemberChange,
    ];

    /// Parses a kind by its name (`kill-leader`, `partition-bridge`, …).
    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|kind| kind.to_string() == text)
    }

    /// The names of every kind, comma separated.
    pub fn names() -> String {
        Self::ALL.map(|kind| kind.to_string()).join(",")
    }

    /// Whether it needs the harness's own network namespace.
    pub fn partitions(self) -> bool {
        matches!(
            self,
            Self::PartitionLeader | Self::PartitionRandom | Self::PartitionBridge | Self::LeaseSkew
        )
    }
}

impl fmt::Display for FaultKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::KillLeader => "kill-leader",
            Self::KillRandom => "kill-random",
            Self::PauseLeader => "pause-leader",
            Self::PauseRandom => "pause-random",
            Self::PartitionLeader => "partition-leader",
            Self::PartitionRandom => "partition-random",
            Self::PartitionBridge => "partition-bridge",
            Self::ClockSkew => "clock-skew",
            Self::LeaseSkew => "lease-skew",
            Self::MemberChange => "member-change",
            Self::KillAgent => "kill-agent",
            Self::PauseAgent => "pause-agent",
            Self::FlapCluster => "flap-cluster",
        })
    }
}

/// A fault planned from the seed.
#[derive(Debug, Clone, Copy)]
pub struct Planned {
    /// What to do.
    pub kind: FaultKind,
    /// How long the node stays down or paused.
    pub hold: Duration,
    /// How long to wait, healed, before the next fault.
    pub rest: Duration,
}

/// Plans fault number `turn`: the kinds take turns from a seeded starting point, so every
/// enabled kind is exercised even in a short run.
pub fn plan(rng: &mut Rng, kinds: &[FaultKind], start: usize, turn: usize) -> Planned {
    let kind = kinds[(start + turn) % kinds.len()];
    // A partition is held longer: the majority needs an election before the split shows.
    let hold = if kind.partitions() {
        3_000 + rng.below(4_000)
    } else {
        1_500 + rng.below(2_500)
    };
    Planned {
        kind,
        hold: Duration::from_millis(hold),
        rest: Duration::from_millis(1_500 + rng.below(2_000)),
    }
}
