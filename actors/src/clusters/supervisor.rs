//! The clusters supervisor: keeps one [`ClusterActor`] per registered cluster, started and
//! stopped from the replicated state alone (so a new leader rebuilds the same tree), restarts a
//! failed one after a backoff, and exports how many run and the clusters by state.

use std::collections::HashMap;
use std::sync::Arc;

use drover_model::cluster::{ClusterRef, ClusterState};
use ractor::{Actor, ActorProcessingErr, ActorRef, SupervisionEvent};

use super::cluster_actor::{ClusterActor, ClusterArgs, ClusterMsg};
use super::observed::Observations;
use super::{ClusterActorMetrics, ClusterActorsConfig, DriverFactory};
use crate::keyed::{ended_cell, Keyed};
use crate::root::LeaderContext;

/// Messages of the clusters supervisor.
#[derive(Debug)]
pub enum ClustersMsg {
    /// Compare the running actors with the committed clusters.
    Tick,
}

/// Arguments of the clusters supervisor.
pub struct ClustersArgs {
    pub(crate) context: LeaderContext,
    pub(crate) config: Arc<ClusterActorsConfig>,
    pub(crate) metrics: ClusterActorMetrics,
    pub(crate) drivers: DriverFactory,
    pub(crate) observations: Observations,
}

/// State of the clusters supervisor.
pub struct ClustersState {
    args: ClustersArgs,
    clusters: Keyed<ClusterRef, ClusterMsg>,
}

/// The clusters supervisor actor.
pub struct ClustersSupervisor;

impl ClustersSupervisor {
    async fn sync(
        myself: &ActorRef<ClustersMsg>,
        state: &mut ClustersState,
    ) -> Result<(), ActorProcessingErr> {
        let committed: Vec<(ClusterRef, String, ClusterState)> = state.args.context.raft.local_read(|s| {
            s.platform()
                .clusters()
                .map(|(cluster, stored)| (cluster, stored.uid.clone(), stored.status.state))
                .collect()
        });
        let mut by_state: HashMap<ClusterState, i64> = HashMap::new();
        for (_, _, cluster_state) in &committed {
            *by_state.entry(*cluster_state).or_default() += 1;
        }
        for cluster_state in ClusterState::ALL {
            let count = by_state.get(&cluster_state).copied().unwrap_or(0);
            state
                .args
                .metrics
                .clusters
                .with_label_values(&[cluster_state.as_str()])
                .set(count);
        }
        let due = state.clusters.sync(
            committed.into_iter().map(|(cluster, uid, _)| (cluster, uid)),
            "cluster deregistered",
        );
        for due in due {
            let args = ClusterArgs {
                cluster: due.key.clone(),
                uid: due.uid,
                context: state.args.context.clone(),
                config: state.args.config.clone(),
                metrics: state.args.metrics.clone(),
                drivers: state.args.drivers.clone(),
                observations: state.args.observations.clone(),
            };
            let (actor, _) = Actor::spawn_linked(None, ClusterActor, args, myself.get_cell()).await?;
            if due.restart {
                state.args.metrics.restarts.inc();
            }
            state.clusters.started(&due.key, actor);
        }
        let live = state.clusters.live();
        state
            .args
            .metrics
            .actors
            .set(i64::try_from(live).unwrap_or(i64::MAX));
        Ok(())
    }
}

impl Actor for ClustersSupervisor {
    type Msg = ClustersMsg;
    type State = ClustersState;
    type Arguments = ClustersArgs;

    async fn pre_start(
        &self,
        myself: ActorRef<ClustersMsg>,
        args: ClustersArgs,
    ) -> Result<ClustersState, ActorProcessingErr> {
        myself.send_interval(args.config.sync_interval, || ClustersMsg::Tick);
        myself.send_message(ClustersMsg::Tick)?;
        let retry = args.config.sync_interval;
        Ok(ClustersState {
            args,
            clusters: Keyed::new(retry),
        })
    }

    async fn post_stop(
        &self,
        _myself: ActorRef<ClustersMsg>,
        state: &mut ClustersState,
    ) -> Result<(), ActorProcessingErr> {
        state.clusters.stop_all("clusters supervisor stopping");
        state.args.metrics.actors.set(0);
        // The counts by state are the leader's view: a node that stops leading has none.
        state.args.metrics.clusters.reset();
        Ok(())
    }

    async fn handle(
        &self,
        myself: ActorRef<ClustersMsg>,
        message: ClustersMsg,
        state: &mut ClustersState,
    ) -> Result<(), ActorProcessingErr> {
        match message {
            ClustersMsg::Tick => Self::sync(&myself, state).await,
        }
    }

    async fn handle_supervisor_evt(
        &self,
        _myself: ActorRef<ClustersMsg>,
        event: SupervisionEvent,
        state: &mut ClustersState,
    ) -> Result<(), ActorProcessingErr> {
        let Some((cell, reason)) = ended_cell(event) else {
            return Ok(());
        };
        if let Some((cluster, Some(delay))) = state.clusters.ended(cell.get_id(), reason.is_some()) {
            tracing::warn!(%cluster, reason = reason.unwrap_or_default(), ?delay, "cluster actor failed; restarting");
        }
        Ok(())
    }
}
