//! A tenant's supervisor: one [`ServiceActor`] per service of the tenant (deleted ones too, until
//! they are finalized), started and stopped from the committed state alone, a failed one
//! started again after its restart policy's backoff.

use std::sync::Arc;

use drover_model::service::placement::set_name;
use ractor::{Actor, ActorProcessingErr, ActorRef, SupervisionEvent};

use super::service_actor::{ServiceActor, ServiceArgs, ServiceMsg};
use super::{ServiceActorsConfig, ServiceMetrics};
use crate::clusters::Observations;
use crate::keyed::{ended_cell, Keyed};
use crate::root::LeaderContext;

/// Messages of a tenant supervisor.
#[derive(Debug)]
pub enum TenantMsg {
    /// Compare the running service actors with the committed services.
    Tick,
}

/// Arguments of a tenant supervisor.
pub struct TenantArgs {
    pub(crate) tenant: String,
    pub(crate) context: LeaderContext,
    pub(crate) observations: Observations,
    pub(crate) config: Arc<ServiceActorsConfig>,
    pub(crate) metrics: ServiceMetrics,
}

/// State of a tenant supervisor.
pub struct TenantState {
    args: TenantArgs,
    services: Keyed<String, ServiceMsg>,
}

/// The tenant supervisor actor.
pub struct TenantSupervisor;

impl TenantSupervisor {
    async fn sync(myself: &ActorRef<TenantMsg>, state: &mut TenantState) -> Result<(), ActorProcessingErr> {
        let tenant = &state.args.tenant;
        let committed: Vec<(String, String)> = state.args.context.raft.local_read(|s| {
            s.platform()
                .tenants()
                .find(|(name, _)| *name == tenant)
                .map(|(_, stored)| {
                    stored
                        .services
                        .iter()
                        .map(|(name, service)| (name.clone(), service.uid.clone()))
                        .collect()
                })
                .unwrap_or_default()
        });
        for due in state.services.sync(committed, "service gone") {
            let Some(set) = set_name(tenant, &due.key) else {
                continue;
            };
            let args = ServiceArgs {
                tenant: tenant.clone(),
                service: due.key.clone(),
                uid: due.uid,
                set,
                context: state.args.context.clone(),
                observations: state.args.observations.clone(),
                config: state.args.config.clone(),
                metrics: state.args.metrics.clone(),
            };
            let (actor, _) = Actor::spawn_linked(None, ServiceActor, args, myself.get_cell()).await?;
            if due.restart {
                state.args.metrics.restarts.inc();
            }
            state.services.started(&due.key, actor);
        }
        Ok(())
    }
}

impl Actor for TenantSupervisor {
    type Msg = TenantMsg;
    type State = TenantState;
    type Arguments = TenantArgs;

    async fn pre_start(
        &self,
        myself: ActorRef<TenantMsg>,
        args: TenantArgs,
    ) -> Result<TenantState, ActorProcessingErr> {
        myself.send_interval(args.config.sync_interval, || TenantMsg::Tick);
        myself.send_message(TenantMsg::Tick)?;
        args.metrics.tenants.inc();
        let retry = args.config.sync_interval;
        Ok(TenantState {
            args,
            services: Keyed::new(retry),
        })
    }

    async fn post_stop(
        &self,
        _myself: ActorRef<TenantMsg>,
        state: &mut TenantState,
    ) -> Result<(), ActorProcessingErr> {
        state.services.stop_all("tenant supervisor stopping");
        state.args.metrics.tenants.dec();
        Ok(())
    }

    async fn handle(
        &self,
        myself: ActorRef<TenantMsg>,
        message: TenantMsg,
        state: &mut TenantState,
    ) -> Result<(), ActorProcessingErr> {
        match message {
            TenantMsg::Tick => Self::sync(&myself, state).await,
        }
    }

    async fn handle_supervisor_evt(
        &self,
        _myself: ActorRef<TenantMsg>,
        event: SupervisionEvent,
        state: &mut TenantState,
    ) -> Result<(), ActorProcessingErr> {
        let Some((cell, reason)) = ended_cell(event) else {
            return Ok(());
        };
        if let Some((service, Some(delay))) = state.services.ended(cell.get_id(), reason.is_some()) {
            let tenant = &state.args.tenant;
            tracing::warn!(%tenant, %service, reason = reason.unwrap_or_default(), ?delay, "service actor failed; restarting");
        }
        Ok(())
    }
}
