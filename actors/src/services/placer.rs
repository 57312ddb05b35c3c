//! The placement pass: every accepted service that runs nowhere (or whose cluster is no longer
//! registered) is placed by the pure scheduler (`Platform::schedule_service`: Krake's
//! constraints and scoring) on one of its environment's clusters; the decisions of one pass, each
//! with its explanation, are committed in one log entry. A service being deleted is never
//! placed.

use drover_model::cluster::agent_api::Resources;
use drover_model::service::placement::{Placement, Promised};
use drover_model::{Command, CommandResult, Proposal};
use prometheus::IntCounter;

use crate::root::LeaderContext;

/// The placements to make now, from the committed state alone.
pub(crate) fn decide(context: &LeaderContext) -> Vec<Placement> {
    context.raft.local_read(|s| {
        let platform = s.platform();
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
                if service
                    .placement
                    .as_ref()
                    .is_some_and(|c| platform.cluster(c).is_some())
                {
                    // Placed and its cluster is still there: it stays (no migration yet).
                    continue;
                }
                let Some(decision) = platform.schedule_service(tenant, name, &promised) else {
                    continue;
                };
                let Some(chosen) = decision.chosen.as_ref() else {
                    continue;
                };
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
                    cluster: chosen.cluster.clone(),
                    decision,
                });
            }
        }
        decisions
    })
}

/// Decides and commits one pass; counts the placements the apply took.
pub(crate) async fn place_pass(context: &LeaderContext, placements: &IntCounter) {
    let decisions = decide(context);
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
