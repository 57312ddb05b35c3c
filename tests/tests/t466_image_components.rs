//! Kumori components that name container images (#51, acceptance 4): three `drover serve`
//! processes, a `sim` agent (which takes pods and pretends to run them, so no runtime is
//! needed) and a Verdaccio on loopback. A component whose `artifact.json` has Kumori's `code`
//! section runs, from a bundle and from a marketplace reference, as one role whose instances
//! the agent holds as pods — read from the agent's own state files, its ground truth — with the
//! images, command and environment `code` gives and the registry credentials of the tenant
//! secret `hub.secret` names (by name, or bound in the deployment's `config.resource` as Kumori
//! binds a component's resources). The password is in no view of the platform API and in no
//! node's log; another tenant's secret never resolves; `exec` beside `code`, and an image on a
//! registry the egress policy refuses, are refused naming the field; and nothing is created by
//! a refusal.

use std::path::Path;
use std::time::Duration;

use anyhow::{ensure, Context, Result};
use drover_model::cluster::agent_api::{InstanceSpec, InstanceState};
use drover_tests::agent::AgentProcess;
use drover_tests::bundles::{answer_of, publish_module, zip_of};
use drover_tests::platform::{process_platform_args, token, PlatformClient, OPERATOR_SUBJECT};
use drover_tests::process::ProcessCluster;
use drover_tests::services::tenant_with_clusters;
use drover_tests::verdaccio::{Verdaccio, PASSWORD, USER};
use drover_tests::wait::eventually;
use reqwest::StatusCode;
use serde_json::{json, Value};
use tempfile::TempDir;

const ELECTION: Duration = Duration::from_secs(20);
const WAIT: Duration = Duration::from_secs(60);

/// The registry the images name (nothing is pulled: the agent pretends).
const REGISTRY: &str = "127.0.0.1:5000";
/// Acme's pull password (secret `hub`, `user:password`).
const ACME_PASSWORD: &str = "pw-acme-3f9c1e";
/// Acme's other pull password (secret `bound`, the JSON form).
const BOUND_PASSWORD: &str = "pw-bound-77d2a0";
/// Bob's pull password (secret `bobhub` of tenant `other`).
const BOB_PASSWORD: &str = "pw-bob-5b18e4";

/// Kumori's `code` of one container, its credentials in the secret `secret` names.
fn code(tag: &str, secret: &str) -> Value {
    json!({"main": {"name": "main",
        "image": {"hub": {"name": REGISTRY, "secret": secret}, "tag": tag},
        "entrypoint": ["/bin/busybox"], "cmd": ["httpd", "-f", "-p", "8080"],
        "mapping": {"filesystem": {}, "env": {"GREETING": {"value": "hello"}}}}})
}

/// Module `img` of `acme.mods`: component `web`, whose artifact is `artifact`.
fn image_module(artifact: Value) -> Vec<(&'static str, Vec<u8>)> {
    let kmodule = json!({"domain": "acme.mods", "module": "img", "version": [1, 0, 0],
                         "artifacts": {"web": "component"}});
    vec![
        ("img/kmodule.json", kmodule.to_string().into_bytes()),
        ("img/web/artifact.json", artifact.to_string().into_bytes()),
        (
            "deployment/deployment.json",
            json!({"artifact": {"ref": {"domain": "acme.mods", "module": "img"}}})
                .to_string()
                .into_bytes(),
        ),
    ]
}

fn web(secret: &str) -> Value {
    json!({"code": code("acme/web:v1", secret), "resources": {"cpu_millis": 50, "memory_mib": 16}})
}

/// `POST` of a bundle as alice.
async fn send_bundle(addr: &str, path: &str, bundle: Vec<u8>) -> Result<(StatusCode, Value)> {
    let form = reqwest::multipart::Form::new()
        .part(
            "bundle",
            reqwest::multipart::Part::bytes(bundle).file_name("bundle.zip"),
        )
        .text("spec", json!({"comment": "images", "meta": {}}).to_string());
    let answer = reqwest::Client::new()
        .post(format!("http://{addr}/api/1.0-beta{path}"))
        .bearer_auth(token("alice"))
        .multipart(form)
        .timeout(Duration::from_secs(90))
        .send()
        .await?;
    answer_of(answer).await
}

/// Every instance the agent's state files hold (`<data>/state/sets/<set>`), by id.
fn held_instances(data_dir: &Path) -> Vec<InstanceSpec> {
    let Ok(entries) = std::fs::read_dir(data_dir.join("state").join("sets")) else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|entry| std::fs::read(entry.path()).ok())
        .filter_map(|bytes| serde_json::from_slice::<Value>(&bytes).ok())
        .flat_map(|file| file["instances"].as_array().cloned().unwrap_or_default())
        .filter_map(|stored| serde_json::from_value(stored["spec"].clone()).ok())
        .collect()
}

