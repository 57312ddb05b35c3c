//! The root's child that starts the shutdown caller in each term (see [`crate::root`]).

use std::sync::Arc;

use drover_model::egress::EgressPolicy;
use ractor::{Actor, ActorCell};

use super::shutdown_caller::{CallerArgs, ShutdownCaller};
use crate::root::{ChildSpec, LeaderContext, StartFuture};
use crate::ActorsError;

/// The root's child that runs the shutdown caller.
pub struct KrakeHooksChild {
    egress: Arc<EgressPolicy>,
}

impl KrakeHooksChild {
    /// Calls within the operator's egress policy (applications run on tenants' agents).
    pub fn new(egress: Arc<EgressPolicy>) -> Self {
        Self { egress }
    }
}

impl ChildSpec for KrakeHooksChild {
    fn name(&self) -> String {
        "krake-hooks".into()
    }

    fn start(&self, supervisor: ActorCell, context: LeaderContext) -> StartFuture {
        let egress = self.egress.clone();
        Box::pin(async move {
            let (actor, _) =
                Actor::spawn_linked(None, ShutdownCaller, CallerArgs { context, egress }, supervisor)
                    .await
                    .map_err(|e| ActorsError::Spawn {
                        name: "krake-hooks".into(),
                        message: e.to_string(),
                    })?;
            Ok(actor.get_cell())
        })
    }
}
