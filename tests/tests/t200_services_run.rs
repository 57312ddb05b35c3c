//! Services run: three `drover serve` processes and an `exec` agent registered as a
//! platform-wide cluster. An accepted service of two roles is placed on the cluster and its
//! instances run as real processes (checked in `/proc`); scaling one role 2 → 5 keeps the
//! running ones and adds more, across a leader SIGKILL; a change of what the role runs
//! replaces its instances (5 → 1); a rollback runs the old program again (1 → 2); the other
//! role's process is never touched; deleting the service stops every process.

use std::collections::BTreeMap;
use std::time::Duration;

use anyhow::{ensure, Context, Result};
use drover_model::cluster::agent_api::{InstanceState, Inventory};
use drover_tests::agent::{processes_of_instance, AgentClient, AgentProcess};
use drover_tests::platform::{process_platform_args, token, PlatformClient, OPERATOR_SUBJECT};
use drover_tests::process::ProcessCluster;
use drover_tests::services::{expect_ok, tenant_with_clusters};
use drover_tests::wait::eventually;
use reqwest::{Method, StatusCode};
use serde_json::json;
use tempfile::TempDir;

const ELECTION: Duration = Duration::from_secs(20);
const CONVERGE: Duration = Duration::from_secs(30);
const SET: &str = "acme.t200";

/// Waits until the agent runs exactly `ids` for the service's set, each once in `/proc`, and
/// returns their pids by id.
async fn runs_exactly(agent: &AgentClient, ids: &[String]) -> Result<BTreeMap<String, u32>> {
    let inventory: Inventory = eventually(CONVERGE, &format!("the agent to run exactly {ids:?}"), || async {
        let inventory = agent.inventory().await.ok()?;
        let mine: Vec<_> = inventory
            .instances
            .iter()
            .filter(|i| i.set.as_str() == SET)
            .collect();
        let have: Vec<&str> = mine.iter().map(|i| i.id.as_str()).collect();
        let running = mine
            .iter()
            .all(|i| i.state == InstanceState::Running && i.pid.is_some());
        (have == ids && running).then_some(inventory)
    })
    .await?;
    let mut pids = BTreeMap::new();
    for instance in inventory.instances.iter().filter(|i| i.set.as_str() == SET) {
        let pid = instance.pid.context("no pid")?;
        ensure!(
            processes_of_instance(instance.id.as_str()) == vec![pid],
            "instance {} is not exactly process {pid}",
            instance.id
        );
        pids.insert(instance.id.to_string(), pid);
    }
    Ok(pids)
}

/// Waits until the service reports that exactly its current revision runs, `count` instances.
async fn converged(client: &PlatformClient, count: u32) -> Result<()> {
    eventually(
        CONVERGE,
        &format!("the service to report {count} instances converged"),
        || async {
            let answer = client.get("/tenant/acme/service/t200").await.ok()?;
            let status = &answer.body["data"]["status"];
            (status["converged"] == true && status["running"] == count && status["desired"] == count)
                .then_some(())
        },
    )
    .await
}

/// The worker role's one instance, which none of the frontend's changes touch.
const WORKER: &str = "acme.t200.worker.r1.0";

/// The frontend's `count` instances of role revision `revision`, and the worker.
fn with_worker(revision: u64, count: u32) -> Vec<String> {
    let mut all = ids(revision, count);
    all.push(WORKER.to_string());
    all
}

