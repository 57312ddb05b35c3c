//! Services from Kumori modules (#34, acceptance 2, 3 and 5): three `drover serve` processes, an
//! `exec` agent and a Verdaccio on loopback. A service created from a multipart bundle runs its
//! components' scripts (written by the agent into the instances' working directories; the
//! processes are read from `/proc`); a partial update bundle that changes one component's
//! script replaces that role's instances only; a rollback runs the first bundle's script again.
//! A service created by `…/simple` with `artifact.ref` runs the published module's version; a
//! newer version published afterwards changes nothing (a scale adds instances of the pinned
//! version) until an update asks for it, and a rollback runs the old version again. Another
//! tenant's private module, a tenant without a registry, a registry that is down, and hostile
//! bundles each get their answer, and nothing is created.

use std::time::Duration;

use anyhow::{ensure, Result};
use drover_model::cluster::agent_api::InstanceState;
use drover_tests::agent::{proc_strings, AgentClient, AgentProcess};
use drover_tests::bundles::{answer_of, publish_module, renamed, zip_of};
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

/// Module `app` of `acme.mods`: service `svc` whose role `frontend` runs component `web` and
/// `backend` component `worker`; each component's script ends in `sleep <seconds>`.
fn app_module(web_sleep: u32, worker_sleep: u32) -> Vec<(&'static str, Vec<u8>)> {
    let kmodule = json!({"domain": "acme.mods", "module": "app", "version": [1, 0, 0],
                         "artifacts": {"svc": "service", "web": "component", "worker": "component"}});
    let component = |script: &str| {
        json!({"exec": {"argv": ["sh", script]}, "resources": {"cpu_millis": 50, "memory_mib": 16}})
            .to_string()
            .into_bytes()
    };
    vec![
        ("app/kmodule.json", kmodule.to_string().into_bytes()),
        (
            "app/svc/artifact.json",
            json!({"roles": {"frontend": {"component": "web", "env": {"ROLE": "front"}},
                             "backend": {"component": "worker"}}})
            .to_string()
            .into_bytes(),
        ),
        ("app/web/artifact.json", component("web.sh")),
        (
            "app/web/web.sh",
            format!("echo \"web as $ROLE\"\nexec sleep {web_sleep}\n").into_bytes(),
        ),
        (
            "app/worker/artifact.yaml",
            b"exec: {argv: [sh, bin/work.sh]}\nresources: {cpu_millis: 50, memory_mib: 16}\n".to_vec(),
        ),
        (
            "app/worker/bin/work.sh",
            format!("echo working\nexec sleep {worker_sleep}\n").into_bytes(),
        ),
    ]
}

fn manifest() -> (&'static str, Vec<u8>) {
    (
        "deployment/deployment.json",
        json!({"config": {"scale": {"frontend": 1, "backend": 1}},
               "artifact": {"ref": {"domain": "acme.mods", "module": "app"}}})
        .to_string()
        .into_bytes(),
    )
}

/// A multipart `method` of a bundle (and a comment) to a platform path.
async fn send_bundle(
    addr: &str,
    method: reqwest::Method,
    path: &str,
    bundle: Vec<u8>,
    comment: &str,
) -> Result<(StatusCode, Value)> {
    let form = reqwest::multipart::Form::new()
        .part(
            "bundle",
            reqwest::multipart::Part::bytes(bundle).file_name("bundle.zip"),
        )
        .text("spec", json!({"comment": comment, "meta": {}}).to_string());
    let answer = reqwest::Client::new()
        .request(method, format!("http://{addr}/api/1.0-beta{path}"))
        .bearer_auth(token("alice"))
        .multipart(form)
        .timeout(Duration::from_secs(90))
        .send()
        .await?;
    answer_of(answer).await
}

/// The argv of the running instance `id` as `/proc` shows it, with its pid.
async fn running(client: &AgentClient, id: &str) -> Result<(u32, Vec<String>)> {
    eventually(WAIT, &format!("{id} to run"), || async {
        let status = client.instance(id).await.ok()??;
        let pid = (status.state == InstanceState::Running).then_some(status.pid)??;
        let argv = proc_strings(pid, "cmdline");
        // The script has exec'd its sleep.
        (argv.first().map(String::as_str) == Some("sleep")).then_some((pid, argv))
    })
    .await
}

