//! A Krake Application of container images on Drover, end to end as a Krake user drives it (#51,
//! acceptance 1): three `drover serve` processes, one `drover agent --executor container`
//! driving a containerd of the test's own, registered as the Krake Cluster `box` of namespace
//! `ns1`, and a registry with TLS and basic auth holding two tags of a busybox `httpd` image
//! whose index pages differ. Every step goes through Krake 1.0.1's own `krake.client`
//! (`tests/compat/krake/image_app_client.py`); containerd's own listing (`ctr`) is the ground
//! truth of what runs. The Application's manifest holds a `kubernetes.io/dockerconfigjson`
//! Secret named by the Deployment's `imagePullSecrets`, the Deployment (2 replicas, container
//! port 8080, no host port: the default pod security level allows none) and a Service: it runs
//! two containers, the address in `status.services` (a running pod's own address) answers from
//! this process, a scale to 3 runs three, a new tag rolls every container onto the new digest and
//! the address answers the new page, and a delete leaves no container, sandbox or snapshot of it.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use anyhow::{ensure, Context, Result};
use drover_model::cluster::agent_api::InstanceState;
use drover_tests::agent::{AgentProcess, AGENT_TOKEN};
use drover_tests::containers::{self, Containerd, CtrContainer, ImageSpec, Layout, Pushed, Registry};
use drover_tests::krake_calls::{call, namespace_with_environment};
use drover_tests::platform::{process_platform_args, token, PlatformClient, OPERATOR_SUBJECT};
use drover_tests::process::ProcessCluster;
use drover_tests::wait::eventually;
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
use tempfile::TempDir;

const ELECTION: Duration = Duration::from_secs(20);
const CONVERGE: Duration = Duration::from_secs(60);
const USER: &str = "puller";
const PASSWORD: &str = "pull-secret-51a";
const NAMESPACE: &str = "ns1";
const APP: &str = "shop";
/// Every instance of the application has an id starting so (its containers carry it as a label).
const INSTANCE_PREFIX: &str = "ns1.shop.";

/// The Application's manifest: the pull Secret, the Deployment of `image` with `replicas`, and
/// its Service.
fn manifest(registry: &Registry, image: &str, replicas: u32) -> Value {
    let config = json!({"auths": {registry.host(): {"username": USER, "password": PASSWORD}}});
    json!([
        {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "pull"},
         "type": "kubernetes.io/dockerconfigjson",
         "stringData": {".dockerconfigjson": config.to_string()}},
        {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
         "spec": {"replicas": replicas, "template": {"spec": {
             "imagePullSecrets": [{"name": "pull"}],
             "terminationGracePeriodSeconds": 2,
             "containers": [{"name": "web", "image": image,
                             "ports": [{"containerPort": 8080}],
                             "resources": {"requests": {"cpu": "100m", "memory": "16Mi"}}}]}}}},
        {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"},
         "spec": {"ports": [{"port": 80, "targetPort": 8080}]}},
    ])
}

/// The Krake Cluster `name` run by `agent`.
fn cluster(name: &str, agent: &AgentProcess) -> Value {
    json!({
        "api": "kubernetes", "kind": "Cluster",
        "metadata": {"name": name, "labels": {}},
        "spec": {"kubeconfig": {
                    "apiVersion": "v1", "kind": "Config", "current-context": name,
                    "clusters": [{"name": name, "cluster": {"server": format!("http://{}", agent.addr())}}],
                    "users": [{"name": name, "user": {"token": AGENT_TOKEN}}],
                    "contexts": [{"name": name, "context": {"cluster": name, "user": name}}]},
                 "constraints": {"cloud": {"labels": [], "metrics": []}}},
    })
}

/// One step through `krake.client` (`create FILE`, `update FILE`, `read`, `delete`): what it
/// printed.
async fn krake_client(addr: &str, action: &str, file: Option<&Path>) -> Result<String> {
    let mut args = vec![
        format!("http://{addr}"),
        token(OPERATOR_SUBJECT),
        NAMESPACE.to_string(),
        APP.to_string(),
        action.to_string(),
    ];
    args.extend(file.map(|f| f.display().to_string()));
    drover_tests::krake::run("image_app_client.py", args).await
}

/// The application's status as `krake.client` parsed it.
async fn read_status(addr: &str) -> Result<Value> {
    let said = krake_client(addr, "read", None).await?;
    let line = said
        .lines()
        .find_map(|l| l.strip_prefix("status: "))
        .with_context(|| format!("no status in {said}"))?;
    Ok(serde_json::from_str(line)?)
}

/// Waits until the application (read through the Krake API) is `RUNNING` with `pods` running.
async fn running_with(addr: &str, pods: u64) -> Result<Value> {
    let last = Mutex::new(Value::Null);
    let path = format!("/kubernetes/namespaces/{NAMESPACE}/applications/{APP}");
    let found = eventually(CONVERGE, &format!("{APP} RUNNING with {pods} pods"), || async {
        let (status, app) = call(addr, OPERATOR_SUBJECT, Method::GET, &path, None)
            .await
            .ok()?;
        *held(&last) = app.clone();
        (status == StatusCode::OK
            && app["status"]["state"] == "RUNNING"
            && app["status"]["container_health"]["running_pods"] == pods
            && app["status"]["container_health"]["desired_pods"] == pods)
            .then_some(app)
    })
    .await;
    found.with_context(|| format!("last seen: {}", held(&last)))
}

