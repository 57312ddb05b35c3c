//! `drover-bench services`: how long 200 services of three roles take to be placed and to run
//! on three `sim` clusters (no start latency), placements per second, and the leader's CPU per
//! placement. Three `drover serve` processes with the binary's defaults; figures are printed,
//! never asserted.
//!
//! With `--placement-burst`, the services are created while every cluster is drained (nothing
//! can be placed), then the clusters return to service at once: the figure is how long the
//! placement pass takes, from the moment every cluster is `ONLINE` again until the leader has
//! committed every placement (its `drover_service_placements_total`), i.e. end-to-end
//! placements per second through Raft, the way Nomad's C1M figure counts them.
//!
//! With `--steady SECONDS` (after every service runs), the scale figures: the nodes' resident
//! memory per service, the Raft entries and driver calls per second while nothing changes, and
//! `--failovers N` leader SIGKILLs (default 1), each followed by a restart of the killed node
//! and a wait until all three agree again: how long until the new leader's service actors are
//! all up and every service reports converged again, and how many driver calls the new leader
//! made meanwhile (unchanged sets are not sent again); with several, the median and the worst.

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
    /// Services to create.
    #[arg(long, default_value_t = 200)]
    services: usize,
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

/// Times a status read answered `503` is asked again before the service counts as unknown.
const UNAVAILABLE_RETRIES: usize = 50;

