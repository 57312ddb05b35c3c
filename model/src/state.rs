//! The replicated state and its pure apply function.

use std::collections::{BTreeMap, VecDeque};

use serde::{Deserialize, Serialize};

use crate::command::{Command, CommandResult, Precondition, Proposal};
use crate::error::DomainError;
use crate::object::{ObjectKey, ObjectKind, ObjectMeta, StoredObject};
use crate::platform::{Platform, PlatformCommand, PlatformError, PlatformOp};
use crate::pool::Pools;
use crate::validation::{validate_contents, validate_name, validate_namespace};

/// How many idempotency keys the state remembers; the oldest is forgotten first.
pub const IDEMPOTENCY_KEYS_KEPT: usize = 10_000;
/// How many bytes of first results the idempotency keys may keep (as JSON); the oldest are
/// forgotten first. Objects are bounded too, so one result never exceeds this.
pub const IDEMPOTENCY_BYTES_KEPT: usize = 16 * 1024 * 1024;

/// The first result of a keyed proposal, and what request it answered.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct IdempotencyRecord {
    /// Method, route and body digest of the first request (`None` for keys proposed without).
    request: Option<String>,
    /// The result the first request got.
    result: CommandResult,
    /// Size of `result` as JSON, counted against [`IDEMPOTENCY_BYTES_KEPT`].
    bytes: usize,
}

/// What happened to an object in one applied command, as a watch reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum ChangeKind {
    /// The object was created.
    Added,
    /// The object was replaced.
    Modified,
    /// The object was deleted.
    Deleted,
}

/// One change of one object at one revision.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Change {
    /// Revision of the command that made the change.
    pub index: u64,
    /// What happened.
    pub kind: ChangeKind,
    /// The object after the change (before it, for a delete).
    pub object: StoredObject,
}

/// Everything the cluster agrees on. Every replica applies the same proposals in the same order
/// and so holds the same `State`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct State {
    /// Persisted as a list: JSON maps need string keys, and the key is inside the object.
    #[serde(with = "objects_as_list")]
    objects: BTreeMap<ObjectKey, StoredObject>,
    /// First results of idempotent proposals by key (the API scopes keys by caller).
    #[serde(default)]
    idempotency_records: BTreeMap<String, IdempotencyRecord>,
    /// The keys of `idempotency_records`, oldest first, so the oldest is forgotten first.
    #[serde(default)]
    idempotency_keys: VecDeque<String>,
    /// Bytes of results the records hold: their sum, kept so that a keyed write does not add
    /// up 10,000 records on every replica.
    #[serde(default)]
    idempotency_bytes: usize,
    /// Resource pools (Boskos and k8s-claimer).
    #[serde(default)]
    pools: Pools,
    /// Users, tenants and their objects (Axebow platform).
    #[serde(default)]
    platform: Platform,
    /// The latest leader time applied; time never runs backwards across leaders.
    #[serde(default)]
    clock_ms: u64,
    /// The revision of the last applied proposal: every proposal gets its own, larger than any
    /// before it and at least its log index (a batch puts several proposals in one entry).
    /// Resource versions, fencing tokens and watch positions are revisions.
    #[serde(default)]
    revision: u64,
    /// Users' changes, for operators.
    #[serde(default)]
    audit: crate::audit::AuditLog,
    /// Raised by every restore of a snapshot; the first part of the fence agents keep, so a
    /// cluster restored from another one's state outranks the old one's leaders.
    #[serde(default)]
    epoch: u64,
}

impl State {
    /// An empty state.
    pub fn new() -> Self {
        Self::default()
    }

    /// The epoch: how many restores this state has been through (see [`Fence`](crate::cluster::agent_api::Fence)).
    pub fn epoch(&self) -> u64 {
        self.epoch
    }

    /// Sets the epoch (tests of restores only).
    #[cfg(test)]
    pub(crate) fn set_epoch_for_tests(&mut self, epoch: u64) {
        self.epoch = epoch;
    }

