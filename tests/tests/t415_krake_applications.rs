//! Krake's Applications on Drover (#33, acceptance 2 and 3): three `drover serve` processes and
//! two `exec` agents registered as Krake Clusters of namespace `ns1`. An Application whose
//! manifest is a Deployment of three replicas runs as three processes (found in `/proc`), goes
//! through Krake's states to `RUNNING`, shows where its Service listens, is scaled by a `PUT`
//! of its manifest, moves create-first to the other cluster when its agent is stopped past the
//! offline threshold (the new copies run before the old ones go), and on `DELETE` leaves no
//! process. A job calls its `complete` hook and ends; an application with the `shutdown` hook
//! is asked to shut down on `DELETE`, calls back within its grace and ends. A user whose role
//! may only `get` and `list` applications in `ns1` is refused everything else. A Deployment of
//! container images is held to its tenant's pod security level (each baseline violation `422`
//! naming the field, nothing created; an operator relaxes the level for the tenant), waits
//! `PENDING` while no agent runs containers, saying so, and no view of its service shows its
//! pull credentials.

use std::time::Duration;

use anyhow::{ensure, Context, Result};
use drover_tests::agent::{free_port, processes_under, AgentProcess, AGENT_TOKEN};
use drover_tests::krake_calls::{call, namespace_with_environment};
use drover_tests::platform::{process_platform_args, token, PlatformClient, OPERATOR_SUBJECT};
use drover_tests::process::ProcessCluster;
use drover_tests::wait::eventually;
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
use tempfile::TempDir;

const ELECTION: Duration = Duration::from_secs(20);
const CONVERGE: Duration = Duration::from_secs(60);
const APPS: &str = "/kubernetes/namespaces/ns1/applications";

fn cluster(name: &str, agent: &AgentProcess) -> Value {
    json!({
        "api": "kubernetes", "kind": "Cluster",
        "metadata": {"name": name, "labels": {"zone": name}},
        "spec": {"kubeconfig": {
                    "apiVersion": "v1", "kind": "Config", "current-context": name,
                    "clusters": [{"name": name, "cluster": {"server": format!("http://{}", agent.addr())}}],
                    "users": [{"name": name, "user": {"token": AGENT_TOKEN}}],
                    "contexts": [{"name": name, "context": {"cluster": name, "user": name}}]},
                 "constraints": {"cloud": {"labels": [], "metrics": []}}},
    })
}

/// An application of one Deployment `name` whose container runs `command`, with `extra`
/// manifest items and hooks.
fn application(name: &str, replicas: u32, command: Vec<String>, extra: Vec<Value>, hooks: &[&str]) -> Value {
    let mut manifest = vec![json!({
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
        "spec": {"replicas": replicas, "template": {"spec": {"containers": [
            {"name": "main", "image": "exec", "command": command,
             "resources": {"requests": {"cpu": "500m", "memory": "64Mi"}}}]}}},
    })];
    manifest.extend(extra);
    json!({
        "api": "kubernetes", "kind": "Application",
        "metadata": {"name": name},
        "spec": {"manifest": manifest, "constraints": {"cluster": {}, "migration": true},
                 "hooks": hooks, "shutdown_grace_time": 30},
    })
}

/// Live instances of application `name` on `agent` (each an `exec` process in `/proc`).
fn running(agent: &AgentProcess, name: &str) -> usize {
    let prefix = format!("ns1.{name}.");
    processes_under(&agent.instances_dir())
        .keys()
        .filter(|id| id.starts_with(&prefix))
        .count()
}

async fn state(addr: &str, name: &str) -> Result<Value> {
    let (status, app) = call(
        addr,
        OPERATOR_SUBJECT,
        Method::GET,
        &format!("{APPS}/{name}"),
        None,
    )
    .await?;
    ensure!(status == StatusCode::OK, "{status}: {app}");
    Ok(app)
}