/// Every container (sandboxes too) that the runtime holds for the application.
fn everything_of_app(containerd: &Containerd) -> Vec<CtrContainer> {
    containerd
        .containers()
        .unwrap_or_default()
        .into_iter()
        .filter(|c| c.labels.values().any(|v| v.starts_with(INSTANCE_PREFIX)))
        .collect()
}

/// The application's `web` containers whose task runs, each with the manifest digest of the
/// image it was made from (ground truth: `ctr containers`, `ctr tasks`, `ctr images`).
fn running_web(containerd: &Containerd) -> Result<Vec<(CtrContainer, String)>> {
    let tasks = containerd.tasks()?;
    let images = containerd.images()?;
    let running: BTreeSet<&str> = tasks
        .iter()
        .filter(|t| t.status == "RUNNING")
        .map(|t| t.id.as_str())
        .collect();
    Ok(everything_of_app(containerd)
        .into_iter()
        .filter(|c| c.labels.get("drover.container").map(String::as_str) == Some("web"))
        .filter(|c| running.contains(c.id.as_str()))
        .map(|c| {
            let digest = images
                .iter()
                .find(|i| i.reference == c.image)
                .map(|i| i.digest.clone())
                .unwrap_or_else(|| c.image.clone());
            (c, digest)
        })
        .collect())
}

/// Waits until exactly `count` of the application's `web` containers run, all of `pushed`'s
/// digest.
async fn runtime_runs(containerd: &Containerd, count: usize, pushed: &Pushed) -> Result<Vec<CtrContainer>> {
    let last = Mutex::new(Vec::new());
    let found = eventually(
        CONVERGE,
        &format!("{count} containers of {} in the runtime", pushed.reference),
        || async {
            let running = running_web(containerd).ok()?;
            *held(&last) = running.clone();
            (running.len() == count && running.iter().all(|(_, digest)| digest == &pushed.digest))
                .then(|| running.into_iter().map(|(c, _)| c).collect())
        },
    )
    .await;
    found.with_context(|| format!("last seen running: {:?}", held(&last)))
}

/// What a waiting loop last saw (a poisoned lock still holds it).
fn held<T>(last: &Mutex<T>) -> MutexGuard<'_, T> {
    last.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Waits until the address `krake.client` reads in `status.services.web` answers `page`, and
/// that address is a running pod's own (as the agent's inventory reports it).
async fn service_answers(addr: &str, agent: &AgentProcess, page: &str) -> Result<String> {
    let last = Mutex::new(String::new());
    let found = eventually(
        CONVERGE,
        &format!("status.services.web answering {page:?}"),
        || async {
            let status = read_status(addr).await.ok()?;
            let address = status["services"]["web"].as_str()?.to_string();
            let answer = containers::index_page(&address).await;
            *held(&last) = format!("{status} answered {answer:?}");
            (answer.as_deref().map(str::trim) == Some(page)).then_some(address)
        },
    )
    .await;
    let address = found.with_context(|| format!("last: {}", held(&last)))?;
    eprintln!("status.services.web = {address} answers {page:?}");
    let pods: Vec<String> = agent
        .client()
        .instances_with_prefix(INSTANCE_PREFIX)
        .await
        .unwrap_or_default()
        .into_iter()
        .filter(|i| i.state == InstanceState::Running)
        .filter_map(|i| i.pod?.ip)
        .collect();
    let host = address
        .rsplit_once(':')
        .map_or(address.as_str(), |(host, _)| host);
    ensure!(
        pods.iter().any(|ip| ip == host),
        "{address} is a running pod's address (pods at {pods:?})"
    );
    Ok(address)
}

