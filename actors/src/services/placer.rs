//! The placement pass: the pure `Platform::placement_pass` (Krake's constraints and scoring,
//! migration off failed clusters, periodic rescheduling) decides from the committed state which
//! services to place or move; the decisions of one pass, each with its explanation, are
//! committed in one log entry. The pass judges time (the migration interval) by the leader's
//! clock, and when each placed service is scored again (every `reschedule_after`, jittered) is
//! this leader's memory.

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use tokio::time::Instant;

use drover_model::service::placement::Placement;
use drover_model::{Command, CommandResult, Proposal};
use prometheus::IntCounter;

use super::backoff::phase;
use crate::root::LeaderContext;

/// When each placed service is scored again (leader memory: the decision itself is a pure
/// function of the committed state). A new leader spreads the first round over one period by
/// the services' uids, so that thousands of services never re-score in one burst; a zero period
/// turns periodic rescheduling off.
pub(crate) struct Rescheduler {
    period: Duration,
    due: HashMap<String, Instant>,
    rescores: IntCounter,
}

impl Rescheduler {
    /// Scores every placed service once per `period`.
    pub(crate) fn new(period: Duration, rescores: IntCounter) -> Self {
        Self {
            period,
            due: HashMap::new(),
            rescores,
        }
    }

    /// Whether the service `uid` is to be scored again now (then its next time is set).
    fn is_due(&mut self, uid: &str, now: Instant) -> bool {
        if self.period.is_zero() {
            return false;
        }
        let period = self.period;
        let due = self
            .due
            .entry(uid.to_string())
            .or_insert_with(|| now + phase(uid, period));
        if now < *due {
            return false;
        }
        *due = now + period;
        self.rescores.inc();
        true
    }

    /// Forgets the services that were not candidates for rescoring in a pass (gone, moving,
    /// pinned, or on a cluster that is not `ONLINE`): when they are again, their first time is
    /// drawn afresh within one period.
    fn keep(&mut self, seen: &HashSet<String>) {
        self.due.retain(|uid, _| seen.contains(uid));
    }
}

/// The placements (and moves) to make now: the pure pass
/// ([`Platform::placement_pass`](drover_model::platform::Platform::placement_pass)) over the
/// committed state, with this leader's rescoring times.
pub(crate) fn decide(
    context: &LeaderContext,
    migration_interval: Duration,
    rescheduler: &mut Rescheduler,
) -> Vec<Placement> {
    let now = Instant::now();
    // The leader's time, not the committed clock: that one moves only when something is
    // written, so in a quiet cluster a migration interval would never elapse. The decisions
    // carry this time into the log (`Placement::decided_ms`), and replicas apply them as
    // committed without deciding again, so a replay gives the same state.
    let now_ms = context.raft.leader_clock_ms();
    let interval_ms = u64::try_from(migration_interval.as_millis()).unwrap_or(u64::MAX);
    let mut seen = HashSet::new();
    let decisions = context.raft.local_read(|s| {
        s.platform()
            .placement_pass(now_ms.max(s.clock_ms()), interval_ms, |uid| {
                seen.insert(uid.to_string());
                rescheduler.is_due(uid, now)
            })
    });
    rescheduler.keep(&seen);
    decisions
}

/// Decides and commits one pass; counts the placements the apply took.
pub(crate) async fn place_pass(
    context: &LeaderContext,
    placements: &IntCounter,
    migration_interval: Duration,
    rescheduler: &mut Rescheduler,
) {
    let decisions = decide(context, migration_interval, rescheduler);
    if decisions.is_empty() {
        return;
    }
    let count = decisions.len();
    let proposals = decisions
        .into_iter()
        .map(|placement| Proposal::new(Command::Placement(placement)))
        .collect();
    match context
        .raft
        .write(Proposal::new(Command::Batch { proposals }))
        .await
    {
        Ok(written) => {
            let placed = match &written.result {
                CommandResult::Batch { results } => results
                    .iter()
                    .filter(|r| !matches!(r, CommandResult::Refused(_)))
                    .count(),
                _ => 0,
            };
            placements.inc_by(u64::try_from(placed).unwrap_or(0));
            tracing::info!(placed, of = count, "services placed");
        }
        Err(error) => tracing::warn!(%error, count, "placements not committed"),
    }
}
