//! Drover as three hosts with addresses of their own, started exactly as README's "Running a
//! node" shows (`--api-addr 0.0.0.0:7400 --peer-addr 0.0.0.0:7500`, no advertised address),
//! each host a network namespace of its own on a bridge (`drover_tests::netns`), and an agent
//! on a fourth host. Membership names every member by the address clients reach it at, never
//! `0.0.0.0`; a write sent to a follower is forwarded; the `drover` CLI works against the
//! hosts; a host cut off (it answers nothing, as a vanished host does) costs the CLI one dial
//! timeout per command, not the request timeout per request; the cut host comes back and
//! catches up; the leader drives the agent on the fourth host throughout.
//!
//! Needs root (network namespaces, iptables), as CI has: without it the test fails, saying so.

use std::path::Path;
use std::process::Output;
use std::time::{Duration, Instant};

use anyhow::{ensure, Context, Result};
use drover_model::cluster::agent_api::InstanceState;
use drover_tests::agent::{write_token_file, AgentClient, AGENT_TOKEN};
use drover_tests::client::LeaseClient;
use drover_tests::netns::{self, HostProcess, Network};
use drover_tests::platform::{process_platform_args, token, PlatformClient, OPERATOR_SUBJECT};
use drover_tests::process::drover_binary;
use drover_tests::services::cluster_state_at;
use drover_tests::wait::eventually;
use drover_tests::TEST_SECRET;
use reqwest::StatusCode;
use serde_json::{json, Value};
use tempfile::TempDir;

const NODES: [u8; 3] = [1, 2, 3];
const AGENT_HOST: u8 = 4;
const AGENT_PORT: u16 = 7700;
const SETTLE: Duration = Duration::from_secs(40);

fn api(host: u8) -> String {
    format!("{}:7400", Network::ip(host))
}

/// The three nodes' API URLs, `first` first.
fn servers(first: u8) -> String {
    let mut order = vec![first];
    order.extend(NODES.iter().filter(|n| **n != first));
    order
        .iter()
        .map(|n| format!("http://{}", api(*n)))
        .collect::<Vec<_>>()
        .join(",")
}

fn start_node(network: &Network, dir: &Path, id: u8, platform: &[String]) -> Result<HostProcess> {
    let initial = NODES
        .iter()
        .map(|n| format!("{n}={}:7500", Network::ip(*n)))
        .collect::<Vec<_>>()
        .join(",");
    let mut command = network.command(id, &drover_binary()?)?;
    command
        .args(["serve", "--node-id", &id.to_string()])
        .arg(format!("--data-dir={}", dir.join(format!("node-{id}")).display()))
        // README's "Running a node", with no --advertise-api-addr.
        .args(["--api-addr", "0.0.0.0:7400", "--peer-addr", "0.0.0.0:7500"])
        .args(["--initial-cluster", &initial])
        .args([
            "--heartbeat-ms=100",
            "--election-timeout-min-ms=500",
            "--election-timeout-max-ms=1000",
            "--cluster-probe-interval=200ms",
            "--cluster-offline-after=2s",
        ])
        .args(platform)
        .env("DROVER_CLUSTER_SECRET", TEST_SECRET);
    HostProcess::spawn(command, dir.join(format!("node-{id}.log")))
}

fn start_agent(network: &Network, dir: &Path) -> Result<HostProcess> {
    let token = write_token_file(dir, 0o600)?;
    let mut command = network.command(AGENT_HOST, &drover_binary()?)?;
    command
        .arg("agent")
        .arg(format!("--listen={}:{AGENT_PORT}", Network::ip(AGENT_HOST)))
        .arg(format!("--data-dir={}", dir.join("agent").display()))
        .arg(format!("--join-token-file={}", token.display()))
        .args([
            "--name=host-4",
            "--plain-http",
            "--executor=sim",
            "--restart-backoff=100ms",
        ])
        .env_remove("DROVER_JOIN_TOKEN");
    HostProcess::spawn(command, dir.join("agent.log"))
}

/// `GET /cluster` of the node on `host`.
async fn cluster_of(host: u8) -> Option<Value> {
    let (status, body) = LeaseClient::new(&api(host)).get_path("/cluster").await.ok()?;
    status.is_success().then(|| serde_json::from_str(&body).ok())?
}

/// The leader every node in `hosts` names, once they agree on one of them.
async fn agreed_leader(hosts: &[u8]) -> Result<u8> {
    eventually(
        SETTLE,
        &format!("nodes {hosts:?} to agree on a leader"),
        || async {
            let mut seen = None;
            for host in hosts {
                let leader = cluster_of(*host).await?["leader"].as_u64()?;
                let leader = u8::try_from(leader).ok().filter(|l| hosts.contains(l))?;
                if seen.is_some_and(|s| s != leader) {
                    return None;
                }
                seen = Some(leader);
            }
            seen
        },
    )
    .await
}

