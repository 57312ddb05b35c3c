//! One actor per resource type: each tick it expires claims, reaps stale owned resources, runs
//! the dynamic lifecycle, retires resources marked for deletion and hands dirty resources to
//! the janitor (or, for a type with `needs`, prepares them as Mason does). It decides from this node's replica and acts through committed commands, so a
//! decision made on stale data is refused or is a no-op when applied.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use drover_model::pool::{owners, states, PoolCommand, PoolResult, Resource};
use drover_model::{Command, CommandResult, Proposal};
use ractor::{Actor, ActorProcessingErr, ActorRef};
use tokio::task::AbortHandle;
use tokio::time::Instant;

use super::janitor::{self, CleanupOutcome};
use super::{PoolActorMetrics, PoolActorsConfig};
use crate::root::LeaderContext;

/// First delay before a failed cleanup is retried; doubles up to [`MAX_JANITOR_BACKOFF`].
const FIRST_JANITOR_BACKOFF: Duration = Duration::from_secs(1);
/// Longest delay between cleanups of one resource.
const MAX_JANITOR_BACKOFF: Duration = Duration::from_secs(300);

/// Messages of a type actor.
#[derive(Debug)]
pub enum TypeMsg {
    /// Look at the pool.
    Tick,
    /// A cleanup finished.
    Cleaned {
        /// The resource.
        name: String,
        /// Fencing token of the janitor's grant.
        token: u64,
        /// How it went.
        outcome: CleanupOutcome,
    },
}

/// Arguments of a type actor.
pub struct TypeArgs {
    pub(crate) rtype: String,
    pub(crate) context: LeaderContext,
    pub(crate) config: Arc<PoolActorsConfig>,
    pub(crate) metrics: PoolActorMetrics,
    pub(crate) term_start_ms: u64,
}

struct Cleaning {
    token: u64,
    task: AbortHandle,
    last_heartbeat: Instant,
}

/// State of a type actor.
pub struct TypeState {
    args: TypeArgs,
    cleaning: HashMap<String, Cleaning>,
    /// Resources whose last cleanup failed: not before this instant, and the next delay.
    backoff: HashMap<String, (Instant, Duration)>,
}

/// The per-type actor.
pub struct TypeActor;

impl TypeState {
    async fn commit(&self, command: PoolCommand) -> Option<PoolResult> {
        match self
            .args
            .context
            .raft
            .write(Proposal::new(Command::Pool(command)))
            .await
        {
            Ok(written) => match written.result {
                CommandResult::Pool(result) => Some(result),
                CommandResult::Refused(error) => {
                    tracing::debug!(rtype = %self.args.rtype, %error, "pool command refused");
                    None
                }
                _ => None,
            },
            Err(e) => {
                tracing::warn!(rtype = %self.args.rtype, error = %e, "pool command not committed");
                None
            }
        }
    }

    fn resources(&self) -> Vec<Resource> {
        let rtype = self.args.rtype.clone();
        self.args
            .context
            .raft
            .local_read(|s| s.pools().of_type(&rtype).cloned().collect())
    }

    async fn expire_claims(&self, now_ms: u64, resources: &[Resource]) {
        let term_start_ms = self.args.term_start_ms;
        if resources.iter().any(|r| r.claim_expired(now_ms, term_start_ms)) {
            let command = PoolCommand::ExpireClaims {
                rtype: self.args.rtype.clone(),
                not_before_ms: term_start_ms,
            };
            if let Some(PoolResult::Reclaimed(reclaimed)) = self.commit(command).await {
                tracing::info!(rtype = %self.args.rtype, claims = reclaimed.len(), "claims expired");
            }
        }
    }

