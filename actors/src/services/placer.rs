//! The placement pass, first cut: every accepted service that runs nowhere (or whose cluster is
//! no longer registered) is placed by the pure [`place`] function on one of its environment's
//! clusters; the decisions of one pass are committed in one log entry. A service being deleted
//! is never placed.

use std::collections::HashMap;

use drover_model::cluster::agent_api::Resources;
use drover_model::cluster::ClusterRef;
use drover_model::service::placement::{place, Placement};
use drover_model::{Command, CommandResult, Proposal};
use prometheus::IntCounter;

use crate::root::LeaderContext;

/// The placements to make now, from the committed state alone.
pub(crate) fn decide(context: &LeaderContext) -> Vec<Placement> {
    context.raft.local_read(|s| {
        let platform = s.platform();
        // Room taken by this pass's own decisions, so that two services placed together do not
        // both count on the same free capacity.
        let mut taken: HashMap<ClusterRef, Resources> = HashMap::new();
        let mut decisions = Vec::new();
        for (tenant, stored) in platform.tenants() {
            for (name, service) in &stored.services {
                if service.deleting_ms.is_some() {
                    continue;
                }
                let Some(revision) = service.current.and_then(|n| service.revisions.get(&n)) else {
                    continue;
                };
                let registered = |c: &ClusterRef| platform.cluster(c).is_some();
                if service.placement.as_ref().is_some_and(registered) {
                    // Placed and its cluster is still there: nothing to decide.
                    continue;
                }
                let environment = &service.environment;
                let Ok(mut usable) =
                    platform.environment_clusters(tenant, &environment.account, &environment.environment)
                else {
                    continue;
                };
                for candidate in &mut usable.clusters {
                    let reference = ClusterRef {
                        tenant: candidate.tenant.clone(),
                        name: candidate.name.clone(),
                    };
                    if let (Some(free), Some(used)) = (candidate.free.as_mut(), taken.get(&reference)) {
                        *free = free.minus(*used);
                    }
                }
                let Some(cluster) = place(
                    &usable.clusters,
                    revision.usage,
                    service.placement.as_ref(),
                    registered,
                ) else {
                    continue;
                };
                let usage = Resources {
                    cpu_millis: revision.usage.vcpu_millis,
                    memory_mib: revision.usage.memory_mib,
                };
                let entry = taken.entry(cluster.clone()).or_default();
                *entry = entry.plus(usage);
                decisions.push(Placement {
                    tenant: tenant.clone(),
                    service: name.clone(),
                    uid: service.uid.clone(),
                    cluster,
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