    /// Sets the revision (tests of restores only).
    #[cfg(test)]
    pub(crate) fn set_revision_for_tests(&mut self, revision: u64) {
        self.revision = revision;
    }

    /// Looks up one object.
    pub fn get(&self, key: &ObjectKey) -> Option<&StoredObject> {
        self.objects.get(key)
    }

    /// Objects of one kind, optionally limited to one namespace, in key order.
    pub fn list(&self, kind: ObjectKind, namespace: Option<&str>) -> Vec<StoredObject> {
        self.objects_of(kind, namespace).cloned().collect()
    }

    /// The objects [`Self::list`] returns, borrowed, reading only the key range of the kind (and
    /// namespace): a caller that pages or filters clones only what it keeps.
    pub fn objects_of<'a>(
        &'a self,
        kind: ObjectKind,
        namespace: Option<&'a str>,
    ) -> impl Iterator<Item = &'a StoredObject> + 'a {
        let start = ObjectKey::new(kind, namespace.unwrap_or_default(), "");
        self.objects
            .range(start..)
            .take_while(move |(key, _)| key.kind == kind && namespace.is_none_or(|ns| key.namespace == ns))
            .map(|(_, object)| object)
    }

    /// The revision of the last applied proposal.
    pub fn revision(&self) -> u64 {
        self.revision
    }

    /// The latest leader time applied (ms since the epoch).
    pub fn clock_ms(&self) -> u64 {
        self.clock_ms
    }

    /// The resource pools.
    pub fn pools(&self) -> &Pools {
        &self.pools
    }

    /// Users, tenants and their objects.
    pub fn platform(&self) -> &Platform {
        &self.platform
    }

    /// Number of stored objects.
    pub fn object_count(&self) -> usize {
        self.objects.len()
    }

    /// Applies one committed proposal (or batch) of the log entry at `index`. Pure: the result
    /// and the changes depend only on `self`, `index` and `proposal`.
    pub fn apply(&mut self, index: u64, proposal: &Proposal) -> (CommandResult, Vec<Change>) {
        if let Command::Batch { proposals } = &proposal.command {
            let mut results = Vec::with_capacity(proposals.len());
            let mut changes = Vec::new();
            for inner in proposals {
                let (result, mut inner_changes) = self.apply(index, inner);
                results.push(result);
                changes.append(&mut inner_changes);
            }
            return (CommandResult::Batch { results }, changes);
        }
        if let Some(key) = &proposal.idempotency_key {
            if let Some(record) = self.idempotency_records.get(key) {
                if record.request != proposal.idempotency_request {
                    let first = record.request.as_deref().unwrap_or("another request");
                    let error = DomainError::Invalid {
                        field: "Idempotency-Key".to_string(),
                        message: format!(
                            "this key was first used for {}; send a new key with a new request",
                            first.split(' ').take(2).collect::<Vec<_>>().join(" ")
                        ),
                    };
                    return (CommandResult::Refused(error), Vec::new());
                }
                return (record.result.clone(), Vec::new());
            }
        }
        // Resource versions and fencing tokens rest on every write getting a larger revision:
        // at the top of the range a write is refused rather than given the same one again.
        let Some(revision) = self.revision.checked_add(1).map(|next| next.max(index)) else {
            return (CommandResult::Refused(revision_exhausted()), Vec::new());
        };
        self.revision = revision;
        // A new leader's clock may be behind the old one's: keep the replicated clock monotonic.
        self.clock_ms = self.clock_ms.max(proposal.now_ms);
        let (result, changes) = match self.apply_command(revision, self.clock_ms, &proposal.command) {
            Ok(done) => done,
            Err(error) => (CommandResult::Refused(error), Vec::new()),
        };
        self.audit_change(revision, proposal, &result);
        // A refusal changed nothing, so it is not remembered: a retry is judged afresh (a merge
        // patch retried after a conflict must not get the same conflict forever).
        if let (Some(key), false) = (
            &proposal.idempotency_key,
            matches!(result, CommandResult::Refused(_)),
        ) {
            self.remember(key, proposal.idempotency_request.clone(), &result);
        }
        (result, changes)
    }

    fn remember(&mut self, key: &str, request: Option<String>, result: &CommandResult) {
        // The encoded size is the same on every replica: the result is.
        let bytes = serde_json::to_vec(result).map_or(usize::MAX, |encoded| encoded.len());
        if bytes > IDEMPOTENCY_BYTES_KEPT {
            return;
        }
        let record = IdempotencyRecord {
            request,
            result: result.clone(),
            bytes,
        };
        self.idempotency_records.insert(key.to_string(), record);
        self.idempotency_keys.push_back(key.to_string());
        self.idempotency_bytes += bytes;
        while self.idempotency_keys.len() > IDEMPOTENCY_KEYS_KEPT
            || self.idempotency_bytes > IDEMPOTENCY_BYTES_KEPT
        {
            let Some(oldest) = self.idempotency_keys.pop_front() else {
                break;
            };
            if let Some(gone) = self.idempotency_records.remove(&oldest) {
                self.idempotency_bytes = self.idempotency_bytes.saturating_sub(gone.bytes);
            }
        }
    }

    /// Records a user's change in the audit log: one the command says who made (platform
    /// changes), or one proposed with a principal (the other dialects); the leader's own
    /// changes carry neither.
    fn audit_change(&mut self, revision: u64, proposal: &Proposal, result: &CommandResult) {
        let Some(described) = crate::audit::describe(&proposal.command) else {
            return;
        };
        let Some(principal) = described.caller.or_else(|| proposal.principal.clone()) else {
            return;
        };
        self.audit.record(crate::audit::AuditEntry {
            revision,
            time: crate::time::rfc3339_ms(self.clock_ms),
            principal,
            dialect: described.dialect.to_string(),
            verb: described.verb,
            object: described.object,
            result: crate::audit::outcome(result),
        });
    }

    /// Whether the state holds anything users made: lease objects, users, pool resources.
    pub fn holds_anything(&self) -> bool {
        !self.objects.is_empty() || self.platform.users().next().is_some() || !self.pools.resources.is_empty()
    }

    /// The audit log.
    pub fn audit(&self) -> &crate::audit::AuditLog {
        &self.audit
    }

    fn apply_command(
        &mut self,
        index: u64,
        now_ms: u64,
        command: &Command,
    ) -> Result<(CommandResult, Vec<Change>), DomainError> {
        match command {
            Command::Platform(platform_command) => {
                self.check_namespace_free(platform_command)?;
                let result = self.platform.apply(platform_command)?;
                Ok((CommandResult::Platform(result), Vec::new()))
            }
            // Service changes stamp the services they touch with this revision, for watches.
            Command::Placement(placement) => {
                let touched = [(placement.tenant.clone(), placement.service.clone())];
                self.platform.changing_services(index, &touched, |p| {
                    Ok(((), p.apply_placement(now_ms, placement)?))
                })?;
                Ok((CommandResult::Done, Vec::new()))
            }
            Command::ServiceReport(report) => {
                let touched = [(report.tenant.clone(), report.service.clone())];
                self.platform.changing_services(index, &touched, |p| {
                    Ok(((), p.apply_service_report(index, now_ms, report)?))
                })?;
                Ok((CommandResult::Done, Vec::new()))
            }
            Command::Service(service_command) => {
                let touched = service_command.change.services();
                let outcome = self.platform.changing_services(index, &touched, |p| {
                    Ok((p.apply_service(now_ms, service_command)?, true))
                })?;
                Ok((CommandResult::Service(outcome), Vec::new()))
            }
            Command::Cluster(cluster_command) => {
                self.platform.apply_cluster(now_ms, cluster_command)?;
                Ok((CommandResult::Done, Vec::new()))
            }
            Command::Pool(pool_command) => {
                let result = self.pools.apply(index, now_ms, pool_command)?;
                Ok((CommandResult::Pool(result), Vec::new()))
            }
            Command::Create {
                key,
                spec,
                labels,
                annotations,
                uid,
                created_at,
            } => {
                check_key(key)?;
                check_spec_kind(key, spec.kind())?;
                validate_contents(key, labels, annotations, spec)?;
                if self.objects.contains_key(key) {
                    return Err(DomainError::AlreadyExists { key: key.clone() });
                }
                let object = StoredObject {
                    key: key.clone(),
                    meta: ObjectMeta {
                        uid: uid.clone(),
                        resource_version: index,
                        created_index: index,
                        creation_timestamp: created_at.clone(),
                        labels: labels.clone(),
                        annotations: annotations.clone(),
                    },
                    spec: spec.clone(),
                };
                self.objects.insert(key.clone(), object.clone());
                let change = Change {
                    index,
                    kind: ChangeKind::Added,
                    object: object.clone(),
                };
                Ok((CommandResult::Stored(object), vec![change]))
            }
            Command::Replace {
                key,
                spec,
                labels,
                annotations,
                precondition,
            } => {
                check_spec_kind(key, spec.kind())?;
                validate_contents(key, labels, annotations, spec)?;
                let existing = self
                    .objects
                    .get_mut(key)
                    .ok_or_else(|| DomainError::NotFound { key: key.clone() })?;
                check_precondition(key, &existing.meta, precondition)?;
                existing.spec = spec.clone();
                existing.meta.labels = labels.clone();
                existing.meta.annotations = annotations.clone();
                existing.meta.resource_version = index;
                let object = existing.clone();
                let change = Change {
                    index,
                    kind: ChangeKind::Modified,
                    object: object.clone(),
                };
                Ok((CommandResult::Stored(object), vec![change]))
            }
            Command::Delete { key, precondition } => {
                let existing = self
                    .objects
                    .get(key)
                    .ok_or_else(|| DomainError::NotFound { key: key.clone() })?;
                check_precondition(key, &existing.meta, precondition)?;
                let mut object = self
                    .objects
                    .remove(key)
                    .ok_or_else(|| DomainError::NotFound { key: key.clone() })?;
                // A deletion is a change too: watchers see it at this index.
                object.meta.resource_version = index;
                let change = Change {
                    index,
                    kind: ChangeKind::Deleted,
                    object: object.clone(),
                };
                Ok((CommandResult::Deleted(object), vec![change]))
            }
            Command::Restore { state } => {
                // The API refuses such a file first; every replica refuses it again, so that a
                // restore can never leave revisions, fences or time without room to grow.
                crate::snapshot::check_room(state)?;
                // Revisions and the clock never go back, whatever the snapshot's were; the
                // epoch passes both the snapshot's and this cluster's.
                let (revision, clock_ms, epoch) = (self.revision, self.clock_ms, self.epoch);
                let restored_epoch = epoch.max(state.epoch).checked_add(1);
                let Some(restored_epoch) = restored_epoch else {
                    return Err(DomainError::Invalid {
                        field: "epoch".into(),
                        message: "this cluster has been restored as often as its fence can count; restore into a new cluster".into(),
                    });
                };
                *self = (**state).clone();
                self.revision = self.revision.max(revision);
                self.clock_ms = self.clock_ms.max(clock_ms);
                self.epoch = restored_epoch;
                Ok((CommandResult::Done, Vec::new()))
            }
            Command::AuditRetention { entries } => {
                self.audit.set_retention(*entries);
                Ok((CommandResult::Done, Vec::new()))
            }
            Command::Noop => Ok((CommandResult::Done, Vec::new())),
            // Handled by `apply`; a batch inside a batch is applied the same way.
            Command::Batch { .. } => Ok((CommandResult::Done, Vec::new())),
        }
    }
}

