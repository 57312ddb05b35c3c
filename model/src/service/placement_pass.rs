//! The placement pass as a pure function of the committed state: which services to place, and
//! which to move, now. The leader's services supervisor runs it every sync and commits its
//! decisions in one log entry; only *when* a placed service is scored again is leader memory
//! (the `rescore_due` callback: Krake's `reschedule_after`, jittered).
//!
//! - An accepted service that runs nowhere (or whose cluster is no longer registered) is placed.
//! - A placed service may move only if its revision allows it (`migration`) and its last move
//!   started at least a migration interval ago. It then moves when its cluster is `OFFLINE`,
//!   `UNHEALTHY` or `NOTREADY`, or when it is due for rescoring, runs on an `ONLINE` cluster and
//!   another cluster wins (stickiness counts for the current one).
//! - A move whose target fails is given another target at once (nothing runs there yet), or
//!   ends where the service still runs.
//! - A service on a `FAILING_METRICS` cluster stays: the cluster runs, only the score cannot be
//!   computed. A service being deleted is never placed.

use super::placement::{requests, Placement, Promised};
use crate::cluster::{ClusterRef, ClusterState};
use crate::platform::Platform;

/// Whether a service on a cluster in `state` must move (if it may).
fn must_move(state: ClusterState) -> bool {
    matches!(
        state,
        ClusterState::Offline | ClusterState::Unhealthy | ClusterState::NotReady
    )
}

impl Platform {
    /// The placements (and moves) to make now. `now_ms` is the leader's time (never behind the
    /// committed clock; the decisions carry it into the log);
    /// `rescore_due(uid)` says whether a placed service on an `ONLINE` cluster is to be scored
    /// again in this pass. Room committed on each cluster and promised by this pass's own
    /// decisions is taken off before each decision, so that two services placed together do
    /// not count on the same room (the apply checks it again).
    pub fn placement_pass(
        &self,
        now_ms: u64,
        migration_interval_ms: u64,
        mut rescore_due: impl FnMut(&str) -> bool,
    ) -> Vec<Placement> {
        let mut promised: Promised = self.reserved();
        let mut decisions = Vec::new();
        let state_of = |c: &ClusterRef| self.cluster(c).map(|c| c.status.state);
        for (tenant, stored) in self.tenants() {
            for (name, service) in &stored.services {
                if service.deleting_ms.is_some() {
                    continue;
                }
                let Some(revision) = service.current.and_then(|n| service.revisions.get(&n)) else {
                    continue;
                };
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
                                    || now_ms.saturating_sub(service.moved_ms) >= migration_interval_ms;
                                let movable = may_move && rested;
                                movable
                                    && (failing(current)
                                        || (state_of(current) == Some(ClusterState::Online)
                                            && rescore_due(&service.uid)))
                            }
                        };
                        if !due {
                            // Placed where it may stay (or must): nothing to decide.
                            continue;
                        }
                        true
                    }
                };
                let Some(decision) = self.schedule_service(tenant, name, &promised) else {
                    continue;
                };
                let Some(chosen) = decision.chosen.as_ref() else {
                    continue;
                };
                let stays = match &service.migrating_to {
                    Some(target) => target == &chosen.cluster,
                    None => placed == Some(&chosen.cluster),
                };
                if migrate && stays {
                    // Rescored and still the best place, or already moving there.
                    continue;
                }
                let entry = promised.entry(chosen.cluster.clone()).or_default();
                *entry = entry.plus(requests(revision));
                decisions.push(Placement {
                    tenant: tenant.clone(),
                    service: name.clone(),
                    uid: service.uid.clone(),
                    // Back to the cluster it still runs on ends the move instead.
                    migrate: migrate && placed != Some(&chosen.cluster),
                    cluster: chosen.cluster.clone(),
                    decision,
                    decided_ms: now_ms,
                });
            }
        }
        decisions
    }
}
