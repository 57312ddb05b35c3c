//! Leader SIGKILLs in the middle of rollouts, over many trials: three `drover serve` processes,
//! two `sim` clusters whose instances take 300 ms to start, and 20 services of two roles. In
//! every trial each service is changed (a scale, a new environment for one role or both),
//! every change is acknowledged, then the leader is killed at a random point of the rollouts
//! (once a random number of services show new instances on the agents) and started again.
//! After each trial, the agents' own inventories must hold, for every (service, role), exactly
//! the accepted revision's instances, all running, each once, on the service's one cluster;
//! nothing of any other revision and no set of no service; and every service's history must be
//! one chain with no revision accepted twice.
//!
//! `DROVER_TRIALS` sets the number of trials (3 by default; `make test-rollout-kills` runs 25)
//! and `DROVER_SEED` the seed (printed, so a failure can be replayed).

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use anyhow::{bail, ensure, Context, Result};
use drover_model::cluster::agent_api::{InstanceState, Inventory};
use drover_tests::agent::{AgentClient, AgentProcess};
use drover_tests::platform::{process_platform_args, token, PlatformClient, OPERATOR_SUBJECT};
use drover_tests::process::ProcessCluster;
use drover_tests::services::{expect_ok, tenant_with_clusters};
use drover_tests::wait::eventually;
use reqwest::Method;
use serde_json::{json, Value};
use tempfile::TempDir;

const ELECTION: Duration = Duration::from_secs(20);
const CONVERGE: Duration = Duration::from_secs(60);
const SERVICES: usize = 20;
const ROLES: [&str; 2] = ["web", "worker"];

/// A small seeded generator (xorshift64*): the trials are reproducible from the seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

/// What the test expects of one role: its count and the revision its instances carry.
#[derive(Debug, Clone, Copy)]
struct RoleState {
    count: u32,
    revision: u64,
}

/// What the test expects of one service.
#[derive(Debug, Clone)]
struct Expected {
    current: u64,
    roles: BTreeMap<&'static str, RoleState>,
    /// A counter for new environments.
    colour: u64,
}

fn name(i: usize) -> String {
    format!("s{i:02}")
}

fn deployment(web: u32, worker: u32) -> Value {
    let role = |count: u32| {
        json!({"instances": count, "exec": {"argv": ["run"]},
            "resources": {"cpu_millis": 10, "memory_mib": 4}, "env": {"COLOUR": "0"}})
    };
    json!({"deployment": {"roles": {"web": role(web), "worker": role(worker)}}})
}

/// Every instance on every agent, by id, with the agent it is on.
async fn inventories(agents: &[AgentClient]) -> Option<Vec<(usize, Inventory)>> {
    let mut all = Vec::new();
    for (i, agent) in agents.iter().enumerate() {
        all.push((i, agent.inventory().await.ok()?));
    }
    Some(all)
}

/// What must hold at every moment, rollout or not: no instance id runs twice, and no service
/// has instances on two clusters.
fn always(all: &[(usize, Inventory)]) -> Option<String> {
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    let mut clusters_of: BTreeMap<String, BTreeSet<usize>> = BTreeMap::new();
    for (agent, inventory) in all {
        for instance in &inventory.instances {
            let id = instance.id.to_string();
            if let Some(service) = id.split('.').nth(1) {
                clusters_of.entry(service.to_string()).or_default().insert(*agent);
            }
            *seen.entry(id).or_default() += 1;
        }
    }
    if let Some((id, n)) = seen.iter().find(|(_, n)| **n > 1) {
        return Some(format!("{id} runs {n} times"));
    }
    clusters_of
        .iter()
        .find(|(_, a)| a.len() > 1)
        .map(|(service, agents)| format!("{service} runs on agents {agents:?}"))
}

/// Polls the agents, remembering the first moment [`always`] failed.
async fn sample(
    agents: &[AgentClient],
    violation: &std::sync::Mutex<Option<String>>,
) -> Option<Vec<(usize, Inventory)>> {
    let all = inventories(agents).await?;
    if let Some(why) = always(&all) {
        let mut first = violation.lock().unwrap_or_else(|p| p.into_inner());
        first.get_or_insert(why);
    }
    Some(all)
}

