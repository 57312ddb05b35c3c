//! A service's life at its edges, on three `drover serve` processes and `sim` agents:
//! `wait` against a cluster that takes 10 s to start an instance (create answers `201` with a
//! request id that resolves later; scale, rollback and delete answer `408`), and deletion as a
//! finalizer: a service whose cluster is `OFFLINE` stays `deleting` with a reason and an event
//! until the cluster returns, then its instances go and then the service; an operator's forced
//! delete removes the object at once, says what it orphaned, and the orphaned instances are
//! removed when the cluster answers again. Every check of what runs reads the agent's inventory.
//! And (issue #31, defect 12) a deleted service whose instance takes 3 s to stop, on an `exec`
//! agent, is `DELETING` from the moment the `DELETE` answers until it is gone.

use std::time::Duration;

use anyhow::{ensure, Context, Result};
use drover_tests::agent::{AgentClient, AgentProcess};
use drover_tests::client::read_events;
use drover_tests::platform::{process_platform_args, token, PlatformClient, OPERATOR_SUBJECT};
use drover_tests::process::ProcessCluster;
use drover_tests::services::{expect_ok, tenant_with_clusters};
use drover_tests::wait::eventually;
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
use tempfile::TempDir;

const ELECTION: Duration = Duration::from_secs(20);
const CONVERGE: Duration = Duration::from_secs(40);

/// Three nodes probing clusters every 200 ms, one platform-wide sim cluster `sim` (with the
/// agent's `extra` flags), and clients for the operator and alice on different nodes.
async fn start(
    dir: &TempDir,
    extra: &[&str],
) -> Result<(ProcessCluster, AgentProcess, PlatformClient, PlatformClient)> {
    let mut args = process_platform_args(dir.path())?;
    args.push("--cluster-probe-interval=200ms".to_string());
    args.push("--cluster-offline-after=2s".to_string());
    let nodes = ProcessCluster::start_with_args(3, &args)?;
    let mut flags = vec!["--executor=sim"];
    flags.extend_from_slice(extra);
    let agent = AgentProcess::start(&flags)?;
    let leader = nodes.leader(ELECTION).await?;
    let follower = (1..=3).find(|id| *id != leader).context("no follower")?;
    let root = PlatformClient::new(&nodes.api_addr(leader), Some(token(OPERATOR_SUBJECT)));
    let alice = PlatformClient::new(&nodes.api_addr(follower), Some(token("alice")));
    tenant_with_clusters(&root, &alice, &[(&agent, "sim")], 8000).await?;
    Ok((nodes, agent, root, alice))
}

fn service(instances: u32, color: &str) -> Value {
    json!({"deployment": {"roles": {"web": {"instances": instances, "exec": {"argv": ["web"]},
        "resources": {"cpu_millis": 100, "memory_mib": 16}, "env": {"COLOR": color}}}}})
}

/// Ids of the instances of `prefix` the agent runs.
async fn instances_of(agent: &AgentClient, prefix: &str) -> Option<Vec<String>> {
    let inventory = agent.inventory().await.ok()?;
    Some(
        inventory
            .instances
            .iter()
            .map(|i| i.id.to_string())
            .filter(|id| id.starts_with(prefix))
            .collect(),
    )
}

