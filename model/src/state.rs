//! The replicated state: what every replica holds after applying the same log (the apply
//! function itself is in `apply.rs`).

use std::collections::{BTreeMap, VecDeque};

use serde::{Deserialize, Serialize};

use crate::object::{ObjectKey, ObjectKind, StoredObject};
use crate::platform::Platform;
use crate::pool::Pools;
use crate::result::CommandResult;

/// How many idempotency keys the state remembers; the oldest is forgotten first.
pub const IDEMPOTENCY_KEYS_KEPT: usize = 10_000;
/// How many bytes of first results the idempotency keys may keep (as JSON); the oldest are
/// forgotten first. Objects are bounded too, so one result never exceeds this.
pub const IDEMPOTENCY_BYTES_KEPT: usize = 16 * 1024 * 1024;

/// The first result of a keyed proposal, and what request it answered.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct IdempotencyRecord {
    /// Method, route and body digest of the first request (`None` for keys proposed without).
    pub(crate) request: Option<String>,
    /// The result the first request got.
    pub(crate) result: CommandResult,
    /// Size of `result` as JSON, counted against [`IDEMPOTENCY_BYTES_KEPT`].
    pub(crate) bytes: usize,
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
    pub(crate) objects: BTreeMap<ObjectKey, StoredObject>,
    /// First results of idempotent proposals by key (the API scopes keys by caller).
    #[serde(default)]
    pub(crate) idempotency_records: BTreeMap<String, IdempotencyRecord>,
    /// The keys of `idempotency_records`, oldest first, so the oldest is forgotten first.
    #[serde(default)]
    pub(crate) idempotency_keys: VecDeque<String>,
    /// Bytes of results the records hold: their sum, kept so that a keyed write does not add
    /// up 10,000 records on every replica.
    #[serde(default)]
    pub(crate) idempotency_bytes: usize,
    /// Resource pools (Boskos and k8s-claimer).
    #[serde(default)]
    pub(crate) pools: Pools,
    /// Users, tenants and their objects (Axebow platform).
    #[serde(default)]
    pub(crate) platform: Platform,
    /// Krake's roles and role bindings.
    #[serde(default)]
    pub(crate) krake: crate::krake::KrakeStore,
    /// The latest leader time applied; time never runs backwards across leaders.
    #[serde(default)]
    pub(crate) clock_ms: u64,
    /// The revision of the last applied proposal: every proposal gets its own, larger than any
    /// before it and at least its log index (a batch puts several proposals in one entry).
    /// Resource versions, fencing tokens and watch positions are revisions.
    #[serde(default)]
    pub(crate) revision: u64,
    /// Users' changes, for operators.
    #[serde(default)]
    pub(crate) audit: crate::audit::AuditLog,
    /// Raised by every restore of a snapshot; the first part of the fence agents keep, so a
    /// cluster restored from another one's state outranks the old one's leaders.
    #[serde(default)]
    pub(crate) epoch: u64,
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

    /// Krake's roles and role bindings.
    pub fn krake(&self) -> &crate::krake::KrakeStore {
        &self.krake
    }

    /// Number of stored objects.
    pub fn object_count(&self) -> usize {
        self.objects.len()
    }

    /// Whether the state holds anything users made: lease objects, users, pool resources.
    pub fn holds_anything(&self) -> bool {
        !self.objects.is_empty() || self.platform.users().next().is_some() || !self.pools.resources.is_empty()
    }

    /// The audit log.
    pub fn audit(&self) -> &crate::audit::AuditLog {
        &self.audit
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::command::{Command, Precondition, Proposal};
    use crate::error::DomainError;
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
    use crate::command::{Command, Proposal};
    use crate::error::DomainError;
    use crate::object::{CoordinationLeaseSpec, LeaseSpec};
    use crate::platform::error::PlatformError;
    use crate::platform::identity::Identity;
    use crate::platform::{PlatformCommand, PlatformOp};
    use crate::platform::{TenantSpec, UserProfile};

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
