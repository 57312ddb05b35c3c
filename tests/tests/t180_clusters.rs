//! Workload clusters end to end: three `drover serve` processes and `drover agent` processes.
//! A cluster registered through a follower runs a pinned set as real processes (checked in
//! `/proc`), its logs read through the platform API, a killed instance restarted; who may
//! register and read clusters, and the join token never shown; fencing across a leader change
//! and a paused old leader, checked on the agent's own inventory; the cluster states through an
//! agent outage and a leader kill, pressure and draining, each transition an event with a
//! reason; the clusters an environment may use.

use std::time::Duration;

use anyhow::{ensure, Context, Result};
use drover_model::cluster::agent_api::{Fence, InstanceState};
use drover_tests::agent::{processes_of_instance, sleeper, AgentProcess, AGENT_TOKEN};
use drover_tests::platform::{process_platform_args, token, PlatformClient, OPERATOR_SUBJECT};
use drover_tests::process::ProcessCluster;
use drover_tests::services::{cluster_at, cluster_state_at};
use drover_tests::wait::eventually;
use reqwest::StatusCode;
use serde_json::{json, Value};
use tempfile::TempDir;

const ELECTION: Duration = Duration::from_secs(20);
const CONVERGE: Duration = Duration::from_secs(30);

/// Three nodes that trust the test issuer, with fast cluster probes and a 2 s offline budget.
fn start_nodes(dir: &TempDir) -> Result<ProcessCluster> {
    let mut args = process_platform_args(dir.path())?;
    args.push("--cluster-probe-interval=200ms".to_string());
    args.push("--cluster-offline-after=2s".to_string());
    ProcessCluster::start_with_args(3, &args)
}

fn as_user(nodes: &ProcessCluster, id: u64, subject: &str) -> PlatformClient {
    PlatformClient::new(&nodes.api_addr(id), Some(token(subject)))
}

/// The node every running node in `ids` names as leader.
async fn leader_among(nodes: &ProcessCluster, ids: &[u64]) -> Result<u64> {
    eventually(ELECTION, "a leader among the running nodes", || async {
        let mut seen = None;
        for id in ids {
            let (status, body) = nodes.client(*id).get_path("/cluster").await.ok()?;
            let body: Value = serde_json::from_str(&body).ok().filter(|_| status.is_success())?;
            let leader = body["leader"].as_u64()?;
            if !ids.contains(&leader) || seen.is_some_and(|s| s != leader) {
                return None;
            }
            seen = Some(leader);
        }
        seen
    })
    .await
}

/// Registers `root` (an operator) and `alice`, and lets alice create tenant `acme`.
async fn tenant_acme(nodes: &ProcessCluster) -> Result<()> {
    for subject in [OPERATOR_SUBJECT, "alice"] {
        as_user(nodes, 1, subject).register(subject).await?;
    }
    let answer = as_user(nodes, 2, "alice")
        .post("/tenant/acme", &json!({}))
        .await?;
    ensure!(answer.status == StatusCode::OK, "creating acme: {answer:?}");
    Ok(())
}

async fn register_cluster(
    client: &PlatformClient,
    tenant: &str,
    name: &str,
    agent: &AgentProcess,
) -> Result<()> {
    let body = json!({
        "endpoint": format!("http://{}", agent.addr()),
        "join_token": AGENT_TOKEN,
        "labels": {"zone": "a"},
    });
    let answer = client
        .post(&format!("/tenant/{tenant}/cluster/{name}"), &body)
        .await?;
    ensure!(answer.status == StatusCode::OK, "registering {name}: {answer:?}");
    Ok(())
}