/// Waits until the agent runs exactly `ids` of service `service`.
async fn runs_exactly(client: &AgentClient, service: &str, ids: &[&str]) -> Result<()> {
    let prefix = format!("acme.{service}.");
    eventually(WAIT, &format!("exactly {ids:?}"), || async {
        let inventory = client.inventory().await.ok()?;
        let mut found: Vec<String> = inventory
            .instances
            .iter()
            .filter(|i| i.id.as_str().starts_with(&prefix))
            .map(|i| i.id.as_str().to_string())
            .collect();
        found.sort();
        let mut wanted: Vec<String> = ids.iter().map(|s| s.to_string()).collect();
        wanted.sort();
        (found == wanted).then_some(())
    })
    .await
}

async fn publish(
    addr: &str,
    subject: &str,
    tenant: &str,
    bundle: Vec<u8>,
    dir: &str,
) -> Result<(StatusCode, Value)> {
    publish_module(addr, subject, tenant, bundle, ("component", dir, "[]")).await
}

/// Module `tool` of `domain` at `version`: component `run` whose script sleeps `seconds`.
fn tool(domain: &str, version: [u32; 3], seconds: u32) -> Vec<u8> {
    let kmodule =
        json!({"domain": domain, "module": "tool", "version": version, "artifacts": {"run": "component"}});
    zip_of(&[
        ("tool/kmodule.json", kmodule.to_string().into_bytes()),
        (
            "tool/run/artifact.json",
            json!({"exec": {"argv": ["sh", "run.sh"]}, "resources": {"cpu_millis": 20, "memory_mib": 16}})
                .to_string()
                .into_bytes(),
        ),
        ("tool/run/run.sh", format!("exec sleep {seconds}\n").into_bytes()),
    ])
}

