//! `drover-bench services`: how long services take to be created, placed and to run on three
//! `sim` clusters (no start latency): creates/s, placements/s, the time until every one runs
//! exactly its revision, and each node's CPU per service. Three `drover serve` processes with
//! the binary's defaults; figures are printed, never asserted. `--services 1000,10000` runs each
//! size in a fresh cluster and prints the growth from the first to the last as ratios (1.00x:
//! the cost per service did not grow with their number).
//!
//! Progress is read from gauges, not by reading every service: `drover_services_placed` and
//! `drover_services_converged`, counted on a follower's replica (every 250 ms), so that the
//! counting loads no leader. The leader is asked at the
//! start and at the end of the run; when it moved, the figures say so.
//!
//! With `--placement-burst`, the services are created while every cluster is drained (nothing
//! can be placed), then the clusters return to service at once: the figure is how long the
//! placement pass takes, from the moment every cluster is `ONLINE` again until the leader has
//! committed every placement (its `drover_service_placements_total`), i.e. end-to-end
//! placements per second through Raft, the way Nomad's C1M figure counts them.
//!
//! With `--steady SECONDS` (after every service runs), the scale figures: each node's resident
//! memory per service (sampled together once no snapshot has been built or installed for two
//! seconds), the Raft entries, driver calls and leader CPU per second while nothing changes,
//! and `--failovers N` leader SIGKILLs, each of the node that is leader just then, followed by
//! its restart and a wait until all three agree again: how long until a new leader is named,
//! until its service actors are all up, and until it has evidence of its own that every
//! service converged (its reconcile passes grew by the number of services, and then its
//! replica counts every service converged with no backlog), and how many driver calls the new
//! leader made meanwhile (unchanged sets are not sent again); the median and the worst.

use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use clap::Args;
use drover_tests::agent::{AgentProcess, AGENT_TOKEN};
use drover_tests::platform::{process_platform_args, token, PlatformClient, OPERATOR_SUBJECT};
use drover_tests::process::ProcessCluster;
use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::histogram::Samples;

/// `drover-bench services` flags.
#[derive(Debug, Args)]
pub struct ServicesArgs {
    /// Services to create; several sizes (`1000,10000`) run one after the other, each in a
    /// fresh cluster, and the growth from the first to the last is printed as ratios.
    #[arg(long, value_delimiter = ',', default_value = "200")]
    services: Vec<usize>,
    /// Roles per service.
    #[arg(long, default_value_t = 3)]
    roles: usize,
    /// Instances per role (each asks 1m CPU and 4 MiB when more than one, so that 100,000
    /// fit on the three simulated clusters; 10m and 16 MiB otherwise).
    #[arg(long, default_value_t = 1)]
    instances: u32,
    /// After every service runs: measure this many seconds of steady state, then failovers.
    #[arg(long)]
    steady: Option<u64>,
    /// Leader SIGKILLs after the steady state (each killed node is restarted before the next).
    #[arg(long, default_value_t = 1)]
    failovers: usize,
    /// Clients creating services at once.
    #[arg(long, default_value_t = 8)]
    clients: usize,
    /// Create the services while the clusters are drained, then time placing all of them at
    /// once (and do not wait for them to run).
    #[arg(long)]
    placement_burst: bool,
}

