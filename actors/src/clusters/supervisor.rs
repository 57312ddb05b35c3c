//! The clusters supervisor: keeps one [`ClusterActor`] per registered cluster, started and
//! stopped from the replicated state alone (so a new leader rebuilds the same tree), restarts a
//! failed one after a backoff, and exports how many run and the clusters by state.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use drover_model::cluster::{ClusterRef, ClusterState};
use ractor::{Actor, ActorProcessingErr, ActorRef, SupervisionEvent};

use super::cluster_actor::{ClusterActor, ClusterArgs, ClusterMsg};
use super::{ClusterActorMetrics, ClusterActorsConfig, DriverFactory};
use crate::root::LeaderContext;
use crate::supervision::{Decision, RestartPolicy, RestartPolicyConfig};

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
}

struct Running {
    uid: String,
    actor: Option<ActorRef<ClusterMsg>>,
    policy: RestartPolicy,
    /// A failed actor is started again only after this.
    not_before: Option<Instant>,
}

/// State of the clusters supervisor.
pub struct ClustersState {
    args: ClustersArgs,
    clusters: HashMap<ClusterRef, Running>,
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
        // Stop the actors of clusters that are gone or registered again (another uid).
        state.clusters.retain(|cluster, running| {
            let keep = committed
                .iter()
                .any(|(c, uid, _)| c == cluster && *uid == running.uid);
            if !keep {
                if let Some(actor) = running.actor.take() {
                    actor.stop(Some("cluster deregistered".into()));
                }
            }
            keep
        });
        let now = Instant::now();
        for (cluster, uid, _) in committed {
            let running = state.clusters.entry(cluster.clone()).or_insert_with(|| Running {
                uid: uid.clone(),
                actor: None,
                policy: RestartPolicy::new(RestartPolicyConfig {
                    // A cluster actor that keeps failing is retried slowly, never given up on:
                    // one bad cluster must not take the whole tree down.
                    max_restarts: usize::MAX,
                    ..RestartPolicyConfig::default()
                }),
                not_before: None,
            });
            if running.actor.is_some() || running.not_before.is_some_and(|at| now < at) {
                continue;
            }
            let args = ClusterArgs {
                cluster: cluster.clone(),
                uid,
                context: state.args.context.clone(),
                config: state.args.config.clone(),
                metrics: state.args.metrics.clone(),
                drivers: state.args.drivers.clone(),
            };
            let (actor, _) = Actor::spawn_linked(None, ClusterActor, args, myself.get_cell()).await?;
            if running.not_before.take().is_some() {
                state.args.metrics.restarts.inc();
            }
            running.actor = Some(actor);
        }
        let live = state.clusters.values().filter(|r| r.actor.is_some()).count();
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
        Ok(ClustersState {
            args,
            clusters: HashMap::new(),
        })
    }

    async fn post_stop(
        &self,
        _myself: ActorRef<ClustersMsg>,
        state: &mut ClustersState,
    ) -> Result<(), ActorProcessingErr> {
        for running in state.clusters.values_mut() {
            if let Some(actor) = running.actor.take() {
                actor.stop(Some("clusters supervisor stopping".into()));
            }
        }
        state.args.metrics.actors.set(0);
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
        let (cell, reason) = match event {
            SupervisionEvent::ActorFailed(cell, error) => (cell, Some(error.to_string())),
            SupervisionEvent::ActorTerminated(cell, _, _) => (cell, None),
            _ => return Ok(()),
        };
        for (cluster, running) in state.clusters.iter_mut() {
            if running
                .actor
                .as_ref()
                .is_some_and(|a| a.get_id() == cell.get_id())
            {
                running.actor = None;
                if let Some(reason) = reason {
                    // Failed: start it again after the policy's backoff.
                    let delay = match running.policy.on_failure(Instant::now()) {
                        Decision::RestartAfter(delay) => delay,
                        Decision::GiveUp => state.args.config.sync_interval,
                    };
                    tracing::warn!(%cluster, %reason, ?delay, "cluster actor failed; restarting");
                    running.not_before = Some(Instant::now() + delay);
                }
                break;
            }
        }
        Ok(())
    }
}
