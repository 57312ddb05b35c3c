//! The seeded services workload: clients create, scale, update, roll back and delete services
//! of one tenant, placed on two clusters — a `sim` agent and an `exec` agent running real processes —
//! through random nodes while the nemesis kills, pauses and partitions the control plane, kills
//! and pauses the agents and flaps the `sim` cluster (so services move between the two). Each
//! client owns its services, so it knows what it asked for: after every acknowledged change the
//! service's accepted revision, its instance count and the revision that last changed what the
//! role runs; after a change whose outcome is unknown it reads the service back.
//!
//! The checker's ground truth is the agents' own inventories and, for the `exec` agent, `/proc`:
//! after healing, every instance its service's accepted revision asks for (the deterministic
//! ids of that role revision) runs on exactly one of the two agents, nothing else of the
//! tenant's services runs anywhere (no copy left behind by a move, no instance of a deleted
//! service), the `exec` agent's running instances are exactly its live processes (one each),
//! every revision a client saw acknowledged is in the service's history once, and the fence
//! each agent reported never went back while the run went on.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use drover_model::cluster::agent_api::{Fence, InstanceState, Inventory};
use drover_tests::agent::{processes_under, AgentClient};
use drover_tests::platform::token;
use reqwest::{Client, Method, StatusCode};
use serde_json::{json, Value};

use crate::history::Recorder;
use crate::rng::Rng;

/// The tenant every service belongs to.
pub const TENANT: &str = "acme";
/// Services each client owns.
const SERVICES_PER_CLIENT: usize = 3;
/// Most instances a service asks for.
const MAX_INSTANCES: u64 = 4;
/// The pause between a client's changes.
const PACE: Duration = Duration::from_millis(300);
/// How long one request may take before its outcome counts as unknown.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(5);

/// What a client knows of one of its services.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Known {
    /// It does not exist (never created, or its deletion was acknowledged).
    Absent,
    /// Its accepted revision, instance count, program and the revision that last changed what
    /// its role runs.
    Present {
        /// The accepted revision.
        revision: u64,
        /// Instances of its one role.
        instances: u64,
        /// Its program's version: the revision whose full update introduced it.
        program: u64,
        /// The revision that last changed what the role runs (instance ids carry it).
        role_revision: u64,
    },
    /// A change's outcome is unknown: read it back before the next change.
    Uncertain,
}

/// What the services workload did, for the checker and the report.
#[derive(Debug, Default, Clone)]
pub struct ServiceHistory {
    /// Changes acknowledged.
    pub acknowledged: usize,
    /// Of those, rollbacks.
    pub rollbacks: usize,
    /// Changes certainly refused or not delivered.
    pub refused: usize,
    /// Changes with an unknown outcome.
    pub unknown: usize,
    /// Every revision acknowledged, per service, since it was last created.
    pub revisions: BTreeMap<String, Vec<u64>>,
    /// Per service, what its last unresolved change (an unknown outcome, or a revision not yet
    /// accepted) would make of it. Reading the service back cannot rule it out: the change may
    /// still be in flight, or be accepted later, after the client read the state before it. A
    /// later acknowledged change settles it (the unresolved one was conditional on a revision
    /// that is gone), except a delete, which is not conditional.
    pub unresolved: BTreeMap<String, Known>,
    /// The fences each agent (by its cluster's name) reported, in the order sampled.
    pub fences: BTreeMap<String, Vec<Fence>>,
    /// The agents each instance id was seen on during the run: more than one means it moved.
    pub seen_on: BTreeMap<String, BTreeSet<String>>,
}

impl ServiceHistory {
    /// Instance ids that were seen on more than one agent during the run.
    pub fn moved(&self) -> usize {
        self.seen_on.values().filter(|agents| agents.len() > 1).count()
    }
}

