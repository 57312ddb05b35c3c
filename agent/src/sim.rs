//! The `sim` executor: simulated machines whose instances only pretend to run. One task and
//! one timer queue serve every instance (no task per instance), so a set of 10,000 instances
//! costs a heap entry each. An instance goes `starting` to `running` after the start latency
//! (`healthy` when it has a probe); the `crash` fault fails it once with exit code 137 and it
//! is started again after the restart backoff (doubling per crash, capped at 30s).

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use drover_model::cluster::agent_api::{Confinement, Health, InstanceId, InstanceState, Resources};
use futures::future::BoxFuture;
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::config::{AgentConfig, SimConfig};
use crate::error::AgentError;
use crate::executor::{Executor, Launch, Machine};
use crate::shared::Shared;

/// Longest delay before a crashed instance starts again.
const MAX_BACKOFF: Duration = Duration::from_secs(30);

enum Cmd {
    Start(Vec<Launch>),
    Stop(Vec<InstanceId>, oneshot::Sender<()>),
    Restart(InstanceId, oneshot::Sender<()>),
    Crash(Vec<InstanceId>),
}

/// Pretends to run instances on simulated machines.
#[derive(Debug)]
pub struct SimExecutor {
    sim: SimConfig,
    commands: mpsc::UnboundedSender<Cmd>,
}

impl std::fmt::Debug for Cmd {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("sim command")
    }
}

impl SimExecutor {
    /// A sim executor for `config`; its task ends when `shutdown` is cancelled.
    pub fn new(config: &AgentConfig, shared: Arc<Shared>, shutdown: CancellationToken) -> Self {
        let (commands, rx) = mpsc::unbounded_channel();
        let simulation = Simulation {
            shared,
            latency: config.sim.start_latency,
            backoff: config.restart_backoff,
            clock: config.wall_clock,
            queue: BinaryHeap::new(),
            live: HashMap::new(),
            next_token: 0,
        };
        tokio::spawn(simulation.run(rx, shutdown));
        Self {
            sim: config.sim,
            commands,
        }
    }
}

impl Executor for SimExecutor {
    fn kind(&self) -> &'static str {
        "sim"
    }

    fn machine(&self) -> Machine {
        let nodes = u64::from(self.sim.nodes);
        Machine {
            nodes: self.sim.nodes,
            cpus: u32::try_from(self.sim.node.cpu_millis.saturating_mul(nodes) / 1000).unwrap_or(u32::MAX),
            memory_mib: self.sim.node.memory_mib.saturating_mul(nodes),
            capacity: Resources {
                cpu_millis: self.sim.node.cpu_millis.saturating_mul(nodes),
                memory_mib: self.sim.node.memory_mib.saturating_mul(nodes),
            },
            capacity_is_ceiling: false,
            pressure: None,
        }
    }

    fn confinement(&self) -> Confinement {
        Confinement::Simulated
    }

    fn start(&self, launches: Vec<Launch>) {
        let _ = self.commands.send(Cmd::Start(launches));
    }

    fn stop(&self, ids: Vec<InstanceId>, _forget: bool) -> BoxFuture<'static, ()> {
        let (done, wait) = oneshot::channel();
        let _ = self.commands.send(Cmd::Stop(ids, done));
        Box::pin(async move {
            let _ = wait.await;
        })
    }

    fn restart(&self, id: InstanceId) -> BoxFuture<'static, ()> {
        let (done, wait) = oneshot::channel();
        let _ = self.commands.send(Cmd::Restart(id, done));
        Box::pin(async move {
            let _ = wait.await;
        })
    }

    fn crash(&self, ids: Vec<InstanceId>) -> Result<(), AgentError> {
        self.commands
            .send(Cmd::Crash(ids))
            .map_err(|_| AgentError::Internal("the simulation has stopped".into()))
    }
}

/// What happens when a timer fires.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Event {
    /// `starting` becomes `running`.
    Ready,
    /// A crashed instance starts again.
    Relaunch,
}

