//! The pools supervisor: commits changes of the configuration file and keeps one type actor
//! per resource type.

use std::collections::HashMap;
use std::sync::Arc;

use drover_model::pool::PoolCommand;
use drover_model::{Command, CommandResult, Proposal};
use ractor::{Actor, ActorProcessingErr, ActorRef, SupervisionEvent};

use super::type_actor::{TypeActor, TypeArgs, TypeMsg};
use super::{PoolActorMetrics, PoolActorsConfig};
use crate::root::LeaderContext;

/// Messages of the pools supervisor.
#[derive(Debug)]
pub enum PoolsMsg {
    /// Look at the configuration file and the set of types.
    Tick,
}

/// Arguments of the pools supervisor.
pub struct PoolsArgs {
    pub(crate) context: LeaderContext,
    pub(crate) config: Arc<PoolActorsConfig>,
    pub(crate) metrics: PoolActorMetrics,
}

/// State of the pools supervisor.
pub struct PoolsState {
    args: PoolsArgs,
    /// Leader time when this tree started: the reaper never counts idle time before it.
    term_start_ms: u64,
    types: HashMap<String, ActorRef<TypeMsg>>,
    /// The file content last committed (or found equal to the committed config).
    last_file: Option<String>,
}

/// The pools supervisor actor.
pub struct PoolsSupervisor;

impl PoolsSupervisor {
    async fn sync_config_file(state: &mut PoolsState) {
        let Some(path) = state.args.config.config_file.as_ref() else {
            return;
        };
        let text = match tokio::fs::read_to_string(path).await {
            Ok(text) => text,
            Err(e) => {
                tracing::warn!(file = %path.display(), error = %e, "cannot read the pool configuration");
                return;
            }
        };
        if state.last_file.as_deref() == Some(text.as_str()) {
            return;
        }
        let config = match drover_model::pool::PoolConfig::from_yaml(&text) {
            Ok(config) => config,
            Err(message) => {
                // The running configuration stays; the file is looked at again when it changes.
                tracing::error!(file = %path.display(), %message, "pool configuration refused");
                state.last_file = Some(text);
                return;
            }
        };
        let raft = &state.args.context.raft;
        if raft.local_read(|s| s.pools().config() == Some(&config)) {
            state.last_file = Some(text);
            return;
        }
        let proposal = Proposal::new(Command::Pool(PoolCommand::SetConfig { config }));
        match raft.write(proposal).await {
            Ok(written) => match written.result {
                CommandResult::Refused(error) => {
                    tracing::error!(%error, "pool configuration refused");
                    state.last_file = Some(text);
                }
                _ => {
                    tracing::info!(file = %path.display(), "pool configuration committed");
                    state.last_file = Some(text);
                }
            },
            Err(e) => tracing::warn!(error = %e, "pool configuration not committed yet"),
        }
    }

    async fn sync_types(
        myself: &ActorRef<PoolsMsg>,
        state: &mut PoolsState,
    ) -> Result<(), ActorProcessingErr> {
        let types = state.args.context.raft.local_read(|s| s.pools().types());
        for rtype in &types {
            if state.types.contains_key(rtype) {
                continue;
            }
            let args = TypeArgs {
                rtype: rtype.clone(),
                context: state.args.context.clone(),
                config: state.args.config.clone(),
                metrics: state.args.metrics.clone(),
                term_start_ms: state.term_start_ms,
            };
            let (actor, _) = Actor::spawn_linked(None, TypeActor, args, myself.get_cell()).await?;
            state.types.insert(rtype.clone(), actor);
        }
        let gone: Vec<String> = state
            .types
            .keys()
            .filter(|t| !types.contains(t))
            .cloned()
            .collect();
        for rtype in gone {
            if let Some(actor) = state.types.remove(&rtype) {
                actor.stop(Some("type removed".into()));
            }
        }
        Ok(())
    }
}

impl Actor for PoolsSupervisor {
    type Msg = PoolsMsg;
    type State = PoolsState;
    type Arguments = PoolsArgs;

    async fn pre_start(
        &self,
        myself: ActorRef<PoolsMsg>,
        args: PoolsArgs,
    ) -> Result<PoolsState, ActorProcessingErr> {
        myself.send_interval(args.config.sync_interval, || PoolsMsg::Tick);
        myself.send_message(PoolsMsg::Tick)?;
        let term_start_ms = args.context.raft.leader_clock_ms();
        Ok(PoolsState {
            args,
            term_start_ms,
            types: HashMap::new(),
            last_file: None,
        })
    }

    async fn post_stop(
        &self,
        _myself: ActorRef<PoolsMsg>,
        state: &mut PoolsState,
    ) -> Result<(), ActorProcessingErr> {
        for (_, actor) in state.types.drain() {
            actor.stop(Some("pools stopping".into()));
        }
        Ok(())
    }

    async fn handle(
        &self,
        myself: ActorRef<PoolsMsg>,
        message: PoolsMsg,
        state: &mut PoolsState,
    ) -> Result<(), ActorProcessingErr> {
        match message {
            PoolsMsg::Tick => {
                Self::sync_config_file(state).await;
                Self::sync_types(&myself, state).await
            }
        }
    }

    async fn handle_supervisor_evt(
        &self,
        _myself: ActorRef<PoolsMsg>,
        event: SupervisionEvent,
        state: &mut PoolsState,
    ) -> Result<(), ActorProcessingErr> {
        if let SupervisionEvent::ActorFailed(cell, error) = event {
            // Forget the failed actor; the next tick starts a fresh one for its type.
            state.types.retain(|rtype, actor| {
                let failed = actor.get_id() == cell.get_id();
                if failed {
                    tracing::warn!(%rtype, %error, "pool type actor failed; restarting on the next tick");
                }
                !failed
            });
        }
        Ok(())
    }
}
