//! The faults a run injects into its cluster: SIGKILL and restart, SIGSTOP and SIGCONT, of the
//! leader or of a random node. Each is bounded in time and healed by the runner.

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
}

impl FaultKind {
    /// Every kind.
    pub const ALL: [FaultKind; 4] = [
        Self::KillLeader,
        Self::KillRandom,
        Self::PauseLeader,
        Self::PauseRandom,
    ];

    /// Parses `kill-leader`, `kill-random`, `pause-leader`, `pause-random`.
    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|kind| kind.to_string() == text)
    }

    /// Whether it targets the leader.
    pub fn targets_leader(self) -> bool {
        matches!(self, Self::KillLeader | Self::PauseLeader)
    }

    /// Whether it kills (rather than pauses).
    pub fn kills(self) -> bool {
        matches!(self, Self::KillLeader | Self::KillRandom)
    }
}

impl fmt::Display for FaultKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::KillLeader => "kill-leader",
            Self::KillRandom => "kill-random",
            Self::PauseLeader => "pause-leader",
            Self::PauseRandom => "pause-random",
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
    Planned {
        kind,
        hold: Duration::from_millis(1_500 + rng.below(2_500)),
        rest: Duration::from_millis(1_500 + rng.below(2_000)),
    }
}
