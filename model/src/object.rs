//! Stored objects: Kubernetes-style lease objects with their metadata, keyed by kind, namespace
//! and name.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

/// The kinds of object Drover stores today.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum ObjectKind {
    /// `coordination.k8s.io/v1` `Lease`.
    CoordinationLease,
    /// `akka.io/v1` `Lease` (the Akka Kubernetes Lease custom resource).
    AkkaLease,
}

impl ObjectKind {
    /// Every kind, in a stable order.
    pub const ALL: [ObjectKind; 2] = [ObjectKind::CoordinationLease, ObjectKind::AkkaLease];

    /// The API group the kind is served under.
    pub fn group(self) -> &'static str {
        match self {
            ObjectKind::CoordinationLease => "coordination.k8s.io",
            ObjectKind::AkkaLease => "akka.io",
        }
    }

    /// `group/version`, as Kubernetes writes `apiVersion`.
    pub fn api_version(self) -> &'static str {
        match self {
            ObjectKind::CoordinationLease => "coordination.k8s.io/v1",
            ObjectKind::AkkaLease => "akka.io/v1",
        }
    }

    /// The Kubernetes `kind` of one object.
    pub fn kind_name(self) -> &'static str {
        "Lease"
    }

    /// The lower-case plural resource name used in paths.
    pub fn plural(self) -> &'static str {
        "leases"
    }
}

impl fmt::Display for ObjectKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.plural(), self.group())
    }
}

/// Identifies one stored object.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct ObjectKey {
    /// The object's kind.
    pub kind: ObjectKind,
    /// The namespace the object lives in.
    pub namespace: String,
    /// The object's name, unique within kind and namespace.
    pub name: String,
}

impl ObjectKey {
    /// Builds a key.
    pub fn new(kind: ObjectKind, namespace: impl Into<String>, name: impl Into<String>) -> Self {
        Self {
            kind,
            namespace: namespace.into(),
            name: name.into(),
        }
    }
}

impl fmt::Display for ObjectKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}/{}", self.kind, self.namespace, self.name)
    }
}

/// The metadata every stored object carries, as Kubernetes shapes it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ObjectMeta {
    /// Unique id given at creation; a re-created object gets a new one.
    pub uid: String,
    /// Log index of the object's last change; the compare-and-set version.
    pub resource_version: u64,
    /// Log index of the object's creation.
    pub created_index: u64,
    /// RFC 3339 creation time, chosen by the proposing node.
    pub creation_timestamp: String,
    /// User labels.
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
    /// User annotations.
    #[serde(default)]
    pub annotations: BTreeMap<String, String>,
}

/// `coordination.k8s.io/v1` `LeaseSpec`; times are kept exactly as the client sent them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CoordinationLeaseSpec {
    /// Identity of the current holder.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub holder_identity: Option<String>,
    /// How long a holder may go without renewing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lease_duration_seconds: Option<i32>,
    /// When the current holder acquired the lease (MicroTime).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub acquire_time: Option<String>,
    /// When the current holder last renewed the lease (MicroTime).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub renew_time: Option<String>,
    /// How many times the holder changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lease_transitions: Option<i32>,
    /// The holder a coordinated leader election prefers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preferred_holder: Option<String>,
    /// Coordinated leader election strategy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub strategy: Option<String>,
}

/// `akka.io/v1` `LeaseSpec`: `owner` empty means free; `time` is absolute (ticks or epoch).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AkkaLeaseSpec {
    /// The holder, empty when free.
    #[serde(default)]
    pub owner: String,
    /// The client's own version string.
    #[serde(default)]
    pub version: String,
    /// Last heartbeat time, absolute, in the client's unit.
    #[serde(default)]
    pub time: i64,
}

/// The spec of a stored object, one variant per kind.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum LeaseSpec {
    /// Spec of a `coordination.k8s.io/v1` lease.
    Coordination(CoordinationLeaseSpec),
    /// Spec of an `akka.io/v1` lease.
    Akka(AkkaLeaseSpec),
}

impl LeaseSpec {
    /// The kind this spec belongs to.
    pub fn kind(&self) -> ObjectKind {
        match self {
            LeaseSpec::Coordination(_) => ObjectKind::CoordinationLease,
            LeaseSpec::Akka(_) => ObjectKind::AkkaLease,
        }
    }
}

/// One object as the state machine holds it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredObject {
    /// Kind, namespace and name.
    pub key: ObjectKey,
    /// Server-managed and user metadata.
    pub meta: ObjectMeta,
    /// The desired state the client wrote.
    pub spec: LeaseSpec,
}

fn strings_bytes<'a>(strings: impl IntoIterator<Item = &'a String>) -> usize {
    strings.into_iter().map(String::len).sum()
}

impl LeaseSpec {
    /// Bytes of text the spec holds (its numbers count as 8 each).
    pub fn approx_bytes(&self) -> usize {
        match self {
            LeaseSpec::Coordination(spec) => {
                let texts = [
                    &spec.holder_identity,
                    &spec.acquire_time,
                    &spec.renew_time,
                    &spec.preferred_holder,
                    &spec.strategy,
                ];
                texts
                    .iter()
                    .filter_map(|t| t.as_ref())
                    .map(String::len)
                    .sum::<usize>()
                    + 16
            }
            LeaseSpec::Akka(spec) => spec.owner.len() + spec.version.len() + 8,
        }
    }
}

/// An object's size as the limits count it: its name, labels, annotations and spec (an upper
/// bound of what it takes in memory and on the wire, within a small constant).
pub fn approx_object_bytes(
    key: &ObjectKey,
    labels: &BTreeMap<String, String>,
    annotations: &BTreeMap<String, String>,
    spec: &LeaseSpec,
) -> usize {
    key.namespace.len()
        + key.name.len()
        + strings_bytes(labels.keys().chain(labels.values()))
        + strings_bytes(annotations.keys().chain(annotations.values()))
        + spec.approx_bytes()
}

impl StoredObject {
    /// [`approx_object_bytes`] of this object plus its metadata.
    pub fn approx_bytes(&self) -> usize {
        approx_object_bytes(&self.key, &self.meta.labels, &self.meta.annotations, &self.spec)
            + self.meta.uid.len()
            + self.meta.creation_timestamp.len()
            + 64
    }
}