/// The refusal of a write when the revision cannot grow any more.
fn revision_exhausted() -> DomainError {
    DomainError::Invalid {
        field: "revision".into(),
        message: format!(
            "this cluster's revision has reached {}; no write can get a larger one (restore its snapshot into a new cluster)",
            u64::MAX
        ),
    }
}

impl State {
    /// A tenant's name is also a lease namespace its members may use: a user who is no operator
    /// cannot create a tenant named after a namespace that already holds lease objects, which
    /// would hand them objects that others wrote.
    fn check_namespace_free(&self, command: &PlatformCommand) -> Result<(), DomainError> {
        let PlatformOp::CreateTenant { tenant, .. } = &command.op else {
            return Ok(());
        };
        let in_use = ObjectKind::ALL
            .iter()
            .any(|kind| self.objects_of(*kind, Some(tenant)).next().is_some());
        let operator = self
            .platform
            .user_of(&command.caller)
            .is_some_and(|user| self.platform.is_operator(&user.uid));
        if in_use && !operator && self.platform.tenant(tenant).is_none() {
            return Err(PlatformError::Conflict(format!(
                "{tenant:?} is a lease namespace that already holds objects; only an operator may make it a tenant"
            ))
            .into());
        }
        Ok(())
    }
}

mod objects_as_list {
    use std::collections::BTreeMap;

