//! The `container` executor against a real runtime: a `drover agent --executor container`
//! process drives a containerd of the test's own through the CRI, pulling images the test built
//! from Debian's busybox and pushed to a registry it started (TLS and basic auth). The ground
//! truth is containerd's own listing (`ctr`), never only the agent's inventory.

use std::collections::BTreeMap;
use std::time::Duration;

use anyhow::{Context, Result};
use drover_model::cluster::agent_api::{
    ExecSpec, InstanceId, InstanceSpec, InstanceState, InstanceStatus, Resources,
};
use drover_model::cluster::pod::{
    ContainerPhase, ContainerPort, ContainerSpec, PodSpec, PortProtocol, PullAuth,
};
use drover_tests::agent::{desired, AgentClient, AgentProcess};
use drover_tests::containers::{self, Containerd, CtrContainer, ImageSpec, Layout, Registry};
use drover_tests::wait::eventually;

const USER: &str = "puller";
const PASSWORD: &str = "pull-secret-7d1f";

fn pod_instance(id: &str, containers: Vec<ContainerSpec>, auth: Option<(&str, &str, &str)>) -> InstanceSpec {
    InstanceSpec {
        id: InstanceId::parse(id).expect("a test instance id"),
        exec: ExecSpec {
            pod: Some(PodSpec {
                termination_grace_secs: 2,
                pull_auth: auth
                    .map(|(registry, username, password)| PullAuth {
                        registry: registry.into(),
                        username: username.into(),
                        password: password.into(),
                    })
                    .into_iter()
                    .collect(),
                ..PodSpec::of(containers)
            }),
            ..Default::default()
        },
        resources: Resources {
            cpu_millis: 50,
            memory_mib: 32,
        },
        env: BTreeMap::new(),
    }
}

fn agent(containerd: &Containerd) -> Result<AgentProcess> {
    AgentProcess::start(&[
        "--executor=container",
        &format!("--container-runtime-endpoint={}", containerd.endpoint()),
        &format!(
            "--cgroup-parent={}",
            containerd.cgroup_parent().trim_start_matches('/')
        ),
        "--restart-backoff=200ms",
        // The failures test pulls one image over this; the others are a few MiB.
        "--max-image-mib=16",
    ])
}

/// The ground-truth containers of instance `id` running container `name` (not its sandbox).
fn runtime_containers(containerd: &Containerd, id: &str, name: &str) -> Vec<CtrContainer> {
    let listed = containerd.containers().expect("ctr containers ls");
    listed
        .into_iter()
        .filter(|c| {
            c.labels.get("drover.instance").map(String::as_str) == Some(id)
                && c.labels.get("drover.container").map(String::as_str) == Some(name)
        })
        .collect()
}

/// Every container (sandboxes too) that the CRI made for instance `id`.
fn everything_of(containerd: &Containerd, id: &str) -> Vec<CtrContainer> {
    containerd
        .containers()
        .unwrap_or_default()
        .into_iter()
        .filter(|c| c.labels.values().any(|v| v == id))
        .collect()
}

async fn status_where(
    client: &AgentClient,
    id: &str,
    what: &str,
    check: impl Fn(&InstanceStatus) -> bool,
) -> Result<InstanceStatus> {
    let last = std::sync::Mutex::new(None);
    let found = eventually(Duration::from_secs(60), what, || async {
        let seen = client.instance(id).await.ok().flatten();
        *last.lock().unwrap_or_else(|p| p.into_inner()) = seen.clone();
        seen.filter(|s| check(s))
    })
    .await;
    found.with_context(|| {
        format!(
            "{id} was last seen as {:?}",
            last.lock().unwrap_or_else(|p| p.into_inner())
        )
    })
}

