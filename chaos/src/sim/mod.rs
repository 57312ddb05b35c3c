//! Deterministic simulation: the register workload and the same checkers as the real-process
//! harness, over an in-process three-node cluster whose network, clock, disks and randomness
//! belong to a turmoil simulation driven by one seed. What runs on each simulated host is the
//! node's own Raft: [`drover_raft::RaftHandle`] with its elector (pre-vote), group commit,
//! forwarding of writes and read indexes to the leader, and the log store and state machine
//! of the RocksDB store, through the seams of [`drover_raft::Seams`] — peers over simulated TCP
//! ([`transport`]), a [`drover_raft::MemDisk`] that a crash cuts back to what was synced, and
//! simulated time for the leader's clock. What is simulated is only the edge: TCP between hosts
//! (latency, partitions, held messages), time, power cuts. The node's HTTP layer and RocksDB
//! itself are not inside — the real-process harness covers those. A run of 15 simulated
//! seconds takes about a real second, so CI runs a hundred seeds. One seed replays one run's
//! choices exactly; the interleaving matches too except where openraft's core uses
//! `futures::select!`, whose tie-breaking draws from a process-wide generator (the digest
//! printed per run shows whether a replay matched).

mod agents;
mod clients;
mod host;
mod panics;
mod services;
mod transport;
mod wire;

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};
use std::rc::Rc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use drover_raft::{MemDisk, RaftConfig};
use serde::Serialize;

use crate::checker::linearizable;
use crate::rng::Rng;
use clients::{ClientPlan, SharedHistory, SimHistory};
use host::{host_name, HostSetup, Registry};
use wire::{call, Request, Response};

/// What one simulated run does.
#[derive(Debug, Clone)]
pub struct SimOptions {
    /// The seed: one seed, one run.
    pub seed: u64,
    /// Cluster size.
    pub nodes: u64,
    /// Concurrent clients.
    pub clients: usize,
    /// Register keys.
    pub keys: u64,
    /// Simulated time of workload and faults.
    pub duration: Duration,
    /// Serve reads from the local replica without a read index (the planted bug the checker
    /// must find).
    pub planted_stale_read: bool,
    /// Disks whose fsync of a log append lies, so a crash loses acknowledged entries (the other
    /// planted bug: a missing fsync, which killing real processes cannot show, since the
    /// kernel's page cache keeps their unsynced writes; see [`MemDisk::planted_lying_fsync`]).
    pub planted_no_fsync: bool,
    /// Clients of the services workload (0: none, and no agents or actors run).
    pub service_clients: usize,
}

impl SimOptions {
    /// Three nodes, four clients, three keys, 15 simulated seconds, no services.
    pub fn new(seed: u64) -> Self {
        Self {
            seed,
            nodes: 3,
            clients: 4,
            keys: 3,
            duration: Duration::from_secs(15),
            planted_stale_read: false,
            planted_no_fsync: false,
            service_clients: 0,
        }
    }
}

/// What one simulated run found.
#[derive(Debug, Clone, Serialize)]
pub struct SimOutcome {
    /// The seed.
    pub seed: u64,
    /// Register operations checked.
    pub register_ops: usize,
    /// Of those, with an unknown outcome.
    pub unknown: usize,
    /// Successful register writes (creates and swaps).
    pub register_writes: usize,
    /// Acknowledged unique creates.
    pub acknowledged: usize,
    /// Requests that certainly did nothing.
    pub not_applied: u64,
    /// Service changes acknowledged.
    pub service_changes: u64,
    /// Service changes with an unknown outcome.
    pub service_unknown: u64,
    /// Instances found running as the state asks, on the agents, after healing.
    pub instances_checked: usize,
    /// The faults injected, in order.
    pub faults: Vec<String>,
    /// Every broken promise.
    pub violations: Vec<String>,
    /// A digest of the recorded history, to compare replays of one seed.
    pub digest: u64,
    /// Real time the run took, in ms.
    pub wall_ms: u64,
}