    use serde::{Deserialize, Deserializer, Serializer};

    use crate::object::{ObjectKey, StoredObject};

    pub(super) fn serialize<S: Serializer>(
        objects: &BTreeMap<ObjectKey, StoredObject>,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(objects.values())
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<BTreeMap<ObjectKey, StoredObject>, D::Error> {
        let list = Vec::<StoredObject>::deserialize(deserializer)?;
        Ok(list
            .into_iter()
            .map(|object| (object.key.clone(), object))
            .collect())
    }
}

fn check_key(key: &ObjectKey) -> Result<(), DomainError> {
    validate_namespace(&key.namespace)?;
    validate_name(key.kind, &key.name)
}

fn check_spec_kind(key: &ObjectKey, spec_kind: ObjectKind) -> Result<(), DomainError> {
    if key.kind == spec_kind {
        Ok(())
    } else {
        Err(DomainError::Invalid {
            field: "spec".to_string(),
            message: format!("a {spec_kind} spec cannot be stored as {}", key.kind),
        })
    }
}

fn check_precondition(
    key: &ObjectKey,
    meta: &ObjectMeta,
    precondition: &Precondition,
) -> Result<(), DomainError> {
    if let Some(uid) = &precondition.uid {
        if uid != &meta.uid {
            return Err(DomainError::Conflict {
                key: key.clone(),
                message: format!(
                    "Precondition failed: UID in precondition: {uid}, UID in object meta: {}",
                    meta.uid
                ),
            });
        }
    }
    if let Some(version) = precondition.resource_version {
        if version != meta.resource_version {
            return Err(DomainError::Conflict {
                key: key.clone(),
                message: "the object has been modified; please apply your changes to the latest version and try again".to_string(),
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::limits::MAX_OBJECT_BYTES;
    use crate::object::{AkkaLeaseSpec, CoordinationLeaseSpec, LeaseSpec};

    fn key(name: &str) -> ObjectKey {
        ObjectKey::new(ObjectKind::CoordinationLease, "default", name)
    }

    fn create(name: &str, holder: &str) -> Proposal {
        Proposal::new(Command::Create {
            key: key(name),
            spec: LeaseSpec::Coordination(CoordinationLeaseSpec {
                holder_identity: Some(holder.to_string()),
                ..Default::default()
            }),
            labels: BTreeMap::new(),
            annotations: BTreeMap::new(),
            uid: format!("uid-{name}"),
            created_at: "2026-11-22T00:00:00Z".to_string(),
        })
    }

    fn replace(name: &str, holder: &str, version: Option<u64>) -> Proposal {
        Proposal::new(Command::Replace {
            key: key(name),
            spec: LeaseSpec::Coordination(CoordinationLeaseSpec {
                holder_identity: Some(holder.to_string()),
                ..Default::default()
            }),
            labels: BTreeMap::new(),
            annotations: BTreeMap::new(),
            precondition: Precondition {
                resource_version: version,
                uid: None,
            },
        })
    }

    #[test]
    fn create_stamps_the_log_index_and_refuses_duplicates() {
        let mut state = State::new();
        let (result, changes) = state.apply(5, &create("a", "n1"));
        let CommandResult::Stored(object) = result else {
            panic!("expected stored, got {result:?}")
        };
        assert_eq!(object.meta.resource_version, 5);
        assert_eq!(changes.len(), 1);
        assert_eq!(changes[0].kind, ChangeKind::Added);
        let (again, changes) = state.apply(6, &create("a", "n2"));
        assert!(matches!(
            again,
            CommandResult::Refused(DomainError::AlreadyExists { .. })
        ));
        assert!(changes.is_empty());
    }

    #[test]
    fn a_batch_gives_each_proposal_its_own_revision_and_result() {
        let mut state = State::new();
        state.apply(3, &create("a", "n1"));
        let batch = Proposal::new(Command::Batch {
            proposals: vec![
                create("b", "n1"),
                replace("a", "n2", Some(3)),
                // Same expected version as the replace before it: refused, as if sent alone.
                replace("a", "n3", Some(3)),
                create("b", "n2"),
            ],
        });
        // Batches travel through the log encoded: the shape must survive a round trip.
        let encoded = serde_json::to_vec(&batch).expect("a batch encodes");
        let decoded: Proposal = serde_json::from_slice(&encoded).expect("a batch decodes");
        assert_eq!(decoded, batch);
        let (result, changes) = state.apply(4, &decoded);
        let CommandResult::Batch { results } = result else {
            panic!("expected a batch result, got {result:?}")
        };
        assert!(matches!(&results[0], CommandResult::Stored(o) if o.meta.resource_version == 4));
        assert!(matches!(&results[1], CommandResult::Stored(o) if o.meta.resource_version == 5));
        assert!(matches!(
            &results[2],
            CommandResult::Refused(DomainError::Conflict { .. })
        ));
        assert!(matches!(
            &results[3],
            CommandResult::Refused(DomainError::AlreadyExists { .. })
        ));
        let revisions: Vec<u64> = changes.iter().map(|c| c.index).collect();
        assert_eq!(revisions, vec![4, 5]);
        assert_eq!(state.revision(), 7);
        // The next entry's proposal continues above the batch, not at its log index.
        let (next, _) = state.apply(5, &replace("a", "n4", Some(5)));
        assert!(matches!(next, CommandResult::Stored(ref o) if o.meta.resource_version == 8));
    }

    #[test]
    fn replace_is_compare_and_set_on_resource_version() {
        let mut state = State::new();
        state.apply(1, &create("a", "n1"));
        let (ok, _) = state.apply(2, &replace("a", "n2", Some(1)));
        assert!(matches!(ok, CommandResult::Stored(ref o) if o.meta.resource_version == 2));
        let (stale, changes) = state.apply(3, &replace("a", "n3", Some(1)));
        assert!(matches!(
            stale,
            CommandResult::Refused(DomainError::Conflict { .. })
        ));
        assert!(changes.is_empty());
        let holder = match &state.get(&key("a")).map(|o| o.spec.clone()) {
            Some(LeaseSpec::Coordination(spec)) => spec.holder_identity.clone(),
            other => panic!("unexpected {other:?}"),
        };
        assert_eq!(holder.as_deref(), Some("n2"));
        let (unconditional, _) = state.apply(4, &replace("a", "n4", None));
        assert!(matches!(unconditional, CommandResult::Stored(_)));
    }

    #[test]
    fn delete_reports_the_object_at_the_delete_index() {
        let mut state = State::new();
        state.apply(1, &create("a", "n1"));
        let (result, changes) = state.apply(
            7,
            &Proposal::new(Command::Delete {
                key: key("a"),
                precondition: Precondition::default(),
            }),
        );
        assert!(matches!(result, CommandResult::Deleted(ref o) if o.meta.resource_version == 7));
        assert_eq!(changes[0].kind, ChangeKind::Deleted);
        assert!(state.get(&key("a")).is_none());
        let (again, _) = state.apply(
            8,
            &Proposal::new(Command::Delete {
                key: key("a"),
                precondition: Precondition::default(),
            }),
        );
        assert!(matches!(
            again,
            CommandResult::Refused(DomainError::NotFound { .. })
        ));
    }

    #[test]
    fn idempotent_proposals_apply_once() {
        let mut state = State::new();
        let first = create("a", "n1").with_idempotency_key(Some("k1".into()));
        let (r1, c1) = state.apply(1, &first);
        let (r2, c2) = state.apply(2, &first);
        assert_eq!(r1, r2);
        assert_eq!(c1.len(), 1);
        assert!(c2.is_empty());
        assert_eq!(state.object_count(), 1);
    }

    #[test]
    fn objects_over_the_size_limit_are_refused() {
        let mut state = State::new();
        let (result, changes) = state.apply(1, &create("a", &"h".repeat(MAX_OBJECT_BYTES)));
        assert!(
            matches!(result, CommandResult::Refused(DomainError::Invalid { .. })),
            "{result:?}"
        );
        assert!(changes.is_empty());
        state.apply(2, &create("a", "n1"));
        let (result, _) = state.apply(3, &replace("a", &"h".repeat(MAX_OBJECT_BYTES), None));
        assert!(
            matches!(result, CommandResult::Refused(DomainError::Invalid { .. })),
            "{result:?}"
        );
    }

    #[test]
    fn spec_kind_must_match_key_kind() {
        let mut state = State::new();
        let proposal = Proposal::new(Command::Create {
            key: key("a"),
            spec: LeaseSpec::Akka(AkkaLeaseSpec::default()),
            labels: BTreeMap::new(),
            annotations: BTreeMap::new(),
            uid: "u".into(),
            created_at: "t".into(),
        });
        let (result, _) = state.apply(1, &proposal);
        assert!(matches!(
            result,
            CommandResult::Refused(DomainError::Invalid { .. })
        ));
    }

    #[test]
    fn state_round_trips_through_json() {
        let mut state = State::new();
        state.apply(1, &create("a", "n1").with_idempotency_key(Some("k".into())));
        state.apply(2, &create("b", "n2"));
        let json = serde_json::to_string(&state).expect("serialize");
        let back: State = serde_json::from_str(&json).expect("deserialize");
        assert_eq!(back, state);
    }

    #[test]
    fn idempotency_memory_is_bounded() {
        let mut state = State::new();
        for i in 0..(IDEMPOTENCY_KEYS_KEPT as u64 + 5) {
            state.apply(
                i + 1,
                &Proposal::new(Command::Noop).with_idempotency_key(Some(format!("k{i}"))),
            );
        }
        assert_eq!(state.idempotency_records.len(), IDEMPOTENCY_KEYS_KEPT);
        assert!(!state.idempotency_records.contains_key("k0"));
    }

    fn big_create(name: &str) -> Proposal {
        let mut proposal = create(name, &"h".repeat(200_000));
        proposal.idempotency_key = Some(format!("key-{name}"));
        proposal
    }

    #[test]
    fn idempotency_memory_is_bounded_by_bytes() {
        // Finding 5: ~0.9 MB results under fresh keys once kept 10,000 whole results.
        let mut state = State::new();
        for i in 0..200u64 {
            state.apply(i + 1, &big_create(&format!("o{i}")));
        }
        assert!(
            state.idempotency_bytes <= IDEMPOTENCY_BYTES_KEPT,
            "{}",
            state.idempotency_bytes
        );
        assert!(state.idempotency_records.len() < 200);
        let kept: usize = state.idempotency_records.values().map(|r| r.bytes).sum();
        assert_eq!(kept, state.idempotency_bytes);
    }

    #[test]
    fn a_key_reused_for_another_request_is_refused_and_refusals_are_not_kept() {
        // Finding 4: a key reused with another body or route answered the first result.
        let mut state = State::new();
        let keyed_as = |key: &str, proposal: Proposal, request: &str| {
            proposal.with_idempotency(Some((format!("alice\u{1f}{key}"), request.to_string())))
        };
        let keyed = |proposal: Proposal, request: &str| keyed_as("job-42", proposal, request);
        let (first, _) = state.apply(1, &keyed(create("a", "n1"), "POST /leases d1"));
        assert!(matches!(first, CommandResult::Stored(_)));
        let (other_body, changes) = state.apply(2, &keyed(create("b", "n1"), "POST /leases d2"));
        assert!(
            matches!(&other_body, CommandResult::Refused(DomainError::Invalid { field, message })
                if field == "Idempotency-Key" && message.contains("POST /leases")),
            "{other_body:?}"
        );
        assert!(changes.is_empty() && state.get(&key("b")).is_none());
        let (retry, _) = state.apply(3, &keyed(create("a", "n1"), "POST /leases d1"));
        assert_eq!(retry, first);
        // A refused write is judged afresh when retried with its key.
        let conflict = keyed_as("job-43", replace("a", "n2", Some(99)), "PUT /leases/a d3");
        assert!(matches!(
            state.apply(4, &conflict).0,
            CommandResult::Refused(DomainError::Conflict { .. })
        ));
        let fixed = keyed_as("job-43", replace("a", "n2", Some(1)), "PUT /leases/a d3");
        assert!(matches!(state.apply(5, &fixed).0, CommandResult::Stored(_)));
    }
}

#[cfg(test)]
mod namespace_tests {
    use super::*;
    use crate::object::{CoordinationLeaseSpec, LeaseSpec};
    use crate::platform::{Identity, TenantSpec, UserProfile};

    fn as_user(subject: &str, op: PlatformOp) -> Proposal {
        Proposal::new(Command::Platform(PlatformCommand {
            caller: Identity {
                issuer: "idp".to_string(),
                subject: subject.to_string(),
            },
            op,
        }))
    }

    fn register(subject: &str, operator: bool) -> Proposal {
        as_user(
            subject,
            PlatformOp::RegisterUser {
                uid: format!("u-{subject}"),
                profile: UserProfile {
                    name: subject.to_string(),
                    surname: "Test".to_string(),
                    ..UserProfile::default()
                },
                operator,
            },
        )
    }

    fn create_tenant(subject: &str, tenant: &str) -> Proposal {
        as_user(
            subject,
            PlatformOp::CreateTenant {
                tenant: tenant.to_string(),
                spec: TenantSpec::default(),
            },
        )
    }

    #[test]
    fn a_namespace_with_objects_cannot_become_a_users_tenant() {
        // Finding 3: bob made tenant `nsa` and so took over the leases others had written there.
        let mut state = State::new();
        let lease = Proposal::new(Command::Create {
            key: ObjectKey::new(ObjectKind::CoordinationLease, "nsa", "a1"),
            spec: LeaseSpec::Coordination(CoordinationLeaseSpec::default()),
            labels: BTreeMap::new(),
            annotations: BTreeMap::new(),
            uid: "u".into(),
            created_at: "t".into(),
        });
        assert!(matches!(state.apply(1, &lease).0, CommandResult::Stored(_)));
        state.apply(2, &register("bob", false));
        let (taken, _) = state.apply(3, &create_tenant("bob", "nsa"));
        assert!(
            matches!(&taken, CommandResult::Refused(DomainError::Platform(PlatformError::Conflict(m))) if m.contains("already holds objects")),
            "{taken:?}"
        );
        assert!(state.platform().tenant("nsa").is_none());
        // A namespace without objects is free, and an operator may adopt a used one.
        assert!(matches!(
            state.apply(4, &create_tenant("bob", "fresh")).0,
            CommandResult::Platform(_)
        ));
        state.apply(5, &register("root", true));
        assert!(matches!(
            state.apply(6, &create_tenant("root", "nsa")).0,
            CommandResult::Platform(_)
        ));
    }
}
