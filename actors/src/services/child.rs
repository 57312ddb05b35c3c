//! The root's child that starts the service actors' supervisor in each term (see [`crate::root`]).

use std::sync::Arc;

use prometheus::{IntCounter, Registry};
use ractor::{Actor, ActorCell};

use super::supervisor::{ServicesArgs, ServicesSupervisor};
use super::{ServiceActorsConfig, ServiceMetrics};
use crate::clusters::Observations;
use crate::root::{ChildSpec, LeaderContext, StartFuture};
use crate::ActorsError;

/// The root's child that runs the services supervisor.
pub struct ServicesChild {
    config: Arc<ServiceActorsConfig>,
    metrics: ServiceMetrics,
    placements: IntCounter,
    rescores: IntCounter,
    observations: Observations,
}

impl ServicesChild {
    /// A child spec whose service actors act on what the cluster actors publish in
    /// `observations`, with its metrics registered.
    pub fn new(
        config: ServiceActorsConfig,
        registry: &Registry,
        observations: Observations,
    ) -> Result<Self, ActorsError> {
        let placements = IntCounter::new("drover_service_placements_total", "Services placed on a cluster")?;
        registry.register(Box::new(placements.clone()))?;
        let rescores = IntCounter::new(
            "drover_service_rescores_total",
            "Placed services scored again by periodic rescheduling (reschedule_after)",
        )?;
        registry.register(Box::new(rescores.clone()))?;
        Ok(Self {
            config: Arc::new(config),
            metrics: ServiceMetrics::register(registry)?,
            placements,
            rescores,
            observations,
        })
    }
}

impl ChildSpec for ServicesChild {
    fn name(&self) -> String {
        "services".into()
    }

    fn start(&self, supervisor: ActorCell, context: LeaderContext) -> StartFuture {
        let args = ServicesArgs {
            context,
            observations: self.observations.clone(),
            config: self.config.clone(),
            metrics: self.metrics.clone(),
            placements: self.placements.clone(),
            rescores: self.rescores.clone(),
        };
        Box::pin(async move {
            let (actor, _) = Actor::spawn_linked(None, ServicesSupervisor, args, supervisor)
                .await
                .map_err(|e| ActorsError::Spawn {
                    name: "services".into(),
                    message: e.to_string(),
                })?;
            Ok(actor.get_cell())
        })
    }
}