/// Drains (or returns to service) the three clusters and waits until each is in `state`.
async fn drain_all(root: &PlatformClient, draining: bool, state: &str) -> Result<()> {
    for i in 0..3 {
        call(
            root,
            reqwest::Method::PUT,
            &format!("/tenant/operator/cluster/sim-{i}/drain"),
            Some(&json!({ "draining": draining })),
        )
        .await?;
    }
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let mut ready = 0;
        for i in 0..3 {
            let view = call(
                root,
                reqwest::Method::GET,
                &format!("/tenant/operator/cluster/sim-{i}"),
                None,
            )
            .await?;
            ready += usize::from(view["data"]["status"]["state"] == state);
        }
        if ready == 3 {
            return Ok(());
        }
        if Instant::now() > deadline {
            bail!("the clusters did not become {state}");
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// CPU time (user + system) of a process in seconds, from `/proc`.
fn cpu_seconds(pid: u32) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    let ticks: u64 = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    // Linux reports CPU time in clock ticks of 1/100 s (USER_HZ).
    Some(ticks as f64 / 100.0)
}

async fn call(
    client: &PlatformClient,
    method: reqwest::Method,
    path: &str,
    body: Option<&Value>,
) -> Result<Value> {
    let answer = client.call(method.clone(), path, body).await?;
    if answer.status != StatusCode::OK {
        bail!("{method} {path}: {answer:?}");
    }
    Ok(answer.body)
}

/// Resident memory of a process in MiB.
fn rss_mib(pid: u32) -> Option<f64> {
    crate::proc::rss_kib(pid).map(|kib| kib as f64 / 1024.0)
}

/// The JSON paths where `a` and `b` differ.
fn differing(a: &Value, b: &Value, at: String, out: &mut Vec<String>) {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            for key in x.keys().chain(y.keys().filter(|k| !x.contains_key(*k))) {
                let (l, r) = (
                    x.get(key).unwrap_or(&Value::Null),
                    y.get(key).unwrap_or(&Value::Null),
                );
                differing(l, r, format!("{at}.{key}"), out);
            }
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => {
            for (i, (l, r)) in x.iter().zip(y).enumerate() {
                differing(l, r, format!("{at}[{i}]"), out);
            }
        }
        (l, r) if l != r => out.push(at),
        _ => {}
    }
}

/// Three nodes, three sim agents registered as clusters `sim-0..2`, and the `bench` tenant with
/// one environment, ready for services.
struct World {
    nodes: ProcessCluster,
    _agents: Vec<AgentProcess>,
    _dir: tempfile::TempDir,
}

