//! The simulated clients: the register workload of the real-process harness (reads, creates and
//! compare-and-sets of lease objects used as registers, plus creates of unique objects whose
//! acknowledgement must survive), each request to a random node — which forwards it to the
//! leader as a node does — recorded in simulated time.

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};
use std::rc::Rc;
use std::time::Duration;

use drover_model::{
    Command, CommandResult, CoordinationLeaseSpec, DomainError, LeaseSpec, ObjectKey, ObjectKind,
    Precondition, StoredObject,
};

use super::wire::{call, CallError, Request, Response};
use super::world::{host_name, now_us};
use crate::checker::linearizable::{RegisterOp, Timed};
use crate::history::KeyedOp;
use crate::rng::Rng;

/// Namespace of the register keys.
pub const REGISTERS: &str = "registers";
/// Namespace of the unique objects.
pub const DURABLE: &str = "durable";
/// How long a client waits for one answer before its outcome counts as unknown (longer than
/// the nodes' request timeout, so that a node's own verdict usually arrives).
const ANSWER_TIMEOUT: Duration = Duration::from_millis(1500);

/// What the simulated clients saw.
#[derive(Debug, Default)]
pub struct SimHistory {
    /// Register operations.
    pub register: Vec<KeyedOp>,
    /// Keys (`kind namespace/name`) of unique creates that were acknowledged.
    pub acknowledged: Vec<String>,
    /// Requests that certainly did nothing (no leader there, not delivered, refused).
    pub not_applied: u64,
}

/// The history shared by the clients of one run.
pub type SharedHistory = Rc<RefCell<SimHistory>>;

/// One client's plan.
pub struct ClientPlan {
    /// Its number.
    pub id: usize,
    /// Its own generator, forked from the run's seed.
    pub rng: Rng,
    /// Cluster size.
    pub nodes: u64,
    /// Register keys.
    pub keys: u64,
    /// When it stops sending.
    pub until: Duration,
}

fn lease_key(namespace: &str, name: &str) -> ObjectKey {
    ObjectKey::new(ObjectKind::CoordinationLease, namespace, name)
}

fn spec(holder: &str) -> LeaseSpec {
    LeaseSpec::Coordination(CoordinationLeaseSpec {
        holder_identity: Some(holder.to_string()),
        ..CoordinationLeaseSpec::default()
    })
}

/// The register's value (the lease holder) and version of a stored object.
pub(super) fn holder_and_version(object: &StoredObject) -> (String, u64) {
    let holder = match &object.spec {
        LeaseSpec::Coordination(spec) => spec.holder_identity.clone().unwrap_or_default(),
        LeaseSpec::Akka(spec) => spec.owner.clone(),
    };
    (holder, object.meta.resource_version)
}

/// How a write ended for the client.
// One value per request, matched at once: boxing would only add an allocation.
#[allow(clippy::large_enum_variant)]
enum WriteOutcome {
    Applied(CommandResult),
    NotApplied,
    Unknown,
}

/// Sends `request` to `node`.
async fn ask(node: u64, request: &Request) -> Result<Response, CallError> {
    call(&host_name(node), request, ANSWER_TIMEOUT).await
}

/// A write through `node`: applied, certainly not applied (the node's promise when it found no
/// leader, which the checkers hold it to), or unknown.
async fn write(node: u64, command: Command) -> WriteOutcome {
    match ask(node, &Request::Write(command)).await {
        Ok(Response::Written(result)) => WriteOutcome::Applied(result),
        Ok(Response::NotWritten(_)) | Err(CallError::NotDelivered) => WriteOutcome::NotApplied,
        Ok(_) | Err(CallError::Lost) => WriteOutcome::Unknown,
    }
}