/// Every member as `/cluster` of `host` shows it names its own host's address, reachable.
fn members_named_by_their_hosts(view: &Value) -> bool {
    let Some(members) = view["members"].as_array() else {
        return false;
    };
    members.len() == NODES.len()
        && members.iter().all(|m| {
            let id = m["id"].as_u64().and_then(|id| u8::try_from(id).ok()).unwrap_or(0);
            m["reachable"] == true
                && m["apiAddr"] == api(id).as_str()
                && m["peerAddr"] == format!("{}:7500", Network::ip(id)).as_str()
        })
}

fn lease_client(host: u8) -> LeaseClient {
    LeaseClient::authorized(&api(host), Some(&format!("Bearer {}", token(OPERATOR_SUBJECT))))
}

/// Runs the `drover` CLI (in the test's namespace, which reaches every host) as the operator;
/// the output and how long it took.
fn cli(args: &[&str]) -> Result<(Output, Duration)> {
    let started = Instant::now();
    let output = std::process::Command::new(drover_binary()?)
        .args(args)
        .env("DROVER_TOKEN", token(OPERATOR_SUBJECT))
        .env_remove("DROVER_SERVER")
        .env_remove("DROVER_CONTEXT")
        .env_remove("DROVER_DIAL_TIMEOUT")
        .env_remove("DROVER_TIMEOUT")
        .env("XDG_CONFIG_HOME", "/nonexistent")
        .output()?;
    Ok((output, started.elapsed()))
}

