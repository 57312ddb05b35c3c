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
//! seconds takes a few real seconds, so CI runs a hundred seeds.
//!
//! One seed is one run, bit for bit, in any process and on any thread: every draw comes from the
//! seed (the clients', the faults', turmoil's latencies, openraft's and the elector's timeouts
//! through [`drover_raft::runtime`], and tokio's own generator — `select!` ties, the order a watch
//! channel wakes its waiters in — which turmoil seeds per host because tokio is built with
//! `--cfg tokio_unstable`); time is simulated, wall clocks included (the epoch is fixed, the
//! agents stamp simulated time); nothing runs on another thread (the agents write their files in
//! place on a host's single-threaded runtime); what decides an order is ordered (the actors'
//! maps, ractor's supervision tree, patched in `vendor/`); and a crash sends nothing (see
//! `crash`). [`SimOptions::replay`] runs a seed twice and compares the digests of everything the
//! two runs recorded; `DROVER_SIM_LOG`'s lines carry simulated time ([`log`]).

// turmoil seeds each simulated host's tokio runtime from the run's seed only when tokio is built
// with `--cfg tokio_unstable` (.cargo/config.toml sets it); otherwise tokio's own generator,
// which breaks `select!` ties and spreads a watch channel's waiters over its notifiers (and so
// orders their wake-ups), is seeded from the process's entropy and no seed replays.
#[cfg(not(tokio_unstable))]
compile_error!(
    "the simulation needs tokio built with `--cfg tokio_unstable` (see .cargo/config.toml): \
     without it no seed replays"
);

mod agents;
mod clients;
mod host;
pub mod log;
mod panics;
mod services;
mod transport;
mod wire;
mod world;

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::panic::AssertUnwindSafe;
use std::rc::Rc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use drover_raft::{MemDisk, RaftConfig};
use serde::Serialize;

use crate::checker::linearizable;
use crate::rng::Rng;
use clients::{ClientPlan, SharedHistory, SimHistory};
use host::{HostSetup, Registry};
use wire::{call, Request, Response};
use world::host_name;

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
    /// Run the seed a second time in this process and compare the two runs' digests.
    pub replay: bool,
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
            replay: false,
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
    /// A digest of everything the run recorded (the clients' histories, the faults, what the
    /// verifiers saw last, the violations), to compare replays of one seed.
    pub digest: u64,
    /// With [`SimOptions::replay`]: the digest of the seed's second run in this process.
    pub replay_digest: Option<u64>,
    /// Real time the run took, in ms.
    pub wall_ms: u64,
}

impl SimOutcome {
    /// Whether the seed was replayed and its replay recorded something else.
    pub fn replay_differs(&self) -> bool {
        self.replay_digest.is_some_and(|replayed| replayed != self.digest)
    }

    /// One line: what ran, what was found.
    pub fn summary(&self) -> String {
        let replay = match self.replay_digest {
            None => String::new(),
            Some(replayed) if replayed == self.digest => ", replayed: same".to_string(),
            Some(replayed) => format!(", REPLAY DIFFERS: digest {replayed:016x}"),
        };
        format!(
            "sim seed {}: {} register ops ({} unknown, {} writes), {} acknowledged creates, {} service \
             changes ({} unknown), {} instances checked, {} faults, {} violations, digest {:016x}{replay}, {} ms",
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

/// Runs one seed; with [`SimOptions::replay`], twice, the second run's digest recorded beside
/// the first's (the outcome is the first run's).
pub fn simulate(options: &SimOptions) -> SimOutcome {
    let mut outcome = run_once(options);
    if options.replay {
        let replayed = run_once(options);
        outcome.replay_digest = Some(replayed.digest);
        outcome.wall_ms = outcome.wall_ms.saturating_add(replayed.wall_ms);
    }
    outcome
}

/// 2026-11-22T00:00:00Z, where simulated time starts (turmoil's default is the real time the
/// simulation is built at, which a replay cannot repeat: the leader's clock, stamped on every
/// proposal, and the agents' clocks count from it).
const EPOCH: Duration = Duration::from_secs(1_795_305_600);

fn run_once(options: &SimOptions) -> SimOutcome {
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
        replay_digest: None,
        wall_ms: 0,
    };
    let config = raft_config();
    let mut sim = turmoil::Builder::new()
        .rng_seed(options.seed)
        .epoch(std::time::UNIX_EPOCH + EPOCH)
        .simulation_duration(options.duration + CONVERGE_WITHIN + Duration::from_secs(30))
        .tick_duration(Duration::from_millis(1))
        .min_message_latency(Duration::from_micros(200))
        .max_message_latency(Duration::from_millis(5))
        // One connection per request: a held link releases hundreds of them at once.
        .tcp_capacity(1 << 16)
        .build();

    let ids: Vec<u64> = (1..=options.nodes).collect();
    let registry: Registry = Arc::default();
    // Every host's and client's name, for the crashes (see `crash`).
    let mut hosts = Vec::new();
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
        hosts.push(host_name(*id));
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
        hosts.push(format!("client-{id}"));
        sim.client(format!("client-{id}"), clients::run(plan, history.clone()));
    }
    let statuses: Rc<RefCell<Option<Vec<NodeStatus>>>> = Rc::default();
    hosts.push("verifier".into());
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
            let dir = match agent_dir(options.seed, n) {
                Ok(dir) => dir,
                Err(e) => {
                    outcome.violations.push(format!("no directory for an agent: {e}"));
                    return outcome;
                }
            };
            // Its id drawn from the seed, not from the system's entropy as a new agent draws it.
            if let Err(e) = agents::give_identity(dir.path(), &mut rng) {
                outcome.violations.push(format!("no identity for an agent: {e}"));
                return outcome;
            }
            let setup = agents::AgentSetup {
                name: agents::agent_host(n),
                data_dir: dir.path().to_path_buf(),
            };
            agent_dirs.push(dir);
            hosts.push(agents::agent_host(n));
            sim.host(agents::agent_host(n), move || agents::run(setup.clone()));
        }
        hosts.extend(["setup", "fence-sampler", "services-verifier"].map(String::from));
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
            hosts.push(format!("service-client-{id}"));
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
    let places = Places {
        ids: &ids,
        hosts: &hosts,
        registry: &registry,
    };
    if let Err(e) = drive(&mut sim, &schedule, &places, &mut rng, &mut outcome) {
        outcome.violations.push(format!("the simulation failed: {e}"));
    }
    // A runtime that shut down on a panic may panic again as it is dropped.
    let _ = std::panic::catch_unwind(AssertUnwindSafe(move || drop(sim)));
    drop(agent_dirs);