/// A simulated instance: its entry epoch, the token of its one pending timer, and how many
/// times in a row it crashed.
struct Live {
    epoch: u64,
    token: u64,
    probed: bool,
    crashes: u32,
}

struct Simulation {
    shared: Arc<Shared>,
    latency: Duration,
    backoff: Duration,
    /// The time of day stamped on a start.
    clock: fn() -> std::time::SystemTime,
    /// Timers: (when, token, event, instance). A timer whose token is no longer the
    /// instance's is stale and skipped.
    queue: BinaryHeap<Reverse<(Instant, u64, Event, InstanceId)>>,
    live: HashMap<InstanceId, Live>,
    next_token: u64,
}

impl Simulation {
    async fn run(mut self, mut commands: mpsc::UnboundedReceiver<Cmd>, shutdown: CancellationToken) {
        loop {
            let next = self.queue.peek().map(|Reverse((at, ..))| *at);
            tokio::select! {
                command = commands.recv() => match command {
                    Some(command) => self.obey(command),
                    None => return,
                },
                () = sleep_until(next) => self.fire(),
                () = shutdown.cancelled() => return,
            }
        }
    }

    fn schedule(&mut self, id: &InstanceId, event: Event, after: Duration) {
        self.next_token += 1;
        let token = self.next_token;
        if let Some(live) = self.live.get_mut(id) {
            live.token = token;
            self.queue
                .push(Reverse((Instant::now() + after, token, event, id.clone())));
        }
    }

    fn obey(&mut self, command: Cmd) {
        match command {
            Cmd::Start(launches) => {
                let now = self.now_rfc3339();
                let mut memory = self.shared.lock();
                let mut starting = Vec::new();
                for launch in launches {
                    let id = launch.spec.id.clone();
                    self.live.insert(
                        id.clone(),
                        Live {
                            epoch: launch.epoch,
                            token: 0,
                            probed: launch.spec.exec.probe.is_some(),
                            crashes: 0,
                        },
                    );
                    if launch.run.state == InstanceState::Exited {
                        continue;
                    }
                    if let Some(run) = memory.run_mut(&id, launch.epoch) {
                        run.state = InstanceState::Starting;
                        run.health = Health::Unknown;
                        run.started_at = Some(now.clone());
                        run.pid = None;
                        run.start_ticks = None;
                    }
                    starting.push(id);
                }
                drop(memory);
                for id in starting {
                    self.schedule(&id, Event::Ready, self.latency);
                }
            }
            Cmd::Stop(ids, done) => {
                for id in ids {
                    self.live.remove(&id);
                }
                let _ = done.send(());
            }
            Cmd::Restart(id, done) => {
                if let Some(live) = self.live.get(&id) {
                    let epoch = live.epoch;
                    if self.shared.update(&id, epoch, |run| {
                        run.restarts = run.restarts.saturating_add(1);
                        run.state = InstanceState::Starting;
                        run.health = Health::Unknown;
                        run.started_at = Some(self.now_rfc3339());
                    }) {
                        self.shared.metrics.restarts.inc();
                    }
                    self.schedule(&id, Event::Ready, self.latency);
                }
                let _ = done.send(());
            }
            Cmd::Crash(ids) => {
                for id in ids {
                    let Some(live) = self.live.get_mut(&id) else {
                        continue;
                    };
                    let delay = self
                        .backoff
                        .saturating_mul(2u32.saturating_pow(live.crashes.min(16)))
                        .min(MAX_BACKOFF);
                    live.crashes = live.crashes.saturating_add(1);
                    let epoch = live.epoch;
                    self.shared.update(&id, epoch, |run| {
                        run.state = InstanceState::Failed;
                        run.exit_code = Some(137);
                        run.health = Health::Unknown;
                    });
                    self.schedule(&id, Event::Relaunch, delay);
                }
            }
        }
    }

