//! The root supervisor: runs on the leader only, starts its children and restarts them under a
//! [`RestartPolicy`]; when a child exhausts its budget the root fails, and the gate notices.

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use tokio::time::Instant;

use drover_raft::RaftHandle;
use ractor::{Actor, ActorCell, ActorProcessingErr, ActorRef, SupervisionEvent};

use crate::metrics::ActorMetrics;
use crate::supervision::{Decision, RestartPolicy, RestartPolicyConfig};
use crate::ActorsError;

/// What every leader-only actor knows about the leadership it runs under.
#[derive(Clone)]
pub struct LeaderContext {
    /// The term this tree was started in; effects outside Raft carry it as a fencing token.
    pub term: u64,
    /// The replicated store.
    pub raft: RaftHandle,
}

impl LeaderContext {
    /// The fence calls outside Raft carry: this tree's term and leader, in the state's epoch as
    /// applied here (a restore raises it while the tree runs).
    pub fn fence(&self) -> drover_model::cluster::agent_api::Fence {
        let epoch = self.raft.local_read(|state| state.epoch());
        drover_model::cluster::agent_api::Fence::new(self.term, self.raft.id()).in_epoch(epoch)
    }
}

/// The future a [`ChildSpec`] returns when it starts its actor.
pub type StartFuture = Pin<Box<dyn Future<Output = Result<ActorCell, ActorsError>> + Send>>;

/// How to start one child of the root. Implementations spawn their actor linked to
/// `supervisor` (with `Actor::spawn_linked`) and with no global name, because several nodes can
/// share one process in tests.
pub trait ChildSpec: Send + Sync + 'static {
    /// A stable name, unique among the root's children.
    fn name(&self) -> String;
    /// Starts the child.
    fn start(&self, supervisor: ActorCell, context: LeaderContext) -> StartFuture;
}

/// Messages of the root supervisor.
#[derive(Debug)]
pub enum RootMsg {
    /// Restart the named child (sent to itself after a backoff).
    Restart(String),
}

/// The root supervisor actor.
pub struct RootSupervisor;

/// Arguments of the root supervisor.
pub struct RootArgs {
    pub(crate) context: LeaderContext,
    pub(crate) children: Vec<Arc<dyn ChildSpec>>,
    pub(crate) policy: RestartPolicyConfig,
    pub(crate) metrics: ActorMetrics,
}

struct Child {
    spec: Arc<dyn ChildSpec>,
    cell: Option<ActorCell>,
    policy: RestartPolicy,
}

/// State of the root supervisor.
pub struct RootState {
    context: LeaderContext,
    /// By name: stopped in a fixed order, so a simulation replays.
    children: BTreeMap<String, Child>,
    metrics: ActorMetrics,
}

async fn start_child(
    myself: &ActorRef<RootMsg>,
    child: &mut Child,
    context: &LeaderContext,
) -> Result<(), ActorsError> {
    let cell = child.spec.start(myself.get_cell(), context.clone()).await?;
    child.cell = Some(cell);
    Ok(())
}

impl Actor for RootSupervisor {
    type Msg = RootMsg;
    type State = RootState;
    type Arguments = RootArgs;

    async fn pre_start(
        &self,
        myself: ActorRef<RootMsg>,
        args: RootArgs,
    ) -> Result<RootState, ActorProcessingErr> {
        let mut children = BTreeMap::new();
        for spec in args.children {
            let mut child = Child {
                spec: spec.clone(),
                cell: None,
                policy: RestartPolicy::new(args.policy),
            };
            start_child(&myself, &mut child, &args.context).await?;
            children.insert(spec.name(), child);
        }
        tracing::info!(
            term = args.context.term,
            children = children.len(),
            "root supervisor started"
        );
        Ok(RootState {
            context: args.context,
            children,
            metrics: args.metrics,
        })
    }

    async fn post_stop(
        &self,
        _myself: ActorRef<RootMsg>,
        state: &mut RootState,
    ) -> Result<(), ActorProcessingErr> {
        for child in state.children.values_mut() {
            if let Some(cell) = child.cell.take() {
                cell.stop(Some("leadership ended".into()));
            }
        }
        tracing::info!(term = state.context.term, "root supervisor stopped");
        Ok(())
    }

    async fn handle(
        &self,
        myself: ActorRef<RootMsg>,
        message: RootMsg,
        state: &mut RootState,
    ) -> Result<(), ActorProcessingErr> {
        match message {
            RootMsg::Restart(name) => {
                let context = state.context.clone();
                if let Some(child) = state.children.get_mut(&name) {
                    if child.cell.is_none() {
                        start_child(&myself, child, &context).await?;
                        state.metrics.child_restarts.with_label_values(&[&name]).inc();
                        tracing::info!(child = %name, "child restarted");
                    }
                }
                Ok(())
            }
        }
    }

    async fn handle_supervisor_evt(
        &self,
        myself: ActorRef<RootMsg>,
        event: SupervisionEvent,
        state: &mut RootState,
    ) -> Result<(), ActorProcessingErr> {
        let (cell, reason) = match event {
            SupervisionEvent::ActorFailed(cell, error) => (cell, error.to_string()),
            SupervisionEvent::ActorTerminated(cell, _, reason) => {
                (cell, reason.unwrap_or_else(|| "stopped".to_string()))
            }
            _ => return Ok(()),
        };
        let Some((name, child)) = state
            .children
            .iter_mut()
            .find(|(_, child)| child.cell.as_ref().is_some_and(|c| c.get_id() == cell.get_id()))
        else {
            return Ok(());
        };
        child.cell = None;
        match child.policy.on_failure(Instant::now()) {
            Decision::RestartAfter(delay) => {
                tracing::warn!(child = %name, %reason, ?delay, "child ended; restarting after backoff");
                let name = name.clone();
                myself.send_after(delay, move || RootMsg::Restart(name));
                Ok(())
            }
            Decision::GiveUp => {
                tracing::error!(child = %name, %reason, "child exceeded its restart budget; escalating");
                Err(format!("child {name} exceeded its restart budget: {reason}").into())
            }
        }
    }
}
