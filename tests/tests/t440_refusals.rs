//! Issue #31, defect 10: the platform refuses what the agent would refuse, and an agent's
//! refusal reaches the service. On three `drover serve` processes and a `sim` agent:
//!
//! - a service whose role sets `DROVER_INSTANCE_ID` (the agent's own variable) is `400` naming
//!   `roles.web.env` at create (dry run, simple form), at a whole update and at a merge patch,
//!   and nothing is committed; a pinned set with that variable or a TCP probe on port 0 is `400`
//!   too and never reaches the agent (no `set_errors`, no instance);
//! - a refusal the platform cannot foresee (a rollout's surge beyond the agent's capacity, which
//!   the scheduler does not count) makes the service `FAILED` with the agent's words and a
//!   `Warning` event, the old instance runs on untouched, and a revision that fits ends it.

use std::time::Duration;

use anyhow::{ensure, Context, Result};
use drover_model::cluster::agent_api::InstanceState;
use drover_tests::agent::{AgentClient, AgentProcess};
use drover_tests::platform::{process_platform_args, token, PlatformClient, OPERATOR_SUBJECT};
use drover_tests::process::{scraped_sum, ProcessCluster};
use drover_tests::services::{expect_ok, tenant_with_clusters};
use drover_tests::wait::eventually;
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
use tempfile::TempDir;

const ELECTION: Duration = Duration::from_secs(20);
const CONVERGE: Duration = Duration::from_secs(40);

/// Three nodes probing clusters every 200 ms, one platform-wide sim cluster `sim` started with
/// `extra`, and clients for the operator and alice on different nodes.
async fn start(
    dir: &TempDir,
    extra: &[&str],
) -> Result<(
    ProcessCluster,
    AgentProcess,
    PlatformClient,
    PlatformClient,
    String,
)> {
    let mut args = process_platform_args(dir.path())?;
    args.push("--cluster-probe-interval=200ms".to_string());
    let nodes = ProcessCluster::start_with_args(3, &args)?;
    let agent = AgentProcess::sim(extra)?;
    let leader = nodes.leader(ELECTION).await?;
    let follower = (1..=3).find(|id| *id != leader).context("no follower")?;
    let root = PlatformClient::new(&nodes.api_addr(leader), Some(token(OPERATOR_SUBJECT)));
    let alice = PlatformClient::new(&nodes.api_addr(follower), Some(token("alice")));
    tenant_with_clusters(&root, &alice, &[(&agent, "sim")], 8000).await?;
    let leader = nodes.api_addr(leader);
    Ok((nodes, agent, root, alice, leader))
}

fn service(env: Value) -> Value {
    json!({"deployment": {"roles": {"web": {"instances": 1, "exec": {"argv": ["web"]},
        "resources": {"cpu_millis": 100, "memory_mib": 16}, "env": env}}}})
}

/// Ids of the agent's instances that start with `prefix`, and whether each runs.
async fn instances_of(agent: &AgentClient, prefix: &str) -> Option<Vec<(String, bool)>> {
    let found = agent.instances_with_prefix(prefix).await?;
    Some(
        found
            .into_iter()
            .map(|i| (i.id.to_string(), i.state == InstanceState::Running))
            .collect(),
    )
}