    let history = history.borrow();
    check(&history, statuses.borrow().as_deref(), ids.len(), &mut outcome);
    if options.service_clients > 0 {
        check_services(&services_history.borrow(), found.borrow().as_ref(), &mut outcome);
    }
    outcome.digest = {
        let mut digest = Fnv::default();
        digest.add(&serde_json::to_vec(&history.register).unwrap_or_default());
        let _ = write!(
            digest,
            "{:?} {} {:?} {:?} {:?} {:?} {:?}",
            history.acknowledged,
            history.not_applied,
            statuses.borrow(),
            services_history.borrow(),
            found.borrow().as_ref().map(|f| (&f.held, &f.inventories)),
            outcome.faults,
            outcome.violations
        );
        digest.0
    };
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

/// Who is where in a run.
struct Places<'a> {
    /// The members' ids.
    ids: &'a [u64],
    /// Every host and client by name.
    hosts: &'a [String],
    /// The members' handles.
    registry: &'a Registry,
}

/// Crashes `target` as a power cut does, sending nothing: tokio drops a crashed runtime's tasks in
/// an order of its own (by task ids, which count across the process), and each socket dropped
/// would send a FIN or RST that draws a latency from the seed's generator in that order — a
/// replay would draw them in another. So nothing leaves `target` while it crashes; what it
/// sent before the crash and had not arrived yet is lost with it.
fn crash(sim: &mut turmoil::Sim<'_>, target: &str, hosts: &[String]) {
    let others: Vec<&String> = hosts.iter().filter(|host| *host != target).collect();
    for other in &others {
        sim.partition_oneway(target, other.as_str());
    }
    sim.crash(target);
    for other in &others {
        sim.repair_oneway(target, other.as_str());
    }
}

/// Steps the simulation, injecting and healing the scheduled faults, until every client is done.
fn drive(
    sim: &mut turmoil::Sim<'_>,
    schedule: &[Scheduled],
    places: &Places<'_>,
    rng: &mut Rng,
    outcome: &mut SimOutcome,
) -> turmoil::Result {
    let Places { ids, hosts, registry } = *places;
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
                    crash(sim, &target, hosts);
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
        // A task's panic shuts its host's runtime down (turmoil's setting with tokio_unstable)
        // and the step panics with it; the panic was recorded all the same, and is reported here.
        let finished = match std::panic::catch_unwind(AssertUnwindSafe(|| sim.step())) {
            Ok(stepped) => stepped?,
            Err(_) => true,
        };
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
    held: Option<BTreeMap<String, wire::Held>>,
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

/// A new state directory for simulated agent `n` of `seed`, in memory where the machine has
/// `/dev/shm`: named after the seed and the agent, so that a replay's log names the same one
/// (a number is added while a run of the same seed holds that name).
fn agent_dir(seed: u64, n: usize) -> std::io::Result<tempfile::TempDir> {
    let shm = std::path::Path::new("/dev/shm");
    let parent = if shm.is_dir() {
        shm.to_path_buf()
    } else {
        std::env::temp_dir()
    };
    let name = format!("drover-sim-seed{seed}-agent{n}");
    let mut last = None;
    for taken in 0..100 {
        let name = if taken == 0 {
            name.clone()
        } else {
            format!("{name}-{taken}")
        };
        match tempfile::Builder::new()
            .prefix(&name)
            .rand_bytes(0)
            .tempdir_in(&parent)
        {
            Ok(dir) => return Ok(dir),
            Err(e) => last = Some(e),
        }
    }
    Err(last.unwrap_or_else(|| std::io::Error::other("no name left")))
}

/// FNV-1a, over bytes or what is written to it.
struct Fnv(u64);

impl Default for Fnv {
    fn default() -> Self {
        Self(0xcbf2_9ce4_8422_2325)
    }
}

impl Fnv {
    fn add(&mut self, bytes: &[u8]) {
        for byte in bytes {
            self.0 = (self.0 ^ u64::from(*byte)).wrapping_mul(0x0100_0000_01b3);
        }
    }
}

impl std::fmt::Write for Fnv {
    fn write_str(&mut self, text: &str) -> std::fmt::Result {
        self.add(text.as_bytes());
        Ok(())
    }
}
