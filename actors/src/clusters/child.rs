//! The root's child that starts the cluster actors' supervisor in each term (see [`crate::root`]).

use std::sync::Arc;

use prometheus::Registry;
use ractor::{Actor, ActorCell};

use super::supervisor::{ClustersArgs, ClustersSupervisor};
use super::{AgentDriver, ClusterActorMetrics, ClusterActorsConfig, Driver, DriverFactory, Observations};
use crate::root::{ChildSpec, LeaderContext, StartFuture};
use crate::ActorsError;

/// The root's child that runs the cluster actors.
pub struct ClustersChild {
    config: Arc<ClusterActorsConfig>,
    metrics: ClusterActorMetrics,
    drivers: DriverFactory,
    observations: Observations,
}

impl ClustersChild {
    /// A child spec whose cluster actors talk to `drover agent`s, with its metrics registered;
    /// they publish what they see in `observations`, for the service actors.
    pub fn new(
        config: ClusterActorsConfig,
        registry: &Registry,
        observations: Observations,
    ) -> Result<Self, ActorsError> {
        let (timeout, apply_timeout) = (config.probe_timeout, config.apply_timeout);
        let identity = config.client_identity.clone();
        let drivers: DriverFactory = Arc::new(move |agent: &drover_model::cluster::AgentAccess| {
            let driver = AgentDriver::with_apply_timeout(agent, &identity, timeout, apply_timeout)?;
            Ok(Arc::new(driver) as Arc<dyn Driver>)
        });
        Self::with_drivers(config, registry, drivers, observations)
    }

    /// A child spec whose cluster actors reach their clusters through `drivers` (another kind of
    /// cluster, or a cluster that misbehaves in a test).
    pub fn with_drivers(
        config: ClusterActorsConfig,
        registry: &Registry,
        drivers: DriverFactory,
        observations: Observations,
    ) -> Result<Self, ActorsError> {
        Ok(Self {
            config: Arc::new(config),
            metrics: ClusterActorMetrics::register(registry)?,
            drivers,
            observations,
        })
    }
}

impl ChildSpec for ClustersChild {
    fn name(&self) -> String {
        "clusters".into()
    }

    fn start(&self, supervisor: ActorCell, context: LeaderContext) -> StartFuture {
        let args = ClustersArgs {
            context,
            config: self.config.clone(),
            metrics: self.metrics.clone(),
            drivers: self.drivers.clone(),
            observations: self.observations.clone(),
        };
        Box::pin(async move {
            let (actor, _) = Actor::spawn_linked(None, ClustersSupervisor, args, supervisor)
                .await
                .map_err(|e| ActorsError::Spawn {
                    name: "clusters".into(),
                    message: e.to_string(),
                })?;
            Ok(actor.get_cell())
        })
    }
}