/// The instance `id` as the agent holds it, once it does.
async fn held(agent: &AgentProcess, id: &str) -> Result<InstanceSpec> {
    let dir = agent.data_dir();
    eventually(WAIT, &format!("the agent to hold {id}"), || async {
        held_instances(&dir).into_iter().find(|i| i.id.as_str() == id)
    })
    .await
}

/// Checks that the pod of `spec` runs `acme/web:v1` as `code` says, pulled as `user` with
/// `password`.
fn check_pod(spec: &InstanceSpec, user: &str, password: &str) -> Result<()> {
    ensure!(
        spec.exec.argv.is_empty() && spec.exec.files.is_empty(),
        "{spec:?}"
    );
    let pod = spec.exec.pod.as_ref().context("the instance is a pod")?;
    let container = &pod.containers[0];
    ensure!(
        container.name == "main"
            && container.image == format!("{REGISTRY}/acme/web:v1")
            && container.command == ["/bin/busybox"]
            && container.args == ["httpd", "-f", "-p", "8080"]
            && container.env.get("GREETING").map(String::as_str) == Some("hello"),
        "{container:?}"
    );
    let auth = pod.pull_auth.first().context("pull credentials")?;
    ensure!(pod.pull_auth.len() == 1 && auth.registry == REGISTRY);
    ensure!(
        auth.username == user && auth.password == password,
        "the credentials of the secret named"
    );
    ensure!(
        spec.resources.cpu_millis == 50,
        "the component's requests: {:?}",
        spec.resources
    );
    Ok(())
}