fn write_json(dir: &TempDir, name: &str, value: &Value) -> Result<std::path::PathBuf> {
    let path = dir.path().join(name);
    std::fs::write(&path, serde_json::to_vec(value)?)?;
    Ok(path)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_image_application_runs_answers_scales_rolls_and_leaves_nothing() -> Result<()> {
    containers::require();
    let registry = Registry::start_secure(USER, PASSWORD)?;
    let layout = Layout::new()?;
    layout.build("v1", &ImageSpec::httpd(8080, "served by v1"))?;
    layout.build("v2", &ImageSpec::httpd(8080, "served by v2"))?;
    let v1 = registry.push(&layout, "v1", "web:v1")?;
    let v2 = registry.push(&layout, "v2", "web:v2")?;
    ensure!(v1.digest != v2.digest, "two tags, two digests");
    let containerd = Containerd::start(&[&registry])?;
    let agent = AgentProcess::start(&[
        "--executor=container",
        &format!("--container-runtime-endpoint={}", containerd.endpoint()),
        &format!(
            "--cgroup-parent={}",
            containerd.cgroup_parent().trim_start_matches('/')
        ),
        "--restart-backoff=200ms",
    ])?;

    let dir = TempDir::new()?;
    let mut args = process_platform_args(dir.path())?;
    args.push("--cluster-probe-interval=200ms".to_string());
    let nodes = ProcessCluster::start_with_args(3, &args)?;
    nodes.leader(ELECTION).await?;
    let root = PlatformClient::new(&nodes.api_addr(1), Some(token(OPERATOR_SUBJECT)));
    root.register(OPERATOR_SUBJECT).await?;
    namespace_with_environment(&root, NAMESPACE).await?;
    let (status, online) = call(
        &nodes.api_addr(2),
        OPERATOR_SUBJECT,
        Method::POST,
        "/kubernetes/namespaces/ns1/clusters?blocking=online",
        Some(&cluster("box", &agent)),
    )
    .await?;
    ensure!(
        status == StatusCode::OK && online["status"]["state"] == "ONLINE",
        "{status}: {online}"
    );
    let addr = nodes.api_addr(3);

    // Created through krake.client: two containers of v1 run, pulled with the Secret's
    // credentials, and the Service's address answers v1's page.
    let body = json!({
        "api": "kubernetes", "kind": "Application",
        "metadata": {"name": APP},
        "spec": {"manifest": manifest(&registry, &v1.reference, 2),
                 "constraints": {"cluster": {"labels": [], "custom_resources": [], "metrics": []},
                                 "migration": true},
                 "hooks": [], "shutdown_grace_time": 30},
    });
    krake_client(&addr, "create", Some(&write_json(&dir, "app.json", &body)?)).await?;
    running_with(&addr, 2).await?;
    let mut seen: BTreeSet<String> = BTreeSet::new();
    runtime_runs(&containerd, 2, &v1).await?;
    seen.extend(everything_of_app(&containerd).into_iter().map(|c| c.id));
    let status = read_status(&addr).await?;
    ensure!(
        status["state"] == "RUNNING" && status["running_on"] == "box",
        "{status}"
    );
    let first = service_answers(&addr, &agent, "served by v1").await?;
    ensure!(first.ends_with(":8080"), "the container port: {first}");

    // Scaled to three by an update of the manifest through krake.client.
    let scaled = manifest(&registry, &v1.reference, 3);
    krake_client(&addr, "update", Some(&write_json(&dir, "scaled.json", &scaled)?)).await?;
    running_with(&addr, 3).await?;
    runtime_runs(&containerd, 3, &v1).await?;
    seen.extend(everything_of_app(&containerd).into_iter().map(|c| c.id));

    // A new tag rolls: every running container is v2's digest, and the address answers v2.
    let rolled = manifest(&registry, &v2.reference, 3);
    krake_client(&addr, "update", Some(&write_json(&dir, "rolled.json", &rolled)?)).await?;
    let after = runtime_runs(&containerd, 3, &v2).await?;
    running_with(&addr, 3).await?;
    ensure!(
        after.iter().all(|c| !seen.contains(&c.id)),
        "the new tag runs in new containers"
    );
    seen.extend(everything_of_app(&containerd).into_iter().map(|c| c.id));
    service_answers(&addr, &agent, "served by v2").await?;
    let inventory = agent.client().instances_with_prefix(INSTANCE_PREFIX).await;
    let images: BTreeMap<String, Vec<Option<String>>> = inventory
        .unwrap_or_default()
        .into_iter()
        .map(|i| {
            let ids = i
                .pod
                .map(|p| p.containers.into_iter().map(|c| c.image_id).collect());
            (i.id.to_string(), ids.unwrap_or_default())
        })
        .collect();
    ensure!(
        images.len() == 3
            && images
                .values()
                .flatten()
                .all(|id| id.as_deref().is_some_and(|id| id.ends_with(&v2.digest))),
        "the agent reports v2's digest running: {images:?}"
    );

    // Deleted through krake.client: nothing of it is left in the runtime.
    krake_client(&addr, "delete", None).await?;
    let path = format!("/kubernetes/namespaces/{NAMESPACE}/applications/{APP}");
    eventually(CONVERGE, "the application gone", || async {
        let (status, _) = call(&addr, OPERATOR_SUBJECT, Method::GET, &path, None)
            .await
            .ok()?;
        (status == StatusCode::NOT_FOUND).then_some(())
    })
    .await?;
    eventually(CONVERGE, "no container or sandbox of it", || async {
        everything_of_app(&containerd).is_empty().then_some(())
    })
    .await?;
    let snapshots = containerd.snapshots()?;
    let left: Vec<_> = snapshots.iter().filter(|s| seen.contains(&s.key)).collect();
    ensure!(
        left.is_empty(),
        "no snapshot of its containers or sandboxes: {left:?}"
    );
    ensure!(
        agent
            .client()
            .instances_with_prefix(INSTANCE_PREFIX)
            .await
            .is_some_and(|left| left.is_empty()),
        "the agent runs nothing of it"
    );
    Ok(())
}