fn set_body(count: u32) -> Value {
    json!({
        "count": count,
        "exec": {"argv": ["sh", "-c", "echo started $DROVER_INSTANCE_ID; exec sleep 1000"]},
        "resources": {"cpu_millis": 10, "memory_mib": 8},
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_registered_agent_runs_a_pinned_set_as_real_processes() -> Result<()> {
    let dir = TempDir::new()?;
    let nodes = start_nodes(&dir)?;
    let agent = AgentProcess::exec(&[])?;
    let leader = nodes.leader(ELECTION).await?;
    let follower = (1..=3).find(|id| *id != leader).context("no follower")?;
    tenant_acme(&nodes).await?;
    let alice = as_user(&nodes, follower, "alice");

    // Authorization: a plain member cannot register; strangers see nothing; only operators list
    // every tenant's clusters.
    let bob_uid = as_user(&nodes, 1, "bob").register("bob").await?;
    as_user(&nodes, 1, "carol").register("carol").await?;
    let invite = alice
        .call(
            reqwest::Method::POST,
            &format!("/tenant/acme/user/{bob_uid}?role=plain"),
            None,
        )
        .await?;
    ensure!(invite.status == StatusCode::OK, "inviting bob: {invite:?}");
    let confirm = as_user(&nodes, 1, "bob")
        .call(reqwest::Method::PUT, "/tenant/acme/user?role=plain", None)
        .await?;
    ensure!(confirm.status == StatusCode::OK, "bob confirming: {confirm:?}");
    register_cluster(&alice, "acme", "edge", &agent).await?;
    let bob = as_user(&nodes, 3, "bob");
    let refused = bob
        .post(
            "/tenant/acme/cluster/bobs",
            &json!({"endpoint": "http://127.0.0.1:1", "join_token": AGENT_TOKEN}),
        )
        .await?;
    ensure!(
        refused.status == StatusCode::FORBIDDEN,
        "a plain member registered a cluster: {refused:?}"
    );
    ensure!(
        bob.get("/tenant/acme/cluster").await?.status == StatusCode::OK,
        "members read clusters"
    );
    let carol = as_user(&nodes, 2, "carol");
    ensure!(carol.get("/tenant/acme/cluster").await?.status == StatusCode::NOT_FOUND);
    ensure!(alice.get("/cluster").await?.status == StatusCode::FORBIDDEN);
    let everything = as_user(&nodes, 1, OPERATOR_SUBJECT).get("/cluster").await?;
    ensure!(everything.status == StatusCode::OK, "{everything:?}");
    ensure!(everything.body["data"][0]["name"] == "edge", "{everything:?}");

    // A set of three instances: three real processes, one per instance id.
    let put = alice
        .put("/tenant/acme/cluster/edge/set/t180-web", &set_body(3))
        .await?;
    ensure!(put.status == StatusCode::OK, "pinning the set: {put:?}");
    let client = agent.client();
    let inventory = client.running_set("t180-web", 3, CONVERGE).await?;
    for instance in &inventory.instances {
        let pids = processes_of_instance(instance.id.as_str());
        ensure!(
            pids == vec![instance.pid.unwrap_or_default()],
            "instance {} runs as {pids:?}, the agent says {:?}",
            instance.id,
            instance.pid
        );
    }
    cluster_state_at(&alice, "/tenant/acme/cluster/edge", "ONLINE", CONVERGE).await?;

    // Its logs, through the platform API (another node than the one it was registered on).
    let url = format!(
        "http://{}/api/1.0-beta/tenant/acme/cluster/edge/instance/t180-web.main.r1.0/logs?tail=10",
        nodes.api_addr(leader)
    );
    let http = reqwest::Client::new();
    let text = eventually(
        CONVERGE,
        "the instance's output through the platform API",
        || async {
            let answer = http.get(&url).bearer_auth(token("alice")).send().await.ok()?;
            let text = answer.text().await.ok()?;
            text.contains("started t180-web.main.r1.0").then_some(text)
        },
    )
    .await?;
    ensure!(
        !text.contains("t180-web.main.r1.1"),
        "one instance's log shows another's: {text:?}"
    );

    // SIGKILL one process: the agent starts it again and counts the restart; the cluster's
    // committed status follows.
    let victim = &inventory.instances[0];
    let old_pid = victim.pid.context("no pid")?;
    drover_tests::agent::kill_pid(old_pid)?;
    eventually(CONVERGE, "the killed instance to run again", || async {
        let now = client.instance(victim.id.as_str()).await.ok()??;
        (now.restarts >= 1 && now.state == InstanceState::Running && now.pid.is_some_and(|p| p != old_pid))
            .then_some(())
    })
    .await?;
    ensure!(processes_of_instance(victim.id.as_str()).len() == 1);
    eventually(CONVERGE, "the restart in the cluster's status", || async {
        cluster_at(&alice, "/tenant/acme/cluster/edge")
            .await
            .filter(|c| c["status"]["instances"]["restarts"].as_u64() >= Some(1))
    })
    .await?;

    // A restart asked through the platform API: the cluster actor carries it out on the agent
    // and clears the request.
    let second = &inventory.instances[1];
    let second_pid = second.pid.context("no pid")?;
    let path = format!("/tenant/acme/cluster/edge/instance/{}/restart", second.id);
    let asked = alice.call(reqwest::Method::POST, &path, None).await?;
    ensure!(asked.status == StatusCode::OK, "restart: {asked:?}");
    let refused = bob.call(reqwest::Method::POST, &path, None).await?;
    ensure!(
        refused.status == StatusCode::FORBIDDEN,
        "a plain member restarted: {refused:?}"
    );
    eventually(CONVERGE, "the requested restart on the agent", || async {
        let now = client.instance(second.id.as_str()).await.ok()??;
        (now.restarts > second.restarts && now.pid.is_some_and(|p| p != second_pid)).then_some(())
    })
    .await?;
    ensure!(
        !drover_tests::agent::alive(second_pid),
        "the old process of a restarted instance lives on"
    );
    eventually(CONVERGE, "the restart request to be cleared", || async {
        cluster_at(&alice, "/tenant/acme/cluster/edge")
            .await
            .filter(|c| c.get("pending_restarts").is_none())
    })
    .await?;

    // A set that does not fit is refused by the agent; the cluster says why.
    let huge =
        json!({"count": 1, "exec": {"argv": ["sleep", "1"]}, "resources": {"cpu_millis": 100_000_000}});
    ensure!(
        alice
            .put("/tenant/acme/cluster/edge/set/t180-huge", &huge)
            .await?
            .status
            == StatusCode::OK
    );
    let refused_set = eventually(CONVERGE, "the refusal on the cluster", || async {
        cluster_at(&alice, "/tenant/acme/cluster/edge")
            .await
            .and_then(|c| {
                c["status"]["set_errors"]["t180-huge"]
                    .as_str()
                    .map(str::to_string)
            })
    })
    .await?;
    ensure!(refused_set.contains("t180-huge.main.r1.0"), "{refused_set}");
    ensure!(
        alice
            .delete("/tenant/acme/cluster/edge/set/t180-huge")
            .await?
            .status
            == StatusCode::OK
    );

    // The join token is in no answer and no node's log.
    for path in ["/tenant/acme/cluster", "/tenant/acme/cluster/edge"] {
        let shown = alice.get(path).await?.body.to_string();
        ensure!(!shown.contains(AGENT_TOKEN), "{path} shows the join token");
    }
    ensure!(!everything.body.to_string().contains(AGENT_TOKEN));
    for id in 1..=3 {
        ensure!(
            !nodes.log_of(id).contains(AGENT_TOKEN),
            "node {id}'s log holds the join token"
        );
    }

    // Removing the set stops its processes.
    let pids: Vec<u32> = client
        .inventory()
        .await?
        .instances
        .iter()
        .filter_map(|i| i.pid)
        .collect();
    ensure!(
        alice
            .delete("/tenant/acme/cluster/edge/set/t180-web")
            .await?
            .status
            == StatusCode::OK
    );
    eventually(CONVERGE, "the set's processes to be gone", || async {
        pids.iter()
            .all(|pid| !drover_tests::agent::alive(*pid))
            .then_some(())
    })
    .await?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deposed_leader_changes_nothing_on_the_agent() -> Result<()> {
    let dir = TempDir::new()?;
    let mut nodes = start_nodes(&dir)?;
    let agent = AgentProcess::exec(&[])?;
    let old_leader = nodes.leader(ELECTION).await?;
    tenant_acme(&nodes).await?;
    let alice = as_user(&nodes, old_leader, "alice");
    register_cluster(&alice, "acme", "edge", &agent).await?;
    ensure!(
        alice
            .put("/tenant/acme/cluster/edge/set/t180-fence", &set_body(2))
            .await?
            .status
            == StatusCode::OK
    );
    let client = agent.client();
    let before = client.running_set("t180-fence", 2, CONVERGE).await?;
    let old_fence = before.fence;
    ensure!(
        old_fence.leader == old_leader,
        "fence {old_fence} is not the leader's"
    );

    // Pause the leader; the others elect a new one, whose cluster actor resends every set at
    // the start of its term and so raises the agent's fence.
    nodes.pause(old_leader, true)?;
    let others: Vec<u64> = (1..=3).filter(|id| *id != old_leader).collect();
    let new_leader = leader_among(&nodes, &others).await?;
    let new_fence: Fence = eventually(CONVERGE, "the new leader's fence on the agent", || async {
        let fence = client.inventory().await.ok()?.fence;
        (fence.term > old_fence.term && fence.leader == new_leader).then_some(fence)
    })
    .await?;

    // The new leader writes: one instance instead of two.
    let alice = as_user(&nodes, new_leader, "alice");
    ensure!(
        alice
            .put("/tenant/acme/cluster/edge/set/t180-fence", &set_body(1))
            .await?
            .status
            == StatusCode::OK
    );
    let after = client.running_set("t180-fence", 1, CONVERGE).await?;

    // A call with the old fence is refused and changes nothing.
    let stale = drover_tests::agent::desired(
        old_fence.term,
        old_fence.leader,
        vec![sleeper("t180-fence.main.r1.5")],
    );
    let refused = client.put_set("t180-fence", &stale).await?;
    ensure!(
        refused.status == StatusCode::CONFLICT,
        "an old fence was accepted: {refused:?}"
    );
    ensure!(refused.error().contains("fenced"), "{}", refused.error());
    ensure!(client.inventory().await?.instances == after.instances);

    // Resume the old leader: it learns of the new term and its actors stop; whatever it tried
    // meanwhile was refused. The agent still runs the new leader's set under its fence.
    nodes.pause(old_leader, false)?;
    let all: Vec<u64> = (1..=3).collect();
    ensure!(leader_among(&nodes, &all).await? == new_leader);
    let now = client.inventory().await?;
    ensure!(now.fence >= new_fence, "the fence went back to {}", now.fence);
    let mine: Vec<_> = now
        .instances
        .iter()
        .filter(|i| i.set.as_str() == "t180-fence")
        .collect();
    ensure!(mine.len() == 1, "the agent runs {mine:?}");
    ensure!(processes_of_instance("t180-fence.main.r1.0").len() == 1);
    ensure!(processes_of_instance("t180-fence.main.r1.1").is_empty());
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cluster_states_follow_the_agent_across_a_leader_kill() -> Result<()> {
    let dir = TempDir::new()?;
    let mut nodes = start_nodes(&dir)?;
    let agent = AgentProcess::sim(&["--sim-nodes=2"])?;
    let leader = nodes.leader(ELECTION).await?;
    tenant_acme(&nodes).await?;
    let root = as_user(&nodes, leader, OPERATOR_SUBJECT);
    register_cluster(&root, "operator", "sim", &agent).await?;
    let path = "/tenant/operator/cluster/sim";
    let online = cluster_state_at(&root, path, "ONLINE", CONVERGE).await?;
    ensure!(online["status"]["facts"]["nodes"] == 2, "{online}");

    // Environments see the platform-wide cluster when they select it, with its free capacity.
    let alice = as_user(&nodes, leader, "alice");
    let account = alice
        .post("/tenant/acme/account/main", &json!({"spec": {"iaas": "sim"}}))
        .await?;
    ensure!(account.status == StatusCode::OK, "{account:?}");
    for (env, zone) in [("prod", "a"), ("other", "b")] {
        let body = json!({"clusters": {"labels": {"zone": zone}}});
        let created = alice
            .post(&format!("/tenant/acme/account/main/environment/{env}"), &body)
            .await?;
        ensure!(created.status == StatusCode::OK, "{created:?}");
    }
    let usable = alice
        .get("/tenant/acme/account/main/environment/prod/clusters")
        .await?;
    ensure!(usable.body["data"]["clusters"][0]["name"] == "sim", "{usable:?}");
    ensure!(usable.body["data"]["free"]["cpu_millis"] == 8000, "{usable:?}");
    let none = alice
        .get("/tenant/acme/account/main/environment/other/clusters")
        .await?;
    ensure!(none.body["data"]["clusters"] == json!([]), "{none:?}");

    // Pressure makes it UNHEALTHY, draining NOTREADY; both clear.
    let client = agent.client();
    let faults = |body: Value| {
        let client = client.clone();
        async move {
            let answer = client
                .call(reqwest::Method::PUT, "/v1/sim/faults", Some(&body))
                .await?;
            ensure!(answer.status == StatusCode::OK, "{answer:?}");
            Ok(())
        }
    };
    faults(json!({"pressure": "memory"})).await?;
    cluster_state_at(&root, path, "UNHEALTHY", CONVERGE).await?;
    faults(json!({})).await?;
    cluster_state_at(&root, path, "ONLINE", CONVERGE).await?;
    let drain_path = format!("{path}/drain");
    ensure!(root.put(&drain_path, &json!({"draining": true})).await?.status == StatusCode::OK);
    cluster_state_at(&root, path, "NOTREADY", CONVERGE).await?;
    ensure!(root.put(&drain_path, &json!({"draining": false})).await?.status == StatusCode::OK);
    cluster_state_at(&root, path, "ONLINE", CONVERGE).await?;

    // The agent stops: DEGRADED, then (after a leader kill) OFFLINE within the budget.
    let mut agent = agent;
    agent.kill()?;
    cluster_state_at(&root, path, "DEGRADED", CONVERGE).await?;
    nodes.kill(leader)?;
    let others: Vec<u64> = (1..=3).filter(|id| *id != leader).collect();
    let new_leader = leader_among(&nodes, &others).await?;
    let root = as_user(&nodes, new_leader, OPERATOR_SUBJECT);
    cluster_state_at(&root, path, "OFFLINE", CONVERGE).await?;

    // It starts again: CONNECTING, then ONLINE.
    agent.restart()?;
    let back = cluster_state_at(&root, path, "ONLINE", CONVERGE).await?;
    let events: Vec<(String, String, String)> = back["events"]
        .as_array()
        .context("no events")?
        .iter()
        .map(|e| {
            (
                e["from"].as_str().unwrap_or_default().to_string(),
                e["to"].as_str().unwrap_or_default().to_string(),
                e["reason"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect();
    let path_taken: Vec<(&str, &str)> = events.iter().map(|(f, t, _)| (f.as_str(), t.as_str())).collect();
    for step in [
        ("PENDING", "ONLINE"),
        ("ONLINE", "DEGRADED"),
        ("DEGRADED", "OFFLINE"),
        ("OFFLINE", "CONNECTING"),
        ("CONNECTING", "ONLINE"),
        ("ONLINE", "UNHEALTHY"),
        ("ONLINE", "NOTREADY"),
    ] {
        ensure!(path_taken.contains(&step), "no {step:?} in {events:?}");
    }
    ensure!(
        events.iter().all(|(_, _, reason)| !reason.is_empty()),
        "{events:?}"
    );
    let offline = events
        .iter()
        .find(|(_, t, _)| t == "OFFLINE")
        .context("no OFFLINE")?;
    ensure!(offline.2.contains("budget 2s"), "{offline:?}");
    Ok(())
}

/// Milliseconds since the Unix epoch, the clock the leader stamps transitions with.
fn now_ms() -> Result<u64> {
    let since = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH)?;
    Ok(u64::try_from(since.as_millis())?)
}

/// Issue #31, defect 7: `--cluster-offline-after` means what it says. With the report's
/// settings (1 s probes, 3 s budget) a frozen agent — SIGSTOP: its listener accepts connections,
/// nothing answers, so every probe waits for its timeout — is `OFFLINE` 3 s after its last
/// answer, not after a probe timeout and interval more (5–6 s before the fix). Its last answer
/// came between one probe interval before the freeze and the freeze, so the transition's
/// committed time is within [budget − interval, budget] of the freeze, plus a margin.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_frozen_agent_is_offline_when_its_budget_runs_out() -> Result<()> {
    let dir = TempDir::new()?;
    let mut args = process_platform_args(dir.path())?;
    args.push("--cluster-probe-interval=1s".to_string());
    args.push("--cluster-offline-after=3s".to_string());
    let nodes = ProcessCluster::start_with_args(3, &args)?;
    let agent = AgentProcess::sim(&[])?;
    let leader = nodes.leader(ELECTION).await?;
    tenant_acme(&nodes).await?;
    let root = as_user(&nodes, leader, OPERATOR_SUBJECT);
    register_cluster(&root, "operator", "frozen", &agent).await?;
    let path = "/tenant/operator/cluster/frozen";
    cluster_state_at(&root, path, "ONLINE", CONVERGE).await?;

    let frozen_at = now_ms()?;
    agent.freeze(true)?;
    let offline = cluster_state_at(&root, path, "OFFLINE", CONVERGE).await?;
    let event = offline["events"]
        .as_array()
        .context("no events")?
        .iter()
        .rev()
        .find(|e| e["to"] == "OFFLINE")
        .cloned()
        .context("no OFFLINE event")?;
    let at = event["at_ms"].as_u64().context("no at_ms")?;
    let after = at.saturating_sub(frozen_at);
    eprintln!("OFFLINE {after} ms after the freeze: {event}");
    ensure!(
        after <= 3_000 + 1_000,
        "OFFLINE {after} ms after the freeze, with a 3 s budget: {event}"
    );
    ensure!(
        at >= frozen_at + 3_000 - 1_000 - 500,
        "OFFLINE {after} ms after the freeze, before the budget could run out: {event}"
    );
    ensure!(
        event["reason"]
            .as_str()
            .is_some_and(|r| r.contains("no answer for 3s (budget 3s)")),
        "{event}"
    );

    // It answers again: CONNECTING, then ONLINE (a probe of an OFFLINE cluster is not cut).
    agent.freeze(false)?;
    cluster_state_at(&root, path, "ONLINE", CONVERGE).await?;
    Ok(())
}
