//! A Kumori component naming an image really runs (#51, acceptance 4): three `drover serve`
//! processes, one `drover agent --executor container` driving a containerd of the test's own,
//! registered as the platform cluster `box`, and a registry with TLS and basic auth holding a
//! busybox `httpd` image. A bundle whose component's `code` names that image, its `hub.secret`
//! a tenant secret holding the registry's credentials, runs: the service reports its instance
//! running, containerd's own listing (`ctr`) holds exactly one container of it, the pod's address
//! answers the image's index page, and deleting the service leaves no container of it.

use std::time::Duration;

use anyhow::{ensure, Context, Result};
use drover_tests::agent::AgentProcess;
use drover_tests::bundles::{answer_of, zip_of};
use drover_tests::containers::{self, Containerd, CtrContainer, ImageSpec, Layout, Registry};
use drover_tests::platform::{process_platform_args, token, PlatformClient, OPERATOR_SUBJECT};
use drover_tests::process::ProcessCluster;
use drover_tests::services::tenant_with_clusters;
use drover_tests::wait::eventually;
use reqwest::StatusCode;
use serde_json::{json, Value};
use tempfile::TempDir;

const ELECTION: Duration = Duration::from_secs(20);
const WAIT: Duration = Duration::from_secs(90);
const USER: &str = "puller";
const PASSWORD: &str = "pull-secret-467c";
const PAGE: &str = "served by a kumori component";
/// The one instance of role `web` of service `imaged`.
const INSTANCE: &str = "acme.imaged.web.r1.0";

/// Module `img` of `acme.mods`: component `web`, running `tag` of registry `hub` with the
/// credentials of tenant secret `secret`.
fn image_bundle(hub: &str, tag: &str, secret: &str) -> Result<Vec<u8>> {
    let kmodule = json!({"domain": "acme.mods", "module": "img", "version": [1, 0, 0],
                         "artifacts": {"web": "component"}});
    let artifact = json!({
        "code": {"main": {"name": "main",
                          "image": {"hub": {"name": hub, "secret": secret}, "tag": tag},
                          "mapping": {"filesystem": {}, "env": {}}}},
        "resources": {"cpu_millis": 50, "memory_mib": 16}});
    let deployment = json!({"artifact": {"ref": {"domain": "acme.mods", "module": "img"}}});
    Ok(zip_of(&[
        ("img/kmodule.json", serde_json::to_vec(&kmodule)?),
        ("img/web/artifact.json", serde_json::to_vec(&artifact)?),
        ("deployment/deployment.json", serde_json::to_vec(&deployment)?),
    ]))
}

/// `POST` of a bundle as alice.
async fn send_bundle(addr: &str, path: &str, bundle: Vec<u8>) -> Result<(StatusCode, Value)> {
    let form = reqwest::multipart::Form::new()
        .part(
            "bundle",
            reqwest::multipart::Part::bytes(bundle).file_name("bundle.zip"),
        )
        .text("spec", json!({"comment": "image", "meta": {}}).to_string());
    let answer = reqwest::Client::new()
        .post(format!("http://{addr}/api/1.0-beta{path}"))
        .bearer_auth(token("alice"))
        .multipart(form)
        .timeout(Duration::from_secs(120))
        .send()
        .await?;
    answer_of(answer).await
}

/// Every container (sandbox too) containerd holds for the instance.
fn everything_of(containerd: &Containerd) -> Vec<CtrContainer> {
    containerd
        .containers()
        .unwrap_or_default()
        .into_iter()
        .filter(|c| c.labels.values().any(|v| v == INSTANCE))
        .collect()
}

/// The instance's containers named `main` (not its sandbox).
fn main_containers(containerd: &Containerd) -> Result<Vec<CtrContainer>> {
    Ok(containerd
        .containers()?
        .into_iter()
        .filter(|c| {
            c.labels.get("drover.instance").map(String::as_str) == Some(INSTANCE)
                && c.labels.get("drover.container").map(String::as_str) == Some("main")
        })
        .collect())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_component_naming_an_image_runs_in_a_container_and_leaves_nothing() -> Result<()> {
    containers::require();
    let registry = Registry::start_secure(USER, PASSWORD)?;
    let layout = Layout::new()?;
    layout.build("v1", &ImageSpec::httpd(8080, PAGE))?;
    let pushed = registry.push(&layout, "v1", "web:v1")?;
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
    let args = process_platform_args(dir.path())?;
    let nodes = ProcessCluster::start_with_args(3, &args)?;
    let leader = nodes.leader(ELECTION).await?;
    let addr = nodes.api_addr(leader);
    let root = PlatformClient::new(&addr, Some(token(OPERATOR_SUBJECT)));
    let alice = PlatformClient::new(&addr, Some(token("alice")));
    tenant_with_clusters(&root, &alice, &[(&agent, "box")], 4000).await?;
    let secret = json!({"data": format!("{USER}:{PASSWORD}")});
    let made = alice.post("/tenant/acme/secret/hub", &secret).await?;
    ensure!(made.status == StatusCode::OK, "{made:?}");

    // From a bundle: the image `code` names, pulled with the credentials of secret `hub`.
    let bundle = image_bundle(&registry.host(), "web:v1", "hub")?;
    let (status, answer) =
        send_bundle(&addr, "/tenant/acme/service/imaged?accept=true&wait=90", bundle).await?;
    ensure!(status == StatusCode::OK, "{status}: {answer}");
    eventually(WAIT, "the service to report its instance running", || async {
        let answer = alice.get("/tenant/acme/service/imaged").await.ok()?;
        let status = &answer.body["data"]["status"];
        (status["converged"] == true && status["running"] == 1 && status["desired"] == 1).then_some(())
    })
    .await?;

    // Ground truth: containerd holds exactly one container of it, of the pushed image.
    let listed = main_containers(&containerd)?;
    ensure!(listed.len() == 1, "one container in the runtime: {listed:?}");
    ensure!(
        listed[0].image == pushed.reference,
        "the image code names: {listed:?} vs {}",
        pushed.reference
    );
    let tasks = containerd.tasks()?;
    ensure!(
        tasks
            .iter()
            .any(|t| t.id == listed[0].id && t.status == "RUNNING"),
        "its task runs: {tasks:?}"
    );

    // The pod's own address answers the image's index page.
    let inventory = agent.client().inventory().await?;
    let ip = inventory
        .instances
        .iter()
        .find(|i| i.id.as_str() == INSTANCE)
        .and_then(|i| i.pod.as_ref()?.ip.clone())
        .with_context(|| format!("{INSTANCE} has a pod address: {inventory:?}"))?;
    let address = format!("{ip}:8080");
    let page = eventually(Duration::from_secs(30), "the pod's port answering", || {
        containers::index_page(&address)
    })
    .await?;
    ensure!(page.trim() == PAGE, "{address} answered {page:?}");

    // Deleted, nothing of it is left in the runtime.
    let deleted = alice.delete("/tenant/acme/service/imaged").await?;
    ensure!(deleted.status.is_success(), "{deleted:?}");
    eventually(WAIT, "the service gone", || async {
        let seen = alice.get("/tenant/acme/service/imaged").await.ok()?;
        (seen.status == StatusCode::NOT_FOUND).then_some(())
    })
    .await?;
    eventually(WAIT, "no container or sandbox of it in ctr", || async {
        everything_of(&containerd).is_empty().then_some(())
    })
    .await
    .with_context(|| format!("left: {:?}", everything_of(&containerd)))?;
    Ok(())
}