fn stdout_json(output: &Output, what: &str) -> Result<Value> {
    serde_json::from_slice(&output.stdout).with_context(|| {
        format!(
            "{what}: no JSON on stdout ({}): {}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        )
    })
}

#[test]
fn three_hosts_and_an_agent_in_namespaces_of_their_own() -> Result<()> {
    if !netns::inside() {
        return netns::reexec_isolated("three_hosts_and_an_agent_in_namespaces_of_their_own");
    }
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?
        .block_on(hosts())
}

async fn hosts() -> Result<()> {
    // Declared first, dropped last: the processes go before their namespaces.
    let network = Network::new(4)?;
    let dir = TempDir::new()?;
    let platform = process_platform_args(dir.path())?;
    let mut nodes = Vec::new();
    for id in NODES {
        nodes.push(start_node(&network, dir.path(), id, &platform)?);
    }
    let agent = start_agent(&network, dir.path())?;
    let result = scenario(&network).await;
    if result.is_err() {
        for (id, node) in NODES.iter().zip(&nodes) {
            eprintln!("--- node {id} ---\n{}", node.log());
        }
        eprintln!("--- agent ---\n{}", agent.log());
    }
    result?;
    // No node died along the way.
    for node in &mut nodes {
        node.check_running()?;
    }
    Ok(())
}

async fn scenario(network: &Network) -> Result<()> {
    // Membership: every node shows every member at its host's address, none at 0.0.0.0.
    let leader = agreed_leader(&NODES).await?;
    for host in NODES {
        let view = eventually(
            SETTLE,
            &format!("node {host} to show every member's address"),
            || async { cluster_of(host).await.filter(members_named_by_their_hosts) },
        )
        .await;
        let last = cluster_of(host).await;
        view.with_context(|| format!("node {host} shows {last:?}"))?;
    }

    // Forwarding: writes sent to a follower (the platform's, a lease's) are applied, and read
    // back through the leader.
    let follower = NODES.into_iter().find(|n| *n != leader).context("no follower")?;
    let root = root_on(follower);
    root.register(OPERATOR_SUBJECT).await?;
    for tenant in ["acme", "beta", "gamma"] {
        let answer = root.post(&format!("/tenant/{tenant}"), &json!({})).await?;
        ensure!(answer.status == StatusCode::OK, "creating {tenant}: {answer:?}");
    }
    let created = lease_client(follower)
        .create("acme", "through-a-follower", "t485")
        .await?;
    ensure!(
        created.status == StatusCode::CREATED,
        "writing through node {follower}: {created:?}"
    );
    let read = lease_client(leader).get("acme", "through-a-follower", "").await?;
    ensure!(
        read.body["spec"]["holderIdentity"] == "t485",
        "read through the leader: {read:?}"
    );

    // The agent on the fourth host, registered as a cluster through a follower.
    let agent_addr = format!("{}:{AGENT_PORT}", Network::ip(AGENT_HOST));
    let body = json!({"endpoint": format!("http://{agent_addr}"), "join_token": AGENT_TOKEN});
    let registered = root.post("/tenant/acme/cluster/edge", &body).await?;
    ensure!(
        registered.status == StatusCode::OK,
        "registering the agent: {registered:?}"
    );
    cluster_state_at(&root, "/tenant/acme/cluster/edge", "ONLINE", SETTLE).await?;
    let set = json!({"count": 2, "exec": {"argv": ["sleep", "1000"]}, "resources": {"cpu_millis": 10, "memory_mib": 8}});
    let pinned = root.put("/tenant/acme/cluster/edge/set/t485-web", &set).await?;
    ensure!(pinned.status == StatusCode::OK, "pinning a set: {pinned:?}");
    let agent = AgentClient::new(&agent_addr, Some(AGENT_TOKEN));
    running_on_agent(&agent, 2).await?;

    // The CLI against the three hosts.
    let (status, _) = cli(&["cluster", "status", "--server", &servers(1), "-o", "json"])?;
    ensure!(
        status.status.success(),
        "drover cluster status: {}",
        String::from_utf8_lossy(&status.stderr)
    );
    let view = stdout_json(&status, "drover cluster status")?;
    ensure!(
        members_named_by_their_hosts(&view),
        "drover cluster status shows {view}"
    );
    let (leases, _) = cli(&[
        "get",
        "leases",
        "-n",
        "acme",
        "--server",
        &servers(follower),
        "-o",
        "json",
    ])?;
    let leases = stdout_json(&leases, "drover get leases")?;
    ensure!(
        leases["items"][0]["metadata"]["name"] == "through-a-follower",
        "drover get leases: {leases}"
    );

    // The leader's host vanishes: it answers nothing, and the other two go on without it.
    network.cut(leader)?;
    let gone: std::net::SocketAddr = api(leader).parse()?;
    ensure!(
        !netns::answers(gone, Duration::from_secs(1)),
        "a cut host must answer nothing, not even a reset"
    );
    let others: Vec<u8> = NODES.into_iter().filter(|n| *n != leader).collect();
    let new_leader = agreed_leader(&others).await?;
    let during = lease_client(others[0])
        .create("acme", "while-cut", "t485")
        .await?;
    ensure!(
        during.status == StatusCode::CREATED,
        "writing while a host is cut off: {during:?}"
    );

    // The CLI given the vanished host first: one dial timeout (2 s), then the next server.
    let (status, took) = cli(&["cluster", "status", "--server", &servers(leader), "-o", "json"])?;
    eprintln!("drover cluster status with a vanished first server took {took:?}");
    let view = stdout_json(&status, "drover cluster status with a vanished first server")?;
    ensure!(
        view["leader"].as_u64() == Some(u64::from(new_leader)),
        "cluster status from the live nodes: {view}"
    );
    ensure!(
        took < Duration::from_secs(8),
        "drover cluster status took {took:?} with a vanished first server (dial timeout 2 s)"
    );
    // A command of several requests (the list, then each tenant) dials the vanished host once.
    let (tenants, took) = cli(&["get", "tenants", "-o", "wide", "--server", &servers(leader)])?;
    ensure!(
        tenants.status.success(),
        "drover get tenants -o wide: {}",
        String::from_utf8_lossy(&tenants.stderr)
    );
    eprintln!("drover get tenants -o wide with a vanished first server took {took:?}");
    let table = String::from_utf8_lossy(&tenants.stdout);
    ensure!(
        ["acme", "beta", "gamma"].iter().all(|t| table.contains(t)),
        "drover get tenants: {table}"
    );
    ensure!(
        took < Duration::from_secs(6),
        "drover get tenants -o wide (four requests) took {took:?}: the vanished server was dialled again"
    );
    // The new leader drives the agent on the fourth host.
    let scaled = json!({"count": 3, "exec": {"argv": ["sleep", "1000"]}, "resources": {"cpu_millis": 10, "memory_mib": 8}});
    let put = root_on(others[0])
        .put("/tenant/acme/cluster/edge/set/t485-web", &scaled)
        .await?;
    ensure!(
        put.status == StatusCode::OK,
        "scaling the set under the new leader: {put:?}"
    );
    running_on_agent(&agent, 3).await?;

    // The host comes back, follows the new leader and catches up.
    network.heal(leader)?;
    agreed_leader(&NODES).await?;
    eventually(SETTLE, "the healed host to catch up", || async {
        let answer = lease_client(leader)
            .get("acme", "while-cut", "?consistency=stale")
            .await
            .ok()?;
        (answer.status == StatusCode::OK).then_some(())
    })
    .await?;
    eventually(
        SETTLE,
        "drover cluster status to be healthy after the heal",
        || async {
            let (status, _) = cli(&["cluster", "status", "--server", &servers(leader), "-o", "json"]).ok()?;
            let view = stdout_json(&status, "drover cluster status").ok()?;
            (status.status.success() && members_named_by_their_hosts(&view)).then_some(())
        },
    )
    .await
}

fn root_on(host: u8) -> PlatformClient {
    PlatformClient::new(&api(host), Some(token(OPERATOR_SUBJECT)))
}

/// Waits until the agent runs `count` instances of the set `t485-web`.
async fn running_on_agent(agent: &AgentClient, count: usize) -> Result<()> {
    eventually(
        SETTLE,
        &format!("{count} instances running on the fourth host"),
        || async {
            let inventory = agent.inventory().await.ok()?;
            let running = inventory
                .instances
                .iter()
                .filter(|i| i.set.as_str() == "t485-web" && i.state == InstanceState::Running)
                .count();
            (running == count).then_some(())
        },
    )
    .await
}