/// One agent the checker reads: its cluster's name, a client, and for an `exec` agent the
/// directory its instances work under (where `/proc` shows their processes).
#[derive(Clone)]
pub struct Observed {
    /// The name it is registered under.
    pub cluster: String,
    /// Its API.
    pub client: AgentClient,
    /// `exec` only: its instances' directory.
    pub instances_dir: Option<PathBuf>,
}

/// The deployment of a service whose one role runs `instances` copies of program version
/// `version` (a new version is a new role revision). The program sleeps; the version is its
/// `$0`, so the `exec` agent runs a real process and `sim` pretends. A full update made as
/// revision `n` always runs version `n`.
fn deployment(instances: u64, version: u64) -> Value {
    json!({"deployment": {"roles": {"web": {
        "instances": instances,
        "exec": {"argv": ["sh", "-c", "exec sleep 86400", format!("v{version}")]},
        "resources": {"cpu_millis": 10, "memory_mib": 4},
    }}}})
}

/// The platform API through one node, as the tenant's owner.
struct Api {
    http: Client,
    token: String,
}

enum Sent {
    /// Applied, with the answer.
    Done(Value),
    /// Certainly not applied (a refusal, or nothing delivered).
    Refused,
    /// Maybe applied.
    Unknown,
}

impl Api {
    fn new(subject: &str) -> Self {
        Self {
            http: Client::builder()
                .pool_max_idle_per_host(2)
                .build()
                .unwrap_or_default(),
            token: token(subject),
        }
    }

    async fn call(&self, node: &str, method: Method, path: &str, body: Option<&Value>) -> Sent {
        let mut request = self
            .http
            .request(method, format!("http://{node}/api/1.0-beta{path}"))
            .bearer_auth(&self.token)
            .timeout(REQUEST_TIMEOUT);
        if let Some(body) = body {
            request = request.json(body);
        }
        match request.send().await {
            Ok(response) => {
                let status = response.status();
                let body: Value = response.json().await.unwrap_or(Value::Null);
                if status.is_success() {
                    Sent::Done(body)
                } else if status == StatusCode::SERVICE_UNAVAILABLE || status.is_server_error() {
                    // A lost leader may have committed it.
                    Sent::Unknown
                } else {
                    Sent::Refused
                }
            }
            Err(e) if e.is_connect() => Sent::Refused,
            Err(_) => Sent::Unknown,
        }
    }

    /// `GET` a platform path through `node`.
    async fn get(&self, node: &str, path: &str) -> reqwest::Result<reqwest::Response> {
        self.http
            .get(format!("http://{node}/api/1.0-beta{path}"))
            .bearer_auth(&self.token)
            .timeout(REQUEST_TIMEOUT)
            .send()
            .await
    }

    /// What the control plane holds for `service` now, read linearizably (its full view, then
    /// its history); `None` when no node answered.
    async fn read(&self, node: &str, service: &str) -> Option<Known> {
        let base = format!("/tenant/{TENANT}/service/{service}");
        let response = self.get(node, &base).await.ok()?;
        let view: Value = match response.status() {
            StatusCode::NOT_FOUND => return Some(Known::Absent),
            status if status.is_success() => response.json().await.ok()?,
            _ => return None,
        };
        if !view["data"]["deletionTimestamp"].is_null() {
            return Some(Known::Absent);
        }
        let response = self.get(node, &format!("{base}/history")).await.ok()?;
        if !response.status().is_success() {
            return None;
        }
        known_of(&view, &response.json().await.ok()?)
    }
}

/// One history entry: (previous, type, reinstates).
type Made = (Option<u64>, String, Option<u64>);