    async fn reap(&self, now_ms: u64, resources: &[Resource]) {
        let expire_ms = u64::try_from(self.args.config.reaper_expire.as_millis()).unwrap_or(u64::MAX);
        for from in &self.args.config.reaper_states {
            let stale = resources.iter().any(|r| {
                &r.state == from
                    && !r.owner.is_empty()
                    && r.claim_expires_ms.is_none()
                    && now_ms.saturating_sub(r.last_update_ms.max(self.args.term_start_ms)) >= expire_ms
            });
            if !stale {
                continue;
            }
            let command = PoolCommand::Reset {
                rtype: self.args.rtype.clone(),
                state: from.clone(),
                dest: self.args.config.reaper_target.clone(),
                expire_ms,
                not_before_ms: self.args.term_start_ms,
            };
            if let Some(PoolResult::Reclaimed(reclaimed)) = self.commit(command).await {
                for (name, owner) in &reclaimed {
                    tracing::info!(rtype = %self.args.rtype, %name, %owner, "reaper reclaimed a stale resource");
                }
                self.args
                    .metrics
                    .reaper_reclaims
                    .with_label_values(&[&self.args.rtype])
                    .inc_by(reclaimed.len() as u64);
            }
        }
    }

    async fn sync_dynamic(&self, now_ms: u64) {
        let rtype = self.args.rtype.clone();
        let (needed, max) = self.args.context.raft.local_read(|s| {
            let pools = s.pools();
            let max = pools
                .config()
                .and_then(|c| c.get(&rtype))
                .and_then(|t| t.max_count)
                .unwrap_or(0);
            (pools.dynamic_sync_needed(&rtype, now_ms), max)
        });
        if needed {
            let new_names = (0..max).map(|_| uuid::Uuid::new_v4().to_string()).collect();
            self.commit(PoolCommand::SyncDynamic { rtype, new_names }).await;
        }
    }

    async fn retire(&self, resources: &[Resource]) {
        for resource in resources
            .iter()
            .filter(|r| r.state == states::TO_BE_DELETED && r.owner.is_empty())
        {
            self.commit(PoolCommand::Retire {
                name: resource.name.clone(),
            })
            .await;
        }
    }

    /// Mason: prepares dirty resources of a type with `needs` instead of the janitor.
    async fn fulfil(&self, resources: &[Resource]) {
        for resource in resources
            .iter()
            .filter(|r| r.state == states::DIRTY && r.owner.is_empty())
        {
            self.commit(PoolCommand::Fulfil {
                name: resource.name.clone(),
            })
            .await;
        }
    }

    fn has_needs(&self) -> bool {
        let rtype = self.args.rtype.clone();
        self.args.context.raft.local_read(|s| {
            s.pools()
                .config()
                .and_then(|c| c.get(&rtype))
                .is_some_and(|t| !t.needs.is_empty())
        })
    }

    async fn heartbeat_cleanups(&mut self) {
        let every = (self.args.config.reaper_expire / 4).max(self.args.config.sync_interval);
        let due: Vec<(String, u64)> = self
            .cleaning
            .iter()
            .filter(|(_, c)| c.last_heartbeat.elapsed() >= every)
            .map(|(name, c)| (name.clone(), c.token))
            .collect();
        for (name, token) in due {
            let command = PoolCommand::Update {
                name: name.clone(),
                owner: owners::JANITOR.into(),
                state: states::CLEANING.into(),
                user_data: Default::default(),
                token: Some(token),
            };
            self.commit(command).await;
            if let Some(cleaning) = self.cleaning.get_mut(&name) {
                cleaning.last_heartbeat = Instant::now();
            }
        }
    }