async fn gone(addr: &str, name: &str) -> Result<()> {
    eventually(CONVERGE, &format!("{name} to be gone"), || async {
        let (status, _) = call(
            addr,
            OPERATOR_SUBJECT,
            Method::GET,
            &format!("{APPS}/{name}"),
            None,
        )
        .await
        .ok()?;
        (status == StatusCode::NOT_FOUND).then_some(())
    })
    .await
}

/// Three nodes, `ns1` with an environment, and two `exec` agents as its Krake Clusters `a`, `b`.
async fn setup(dir: &TempDir) -> Result<(ProcessCluster, [AgentProcess; 2])> {
    let mut args = process_platform_args(dir.path())?;
    args.extend([
        "--cluster-probe-interval=200ms".to_string(),
        "--cluster-offline-after=2s".to_string(),
        "--service-migration-interval=1s".to_string(),
        // Pods pull from the harness's registry; 10.0.0.7 is listed but refused by the egress
        // policy (the harness allows only loopback). Nothing is ever pulled from either here.
        "--image-registry-allow=127.0.0.1:5000,10.0.0.7:5000".to_string(),
    ]);
    let nodes = ProcessCluster::start_with_args(3, &args)?;
    nodes.leader(ELECTION).await?;
    let root = PlatformClient::new(&nodes.api_addr(1), Some(token(OPERATOR_SUBJECT)));
    root.register(OPERATOR_SUBJECT).await?;
    namespace_with_environment(&root, "ns1").await?;
    let agents = [AgentProcess::exec(&[])?, AgentProcess::exec(&[])?];
    for (name, agent) in ["a", "b"].into_iter().zip(&agents) {
        let (status, online) = call(
            &nodes.api_addr(2),
            OPERATOR_SUBJECT,
            Method::POST,
            "/kubernetes/namespaces/ns1/clusters?blocking=online",
            Some(&cluster(name, agent)),
        )
        .await?;
        ensure!(
            status == StatusCode::OK && online["status"]["state"] == "ONLINE",
            "{status}: {online}"
        );
    }
    Ok((nodes, agents))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_application_runs_scales_moves_create_first_and_leaves_no_process() -> Result<()> {
    let dir = TempDir::new()?;
    let (nodes, agents) = setup(&dir).await?;
    let addr = nodes.api_addr(3);
    let port = free_port()?;
    let service = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"},
                         "spec": {"ports": [{"port": 80, "targetPort": port}]}});
    let body = application("web", 3, vec!["sleep".into(), "600".into()], vec![service], &[]);

    // Created: the answer comes once it runs, with the cluster it runs on and where its
    // Service listens; its three processes are in /proc on that cluster's agent.
    let (status, created) = call(
        &addr,
        OPERATOR_SUBJECT,
        Method::POST,
        &format!("{APPS}?blocking=running"),
        Some(&body),
    )
    .await?;
    ensure!(status == StatusCode::OK, "{status}: {created}");
    ensure!(created["status"]["state"] == "RUNNING", "{created}");
    let first = created["status"]["running_on"]["name"]
        .as_str()
        .context("running_on")?
        .to_string();
    ensure!(
        created["status"]["scheduled_to"] == created["status"]["running_on"],
        "{created}"
    );
    ensure!(
        created["status"]["services"]["web"] == format!("127.0.0.1:{port}"),
        "{created}"
    );
    ensure!(
        created["status"]["container_health"]["desired_pods"] == 3,
        "{created}"
    );
    let owners = created["metadata"]["owners"].as_array().context("owners")?;
    ensure!(
        owners
            .iter()
            .any(|o| o["kind"] == "Cluster" && o["name"] == first),
        "{created}"
    );
    let (here, there) = if first == "a" {
        (&agents[0], &agents[1])
    } else {
        (&agents[1], &agents[0])
    };
    eventually(CONVERGE, "three processes", || async {
        (running(here, "web") == 3).then_some(())
    })
    .await?;
    ensure!(running(there, "web") == 0);
    // The platform API sees the same service.
    let alice = PlatformClient::new(&nodes.api_addr(1), Some(token(OPERATOR_SUBJECT)));
    let seen = alice.get("/tenant/ns1/service/web").await?;
    ensure!(seen.status == StatusCode::OK, "{seen:?}");

    // Scaled by a PUT of its manifest (the object as read, two replicas).
    let mut scaled = state(&addr, "web").await?;
    scaled["spec"]["manifest"][0]["spec"]["replicas"] = json!(2);
    let (status, answer) = call(
        &addr,
        OPERATOR_SUBJECT,
        Method::PUT,
        &format!("{APPS}/web"),
        Some(&scaled),
    )
    .await?;
    ensure!(status == StatusCode::OK, "{status}: {answer}");
    eventually(CONVERGE, "two processes", || async {
        let app = state(&addr, "web").await.ok()?;
        (running(here, "web") == 2 && app["status"]["state"] == "RUNNING").then_some(())
    })
    .await?;

    // Its agent stops answering: the cluster goes OFFLINE and the application moves to the
    // other one, whose copies run while the old ones (unreachable) still do — create-first.
    here.freeze(true)?;
    let moved = eventually(
        CONVERGE,
        "the application to run on the other cluster",
        || async {
            let app = state(&addr, "web").await.ok()?;
            let on = app["status"]["running_on"]["name"].as_str()?.to_string();
            (on != first && running(there, "web") == 2 && app["status"]["state"] == "RUNNING").then_some(app)
        },
    )
    .await?;
    ensure!(
        running(here, "web") == 2,
        "the old copies went before the new ones ran"
    );
    here.freeze(false)?;
    eventually(CONVERGE, "the old copies to go", || async {
        (running(here, "web") == 0).then_some(())
    })
    .await?;
    ensure!(running(there, "web") == 2, "{moved}");

    // Deleted: the answer comes once it is gone, and no process is left.
    let (status, answer) = call(
        &addr,
        OPERATOR_SUBJECT,
        Method::DELETE,
        &format!("{APPS}/web?blocking=deleted"),
        None,
    )
    .await?;
    ensure!(status == StatusCode::OK, "{status}: {answer}");
    gone(&addr, "web").await?;
    eventually(CONVERGE, "no process", || async {
        (running(here, "web") == 0 && running(there, "web") == 0).then_some(())
    })
    .await?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hooks_end_applications_and_rbac_limits_a_viewer() -> Result<()> {
    let dir = TempDir::new()?;
    let (nodes, agents) = setup(&dir).await?;
    let addr = nodes.api_addr(2);
    let script = drover_tests::krake::script("hook_app.py").display().to_string();
    let on_agents = |name: &str| agents.iter().map(|a| running(a, name)).sum::<usize>();

    // A job calls its complete hook: it is deleted, and its process goes.
    let job = application(
        "job",
        1,
        vec!["python3".into(), script.clone(), "complete".into()],
        vec![],
        &["complete"],
    );
    let (status, created) = call(&addr, OPERATOR_SUBJECT, Method::POST, APPS, Some(&job)).await?;
    ensure!(status == StatusCode::OK, "{status}: {created}");
    ensure!(
        created["status"]["complete_token"]
            .as_str()
            .is_some_and(|t| t.starts_with("<redacted")),
        "{created}"
    );
    gone(&addr, "job").await?;
    eventually(CONVERGE, "the job's process to go", || async {
        (on_agents("job") == 0).then_some(())
    })
    .await?;
    // An application no cluster may take is PENDING with the scheduler's reason for each.
    let mut nowhere = application("nowhere", 1, vec!["sleep".into(), "60".into()], vec![], &[]);
    nowhere["spec"]["constraints"]["cluster"] = json!({"labels": ["zone = nowhere"]});
    let (status, created) = call(&addr, OPERATOR_SUBJECT, Method::POST, APPS, Some(&nowhere)).await?;
    ensure!(status == StatusCode::OK, "{status}: {created}");
    let pending = state(&addr, "nowhere").await?;
    let reason = &pending["status"]["reason"];
    let message = reason["message"].as_str().unwrap_or_default();
    ensure!(
        pending["status"]["state"] == "PENDING"
            && reason["code"] == 50
            && message.contains("a:")
            && message.contains("b:")
            && message.contains("zone"),
        "{pending}"
    );
    let (status, _) = call(
        &addr,
        OPERATOR_SUBJECT,
        Method::DELETE,
        &format!("{APPS}/nowhere"),
        None,
    )
    .await?;
    ensure!(status == StatusCode::OK, "{status}");

    // A wrong token is refused.
    let (status, _) = call(
        &addr,
        OPERATOR_SUBJECT,
        Method::PUT,
        &format!("{APPS}/missing/complete"),
        Some(&json!({"token": "x"})),
    )
    .await?;
    ensure!(status == StatusCode::NOT_FOUND, "{status}");

    // An application with the shutdown hook is asked to shut down on DELETE and ends once it
    // called back, well within its grace — also when it listens only seconds after it started.
    let port = free_port()?;
    let shutdown = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "shutdown"},
                          "spec": {"ports": [{"port": 80, "targetPort": port}]}});
    let graceful = application(
        "graceful",
        1,
        vec![
            "python3".into(),
            script,
            "shutdown".into(),
            port.to_string(),
            "3".into(),
        ],
        vec![shutdown],
        &["shutdown"],
    );
    let (status, created) = call(
        &addr,
        OPERATOR_SUBJECT,
        Method::POST,
        &format!("{APPS}?blocking=running"),
        Some(&graceful),
    )
    .await?;
    ensure!(
        status == StatusCode::OK && created["status"]["state"] == "RUNNING",
        "{status}: {created}"
    );
    let wrong = json!({"token": "not-the-token"});
    let (status, _) = call(
        &addr,
        OPERATOR_SUBJECT,
        Method::PUT,
        &format!("{APPS}/graceful/shutdown"),
        Some(&wrong),
    )
    .await?;
    ensure!(status == StatusCode::UNAUTHORIZED, "{status}");
    // No token at all is Krake's 401 too (not a refused body), and 404 for no application.
    for (path, body, expected) in [
        ("graceful/shutdown", json!({}), StatusCode::UNAUTHORIZED),
        (
            "graceful/complete",
            json!({"token": null}),
            StatusCode::UNAUTHORIZED,
        ),
        ("missing/complete", json!({}), StatusCode::NOT_FOUND),
    ] {
        let (status, problem) = call(
            &addr,
            OPERATOR_SUBJECT,
            Method::PUT,
            &format!("{APPS}/{path}"),
            Some(&body),
        )
        .await?;
        ensure!(status == expected, "{path} {body}: {status} {problem}");
    }
    let asked = std::time::Instant::now();
    let (status, deleting) = call(
        &addr,
        OPERATOR_SUBJECT,
        Method::DELETE,
        &format!("{APPS}/graceful"),
        None,
    )
    .await?;
    ensure!(status == StatusCode::OK, "{status}: {deleting}");
    ensure!(
        deleting["status"]["state"] == "WAITING_FOR_CLEANING",
        "{deleting}"
    );
    gone(&addr, "graceful").await?;
    ensure!(
        asked.elapsed() < Duration::from_secs(30),
        "ended after its grace: {:?}",
        asked.elapsed()
    );
    eventually(CONVERGE, "its process to go", || async {
        (on_agents("graceful") == 0).then_some(())
    })
    .await?;

    // One that never calls back shows DEGRADED once its grace passes, and a watch is told so
    // although nothing is written then: the change is the clock's alone.
    let silent_service = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "shutdown"},
                                "spec": {"ports": [{"port": 80, "targetPort": free_port()?}]}});
    let mut silent = application(
        "silent",
        1,
        vec!["sleep".into(), "600".into()],
        vec![silent_service],
        &["shutdown"],
    );
    silent["spec"]["shutdown_grace_time"] = json!(2);
    let (status, created) = call(
        &addr,
        OPERATOR_SUBJECT,
        Method::POST,
        &format!("{APPS}?blocking=running"),
        Some(&silent),
    )
    .await?;
    ensure!(
        status == StatusCode::OK && created["status"]["state"] == "RUNNING",
        "{status}: {created}"
    );
    let authorization = format!("Bearer {}", token(OPERATOR_SUBJECT));
    let mut watch = drover_tests::client::http_client(Some(&authorization))
        .get(format!("http://{addr}{APPS}?watch&heartbeat=0"))
        .send()
        .await?;
    ensure!(watch.status() == StatusCode::OK);
    let (status, deleting) = call(
        &addr,
        OPERATOR_SUBJECT,
        Method::DELETE,
        &format!("{APPS}/silent"),
        None,
    )
    .await?;
    ensure!(status == StatusCode::OK, "{status}: {deleting}");
    let told = tokio::time::timeout(Duration::from_secs(30), async {
        let mut buffer = String::new();
        loop {
            let Some(chunk) = watch.chunk().await? else {
                anyhow::bail!("the watch ended");
            };
            buffer.push_str(&String::from_utf8_lossy(&chunk));
            while let Some(end) = buffer.find('\n') {
                let line: String = buffer.drain(..=end).collect();
                let event: Value = serde_json::from_str(line.trim())?;
                if event["object"]["metadata"]["name"] == "silent"
                    && event["object"]["status"]["state"] == "DEGRADED"
                {
                    return Ok(event);
                }
            }
        }
    })
    .await
    .context("no DEGRADED told within 30 s")??;
    ensure!(told["type"] == "MODIFIED", "{told}");
    let (status, _) = call(
        &addr,
        OPERATOR_SUBJECT,
        Method::DELETE,
        &format!("{APPS}/silent?force=True"),
        None,
    )
    .await?;
    ensure!(status == StatusCode::OK, "{status}");
    gone(&addr, "silent").await?;

    // A viewer of ns1's applications: get and list there, nothing else.
    let role = json!({"api": "core", "kind": "Role", "metadata": {"name": "app-viewer"},
                      "rules": [{"api": "kubernetes", "resources": ["applications"], "namespaces": ["ns1"], "verbs": ["get", "list"]}]});
    let binding = json!({"api": "core", "kind": "RoleBinding", "metadata": {"name": "viewers"},
                         "users": ["viewer"], "roles": ["app-viewer"]});
    for (path, body) in [("/core/roles", role), ("/core/rolebindings", binding)] {
        let (status, answer) = call(&addr, OPERATOR_SUBJECT, Method::POST, path, Some(&body)).await?;
        ensure!(status == StatusCode::OK, "{path}: {status} {answer}");
    }
    let (status, _) = call(&addr, "viewer", Method::GET, APPS, None).await?;
    ensure!(status == StatusCode::OK, "list in ns1: {status}");
    let (status, _) = call(
        &addr,
        "viewer",
        Method::POST,
        APPS,
        Some(&application(
            "x",
            1,
            vec!["sleep".into(), "1".into()],
            vec![],
            &[],
        )),
    )
    .await?;
    ensure!(status == StatusCode::FORBIDDEN, "create in ns1: {status}");
    for path in [
        "/kubernetes/namespaces/ns2/applications",
        "/kubernetes/applications",
        "/kubernetes/namespaces/ns1/clusters",
    ] {
        let (status, _) = call(&addr, "viewer", Method::GET, path, None).await?;
        ensure!(status == StatusCode::FORBIDDEN, "{path}: {status}");
    }
    let (status, me) = call(&addr, "viewer", Method::GET, "/me", None).await?;
    ensure!(
        status == StatusCode::OK && me["roles"] == json!(["app-viewer"]),
        "{status}: {me}"
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn krakes_own_client_drives_an_application_from_create_to_running_to_deleted() -> Result<()> {
    let dir = TempDir::new()?;
    let (nodes, agents) = setup(&dir).await?;
    let said = drover_tests::krake::run(
        "app_client.py",
        vec![format!("http://{}", nodes.api_addr(1)), token(OPERATOR_SUBJECT)],
    )
    .await?;
    ensure!(said.contains("all checks passed"), "{said}");
    // Its processes went with it.
    eventually(CONVERGE, "no process of pyapp", || async {
        agents.iter().all(|a| running(a, "pyapp") == 0).then_some(())
    })
    .await?;
    Ok(())
}

/// An application of one Deployment `name` of a container image pulled with the credentials
/// of the manifest's Secret `pull`; `pod` is merged into its pod spec, `container` into its
/// container.
fn image_application(name: &str, pod: Value, container: Value) -> Value {
    let config = json!({"auths": {"127.0.0.1:5000": {"username": "puller", "password": PULL_PASSWORD}}});
    let mut spec = json!({"imagePullSecrets": [{"name": "pull"}], "containers": [
        {"name": "web", "image": "127.0.0.1:5000/web:v1", "ports": [{"containerPort": 8080}],
         "resources": {"requests": {"cpu": "100m", "memory": "16Mi"}}}]});
    merge(&mut spec, &pod);
    merge(&mut spec["containers"][0], &container);
    json!({
        "api": "kubernetes", "kind": "Application",
        "metadata": {"name": name},
        "spec": {"manifest": [
                    {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
                     "spec": {"replicas": 1, "template": {"spec": spec}}},
                    {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "pull"},
                     "type": "kubernetes.io/dockerconfigjson",
                     "stringData": {".dockerconfigjson": config.to_string()}}],
                 "constraints": {"cluster": {}, "migration": true}, "hooks": [], "shutdown_grace_time": 30},
    })
}