/// What a service's full view and history say (the view of a service not being deleted).
fn known_of(view: &Value, history: &Value) -> Option<Known> {
    let data = &view["data"];
    let role = &data["deployment"]["roles"]["web"];
    let program = role["exec"]["argv"][3]
        .as_str()?
        .strip_prefix('v')?
        .parse()
        .ok()?;
    let revision = data["revision"].as_u64()?;
    let made: BTreeMap<u64, Made> = history["data"]
        .as_array()?
        .iter()
        .filter_map(|entry| {
            let made = (
                entry["previous"].as_u64(),
                entry["type"].as_str()?.to_string(),
                entry["reinstates"].as_u64(),
            );
            Some((entry["revision"].as_u64()?, made))
        })
        .collect();
    Some(Known::Present {
        revision,
        instances: data["configuration"]["scale"]["web"].as_u64()?,
        program,
        role_revision: role_revision(&made, revision, program)?,
    })
}

/// The program revision `revision` runs, from the history: a full update's own, a scale's
/// previous one's, a rollback's target's.
fn program_of(made: &BTreeMap<u64, Made>, revision: u64) -> Option<u64> {
    let mut at = revision;
    // Each step goes to an earlier revision, so this ends.
    for _ in 0..=made.len() {
        match made.get(&at)? {
            (_, kind, _) if kind == "PUT" => return Some(at),
            (Some(previous), kind, _) if kind == "SCALE" => at = *previous,
            (_, kind, Some(target)) if kind == "ROLLBACK" => at = *target,
            _ => return None,
        }
    }
    None
}

/// The revision that last changed what the role of `revision` (running `program`) runs: the
/// earliest of the unbroken run of revisions before it that ran the same program (the
/// control plane keeps a role's instance ids while its program stays the same).
fn role_revision(made: &BTreeMap<u64, Made>, revision: u64, program: u64) -> Option<u64> {
    let mut first = revision;
    while let Some(previous) = made.get(&first)?.0 {
        if program_of(made, previous)? != program {
            break;
        }
        first = previous;
    }
    Some(first)
}

