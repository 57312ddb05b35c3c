//! The leader's service placer, first cut: every accepted service that runs nowhere (or on a
//! cluster its environment may no longer use) is placed by the pure [`place`] function on one
//! of its environment's clusters, and the decision is committed through Raft. The cluster
//! actors then send each cluster the desired sets of the services placed on it, fenced like
//! every change, so a service's instances start, scale and change revision there.
//!
//! Per-service actors with bounded rollouts, status from the agents' inventories, garbage
//! collection with finalizers and migration come next; this actor only places.

use std::collections::HashMap;
use std::time::Duration;

use drover_model::cluster::agent_api::Resources;
use drover_model::cluster::ClusterRef;
use drover_model::service::placement::{place, Placement};
use drover_model::{Command, CommandResult, Proposal};
use prometheus::{IntCounter, Registry};
use ractor::{Actor, ActorCell, ActorProcessingErr, ActorRef};

use crate::root::{ChildSpec, LeaderContext, StartFuture};
use crate::ActorsError;

/// Messages of the placer.
#[derive(Debug)]
pub enum PlacerMsg {
    /// Look for services to place.
    Tick,
}

/// Arguments of the placer.
pub struct PlacerArgs {
    context: LeaderContext,
    interval: Duration,
    placements: IntCounter,
}

/// The placer actor.
pub struct Placer;

impl Placer {
    /// The placements to make now, from the committed state alone.
    fn decide(context: &LeaderContext) -> Vec<Placement> {
        context.raft.local_read(|s| {
            let platform = s.platform();
            // Room taken by this pass's own decisions, so that two services placed together
            // do not both count on the same free capacity.
            let mut taken: HashMap<ClusterRef, Resources> = HashMap::new();
            let mut decisions = Vec::new();
            for (tenant, stored) in platform.tenants() {
                for (name, service) in &stored.services {
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
}

impl Actor for Placer {
    type Msg = PlacerMsg;
    type State = PlacerArgs;
    type Arguments = PlacerArgs;

    async fn pre_start(
        &self,
        myself: ActorRef<PlacerMsg>,
        args: PlacerArgs,
    ) -> Result<PlacerArgs, ActorProcessingErr> {
        myself.send_interval(args.interval, || PlacerMsg::Tick);
        myself.send_message(PlacerMsg::Tick)?;
        Ok(args)
    }

    async fn handle(
        &self,
        _myself: ActorRef<PlacerMsg>,
        message: PlacerMsg,
        state: &mut PlacerArgs,
    ) -> Result<(), ActorProcessingErr> {
        let PlacerMsg::Tick = message;
        let decisions = Self::decide(&state.context);
        if decisions.is_empty() {
            return Ok(());
        }
        // One log entry for the whole pass: a burst of new services costs one append.
        let count = decisions.len();
        let proposals = decisions
            .into_iter()
            .map(|placement| Proposal::new(Command::Placement(placement)))
            .collect();
        match state
            .context
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
                state.placements.inc_by(u64::try_from(placed).unwrap_or(0));
                tracing::info!(placed, of = count, "services placed");
            }
            Err(error) => tracing::warn!(%error, count, "placements not committed"),
        }
        Ok(())
    }
}

/// The root's child that runs the placer.
pub struct ServicesChild {
    interval: Duration,
    placements: IntCounter,
}

impl ServicesChild {
    /// A child spec that looks for services to place every `interval`.
    pub fn new(interval: Duration, registry: &Registry) -> Result<Self, ActorsError> {
        let placements = IntCounter::new("drover_service_placements_total", "Services placed on a cluster")?;
        registry.register(Box::new(placements.clone()))?;
        Ok(Self { interval, placements })
    }
}

impl ChildSpec for ServicesChild {
    fn name(&self) -> String {
        "services".into()
    }

    fn start(&self, supervisor: ActorCell, context: LeaderContext) -> StartFuture {
        let args = PlacerArgs {
            context,
            interval: self.interval,
            placements: self.placements.clone(),
        };
        Box::pin(async move {
            let (actor, _) = Actor::spawn_linked(None, Placer, args, supervisor)
                .await
                .map_err(|e| ActorsError::Spawn {
                    name: "services".into(),
                    message: e.to_string(),
                })?;
            Ok(actor.get_cell())
        })
    }
}