const PULL_PASSWORD: &str = "pull-password-never-shown";

fn merge(into: &mut Value, from: &Value) {
    if let (Some(into), Some(from)) = (into.as_object_mut(), from.as_object()) {
        for (key, value) in from {
            into.insert(key.clone(), value.clone());
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn image_pods_are_held_to_pod_security_and_wait_for_an_agent_that_runs_containers() -> Result<()> {
    let dir = TempDir::new()?;
    let (nodes, _agents) = setup(&dir).await?;
    let addr = nodes.api_addr(2);
    let root = PlatformClient::new(&nodes.api_addr(1), Some(token(OPERATOR_SUBJECT)));

    // Each baseline violation is 422 naming its field (as Krake's problems do: nested, from
    // spec.manifest.0.spec.template.spec); nothing is created.
    let container = "{'containers': {'0': ";
    let violations = [
        (
            json!({}),
            json!({"securityContext": {"privileged": true}}),
            format!("{container}{{'securityContext': {{'privileged': ["),
        ),
        (
            json!({"hostNetwork": true}),
            json!({}),
            "{'hostNetwork': [".to_string(),
        ),
        (json!({"hostPID": true}), json!({}), "{'hostPID': [".to_string()),
        (
            json!({"volumes": [{"name": "root", "hostPath": {"path": "/"}}]}),
            json!({}),
            "{'volumes': {'0': {'hostPath': [".to_string(),
        ),
        (
            json!({}),
            json!({"securityContext": {"capabilities": {"add": ["SYS_ADMIN"]}}}),
            format!("{container}{{'securityContext': {{'capabilities': {{'add': {{'0': ["),
        ),
        (
            json!({}),
            json!({"ports": [{"containerPort": 8080, "hostPort": 80}]}),
            format!("{container}{{'ports': {{'0': {{'hostPort': ["),
        ),
    ];
    let pod_spec = "{'spec': {'manifest': {'0': {'spec': {'template': {'spec': ";
    for (pod, container, field) in &violations {
        let body = image_application("web", pod.clone(), container.clone());
        let (status, refused) = call(&addr, OPERATOR_SUBJECT, Method::POST, APPS, Some(&body)).await?;
        let detail = refused["detail"].as_str().unwrap_or_default();
        ensure!(
            status == StatusCode::UNPROCESSABLE_ENTITY
                && detail.starts_with(&format!("{pod_spec}{field}"))
                && detail.contains("baseline pod security level"),
            "{field}: {status}: {refused}"
        );
        let (status, _) = call(&addr, OPERATOR_SUBJECT, Method::GET, &format!("{APPS}/web"), None).await?;
        ensure!(
            status == StatusCode::NOT_FOUND,
            "{field}: the application was made: {status}"
        );
        let service = root.get("/tenant/ns1/service/web").await?;
        ensure!(
            service.status == StatusCode::NOT_FOUND,
            "{field}: a service was made: {service:?}"
        );
    }

    // An image from a registry the operator does not list, or whose host the egress policy
    // refuses, is 422 naming the image and the flag that allows it; nothing is created.
    let refusals = [
        ("quay.io/team/web:v1", "--image-registry-allow"),
        ("10.0.0.7:5000/web:v1", "--tenant-egress-allow"),
    ];
    for (image, flag) in refusals {
        let body = image_application("web", json!({}), json!({"image": image}));
        let (status, refused) = call(&addr, OPERATOR_SUBJECT, Method::POST, APPS, Some(&body)).await?;
        let detail = refused["detail"].as_str().unwrap_or_default();
        ensure!(
            status == StatusCode::UNPROCESSABLE_ENTITY
                && detail.starts_with(&format!("{pod_spec}{container}{{'image': ["))
                && detail.contains(image)
                && detail.contains(flag),
            "{image}: {status}: {refused}"
        );
        let (status, _) = call(&addr, OPERATOR_SUBJECT, Method::GET, &format!("{APPS}/web"), None).await?;
        ensure!(
            status == StatusCode::NOT_FOUND,
            "{image}: the application was made: {status}"
        );
        let service = root.get("/tenant/ns1/service/web").await?;
        ensure!(
            service.status == StatusCode::NOT_FOUND,
            "{image}: a service was made: {service:?}"
        );
    }

    // The operator lets ns1 use the host's network: the same manifest is taken.
    let relaxed = root
        .put(
            "/tenant/ns1/podsecurity",
            &json!({"podSecurity": "baselineWithHostNetwork"}),
        )
        .await?;
    ensure!(relaxed.status == StatusCode::OK, "{relaxed:?}");
    let host = image_application("host", json!({"hostNetwork": true}), json!({}));
    let (status, created) = call(&addr, OPERATOR_SUBJECT, Method::POST, APPS, Some(&host)).await?;
    ensure!(status == StatusCode::OK, "{status}: {created}");

    // Both clusters' agents run `exec`: it waits, saying why and what to do.
    let pending = eventually(CONVERGE, "the scheduler's reason", || async {
        let app = state(&addr, "host").await.ok()?;
        let message = app["status"]["reason"]["message"].as_str()?.to_string();
        message.contains("no cluster runs containers").then_some(app)
    })
    .await?;
    let message = pending["status"]["reason"]["message"]
        .as_str()
        .unwrap_or_default();
    ensure!(
        pending["status"]["state"] == "PENDING" && message.contains("--executor container"),
        "{pending}"
    );

    // Its pull credentials reach no view of the service; Krake's view shows the manifest as
    // written, Secret included, as Krake's own server does for a reader allowed to get it.
    for route in ["/tenant/ns1/service/host", "/tenant/ns1/service"] {
        let seen = root.get(route).await?;
        let text = seen.body.to_string();
        ensure!(seen.status == StatusCode::OK, "{route}: {seen:?}");
        ensure!(
            !text.contains(PULL_PASSWORD) && !text.contains("puller") && !text.contains("pullAuth"),
            "{route}: {text}"
        );
    }
    let full = root.get("/tenant/ns1/service/host").await?.body.to_string();
    ensure!(full.contains("127.0.0.1:5000/web:v1"), "the pod is shown: {full}");
    ensure!(pending["spec"]["manifest"][1]["kind"] == "Secret", "{pending}");
    let (status, _) = call(
        &addr,
        OPERATOR_SUBJECT,
        Method::DELETE,
        &format!("{APPS}/host"),
        None,
    )
    .await?;
    ensure!(status == StatusCode::OK, "{status}");
    gone(&addr, "host").await
}