fn ids(revision: u64, count: u32) -> Vec<String> {
    (0..count)
        .map(|i| format!("{SET}.frontend.r{revision}.{i}"))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_accepted_service_runs_scales_changes_rolls_back_and_goes() -> Result<()> {
    let dir = TempDir::new()?;
    let mut args = process_platform_args(dir.path())?;
    args.push("--cluster-probe-interval=200ms".to_string());
    let mut nodes = ProcessCluster::start_with_args(3, &args)?;
    let agent = AgentProcess::exec(&[])?;
    let client = agent.client();
    let leader = nodes.leader(ELECTION).await?;
    let addresses: BTreeMap<u64, String> = (1..=3).map(|id| (id, nodes.api_addr(id))).collect();
    let as_user = |id: u64, subject: &str| PlatformClient::new(&addresses[&id], Some(token(subject)));
    let alice = as_user(leader, "alice");
    tenant_with_clusters(
        &as_user(leader, OPERATOR_SUBJECT),
        &alice,
        &[(&agent, "exec")],
        4000,
    )
    .await?;
    // Two roles: the frontend is scaled, changed and rolled back; the worker rides along.
    let deployment = json!({"deployment": {"roles": {
        "frontend": {
            "instances": 2,
            "resources": {"cpu_millis": 10, "memory_mib": 8},
            "exec": {"argv": ["sh", "-c", "echo v1 $DROVER_INSTANCE_ID; exec sleep 1000"]},
        },
        "worker": {
            "instances": 1,
            "resources": {"cpu_millis": 10, "memory_mib": 8},
            "exec": {"argv": ["sh", "-c", "echo worker $DROVER_INSTANCE_ID; exec sleep 1000"]},
        },
    }}});
    expect_ok(
        &alice,
        Method::POST,
        "/tenant/acme/service/t200?accept=true",
        Some(&deployment),
    )
    .await?;
    let started = runs_exactly(&client, &with_worker(1, 2)).await?;
    let worker = *started.get(WORKER).context("no worker")?;
    converged(&alice, 3).await?;
    // With nothing changing, the leader's service actor skips its passes (nothing it decides
    // from changed since a pass that sent and wrote nothing); every change below is still
    // carried out.
    let unchanged = || async {
        let text = drover_tests::process::metrics_text(&addresses[&leader])
            .await
            .ok()?;
        text.lines()
            .find_map(|l| l.strip_prefix("drover_service_reconciles_total{result=\"unchanged\"} "))
            .and_then(|v| v.parse::<f64>().ok())
    };
    let first = unchanged().await.unwrap_or(0.0);
    eventually(CONVERGE, "passes skipped as unchanged", || async {
        (unchanged().await? > first).then_some(())
    })
    .await?;
    let service = expect_ok(&alice, Method::GET, "/tenant/acme/service/t200", None).await?;
    ensure!(
        service["data"]["cluster"] == json!({"tenant": "operator", "name": "exec"}),
        "{service}"
    );

    // The role's instances, their logs, and restarting one (S6, S9, S10).
    let role = expect_ok(
        &alice,
        Method::GET,
        "/tenant/acme/service/t200/role/frontend",
        None,
    )
    .await?;
    let instances = role["data"]["instances"].as_object().context("no instances")?;
    ensure!(
        instances.len() == 2 && instances.values().all(|i| i["ready"] == true),
        "{role}"
    );
    let logs_path = format!("/tenant/acme/logs/service/t200/role/frontend/instance/{SET}.frontend.r1.0");
    let http = reqwest::Client::new();
    let logs = eventually(CONVERGE, "the instance's output", || async {
        let url = format!("http://{}/api/1.0-beta{logs_path}?tail=10", addresses[&leader]);
        let answer = http.get(url).bearer_auth(token("alice")).send().await.ok()?;
        let text = answer.text().await.ok()?;
        text.contains("v1 acme.t200.frontend.r1.0").then_some(text)
    })
    .await?;
    ensure!(logs.lines().count() <= 10, "{logs}");
    let wrong = alice.get(&format!("{logs_path}/container/backend")).await?;
    ensure!(wrong.status == StatusCode::NOT_FOUND, "{wrong:?}");
    let victim = format!("{SET}.frontend.r1.1");
    let restart = format!("/tenant/acme/service/t200/role/frontend/instance/{victim}");
    expect_ok(&alice, Method::DELETE, &restart, None).await?;
    eventually(CONVERGE, "the requested restart", || async {
        let now = client.instance(&victim).await.ok()??;
        let new_pid = now.pid.is_some_and(|pid| Some(&pid) != started.get(&victim));
        (now.restarts >= 1 && new_pid).then_some(())
    })
    .await?;
    let first = runs_exactly(&client, &with_worker(1, 2)).await?;

    // Scale 2 → 5 and kill the leader: the two keep running, three more start.
    let scale = json!({"scale": {"frontend": 5}});
    expect_ok(
        &alice,
        Method::PATCH,
        "/tenant/acme/service/t200/revision/1/scale?accept=true",
        Some(&scale),
    )
    .await?;
    nodes.kill(leader)?;
    let scaled = runs_exactly(&client, &with_worker(1, 5)).await?;
    for (id, pid) in &first {
        ensure!(
            scaled.get(id) == Some(pid),
            "{id} was restarted by a scale: {pid} → {:?}",
            scaled.get(id)
        );
    }
    let others: Vec<u64> = (1..=3).filter(|id| *id != leader).collect();
    let alice = as_user(others[0], "alice");
    converged(&alice, 6).await?;

    // A new program: every instance replaced by the new role revision; 5 → 1 at once.
    let patch = json!({"roles": {"frontend": {"instances": 1, "exec": {"argv": ["sh", "-c", "echo v3 $DROVER_INSTANCE_ID; exec sleep 1000"]}}}});
    expect_ok(
        &alice,
        Method::PATCH,
        "/tenant/acme/service/t200/revision/2?accept=true",
        Some(&patch),
    )
    .await?;
    let changed = runs_exactly(&client, &with_worker(3, 1)).await?;
    converged(&alice, 2).await?;
    for (_, pid) in scaled.iter().filter(|(id, _)| id.as_str() != WORKER) {
        ensure!(
            !drover_tests::agent::alive(*pid),
            "an instance of the old program lives on: {pid}"
        );
    }

    // Rollback to revision 1: its program and count again, under new ids.
    expect_ok(
        &alice,
        Method::PUT,
        "/tenant/acme/service/t200/revision/3/rollback/1?accept=true",
        None,
    )
    .await?;
    let rolled = runs_exactly(&client, &with_worker(4, 2)).await?;
    converged(&alice, 3).await?;
    ensure!(
        rolled.get(WORKER) == Some(&worker) && changed.get(WORKER) == Some(&worker),
        "the worker was restarted by changes of the frontend"
    );
    ensure!(!changed
        .iter()
        .filter(|(id, _)| id.as_str() != WORKER)
        .any(|(_, pid)| drover_tests::agent::alive(*pid)));
    let logs = client
        .get(&format!("/v1/instances/{SET}.frontend.r4.0/logs"))
        .await?;
    ensure!(logs.body.contains("v1 acme.t200.frontend.r4.0"), "{}", logs.body);

    // Deleted: every process goes.
    let last: Vec<u32> = client
        .inventory()
        .await?
        .instances
        .iter()
        .filter_map(|i| i.pid)
        .collect();
    expect_ok(&alice, Method::DELETE, "/tenant/acme/service/t200", None).await?;
    eventually(CONVERGE, "the service's processes to stop", || async {
        let inventory = client.inventory().await.ok()?;
        (inventory.instances.iter().all(|i| i.set.as_str() != SET)
            && last.iter().all(|pid| !drover_tests::agent::alive(*pid)))
        .then_some(())
    })
    .await?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn waits_answer_201_with_a_request_id_or_408_when_they_run_out() -> Result<()> {
    let dir = TempDir::new()?;
    let mut args = process_platform_args(dir.path())?;
    args.push("--cluster-probe-interval=200ms".to_string());
    let nodes = ProcessCluster::start_with_args(3, &args)?;
    // Instances take 2 s to start on this simulated cluster.
    let agent = AgentProcess::start(&["--executor=sim", "--sim-start-latency-ms=2000"])?;
    let leader = nodes.leader(ELECTION).await?;
    let root = PlatformClient::new(&nodes.api_addr(leader), Some(token(OPERATOR_SUBJECT)));
    let follower = (1..=3).find(|id| *id != leader).context("no follower")?;
    let alice = PlatformClient::new(&nodes.api_addr(follower), Some(token("alice")));
    tenant_with_clusters(&root, &alice, &[(&agent, "sim")], 4000).await?;
    let deployment = json!({"deployment": {"roles": {"web": {"instances": 2, "exec": {"argv": ["web"]}}}}});

    // Create with wait=1: 201 and a request id that resolves once the instances run.
    let created = alice
        .post("/tenant/acme/service/t200w?accept=true&wait=1", &deployment)
        .await?;
    ensure!(created.status == StatusCode::CREATED, "{created:?}");
    let id = created.body["data"]["requestId"]
        .as_str()
        .context("no request id")?
        .to_string();
    let path = format!("/tenant/acme/service/t200w/request/{id}");
    let pending = alice.get(&path).await?;
    ensure!(pending.body["data"]["done"] == false, "{pending:?}");
    eventually(CONVERGE, "the request to resolve", || async {
        let answer = alice.get(&path).await.ok()?;
        (answer.body["data"]["done"] == true).then_some(())
    })
    .await?;

    // Scale with wait=1: 408 (the third instance takes 2 s), and the change is made all the same.
    let scale = json!({"scale": {"web": 3}});
    let scaled = alice
        .patch(
            "/tenant/acme/service/t200w/revision/1/scale?accept=true&wait=1",
            &scale,
        )
        .await?;
    ensure!(scaled.status == StatusCode::REQUEST_TIMEOUT, "{scaled:?}");
    eventually(CONVERGE, "three instances", || async {
        let answer = alice.get("/tenant/acme/service/t200w").await.ok()?;
        (answer.body["data"]["status"]["converged"] == true).then_some(())
    })
    .await?;

    // A new environment for the role rolls it: one new instance at a time (a surge of one for
    // three), and the three old ones keep running until new ones run in their place.
    let client = agent.client();
    let patch = json!({"roles": {"web": {"env": {"COLOR": "blue"}}}});
    expect_ok(
        &alice,
        Method::PATCH,
        "/tenant/acme/service/t200w/revision/2?accept=true",
        Some(&patch),
    )
    .await?;
    let (old, new) = eventually(CONVERGE, "the rollout's first step on the agent", || async {
        let inventory = client.inventory().await.ok()?;
        let of = |revision: &str| -> Vec<InstanceState> {
            inventory
                .instances
                .iter()
                .filter(|i| i.id.as_str().starts_with(&format!("acme.t200w.web.{revision}.")))
                .map(|i| i.state)
                .collect()
        };
        let (old, new) = (of("r1"), of("r3"));
        (!new.is_empty()).then_some((old, new))
    })
    .await?;
    ensure!(new == [InstanceState::Starting], "the surge is one: {new:?}");
    ensure!(
        old.len() == 3 && old.iter().all(|s| *s == InstanceState::Running),
        "the old ones stay: {old:?}"
    );

    // Rollback to revision 1 (its environment again, so a new rollout) with wait=1: 408.
    let rolled = alice
        .call(
            Method::PUT,
            "/tenant/acme/service/t200w/revision/3/rollback/1?accept=true&wait=1",
            None,
        )
        .await?;
    ensure!(rolled.status == StatusCode::REQUEST_TIMEOUT, "{rolled:?}");

    // wait=0 waits until it runs: another environment answers 200 once the whole rollout is done.
    let patch = json!({"roles": {"web": {"env": {"COLOR": "green"}}}});
    let started = std::time::Instant::now();
    let patched = alice
        .patch("/tenant/acme/service/t200w/revision/4?accept=true&wait=0", &patch)
        .await?;
    ensure!(patched.status == StatusCode::OK, "{patched:?}");
    let status = expect_ok(&alice, Method::GET, "/tenant/acme/service/t200w", None).await?;
    ensure!(
        status["data"]["status"]["converged"] == true,
        "wait=0 answered after {:?} before convergence: {status}",
        started.elapsed()
    );
    let history = expect_ok(&alice, Method::GET, "/tenant/acme/service/t200w/history", None).await?;
    ensure!(history["data"].as_array().map(Vec::len) == Some(5), "{history}");

    // Delete with wait=1 while the agent cannot be reached: 408; the service stays, deleting,
    // until its instances are removed.
    client.set_unreachable(true).await?;
    let deleted = alice.delete("/tenant/acme/service/t200w?wait=1").await?;
    ensure!(deleted.status == StatusCode::REQUEST_TIMEOUT, "{deleted:?}");
    expect_ok(&alice, Method::GET, "/tenant/acme/service", None).await?;
    client.set_unreachable(false).await?;
    eventually(CONVERGE, "the deleted service's instances to stop", || async {
        let inventory = client.inventory().await.ok()?;
        inventory
            .instances
            .iter()
            .all(|i| !i.id.as_str().starts_with("acme.t200w."))
            .then_some(())
    })
    .await?;
    // Then its actor finalizes it: the object goes.
    eventually(CONVERGE, "the deleted service to go", || async {
        let answer = alice.get("/tenant/acme/service/t200w").await.ok()?;
        (answer.status == StatusCode::NOT_FOUND).then_some(())
    })
    .await?;
    Ok(())
}
