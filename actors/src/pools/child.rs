//! The root's child that starts the pool actors' supervisor in each term (see [`crate::root`]).

use std::sync::Arc;

use prometheus::Registry;
use ractor::{Actor, ActorCell};

use super::supervisor::{PoolsArgs, PoolsSupervisor};
use super::{PoolActorMetrics, PoolActorsConfig};
use crate::root::{ChildSpec, LeaderContext, StartFuture};
use crate::ActorsError;

/// The root's child that runs the pool actors.
pub struct PoolsChild {
    config: Arc<PoolActorsConfig>,
    metrics: PoolActorMetrics,
}

impl PoolsChild {
    /// A child spec with its metrics registered in `registry`.
    pub fn new(config: PoolActorsConfig, registry: &Registry) -> Result<Self, ActorsError> {
        Ok(Self {
            config: Arc::new(config),
            metrics: PoolActorMetrics::register(registry)?,
        })
    }
}

impl ChildSpec for PoolsChild {
    fn name(&self) -> String {
        "pools".into()
    }

    fn start(&self, supervisor: ActorCell, context: LeaderContext) -> StartFuture {
        let args = PoolsArgs {
            context,
            config: self.config.clone(),
            metrics: self.metrics.clone(),
        };
        Box::pin(async move {
            let (actor, _) = Actor::spawn_linked(None, PoolsSupervisor, args, supervisor)
                .await
                .map_err(|e| ActorsError::Spawn {
                    name: "pools".into(),
                    message: e.to_string(),
                })?;
            Ok(actor.get_cell())
        })
    }
}