impl SimOutcome {
    /// One line: what ran, what was found.
    pub fn summary(&self) -> String {
        format!(
            "sim seed {}: {} register ops ({} unknown, {} writes), {} acknowledged creates, {} service \
             changes ({} unknown), {} instances checked, {} faults, {} violations, digest {:016x}, {} ms",
            self.seed,
            self.register_ops,
            self.unknown,
            self.register_writes,
            self.acknowledged,
            self.service_changes,
            self.service_unknown,
            self.instances_checked,
            self.faults.len(),
            self.violations.len(),
            self.digest,
            self.wall_ms
        )
    }
}

/// Runs `count` seeds from `first` with `template`'s other settings, spread over `threads`
/// threads (each simulation is single-threaded); outcomes in seed order.
pub fn simulate_seeds(first: u64, count: u64, template: &SimOptions, threads: usize) -> Vec<SimOutcome> {
    let next = std::sync::atomic::AtomicU64::new(first);
    let end = first.saturating_add(count);
    let found = Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for _ in 0..threads.max(1) {
            scope.spawn(|| loop {
                let seed = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                if seed >= end {
                    return;
                }
                let outcome = simulate(&SimOptions {
                    seed,
                    ..template.clone()
                });
                found.lock().unwrap_or_else(|p| p.into_inner()).push(outcome);
            });
        }
    });
    let mut outcomes = found.into_inner().unwrap_or_else(|p| p.into_inner());
    outcomes.sort_by_key(|outcome| outcome.seed);
    outcomes
}

/// One fault the driver injects and later heals.
#[derive(Debug, Clone, Copy)]
enum Fault {
    /// The leader cut off from the other nodes (clients still reach it).
    IsolateLeader,
    /// A random node cut off from the other nodes.
    IsolateRandom,
    /// The leader's host crashed, restarted later.
    CrashLeader,
    /// A random host crashed, restarted later.
    CrashRandom,
    /// Messages between two nodes held, then delivered late.
    Hold,
    /// An agent's host crashed, restarted later (its state files survive).
    CrashAgent,
    /// An agent cut off from every member: its cluster flaps.
    IsolateAgent,
}

const FAULTS: [Fault; 5] = [
    Fault::IsolateLeader,
    Fault::IsolateRandom,
    Fault::CrashLeader,
    Fault::CrashRandom,
    Fault::Hold,
];

/// The faults of a run with services: the agents' too.
const FAULTS_WITH_AGENTS: [Fault; 7] = [
    Fault::IsolateLeader,
    Fault::IsolateRandom,
    Fault::CrashLeader,
    Fault::CrashRandom,
    Fault::Hold,
    Fault::CrashAgent,
    Fault::IsolateAgent,
];

/// How long after healing the nodes have to agree.
const CONVERGE_WITHIN: Duration = Duration::from_secs(20);

/// A node's default timings, with snapshots small enough that logs are purged and laggards
/// get snapshots, and a request timeout shorter than the clients' patience.
fn raft_config() -> RaftConfig {
    RaftConfig {
        rpc_timeout: Duration::from_millis(500),
        request_timeout: Duration::from_secs(1),
        snapshot_every_logs: 300,
        logs_kept_after_snapshot: 50,
        watch_history: 1_000,
        ..RaftConfig::default()
    }
}

