//! The services workload in the simulation: one tenant with two clusters, each a simulated
//! agent; seeded clients create, update, scale, roll back and delete services through random
//! members while the nemesis crashes and cuts off members and agents. The leader's actor tree
//! (cluster and service actors, the real code) places and reconciles them through
//! [`super::agents::SimDriver`].
//!
//! Ground truth is the agents' own inventories: after healing, every service the committed
//! state holds runs exactly its accepted revision's instances (the ids of its role revision),
//! each on one agent and running; nothing runs for a service that is gone; what every client
//! saw acknowledged last is what the state holds; and the fence each agent reported never went
//! back while the run went on.

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};
use std::rc::Rc;
use std::time::Duration;

use drover_model::cluster::agent_api::{ExecSpec, Fence, InstanceState, Inventory, Resources};
use drover_model::cluster::{ClusterCommand, ClusterOp, ClusterRef, ClusterRegistration};
use drover_model::platform::{
    AccountSpec, EnvironmentSpec, Identity, PlatformCommand, PlatformOp, TenantAccount, TenantSpec,
    UserProfile,
};
use drover_model::service::{Change, Deployment, RoleSpec, ServiceCommand, ServiceOp};
use drover_model::{Command, CommandResult, DomainError};
use serde_json::json;

use super::agents::{agent_endpoint, agent_host, AgentAnswer, AgentCall, AGENT_PORT};
use super::wire::Held;
use super::wire::{call, call_at, CallError, Request, Response};
use super::world::{host_name, now_us};
use crate::rng::Rng;

/// The tenant every service belongs to.
pub const TENANT: &str = "acme";
/// The simulated agents, one cluster each.
pub const AGENTS: usize = 2;
/// Services each client owns.
const SERVICES_PER_CLIENT: usize = 3;
/// Most instances a service asks for.
const MAX_INSTANCES: u32 = 3;
/// How long a client waits for an answer before its outcome counts as unknown.
const ANSWER_TIMEOUT: Duration = Duration::from_millis(1500);

fn owner() -> Identity {
    Identity {
        issuer: "drover-sim".into(),
        subject: "alice".into(),
    }
}

/// The only role of every service.
const ROLE: &str = "web";

/// A service's deployment: `instances` copies of program version `version`.
fn deployment(instances: u32, version: u64) -> Deployment {
    Deployment {
        roles: BTreeMap::from([(
            ROLE.to_string(),
            RoleSpec {
                instances,
                resources: Resources {
                    cpu_millis: 10,
                    memory_mib: 4,
                },
                exec: ExecSpec {
                    argv: vec!["sleep".into(), "86400".into(), format!("v{version}")],
                    probe: None,
                    files: Default::default(),
                    pod: None,
                },
                env: BTreeMap::new(),
            },
        )]),
        parameters: json!({}),
        resources: Vec::new(),
        channels: Default::default(),
        constraints: Default::default(),
        source: None,
    }
}

/// What makes the tenant, its account, an environment and the two clusters, in order.
pub fn setup_commands() -> Result<Vec<Command>, serde_json::Error> {
    let platform = |op| Command::Platform(PlatformCommand { caller: owner(), op });
    let mut commands = vec![
        platform(PlatformOp::RegisterUser {
            uid: "u-alice".into(),
            profile: UserProfile {
                name: "alice".into(),
                ..UserProfile::default()
            },
            operator: false,
        }),
        platform(PlatformOp::CreateTenant {
            tenant: TENANT.into(),
            spec: TenantSpec::default(),
        }),
        platform(PlatformOp::CreateAccount {
            tenant: TENANT.into(),
            account: "main".into(),
            body: TenantAccount {
                spec: serde_json::from_value::<AccountSpec>(json!({"iaas": "sim"}))?,
                meta: Default::default(),
            },
        }),
        platform(PlatformOp::CreateEnvironment {
            tenant: TENANT.into(),
            account: "main".into(),
            environment: "sim".into(),
            spec: serde_json::from_value::<EnvironmentSpec>(json!({
                "marks": {"vcpu": {"max": 100_000}},
                "labels": {"tier": "sim"},
            }))?,
        }),
    ];
    for n in 1..=AGENTS {
        commands.push(Command::Cluster(ClusterCommand::User {
            caller: owner(),
            change: ClusterOp::Register {
                cluster: ClusterRef {
                    tenant: TENANT.into(),
                    name: format!("c{n}"),
                },
                uid: format!("cluster-{n}"),
                registration: ClusterRegistration {
                    ca: None,
                    endpoint: agent_endpoint(n),
                    join_token: "sim-join-token-0123456789".into(),
                    labels: BTreeMap::from([("tier".to_string(), "sim".to_string())]),
                    metrics: Vec::new(),
                },
            },
        }));
    }
    Ok(commands)
}