/// One client's loop until `stop`: for a random one of its services, create it, scale it,
/// change its program, roll it back to an earlier revision it knows of, or delete it.
pub async fn client(
    id: usize,
    nodes: Vec<String>,
    mut rng: Rng,
    recorder: Recorder,
    history: Arc<std::sync::Mutex<ServiceHistory>>,
    stop: Arc<AtomicBool>,
) -> BTreeMap<String, Known> {
    let api = Api::new("alice");
    let mut known: BTreeMap<String, Known> = (0..SERVICES_PER_CLIENT)
        .map(|k| (format!("c{id}-s{k}"), Known::Absent))
        .collect();
    let names: Vec<String> = known.keys().cloned().collect();
    // For each service, the (instances, program) of every revision this client knows of since
    // the service was last created: the targets of its rollbacks.
    let mut revisions: BTreeMap<String, BTreeMap<u64, (u64, u64)>> = BTreeMap::new();
    let record = |f: &dyn Fn(&mut ServiceHistory)| {
        let mut h = history.lock().unwrap_or_else(|p| p.into_inner());
        f(&mut h);
    };
    while !stop.load(Ordering::Relaxed) {
        tokio::time::sleep(PACE).await;
        let node = nodes[rng.below(nodes.len() as u64) as usize].clone();
        let name = names[rng.below(names.len() as u64) as usize].clone();
        let base = format!("/tenant/{TENANT}/service/{name}");
        let state = known.get(&name).cloned().unwrap_or(Known::Uncertain);
        let invoked = recorder.now();
        let (method, path, body, next) = match state {
            Known::Uncertain => {
                if let Some(read) = api.read(&node, &name).await {
                    remember(&mut revisions, &name, &read);
                    if read == Known::Absent {
                        // A service created again starts its history again.
                        record(&|h| {
                            h.revisions.remove(&name);
                        });
                    }
                    known.insert(name, read);
                }
                continue;
            }
            Known::Absent => {
                let instances = 1 + rng.below(MAX_INSTANCES);
                let next = Known::Present {
                    revision: 1,
                    instances,
                    program: 1,
                    role_revision: 1,
                };
                (
                    Method::POST,
                    format!("{base}?accept=true"),
                    Some(deployment(instances, 1)),
                    next,
                )
            }
            Known::Present {
                revision,
                instances,
                program,
                role_revision,
            } => match rng.below(10) {
                // A rollback to an earlier revision this client knows of (a scale when none).
                6..=7
                    if revisions
                        .get(&name)
                        .is_some_and(|known| known.range(..revision).next().is_some()) =>
                {
                    let earlier: Vec<(u64, (u64, u64))> = revisions
                        .get(&name)
                        .map(|known| known.range(..revision).map(|(r, v)| (*r, *v)).collect())
                        .unwrap_or_default();
                    let (target, (to, target_program)) = earlier[rng.below(earlier.len() as u64) as usize];
                    let next = Known::Present {
                        revision: revision + 1,
                        instances: to,
                        program: target_program,
                        // The old program under new ids, unless it is the one running.
                        role_revision: if target_program == program {
                            role_revision
                        } else {
                            revision + 1
                        },
                    };
                    (
                        Method::PUT,
                        format!("{base}/revision/{revision}/rollback/{target}?accept=true"),
                        None,
                        next,
                    )
                }
                0..=3 | 6..=7 => {
                    let to = rng.below(MAX_INSTANCES + 1);
                    let next = Known::Present {
                        revision: revision + 1,
                        instances: to,
                        program,
                        role_revision,
                    };
                    let body = json!({"scale": {"web": to}});
                    (
                        Method::PATCH,
                        format!("{base}/revision/{revision}/scale?accept=true"),
                        Some(body),
                        next,
                    )
                }
                4..=5 => {
                    let next = Known::Present {
                        revision: revision + 1,
                        instances,
                        program: revision + 1,
                        role_revision: revision + 1,
                    };
                    let body = deployment(instances, revision + 1);
                    (
                        Method::POST,
                        format!("{base}/revision/{revision}?accept=true"),
                        Some(body),
                        next,
                    )
                }
                _ => (Method::DELETE, base.clone(), None, Known::Absent),
            },
        };
        match api.call(&node, method, &path, body.as_ref()).await {
            Sent::Done(answer) => {
                // A revision the answer did not accept (it waits on usage marks) is not one.
                let accepted = answer["data"]["status"]["accepted"].as_bool().unwrap_or(true);
                if !accepted {
                    record(&|h| {
                        h.unresolved.insert(name.clone(), next.clone());
                    });
                    known.insert(name, Known::Uncertain);
                    continue;
                }
                recorder.write_succeeded(invoked);
                record(&|h| {
                    if h.unresolved.get(&name) != Some(&Known::Absent) {
                        h.unresolved.remove(&name);
                    }
                });
                remember(&mut revisions, &name, &next);
                match &next {
                    Known::Present { revision, .. } => {
                        let revision = *revision;
                        record(&|h| h.revisions.entry(name.clone()).or_default().push(revision));
                    }
                    _ => record(&|h| {
                        h.revisions.remove(&name);
                    }),
                }
                let rollback = path.contains("/rollback/");
                record(&|h| {
                    h.acknowledged += 1;
                    h.rollbacks += usize::from(rollback);
                });
                known.insert(name, next);
            }
            Sent::Refused => {
                record(&|h| h.refused += 1);
                // A refused change (a conflict, say) may mean this client's view is stale.
                known.insert(name, Known::Uncertain);
            }
            Sent::Unknown => {
                record(&|h| {
                    h.unknown += 1;
                    h.unresolved.insert(name.clone(), next.clone());
                });
                known.insert(name, Known::Uncertain);
            }
        }
    }
    known
}

/// Records what a client now knows of `service` among the revisions it may roll back to.
fn remember(revisions: &mut BTreeMap<String, BTreeMap<u64, (u64, u64)>>, service: &str, known: &Known) {
    match known {
        Known::Present {
            revision,
            instances,
            program,
            ..
        } => {
            revisions
                .entry(service.to_string())
                .or_default()
                .insert(*revision, (*instances, *program));
        }
        Known::Absent => {
            revisions.remove(service);
        }
        Known::Uncertain => {}
    }
}