/// Counts the services that are placed and those that run exactly their revision.
async fn progress(client: &PlatformClient, services: usize) -> Result<(usize, usize)> {
    let mut placed = 0;
    let mut converged = 0;
    let mut unavailable = 0;
    for i in 0..services {
        let path = format!("/tenant/bench/service/s{i}");
        let mut answer = client.call(reqwest::Method::GET, &path, None).await?;
        // No quorum for a moment: ask again, as a client would (a service skipped here would
        // count as not converged).
        for _ in 0..UNAVAILABLE_RETRIES {
            if answer.status != StatusCode::SERVICE_UNAVAILABLE {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
            answer = client.call(reqwest::Method::GET, &path, None).await?;
        }
        if answer.status == StatusCode::SERVICE_UNAVAILABLE {
            unavailable += 1;
            continue;
        }
        if answer.status != StatusCode::OK {
            bail!("GET {path}: {answer:?}");
        }
        let status = &answer.body["data"]["status"];
        placed += usize::from(!status["cluster"].is_null());
        converged += usize::from(status["converged"] == true);
    }
    if unavailable > 0 {
        println!(
            "{unavailable} of {services} status reads answered 503 {UNAVAILABLE_RETRIES} times in a row"
        );
    }
    Ok((placed, converged))
}

/// Runs the benchmark.
pub async fn run(args: ServicesArgs) -> Result<()> {
    let dir = tempfile::TempDir::new()?;
    let mut flags = process_platform_args(dir.path())?;
    // One caller makes every call here: lift the per-caller rate limit (50/s by default).
    flags.extend([
        "--rate-limit=1000000".to_string(),
        "--rate-burst=1000000".to_string(),
    ]);
    let nodes = ProcessCluster::start_with_exact_args(3, &flags)?;
    let leader = nodes.leader(Duration::from_secs(30)).await?;
    let address = nodes.api_addr(leader);
    let agents = (0..3)
        .map(|_| AgentProcess::start(&["--executor=sim", "--sim-start-latency-ms=0", "--sim-nodes=40"]))
        .collect::<Result<Vec<_>>>()?;
    let root = PlatformClient::new(&address, Some(token(OPERATOR_SUBJECT)));
    root.register(OPERATOR_SUBJECT).await?;
    for (i, agent) in agents.iter().enumerate() {
        let registration = json!({"endpoint": format!("http://{}", agent.addr()), "join_token": AGENT_TOKEN});
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
    let roles: serde_json::Map<String, Value> = (0..args.roles)
        .map(|r| {
            let (cpu, memory) = if args.instances > 1 { (1, 4) } else { (10, 16) };
            let role = json!({"instances": args.instances, "resources": {"cpu_millis": cpu, "memory_mib": memory}, "exec": {"argv": ["web"]}});
            (format!("r{r}"), role)
        })
        .collect();
    let deployment = json!({"deployment": {"roles": roles}});
    if args.placement_burst {
        drain_all(&root, true, "NOTREADY").await?;
    }
    let leader_pid = nodes.pid_of(leader).context("no leader pid")?;
    let rss_before: Vec<f64> = (1..=3).filter_map(|id| rss_mib(nodes.pid_of(id)?)).collect();
    let cpu_before = cpu_seconds(leader_pid).context("leader CPU")?;
    let started = Instant::now();
    let clients = args.clients.max(1);
    let retried = std::sync::atomic::AtomicUsize::new(0);
    let retried = &retried;
    let creators = (0..clients).map(|c| {
        let client = PlatformClient::new(&nodes.api_addr(1 + (c as u64 % 3)), Some(token(OPERATOR_SUBJECT)));
        let deployment = deployment.clone();
        let services = args.services;
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
    let created = started.elapsed();
    let retried = retried.load(std::sync::atomic::Ordering::Relaxed);
    if retried > 0 {
        println!("services: {retried} creates answered 503 (no quorum for a moment) and were sent again");
    }
    if args.placement_burst {
        let before = drover_tests::process::scraped(&address, "drover_service_placements_total").await?;
        drain_all(&root, false, "ONLINE").await?;
        let online = Instant::now();
        let cpu_online = cpu_seconds(leader_pid).context("leader CPU")?;
        let wanted = before + args.services as u64;
        let deadline = online + Duration::from_secs(300);
        while drover_tests::process::scraped(&address, "drover_service_placements_total").await? < wanted {
            if Instant::now() > deadline {
                bail!("not every service was placed within 300 s");
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let took = online.elapsed();
        let cpu = cpu_seconds(leader_pid).context("leader CPU")? - cpu_online;
        println!(
            "placement burst: {} services (created in {:.2} s while every cluster was drained) placed {:.3} s after the clusters were ONLINE again: {:.0} placements/s through Raft; leader CPU {:.2} s ({:.0} µs per placement; the service actors starting meanwhile included)",
            args.services,
            created.as_secs_f64(),
            took.as_secs_f64(),
            args.services as f64 / took.as_secs_f64(),
            cpu,
            cpu / args.services as f64 * 1e6
        );
        return Ok(());
    }
    let mut all_placed = None;
    let deadline = Instant::now() + Duration::from_secs(300);
    let converged_at = loop {
        let (placed, converged) = progress(&root, args.services).await?;
        if placed == args.services && all_placed.is_none() {
            all_placed = Some(started.elapsed());
        }
        if converged == args.services {
            break started.elapsed();
        }
        if Instant::now() > deadline {
            bail!("{converged} of {} services converged within 300 s", args.services);
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let cpu = cpu_seconds(leader_pid).context("leader CPU")? - cpu_before;
    let placed_at = all_placed.unwrap_or(converged_at);
    println!(
        "services: {} services x {} roles created by {clients} clients in {:.2} s; all placed after {:.2} s ({:.0} placements/s); all running exactly their revision on 3 sim clusters after {:.2} s",
        args.services,
        args.roles,
        created.as_secs_f64(),
        placed_at.as_secs_f64(),
        args.services as f64 / placed_at.as_secs_f64(),
        converged_at.as_secs_f64()
    );
    println!(
        "services: leader CPU {:.2} s over the run, {:.1} ms per service (creating, placing, sending and observing it; the status polls of this program included)",
        cpu,
        cpu / args.services as f64 * 1000.0
    );
    if let Some(seconds) = args.steady {
        let mut nodes = nodes;
        steady_and_failover(&mut nodes, leader, &args, &rss_before, seconds).await?;
    }
    Ok(())
}

/// The scale figures of `--steady`: memory per service, the write and driver-call rates while
/// nothing changes, and a leader failover.
async fn steady_and_failover(
    nodes: &mut ProcessCluster,
    leader: u64,
    args: &ServicesArgs,
    rss_before: &[f64],
    seconds: u64,
) -> Result<()> {
    let services = args.services as f64;
    let rss_after: Vec<f64> = (1..=3).filter_map(|id| rss_mib(nodes.pid_of(id)?)).collect();
    for (id, (before, after)) in rss_before.iter().zip(&rss_after).enumerate() {
        println!(
            "scale: node {} resident {:.0} MiB -> {:.0} MiB: {:.1} KiB per service ({} instances each){}",
            id + 1,
            before,
            after,
            (after - before) * 1024.0 / services,
            args.roles as u32 * args.instances,
            if id as u64 + 1 == leader {
                " (the leader: actors too)"
            } else {
                ""
            }
        );
    }
    let leader_addr = nodes.api_addr(leader);
    let commit =
        |addr: String| async move { drover_tests::process::scraped(&addr, "drover_raft_commit_index").await };
    let calls = |addr: String| async move {
        drover_tests::process::scraped_sum(&addr, "drover_service_driver_calls_total").await
    };
    let through_leader = PlatformClient::new(&leader_addr, Some(token(OPERATOR_SUBJECT)));
    let watched: Vec<String> = (0..3)
        .map(|i| format!("/tenant/operator/cluster/sim-{i}"))
        .chain((0..args.services.min(10)).map(|i| format!("/tenant/bench/service/s{i}")))
        .collect();
    let mut before = Vec::new();
    for path in &watched {
        before.push(call(&through_leader, reqwest::Method::GET, path, None).await?);
    }
    let (commit0, calls0) = (
        commit(leader_addr.clone()).await?,
        calls(leader_addr.clone()).await?,
    );
    tokio::time::sleep(Duration::from_secs(seconds)).await;
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
            println!("scale: {path} changed while nothing did: {}", changed.join(", "));
        }
    }
    println!(
        "scale: steady state over {seconds} s with nothing changing: {:.2} Raft entries/s, {:.2} service driver calls/s",
        (commit1 - commit0) as f64 / seconds as f64,
        (calls1 - calls0) / seconds as f64
    );

    let mut leader = leader;
    let mut failovers = Vec::new();
    for round in 1..=args.failovers {
        let failover = failover(nodes, leader, args.services, &calls).await?;
        println!(
            "scale: failover {round}: leader SIGKILL -> new leader after {:.2} s, all {} service actors up after {:.2} s, all converged again after {:.2} s; the new leader's service driver calls meanwhile: {:.0}",
            failover.elected.as_secs_f64(),
            args.services,
            failover.actors_up.as_secs_f64(),
            failover.converged.as_secs_f64(),
            failover.driver_calls
        );
        nodes.restart(leader)?;
        leader = failover.next;
        failovers.push(failover);
        if round < args.failovers {
            all_caught_up(nodes).await?;
        }
    }
    if failovers.len() > 1 {
        let figure = |f: fn(&Failover) -> Duration| {
            let mut samples = Samples::default();
            for failover in &failovers {
                samples.record(f(failover));
            }
            format!(
                "median {:.2} s, worst {:.2} s",
                samples.quantile_ms(0.5) / 1000.0,
                samples.quantile_ms(1.0) / 1000.0
            )
        };
        println!(
            "scale: over {} failovers: new leader {}; all service actors up {}; all converged again {}; driver calls by the new leaders {:.0} in all",
            failovers.len(),
            figure(|f| f.elected),
            figure(|f| f.actors_up),
            figure(|f| f.converged),
            failovers.iter().map(|f| f.driver_calls).sum::<f64>()
        );
    }
    Ok(())
}

/// What one leader SIGKILL cost, counted from the kill.
struct Failover {
    next: u64,
    elected: Duration,
    actors_up: Duration,
    converged: Duration,
    driver_calls: f64,
}

/// Kills `leader` and measures until every service reports converged on the next one.
async fn failover<F, Fut>(
    nodes: &mut ProcessCluster,
    leader: u64,
    services: usize,
    calls: &F,
) -> Result<Failover>
where
    F: Fn(String) -> Fut,
    Fut: std::future::Future<Output = Result<f64>>,
{
    nodes.kill(leader)?;
    let killed = Instant::now();
    let next = nodes.leader(Duration::from_secs(30)).await?;
    let elected = killed.elapsed();
    let next_addr = nodes.api_addr(next);
    let calls_at_election = calls(next_addr.clone()).await?;
    let through_next = PlatformClient::new(&next_addr, Some(token(OPERATOR_SUBJECT)));
    let deadline = killed + Duration::from_secs(120);
    let actors_up = loop {
        let actors = drover_tests::process::scraped(&next_addr, "drover_service_actors").await?;
        if actors as usize >= services {
            break killed.elapsed();
        }
        if Instant::now() > deadline {
            bail!("{actors} of {} service actors after 120 s", services);
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let all_converged = loop {
        let (_, converged) = progress(&through_next, services).await?;
        if converged == services {
            break killed.elapsed();
        }
        if Instant::now() > deadline {
            bail!(
                "{converged} of {} services converged 120 s after the failover",
                services
            );
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    let driver_calls = calls(next_addr.clone()).await? - calls_at_election;
    Ok(Failover {
        next,
        elected,
        actors_up,
        converged: all_converged,
        driver_calls,
    })
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