/// Checks a `400` that names `field` and says `message`.
fn refused_naming(answer: &drover_tests::client::Answer, field: &str, message: &str) -> Result<()> {
    ensure!(answer.status == StatusCode::BAD_REQUEST, "{answer:?}");
    let content = &answer.body["content"];
    ensure!(
        content["field"] == field && content["message"].as_str() == Some(message),
        "{answer:?}"
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_the_agent_would_refuse_is_refused_before_anything_is_committed() -> Result<()> {
    let dir = TempDir::new()?;
    let (_nodes, agent, root, alice, _) = start(&dir, &[]).await?;
    let client = agent.client();
    let reserved = json!({"DROVER_INSTANCE_ID": "x"});
    let says = "DROVER_INSTANCE_ID is set by the agent";

    // Create, with and without a dry run, and the simple form: 400, nothing stored.
    for path in [
        "/tenant/acme/service/bad?accept=true&wait=5",
        "/tenant/acme/service/bad?accept=true&dryrun=true",
    ] {
        let answer = alice.post(path, &service(reserved.clone())).await?;
        refused_naming(&answer, "roles.web.env", says)?;
    }
    let simple = json!({"deployment": {"name": "bad", "up": null, "meta": {},
        "config": {"parameter": {}, "resource": {}, "resilience": 0, "scale": {"web": 1}},
        "artifact": {"roles": {"web": {"exec": {"argv": ["web"]}, "env": reserved.clone()}}}},
        "comment": ""});
    let answer = alice
        .post("/tenant/acme/service/bad/simple?accept=true", &simple)
        .await?;
    refused_naming(&answer, "roles.web.env", says)?;
    let gone = alice.get("/tenant/acme/service/bad").await?;
    ensure!(gone.status == StatusCode::NOT_FOUND, "{gone:?}");

    // A running service: a whole update and a merge patch that set it are refused, and the
    // history keeps one revision.
    expect_ok(
        &alice,
        Method::POST,
        "/tenant/acme/service/good?accept=true&wait=0",
        Some(&service(json!({"COLOR": "a"}))),
    )
    .await?;
    let update = alice
        .post(
            "/tenant/acme/service/good/revision/1?accept=true",
            &service(reserved.clone()),
        )
        .await?;
    refused_naming(&update, "roles.web.env", says)?;
    let patch = alice
        .patch(
            "/tenant/acme/service/good/revision/1?accept=true",
            &json!({"roles": {"web": {"env": reserved.clone()}}}),
        )
        .await?;
    refused_naming(&patch, "roles.web.env", says)?;
    let history = expect_ok(&alice, Method::GET, "/tenant/acme/service/good/history", None).await?;
    ensure!(history["data"].as_array().map(Vec::len) == Some(1), "{history}");

    // Pinned sets: the agent's variable, a TCP probe on port 0.
    let pinned = |env: Value, probe: Value| json!({"count": 1, "exec": {"argv": ["sleep", "100"], "probe": probe}, "env": env});
    let path = "/tenant/operator/cluster/sim/set/pinned";
    let answer = root.put(path, &pinned(reserved.clone(), Value::Null)).await?;
    refused_naming(&answer, "env", says)?;
    let answer = root
        .put(path, &pinned(json!({}), json!({"tcp": {"port": 0}})))
        .await?;
    refused_naming(&answer, "exec.probe.tcp.port", "must not be 0")?;
    // The agent never sees them: once the good service runs, there is no refused set and no
    // instance of them.
    eventually(CONVERGE, "the good service to run", || async {
        let running = instances_of(&client, "acme.good.").await?;
        (running == [("acme.good.web.r1.0".to_string(), true)]).then_some(())
    })
    .await?;
    let cluster = expect_ok(&root, Method::GET, "/tenant/operator/cluster/sim", None).await?;
    let errors = &cluster["data"]["status"]["set_errors"];
    ensure!(errors.as_object().is_none_or(|e| e.is_empty()), "{cluster}");
    ensure!(
        instances_of(&client, "pinned.").await == Some(Vec::new()),
        "a refused pinned set reached the agent"
    );
    ensure!(
        instances_of(&client, "acme.bad.").await == Some(Vec::new()),
        "a refused service reached the agent"
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_set_the_agent_refuses_fails_the_service_with_its_words() -> Result<()> {
    let dir = TempDir::new()?;
    // Room for exactly one instance of 100 millicpus: a rollout's second one does not fit.
    let (_nodes, agent, _root, alice, leader) =
        start(&dir, &["--capacity-cpu-millis=100", "--capacity-memory-mib=64"]).await?;
    let client = agent.client();
    expect_ok(
        &alice,
        Method::POST,
        "/tenant/acme/service/tight?accept=true&wait=0",
        Some(&service(json!({"COLOR": "a"}))),
    )
    .await?;
    eventually(CONVERGE, "the service to report RUNNING", || async {
        let answer = alice.get("/tenant/acme/service/tight").await.ok()?;
        (answer.body["data"]["reconcile"]["phase"] == "RUNNING").then_some(())
    })
    .await?;

    // A new environment replaces the instance: the new one starts beside the old one first,
    // which the agent has no room for. A wait for it ends as soon as the service is FAILED
    // (answered as a timeout is: 201 with a request id), not when its 60 s run out.
    let asked = std::time::Instant::now();
    let patched = alice
        .call(
            Method::PATCH,
            "/tenant/acme/service/tight/revision/1?accept=true&wait=60",
            Some(&json!({"roles": {"web": {"env": {"COLOR": "b"}}}})),
        )
        .await?;
    let waited = asked.elapsed();
    ensure!(
        patched.status == reqwest::StatusCode::CREATED && patched.body["data"]["requestId"].is_string(),
        "{patched:?}"
    );
    ensure!(
        waited < std::time::Duration::from_secs(30),
        "the wait went on {waited:?} after the agent refused the revision's set"
    );
    let shown = eventually(CONVERGE, "the service to say the agent refuses it", || async {
        let answer = alice.get("/tenant/acme/service/tight").await.ok()?;
        let reconcile = &answer.body["data"]["reconcile"];
        (reconcile["phase"] == "FAILED").then(|| answer.body.clone())
    })
    .await?;
    let reason = shown["data"]["reconcile"]["reason"].as_str().unwrap_or_default();
    ensure!(
        reason.starts_with("revision 2 on cluster operator/sim: the agent refuses the desired set (422): ")
            && reason.contains("acme.tight.web.r")
            && reason.contains(") does not fit: it requests 100 millicpus"),
        "{shown}"
    );
    let events = shown["data"]["events"].as_array().context("events")?;
    ensure!(
        events.iter().any(|e| e["reason"] == "Failed"
            && e["type"] == "Warning"
            && e["message"].as_str() == Some(reason)),
        "{shown}"
    );
    // Nothing was half-applied: the old instance runs, alone.
    let running = instances_of(&client, "acme.tight.").await.context("inventory")?;
    ensure!(
        running == [("acme.tight.web.r1.0".to_string(), true)],
        "{running:?}"
    );
    // The actor sends the set again, slowly (room may free up); it stays FAILED through those
    // retries, with its one event, never back to PROGRESSING between them.
    let calls = "drover_service_driver_calls_total";
    let before = scraped_sum(&leader, calls).await?;
    eventually(
        CONVERGE,
        "the actor to send the refused set twice more",
        || async {
            let now = scraped_sum(&leader, calls).await.ok()?;
            (now >= before + 2.0).then_some(())
        },
    )
    .await?;
    let still = expect_ok(&alice, Method::GET, "/tenant/acme/service/tight", None).await?;
    ensure!(still["data"]["reconcile"]["phase"] == "FAILED", "{still}");
    let events = still["data"]["events"].as_array().context("events")?;
    let failed = events.iter().filter(|e| e["reason"] == "Failed").count();
    ensure!(
        failed == 1
            && events
                .last()
                .is_some_and(|e| e["reason"] == "Failed" && e["counter"] == 1),
        "{still}"
    );

    // A revision that fits beside the old instance (no CPU asked) ends it.
    expect_ok(
        &alice,
        Method::PATCH,
        "/tenant/acme/service/tight/revision/2?accept=true",
        Some(&json!({"roles": {"web": {"resources": {"cpu_millis": 0}}}})),
    )
    .await?;
    eventually(CONVERGE, "the service to run its third revision", || async {
        let answer = alice.get("/tenant/acme/service/tight").await.ok()?;
        let running = instances_of(&client, "acme.tight.").await?;
        (answer.body["data"]["reconcile"]["phase"] == "RUNNING"
            && running == [("acme.tight.web.r3.0".to_string(), true)])
        .then_some(())
    })
    .await?;
    Ok(())
}
