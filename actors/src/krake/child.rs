//! The root's child that starts the shutdown caller in each term (see [`crate::root`]).

use ractor::{Actor, ActorCell};

use super::shutdown_caller::{CallerArgs, ShutdownCaller};
use crate::root::{ChildSpec, LeaderContext, StartFuture};
use crate::ActorsError;

/// The root's child that runs the shutdown caller.
#[derive(Default)]
pub struct KrakeHooksChild;

impl ChildSpec for KrakeHooksChild {
    fn name(&self) -> String {
        "krake-hooks".into()
    }

    fn start(&self, supervisor: ActorCell, context: LeaderContext) -> StartFuture {
        Box::pin(async move {
            let (actor, _) = Actor::spawn_linked(None, ShutdownCaller, CallerArgs { context }, supervisor)
                .await
                .map_err(|e| ActorsError::Spawn {
                    name: "krake-hooks".into(),
                    message: e.to_string(),
                })?;
            Ok(actor.get_cell())
        })
    }
}
