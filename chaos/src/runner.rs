//! One chaos run: start a cluster of `drover` processes, drive the workload, inject faults,
//! heal, wait for convergence, check the history, report.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use drover_model::cluster::agent_api::SimFaults;
use drover_tests::agent::AgentProcess;
use drover_tests::platform::{token, PlatformClient, OPERATOR_SUBJECT};
use drover_tests::process::ProcessCluster;
use drover_tests::services::tenant_with_clusters;
use drover_tests::status::applied_index;
use drover_tests::wait::eventually;
use serde_json::Value;

use crate::checker::{linearizable, mutex};
use crate::config::RunConfig;
use crate::faults::{self, FaultKind};
use crate::history::{History, Recorder};
use crate::report::{FaultRecord, Report};
use crate::rng::Rng;
use crate::service_workload::{self, Known, Observed, ServiceHistory};
use crate::workload::{self, DURABLE_NAMESPACE, REGISTER_NAMESPACE};
use crate::{nemesis, pool_workload};

/// The longest time the history allows for the cluster to converge after healing.
const CONVERGENCE: Duration = Duration::from_secs(30);
/// The longest time the agents may take, after healing, to run what the services' accepted
/// revisions ask for.
const SERVICE_CONVERGENCE: Duration = Duration::from_secs(60);

/// One agent of the services workload and the cluster it is registered as.
struct ChaosAgent {
    cluster: &'static str,
    process: AgentProcess,
    sim: bool,
}

impl ChaosAgent {
    fn observed(&self) -> Observed {
        Observed {
            cluster: self.cluster.to_string(),
            client: self.process.client(),
            instances_dir: (!self.sim).then(|| self.process.instances_dir()),
        }
    }
}

/// The agent faults, in the order they take turns (from a seeded start).
const AGENT_FAULTS: [FaultKind; 3] = [
    FaultKind::KillAgent,
    FaultKind::PauseAgent,
    FaultKind::FlapCluster,
];

/// Until `until`: rests 2–4 s, then, taking turns, kills or pauses a random agent for 1.5–4 s or
/// makes the `sim` agent unreachable for 4–7 s (past `--cluster-offline-after`, so its services
/// move), and heals it. Returns the healed agents and what it did.
async fn agent_nemesis(
    mut agents: Vec<ChaosAgent>,
    mut rng: Rng,
    recorder: Recorder,
    until: Instant,
) -> Result<(Vec<ChaosAgent>, Vec<FaultRecord>)> {
    let mut faults = Vec::new();
    let mut turn = rng.below(AGENT_FAULTS.len() as u64) as usize;
    loop {
        tokio::time::sleep(Duration::from_millis(2_000 + rng.below(2_000))).await;
        let kind = AGENT_FAULTS[turn % AGENT_FAULTS.len()];
        turn += 1;
        let (hold, target) = if kind == FaultKind::FlapCluster {
            let sim = agents.iter().position(|a| a.sim).context("no sim agent")?;
            (4_000 + rng.below(3_000), sim)
        } else {
            (1_500 + rng.below(2_500), rng.below(agents.len() as u64) as usize)
        };
        let hold = Duration::from_millis(hold);
        if Instant::now() + hold >= until {
            return Ok((agents, faults));
        }
        let agent = &mut agents[target];
        let start = recorder.now();
        match kind {
            FaultKind::KillAgent => {
                tokio::task::block_in_place(|| agent.process.kill())?;
                tokio::time::sleep(hold).await;
                // Waits for the agent's health: off the runtime's workers.
                tokio::task::block_in_place(|| agent.process.restart())?;
            }
            FaultKind::PauseAgent => {
                let pid = agent.process.pid().context("the agent is not running")?;
                signal(pid, "-STOP")?;
                tokio::time::sleep(hold).await;
                signal(pid, "-CONT")?;
            }
            _ => {
                let client = agent.process.client();
                let unreachable = |on: bool| SimFaults {
                    unreachable: on,
                    ..SimFaults::default()
                };
                client.faults(&unreachable(true)).await?.ok::<Value>()?;
                tokio::time::sleep(hold).await;
                client.faults(&unreachable(false)).await?.ok::<Value>()?;
            }
        }
        faults.push(FaultRecord::new(kind, Vec::new(), start, recorder.now()).on_agent(agent.cluster));
    }
}

fn signal(pid: u32, which: &str) -> Result<()> {
    let status = std::process::Command::new("kill")
        .arg(which)
        .arg(pid.to_string())
        .status()?;
    anyhow::ensure!(status.success(), "kill {which} {pid} failed");
    Ok(())
}