impl World {
    async fn start() -> Result<Self> {
        let dir = tempfile::TempDir::new()?;
        let mut flags = process_platform_args(dir.path())?;
        // One caller makes every call here: lift the per-caller rate limit (50/s by default).
        flags.extend([
            "--rate-limit=1000000".to_string(),
            "--rate-burst=1000000".to_string(),
        ]);
        let nodes = ProcessCluster::start_with_exact_args(3, &flags)?;
        let leader = nodes.leader(Duration::from_secs(30)).await?;
        let agents = (0..3)
            .map(|_| AgentProcess::start(&["--executor=sim", "--sim-start-latency-ms=0", "--sim-nodes=40"]))
            .collect::<Result<Vec<_>>>()?;
        let root = PlatformClient::new(&nodes.api_addr(leader), Some(token(OPERATOR_SUBJECT)));
        root.register(OPERATOR_SUBJECT).await?;
        for (i, agent) in agents.iter().enumerate() {
            let registration =
                json!({"endpoint": format!("http://{}", agent.addr()), "join_token": AGENT_TOKEN});
            call(
                &root,
                reqwest::Method::POST,
                &format!("/tenant/operator/cluster/sim-{i}"),
                Some(&registration),
            )
            .await?;
        }
        call(&root, reqwest::Method::POST, "/tenant/bench", Some(&json!({}))).await?;
        call(
            &root,
            reqwest::Method::POST,
            "/tenant/bench/account/main",
            Some(&json!({"spec": {"iaas": "sim"}})),
        )
        .await?;
        call(
            &root,
            reqwest::Method::POST,
            "/tenant/bench/account/main/environment/prod",
            Some(&json!({})),
        )
        .await?;
        // Wait for the three clusters to report their capacity.
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let usable = call(
                &root,
                reqwest::Method::GET,
                "/tenant/bench/account/main/environment/prod/clusters",
                None,
            )
            .await?;
            let online = usable["data"]["clusters"]
                .as_array()
                .map_or(0, |c| c.iter().filter(|c| c["state"] == "ONLINE").count());
            if online == 3 {
                break;
            }
            if Instant::now() > deadline {
                bail!("the clusters did not come online");
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        Ok(Self {
            nodes,
            _agents: agents,
            _dir: dir,
        })
    }

    /// A client of the operator through node `id`.
    fn root(&self, id: u64) -> PlatformClient {
        PlatformClient::new(&self.nodes.api_addr(id), Some(token(OPERATOR_SUBJECT)))
    }

    /// CPU seconds of each node (`None`: not running).
    fn cpu(&self) -> [Option<f64>; 3] {
        [1, 2, 3].map(|id| self.nodes.pid_of(id).and_then(cpu_seconds))
    }

    /// Resident MiB of each node (`None`: not running).
    fn rss(&self) -> [Option<f64>; 3] {
        [1, 2, 3].map(|id| self.nodes.pid_of(id).and_then(rss_mib))
    }

    /// The leader, confirmed by every running node.
    async fn leader(&self) -> Result<u64> {
        self.nodes.leader(Duration::from_secs(30)).await
    }
}

/// The deployment every service gets.
fn deployment(args: &ServicesArgs) -> Value {
    let roles: serde_json::Map<String, Value> = (0..args.roles)
        .map(|r| {
            let (cpu, memory) = if args.instances > 1 { (1, 4) } else { (10, 16) };
            let role = json!({"instances": args.instances, "resources": {"cpu_millis": cpu, "memory_mib": memory}, "exec": {"argv": ["web"]}});
            (format!("r{r}"), role)
        })
        .collect();
    json!({"deployment": {"roles": roles}})
}

/// Creates services `s0..s{services}` with `clients` clients, spread over the three nodes;
/// returns how many creates answered `503` and were sent again.
async fn create_all(world: &World, args: &ServicesArgs, services: usize) -> Result<usize> {
    let clients = args.clients.max(1);
    let deployment = deployment(args);
    let retried = std::sync::atomic::AtomicUsize::new(0);
    let retried = &retried;
    let creators = (0..clients).map(|c| {
        let client = world.root(1 + (c as u64 % 3));
        let deployment = deployment.clone();
        async move {
            for i in (c..services).step_by(clients) {
                let path = format!("/tenant/bench/service/s{i}?accept=true");
                // A `503` (no quorum for a moment) is retried, as a client would; the count is
                // printed.
                let mut attempts = 0;
                loop {
                    let answer = client
                        .call(reqwest::Method::POST, &path, Some(&deployment))
                        .await?;
                    match answer.status {
                        StatusCode::OK => break,
                        // An earlier attempt that answered 503 had been committed after all.
                        StatusCode::CONFLICT if attempts > 0 => break,
                        StatusCode::SERVICE_UNAVAILABLE if attempts < 50 => {
                            attempts += 1;
                            retried.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                            tokio::time::sleep(Duration::from_millis(200)).await;
                        }
                        _ => bail!("POST {path}: {answer:?}"),
                    }
                }
            }
            Ok::<_, anyhow::Error>(())
        }
    });
    for result in futures::future::join_all(creators).await {
        result?;
    }
    Ok(retried.load(std::sync::atomic::Ordering::Relaxed))
}

/// Runs the benchmark: each size in a fresh cluster, then the growth from the first size to
/// the last as ratios.
pub async fn run(args: ServicesArgs) -> Result<()> {
    let sizes = args.services.clone();
    if sizes.is_empty() || sizes.contains(&0) {
        bail!("--services needs one or more sizes above 0");
    }
    if args.placement_burst {
        for &services in &sizes {
            placement_burst(&args, services).await?;
        }
        return Ok(());
    }
    let mut runs = Vec::new();
    for &services in &sizes {
        runs.push(run_size(&args, services).await?);
    }
    if let (Some(first), Some(last)) = (runs.first(), runs.last()) {
        if runs.len() > 1 {
            print_growth(first, last);
        }
    }
    Ok(())
}

/// `--placement-burst`: the services are created while every cluster is drained, then the
/// clusters return to service at once.
async fn placement_burst(args: &ServicesArgs, services: usize) -> Result<()> {
    let world = World::start().await?;
    let leader = world.leader().await?;
    let address = world.nodes.api_addr(leader);
    let root = world.root(leader);
    drain_all(&root, true, "NOTREADY").await?;
    let started = Instant::now();
    let retried = create_all(&world, args, services).await?;
    let created = started.elapsed();
    if retried > 0 {
        println!("services: {retried} creates answered 503 (no quorum for a moment) and were sent again");
    }
    let leader_pid = world.nodes.pid_of(leader).context("no leader pid")?;
    let before = drover_tests::process::scraped(&address, "drover_service_placements_total").await?;
    drain_all(&root, false, "ONLINE").await?;
    let online = Instant::now();
    let cpu_online = cpu_seconds(leader_pid).context("leader CPU")?;
    let wanted = before + services as u64;
    let deadline = online + Duration::from_secs(300);
    while drover_tests::process::scraped(&address, "drover_service_placements_total").await? < wanted {
        if Instant::now() > deadline {
            bail!("not every service was placed within 300 s");
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let took = online.elapsed();
    let cpu = cpu_seconds(leader_pid).context("leader CPU")? - cpu_online;
    if world.leader().await? != leader {
        println!("placement burst: leadership moved during the burst; the figures below are node {leader}'s");
    }
    println!(
        "placement burst: {services} services (created in {:.2} s while every cluster was drained) placed {:.3} s after the clusters were ONLINE again: {:.0} placements/s through Raft; leader CPU {:.2} s ({:.0} µs per placement; the service actors starting meanwhile included)",
        created.as_secs_f64(),
        took.as_secs_f64(),
        services as f64 / took.as_secs_f64(),
        cpu,
        cpu / services as f64 * 1e6
    );
    Ok(())
}

/// The figures of one size.
struct SizeRun {
    services: usize,
    created: Duration,
    placed: Duration,
    running: Duration,
    /// CPU seconds per node over the run (first create to all running).
    cpu: [Option<f64>; 3],
    /// The leader at the end of the run (checked to be the one at its start).
    leader: u64,
    /// KiB per service per node, once settled.
    memory: [Option<f64>; 3],
    /// Median "converged again" after a leader SIGKILL, if failovers ran.
    converged_again: Option<Duration>,
}

/// How far the services have come: those placed and those that run exactly their revision,
/// by `watcher`'s replica (a follower: the counting loads no leader).
async fn progress(world: &World, watcher: u64) -> Result<(u64, u64)> {
    let addr = world.nodes.api_addr(watcher);
    let text = drover_tests::process::metrics_text(&addr).await?;
    let gauge = |name| drover_tests::process::gauge_in(&text, name);
    Ok((
        gauge("drover_services_placed"),
        gauge("drover_services_converged"),
    ))
}

/// One size: create, place and run `services` services; then, with `--steady`, memory, the
/// steady state and failovers.
async fn run_size(args: &ServicesArgs, services: usize) -> Result<SizeRun> {
    let mut world = World::start().await?;
    let leader = world.leader().await?;
    let watcher = [1, 2, 3].into_iter().find(|id| *id != leader).unwrap_or(leader);
    let rss_before = world.rss();
    let cpu_before = world.cpu();
    let started = Instant::now();
    let clients = args.clients.max(1);
    let create = create_all(&world, args, services);
    // Placement and running are watched while the creates go on.
    let watch = async {
        let mut placed_at = None;
        let deadline = started + Duration::from_secs(600);
        loop {
            let (placed, converged) = progress(&world, watcher).await?;
            if placed >= services as u64 && placed_at.is_none() {
                placed_at = Some(started.elapsed());
            }
            if converged >= services as u64 {
                let running = started.elapsed();
                return Ok::<_, anyhow::Error>((placed_at.unwrap_or(running), running));
            }
            if Instant::now() > deadline {
                bail!("{converged} of {services} services ran their revision within 600 s ({placed} placed)");
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    };
    let (created, watched) = tokio::join!(
        async {
            let retried = create.await?;
            Ok::<_, anyhow::Error>((started.elapsed(), retried))
        },
        watch
    );
    let (created, retried) = created?;
    let (placed, running) = watched?;
    let cpu_after = world.cpu();
    let leader_after = world.leader().await?;
    if retried > 0 {
        println!("services: {retried} creates answered 503 (no quorum for a moment) and were sent again");
    }
    let cpu: [Option<f64>; 3] = std::array::from_fn(|i| Some(cpu_after[i]? - cpu_before[i]?));
    let per_service_ms = |seconds: Option<f64>| {
        seconds.map_or("-".to_string(), |s| {
            format!("{:.2}", s / services as f64 * 1000.0)
        })
    };
    println!(
        "services {services}: {services} services x {} roles x {} instances created by {clients} clients in {:.2} s ({:.0} creates/s); all placed after {:.2} s ({:.0} placements/s); all running exactly their revision {:.2} s after the first create",
        args.roles,
        args.instances,
        created.as_secs_f64(),
        services as f64 / created.as_secs_f64(),
        placed.as_secs_f64(),
        services as f64 / placed.as_secs_f64(),
        running.as_secs_f64(),
    );
    println!(
        "services {services}: CPU per service over the run (ms), node 1 / 2 / 3: {} / {} / {}; the leader is node {leader}{}; node {watcher} also answered the progress scrapes (every 250 ms)",
        per_service_ms(cpu[0]),
        per_service_ms(cpu[1]),
        per_service_ms(cpu[2]),
        if leader_after == leader {
            " for the whole run".to_string()
        } else {
            format!(" at the start and node {leader_after} at the end: leadership moved during the run")
        }
    );
    let mut run = SizeRun {
        services,
        created,
        placed,
        running,
        cpu,
        leader: leader_after,
        memory: [None; 3],
        converged_again: None,
    };
    if let Some(seconds) = args.steady {
        steady_and_failover(&mut world, &mut run, args, &rss_before, seconds).await?;
    }
    Ok(run)
}

/// Waits until no node builds or installs a snapshot for two seconds (their memory then holds
/// the state, not a copy in flight), at most 60 s.
async fn settled(world: &World) -> Result<()> {
    let deadline = Instant::now() + Duration::from_secs(60);
    let snapshots = || async {
        let mut total = 0.0;
        for id in 1..=3 {
            let addr = world.nodes.api_addr(id);
            total += drover_tests::process::scraped_sum(&addr, "drover_raft_snapshots_built")
                .await
                .unwrap_or(0.0);
            total += drover_tests::process::scraped_sum(&addr, "drover_raft_snapshots_installed")
                .await
                .unwrap_or(0.0);
        }
        total
    };
    let mut last = snapshots().await;
    let mut quiet_since = Instant::now();
    while Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(250)).await;
        let now = snapshots().await;
        if now != last {
            last = now;
            quiet_since = Instant::now();
        } else if quiet_since.elapsed() >= Duration::from_secs(2) {
            return Ok(());
        }
    }
    Ok(())
}

/// The scale figures of `--steady`: memory per service on every node, the write and
/// driver-call rates while nothing changes, and leader failovers.
async fn steady_and_failover(
    world: &mut World,
    run: &mut SizeRun,
    args: &ServicesArgs,
    rss_before: &[Option<f64>; 3],
    seconds: u64,
) -> Result<()> {
    let services = run.services;
    settled(world).await?;
    let leader = world.leader().await?;
    let rss_after = world.rss();
    let mut memory = [None; 3];
    for id in 0..3 {
        let (Some(before), Some(after)) = (rss_before[id], rss_after[id]) else {
            continue;
        };
        let per_service = (after - before) * 1024.0 / services as f64;
        memory[id] = Some(per_service);
        println!(
            "services {services}: node {} resident {:.0} MiB -> {:.0} MiB: {:.1} KiB per service ({} instances each){}",
            id + 1,
            before,
            after,
            per_service,
            args.roles as u32 * args.instances,
            if id as u64 + 1 == leader { " (the leader: actors too)" } else { "" }
        );
    }
    let followers: Vec<f64> = (0..3)
        .filter(|id| *id as u64 + 1 != leader)
        .filter_map(|id| memory[id])
        .collect();
    if let [a, b] = followers[..] {
        println!(
            "services {services}: memory per service between the followers: {:.2}x",
            a.max(b) / a.min(b).max(f64::MIN_POSITIVE)
        );
    }
    run.memory = memory;
    let leader_addr = world.nodes.api_addr(leader);
    let commit =
        |addr: String| async move { drover_tests::process::scraped(&addr, "drover_raft_commit_index").await };
    let calls = |addr: String| async move {
        drover_tests::process::scraped_sum(&addr, "drover_service_driver_calls_total").await
    };
    let through_leader = world.root(leader);
    let watched: Vec<String> = (0..3)
        .map(|i| format!("/tenant/operator/cluster/sim-{i}"))
        .chain((0..services.min(10)).map(|i| format!("/tenant/bench/service/s{i}")))
        .collect();
    let mut before = Vec::new();
    for path in &watched {
        before.push(call(&through_leader, reqwest::Method::GET, path, None).await?);
    }
    let (commit0, calls0) = (
        commit(leader_addr.clone()).await?,
        calls(leader_addr.clone()).await?,
    );
    let cpu0 = world.cpu();
    tokio::time::sleep(Duration::from_secs(seconds)).await;
    let cpu1 = world.cpu();
    let (commit1, calls1) = (
        commit(leader_addr.clone()).await?,
        calls(leader_addr.clone()).await?,
    );
    // Where steady-state writes come from: what changed in a few objects meanwhile.
    for (path, earlier) in watched.iter().zip(&before) {
        let now = call(&through_leader, reqwest::Method::GET, path, None).await?;
        let mut changed = Vec::new();
        differing(earlier, &now, String::new(), &mut changed);
        if !changed.is_empty() {
            changed.truncate(6);
            println!(
                "services {services}: {path} changed while nothing did: {}",
                changed.join(", ")
            );
        }
    }
    let leader_cpu = cpu1[leader as usize - 1]
        .zip(cpu0[leader as usize - 1])
        .map_or(0.0, |(a, b)| a - b);
    println!(
        "services {services}: steady state over {seconds} s with nothing changing: {:.2} Raft entries/s, {:.2} service driver calls/s, leader CPU {:.1}% of a core",
        (commit1 - commit0) as f64 / seconds as f64,
        (calls1 - calls0) / seconds as f64,
        leader_cpu / seconds as f64 * 100.0
    );

    let mut failovers = Vec::new();
    for round in 1..=args.failovers {
        let failover = failover(world, services, &calls).await?;
        println!(
            "services {services}: failover {round}: leader {} SIGKILLed -> node {} leader after {:.2} s, all {services} service actors up after {:.2} s, every actor's pass made and all converged again after {:.2} s; the new leader's service driver calls meanwhile: {:.0}",
            failover.killed,
            failover.next,
            failover.elected.as_secs_f64(),
            failover.actors_up.as_secs_f64(),
            failover.converged.as_secs_f64(),
            failover.driver_calls
        );
        world.nodes.restart(failover.killed)?;
        failovers.push(failover);
        all_caught_up(&world.nodes).await?;
    }
    if !failovers.is_empty() {
        let figure = |f: fn(&Failover) -> Duration| {
            let mut samples = Samples::default();
            for failover in &failovers {
                samples.record(f(failover));
            }
            (
                samples.quantile_ms(0.5) / 1000.0,
                samples.quantile_ms(1.0) / 1000.0,
            )
        };
        let (elected, elected_worst) = figure(|f| f.elected);
        let (up, up_worst) = figure(|f| f.actors_up);
        let (converged, converged_worst) = figure(|f| f.converged);
        println!(
            "services {services}: over {} failovers (median, worst): new leader {elected:.2} s, {elected_worst:.2} s; all service actors up {up:.2} s, {up_worst:.2} s; all converged again {converged:.2} s, {converged_worst:.2} s; driver calls by the new leaders {:.0} in all",
            failovers.len(),
            failovers.iter().map(|f| f.driver_calls).sum::<f64>()
        );
        run.converged_again = Some(Duration::from_secs_f64(converged));
    }
    Ok(())
}

/// What one leader SIGKILL cost, counted from the kill.
struct Failover {
    killed: u64,
    next: u64,
    elected: Duration,
    actors_up: Duration,
    converged: Duration,
    driver_calls: f64,
}

/// Kills the leader (asked for just before) and measures until the next one has made a pass
/// of every service actor and counts every service converged on its own replica.
async fn failover<F, Fut>(world: &mut World, services: usize, calls: &F) -> Result<Failover>
where
    F: Fn(String) -> Fut,
    Fut: std::future::Future<Output = Result<f64>>,
{
    let leader = world.leader().await?;
    // Each follower's passes so far (of earlier terms it led, if any): the next leader's passes
    // beyond them are its own term's.
    let mut passes_before = std::collections::BTreeMap::new();
    for id in (1..=3).filter(|id| *id != leader) {
        passes_before.insert(id, passes(&world.nodes.api_addr(id)).await?);
    }
    world.nodes.kill(leader)?;
    let killed = Instant::now();
    let deadline = killed + Duration::from_secs(120);
    // The survivors name the killed node until they elect another.
    let next = loop {
        match world.nodes.leader(Duration::from_secs(5)).await {
            Ok(next) if next != leader => break next,
            _ if Instant::now() > deadline => bail!("no new leader within 120 s"),
            _ => tokio::time::sleep(Duration::from_millis(10)).await,
        }
    };
    let elected = killed.elapsed();
    let next_addr = world.nodes.api_addr(next);
    let calls_at_election = calls(next_addr.clone()).await?;
    let actors_up = loop {
        let actors = drover_tests::process::scraped(&next_addr, "drover_service_actors").await?;
        if actors as usize >= services {
            break killed.elapsed();
        }
        if Instant::now() > deadline {
            bail!("{actors} of {services} service actors after 120 s");
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    // Evidence from the new term: every actor made a pass (the new leader's passes that decided
    // grew by at least the number of services since before the kill; an actor's first pass
    // always decides), and then its replica counts every service converged with no backlog.
    let passes_at_up = passes_before.get(&next).copied().unwrap_or(0.0);
    let converged = loop {
        let made = passes(&next_addr).await? - passes_at_up;
        let converged = drover_tests::process::scraped(&next_addr, "drover_services_converged").await?;
        let backlog = drover_tests::process::scraped(&next_addr, "drover_service_reconcile_backlog").await?;
        if made >= services as f64 && converged >= services as u64 && backlog == 0 {
            break killed.elapsed();
        }
        if Instant::now() > deadline {
            bail!(
                "the services did not all converge again within 120 s of the failover: node {next} made {made} passes in its term, counts {converged} converged, backlog {backlog}"
            );
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let driver_calls = calls(next_addr.clone()).await? - calls_at_election;
    Ok(Failover {
        killed: leader,
        next,
        elected,
        actors_up,
        converged,
        driver_calls,
    })
}

/// The service actor passes a node's actors made that decided anything (the passes skipped as
/// unchanged are not counted).
async fn passes(addr: &str) -> Result<f64> {
    let text = drover_tests::process::metrics_text(addr).await?;
    Ok(text
        .lines()
        .filter(|line| line.starts_with("drover_service_reconciles_total{") && !line.contains("unchanged"))
        .filter_map(|line| line.rsplit(' ').next()?.parse::<f64>().ok())
        .sum())
}

/// Waits until the three nodes report the same applied index (the restarted one caught up).
async fn all_caught_up(nodes: &ProcessCluster) -> Result<()> {
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(3))
        .build()?;
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let mut applied = std::collections::BTreeSet::new();
        for id in 1..=3 {
            applied.insert(drover_tests::status::applied_index(&http, &nodes.api_addr(id)).await);
        }
        if applied.len() == 1 && !applied.contains(&None) {
            return Ok(());
        }
        if Instant::now() > deadline {
            bail!("the nodes did not agree on an applied index within 120 s: {applied:?}");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The growth from the smallest run to the largest, as ratios (1.00: the cost per service did
/// not grow).
fn print_growth(small: &SizeRun, large: &SizeRun) {
    let rate = |r: &SizeRun, d: Duration| r.services as f64 / d.as_secs_f64();
    let leader_cpu = |r: &SizeRun| r.cpu[r.leader as usize - 1].map(|s| s / r.services as f64);
    let ratio = |a: Option<f64>, b: Option<f64>| {
        a.zip(b).map_or("-".to_string(), |(a, b)| {
            format!("{:.2}x", b / a.max(f64::MIN_POSITIVE))
        })
    };
    println!(
        "growth {} -> {} services: creates/s {:.0} -> {:.0}; placements/s {:.0} -> {:.0}; all running after {:.2} s -> {:.2} s; leader CPU per service {} (node {} / node {}); memory per service node 1 / 2 / 3: {} / {} / {}{}",
        small.services,
        large.services,
        rate(small, small.created),
        rate(large, large.created),
        rate(small, small.placed),
        rate(large, large.placed),
        small.running.as_secs_f64(),
        large.running.as_secs_f64(),
        ratio(leader_cpu(small), leader_cpu(large)),
        small.leader,
        large.leader,
        ratio(small.memory[0], large.memory[0]),
        ratio(small.memory[1], large.memory[1]),
        ratio(small.memory[2], large.memory[2]),
        match (small.converged_again, large.converged_again) {
            (Some(a), Some(b)) => format!(
                "; converged again after a leader SIGKILL {:.2} s -> {:.2} s",
                a.as_secs_f64(),
                b.as_secs_f64()
            ),
            _ => String::new(),
        }
    );
}