/// Every service of the tenant, from a member's state.
pub fn held(state: &drover_model::State) -> BTreeMap<String, Held> {
    let Some(tenant) = state.platform().tenant(TENANT) else {
        return BTreeMap::new();
    };
    tenant
        .services
        .iter()
        .map(|(name, service)| {
            let current = service.current.and_then(|number| service.revisions.get(&number));
            let held = Held {
                current: service.current,
                deleting: service.deleting_ms.is_some(),
                instances: current
                    .and_then(|r| r.deployment.roles.get(ROLE))
                    .map_or(0, |role| role.instances),
                role_revision: current.map_or(0, |r| r.role_revisions.get(ROLE).copied().unwrap_or(r.number)),
                note: format!(
                    "placed on {:?}; last events {:?}",
                    service.placement.as_ref().map(ToString::to_string),
                    service.events.iter().rev().take(3).collect::<Vec<_>>()
                ),
            };
            (name.clone(), held)
        })
        .collect()
}

/// What a client last knows of one of its services.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Known {
    /// Never created, or its deletion acknowledged.
    Absent,
    /// Its accepted revision, acknowledged.
    Present {
        /// The revision.
        revision: u64,
        /// Its instance count.
        instances: u32,
    },
    /// The last change's outcome is unknown and not read back yet.
    Unsure,
}

/// What the service clients and the samplers saw.
#[derive(Debug, Default)]
pub struct ServiceHistory {
    /// Per service, what its client knows last.
    pub known: BTreeMap<String, Known>,
    /// Services a change with an unknown outcome was sent for: that change may still commit
    /// at any later time (from a queue, a batch on its way or an uncommitted entry), after any
    /// read, so what their clients know is not checked.
    pub tainted: BTreeSet<String>,
    /// Changes acknowledged.
    pub acknowledged: u64,
    /// Changes with an unknown outcome.
    pub unknown: u64,
    /// Per agent, the fences it reported, in order, with when (µs).
    pub fences: BTreeMap<String, Vec<(u64, Fence)>>,
    /// Whether the setup finished.
    pub set_up: bool,
}

/// The history shared by the services clients of one run.
pub type SharedServices = Rc<RefCell<ServiceHistory>>;

/// How one write ended.
// One value per request, matched at once: boxing would only add an allocation.
#[allow(clippy::large_enum_variant)]
enum Outcome {
    Done(CommandResult),
    NotApplied,
    Unknown,
}

async fn write(node: u64, command: Command) -> Outcome {
    match call(&host_name(node), &Request::Write(command), ANSWER_TIMEOUT).await {
        Ok(Response::Written(result)) => Outcome::Done(result),
        Ok(Response::NotWritten(_)) | Err(CallError::NotDelivered) => Outcome::NotApplied,
        Ok(_) | Err(CallError::Lost) => Outcome::Unknown,
    }
}

/// The tenant's services, read linearizably through `node`.
pub async fn read_services(node: u64) -> Option<BTreeMap<String, Held>> {
    match call(&host_name(node), &Request::Services, ANSWER_TIMEOUT).await {
        Ok(Response::Services(held)) => Some(held),
        _ => None,
    }
}