/// Runs one seed.
pub fn simulate(options: &SimOptions) -> SimOutcome {
    let started = Instant::now();
    panics::record_on_this_thread();
    // openraft's election timeouts, drawn from the seed on this thread (every host runs here).
    let mut timeouts = Rng::new(options.seed);
    drover_raft::runtime::draw_from(move || timeouts.next_u64());
    let mut rng = Rng::new(options.seed);
    let mut outcome = SimOutcome {
        seed: options.seed,
        register_ops: 0,
        unknown: 0,
        register_writes: 0,
        acknowledged: 0,
        not_applied: 0,
        service_changes: 0,
        service_unknown: 0,
        instances_checked: 0,
        faults: Vec::new(),
        violations: Vec::new(),
        digest: 0,
        wall_ms: 0,
    };
    let config = raft_config();
    let mut sim = turmoil::Builder::new()
        .rng_seed(options.seed)
        .simulation_duration(options.duration + CONVERGE_WITHIN + Duration::from_secs(30))
        .tick_duration(Duration::from_millis(1))
        .min_message_latency(Duration::from_micros(200))
        .max_message_latency(Duration::from_millis(5))
        // One connection per request: a held link releases hundreds of them at once.
        .tcp_capacity(1 << 16)
        .build();

    let ids: Vec<u64> = (1..=options.nodes).collect();
    let registry: Registry = Arc::default();
    for id in &ids {
        let disk = MemDisk::new();
        if options.planted_no_fsync {
            disk.planted_lying_fsync();
        }
        let setup = HostSetup {
            id: *id,
            disk,
            members: ids.clone(),
            config: config.clone(),
            planted_stale_read: options.planted_stale_read,
            actors: options.service_clients > 0,
        };
        let registry = registry.clone();
        sim.host(host_name(*id), move || {
            let setup = setup.clone();
            let registry = registry.clone();
            host::run(setup, registry)
        });
    }

    let history: SharedHistory = Rc::new(RefCell::new(SimHistory::default()));
    for id in 0..options.clients {
        let plan = ClientPlan {
            id,
            rng: rng.fork(),
            nodes: options.nodes,
            keys: options.keys,
            until: options.duration,
        };
        sim.client(format!("client-{id}"), clients::run(plan, history.clone()));
    }
    let statuses: Rc<RefCell<Option<Vec<NodeStatus>>>> = Rc::default();
    sim.client(
        "verifier",
        verify(ids.clone(), options.duration, statuses.clone()),
    );

    let services_history: services::SharedServices = Rc::default();
    let found: Rc<RefCell<Option<ServicesFound>>> = Rc::default();
    // The agents' state directories outlive their hosts, and the run.
    let mut agent_dirs = Vec::new();
    if options.service_clients > 0 {
        for n in 1..=services::AGENTS {
            let dir = match agent_dir() {
                Ok(dir) => dir,
                Err(e) => {
                    outcome.violations.push(format!("no directory for an agent: {e}"));
                    return outcome;
                }
            };
            let setup = agents::AgentSetup {
                name: agents::agent_host(n),
                data_dir: dir.path().to_path_buf(),
            };
            agent_dirs.push(dir);
            sim.host(agents::agent_host(n), move || agents::run(setup.clone()));
        }
        sim.client(
            "setup",
            services::set_up(rng.fork(), options.nodes, services_history.clone()),
        );
        for id in 0..options.service_clients {
            let plan = services::ServicePlan {
                id,
                rng: rng.fork(),
                nodes: options.nodes,
                until: options.duration,
            };
            sim.client(
                format!("service-client-{id}"),
                services::run_client(plan, services_history.clone()),
            );
        }
        sim.client(
            "fence-sampler",
            services::sample_fences(options.duration, services_history.clone()),
        );
        sim.client(
            "services-verifier",
            verify_services(ids.clone(), options.duration, found.clone()),
        );
    }

    let faults: &[Fault] = if options.service_clients > 0 {
        &FAULTS_WITH_AGENTS
    } else {
        &FAULTS
    };
    let schedule = schedule(&mut rng, options.duration, faults);
    if let Err(e) = drive(&mut sim, &schedule, &ids, &registry, &mut rng, &mut outcome) {
        outcome.violations.push(format!("the simulation failed: {e}"));
    }
    drop(sim);
    drop(agent_dirs);

    let history = history.borrow();
    check(&history, statuses.borrow().as_deref(), ids.len(), &mut outcome);
    if options.service_clients > 0 {
        check_services(&services_history.borrow(), found.borrow().as_ref(), &mut outcome);
    }
    outcome.wall_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
    outcome
}

/// A fault with its start and its heal, both in simulated time.
struct Scheduled {
    start: Duration,
    heal: Duration,
    fault: Fault,
}