/// Runs the workload with faults, then checks and reports.
pub async fn run(config: &RunConfig) -> Result<Report> {
    println!(
        "chaos run: seed {} ({} nodes, {} s, {} clients, faults {:?})",
        config.seed,
        config.nodes,
        config.duration.as_secs(),
        config.clients,
        config.faults
    );
    let mut rng = Rng::new(config.seed);
    nemesis::prepare(&config.faults)?;
    let pools = tempfile::NamedTempFile::new()?;
    std::fs::write(pools.path(), pool_workload::pools_yaml())?;
    let keys = tempfile::tempdir()?;
    // The binary's default timings: the figures are the ones an operator gets.
    let mut args = vec![
        format!("--pools={}", pools.path().display()),
        format!("--reaper-expire={}", pool_workload::REAPER_EXPIRE),
    ];
    if config.service_clients > 0 {
        args.extend(drover_tests::platform::process_platform_args(keys.path())?);
        // A cluster flapped for 4–7 s goes OFFLINE, and its services may move again 5 s after
        // their last placement, so a 60 s run sees moves (the defaults are 10 s and 60 s).
        args.push("--cluster-offline-after=3s".to_string());
        args.push("--service-migration-interval=5s".to_string());
    }
    let mut cluster = ProcessCluster::start_on(config.nodes, &args, nemesis::HOSTS)?;
    let leader = cluster
        .leader(Duration::from_secs(30))
        .await
        .context("no leader at start")?;
    let nodes: Vec<String> = (1..=config.nodes).map(|id| cluster.api_addr(id)).collect();
    let recorder = Recorder::new();
    let stop = Arc::new(AtomicBool::new(false));
    let service_history: Arc<std::sync::Mutex<ServiceHistory>> = Arc::default();
    let mut agents = if config.service_clients > 0 {
        let sim = ChaosAgent {
            cluster: "sim",
            process: AgentProcess::sim(&[])?,
            sim: true,
        };
        let exec = ChaosAgent {
            cluster: "exec",
            process: AgentProcess::exec(&[])?,
            sim: false,
        };
        let as_user =
            |subject: &str| PlatformClient::new(&nodes[(leader - 1) as usize], Some(token(subject)));
        tenant_with_clusters(
            &as_user(OPERATOR_SUBJECT),
            &as_user("alice"),
            &[(&sim.process, sim.cluster), (&exec.process, exec.cluster)],
            100_000,
        )
        .await
        .context("setting up the services workload")?;
        // The registered operator may use every dialect: the other workloads speak as it.
        crate::credentials::require(token(OPERATOR_SUBJECT));
        vec![sim, exec]
    } else {
        Vec::new()
    };
    let observed: Vec<Observed> = agents.iter().map(ChaosAgent::observed).collect();
    let service_clients: Vec<_> = (0..config.service_clients)
        .map(|id| {
            tokio::spawn(service_workload::client(
                id,
                nodes.clone(),
                rng.fork(),
                recorder.clone(),
                service_history.clone(),
                stop.clone(),
            ))
        })
        .collect();
    let sampler = (!agents.is_empty()).then(|| {
        tokio::spawn(service_workload::sample_agents(
            observed.clone(),
            service_history.clone(),
            stop.clone(),
        ))
    });
    // The agents are hit on their own schedule, beside the control plane's faults (a
    // fault-free run leaves them alone too).
    let agent_faults = (!agents.is_empty() && !config.faults.is_empty()).then(|| {
        let until = Instant::now() + config.duration.saturating_sub(Duration::from_secs(4));
        let hit = std::mem::take(&mut agents);
        tokio::spawn(agent_nemesis(hit, rng.fork(), recorder.clone(), until))
    });
    let mut clients: Vec<_> = (0..config.clients)
        .map(|id| {
            tokio::spawn(workload::client(
                id,
                nodes.clone(),
                config.keys,
                rng.fork(),
                recorder.clone(),
                stop.clone(),
            ))
        })
        .collect();
    clients.extend((0..config.pool_clients).map(|id| {
        tokio::spawn(pool_workload::client(
            id,
            nodes.clone(),
            rng.fork(),
            recorder.clone(),
            stop.clone(),
        ))
    }));

    let mut fault_log = Vec::new();
    let started = Instant::now();
    let mut fault_rng = rng.fork();
    // Consecutive seeds start three kinds apart, so that three seeds of a few faults each
    // cover every kind (the short run of the test command relies on it).
    let first_kind = usize::try_from(config.seed).unwrap_or(0).wrapping_mul(3) % config.faults.len().max(1);
    let mut skipped = Vec::new();
    let mut turn = 0;
    while !config.faults.is_empty() && started.elapsed() + Duration::from_secs(4) < config.duration {
        let planned = faults::plan(&mut fault_rng, &config.faults, first_kind, turn);
        turn += 1;
        let targets = match nemesis::apply(&mut cluster, &mut fault_rng, planned.kind).await {
            Ok(targets) => targets,
            Err(e) => {
                println!("  fault {} could not be injected: {e}", planned.kind);
                skipped.push(format!("{}: {e}", planned.kind));
                tokio::time::sleep(planned.rest).await;
                continue;
            }
        };
        // The fault is in force from here (the leader lookup before it takes time too).
        let start = recorder.now();
        tokio::time::sleep(planned.hold).await;
        nemesis::heal(&mut cluster, planned.kind, &targets).await?;
        let end = recorder.now();
        fault_log.push(FaultRecord::new(planned.kind, targets, start, end));
        tokio::time::sleep(planned.rest).await;
    }
    if let Some(task) = agent_faults {
        let (healed, faults) = task.await??;
        agents = healed;
        fault_log.extend(faults);
        fault_log.sort_by_key(|fault| fault.start);
    }
    let remaining = config.duration.saturating_sub(started.elapsed());
    tokio::time::sleep(remaining).await;
    stop.store(true, Ordering::Relaxed);
    for client in clients {
        client.await?;
    }
    let mut told: BTreeMap<String, Known> = BTreeMap::new();
    for client in service_clients {
        told.extend(client.await?);
    }
    if let Some(sampler) = sampler {
        sampler.await?;
    }

    let convergence_started = Instant::now();
    let converged = converge(&nodes).await;
    let history = recorder.snapshot();
    let mut report = Report::new(config, &history, fault_log);
    report.faults_skipped = skipped;
    report.converged_ms = converged
        .as_ref()
        .ok()
        .map(|_| convergence_started.elapsed().as_millis() as u64);
    match converged {
        Ok(states) => check_durability(&history, &states, &mut report),
        Err(e) => report.violations.push(format!(
            "no convergence within {CONVERGENCE:?} after healing: {e}"
        )),
    }
    if !observed.is_empty() {
        let services = service_history.lock().unwrap_or_else(|p| p.into_inner()).clone();
        report.service_changes = services.acknowledged;
        report.service_rollbacks = services.rollbacks;
        report.service_changes_unknown = services.unknown;
        let (violations, checked) =
            service_workload::check(&nodes, &observed, &told, &services, SERVICE_CONVERGENCE).await;
        report.violations.extend(violations);
        report.service_instances_checked = checked;
        report.agent_fences_sampled = services.fences.values().map(Vec::len).sum();
        report.service_instances_moved = services.moved();
    }
    check_linearizability(&history, &mut report);
    report
        .violations
        .extend(mutex::check(&history.grants, &history.accepted));
    drop(cluster);
    // Stops the `exec` agent's instances too.
    drop(agents);
    Ok(report)
}