fn simple(reference: Value) -> Value {
    json!({"deployment": {"artifact": {"ref": reference}}, "comment": "from the marketplace"})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn services_run_bundles_and_marketplace_modules() -> Result<()> {
    let registry = Verdaccio::start()?;
    let dir = TempDir::new()?;
    let args = process_platform_args(dir.path())?;
    let nodes = ProcessCluster::start_with_args(3, &args)?;
    let agent = AgentProcess::exec(&[])?;
    let client = agent.client();
    let leader = nodes.leader(ELECTION).await?;
    let addr = nodes.api_addr(leader);
    let root = PlatformClient::new(&addr, Some(token(OPERATOR_SUBJECT)));
    let alice = PlatformClient::new(&addr, Some(token("alice")));
    let bob = PlatformClient::new(&addr, Some(token("bob")));
    tenant_with_clusters(&root, &alice, &[(&agent, "exec")], 4000).await?;
    let credentials = format!("{USER}:{PASSWORD}");
    let acme_registry = json!({"registry": {"endpoint": registry.endpoint(), "domain": "acme.mods",
                                            "credentials": credentials, "public": false}});
    ensure!(alice.patch("/tenant/acme", &acme_registry).await?.status == StatusCode::OK);

    // A service from a bundle: each role runs its component's script from its working directory.
    let mut entries = app_module(1001, 2001);
    entries.push(manifest());
    entries.push(("deployment/kmodule.json", b"{}".to_vec()));
    let (status, answer) = send_bundle(
        &addr,
        reqwest::Method::POST,
        "/tenant/acme/service/bundled?accept=true&wait=60",
        zip_of(&entries),
        "first",
    )
    .await?;
    ensure!(status == StatusCode::OK, "{status}: {answer}");
    const FRONT: &str = "acme.bundled.frontend.r1.0";
    let (front_pid, argv) = running(&client, FRONT).await?;
    ensure!(argv == ["sleep", "1001"], "{argv:?}");
    let (_, argv) = running(&client, "acme.bundled.backend.r1.0").await?;
    ensure!(argv == ["sleep", "2001"], "{argv:?}");
    let work = agent
        .instances_dir()
        .join("acme.bundled.backend.r1.0")
        .join("work");
    ensure!(
        std::fs::read_to_string(work.join("bin/work.sh"))?.contains("sleep 2001"),
        "the component's file in the working directory"
    );
    let log = agent.instances_dir().join(FRONT).join("output.log");
    eventually(WAIT, "the frontend's line", || async {
        std::fs::read_to_string(&log)
            .ok()?
            .contains("web as front")
            .then_some(())
    })
    .await?;
    let service = alice.get("/tenant/acme/service/bundled").await?;
    ensure!(service.status == StatusCode::OK, "{service:?}");

    // A partial update bundle: the module alone, its worker's script changed. Only the backend
    // is replaced; the frontend's process stays.
    let (status, answer) = send_bundle(
        &addr,
        reqwest::Method::PATCH,
        "/tenant/acme/service/bundled/revision/1?accept=true&wait=60",
        zip_of(&app_module(1001, 2002)),
        "worker v2",
    )
    .await?;
    ensure!(status == StatusCode::OK, "{status}: {answer}");
    runs_exactly(&client, "bundled", &[FRONT, "acme.bundled.backend.r2.0"]).await?;
    let (_, argv) = running(&client, "acme.bundled.backend.r2.0").await?;
    ensure!(argv == ["sleep", "2002"], "{argv:?}");
    let (pid, _) = running(&client, FRONT).await?;
    ensure!(
        pid == front_pid,
        "the frontend was restarted by a change of the backend"
    );
    let history = alice.get("/tenant/acme/service/bundled/history").await?;
    ensure!(
        history.body.to_string().contains("\"PATCH\""),
        "{:?}",
        history.body
    );

    // A rollback runs the first bundle's script again (new ids, the frontend untouched).
    let rolled = alice
        .put(
            "/tenant/acme/service/bundled/revision/2/rollback/1?accept=true&wait=60",
            &json!({}),
        )
        .await?;
    ensure!(rolled.status == StatusCode::OK, "{rolled:?}");
    runs_exactly(&client, "bundled", &[FRONT, "acme.bundled.backend.r3.0"]).await?;
    let (_, argv) = running(&client, "acme.bundled.backend.r3.0").await?;
    ensure!(argv == ["sleep", "2001"], "{argv:?}");
    ensure!(running(&client, FRONT).await?.0 == front_pid);

    // A service from a marketplace reference runs the version published.
    let (status, answer) = publish(
        &addr,
        "alice",
        "acme",
        tool("acme.mods", [1, 0, 0], 3001),
        "tool/run",
    )
    .await?;
    ensure!(status == StatusCode::OK, "{status}: {answer}");
    let made = alice
        .post(
            "/tenant/acme/service/refd/simple?accept=true&wait=60",
            &simple(json!({"domain": "acme.mods", "module": "tool"})),
        )
        .await?;
    ensure!(made.status == StatusCode::OK, "{made:?}");
    let (_, argv) = running(&client, "acme.refd.run.r1.0").await?;
    ensure!(argv == ["sleep", "3001"], "{argv:?}");
    let view = alice.get("/tenant/acme/service/refd").await?;
    ensure!(
        view.body.to_string().contains("\"version\":[1,0,0]"),
        "the resolved version is pinned in the revision: {:?}",
        view.body
    );

    // A newer version changes nothing until an update asks for it: a scale adds an instance of
    // the pinned version.
    let (status, answer) = publish(
        &addr,
        "alice",
        "acme",
        tool("acme.mods", [1, 1, 0], 3002),
        "tool/run",
    )
    .await?;
    ensure!(status == StatusCode::OK, "{status}: {answer}");
    let scaled = alice
        .patch(
            "/tenant/acme/service/refd/revision/1/scale?accept=true&wait=60",
            &json!({"scale": {"run": 2}}),
        )
        .await?;
    ensure!(scaled.status == StatusCode::OK, "{scaled:?}");
    runs_exactly(&client, "refd", &["acme.refd.run.r1.0", "acme.refd.run.r1.1"]).await?;
    let (_, argv) = running(&client, "acme.refd.run.r1.1").await?;
    ensure!(argv == ["sleep", "3001"], "the pinned version: {argv:?}");
    // An update that names no version takes the newest.
    let updated = alice
        .post(
            "/tenant/acme/service/refd/revision/2/simple?accept=true&wait=60",
            &simple(json!({"domain": "acme.mods", "module": "tool"})),
        )
        .await?;
    ensure!(updated.status == StatusCode::OK, "{updated:?}");
    runs_exactly(&client, "refd", &["acme.refd.run.r3.0"]).await?;
    let (_, argv) = running(&client, "acme.refd.run.r3.0").await?;
    ensure!(argv == ["sleep", "3002"], "{argv:?}");
    // A rollback runs exactly what ran before, though 1.1.0 is the newest.
    let rolled = alice
        .put(
            "/tenant/acme/service/refd/revision/3/rollback/1?accept=true&wait=60",
            &json!({}),
        )
        .await?;
    ensure!(rolled.status == StatusCode::OK, "{rolled:?}");
    runs_exactly(&client, "refd", &["acme.refd.run.r4.0"]).await?;
    let (_, argv) = running(&client, "acme.refd.run.r4.0").await?;
    ensure!(argv == ["sleep", "3001"], "{argv:?}");

    // Another tenant's private module cannot be referenced (nor is it shown to exist).
    bob.register("bob").await?;
    ensure!(bob.post("/tenant/other", &json!({})).await?.status == StatusCode::OK);
    let other_registry = json!({"registry": {"endpoint": registry.endpoint(), "domain": "other.mods",
                                             "credentials": credentials, "public": false}});
    ensure!(bob.patch("/tenant/other", &other_registry).await?.status == StatusCode::OK);
    let (status, answer) = publish(
        &addr,
        "bob",
        "other",
        tool("other.mods", [1, 0, 0], 4001),
        "tool/run",
    )
    .await?;
    ensure!(status == StatusCode::OK, "{status}: {answer}");
    // Exactly as a module that does not exist: the same status and words, with a version or
    // without (which would name its latest).
    for version in [None, Some(json!([1, 0, 0]))] {
        let reference = |module: &str| {
            let mut reference = json!({"domain": "other.mods", "module": module});
            if let Some(version) = &version {
                reference["version"] = version.clone();
            }
            simple(reference)
        };
        let private = alice
            .post(
                "/tenant/acme/service/stolen/simple?accept=true",
                &reference("tool"),
            )
            .await?;
        let absent = alice
            .post(
                "/tenant/acme/service/stolen/simple?accept=true",
                &reference("absent"),
            )
            .await?;
        let told: Value = serde_json::from_str(
            &private
                .body
                .to_string()
                .replace("@other.mods/tool", "@other.mods/absent"),
        )?;
        ensure!(
            private.status == StatusCode::NOT_FOUND
                && absent.status == StatusCode::NOT_FOUND
                && told == absent.body,
            "{version:?}: a private module {private:?}, an absent one {absent:?}"
        );
    }
    // Names npm refuses are not sent to the registry.
    let dots = alice
        .post(
            "/tenant/acme/service/stolen/simple?accept=true",
            &simple(json!({"domain": "acme.mods", "module": ".."})),
        )
        .await?;
    ensure!(
        dots.status == StatusCode::UNPROCESSABLE_ENTITY
            && dots.body.to_string().contains("deployment.artifact.ref.module"),
        "{dots:?}"
    );
    // No such version.
    let missing = alice
        .post(
            "/tenant/acme/service/stolen/simple?accept=true",
            &simple(json!({"domain": "acme.mods", "module": "tool", "version": [9, 9, 9]})),
        )
        .await?;
    ensure!(
        missing.status == StatusCode::NOT_FOUND && missing.body.to_string().contains("no version 9.9.9"),
        "{missing:?}"
    );

    // Hostile and broken bundles: a 4xx each, no service made.
    let mut traversal = app_module(1, 1);
    traversal.push(manifest());
    traversal.push(("app/../../escape.sh", b"x".to_vec()));
    let mut binary = app_module(1, 1);
    binary.push(manifest());
    binary.push(("app/web/blob", vec![0xff, 0xfe, 0x00]));
    let mut cue = app_module(1, 1);
    cue.push(("deployment/deployment.cue", b"package deployment".to_vec()));
    // One name twice (the later would have won), and a module named as npm refuses.
    let mut twice = app_module(1, 1);
    twice.push(manifest());
    twice.push(("app/web/web.sX", b"exec sleep 5\n".to_vec()));
    let twice = renamed(zip_of(&twice), "app/web/web.sX", "app/web/web.sh");
    let mut hidden = app_module(1, 1);
    hidden.push(manifest());
    hidden[0].1 = json!({"domain": "acme.mods", "module": ".hidden", "version": [1, 0, 0],
                         "artifacts": {"svc": "service"}})
    .to_string()
    .into_bytes();
    let cases = [
        (twice, StatusCode::BAD_REQUEST, "appears twice"),
        (
            zip_of(&hidden),
            StatusCode::UNPROCESSABLE_ENTITY,
            "app/kmodule.json: module",
        ),
        (zip_of(&traversal), StatusCode::BAD_REQUEST, "climbs out"),
        (
            zip_of(&binary),
            StatusCode::UNPROCESSABLE_ENTITY,
            "app/web/blob: is not text",
        ),
        (
            zip_of(&cue),
            StatusCode::UNPROCESSABLE_ENTITY,
            "deployment/deployment.cue: is CUE",
        ),
        (
            zip_of(&app_module(1, 1)),
            StatusCode::UNPROCESSABLE_ENTITY,
            "deployment/deployment.json: is missing",
        ),
        (
            b"not a zip".to_vec(),
            StatusCode::BAD_REQUEST,
            "not a readable zip",
        ),
    ];
    for (bundle, expected, says) in cases {
        let (status, answer) = send_bundle(
            &addr,
            reqwest::Method::POST,
            "/tenant/acme/service/hostile?accept=true",
            bundle,
            "",
        )
        .await?;
        ensure!(
            status == expected && answer.to_string().contains(says),
            "{says}: {status}: {answer}"
        );
    }
    // An oversized form, as curl sends it (`Expect: 100-continue`): refused before its body.
    let big = dir.path().join("big.zip");
    std::fs::write(&big, vec![7u8; 5 << 20])?;
    let output = std::process::Command::new("curl")
        .args(["-sS", "-X", "POST", "-H"])
        .arg(format!("Authorization: Bearer {}", token("alice")))
        .arg("-F")
        .arg(format!("bundle=@{}", big.display()))
        .args(["-w", "\n%{http_code}"])
        .arg(format!("http://{addr}/api/1.0-beta/tenant/acme/service/hostile"))
        .output()?;
    let said = String::from_utf8_lossy(&output.stdout).to_string();
    ensure!(
        said.ends_with("\n413") && said.contains("a service bundle upload may be"),
        "oversize: {said} {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let names = alice.get("/tenant/acme/service").await?;
    ensure!(
        !names.body.to_string().contains("hostile") && !names.body.to_string().contains("stolen"),
        "{:?}",
        names.body
    );

    // A tenant without a registry, and a registry that is down.
    ensure!(alice.post("/tenant/bare", &json!({})).await?.status == StatusCode::OK);
    let bare = alice
        .post(
            "/tenant/bare/service/x/simple",
            &simple(json!({"domain": "acme.mods", "module": "tool"})),
        )
        .await?;
    ensure!(
        bare.status == StatusCode::CONFLICT && bare.body.to_string().contains("has no module registry"),
        "{bare:?}"
    );
    let closed = drover_tests::agent::free_port()?;
    let down = json!({"registry": {"endpoint": format!("http://127.0.0.1:{closed}"), "domain": "acme.mods",
                                   "credentials": credentials}});
    ensure!(alice.patch("/tenant/acme", &down).await?.status == StatusCode::OK);
    let unreachable = alice
        .post(
            "/tenant/acme/service/y/simple?accept=true",
            &simple(json!({"domain": "acme.mods", "module": "tool"})),
        )
        .await?;
    ensure!(
        unreachable.status == StatusCode::SERVICE_UNAVAILABLE
            && unreachable.body.to_string().contains("does not answer"),
        "{unreachable:?}"
    );
    // What runs is not the registry's to stop: the pinned service runs on.
    let (_, argv) = running(&client, "acme.refd.run.r4.0").await?;
    ensure!(argv == ["sleep", "3001"], "{argv:?}");
    let view = alice.get("/tenant/acme/service/refd").await?;
    let revision = view.body["data"].to_string();
    ensure!(
        revision.contains("run.sh"),
        "the revision holds the module's files: {revision}"
    );
    Ok(())
}