/// Samples every agent's inventory until `stop`: its fence, for the monotonicity check, and
/// where each instance runs, to count moves.
pub async fn sample_agents(
    agents: Vec<Observed>,
    history: Arc<std::sync::Mutex<ServiceHistory>>,
    stop: Arc<AtomicBool>,
) {
    while !stop.load(Ordering::Relaxed) {
        for agent in &agents {
            if let Ok(inventory) = agent.client.inventory().await {
                let mut history = history.lock().unwrap_or_else(|p| p.into_inner());
                history
                    .fences
                    .entry(agent.cluster.clone())
                    .or_default()
                    .push(inventory.fence);
                for instance in &inventory.instances {
                    history
                        .seen_on
                        .entry(instance.id.as_str().to_string())
                        .or_default()
                        .insert(agent.cluster.clone());
                }
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Where each instance of the agents' inventories runs: id → `cluster:state` for every agent
/// that holds it.
type Placed = BTreeMap<String, Vec<String>>;

/// The instances the agents hold for `service`.
fn instances_of(inventories: &[(String, Inventory)], service: &str) -> Placed {
    let set = format!("{TENANT}.{service}");
    let mut placed = Placed::new();
    for (cluster, inventory) in inventories {
        for instance in inventory.instances.iter().filter(|i| i.set.as_str() == set) {
            placed
                .entry(instance.id.as_str().to_string())
                .or_default()
                .push(format!("{cluster}:{:?}", instance.state));
        }
    }
    placed
}

/// Whether `placed` is exactly `wanted`, each running once on one agent.
fn runs_exactly(placed: &Placed, wanted: &BTreeSet<String>) -> bool {
    placed.len() == wanted.len()
        && placed
            .iter()
            .all(|(id, copies)| wanted.contains(id) && copies.len() == 1 && copies[0].ends_with(":Running"))
}

/// For an `exec` agent: where its inventory's running instances and `/proc` disagree (each
/// running instance is one live process, and no other instance has one); `None` when they
/// agree.
fn proc_difference(inventory: &Inventory, instances_dir: &std::path::Path) -> Option<String> {
    let running: BTreeSet<String> = inventory
        .instances
        .iter()
        .filter(|i| i.state == InstanceState::Running)
        .map(|i| i.id.as_str().to_string())
        .collect();
    let live = processes_under(instances_dir);
    let agree = live.len() == running.len()
        && live
            .iter()
            .all(|(id, pids)| running.contains(id) && pids.len() == 1);
    (!agree).then(|| format!("/proc shows {live:?}, the exec agent reports running {running:?}"))
}

/// The ids the agents must run for a service the control plane holds as `known`.
fn expected_ids(service: &str, known: &Known) -> BTreeSet<String> {
    match known {
        Known::Present {
            instances,
            role_revision,
            ..
        } => (0..*instances)
            .map(|i| format!("{TENANT}.{service}.web.r{role_revision}.{i}"))
            .collect(),
        _ => BTreeSet::new(),
    }
}

/// After healing: waits until the agents run exactly what the control plane holds for every
/// service, each instance on one agent, and the `exec` agent's processes match its inventory;
/// then checks that against what the clients were told. Returns the violations and how many
/// instances were found to run as they should.
pub async fn check(
    nodes: &[String],
    agents: &[Observed],
    clients: &BTreeMap<String, Known>,
    history: &ServiceHistory,
    within: Duration,
) -> (Vec<String>, usize) {
    let api = Api::new("alice");
    let mut violations = Vec::new();
    let deadline = tokio::time::Instant::now() + within;
    let mut last_difference;
    // The control plane's view, and the agent matching it.
    let held: BTreeMap<String, Known> = loop {
        let mut held = BTreeMap::new();
        let mut complete = true;
        for name in clients.keys() {
            let mut read = None;
            for node in nodes {
                read = api.read(node, name).await;
                if read.is_some() {
                    break;
                }
            }
            match read {
                Some(known) => {
                    held.insert(name.clone(), known);
                }
                None => complete = false,
            }
        }
        if complete {
            match inventories(agents).await {
                Ok(inventories) => {
                    let mut differences: Vec<String> = held
                        .iter()
                        .filter_map(|(name, known)| {
                            let placed = instances_of(&inventories, name);
                            let wanted = expected_ids(name, known);
                            (!runs_exactly(&placed, &wanted))
                                .then(|| format!("{name}: runs {placed:?}, wants {wanted:?} once each"))
                        })
                        .collect();
                    for (agent, (_, inventory)) in agents.iter().zip(&inventories) {
                        if let Some(dir) = &agent.instances_dir {
                            differences.extend(proc_difference(inventory, dir));
                        }
                    }
                    if differences.is_empty() {
                        break held;
                    }
                    last_difference = differences.join("; ");
                }
                Err(e) => last_difference = e.to_string(),
            }
        } else {
            last_difference = "no node answered a read".to_string();
        }
        if tokio::time::Instant::now() >= deadline {
            violations.push(format!(
                "the agents did not converge on the accepted revisions within {within:?}: {last_difference}"
            ));
            break held;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    };
    let checked = held
        .iter()
        .map(|(name, known)| expected_ids(name, known).len())
        .sum();
    // What the clients were told must be what is held.
    for (name, told) in clients {
        let Some(now) = held.get(name) else { continue };
        match (told, now) {
            (Known::Uncertain, _) => {}
            (told, now) if told == now => {}
            // The client read the state before a change of its own that took effect later.
            (_, now) if history.unresolved.get(name) == Some(now) => {}
            (told, now) => violations.push(format!(
                "{name}: acknowledged as {told:?}, but the control plane holds {now:?}"
            )),
        }
    }
    // Every acknowledged revision is in the history once (read from the service's history).
    for (name, revisions) in &history.revisions {
        if !matches!(held.get(name), Some(Known::Present { .. })) {
            continue;
        }
        match history_of(&api, nodes, name).await {
            Ok(numbers) => {
                for revision in revisions {
                    let times = numbers.iter().filter(|n| *n == revision).count();
                    if times != 1 {
                        violations.push(format!(
                            "{name}: acknowledged revision {revision} appears {times} times in {numbers:?}"
                        ));
                    }
                }
            }
            Err(e) => violations.push(format!("{name}: history unreadable: {e}")),
        }
    }
    for (cluster, fences) in &history.fences {
        for pair in fences.windows(2) {
            if pair[1] < pair[0] {
                violations.push(format!(
                    "agent {cluster}: its fence went back from {} to {}",
                    pair[0], pair[1]
                ));
            }
        }
    }
    (violations, checked)
}

/// Every agent's inventory, by cluster name.
async fn inventories(agents: &[Observed]) -> Result<Vec<(String, Inventory)>> {
    let mut all = Vec::new();
    for agent in agents {
        let inventory = agent
            .client
            .inventory()
            .await
            .with_context(|| format!("agent {} does not answer", agent.cluster))?;
        all.push((agent.cluster.clone(), inventory));
    }
    Ok(all)
}

/// The revision numbers of a service's history.
async fn history_of(api: &Api, nodes: &[String], service: &str) -> Result<Vec<u64>> {
    for node in nodes {
        let path = format!("/tenant/{TENANT}/service/{service}/history");
        let Ok(response) = api.get(node, &path).await else {
            continue;
        };
        if !response.status().is_success() {
            continue;
        }
        let body: Value = response.json().await.context("history JSON")?;
        let entries = body["data"].as_array().context("history entries")?;
        return Ok(entries.iter().filter_map(|e| e["revision"].as_u64()).collect());
    }
    bail!("no node answered")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_view_reads_as_what_a_client_knows() {
        // 1 create (v1), 2 full update (v2), 3 scale, 4 rollback to 1 (v1 under new ids).
        let history = json!({"data": [
            {"revision": 1, "type": "PUT"},
            {"revision": 2, "previous": 1, "type": "PUT"},
            {"revision": 3, "previous": 2, "type": "SCALE"},
            {"revision": 4, "previous": 3, "type": "ROLLBACK", "reinstates": 1},
        ]});
        let view = |revision: u64, program: u64| {
            json!({"data": {"revision": revision, "configuration": {"scale": {"web": 3}},
                "deployment": {"roles": {"web": {"exec": {"argv": ["sh", "-c", "exec sleep 86400", format!("v{program}")]}}}}}})
        };
        let present = |revision, program, role_revision| Known::Present {
            revision,
            instances: 3,
            program,
            role_revision,
        };
        assert_eq!(known_of(&view(3, 2), &history), Some(present(3, 2, 2)));
        assert_eq!(known_of(&view(4, 1), &history), Some(present(4, 1, 4)));
        assert_eq!(
            expected_ids("s", &present(4, 1, 2))
                .into_iter()
                .collect::<Vec<_>>(),
            ["acme.s.web.r2.0", "acme.s.web.r2.1", "acme.s.web.r2.2"]
        );
    }

    #[test]
    fn role_revisions_follow_the_program_through_scales_and_rollbacks() {
        let made: BTreeMap<u64, Made> = [
            (1, (None, "PUT", None)),
            (2, (Some(1), "SCALE", None)),
            (3, (Some(2), "PUT", None)),
            (4, (Some(3), "ROLLBACK", Some(2))),
            (5, (Some(4), "SCALE", None)),
            (6, (Some(5), "ROLLBACK", Some(1))),
            (7, (Some(6), "PATCH", None)),
        ]
        .into_iter()
        .map(|(r, (previous, kind, target))| (r, (previous, kind.to_string(), target)))
        .collect();
        // revision -> (program, role revision)
        let table = [(1, 1, 1), (2, 1, 1), (3, 3, 3), (4, 1, 4), (5, 1, 4), (6, 1, 4)];
        for (revision, program, role) in table {
            assert_eq!(
                program_of(&made, revision),
                Some(program),
                "program of {revision}"
            );
            assert_eq!(
                role_revision(&made, revision, program),
                Some(role),
                "role revision of {revision}"
            );
        }
        // A kind the workload never makes, or a revision the history lacks, is no answer.
        assert_eq!(program_of(&made, 7), None);
        assert_eq!(program_of(&made, 9), None);
    }

    #[test]
    fn each_wanted_instance_must_run_once_on_one_agent() {
        let wanted: BTreeSet<String> = ["a".to_string(), "b".to_string()].into();
        let placed = |entries: &[(&str, &[&str])]| -> Placed {
            entries
                .iter()
                .map(|(id, copies)| (id.to_string(), copies.iter().map(|c| c.to_string()).collect()))
                .collect()
        };
        assert!(runs_exactly(
            &placed(&[("a", &["sim:Running"]), ("b", &["exec:Running"])]),
            &wanted
        ));
        // A copy left on the old cluster by a move.
        assert!(!runs_exactly(
            &placed(&[("a", &["sim:Running", "exec:Running"]), ("b", &["exec:Running"])]),
            &wanted
        ));
        // One missing, one not running, one extra.
        assert!(!runs_exactly(&placed(&[("a", &["sim:Running"])]), &wanted));
        assert!(!runs_exactly(
            &placed(&[("a", &["sim:Running"]), ("b", &["sim:Starting"])]),
            &wanted
        ));
        assert!(!runs_exactly(
            &placed(&[
                ("a", &["sim:Running"]),
                ("b", &["sim:Running"]),
                ("c", &["sim:Running"])
            ]),
            &wanted
        ));
        assert!(runs_exactly(&Placed::new(), &BTreeSet::new()));
    }
}
