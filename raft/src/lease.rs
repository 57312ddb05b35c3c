//! Lease reads: a leader answers a read index without a quorum round while a round it started
//! not long ago still vouches for its leadership.
//!
//! Why it is safe: a quorum round's heartbeats leave the leader after the round starts, and a
//! follower that answers one refuses every vote and pre-vote for the leader lease
//! (`election_timeout_max`) after it heard it, by its own clock (openraft's vote lease and
//! `elector`'s pre-vote). A candidate needs a majority, which includes one of the members that
//! answered, so no other leader can be elected, and nothing can commit elsewhere, until the
//! lease has run out on that member. The leader trusts a round for [`read_lease`] (two fifths
//! of the leader lease) from the moment it *started* it, by its own clock: safe as long as no
//! member's clock runs more than 2.5 times as fast as the leader's. Only the rate matters (every
//! interval here is read from a monotonic clock), never an offset between clocks.
//!
//! The index answered is the larger of the round's and the committed index now: every write a
//! client could have been told about is committed, and the round's index covers the entries of
//! earlier terms the leader had not yet committed in its own.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use tokio::time::Instant;

use crate::RaftConfig;

/// How long a confirmed quorum round lets the leader answer read indexes without another:
/// two fifths of the leader lease its followers keep (`election_timeout_max`).
pub(crate) fn read_lease(config: &RaftConfig) -> Duration {
    #[cfg(feature = "planted-long-lease")]
    {
        // THE PLANTED BUG (feature `planted-long-lease`, for the chaos harness only): a lease
        // ten times as long as the followers' own, so a leader cut off from them answers reads
        // for seconds after they have elected another and committed.
        config.election_timeout_max * 10
    }
    #[cfg(not(feature = "planted-long-lease"))]
    {
        config.election_timeout_max * 2 / 5
    }
}

/// What one confirmed round vouches for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Held {
    /// The term the node led when the round started.
    pub term: u64,
    /// When the lease runs out: the round's start plus [`read_lease`].
    pub until: Instant,
    /// The read index the round confirmed.
    pub index: u64,
}

/// The read index a leader may answer from `held` at `now` while leading `term` with `committed`
/// entries committed; `None` when a quorum round is needed.
pub(crate) fn leased_index(held: Option<Held>, term: u64, now: Instant, committed: u64) -> Option<u64> {
    let held = held?;
    (held.term == term && now < held.until).then(|| held.index.max(committed))
}

/// Whether a lease that leaves `remaining` of `lease` should be renewed now, in the background,
/// so that reads under a steady load never wait for a round.
pub(crate) fn renew_due(remaining: Duration, lease: Duration) -> bool {
    remaining < lease / 2
}

/// The leader's read lease.
#[derive(Debug)]
pub(crate) struct ReadLease {
    duration: Duration,
    held: Mutex<Option<Held>>,
    /// A background round is on its way.
    renewing: AtomicBool,
}

impl ReadLease {
    pub(crate) fn new(duration: Duration) -> Self {
        Self {
            duration,
            held: Mutex::new(None),
            renewing: AtomicBool::new(false),
        }
    }

    fn held(&self) -> Option<Held> {
        *self.held.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The index to answer without a round, and whether to start a renewal.
    pub(crate) fn index(&self, term: u64, committed: u64) -> Option<(u64, bool)> {
        let now = Instant::now();
        let held = self.held();
        let index = leased_index(held, term, now, committed)?;
        let remaining = held.map_or(Duration::ZERO, |held| held.until.saturating_duration_since(now));
        let renew = renew_due(remaining, self.duration) && !self.renewing.swap(true, Ordering::AcqRel);
        Some((index, renew))
    }

    /// Records a round that started at `started` while this node led `term` and confirmed
    /// `index`. Within a term a lease only grows: each round vouches for its own span, so an
    /// older round finishing late shortens nothing.
    pub(crate) fn confirmed(&self, term: u64, started: Instant, index: u64) {
        let until = started + self.duration;
        let mut held = self.held.lock().unwrap_or_else(|p| p.into_inner());
        *held = Some(match *held {
            Some(h) if h.term == term => Held {
                term,
                until: h.until.max(until),
                index: h.index.max(index),
            },
            _ => Held { term, until, index },
        });
    }

    /// A renewal round ended (confirmed or not).
    pub(crate) fn renewal_done(&self) {
        self.renewing.store(false, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lease_answers_only_in_its_term_and_before_it_runs_out() {
        let now = Instant::now();
        let held = Held {
            term: 4,
            until: now + Duration::from_millis(100),
            index: 30,
        };
        let cases = [
            // (held, term, now, committed, expected)
            (None, 4, now, 10, None),
            (Some(held), 4, now, 10, Some(30)),
            (Some(held), 4, now, 45, Some(45)),
            (Some(held), 5, now, 45, None),
            (Some(held), 4, now + Duration::from_millis(99), 0, Some(30)),
            (Some(held), 4, now + Duration::from_millis(100), 0, None),
            (Some(held), 4, now + Duration::from_secs(5), 0, None),
        ];
        for (held, term, at, committed, expected) in cases {
            assert_eq!(
                leased_index(held, term, at, committed),
                expected,
                "{held:?} {term} {committed}"
            );
        }
    }

    #[test]
    fn renewal_starts_in_the_second_half() {
        let lease = Duration::from_millis(120);
        assert!(!renew_due(Duration::from_millis(120), lease));
        assert!(!renew_due(Duration::from_millis(60), lease));
        assert!(renew_due(Duration::from_millis(59), lease));
        assert!(renew_due(Duration::ZERO, lease));
    }

    #[test]
    fn the_default_lease_is_two_fifths_of_the_leader_lease() {
        let config = RaftConfig::default();
        assert_eq!(read_lease(&config), Duration::from_millis(120));
        assert!(read_lease(&config) * 5 <= config.election_timeout_max * 2);
    }

    #[tokio::test]
    async fn a_late_round_does_not_shorten_the_lease() {
        let lease = ReadLease::new(Duration::from_millis(100));
        let start = Instant::now();
        lease.confirmed(3, start + Duration::from_millis(50), 20);
        lease.confirmed(3, start, 18);
        let held = lease.held().expect("held");
        assert_eq!(held.until, start + Duration::from_millis(150));
        assert_eq!(held.index, 20);
        // A new term replaces it whatever its times.
        lease.confirmed(4, start, 25);
        assert_eq!(lease.held().map(|h| h.term), Some(4));
    }

    #[tokio::test]
    async fn only_one_renewal_at_a_time() {
        let lease = ReadLease::new(Duration::from_millis(100));
        // Confirmed long enough ago that the lease is in its second half.
        let started = Instant::now() - Duration::from_millis(60);
        lease.confirmed(2, started, 7);
        assert_eq!(lease.index(2, 5), Some((7, true)));
        assert_eq!(lease.index(2, 9), Some((9, false)));
        lease.renewal_done();
        assert_eq!(lease.index(2, 9), Some((9, true)));
        assert_eq!(lease.index(3, 9), None);
    }
}