/// Non-overlapping faults from 1 s to 1 s before the end, every kind in turn from a seeded start.
fn schedule(rng: &mut Rng, duration: Duration, faults: &[Fault]) -> Vec<Scheduled> {
    let mut plan = Vec::new();
    let mut at = Duration::from_secs(1);
    let mut kind = rng.below(faults.len() as u64) as usize;
    loop {
        let held = Duration::from_millis(500 + rng.below(3000));
        if at + held + Duration::from_secs(1) > duration {
            return plan;
        }
        plan.push(Scheduled {
            start: at,
            heal: at + held,
            fault: faults[kind % faults.len()],
        });
        kind += 1;
        at += held + Duration::from_millis(300 + rng.below(1500));
    }
}

fn leader(registry: &Registry, sim: &mut turmoil::Sim<'_>, ids: &[u64]) -> Option<u64> {
    let running: BTreeSet<u64> = ids
        .iter()
        .copied()
        .filter(|id| sim.is_host_running(host_name(*id)))
        .collect();
    let registry = registry.lock().unwrap_or_else(|p| p.into_inner());
    registry
        .iter()
        .filter(|(id, _)| running.contains(id))
        .find(|(_, handle)| handle.leadership().borrow().is_self)
        .map(|(id, _)| *id)
}

/// What the current fault did, to undo at its heal time.
struct Injected {
    heal: Duration,
    /// Links partitioned or held, by host name.
    cut: Vec<(String, String)>,
    /// Hosts crashed.
    crashed: Vec<String>,
}

/// Steps the simulation, injecting and healing the scheduled faults, until every client is done.
fn drive(
    sim: &mut turmoil::Sim<'_>,
    schedule: &[Scheduled],
    ids: &[u64],
    registry: &Registry,
    rng: &mut Rng,
    outcome: &mut SimOutcome,
) -> turmoil::Result {
    let mut next = 0;
    let mut active: Option<Injected> = None;
    loop {
        let now = sim.elapsed();
        if let Some(injected) = active.take_if(|injected| now >= injected.heal) {
            for (a, b) in injected.cut {
                sim.repair(a.as_str(), b.as_str());
                sim.release(a.as_str(), b.as_str());
            }
            for host in injected.crashed {
                sim.bounce(host);
            }
        }
        if active.is_none() && next < schedule.len() && now >= schedule[next].start {
            let planned = &schedule[next];
            next += 1;
            let random = ids[rng.below(ids.len() as u64) as usize];
            let node = match planned.fault {
                Fault::IsolateLeader | Fault::CrashLeader => leader(registry, sim, ids).unwrap_or(random),
                _ => random,
            };
            let target = match planned.fault {
                Fault::CrashAgent | Fault::IsolateAgent => {
                    agents::agent_host(1 + rng.below(services::AGENTS as u64) as usize)
                }
                _ => host_name(node),
            };
            let others: Vec<String> = ids
                .iter()
                .map(|id| host_name(*id))
                .filter(|host| *host != target)
                .collect();
            let (mut cut, mut crashed) = (Vec::new(), Vec::new());
            match planned.fault {
                Fault::IsolateLeader | Fault::IsolateRandom | Fault::IsolateAgent => {
                    for other in others {
                        sim.partition(target.as_str(), other.as_str());
                        cut.push((target.clone(), other));
                    }
                }
                Fault::CrashLeader | Fault::CrashRandom | Fault::CrashAgent => {
                    sim.crash(target.as_str());
                    crashed.push(target.clone());
                }
                Fault::Hold => {
                    let other = others[rng.below(others.len() as u64) as usize].clone();
                    sim.hold(target.as_str(), other.as_str());
                    cut.push((target.clone(), other));
                }
            }
            outcome.faults.push(format!(
                "{:?} {target} at {} ms for {} ms",
                planned.fault,
                planned.start.as_millis(),
                (planned.heal - planned.start).as_millis()
            ));
            active = Some(Injected {
                heal: planned.heal,
                cut,
                crashed,
            });
        }
        let finished = sim.step()?;
        if let Some(panic) = panics::take().into_iter().next() {
            outcome.violations.push(format!(
                "a node panicked at {} ms: {panic}",
                sim.elapsed().as_millis()
            ));
            return Ok(());
        }
        if finished {
            return Ok(());
        }
    }
}

