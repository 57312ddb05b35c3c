//! The placement pass: every accepted service that runs nowhere (or whose cluster is no longer
//! registered) is placed by the pure scheduler (`Platform::schedule_service`: Krake's
//! constraints and scoring) on one of its environment's clusters; a placed service is scored
//! again every `reschedule_after` (Krake's periodic rescheduling) and moves when another cluster
//! wins; the decisions of one pass, each with its explanation, are committed in one log entry.
//! A service being deleted is never placed.

use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};

use drover_model::cluster::agent_api::Resources;
use drover_model::cluster::{ClusterRef, ClusterState};
use drover_model::service::placement::{Placement, Promised};
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

    /// Forgets the services that are gone.
    fn keep(&mut self, live: &HashSet<&str>) {
        self.due.retain(|uid, _| live.contains(uid.as_str()));
    }
}

/// Whether a service on a cluster in `state` should move (if it may).
fn must_move(state: ClusterState) -> bool {
    matches!(
        state,
        ClusterState::Offline | ClusterState::Unhealthy | ClusterState::NotReady
    )
}

/// The placements (and moves) to make now, from the committed state alone. A placed service
/// may move (`migration`) only if its last move started at least `migration_interval` ago, and
/// then moves when the cluster it runs on is `OFFLINE`, `UNHEALTHY` or `NOTREADY`, or when it is
/// due for rescoring, runs on an `ONLINE` cluster and another cluster wins (stickiness counts
/// for the current one); a move whose target fails is given another target at once (nothing
/// runs there yet). A service on a `FAILING_METRICS` cluster stays: its cluster runs, only the
/// score cannot be computed.
pub(crate) fn decide(
    context: &LeaderContext,
    migration_interval: Duration,
    rescheduler: &mut Rescheduler,
) -> Vec<Placement> {
    let now = Instant::now();
    context.raft.local_read(|s| {
        let platform = s.platform();
        let now_ms = s.clock_ms();
        let interval_ms = u64::try_from(migration_interval.as_millis()).unwrap_or(u64::MAX);
        // Room committed on each cluster, and promised by this pass's own decisions, so that
        // two services placed together do not both count on the same free capacity (the apply
        // checks it again: `Platform::check_room`).
        let mut promised: Promised = platform.reserved();
        let mut decisions = Vec::new();
        let mut live = HashSet::new();
        for (tenant, stored) in platform.tenants() {
            for (name, service) in &stored.services {
                live.insert(service.uid.as_str());
                if service.deleting_ms.is_some() {
                    continue;
                }
                let Some(revision) = service.current.and_then(|n| service.revisions.get(&n)) else {
                    continue;
                };
                let state_of = |c: &ClusterRef| platform.cluster(c).map(|c| c.status.state);
                let placed = service.placement.as_ref().filter(|c| state_of(c).is_some());
                let migrate = match placed {
                    None => false,
                    Some(current) => {
                        let failing = |c: &ClusterRef| state_of(c).is_none_or(must_move);
                        let may_move = revision.deployment.constraints.migration;
                        let due = match &service.migrating_to {
                            Some(target) => may_move && failing(target),
                            None => {
                                let rested = service.moved_ms == 0
                                    || now_ms.saturating_sub(service.moved_ms) >= interval_ms;
                                let rescore = state_of(current) == Some(ClusterState::Online)
                                    && rescheduler.is_due(&service.uid, now);
                                may_move && rested && (failing(current) || rescore)
                            }
                        };
                        if !due {
                            // Placed where it may stay (or must): nothing to decide.
                            continue;
                        }
                        true
                    }
                };
                let Some(decision) = platform.schedule_service(tenant, name, &promised) else {
                    continue;
                };
                let Some(chosen) = decision.chosen.as_ref() else {
                    continue;
                };
                if migrate
                    && (service.migrating_to.as_ref() == Some(&chosen.cluster)
                        || (service.migrating_to.is_none() && placed == Some(&chosen.cluster)))
                {
                    // Rescored and still the best place, or already moving there.
                    continue;
                }
                let usage = Resources {
                    cpu_millis: revision.usage.vcpu_millis,
                    memory_mib: revision.usage.memory_mib,
                };
                let entry = promised.entry(chosen.cluster.clone()).or_default();
                *entry = entry.plus(usage);
                decisions.push(Placement {
                    tenant: tenant.clone(),
                    service: name.clone(),
                    uid: service.uid.clone(),
                    // Back to the cluster it still runs on ends the move instead.
                    migrate: migrate && placed != Some(&chosen.cluster),
                    cluster: chosen.cluster.clone(),
                    decision,
                });
            }
        }
        rescheduler.keep(&live);
        decisions
    })
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
