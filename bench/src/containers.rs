//! `drover-bench containers`: pod start latency of the `container` executor with a cached image,
//! beside the Kubernetes pod startup SLO (p99 ≤ 5 s, image pulls excluded). One `drover agent
//! --executor container` process drives a containerd of the benchmark's own (the tests'
//! fixture: its own root, sockets and CNI bridge network), the image built from Debian's
//! busybox and pulled once before the clock starts. Each pod is measured on its own, from the
//! agent's answer to the desired set that asks for it to the first inventory that shows every
//! container of it running; it is then removed, timed until containerd's own listing holds
//! nothing of it. Figures are printed,
//! never asserted.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use clap::Args;
use drover_model::cluster::agent_api::{ExecSpec, InstanceId, InstanceSpec, InstanceState, Resources};
use drover_model::cluster::pod::{ContainerSpec, PodSpec, PullPolicy};
use drover_tests::agent::{desired, AgentClient, AgentProcess};
use drover_tests::containers::{Containerd, ImageSpec, Layout, Registry};

use crate::histogram::Samples;

/// `drover-bench containers` flags.
#[derive(Debug, Args)]
pub struct ContainersArgs {
    /// Pods started (one after another).
    #[arg(long, default_value_t = 100)]
    pods: u32,
}

/// The Kubernetes pod startup SLO's p99, image pulls excluded.
const SLO_P99: Duration = Duration::from_secs(5);
/// The goal the issue sets on this machine.
const GOAL_P99: Duration = Duration::from_secs(1);
/// How long one pod may take to start or go before the run gives up.
const POD_TIMEOUT: Duration = Duration::from_secs(60);
/// How often the inventory is read while a pod starts.
const POLL: Duration = Duration::from_millis(5);

fn pod(id: &str, image: &str) -> Result<InstanceSpec> {
    Ok(InstanceSpec {
        id: InstanceId::parse(id)?,
        exec: ExecSpec {
            pod: Some(PodSpec {
                termination_grace_secs: 1,
                ..PodSpec::of(vec![ContainerSpec {
                    pull_policy: Some(PullPolicy::IfNotPresent),
                    ..ContainerSpec::new("main", image)
                }])
            }),
            ..Default::default()
        },
        resources: Resources {
            cpu_millis: 10,
            memory_mib: 8,
        },
        env: BTreeMap::new(),
    })
}

/// Whether instance `id` runs (`true`) or is gone (`false` asked).
async fn until(client: &AgentClient, id: &str, running: bool) -> Result<Instant> {
    let deadline = Instant::now() + POD_TIMEOUT;
    loop {
        let seen = client.instance(id).await?;
        let done = match &seen {
            Some(status) => running && status.state == InstanceState::Running,
            None => !running,
        };
        if done {
            return Ok(Instant::now());
        }
        if Instant::now() > deadline {
            bail!(
                "{id} was not {} within {POD_TIMEOUT:?}: {seen:?}",
                if running { "running" } else { "gone" }
            );
        }
        tokio::time::sleep(POLL).await;
    }
}

/// When the runtime's own listing (`ctr containers ls`) holds nothing of instance `id`.
async fn gone_from_runtime(containerd: &Containerd, id: &str) -> Result<Instant> {
    let deadline = Instant::now() + POD_TIMEOUT;
    loop {
        let left = containerd
            .containers()?
            .into_iter()
            .any(|c| c.labels.values().any(|v| v == id));
        if !left {
            return Ok(Instant::now());
        }
        if Instant::now() > deadline {
            bail!("{id} was still in the runtime after {POD_TIMEOUT:?}");
        }
        tokio::time::sleep(POLL).await;
    }
}

/// Starts one pod and removes it; how long each took (the removal until the runtime holds
/// nothing of it).
async fn one(
    client: &AgentClient,
    containerd: &Containerd,
    set: &str,
    id: &str,
    image: &str,
) -> Result<(Duration, Duration)> {
    client
        .put_set(set, &desired(1, 1, vec![pod(id, image)?]))
        .await?
        .ok::<serde_json::Value>()?;
    let answered = Instant::now();
    let running = until(client, id, true).await?;
    client
        .put_set(set, &desired(1, 1, Vec::new()))
        .await?
        .ok::<serde_json::Value>()?;
    let asked = Instant::now();
    until(client, id, false).await?;
    let gone = gone_from_runtime(containerd, id).await?;
    Ok((running - answered, gone - asked))
}

/// Runs the benchmark.
pub async fn run(args: ContainersArgs) -> Result<()> {
    drover_tests::containers::require();
    let registry = Registry::start_plain()?;
    let layout = Layout::new()?;
    layout.build("sleep", &ImageSpec::busybox(&["sleep", "3600"]))?;
    let image = registry.push(&layout, "sleep", "sleep:v1")?.reference;
    let containerd = Containerd::start(&[&registry])?;
    let agent = AgentProcess::start(&[
        "--executor=container",
        &format!("--container-runtime-endpoint={}", containerd.endpoint()),
        &format!(
            "--cgroup-parent={}",
            containerd.cgroup_parent().trim_start_matches('/')
        ),
    ])?;
    let client = agent.client();
    // The pull (and the sandbox image's) happen here, before the clock.
    let (warm, _) = one(&client, &containerd, "warm", "warm.main.r1.0", &image)
        .await
        .context("the warm-up pod")?;
    println!("containers: warm-up pod (pulls the image and the sandbox image) started in {warm:?}");
    let mut starts = Samples::default();
    let mut stops = Samples::default();
    for n in 0..args.pods {
        let set = format!("b{n}");
        let (start, stop) = one(&client, &containerd, &set, &format!("{set}.main.r1.0"), &image).await?;
        starts.record(start);
        stops.record(stop);
    }
    let (p50, p99) = (starts.quantile_ms(0.50), starts.quantile_ms(0.99));
    println!(
        "containers: {} pods with a cached image, one at a time (containerd {}, runc, CNI bridge)",
        starts.len(),
        containerd
            .ctr(&["version"])
            .map(|v| version_line(&v))
            .unwrap_or_default()
    );
    println!("  pod start (set answered -> every container running): p50 {p50:.0} ms, p99 {p99:.0} ms, max {:.0} ms", starts.quantile_ms(1.0));
    println!(
        "  Kubernetes pod startup SLO: p99 <= {} ms (pulls excluded); this machine's goal: p99 <= {} ms",
        SLO_P99.as_millis(),
        GOAL_P99.as_millis()
    );
    println!(
        "  pod removal (empty set answered -> nothing of it in `ctr containers ls`, polled, each poll about 20-50 ms): p50 {:.0} ms, p99 {:.0} ms",
        stops.quantile_ms(0.50),
        stops.quantile_ms(0.99)
    );
    Ok(())
}

/// The server's version line of `ctr version`.
fn version_line(text: &str) -> String {
    text.lines()
        .skip_while(|l| !l.starts_with("Server"))
        .find_map(|l| l.trim().strip_prefix("Version:").map(|v| v.trim().to_string()))
        .unwrap_or_default()
}
