//! The placement pass: every accepted service that runs nowhere (or whose cluster is no longer
//! registered) is placed by the pure scheduler (`Platform::schedule_service`: Krake's
//! constraints and scoring) on one of its environment's clusters; the decisions of one pass, each
//! with its explanation, are committed in one log entry. A service being deleted is never
//! placed.

use std::time::Duration;

use drover_model::cluster::agent_api::Resources;
use drover_model::cluster::{ClusterRef, ClusterState};
use drover_model::service::placement::{Placement, Promised};
use drover_model::{Command, CommandResult, Proposal};
use prometheus::IntCounter;

use crate::root::LeaderContext;

/// Whether a service on a cluster in `state` should move (if it may).
fn must_move(state: ClusterState) -> bool {
    matches!(
        state,
        ClusterState::Offline | ClusterState::Unhealthy | ClusterState::NotReady
    )
}

/// The placements (and moves) to make now, from the committed state alone. A placed service
/// moves only when the cluster it runs on is `OFFLINE`, `UNHEALTHY` or `NOTREADY`, it may move
/// (`migration`), and its last move started at least `migration_interval` ago; a move whose
/// target fails is given another target at once (nothing runs there yet).
pub(crate) fn decide(context: &LeaderContext, migration_interval: Duration) -> Vec<Placement> {
    context.raft.local_read(|s| {
        let platform = s.platform();
        let now_ms = s.clock_ms();
        let interval_ms = u64::try_from(migration_interval.as_millis()).unwrap_or(u64::MAX);
        // Room promised by this pass's own decisions, so that two services placed together do
        // not both count on the same free capacity.
        let mut promised = Promised::new();
        let mut decisions = Vec::new();
        for (tenant, stored) in platform.tenants() {
            for (name, service) in &stored.services {
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
                                may_move && failing(current) && rested
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
                if migrate && service.migrating_to.as_ref() == Some(&chosen.cluster) {
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
        decisions
    })
}

/// Decides and commits one pass; counts the placements the apply took.
pub(crate) async fn place_pass(
    context: &LeaderContext,
    placements: &IntCounter,
    migration_interval: Duration,
) {
    let decisions = decide(context, migration_interval);
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