/// Runs one client until `plan.until` (simulated time).
pub async fn run(mut plan: ClientPlan, history: SharedHistory) -> turmoil::Result {
    let mut versions: HashMap<String, u64> = HashMap::new();
    let mut serial = 0u64;
    while turmoil::sim_elapsed().is_some_and(|t| t < plan.until) {
        serial += 1;
        let node = 1 + plan.rng.below(plan.nodes);
        let key = format!("r{}", plan.rng.below(plan.keys));
        let value = format!("c{}-{serial}", plan.id);
        let roll = plan.rng.below(100);
        let invoked = now_us();
        let record = |op: RegisterOp, returned: Option<u64>| {
            history.borrow_mut().register.push(KeyedOp {
                key: key.clone(),
                op: Timed {
                    invoked,
                    returned,
                    op,
                },
            });
        };
        // A swap needs a version to expect: without one, read first.
        if roll < 40 || ((50..90).contains(&roll) && !versions.contains_key(&key)) {
            match ask(node, &Request::Read(lease_key(REGISTERS, &key))).await {
                Ok(Response::Read(object)) => {
                    let seen = object.as_ref().map(holder_and_version);
                    if let Some((_, version)) = &seen {
                        versions.insert(key.clone(), *version);
                    }
                    record(RegisterOp::Read(seen), Some(now_us()));
                }
                _ => history.borrow_mut().not_applied += 1,
            }
        } else if roll < 50 {
            let command = Command::Create {
                key: lease_key(REGISTERS, &key),
                spec: spec(&value),
                labels: BTreeMap::new(),
                annotations: BTreeMap::new(),
                uid: format!("{}-{serial}", plan.id),
                created_at: "2026-11-22T00:00:00Z".into(),
            };
            match write(node, command).await {
                WriteOutcome::Applied(CommandResult::Stored(object)) => {
                    let (_, version) = holder_and_version(&object);
                    versions.insert(key.clone(), version);
                    record(RegisterOp::Created { value, version }, Some(now_us()));
                }
                WriteOutcome::Applied(CommandResult::Refused(DomainError::AlreadyExists { .. })) => {
                    record(RegisterOp::CreateRefused, Some(now_us()));
                }
                WriteOutcome::Applied(_) | WriteOutcome::NotApplied => history.borrow_mut().not_applied += 1,
                WriteOutcome::Unknown => record(RegisterOp::CreateUnknown { value }, None),
            }
        } else if roll < 90 {
            let expected = versions.get(&key).copied().unwrap_or_default();
            let command = Command::Replace {
                key: lease_key(REGISTERS, &key),
                spec: spec(&value),
                labels: BTreeMap::new(),
                annotations: BTreeMap::new(),
                precondition: Precondition {
                    resource_version: Some(expected),
                    uid: None,
                },
            };
            match write(node, command).await {
                WriteOutcome::Applied(CommandResult::Stored(object)) => {
                    let (_, version) = holder_and_version(&object);
                    versions.insert(key.clone(), version);
                    record(
                        RegisterOp::Swapped {
                            expected,
                            value,
                            version,
                        },
                        Some(now_us()),
                    );
                }
                WriteOutcome::Applied(CommandResult::Refused(
                    DomainError::Conflict { .. } | DomainError::NotFound { .. },
                )) => record(RegisterOp::SwapRefused { expected }, Some(now_us())),
                WriteOutcome::Applied(_) | WriteOutcome::NotApplied => history.borrow_mut().not_applied += 1,
                WriteOutcome::Unknown => record(RegisterOp::SwapUnknown { expected, value }, None),
            }
        } else {
            let name = format!("d{}-{serial}", plan.id);
            let key = lease_key(DURABLE, &name);
            let command = Command::Create {
                key: key.clone(),
                spec: spec(&value),
                labels: BTreeMap::new(),
                annotations: BTreeMap::new(),
                uid: name.clone(),
                created_at: "2026-11-22T00:00:00Z".into(),
            };
            match write(node, command).await {
                WriteOutcome::Applied(CommandResult::Stored(_)) => {
                    history.borrow_mut().acknowledged.push(key.to_string())
                }
                WriteOutcome::Applied(_) | WriteOutcome::NotApplied => history.borrow_mut().not_applied += 1,
                WriteOutcome::Unknown => {}
            }
        }
        tokio::time::sleep(Duration::from_millis(1 + plan.rng.below(20))).await;
    }
    Ok(())
}
