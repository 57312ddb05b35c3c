//! The services supervisor: on every sync it runs the placement pass, then keeps one
//! [`TenantSupervisor`] per tenant that has services (each with its service actors), started
//! and stopped from the committed state alone, a failed one started again after a backoff.

use std::sync::Arc;

use prometheus::IntCounter;
use ractor::{Actor, ActorProcessingErr, ActorRef, SupervisionEvent};

use super::placer::{place_pass, Rescheduler};
use super::tenant::{TenantArgs, TenantMsg, TenantSupervisor};
use super::{ServiceActorsConfig, ServiceMetrics};
use crate::clusters::Observations;
use crate::keyed::{ended_cell, Keyed};
use crate::root::LeaderContext;

/// Messages of the services supervisor.
#[derive(Debug)]
pub enum ServicesMsg {
    /// Place, then compare the tenant supervisors with the committed tenants.
    Tick,
}

/// Arguments of the services supervisor.
pub struct ServicesArgs {
    pub(crate) context: LeaderContext,
    pub(crate) observations: Observations,
    pub(crate) config: Arc<ServiceActorsConfig>,
    pub(crate) metrics: ServiceMetrics,
    pub(crate) placements: IntCounter,
    pub(crate) rescores: IntCounter,
}

/// State of the services supervisor.
pub struct ServicesState {
    args: ServicesArgs,
    tenants: Keyed<String, TenantMsg>,
    rescheduler: Rescheduler,
}

/// The services supervisor actor.
pub struct ServicesSupervisor;

impl ServicesSupervisor {
    async fn sync(
        myself: &ActorRef<ServicesMsg>,
        state: &mut ServicesState,
    ) -> Result<(), ActorProcessingErr> {
        place_pass(
            &state.args.context,
            &state.args.placements,
            state.args.config.migration_interval,
            &mut state.rescheduler,
        )
        .await;
        let committed: Vec<(String, String)> = state.args.context.raft.local_read(|s| {
            s.platform()
                .tenants()
                .filter(|(_, stored)| !stored.services.is_empty())
                // A tenant's supervisor lives as long as the tenant has services; it has no
                // identity of its own beyond its name.
                .map(|(name, _)| (name.clone(), String::new()))
                .collect()
        });
        for due in state.tenants.sync(committed, "tenant has no services") {
            let args = TenantArgs {
                tenant: due.key.clone(),
                context: state.args.context.clone(),
                observations: state.args.observations.clone(),
                config: state.args.config.clone(),
                metrics: state.args.metrics.clone(),
            };
            let (actor, _) = Actor::spawn_linked(None, TenantSupervisor, args, myself.get_cell()).await?;
            if due.restart {
                state.args.metrics.restarts.inc();
            }
            state.tenants.started(&due.key, actor);
        }
        Ok(())
    }
}

impl Actor for ServicesSupervisor {
    type Msg = ServicesMsg;
    type State = ServicesState;
    type Arguments = ServicesArgs;

    async fn pre_start(
        &self,
        myself: ActorRef<ServicesMsg>,
        args: ServicesArgs,
    ) -> Result<ServicesState, ActorProcessingErr> {
        myself.send_interval(args.config.sync_interval, || ServicesMsg::Tick);
        myself.send_message(ServicesMsg::Tick)?;
        let retry = args.config.sync_interval;
        let rescheduler = Rescheduler::new(args.config.reschedule_after, args.rescores.clone());
        Ok(ServicesState {
            args,
            tenants: Keyed::new(retry),
            rescheduler,
        })
    }

    async fn post_stop(
        &self,
        _myself: ActorRef<ServicesMsg>,
        state: &mut ServicesState,
    ) -> Result<(), ActorProcessingErr> {
        state.tenants.stop_all("services supervisor stopping");
        Ok(())
    }

    async fn handle(
        &self,
        myself: ActorRef<ServicesMsg>,
        message: ServicesMsg,
        state: &mut ServicesState,
    ) -> Result<(), ActorProcessingErr> {
        match message {
            ServicesMsg::Tick => Self::sync(&myself, state).await,
        }
    }

    async fn handle_supervisor_evt(
        &self,
        _myself: ActorRef<ServicesMsg>,
        event: SupervisionEvent,
        state: &mut ServicesState,
    ) -> Result<(), ActorProcessingErr> {
        let Some((cell, reason)) = ended_cell(event) else {
            return Ok(());
        };
        if let Some((tenant, Some(delay))) = state.tenants.ended(cell.get_id(), reason.is_some()) {
            tracing::warn!(%tenant, reason = reason.unwrap_or_default(), ?delay, "tenant supervisor failed; restarting");
        }
        Ok(())
    }
}