/// Fails when any of `answers` (platform API bodies) shows `password`.
fn never_shown(password: &str, answers: &[(&str, &Value)]) -> Result<()> {
    for (what, body) in answers {
        ensure!(
            !body.to_string().contains(password),
            "{what} shows the password: {body}"
        );
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn components_naming_images_run_from_bundles_and_the_marketplace() -> Result<()> {
    let registry = Verdaccio::start()?;
    let dir = TempDir::new()?;
    let args = process_platform_args(dir.path())?;
    let nodes = ProcessCluster::start_with_args(3, &args)?;
    let agent = AgentProcess::sim(&[])?;
    let leader = nodes.leader(ELECTION).await?;
    let addr = nodes.api_addr(leader);
    let root = PlatformClient::new(&addr, Some(token(OPERATOR_SUBJECT)));
    let alice = PlatformClient::new(&addr, Some(token("alice")));
    let bob = PlatformClient::new(&addr, Some(token("bob")));
    tenant_with_clusters(&root, &alice, &[(&agent, "sim")], 4000).await?;
    let secrets = [
        ("hub", json!(format!("puller:{ACME_PASSWORD}"))),
        (
            "bound",
            json!(json!({"username": "binder", "password": BOUND_PASSWORD}).to_string()),
        ),
        ("opaque", json!("not credentials")),
    ];
    for (name, data) in secrets {
        let made = alice
            .post(&format!("/tenant/acme/secret/{name}"), &json!({"data": data}))
            .await?;
        ensure!(made.status == StatusCode::OK, "{made:?}");
    }
    bob.register("bob").await?;
    ensure!(bob.post("/tenant/other", &json!({})).await?.status == StatusCode::OK);
    let bobs = json!({"data": format!("bob:{BOB_PASSWORD}")});
    let made = bob.post("/tenant/other/secret/bobhub", &bobs).await?;
    ensure!(made.status == StatusCode::OK, "{made:?}");

    // From a bundle: one role, its instance a pod with the credentials of acme's secret `hub`.
    let (status, answer) = send_bundle(
        &addr,
        "/tenant/acme/service/imaged?accept=true&wait=60",
        zip_of(&image_module(web("hub"))),
    )
    .await?;
    ensure!(status == StatusCode::OK, "{status}: {answer}");
    let spec = held(&agent, "acme.imaged.web.r1.0").await?;
    check_pod(&spec, "puller", ACME_PASSWORD)?;
    let client = agent.client();
    eventually(WAIT, "the pod to run (as the sim agent pretends)", || async {
        let status = client.instance("acme.imaged.web.r1.0").await.ok()??;
        (status.state == InstanceState::Running).then_some(())
    })
    .await?;

    // The password is in no view: the service, its history, its events and role, the tenant's
    // view and the secret's listing.
    let mut views = Vec::new();
    for path in [
        "/tenant/acme/service/imaged",
        "/tenant/acme/service/imaged/history",
        "/tenant/acme/service/imaged/events",
        "/tenant/acme/service/imaged/role/web",
        "/tenant/acme",
        "/tenant/acme/secret",
    ] {
        let seen = alice.get(path).await?;
        views.push((path, seen.body));
    }
    let shown: Vec<(&str, &Value)> = views.iter().map(|(p, b)| (*p, b)).collect();
    never_shown(ACME_PASSWORD, &shown)?;
    let service = &views[0].1;
    ensure!(
        service.to_string().contains(&format!("{REGISTRY}/acme/web:v1"))
            && service.to_string().contains("\"secret\"")
            && !service.to_string().contains("pullAuth"),
        "the view shows the image and the secret used, by name: {service}"
    );

    // Another tenant's secret never resolves, however it is named; nothing is created.
    for name in ["bobhub", "other/bobhub"] {
        let (status, answer) = send_bundle(
            &addr,
            "/tenant/acme/service/stolen?accept=true",
            zip_of(&image_module(web(name))),
        )
        .await?;
        ensure!(
            status == StatusCode::UNPROCESSABLE_ENTITY
                && answer
                    .to_string()
                    .contains(&format!("tenant \\\"acme\\\" has no secret \\\"{name}\\\"")),
            "{name}: {status}: {answer}"
        );
        never_shown(BOB_PASSWORD, &[("the refusal", &answer)])?;
    }
    // Refusals naming the field: a secret that holds no credentials, exec beside code, a
    // container field Drover does not honour.
    let both = json!({"exec": {"argv": ["sleep", "1"]}, "code": code("acme/web:v1", "hub")});
    let mut user = web("hub");
    user["code"]["main"]["user"] = json!({"userid": 0});
    let cases = [
        (
            web("opaque"),
            "code.main.image.hub.secret: the secret \\\"opaque\\\" does not hold registry credentials",
        ),
        (
            both,
            "img/web/artifact.json: code: give either exec (a program) or code",
        ),
        (user, "img/web/artifact.json: code.main.user"),
    ];
    for (artifact, says) in cases {
        let (status, answer) = send_bundle(
            &addr,
            "/tenant/acme/service/stolen?accept=true",
            zip_of(&image_module(artifact)),
        )
        .await?;
        ensure!(
            status == StatusCode::UNPROCESSABLE_ENTITY && answer.to_string().contains(says),
            "{says}: {status}: {answer}"
        );
        never_shown("not credentials", &[("the refusal", &answer)])?;
    }
    // An image on a registry the egress policy refuses (the harness allows only loopback): 422
    // naming the role's image and the flag that allows it.
    let mut private = web("hub");
    private["code"]["main"]["image"]["hub"]["name"] = json!("10.0.0.7:5000");
    let (status, answer) = send_bundle(
        &addr,
        "/tenant/acme/service/stolen?accept=true",
        zip_of(&image_module(private)),
    )
    .await?;
    let message = answer.to_string();
    ensure!(
        status == StatusCode::UNPROCESSABLE_ENTITY
            && message.contains("roles.web.exec.pod.containers[0].image")
            && message.contains("10.0.0.7 is a private address")
            && message.contains("--tenant-egress-allow"),
        "{status}: {answer}"
    );
    let none = alice.get("/tenant/acme/service/stolen").await?;
    ensure!(none.status == StatusCode::NOT_FOUND, "{none:?}");

    // From a marketplace reference: a module published to acme's registry, its hub.secret a
    // resource of the component that the deployment binds to acme's secret `bound`.
    let credentials = format!("{USER}:{PASSWORD}");
    let acme_registry = json!({"registry": {"endpoint": registry.endpoint(), "domain": "acme.mods",
                                            "credentials": credentials, "public": false}});
    ensure!(alice.patch("/tenant/acme", &acme_registry).await?.status == StatusCode::OK);
    let kmodule = json!({"domain": "acme.mods", "module": "imgtool", "version": [1, 0, 0],
                         "artifacts": {"run": "component"}});
    let artifact = json!({"code": code("acme/web:v1", "registrySecret"),
                          "resources": {"cpu_millis": 50, "memory_mib": 16}});
    let module = zip_of(&[
        ("imgtool/kmodule.json", kmodule.to_string().into_bytes()),
        ("imgtool/run/artifact.json", artifact.to_string().into_bytes()),
    ]);
    let (status, answer) =
        publish_module(&addr, "alice", "acme", module, ("component", "imgtool/run", "[]")).await?;
    ensure!(status == StatusCode::OK, "{status}: {answer}");
    let simple = json!({"deployment": {
        "config": {"resource": {"registrySecret": {"secret": "bound"}}},
        "artifact": {"ref": {"domain": "acme.mods", "module": "imgtool"}}}});
    let made = alice
        .post("/tenant/acme/service/market/simple?accept=true&wait=60", &simple)
        .await?;
    ensure!(made.status == StatusCode::OK, "{made:?}");
    let spec = held(&agent, "acme.market.run.r1.0").await?;
    check_pod(&spec, "binder", BOUND_PASSWORD)?;
    let view = alice.get("/tenant/acme/service/market").await?;
    never_shown(BOUND_PASSWORD, &[("the marketplace service", &view.body)])?;

    // No node logged a password.
    for id in nodes.running_ids() {
        let log = nodes.log_of(id);
        for password in [ACME_PASSWORD, BOUND_PASSWORD, BOB_PASSWORD] {
            ensure!(!log.contains(password), "node {id}'s log shows a password");
        }
    }
    Ok(())
}