/// Why the agents do not run exactly what `expected` says, if they do not.
fn mismatch(all: &[(usize, Inventory)], expected: &BTreeMap<String, Expected>) -> Option<String> {
    if let Some(why) = always(all) {
        return Some(why);
    }
    let mut seen: BTreeSet<String> = BTreeSet::new();
    let mut wanted: BTreeSet<String> = BTreeSet::new();
    for (service, e) in expected {
        for (role, state) in &e.roles {
            for ordinal in 0..state.count {
                wanted.insert(format!("acme.{service}.{role}.r{}.{ordinal}", state.revision));
            }
        }
    }
    for (agent, inventory) in all {
        for instance in &inventory.instances {
            let id = instance.id.to_string();
            seen.insert(id.clone());
            if !wanted.contains(&id) {
                return Some(format!(
                    "agent {agent} runs {id}, which no accepted revision wants"
                ));
            }
            if instance.state != InstanceState::Running {
                return Some(format!("{id} is {:?}", instance.state));
            }
        }
    }
    wanted
        .iter()
        .find(|id| !seen.contains(*id))
        .map(|id| format!("{id} is missing"))
}

/// Checks that every service's history is one chain: numbers 1.., each made from the one
/// before, as many as the changes acknowledged, all accepted.
async fn histories_are_chains(client: &PlatformClient, expected: &BTreeMap<String, Expected>) -> Result<()> {
    for (service, e) in expected {
        let history = expect_ok(
            client,
            Method::GET,
            &format!("/tenant/acme/service/{service}/history"),
            None,
        )
        .await?;
        let entries = history["data"].as_array().context("history")?;
        ensure!(
            entries.len() as u64 == e.current,
            "{service}: {} revisions, {} acknowledged: {history}",
            entries.len(),
            e.current
        );
        for (i, entry) in entries.iter().enumerate() {
            let number = i as u64 + 1;
            ensure!(entry["revision"] == number, "{service}: {history}");
            ensure!(entry["accepted"] == true, "{service}: {history}");
            if number > 1 {
                ensure!(entry["previous"] == number - 1, "{service}: {history}");
            }
        }
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rollouts_converge_exactly_across_leader_kills() -> Result<()> {
    let trials: u32 = std::env::var("DROVER_TRIALS")
        .ok()
        .and_then(|t| t.parse().ok())
        .unwrap_or(3);
    let seed: u64 = std::env::var("DROVER_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(1, |d| d.as_nanos() as u64)
                | 1
        });
    eprintln!("t220: {trials} trials, DROVER_SEED={seed}");
    let mut rng = Rng(seed);
    let violation = std::sync::Mutex::new(None);

    let dir = TempDir::new()?;
    let mut args = process_platform_args(dir.path())?;
    args.push("--cluster-probe-interval=200ms".to_string());
    let mut nodes = ProcessCluster::start_with_args(3, &args)?;
    let agents = [
        AgentProcess::start(&["--executor=sim", "--sim-start-latency-ms=300"])?,
        AgentProcess::start(&["--executor=sim", "--sim-start-latency-ms=300"])?,
    ];
    let clients: Vec<AgentClient> = agents.iter().map(AgentProcess::client).collect();
    let leader = nodes.leader(ELECTION).await?;
    let client_of = |nodes: &ProcessCluster, id: u64, subject: &str| {
        PlatformClient::new(&nodes.api_addr(id), Some(token(subject)))
    };
    let root = client_of(&nodes, leader, OPERATOR_SUBJECT);
    let alice = client_of(&nodes, leader, "alice");
    tenant_with_clusters(
        &root,
        &alice,
        &[(&agents[0], "sim-a"), (&agents[1], "sim-b")],
        1_000_000,
    )
    .await?;

    let mut expected: BTreeMap<String, Expected> = BTreeMap::new();
    for i in 0..SERVICES {
        let service = name(i);
        let path = format!("/tenant/acme/service/{service}?accept=true");
        expect_ok(&alice, Method::POST, &path, Some(&deployment(2, 1))).await?;
        let roles = BTreeMap::from([
            (
                "web",
                RoleState {
                    count: 2,
                    revision: 1,
                },
            ),
            (
                "worker",
                RoleState {
                    count: 1,
                    revision: 1,
                },
            ),
        ]);
        expected.insert(
            service,
            Expected {
                current: 1,
                roles,
                colour: 0,
            },
        );
    }
    eventually(CONVERGE, "the first revisions to run", || async {
        let all = inventories(&clients).await?;
        mismatch(&all, &expected).is_none().then_some(())
    })
    .await?;

    for trial in 0..trials {
        // Changes, spread over the running nodes, each acknowledged.
        let running = nodes.running_ids();
        for (i, (service, e)) in expected.iter_mut().enumerate() {
            let node = running[i % running.len()];
            let caller = client_of(&nodes, node, "alice");
            let previous = e.current;
            let number = previous + 1;
            let choice = rng.below(3);
            let (method, path, body) = if choice == 0 {
                let scale: BTreeMap<&str, u32> = ROLES
                    .iter()
                    .map(|role| (*role, 1 + rng.below(4) as u32))
                    .collect();
                for (role, count) in &scale {
                    if let Some(state) = e.roles.get_mut(role) {
                        state.count = *count;
                    }
                }
                let path = format!("/tenant/acme/service/{service}/revision/{previous}/scale?accept=true");
                (Method::PATCH, path, json!({"scale": scale}))
            } else {
                // A new environment for one role (choice 1) or both (choice 2).
                e.colour += 1;
                let changed: Vec<&'static str> = if choice == 1 {
                    vec![ROLES[rng.below(2) as usize]]
                } else {
                    ROLES.to_vec()
                };
                let mut roles = serde_json::Map::new();
                for role in &changed {
                    roles.insert(role.to_string(), json!({"env": {"COLOUR": e.colour.to_string()}}));
                    if let Some(state) = e.roles.get_mut(role) {
                        state.revision = number;
                    }
                }
                let path = format!("/tenant/acme/service/{service}/revision/{previous}?accept=true");
                (Method::PATCH, path, json!({"roles": roles}))
            };
            let answer = expect_ok(&caller, method, &path, Some(&body)).await?;
            ensure!(answer["data"]["revision"] == number, "{service}: {answer}");
            e.current = number;
        }

        // The kill point: once a random number of services show new instances on the agents.
        let moved = rng.below(SERVICES as u64) as usize;
        eventually(
            CONVERGE,
            &format!("{moved} services to start rolling"),
            || async {
                let all = sample(&clients, &violation).await?;
                let mut started: BTreeSet<&str> = BTreeSet::new();
                for (_, inventory) in &all {
                    for instance in &inventory.instances {
                        let id = instance.id.to_string();
                        let mut parts = id.split('.');
                        let (Some(_), Some(service), Some(role), Some(revision)) =
                            (parts.next(), parts.next(), parts.next(), parts.next())
                        else {
                            continue;
                        };
                        let wanted = expected.get(service)?.roles.get(role).map(|r| r.revision);
                        if wanted.is_some_and(|r| revision == format!("r{r}")) {
                            started.insert(expected.get_key_value(service)?.0.as_str());
                        }
                    }
                }
                (started.len() >= moved).then_some(())
            },
        )
        .await?;
        let leader = nodes.leader(ELECTION).await?;
        nodes.kill(leader)?;
        let next = nodes.leader(ELECTION).await?;
        ensure!(next != leader, "the killed node {leader} still leads");
        nodes.restart(leader)?;

        let converged = eventually(
            CONVERGE,
            &format!("trial {trial}: every service to run exactly its revision"),
            || async {
                let all = sample(&clients, &violation).await?;
                mismatch(&all, &expected).is_none().then_some(())
            },
        )
        .await;
        if let Err(error) = converged {
            let all = inventories(&clients).await.unwrap_or_default();
            bail!("{error}; seed {seed}; {:?}", mismatch(&all, &expected));
        }
        if let Some(why) = violation.lock().unwrap_or_else(|p| p.into_inner()).take() {
            bail!("trial {trial}, seed {seed}: during the rollout {why}");
        }
        let reader = client_of(&nodes, nodes.leader(ELECTION).await?, "alice");
        histories_are_chains(&reader, &expected).await?;
        eprintln!("t220: trial {trial} converged (kill after {moved} services started rolling)");
    }
    Ok(())
}
