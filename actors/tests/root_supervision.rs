//! The root supervisor on a real single-node Raft: a failing child is restarted with growing
//! backoff until its budget is spent; then the root fails and the gate starts it again.

mod common;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{ensure, Result};
use common::single_node;
use drover_actors::{ChildSpec, LeaderContext, LeaderGate, RestartPolicyConfig, StartFuture};
use ractor::{Actor, ActorCell, ActorProcessingErr, ActorRef};
use tokio_util::sync::CancellationToken;

/// An actor that fails right after it starts, recording when it started.
struct Crasher;

impl Actor for Crasher {
    type Msg = ();
    type State = ();
    type Arguments = Arc<Mutex<Vec<(Instant, u64)>>>;

    async fn pre_start(
        &self,
        myself: ActorRef<()>,
        starts: Self::Arguments,
    ) -> Result<(), ActorProcessingErr> {
        starts
            .lock()
            .map_err(|e| e.to_string())?
            .push((Instant::now(), 0));
        myself.send_message(()).map_err(|e| e.to_string())?;
        Ok(())
    }

    async fn handle(&self, _: ActorRef<()>, _: (), _: &mut ()) -> Result<(), ActorProcessingErr> {
        Err("planned failure".into())
    }
}

struct CrasherSpec {
    starts: Arc<Mutex<Vec<(Instant, u64)>>>,
}

impl ChildSpec for CrasherSpec {
    fn name(&self) -> String {
        "crasher".into()
    }

    fn start(&self, supervisor: ActorCell, context: LeaderContext) -> StartFuture {
        let starts = self.starts.clone();
        Box::pin(async move {
            let (actor, _) = Actor::spawn_linked(None, Crasher, starts.clone(), supervisor)
                .await
                .map_err(|e| drover_actors::ActorsError::Spawn {
                    name: "crasher".into(),
                    message: e.to_string(),
                })?;
            if let Ok(mut starts) = starts.lock() {
                if let Some(last) = starts.last_mut() {
                    last.1 = context.term;
                }
            }
            Ok(actor.get_cell())
        })
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_child_backs_off_then_the_root_escalates_and_is_restarted() -> Result<()> {
    let (_dir, raft) = single_node().await?;
    let starts = Arc::new(Mutex::new(Vec::new()));
    let policy = RestartPolicyConfig {
        initial_backoff: Duration::from_millis(50),
        max_backoff: Duration::from_millis(400),
        max_restarts: 3,
        window: Duration::from_secs(30),
    };
    let registry = prometheus::Registry::new();
    let shutdown = CancellationToken::new();
    let spec: Arc<dyn ChildSpec> = Arc::new(CrasherSpec {
        starts: starts.clone(),
    });
    let gate = LeaderGate::start(raft.clone(), vec![spec], policy, &registry, shutdown.clone())?;
    let mut state = gate.state();

    // First root: 1 start + 3 restarts, then the root gives up; the gate starts a second root.
    let deadline = Duration::from_secs(20);
    tokio::time::timeout(deadline, state.wait_for(|s| s.starts >= 2)).await??;
    let recorded = starts.lock().map_err(|e| anyhow::anyhow!("{e}"))?.clone();
    ensure!(
        recorded.len() >= 5,
        "the first root's child started 4 times, the second's at least once: {}",
        recorded.len()
    );
    let gaps: Vec<Duration> = recorded.windows(2).take(3).map(|w| w[1].0 - w[0].0).collect();
    ensure!(gaps[0] >= Duration::from_millis(50), "first backoff: {gaps:?}");
    ensure!(
        gaps[1] >= Duration::from_millis(100),
        "second backoff doubles: {gaps:?}"
    );
    ensure!(
        gaps[2] >= Duration::from_millis(200),
        "third backoff doubles again: {gaps:?}"
    );
    ensure!(
        recorded.iter().all(|(_, term)| *term > 0),
        "children know the term: {recorded:?}"
    );

    let failures = registry
        .gather()
        .iter()
        .find(|family| family.name() == "drover_actors_root_failures_total")
        .and_then(|family| family.get_metric().first().map(|m| m.get_counter().get_value()))
        .unwrap_or(0.0);
    ensure!(failures >= 1.0, "the root's failure is counted: {failures}");

    shutdown.cancel();
    gate.join().await;
    raft.shutdown().await;
    Ok(())
}