/// What a node reported after healing.
#[derive(Debug, Clone, PartialEq, Eq)]
struct NodeStatus {
    applied: u64,
    objects: Vec<(String, String, u64)>,
}

/// After the workload: waits until every node has applied the same index and holds the same
/// objects, or until [`CONVERGE_WITHIN`] has passed; records the last statuses it saw.
async fn verify(
    ids: Vec<u64>,
    workload: Duration,
    statuses: Rc<RefCell<Option<Vec<NodeStatus>>>>,
) -> turmoil::Result {
    tokio::time::sleep(workload + Duration::from_secs(1)).await;
    let deadline = tokio::time::Instant::now() + CONVERGE_WITHIN;
    loop {
        let mut seen = Vec::new();
        for id in &ids {
            if let Ok(Response::Inventory { applied, objects }) =
                call(&host_name(*id), &Request::Inventory, Duration::from_secs(1)).await
            {
                seen.push(NodeStatus { applied, objects });
            }
        }
        let agreed = seen.len() == ids.len() && seen.windows(2).all(|pair| pair[0] == pair[1]);
        *statuses.borrow_mut() = Some(seen);
        if agreed || tokio::time::Instant::now() >= deadline {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

fn check(history: &SimHistory, statuses: Option<&[NodeStatus]>, nodes: usize, outcome: &mut SimOutcome) {
    outcome.register_ops = history.register.len();
    outcome.unknown = history
        .register
        .iter()
        .filter(|op| op.op.returned.is_none())
        .count();
    outcome.register_writes = history
        .register
        .iter()
        .filter(|op| {
            op.op.returned.is_some()
                && matches!(
                    op.op.op,
                    linearizable::RegisterOp::Created { .. } | linearizable::RegisterOp::Swapped { .. }
                )
        })
        .count();
    outcome.acknowledged = history.acknowledged.len();
    outcome.not_applied = history.not_applied;
    outcome.digest = digest(history);

    let mut per_key: BTreeMap<&str, Vec<linearizable::Timed>> = BTreeMap::new();
    for op in &history.register {
        per_key.entry(&op.key).or_default().push(op.op.clone());
    }
    for (key, ops) in per_key {
        if let Err(violation) = linearizable::check(&ops) {
            let how = violation.verdict();
            outcome.violations.push(format!(
                "key {key}: {how}; stuck at {:?}",
                violation.stuck_at.first()
            ));
        }
    }

    let Some(statuses) = statuses else {
        outcome.violations.push("the verifier never ran".into());
        return;
    };
    if statuses.len() < nodes || !statuses.windows(2).all(|pair| pair[0] == pair[1]) {
        outcome.violations.push(format!(
            "nodes did not converge within {CONVERGE_WITHIN:?} of healing: applied indexes {:?}",
            statuses.iter().map(|s| s.applied).collect::<Vec<_>>()
        ));
    }
    for status in statuses {
        let held: BTreeSet<&str> = status.objects.iter().map(|(key, _, _)| key.as_str()).collect();
        let lost: Vec<&String> = history
            .acknowledged
            .iter()
            .filter(|key| !held.contains(key.as_str()))
            .collect();
        if !lost.is_empty() {
            outcome.violations.push(format!(
                "{} acknowledged creates missing on a node (applied {}): {:?}",
                lost.len(),
                status.applied,
                lost.iter().take(3).collect::<Vec<_>>()
            ));
        }
    }
}

/// What the services verifier saw last: the state's services and every agent's inventory.
struct ServicesFound {
    held: Option<BTreeMap<String, services::Held>>,
    inventories: Vec<(String, Option<drover_model::cluster::agent_api::Inventory>)>,
}

/// How long after healing the agents have to run what the state holds: a service whose
/// cluster was cut off moves after [`host`]'s offline limit, and its old copies go once the
/// cluster answers again.
const SERVICES_CONVERGE_WITHIN: Duration = Duration::from_secs(30);

/// After the workload: waits until the agents run exactly what the state holds and no
/// deletion is pending, or until [`SERVICES_CONVERGE_WITHIN`]; records what it saw last.
async fn verify_services(
    ids: Vec<u64>,
    workload: Duration,
    found: Rc<RefCell<Option<ServicesFound>>>,
) -> turmoil::Result {
    tokio::time::sleep(workload + Duration::from_secs(1)).await;
    let deadline = tokio::time::Instant::now() + SERVICES_CONVERGE_WITHIN;
    let mut turn = 0usize;
    loop {
        turn += 1;
        let held = services::read_services(ids[turn % ids.len()]).await;
        let inventories = services::inventories().await;
        let answered: Vec<(String, drover_model::cluster::agent_api::Inventory)> = inventories
            .iter()
            .filter_map(|(agent, inventory)| inventory.clone().map(|i| (agent.clone(), i)))
            .collect();
        let agreed = held.as_ref().is_some_and(|held| {
            answered.len() == inventories.len()
                && held.values().all(|h| !h.deleting)
                && services::differences(held, &answered).is_empty()
        });
        *found.borrow_mut() = Some(ServicesFound { held, inventories });
        if agreed || tokio::time::Instant::now() >= deadline {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

fn check_services(
    history: &services::ServiceHistory,
    found: Option<&ServicesFound>,
    outcome: &mut SimOutcome,
) {
    outcome.service_changes = history.acknowledged;
    outcome.service_unknown = history.unknown;
    if !history.set_up {
        outcome
            .violations
            .push("the services setup never finished".into());
        return;
    }
    outcome.violations.extend(services::fences_gone_back(history));
    let Some(found) = found else {
        outcome.violations.push("the services verifier never ran".into());
        return;
    };
    let Some(held) = &found.held else {
        outcome
            .violations
            .push("no member answered for the services after healing".into());
        return;
    };
    let answered: Vec<(String, drover_model::cluster::agent_api::Inventory)> = found
        .inventories
        .iter()
        .filter_map(|(agent, inventory)| inventory.clone().map(|i| (agent.clone(), i)))
        .collect();
    if answered.len() < found.inventories.len() {
        outcome
            .violations
            .push("an agent did not answer after healing".into());
    }
    let differences = services::differences(held, &answered);
    if differences.is_empty() {
        outcome.instances_checked = answered.iter().map(|(_, i)| i.instances.len()).sum();
    } else {
        outcome.violations.push(format!(
            "the agents did not converge on the accepted revisions within {SERVICES_CONVERGE_WITHIN:?}: {}",
            differences.join("; ")
        ));
    }
    if let Some(deleting) = held.iter().find(|(_, h)| h.deleting) {
        outcome.violations.push(format!(
            "{} is still being deleted after healing ({})",
            deleting.0, deleting.1.note
        ));
    }
    outcome
        .violations
        .extend(services::lost_acknowledgements(history, held));
}

/// A state directory for a simulated agent: in memory where the machine has `/dev/shm`.
fn agent_dir() -> std::io::Result<tempfile::TempDir> {
    let shm = std::path::Path::new("/dev/shm");
    if shm.is_dir() {
        if let Ok(dir) = tempfile::Builder::new()
            .prefix("drover-sim-agent")
            .tempdir_in(shm)
        {
            return Ok(dir);
        }
    }
    tempfile::Builder::new().prefix("drover-sim-agent").tempdir()
}

/// FNV-1a over the recorded register history.
fn digest(history: &SimHistory) -> u64 {
    let bytes = serde_json::to_vec(&history.register).unwrap_or_default();
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, byte| {
        (hash ^ u64::from(*byte)).wrapping_mul(0x0100_0000_01b3)
    })
}