fn container_state(status: &InstanceStatus, name: &str) -> Option<(ContainerPhase, Option<String>, u32)> {
    let report = status.pod.as_ref()?.containers.iter().find(|c| c.name == name)?;
    Some((report.state, report.reason.clone(), report.restart_count))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pod_runs_from_a_private_registry_survives_its_agent_and_leaves_nothing() -> Result<()> {
    containers::require();
    let registry = Registry::start_secure(USER, PASSWORD)?;
    let layout = Layout::new()?;
    layout.build("v1", &ImageSpec::httpd(8080, "served by v1"))?;
    let pushed = registry.push(&layout, "v1", "web:v1")?;
    let containerd = Containerd::start(&[&registry])?;
    let mut agent = agent(&containerd)?;
    let client = agent.client();

    let id = "web.main.r1.0";
    let mut web = ContainerSpec::new("web", &pushed.reference);
    web.ports.push(ContainerPort {
        container_port: 8080,
        host_port: None,
        protocol: PortProtocol::Tcp,
    });
    let spec = pod_instance(id, vec![web], Some((&registry.host(), USER, PASSWORD)));
    client
        .put_set("web", &desired(1, 1, vec![spec]))
        .await?
        .ok::<serde_json::Value>()?;

    let running = status_where(&client, id, "the pod running with an address", |s| {
        s.state == InstanceState::Running && s.pod.as_ref().is_some_and(|p| p.ip.is_some())
    })
    .await?;
    let pod = running.pod.clone().context("pod report")?;
    let ip = pod.ip.clone().context("pod address")?;
    let image_id = pod.containers[0].image_id.clone().unwrap_or_default();
    assert!(
        image_id.ends_with(&pushed.digest),
        "the digest that runs is reported: {image_id} vs {}",
        pushed.digest
    );
    let address = format!("{ip}:8080");
    let answer = eventually(Duration::from_secs(20), "the pod's port answering", || {
        containers::index_page(&address)
    })
    .await?;
    assert_eq!(answer.trim(), "served by v1");
    // A pod that runs unchanged changes nothing the inventory shows: some two-second window
    // leaves the agent's generation where it was (a write per tick would move it in every one).
    let steady = eventually(
        Duration::from_secs(20),
        "a two-second window without a change",
        || async {
            let before = client.facts().await.ok()?.generation;
            tokio::time::sleep(Duration::from_secs(2)).await;
            let after = client.facts().await.ok()?.generation;
            (after == before).then_some(())
        },
    )
    .await;
    assert!(
        steady.is_ok(),
        "the agent's generation moved in every window while nothing changed"
    );
    let first = runtime_containers(&containerd, id, "web");
    assert_eq!(first.len(), 1, "one container in the runtime: {first:?}");
    let tasks = containerd.tasks()?;
    assert!(
        tasks.iter().any(|t| t.id == first[0].id && t.status == "RUNNING"),
        "its task runs: {tasks:?}"
    );

    // SIGKILLed and started again, the agent adopts the pod: the same container, no second.
    agent.kill()?;
    agent.restart()?;
    let client = agent.client();
    let adopted = status_where(&client, id, "the pod adopted after the agent's restart", |s| {
        s.state == InstanceState::Running
    })
    .await?;
    assert_eq!(
        container_state(&adopted, "web").map(|c| c.2),
        Some(0),
        "nothing restarted"
    );
    let after = runtime_containers(&containerd, id, "web");
    assert_eq!(after, first, "the same container runs, and only it");

    // Killed behind the agent's back, the container is started again, counted.
    containerd.ctr(&["tasks", "kill", "--signal", "SIGKILL", &first[0].id])?;
    let restarted = status_where(&client, id, "the killed container started again", |s| {
        s.state == InstanceState::Running && container_state(s, "web").is_some_and(|c| c.2 >= 1)
    })
    .await?;
    assert!(restarted.restarts >= 1, "{restarted:?}");
    let now = runtime_containers(&containerd, id, "web");
    assert_eq!(now.len(), 1, "the ended run is removed, one runs: {now:?}");
    assert_ne!(now[0].id, first[0].id);
    eventually(Duration::from_secs(20), "the new run answering", || {
        containers::index_page(&address)
    })
    .await?;

    // The set emptied: no container, sandbox or snapshot of the pod is left.
    client
        .put_set("web", &desired(1, 1, Vec::new()))
        .await?
        .ok::<serde_json::Value>()?;
    eventually(
        Duration::from_secs(60),
        "nothing of the pod left in the runtime",
        || async { everything_of(&containerd, id).is_empty().then_some(()) },
    )
    .await?;
    let snapshots = containerd.snapshots()?;
    assert!(
        !snapshots
            .iter()
            .any(|s| s.key == now[0].id || s.key == first[0].id),
        "no snapshot of its containers: {snapshots:?}"
    );
    assert!(agent.client().instance(id).await?.is_none());
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failures_are_reported_as_kubernetes_states_and_recover() -> Result<()> {
    containers::require();
    let mut registry = Registry::start_secure(USER, PASSWORD)?;
    let layout = Layout::new()?;
    layout.build("app", &ImageSpec::busybox(&["sleep", "3600"]))?;
    layout.build("big", &ImageSpec::busybox(&["sleep", "3600"]).random_mib(24))?;
    let pushed = registry.push(&layout, "app", "app:v1")?;
    let big = registry.push(&layout, "big", "big:v1")?;
    let containerd = Containerd::start(&[&registry])?;
    let agent = agent(&containerd)?;
    let client = agent.client();
    let host = registry.host();
    let auth = Some((host.as_str(), USER, PASSWORD));

    let unknown = pod_instance(
        "bad.unknown.r1.0",
        vec![ContainerSpec::new("c", registry.reference("app:nope"))],
        auth,
    );
    let refused = pod_instance(
        "bad.creds.r1.0",
        vec![ContainerSpec::new("c", &pushed.reference)],
        Some((&host, USER, "wrong")),
    );
    let mut crash = ContainerSpec::new("c", &pushed.reference);
    crash.command = vec!["sh".into(), "-c".into(), "echo crashing; exit 3".into()];
    let crashing = pod_instance("bad.crash.r1.0", vec![crash], auth);
    let mut hog = ContainerSpec::new("hog", &pushed.reference);
    hog.command = vec![
        "sh".into(),
        "-c".into(),
        "a=xxxxxxxx; while :; do a=$a$a; done".into(),
    ];
    hog.limits = Resources {
        cpu_millis: 0,
        memory_mib: 16,
    };
    let neighbour = ContainerSpec::new("neighbour", &pushed.reference);
    let hungry = pod_instance("bad.oom.r1.0", vec![neighbour, hog], auth);
    let oversized = pod_instance(
        "bad.big.r1.0",
        vec![ContainerSpec::new("c", &big.reference)],
        auth,
    );
    client
        .put_set(
            "bad",
            &desired(1, 1, vec![unknown, refused, crashing, hungry, oversized]),
        )
        .await?
        .ok::<serde_json::Value>()?;

    let pull_failed = |s: &InstanceStatus| {
        container_state(s, "c").is_some_and(|(phase, reason, _)| {
            phase == ContainerPhase::Waiting
                && matches!(reason.as_deref(), Some("ErrImagePull" | "ImagePullBackOff"))
        })
    };
    let unknown = status_where(
        &client,
        "bad.unknown.r1.0",
        "an unknown tag fails to pull",
        pull_failed,
    )
    .await?;
    let words = unknown
        .pod
        .as_ref()
        .and_then(|p| p.containers[0].message.clone())
        .unwrap_or_default();
    assert!(words.contains("not found"), "the runtime's words: {words}");
    assert_eq!(unknown.state, InstanceState::Failed);
    let refused = status_where(
        &client,
        "bad.creds.r1.0",
        "refused credentials fail to pull",
        pull_failed,
    )
    .await?;
    let words = refused
        .pod
        .as_ref()
        .and_then(|p| p.containers[0].message.clone())
        .unwrap_or_default();
    assert!(
        words.contains("401") || words.to_lowercase().contains("unauthorized"),
        "the runtime's words: {words}"
    );
    status_where(&client, "bad.unknown.r1.0", "the pull backing off", |s| {
        container_state(s, "c").is_some_and(|c| c.1.as_deref() == Some("ImagePullBackOff"))
    })
    .await?;

    let oversized = match status_where(
        &client,
        "bad.big.r1.0",
        "an image over the size limit refused",
        pull_failed,
    )
    .await
    {
        Ok(status) => status,
        Err(e) => panic!("{e:#}\n{}", agent.log()),
    };
    let words = oversized
        .pod
        .as_ref()
        .and_then(|p| p.containers[0].message.clone())
        .unwrap_or_default();
    assert!(
        words.contains("over this agent's limit of 16 MiB"),
        "the agent's words: {words}"
    );
    let images = containerd.images()?;
    assert!(
        !images.iter().any(|i| i.digest == big.digest),
        "the image over the limit is removed from the machine: {images:?}"
    );

    let crashed = status_where(
        &client,
        "bad.crash.r1.0",
        "a crashing entrypoint in CrashLoopBackOff",
        |s| {
            container_state(s, "c").is_some_and(|(phase, reason, restarts)| {
                phase == ContainerPhase::Waiting
                    && reason.as_deref() == Some("CrashLoopBackOff")
                    && restarts >= 2
            })
        },
    )
    .await?;
    assert_eq!(crashed.exit_code, Some(3));
    // Its output reaches the agent's log route, in the CRI's log format, every run appended.
    let logs = client.logs("bad.crash.r1.0", "tail=100").await?;
    assert_eq!(logs.status, 200, "{}", logs.body);
    let runs = logs
        .body
        .lines()
        .filter(|l| l.ends_with(" stdout F crashing"))
        .count();
    assert!(runs >= 2, "every run's line, in the CRI's format: {}", logs.body);

    let killed = status_where(&client, "bad.oom.r1.0", "the hog killed at its limit", |s| {
        s.oom_kills >= 1
    })
    .await?;
    assert_eq!(killed.reason.map(|r| r.as_str()), Some("OOMKilled"), "{killed:?}");
    let neighbour = container_state(&killed, "neighbour");
    assert_eq!(
        neighbour.as_ref().map(|c| (c.0, c.2)),
        Some((ContainerPhase::Running, 0)),
        "the neighbour is untouched: {neighbour:?}"
    );

    // A registry that is down is a failed pull; once it is back, the pull succeeds.
    registry.stop();
    let mut always = ContainerSpec::new("c", &pushed.reference);
    always.pull_policy = Some(drover_model::cluster::pod::PullPolicy::Always);
    let later = pod_instance("late.app.r1.0", vec![always], auth);
    client
        .put_set("late", &desired(1, 1, vec![later]))
        .await?
        .ok::<serde_json::Value>()?;
    status_where(
        &client,
        "late.app.r1.0",
        "a pull from a registry that is down fails",
        pull_failed,
    )
    .await?;
    registry.start_again()?;
    status_where(
        &client,
        "late.app.r1.0",
        "the pull succeeding once the registry is back",
        |s| s.state == InstanceState::Running,
    )
    .await?;
    let runs = runtime_containers(&containerd, "late.app.r1.0", "c");
    assert_eq!(runs.len(), 1, "{runs:?} of {:?}", containerd.containers());

    for set in ["bad", "late"] {
        client
            .put_set(set, &desired(1, 1, Vec::new()))
            .await?
            .ok::<serde_json::Value>()?;
    }
    eventually(Duration::from_secs(60), "nothing left in the runtime", || async {
        let left: Vec<_> = containerd
            .containers()
            .unwrap_or_default()
            .into_iter()
            .filter(|c| c.labels.contains_key("drover.instance"))
            .collect();
        left.is_empty().then_some(())
    })
    .await?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_killed_mid_rollout_leaves_exactly_the_new_pods() -> Result<()> {
    containers::require();
    let registry = Registry::start_plain()?;
    let layout = Layout::new()?;
    layout.build("v1", &ImageSpec::httpd(8080, "v1"))?;
    layout.build("v2", &ImageSpec::httpd(8080, "v2"))?;
    let v1 = registry.push(&layout, "v1", "roll:v1")?;
    let v2 = registry.push(&layout, "v2", "roll:v2")?;
    let containerd = Containerd::start(&[&registry])?;
    let mut agent = agent(&containerd)?;
    let client = agent.client();
    let revision = |rev: u32, image: &str| -> Vec<InstanceSpec> {
        (0..3)
            .map(|n| {
                pod_instance(
                    &format!("roll.web.r{rev}.{n}"),
                    vec![ContainerSpec::new("web", image)],
                    None,
                )
            })
            .collect()
    };
    client
        .put_set("roll", &desired(1, 1, revision(1, &v1.reference)))
        .await?
        .ok::<serde_json::Value>()?;
    for n in 0..3 {
        status_where(
            &client,
            &format!("roll.web.r1.{n}"),
            "the first revision running",
            |s| s.state == InstanceState::Running,
        )
        .await?;
    }
    // The new revision replaces the old one; the agent is SIGKILLed as soon as it answers,
    // while pods of both are being made and removed.
    client
        .put_set("roll", &desired(1, 1, revision(2, &v2.reference)))
        .await?
        .ok::<serde_json::Value>()?;
    agent.restart()?;
    let client = agent.client();
    for n in 0..3 {
        status_where(
            &client,
            &format!("roll.web.r2.{n}"),
            "the second revision running",
            |s| s.state == InstanceState::Running,
        )
        .await?;
    }
    eventually(
        Duration::from_secs(60),
        "exactly the new pods in the runtime",
        || async {
            let web: Vec<CtrContainer> = containerd
                .containers()
                .ok()?
                .into_iter()
                .filter(|c| c.labels.get("drover.container").map(String::as_str) == Some("web"))
                .collect();
            let mut owners: Vec<&str> = web
                .iter()
                .filter_map(|c| c.labels.get("drover.instance").map(String::as_str))
                .collect();
            owners.sort_unstable();
            (owners == ["roll.web.r2.0", "roll.web.r2.1", "roll.web.r2.2"]).then_some(())
        },
    )
    .await?;
    let tasks = containerd.tasks()?;
    let running = tasks.iter().filter(|t| t.status == "RUNNING").count();
    // Three pods: a sandbox and a container each.
    assert_eq!(
        running, 6,
        "no second copy and nothing of the old revision runs: {tasks:?}"
    );
    client
        .put_set("roll", &desired(1, 1, Vec::new()))
        .await?
        .ok::<serde_json::Value>()?;
    eventually(Duration::from_secs(60), "nothing left in the runtime", || async {
        let left = containerd.containers().ok()?;
        left.iter()
            .all(|c| !c.labels.contains_key("drover.instance"))
            .then_some(())
    })
    .await?;
    Ok(())
}
