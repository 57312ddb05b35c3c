//! `drover-bench clusters`: how long one cluster actor takes to observe a large set of `sim`
//! instances, and what a steady cluster costs in Raft writes (the goal: none when nothing
//! changes). Three `drover serve` processes with the binary's default timings and one `sim`
//! agent; figures are printed, never asserted.

use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use clap::Args;
use drover_tests::agent::{AgentProcess, AGENT_TOKEN};
use drover_tests::platform::{process_platform_args, token, PlatformClient, OPERATOR_SUBJECT};
use drover_tests::process::ProcessCluster;
use drover_tests::status::applied_index;
use reqwest::StatusCode;
use serde_json::{json, Value};

/// `drover-bench clusters` flags.
#[derive(Debug, Args)]
pub struct ClustersArgs {
    /// Instances in the cluster's one set.
    #[arg(long, default_value_t = 10_000)]
    instances: u32,
    /// How long the steady state is watched, in seconds.
    #[arg(long, default_value_t = 60)]
    steady_secs: u64,
}

/// One value of a metric family on a node's `/metrics` (summed over its labels).
async fn metric(http: &reqwest::Client, node: &str, name: &str) -> f64 {
    let Ok(response) = http.get(format!("http://{node}/metrics")).send().await else {
        return 0.0;
    };
    let text = response.text().await.unwrap_or_default();
    text.lines()
        .filter(|line| line.starts_with(name) && line[name.len()..].starts_with([' ', '{']))
        .filter_map(|line| line.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

async fn running(client: &PlatformClient) -> Option<u64> {
    let answer = client.get("/tenant/operator/cluster/bench").await.ok()?;
    (answer.status == StatusCode::OK).then_some(())?;
    answer.body["data"]["status"]["instances"]["running"].as_u64()
}

/// Runs the benchmark.
pub async fn run(args: ClustersArgs) -> Result<()> {
    let dir = tempfile::TempDir::new()?;
    let nodes = ProcessCluster::start_with_exact_args(3, &process_platform_args(dir.path())?)?;
    let leader = nodes.leader(Duration::from_secs(30)).await?;
    let leader_addr = nodes.api_addr(leader);
    // 100 simulated machines of 4 CPUs: room for 10,000 instances of 10 millicores each.
    let agent = AgentProcess::sim(&["--sim-nodes=100"])?;
    let root = PlatformClient::new(&leader_addr, Some(token(OPERATOR_SUBJECT)));
    root.register(OPERATOR_SUBJECT).await?;
    let registration = json!({"endpoint": format!("http://{}", agent.addr()), "join_token": AGENT_TOKEN});
    let answer = root.post("/tenant/operator/cluster/bench", &registration).await?;
    if answer.status != StatusCode::OK {
        bail!("registering the cluster: {answer:?}");
    }
    let set = json!({
        "count": args.instances,
        "exec": {"argv": ["web"]},
        "resources": {"cpu_millis": 10, "memory_mib": 16},
    });
    let http = reqwest::Client::new();
    let started = Instant::now();
    let answer = root.put("/tenant/operator/cluster/bench/set/fleet", &set).await?;
    if answer.status != StatusCode::OK {
        bail!("pinning the set: {answer:?}");
    }
    let deadline = started + Duration::from_secs(300);
    loop {
        if running(&root).await == Some(u64::from(args.instances)) {
            break;
        }
        if Instant::now() > deadline {
            bail!(
                "the cluster did not report {} running instances within 300 s",
                args.instances
            );
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let observed = started.elapsed();
    println!(
        "clusters: set of {} sim instances committed, started by the agent and observed running by the cluster actor in {:.2} s",
        args.instances,
        observed.as_secs_f64()
    );

    // The steady state: nothing changes, so the actor should write nothing.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let probes_before = metric(&http, &leader_addr, "drover_cluster_probe_seconds_count").await;
    let probe_time_before = metric(&http, &leader_addr, "drover_cluster_probe_seconds_sum").await;
    let applied_before = applied_index(&http, &leader_addr)
        .await
        .context("applied index")?;
    let window = Instant::now();
    tokio::time::sleep(Duration::from_secs(args.steady_secs)).await;
    let applied_after = applied_index(&http, &leader_addr)
        .await
        .context("applied index")?;
    let probes = metric(&http, &leader_addr, "drover_cluster_probe_seconds_count").await - probes_before;
    let probe_time =
        metric(&http, &leader_addr, "drover_cluster_probe_seconds_sum").await - probe_time_before;
    let minutes = window.elapsed().as_secs_f64() / 60.0;
    let writes = applied_after.saturating_sub(applied_before);
    println!(
        "clusters: steady state over {:.0} s: {} Raft entries applied ({:.1} per minute), {} probes of the agent, {:.1} ms per probe (facts + inventory of {} instances)",
        window.elapsed().as_secs_f64(),
        writes,
        writes as f64 / minutes,
        probes,
        if probes > 0.0 { probe_time / probes * 1000.0 } else { 0.0 },
        args.instances
    );
    let rss: Vec<String> = nodes
        .running_pids()
        .into_iter()
        .filter_map(crate::proc::rss_kib)
        .map(|kib| format!("{} MiB", kib / 1024))
        .collect();
    let agent_rss = agent.pid().and_then(crate::proc::rss_kib).unwrap_or(0) / 1024;
    println!(
        "clusters: resident memory: nodes {}, agent {agent_rss} MiB",
        rss.join(", ")
    );
    let cluster: Value = root.get("/tenant/operator/cluster/bench").await?.body;
    println!(
        "clusters: final state {} ({} transitions recorded)",
        cluster["data"]["status"]["state"],
        cluster["data"]["events"].as_array().map_or(0, Vec::len)
    );
    Ok(())
}
