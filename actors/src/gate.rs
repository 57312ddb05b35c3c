//! The leadership gate: one task per node that starts the root supervisor once this node is
//! leader and has applied everything committed before its term, and stops it when leadership
//! is lost or the term changes.

use std::sync::Arc;
use std::time::Duration;

use drover_raft::RaftHandle;
use prometheus::Registry;
use ractor::{Actor, ActorRef};
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::metrics::ActorMetrics;
use crate::root::{ChildSpec, LeaderContext, RootArgs, RootMsg, RootSupervisor};
use crate::supervision::{Decision, RestartPolicy, RestartPolicyConfig};
use crate::ActorsError;

/// How long the gate waits for a stopping root before it moves on.
const STOP_GRACE: Duration = Duration::from_secs(5);
/// How soon the gate tries the barrier again after it failed.
const BARRIER_RETRY: Duration = Duration::from_millis(200);

/// What the gate reports about the tree on this node.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct GateState {
    /// Whether the root supervisor runs here now.
    pub running: bool,
    /// The term it runs (or last ran) under.
    pub term: u64,
    /// How many times it was started on this node.
    pub starts: u64,
}

/// Handle on the gate task.
pub struct LeaderGate {
    state: watch::Receiver<GateState>,
    task: JoinHandle<()>,
}

struct RunningRoot {
    actor: ActorRef<RootMsg>,
    handle: JoinHandle<()>,
    term: u64,
}

impl LeaderGate {
    /// Starts the gate. `children` are started under the root on every leadership.
    pub fn start(
        raft: RaftHandle,
        children: Vec<Arc<dyn ChildSpec>>,
        policy: RestartPolicyConfig,
        registry: &Registry,
        shutdown: CancellationToken,
    ) -> Result<Self, ActorsError> {
        let metrics = ActorMetrics::register(registry)?;
        let (state_tx, state) = watch::channel(GateState::default());
        let task = tokio::spawn(run(raft, children, policy, metrics, state_tx, shutdown));
        Ok(Self { state, task })
    }

    /// The gate's state, published on every change.
    pub fn state(&self) -> watch::Receiver<GateState> {
        self.state.clone()
    }

    /// Waits for the gate to finish after its shutdown token was cancelled.
    pub async fn join(self) {
        if let Err(e) = self.task.await {
            tracing::warn!(error = %e, "leader gate task ended abnormally");
        }
    }
}

async fn stop_root(root: RunningRoot, reason: &str) {
    root.actor.stop(Some(reason.to_string()));
    if tokio::time::timeout(STOP_GRACE, root.handle).await.is_err() {
        tracing::warn!("root supervisor did not stop within {STOP_GRACE:?}");
    }
}

async fn run(
    raft: RaftHandle,
    children: Vec<Arc<dyn ChildSpec>>,
    policy: RestartPolicyConfig,
    metrics: ActorMetrics,
    state: watch::Sender<GateState>,
    shutdown: CancellationToken,
) {
    let mut leadership = raft.leadership();
    let mut root: Option<RunningRoot> = None;
    let mut retry_at: Option<Instant> = None;
    let mut root_policy = RestartPolicy::new(policy);
    let publish = |running: bool, term: u64, started: bool| {
        state.send_modify(|s| {
            s.running = running;
            s.term = term;
            if started {
                s.starts += 1;
            }
        });
        metrics.root_running.set(i64::from(running));
    };
    loop {
        let current = *leadership.borrow_and_update();
        if let Some(running) = root.take() {
            if current.is_self && current.term == running.term {
                root = Some(running);
            } else {
                let term = running.term;
                stop_root(running, "leadership lost").await;
                publish(false, term, false);
            }
        }
        let may_start = retry_at.is_none_or(|at| Instant::now() >= at);
        if root.is_none() && current.is_self && may_start {
            retry_at = None;
            let barrier = tokio::time::timeout(raft.request_timeout(), raft.barrier()).await;
            let still = *leadership.borrow();
            if matches!(barrier, Ok(Ok(_))) && still.is_self && still.term == current.term {
                let args = RootArgs {
                    context: LeaderContext {
                        term: current.term,
                        raft: raft.clone(),
                    },
                    children: children.clone(),
                    policy,
                    metrics: metrics.clone(),
                };
                match Actor::spawn(None, RootSupervisor, args).await {
                    Ok((actor, handle)) => {
                        root = Some(RunningRoot {
                            actor,
                            handle,
                            term: current.term,
                        });
                        metrics.root_starts.inc();
                        publish(true, current.term, true);
                    }
                    Err(e) => {
                        tracing::error!(error = %e, "root supervisor failed to start");
                        metrics.root_failures.inc();
                        retry_at = Some(Instant::now() + backoff(&mut root_policy, policy));
                    }
                }
            } else {
                retry_at = Some(Instant::now() + BARRIER_RETRY);
            }
        }
        let root_ended = async {
            match root.as_mut() {
                Some(running) => {
                    let _ = (&mut running.handle).await;
                }
                None => std::future::pending().await,
            }
        };
        let retry = async {
            match retry_at {
                Some(at) => tokio::time::sleep_until(at).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            _ = shutdown.cancelled() => break,
            changed = leadership.changed() => if changed.is_err() { break },
            _ = root_ended => {
                if let Some(ended) = root.take() {
                    tracing::error!(term = ended.term, "root supervisor ended; restarting after backoff");
                    metrics.root_failures.inc();
                    publish(false, ended.term, false);
                    retry_at = Some(Instant::now() + backoff(&mut root_policy, policy));
                }
            }
            // Due now: the next turn may start the root. Cleared, or a node that lost the
            // leadership meanwhile would find the same past deadline at every turn and spin
            // (found by the simulation).
            _ = retry => retry_at = None,
        }
    }
    if let Some(running) = root.take() {
        let term = running.term;
        stop_root(running, "node shutting down").await;
        publish(false, term, false);
    }
}

fn backoff(root_policy: &mut RestartPolicy, config: RestartPolicyConfig) -> Duration {
    match root_policy.on_failure(Instant::now()) {
        Decision::RestartAfter(delay) => delay,
        Decision::GiveUp => config.max_backoff,
    }
}