/// Per node: every object as (namespace/name, resourceVersion, holder).
type NodeState = BTreeSet<(String, String, String)>;

async fn node_state(http: &reqwest::Client, node: &str) -> Option<NodeState> {
    let mut state = NodeState::new();
    for namespace in [REGISTER_NAMESPACE, DURABLE_NAMESPACE] {
        let url = format!(
            "http://{node}/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases?consistency=stale"
        );
        let body: Value = http.get(url).send().await.ok()?.json().await.ok()?;
        for item in body["items"].as_array()? {
            state.insert((
                format!("{namespace}/{}", item["metadata"]["name"].as_str()?),
                item["metadata"]["resourceVersion"].as_str()?.to_string(),
                item["spec"]["holderIdentity"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
            ));
        }
    }
    Some(state)
}

/// Waits until every node has applied the same index and holds the same objects.
async fn converge(nodes: &[String]) -> Result<Vec<NodeState>> {
    let http = crate::credentials::client_builder()
        .timeout(Duration::from_secs(3))
        .build()?;
    eventually(CONVERGENCE, "every node to hold the same state", || async {
        let mut applied = BTreeSet::new();
        for node in nodes {
            applied.insert(applied_index(&http, node).await?);
        }
        if applied.len() != 1 {
            return None;
        }
        let mut states = Vec::new();
        for node in nodes {
            states.push(node_state(&http, node).await?);
        }
        states.windows(2).all(|w| w[0] == w[1]).then_some(states)
    })
    .await
}

fn check_durability(history: &History, states: &[NodeState], report: &mut Report) {
    for (node, state) in states.iter().enumerate() {
        let names: BTreeSet<&str> = state.iter().map(|(name, _, _)| name.as_str()).collect();
        for acknowledged in &history.acknowledged {
            let name = format!("{DURABLE_NAMESPACE}/{}", acknowledged.name);
            if !names.contains(name.as_str()) {
                report
                    .violations
                    .push(format!("node {} lost acknowledged create {name}", node + 1));
            }
        }
    }
}

fn check_linearizability(history: &History, report: &mut Report) {
    let mut by_key: BTreeMap<&str, Vec<linearizable::Timed>> = BTreeMap::new();
    for op in &history.register {
        by_key.entry(&op.key).or_default().push(op.op.clone());
    }
    for (key, ops) in by_key {
        if let Err(violation) = linearizable::check(&ops) {
            let shown: Vec<String> = violation
                .stuck_at
                .iter()
                .take(6)
                .map(|op| format!("{op:?}"))
                .collect();
            let how = violation.verdict();
            report
                .violations
                .push(format!("key {key}: {how}; stuck at {}", shown.join("; ")));
        }
    }
}