/// Makes the tenant and its clusters, retrying through random members until each step is done.
pub async fn set_up(mut rng: Rng, nodes: u64, history: SharedServices) -> turmoil::Result {
    let commands = setup_commands()?;
    for command in commands {
        loop {
            let node = 1 + rng.below(nodes);
            match write(node, command.clone()).await {
                // A step sent again after an unknown outcome finds itself done.
                Outcome::Done(CommandResult::Refused(
                    DomainError::AlreadyExists { .. } | DomainError::Conflict { .. },
                )) => break,
                Outcome::Done(CommandResult::Refused(refusal)) => {
                    return Err(format!("the setup was refused: {refusal}").into());
                }
                Outcome::NotApplied | Outcome::Unknown => {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
                Outcome::Done(_) => break,
            }
        }
    }
    history.borrow_mut().set_up = true;
    Ok(())
}

/// One services client's plan.
pub struct ServicePlan {
    /// Its number.
    pub id: usize,
    /// Its own generator.
    pub rng: Rng,
    /// Cluster size.
    pub nodes: u64,
    /// When it stops.
    pub until: Duration,
}

/// Runs one services client until `plan.until`: each step changes one of its services.
pub async fn run_client(mut plan: ServicePlan, history: SharedServices) -> turmoil::Result {
    let names: Vec<String> = (0..SERVICES_PER_CLIENT)
        .map(|n| format!("s{}-{n}", plan.id))
        .collect();
    for name in &names {
        history.borrow_mut().known.insert(name.clone(), Known::Absent);
    }
    while !history.borrow().set_up {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let mut version = 0u64;
    while turmoil::sim_elapsed().is_some_and(|t| t < plan.until) {
        let name = &names[plan.rng.below(names.len() as u64) as usize];
        let node = 1 + plan.rng.below(plan.nodes);
        let known = history.borrow().known.get(name).copied().unwrap_or(Known::Unsure);
        version += 1;
        let change = match known {
            Known::Unsure => {
                if let Some(held) = read_services(node).await {
                    let now = match held.get(name) {
                        Some(Held {
                            current: Some(revision),
                            deleting: false,
                            instances,
                            ..
                        }) => Known::Present {
                            revision: *revision,
                            instances: *instances,
                        },
                        Some(Held { deleting: false, .. }) => Known::Unsure,
                        _ => Known::Absent,
                    };
                    history.borrow_mut().known.insert(name.clone(), now);
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
            Known::Absent => ServiceOp::Create {
                tenant: TENANT.into(),
                service: name.clone(),
                uid: format!("{name}-{version}"),
                deployment: deployment(1 + plan.rng.below(u64::from(MAX_INSTANCES)) as u32, version),
                comment: String::new(),
                accept: true,
            },
            Known::Present { revision, instances } => {
                let roll = plan.rng.below(100);
                let change = if roll < 15 {
                    None
                } else if roll < 55 {
                    let scaled = 1 + plan.rng.below(u64::from(MAX_INSTANCES)) as u32;
                    Some(Change::Scale {
                        scale: BTreeMap::from([(
                            ROLE.to_string(),
                            if scaled == instances {
                                scaled % MAX_INSTANCES + 1
                            } else {
                                scaled
                            },
                        )]),
                    })
                } else if roll < 80 {
                    Some(Change::Put {
                        deployment: deployment(instances, version),
                    })
                } else if revision > 1 {
                    Some(Change::Rollback {
                        target: 1 + plan.rng.below(revision - 1),
                    })
                } else {
                    None
                };
                match change {
                    None => ServiceOp::Delete {
                        tenant: TENANT.into(),
                        service: name.clone(),
                        force: false,
                    },
                    Some(change) => ServiceOp::Revise {
                        tenant: TENANT.into(),
                        service: name.clone(),
                        previous: revision,
                        change,
                        comment: String::new(),
                        accept: true,
                        remove_links: false,
                    },
                }
            }
        };
        let command = Command::Service(ServiceCommand {
            caller: owner(),
            change,
        });
        let now = match write(node, command).await {
            Outcome::Done(CommandResult::Service(outcome)) => {
                history.borrow_mut().acknowledged += 1;
                if outcome.removed || outcome.deleting {
                    // A deletion still removing instances is gone for the client once it is.
                    if outcome.deleting {
                        Known::Unsure
                    } else {
                        Known::Absent
                    }
                } else {
                    match (outcome.revision, outcome.accepted) {
                        (Some(revision), true) => {
                            let held = read_services(node).await;
                            match held.as_ref().and_then(|h| h.get(name)) {
                                Some(h) if h.current == Some(revision) => Known::Present {
                                    revision,
                                    instances: h.instances,
                                },
                                _ => Known::Unsure,
                            }
                        }
                        _ => Known::Unsure,
                    }
                }
            }
            Outcome::Done(_) | Outcome::NotApplied => known,
            Outcome::Unknown => {
                let mut history = history.borrow_mut();
                history.unknown += 1;
                history.tainted.insert(name.clone());
                Known::Unsure
            }
        };
        history.borrow_mut().known.insert(name.clone(), now);
        tokio::time::sleep(Duration::from_millis(200 + plan.rng.below(300))).await;
    }
    Ok(())
}

/// Every agent's inventory, or `None` for one that did not answer.
pub async fn inventories() -> Vec<(String, Option<Inventory>)> {
    let mut found = Vec::new();
    for n in 1..=AGENTS {
        let host = agent_host(n);
        let answer =
            call_at::<AgentCall, AgentAnswer>(&host, AGENT_PORT, &AgentCall::Inventory, ANSWER_TIMEOUT).await;
        let inventory = match answer {
            Ok(AgentAnswer::Inventory(inventory)) => Some(inventory),
            _ => None,
        };
        found.push((host, inventory));
    }
    found
}

/// Samples every agent's fence every 250 ms until `until`.
pub async fn sample_fences(until: Duration, history: SharedServices) -> turmoil::Result {
    while turmoil::sim_elapsed().is_some_and(|t| t < until) {
        for (agent, inventory) in inventories().await {
            if let Some(inventory) = inventory {
                history
                    .borrow_mut()
                    .fences
                    .entry(agent)
                    .or_default()
                    .push((now_us(), inventory.fence));
            }
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    Ok(())
}

/// The instance ids a held service must run.
fn expected_ids(service: &str, held: &Held) -> BTreeSet<String> {
    if held.deleting || held.current.is_none() {
        return BTreeSet::new();
    }
    (0..held.instances)
        .map(|i| format!("{TENANT}.{service}.{ROLE}.r{}.{i}", held.role_revision))
        .collect()
}

/// Where the agents' inventories differ from what the state holds: every held service's ids
/// running once, on one agent; nothing else of the tenant anywhere. Empty when they agree.
pub fn differences(held: &BTreeMap<String, Held>, inventories: &[(String, Inventory)]) -> Vec<String> {
    let mut found = Vec::new();
    let mut placed: BTreeMap<String, BTreeMap<String, Vec<String>>> = BTreeMap::new();
    for (agent, inventory) in inventories {
        for instance in &inventory.instances {
            let Some(service) = instance
                .set
                .as_str()
                .strip_prefix(&format!("{TENANT}."))
                .map(str::to_string)
            else {
                continue;
            };
            placed
                .entry(service)
                .or_default()
                .entry(instance.id.as_str().to_string())
                .or_default()
                .push(format!("{agent}:{:?}", instance.state));
            if instance.state != InstanceState::Running {
                found.push(format!("{} on {agent} is {:?}", instance.id, instance.state));
            }
        }
    }
    let services: BTreeSet<&String> = held.keys().chain(placed.keys()).collect();
    for service in services {
        let wanted = held
            .get(service)
            .map(|h| expected_ids(service, h))
            .unwrap_or_default();
        let running = placed.get(service).cloned().unwrap_or_default();
        let ids: BTreeSet<String> = running.keys().cloned().collect();
        if ids != wanted {
            found.push(format!(
                "{service}: agents run {ids:?}, the state wants {wanted:?}"
            ));
        }
        for (id, copies) in running {
            if copies.len() > 1 {
                found.push(format!("{id} runs {} times: {copies:?}", copies.len()));
            }
        }
    }
    found
}

/// What the clients were told against what the state holds after healing, for every service
/// no change of unknown outcome was sent for.
pub fn lost_acknowledgements(history: &ServiceHistory, held: &BTreeMap<String, Held>) -> Vec<String> {
    let mut found = Vec::new();
    for (service, known) in &history.known {
        if history.tainted.contains(service) {
            continue;
        }
        let now = held.get(service);
        match known {
            Known::Absent if now.is_some_and(|h| !h.deleting) => {
                found.push(format!(
                    "{service}: never created or its deletion acknowledged, yet the state holds {now:?}"
                ));
            }
            Known::Present { revision, .. } if now.is_none_or(|h| h.current != Some(*revision)) => {
                found.push(format!(
                    "{service}: revision {revision} was acknowledged last, yet the state holds {now:?}"
                ));
            }
            _ => {}
        }
    }
    found
}

/// Fences that went back on one agent.
pub fn fences_gone_back(history: &ServiceHistory) -> Vec<String> {
    let mut found = Vec::new();
    for (agent, seen) in &history.fences {
        for pair in seen.windows(2) {
            let ((_, before), (at, after)) = (pair[0], pair[1]);
            if after < before {
                found.push(format!(
                    "{agent}'s fence went back from {before} to {after} at {at} µs"
                ));
            }
        }
    }
    found
}