async fn faults(agent: &AgentClient, faults: Value) -> Result<()> {
    let answer = agent.call(Method::PUT, "/v1/sim/faults", Some(&faults)).await?;
    ensure!(answer.status == 200, "{answer:?}");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn waits_against_a_cluster_that_starts_instances_in_ten_seconds() -> Result<()> {
    let dir = TempDir::new()?;
    let (_nodes, agent, _root, alice) = start(&dir, &["--sim-start-latency-ms=10000"]).await?;
    let client = agent.client();

    // Create with wait=1: 201 and a request id, done only once both instances run.
    let created = alice
        .post("/tenant/acme/service/slow?accept=true&wait=1", &service(2, "a"))
        .await?;
    ensure!(created.status == StatusCode::CREATED, "{created:?}");
    let id = created.body["data"]["requestId"]
        .as_str()
        .context("no request id")?
        .to_string();
    let request = format!("/tenant/acme/service/slow/request/{id}");
    let pending = expect_ok(&alice, Method::GET, &request, None).await?;
    ensure!(pending["data"]["done"] == false, "{pending}");
    eventually(CONVERGE, "the create's request to resolve", || async {
        let answer = alice.get(&request).await.ok()?;
        (answer.body["data"]["done"] == true).then_some(())
    })
    .await?;
    let running = instances_of(&client, "acme.slow.").await.context("inventory")?;
    ensure!(
        running == ["acme.slow.web.r1.0", "acme.slow.web.r1.1"],
        "{running:?}"
    );

    // Scale with wait=1: 408, and the third instance is on its way all the same.
    let scaled = alice
        .patch(
            "/tenant/acme/service/slow/revision/1/scale?accept=true&wait=1",
            &json!({"scale": {"web": 3}}),
        )
        .await?;
    ensure!(scaled.status == StatusCode::REQUEST_TIMEOUT, "{scaled:?}");
    eventually(CONVERGE, "the third instance on the agent", || async {
        let ids = instances_of(&client, "acme.slow.").await?;
        (ids.len() == 3).then_some(())
    })
    .await?;

    // Another environment (revision 3), then a rollback to revision 1 with wait=1: 408.
    let patch = json!({"roles": {"web": {"env": {"COLOR": "b"}}}});
    expect_ok(
        &alice,
        Method::PATCH,
        "/tenant/acme/service/slow/revision/2?accept=true",
        Some(&patch),
    )
    .await?;
    let rolled = alice
        .call(
            Method::PUT,
            "/tenant/acme/service/slow/revision/3/rollback/1?accept=true&wait=1",
            None,
        )
        .await?;
    ensure!(rolled.status == StatusCode::REQUEST_TIMEOUT, "{rolled:?}");
    let history = expect_ok(&alice, Method::GET, "/tenant/acme/service/slow/history", None).await?;
    let last = &history["data"][3];
    ensure!(last["type"] == "ROLLBACK" && last["reinstates"] == 1, "{history}");

    // Delete with wait=1 while the agent takes 1.5 s to apply a set (within the driver's 2 s
    // timeout): 408, deleting; then gone.
    faults(&client, json!({"slow_apply_ms": 1500})).await?;
    let deleted = alice.delete("/tenant/acme/service/slow?wait=1").await?;
    ensure!(deleted.status == StatusCode::REQUEST_TIMEOUT, "{deleted:?}");
    let shown = expect_ok(&alice, Method::GET, "/tenant/acme/service/slow", None).await?;
    ensure!(shown["data"]["deletionTimestamp"].is_u64(), "{shown}");
    eventually(CONVERGE, "the deleted service to go", || async {
        let answer = alice.get("/tenant/acme/service/slow").await.ok()?;
        (answer.status == StatusCode::NOT_FOUND).then_some(())
    })
    .await?;
    let left = instances_of(&client, "acme.slow.").await.context("inventory")?;
    ensure!(left.is_empty(), "the service went before its instances: {left:?}");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deleted_service_waits_for_its_offline_cluster_and_force_reports_orphans() -> Result<()> {
    let dir = TempDir::new()?;
    let (_nodes, agent, root, alice) = start(&dir, &[]).await?;
    let client = agent.client();
    for (name, count) in [("keep", 2), ("drop", 3)] {
        let path = format!("/tenant/acme/service/{name}?accept=true&wait=0");
        expect_ok(&alice, Method::POST, &path, Some(&service(count, "a"))).await?;
        // The wait answered once the cluster reported the set; the service actor reports
        // RUNNING on its next pass.
        let shown = eventually(CONVERGE, "the service to report RUNNING", || async {
            let answer = alice.get(&format!("/tenant/acme/service/{name}")).await.ok()?;
            (answer.body["data"]["reconcile"]["phase"] == "RUNNING").then_some(answer.body)
        })
        .await?;
        let events = shown["data"]["events"].as_array().context("events")?;
        ensure!(
            events
                .iter()
                .any(|e| e["reason"] == "Running" && e["source"]["kind"] == "service"),
            "{shown}"
        );
    }
    ensure!(instances_of(&client, "acme.keep.").await.map(|i| i.len()) == Some(2));
    ensure!(instances_of(&client, "acme.drop.").await.map(|i| i.len()) == Some(3));

    // The cluster goes away for good.
    faults(&client, json!({"unreachable": true})).await?;
    eventually(CONVERGE, "the cluster to be OFFLINE", || async {
        let answer = root.get("/tenant/operator/cluster/sim").await.ok()?;
        (answer.body["data"]["status"]["state"] == "OFFLINE").then_some(())
    })
    .await?;

    // Deleting waits for it, saying why; a watch of its events sees the phase change.
    let mut events = alice
        .stream("/tenant/acme/service/keep/events?watch=true")
        .await?;
    let deleted = expect_ok(&alice, Method::DELETE, "/tenant/acme/service/keep", None).await?;
    let deadline = tokio::time::Instant::now() + CONVERGE;
    loop {
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        let next = read_events(&mut events, 1, left).await?;
        if next[0]["object"]["reason"] == "Deleting" {
            ensure!(next[0]["object"]["service"] == "keep", "{next:?}");
            break;
        }
    }
    ensure!(deleted["data"]["deleting"] == true, "{deleted}");
    let shown = eventually(CONVERGE, "the service to say why it is not gone", || async {
        let answer = alice.get("/tenant/acme/service/keep").await.ok()?;
        let data = &answer.body["data"];
        (data["reconcile"]["phase"] == "DELETING"
            && data["reconcile"]["reason"]
                .as_str()
                .is_some_and(|r| r.contains("does not answer")))
        .then(|| answer.body.clone())
    })
    .await?;
    ensure!(shown["data"]["deletionTimestamp"].is_u64(), "{shown}");
    let events = shown["data"]["events"].as_array().context("events")?;
    ensure!(events.iter().any(|e| e["reason"] == "Deleting"), "{shown}");
    let summary = expect_ok(
        &alice,
        Method::GET,
        "/tenant/acme/service/keep?summary=true",
        None,
    )
    .await?;
    ensure!(summary["data"]["deleted"] == true, "{summary}");
    // A deleted service takes no new revision.
    let scale = alice
        .patch(
            "/tenant/acme/service/keep/revision/1/scale?accept=true",
            &json!({"scale": {"web": 1}}),
        )
        .await?;
    ensure!(scale.status == StatusCode::CONFLICT, "{scale:?}");

    // Forcing is for operators; it removes the object now and says what it left running.
    let refused = alice.delete("/tenant/acme/service/drop?force=true").await?;
    ensure!(refused.status == StatusCode::FORBIDDEN, "{refused:?}");
    let forced = expect_ok(
        &root,
        Method::DELETE,
        "/tenant/acme/service/drop?force=true",
        None,
    )
    .await?;
    ensure!(forced["data"]["removed"] == true, "{forced}");
    ensure!(
        forced["data"]["orphaned"]["instances"] == 3
            && forced["data"]["orphaned"]["cluster"]["name"] == "sim",
        "{forced}"
    );
    let gone = alice.get("/tenant/acme/service/drop").await?;
    ensure!(gone.status == StatusCode::NOT_FOUND, "{gone:?}");

    // Still there while the cluster is away.
    let still = alice.get("/tenant/acme/service/keep").await?;
    ensure!(still.status == StatusCode::OK, "{still:?}");

    // The cluster returns: the deleted service's instances go, then the service; the orphans
    // of the forced delete go too.
    faults(&client, json!({"unreachable": false})).await?;
    eventually(CONVERGE, "every instance of both services to go", || async {
        let keep = instances_of(&client, "acme.keep.").await?;
        let drop = instances_of(&client, "acme.drop.").await?;
        (keep.is_empty() && drop.is_empty()).then_some(())
    })
    .await?;
    eventually(CONVERGE, "the deleted service to go", || async {
        let answer = alice.get("/tenant/acme/service/keep").await.ok()?;
        (answer.status == StatusCode::NOT_FOUND).then_some(())
    })
    .await?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deleted_service_is_deleting_from_the_moment_the_delete_answers() -> Result<()> {
    let dir = TempDir::new()?;
    let mut args = process_platform_args(dir.path())?;
    args.push("--cluster-probe-interval=200ms".to_string());
    let nodes = ProcessCluster::start_with_args(3, &args)?;
    // Room for the instance's 3 s of cleaning up after SIGTERM.
    let agent = AgentProcess::start(&["--executor=exec", "--stop-grace=10s", "--restart-backoff=100ms"])?;
    let client = agent.client();
    let leader = nodes.leader(ELECTION).await?;
    let follower = (1..=3).find(|id| *id != leader).context("no follower")?;
    let root = PlatformClient::new(&nodes.api_addr(leader), Some(token(OPERATOR_SUBJECT)));
    let alice = PlatformClient::new(&nodes.api_addr(follower), Some(token("alice")));
    tenant_with_clusters(&root, &alice, &[(&agent, "exec")], 8000).await?;
    let slow_to_stop = json!({"deployment": {"roles": {"web": {"instances": 1,
        "exec": {"argv": ["sh", "-c", "trap 'sleep 3; exit 0' TERM; while true; do sleep 1; done"]},
        "resources": {"cpu_millis": 100, "memory_mib": 16}}}}});
    expect_ok(
        &alice,
        Method::POST,
        "/tenant/acme/service/lingering?accept=true&wait=0",
        Some(&slow_to_stop),
    )
    .await?;
    eventually(CONVERGE, "the service to report RUNNING", || async {
        let answer = alice.get("/tenant/acme/service/lingering").await.ok()?;
        (answer.body["data"]["reconcile"]["phase"] == "RUNNING").then_some(())
    })
    .await?;

    // The phase says DELETING as soon as the delete is committed, on any node.
    let deleted = expect_ok(&alice, Method::DELETE, "/tenant/acme/service/lingering", None).await?;
    ensure!(deleted["data"]["deleting"] == true, "{deleted}");
    for reader in [&alice, &root] {
        let shown = expect_ok(reader, Method::GET, "/tenant/acme/service/lingering", None).await?;
        let data = &shown["data"];
        ensure!(
            data["reconcile"]["phase"] == "DELETING" && data["deletionTimestamp"].is_u64(),
            "right after the DELETE: {shown}"
        );
        let events = data["events"].as_array().context("events")?;
        ensure!(
            events.last().is_some_and(|e| e["reason"] == "Deleting"),
            "{shown}"
        );
    }
    // Its instance is still there, taking its time to stop.
    let stopping = instances_of(&client, "acme.lingering.")
        .await
        .context("inventory")?;
    ensure!(
        !stopping.is_empty(),
        "the instance stopped at once: no test of the wait"
    );
    // And it stays DELETING until it is gone.
    eventually(CONVERGE, "the deleted service to go", || async {
        let answer = alice.get("/tenant/acme/service/lingering").await.ok()?;
        if answer.status == StatusCode::NOT_FOUND {
            return Some(Ok(()));
        }
        let phase = answer.body["data"]["reconcile"]["phase"].clone();
        (phase != "DELETING").then(|| Err(anyhow::anyhow!("the deleted service shows {phase}: {answer:?}")))
    })
    .await??;
    let left = instances_of(&client, "acme.lingering.")
        .await
        .context("inventory")?;
    ensure!(left.is_empty(), "the service went before its instance: {left:?}");
    Ok(())
}
