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

mod clients;
mod host;
mod panics;
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
}

impl SimOptions {
    /// Three nodes, four clients, three keys, 15 simulated seconds.
    pub fn new(seed: u64) -> Self {
        Self {
            seed,
            nodes: 3,
            clients: 4,
            keys: 3,
            duration: Duration::from_secs(15),
            planted_stale_read: false,
            planted_no_fsync: false,
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
            "sim seed {}: {} register ops ({} unknown, {} writes), {} acknowledged creates, {} faults, \
             {} violations, digest {:016x}, {} ms",
            self.seed,
            self.register_ops,
            self.unknown,
            self.register_writes,
            self.acknowledged,
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
}

const FAULTS: [Fault; 5] = [
    Fault::IsolateLeader,
    Fault::IsolateRandom,
    Fault::CrashLeader,
    Fault::CrashRandom,
    Fault::Hold,
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

    let schedule = schedule(&mut rng, options.duration);
    if let Err(e) = drive(&mut sim, &schedule, &ids, &registry, &mut rng, &mut outcome) {
        outcome.violations.push(format!("the simulation failed: {e}"));
    }
    drop(sim);

    let history = history.borrow();
    check(&history, statuses.borrow().as_deref(), ids.len(), &mut outcome);
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
fn schedule(rng: &mut Rng, duration: Duration) -> Vec<Scheduled> {
    let mut plan = Vec::new();
    let mut at = Duration::from_secs(1);
    let mut kind = rng.below(FAULTS.len() as u64) as usize;
    loop {
        let held = Duration::from_millis(500 + rng.below(3000));
        if at + held + Duration::from_secs(1) > duration {
            return plan;
        }
        plan.push(Scheduled {
            start: at,
            heal: at + held,
            fault: FAULTS[kind % FAULTS.len()],
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
    /// Links partitioned or held.
    cut: Vec<(u64, u64)>,
    /// Hosts crashed.
    crashed: Vec<u64>,
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
                sim.repair(host_name(a), host_name(b));
                sim.release(host_name(a), host_name(b));
            }
            for id in injected.crashed {
                sim.bounce(host_name(id));
            }
        }
        if active.is_none() && next < schedule.len() && now >= schedule[next].start {
            let planned = &schedule[next];
            next += 1;
            let random = ids[rng.below(ids.len() as u64) as usize];
            let target = match planned.fault {
                Fault::IsolateLeader | Fault::CrashLeader => leader(registry, sim, ids).unwrap_or(random),
                _ => random,
            };
            let others: Vec<u64> = ids.iter().copied().filter(|id| *id != target).collect();
            let (mut cut, mut crashed) = (Vec::new(), Vec::new());
            match planned.fault {
                Fault::IsolateLeader | Fault::IsolateRandom => {
                    for other in &others {
                        sim.partition(host_name(target), host_name(*other));
                        cut.push((target, *other));
                    }
                }
                Fault::CrashLeader | Fault::CrashRandom => {
                    sim.crash(host_name(target));
                    crashed.push(target);
                }
                Fault::Hold => {
                    let other = others[rng.below(others.len() as u64) as usize];
                    sim.hold(host_name(target), host_name(other));
                    cut.push((target, other));
                }
            }
            outcome.faults.push(format!(
                "{:?} node {target} at {} ms for {} ms",
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

/// FNV-1a over the recorded register history.
fn digest(history: &SimHistory) -> u64 {
    let bytes = serde_json::to_vec(&history.register).unwrap_or_default();
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, byte| {
        (hash ^ u64::from(*byte)).wrapping_mul(0x0100_0000_01b3)
    })
}