    async fn dispatch_janitor(&mut self, myself: &ActorRef<TypeMsg>, resources: &[Resource]) {
        let Some(command) = self.args.config.janitor_command.clone() else {
            return;
        };
        let now = Instant::now();
        let mut dirty: Vec<&Resource> = resources
            .iter()
            .filter(|r| {
                r.state == states::DIRTY && r.owner.is_empty() && !self.cleaning.contains_key(&r.name)
            })
            .filter(|r| self.backoff.get(&r.name).is_none_or(|(until, _)| now >= *until))
            .collect();
        dirty.sort_by_key(|r| (r.last_update_ms, r.name.clone()));
        let room = self
            .args
            .config
            .janitor_concurrency
            .saturating_sub(self.cleaning.len());
        for resource in dirty.into_iter().take(room) {
            let grant = PoolCommand::AcquireByState {
                state: states::DIRTY.into(),
                dest: states::CLEANING.into(),
                owner: owners::JANITOR.into(),
                names: vec![resource.name.clone()],
            };
            let Some(PoolResult::Resources(granted)) = self.commit(grant).await else {
                continue;
            };
            let Some(granted) = granted.into_iter().next() else {
                continue;
            };
            let actor = myself.clone();
            let task = janitor::spawn_cleanup(
                command.clone(),
                granted.clone(),
                self.args.config.janitor_timeout,
                move |resource, outcome| {
                    let _ = actor.send_message(TypeMsg::Cleaned {
                        name: resource.name,
                        token: resource.token,
                        outcome,
                    });
                },
            );
            self.cleaning.insert(
                granted.name.clone(),
                Cleaning {
                    token: granted.token,
                    task,
                    last_heartbeat: now,
                },
            );
        }
    }

    async fn cleaned(&mut self, name: String, token: u64, outcome: CleanupOutcome) {
        self.cleaning.remove(&name);
        let (dest, result) = match outcome {
            CleanupOutcome::Succeeded => (states::FREE, "success"),
            CleanupOutcome::Failed(_) => (states::DIRTY, "failure"),
            CleanupOutcome::TimedOut => (states::DIRTY, "timeout"),
        };
        self.args
            .metrics
            .janitor_runs
            .with_label_values(&[&self.args.rtype, result])
            .inc();
        if let CleanupOutcome::Failed(reason) = &outcome {
            tracing::warn!(rtype = %self.args.rtype, %name, %reason, "cleanup failed; the resource stays dirty");
        }
        if outcome == CleanupOutcome::Succeeded {
            self.backoff.remove(&name);
        } else {
            let delay = self
                .backoff
                .get(&name)
                .map_or(FIRST_JANITOR_BACKOFF, |(_, d)| (*d * 2).min(MAX_JANITOR_BACKOFF));
            self.backoff.insert(name.clone(), (Instant::now() + delay, delay));
        }
        let release = PoolCommand::Release {
            name,
            dest: dest.into(),
            owner: owners::JANITOR.into(),
            token: Some(token),
        };
        self.commit(release).await;
    }
}

impl Actor for TypeActor {
    type Msg = TypeMsg;
    type State = TypeState;
    type Arguments = TypeArgs;

    async fn pre_start(
        &self,
        myself: ActorRef<TypeMsg>,
        args: TypeArgs,
    ) -> Result<TypeState, ActorProcessingErr> {
        myself.send_interval(args.config.sync_interval, || TypeMsg::Tick);
        Ok(TypeState {
            args,
            cleaning: HashMap::new(),
            backoff: HashMap::new(),
        })
    }

    async fn post_stop(
        &self,
        _myself: ActorRef<TypeMsg>,
        state: &mut TypeState,
    ) -> Result<(), ActorProcessingErr> {
        // Cleanups die with the leadership; the reaper of the next leader reclaims them.
        for (_, cleaning) in state.cleaning.drain() {
            cleaning.task.abort();
        }
        Ok(())
    }

    async fn handle(
        &self,
        myself: ActorRef<TypeMsg>,
        message: TypeMsg,
        state: &mut TypeState,
    ) -> Result<(), ActorProcessingErr> {
        match message {
            TypeMsg::Tick => {
                let now_ms = state.args.context.raft.leader_clock_ms();
                let resources = state.resources();
                state.expire_claims(now_ms, &resources).await;
                state.reap(now_ms, &resources).await;
                state.sync_dynamic(now_ms).await;
                state.retire(&resources).await;
                state.heartbeat_cleanups().await;
                let resources = state.resources();
                if state.has_needs() {
                    state.fulfil(&resources).await;
                } else {
                    state.dispatch_janitor(&myself, &resources).await;
                }
            }
            TypeMsg::Cleaned { name, token, outcome } => state.cleaned(name, token, outcome).await,
        }
        Ok(())
    }
}