    /// The time of day, RFC 3339.
    fn now_rfc3339(&self) -> String {
        time::OffsetDateTime::from((self.clock)())
            .format(&time::format_description::well_known::Rfc3339)
            .unwrap_or_default()
    }

    /// Handles every timer that is due, under one lock of memory.
    fn fire(&mut self) {
        let now = Instant::now();
        let mut due = Vec::new();
        while let Some(Reverse((at, ..))) = self.queue.peek() {
            if *at > now {
                break;
            }
            if let Some(Reverse((_, token, event, id))) = self.queue.pop() {
                due.push((token, event, id));
            }
        }
        let mut relaunched = Vec::new();
        {
            let started_at = self.now_rfc3339();
            let mut memory = self.shared.lock();
            for (token, event, id) in due {
                let Some(live) = self.live.get(&id).filter(|l| l.token == token) else {
                    continue;
                };
                let probed = live.probed;
                let Some(run) = memory.run_mut(&id, live.epoch) else {
                    continue;
                };
                match event {
                    Event::Ready => {
                        run.state = InstanceState::Running;
                        run.health = if probed { Health::Healthy } else { Health::Unknown };
                    }
                    Event::Relaunch => {
                        run.restarts = run.restarts.saturating_add(1);
                        run.state = InstanceState::Starting;
                        run.started_at = Some(started_at.clone());
                        self.shared.metrics.restarts.inc();
                        relaunched.push(id);
                    }
                }
            }
        }
        for id in relaunched {
            self.schedule(&id, Event::Ready, self.latency);
        }
    }
}

/// Sleeps until `at`, or forever without one.
async fn sleep_until(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => futures::future::pending().await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ExecutorKind;
    use crate::secret::JoinToken;
    use crate::testutil::spec;
    use drover_model::cluster::agent_api::{DesiredSet, Fence, InstanceSpec, SetName, SimFaults};

    #[tokio::test]
    async fn ten_thousand_instances_start_and_a_crash_restarts_one() {
        let dir = tempfile::tempdir().unwrap();
        let token = JoinToken::new("0123456789abcdef", "test").unwrap();
        let mut config = AgentConfig::new(dir.path(), ExecutorKind::Sim, token);
        config.sim.nodes = 100;
        config.sim.start_latency = Duration::from_millis(10);
        config.restart_backoff = Duration::from_millis(10);
        let opened = crate::open(&config).unwrap();
        let agent = opened.agent().clone();
        let instances: Vec<InstanceSpec> = (0..10_000)
            .map(|i| {
                let mut s = spec(&format!("svc.main.r1.{i}"), &["x"]);
                s.resources.cpu_millis = 10;
                s.resources.memory_mib = 10;
                s
            })
            .collect();
        let began = std::time::Instant::now();
        let set = SetName::parse("svc").unwrap();
        let desired = DesiredSet {
            fence: Fence::new(1, 1),
            instances,
        };
        agent.put_set(set.clone(), desired.clone()).await.unwrap();
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let inventory = agent.inventory(None);
            if inventory
                .instances
                .iter()
                .all(|i| i.state == InstanceState::Running)
            {
                break;
            }
            assert!(Instant::now() < deadline, "10k sim instances did not all run");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let took = began.elapsed();
        assert!(took < Duration::from_secs(10), "took {took:?}");
        // Idempotent at scale too.
        agent.put_set(set, desired).await.unwrap();

        let id = InstanceId::parse("svc.main.r1.7").unwrap();
        agent
            .set_faults(SimFaults {
                crash: vec![id.clone()],
                ..SimFaults::default()
            })
            .unwrap();
        loop {
            let status = agent
                .inventory(None)
                .instances
                .into_iter()
                .find(|i| i.id == id)
                .unwrap();
            if status.restarts == 1 && status.state == InstanceState::Running {
                assert_eq!(status.exit_code, Some(137));
                break;
            }
            assert!(
                Instant::now() < deadline,
                "the crashed instance did not restart: {status:?}"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}
