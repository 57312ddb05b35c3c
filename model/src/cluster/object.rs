//! A workload cluster as the control plane stores it: where its agent listens, the secret it
//! joins with, its labels, the desired sets pinned to it, and what its cluster actor last
//! observed (state, capacity, instance counts, the recent transitions).
//!
//! Clusters belong to a tenant. Platform-wide clusters belong to the operator tenant and are
//! registered by operators; a tenant's admins register the tenant's own.

use std::collections::{BTreeMap, VecDeque};
use std::fmt;

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::agent_api::{ExecSpec, InstanceId, Resources, SetName, MAX_SET_INSTANCES};
use crate::scheduling::metrics::{MetricReadings, MetricRef};

/// How many transitions a cluster keeps on its object.
pub const EVENTS_KEPT: usize = 32;

/// Longest join token.
pub const MAX_JOIN_TOKEN_LEN: usize = 4096;

/// The typed id of a cluster: its tenant and its name.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, ToSchema)]
pub struct ClusterRef {
    /// Owning tenant (`operator` for platform-wide clusters).
    pub tenant: String,
    /// Name within the tenant.
    pub name: String,
}

impl fmt::Display for ClusterRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.tenant, self.name)
    }
}

/// Krake's cluster states, as far as an agent-backed cluster has them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ClusterState {
    /// Registered; its actor has not reached the agent yet.
    Pending,
    /// The agent answers and reports no pressure.
    Online,
    /// The agent missed probes, within the backoff budget.
    Degraded,
    /// The agent missed probes beyond the budget.
    Offline,
    /// The agent answers again after being offline; one more good probe makes it online.
    Connecting,
    /// The agent reports pressure (memory, disk).
    Unhealthy,
    /// An operator drains it: nothing new is placed there.
    #[serde(rename = "NOTREADY")]
    NotReady,
    /// The agent answers, but a metric the cluster is scored on cannot be read: nothing new is
    /// placed there until every metric is read again (what runs there stays).
    FailingMetrics,
}

impl ClusterState {
    /// Every state, for metrics.
    pub const ALL: [ClusterState; 8] = [
        ClusterState::Pending,
        ClusterState::Online,
        ClusterState::Degraded,
        ClusterState::Offline,
        ClusterState::Connecting,
        ClusterState::Unhealthy,
        ClusterState::NotReady,
        ClusterState::FailingMetrics,
    ];

    /// The name as the API spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            ClusterState::Pending => "PENDING",
            ClusterState::Online => "ONLINE",
            ClusterState::Degraded => "DEGRADED",
            ClusterState::Offline => "OFFLINE",
            ClusterState::Connecting => "CONNECTING",
            ClusterState::Unhealthy => "UNHEALTHY",
            ClusterState::NotReady => "NOTREADY",
            ClusterState::FailingMetrics => "FAILING_METRICS",
        }
    }
}

/// One committed transition.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct ClusterEvent {
    /// Leader time of the commit, ms since the epoch.
    pub at_ms: u64,
    /// State before.
    pub from: ClusterState,
    /// State after.
    pub to: ClusterState,
    /// Why.
    pub reason: String,
}

/// Instances on the cluster by state, as its agent last reported them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct InstanceCounts {
    /// Starting (or waiting to restart).
    pub starting: u32,
    /// Running.
    pub running: u32,
    /// Ended with exit code 0.
    pub exited: u32,
    /// Failed, to be restarted.
    pub failed: u32,
    /// Restarts of all instances, summed.
    pub restarts: u64,
    /// Runs killed at their memory limit, summed.
    #[serde(default)]
    pub oom_kills: u64,
}

/// What the cluster actor observed, as the cluster object shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct ClusterStatus {
    /// Current state.
    pub state: ClusterState,
    /// Why it is in that state.
    pub reason: String,
    /// When it entered that state (leader time, ms since the epoch).
    pub since_ms: u64,
    /// The agent's facts when it last answered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub facts: Option<ClusterFacts>,
    /// Instances by state.
    #[serde(default)]
    pub instances: InstanceCounts,
    /// Why the agent refused a pinned set (no room, a bad spec), by set.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    #[schema(value_type = Object)]
    pub set_errors: BTreeMap<SetName, String>,
    /// What runs of each set the agent has, as its inventory last said.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    #[schema(value_type = Object)]
    pub sets: BTreeMap<SetName, SetObservation>,
    /// The metrics it is scored on as its actor last read them, and those it could not read.
    #[serde(default)]
    pub metrics: MetricReadings,
}

/// One set as the agent reported it: enough to tell whether exactly the desired instances run,
/// without replicating every instance.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct SetObservation {
    /// Instances of the set the agent has, in any state.
    pub total: u32,
    /// Those running.
    pub running: u32,
    /// [`ids_digest`] of the running instances' ids.
    pub digest: u64,
}

/// A digest of a set of instance ids (FNV-1a over the sorted ids): equal sets of ids give equal
/// digests on every node and every run.
pub fn ids_digest<'a>(ids: impl IntoIterator<Item = &'a InstanceId>) -> u64 {
    let mut sorted: Vec<&str> = ids.into_iter().map(InstanceId::as_str).collect();
    sorted.sort_unstable();
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for id in sorted {
        for byte in id.bytes().chain(std::iter::once(b'\n')) {
            hash ^= u64::from(byte);
            hash = hash.wrapping_mul(0x0100_0000_01b3);
        }
    }
    hash
}

/// The part of an agent's facts that is replicated (changes rarely).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct ClusterFacts {
    /// Machines behind the agent.
    pub nodes: u32,
    /// What instances may request in all.
    pub capacity: Resources,
    /// Capacity less the requests of every desired instance.
    pub free: Resources,
    /// The agent's executor (`exec`, `sim`).
    pub executor: String,
    /// The agent's version.
    pub version: String,
    /// What its instances used when last committed (CPU in thousandths of a CPU, resident
    /// memory in MiB): refreshed when it moves by a tenth of the capacity, or after a minute.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub used: Option<Resources>,
    /// How the agent confines its instances.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confinement: Option<super::agent_api::Confinement>,
}

/// `POST …/cluster/{name}`: register a cluster.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ClusterRegistration {
    /// The agent's cluster API, `https://host:port` (or `http://host:port` where the nodes
    /// allow plain HTTP).
    pub endpoint: String,
    /// PEM certificate(s) of the CA that signed the agent's certificate: the control plane
    /// trusts nothing else for it. Required with an `https://` endpoint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ca: Option<String>,
    /// The agent's join token (a secret: never returned).
    pub join_token: String,
    /// Labels that environments select clusters by.
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
    /// The metrics it is scored on, each with a weight.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub metrics: Vec<MetricRef>,
}

/// `PATCH …/cluster/{name}`: what changes (anything left out stays).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ClusterPatch {
    /// New labels (replace the old ones).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub labels: Option<BTreeMap<String, String>>,
    /// New agent endpoint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub endpoint: Option<String>,
    /// New CA of the agent's certificate (PEM).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ca: Option<String>,
    /// New join token.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub join_token: Option<String>,
    /// New metrics to be scored on (replace the old ones).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metrics: Option<Vec<MetricRef>>,
}

/// `PUT …/cluster/{name}/set/{set}`: instances pinned to one cluster, the way a Nomad job
/// constrained to one node is. Instance ids are `{set}.main.r{revision}.{ordinal}`; the
/// revision rises when what runs changes (program, resources, env), not when the count does.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SetSpec {
    /// How many instances.
    pub count: u32,
    /// What each runs.
    pub exec: ExecSpec,
    /// What each needs.
    #[serde(default)]
    pub resources: Resources,
    /// Environment of each.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
}

impl SetSpec {
    /// Whether `other` runs the same thing (only the count may differ).
    pub fn same_workload(&self, other: &SetSpec) -> bool {
        self.exec == other.exec && self.resources == other.resources && self.env == other.env
    }
}

/// A set as stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct StoredSet {
    /// The spec.
    pub spec: SetSpec,
    /// Rises when the workload changes.
    pub revision: u64,
}

impl StoredSet {
    /// The ids of its instances, in ordinal order.
    pub fn instance_ids(&self, set: &SetName) -> Vec<InstanceId> {
        (0..self.spec.count.min(MAX_SET_INSTANCES as u32))
            .filter_map(|ordinal| InstanceId::derive(set.as_str(), self.revision, "main", ordinal).ok())
            .collect()
    }
}

/// How the control plane reaches an agent: its endpoint, its join token, and for an
/// `https://` endpoint the CA its certificate must chain to.
#[derive(Clone, PartialEq, Eq)]
pub struct AgentAccess {
    /// `https://host:port` or `http://host:port`.
    pub endpoint: String,
    /// The join token (a secret: never in `Debug`).
    pub token: String,
    /// PEM of the CA of the agent's certificate.
    pub ca: Option<String>,
}

impl std::fmt::Debug for AgentAccess {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentAccess")
            .field("endpoint", &self.endpoint)
            .field("token", &"<redacted>")
            .field("ca", &self.ca.as_ref().map(|_| "<pem>"))
            .finish()
    }
}

impl AgentAccess {
    /// An agent reached over plain HTTP (or one whose CA is given later).
    pub fn new(endpoint: &str, token: &str) -> Self {
        Self {
            endpoint: endpoint.to_string(),
            token: token.to_string(),
            ca: None,
        }
    }
}

/// A stored cluster.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cluster {
    /// Generated at registration; a cluster registered again under the same name is another.
    pub uid: String,
    /// The agent's cluster API.
    pub endpoint: String,
    /// The CA its certificate is checked against (`https://` endpoints).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ca: Option<String>,
    /// The agent's join token.
    pub join_token: String,
    /// Labels.
    pub labels: BTreeMap<String, String>,
    /// The metrics it is scored on.
    #[serde(default)]
    pub metrics: Vec<MetricRef>,
    /// Being drained (`NOTREADY`).
    pub draining: bool,
    /// When it was registered (leader time, ms).
    pub registered_ms: u64,
    /// What its actor last observed.
    pub status: ClusterStatus,
    /// Recent transitions, oldest first.
    pub events: VecDeque<ClusterEvent>,
    /// Desired sets pinned to it.
    pub sets: BTreeMap<SetName, StoredSet>,
    /// Instances to restart, with the leader time each was asked for; the cluster actor
    /// restarts them and clears the request.
    #[serde(default)]
    pub pending_restarts: BTreeMap<InstanceId, u64>,
}

impl Cluster {
    /// How the control plane reaches its agent.
    pub fn access(&self) -> AgentAccess {
        AgentAccess {
            endpoint: self.endpoint.clone(),
            token: self.join_token.clone(),
            ca: self.ca.clone(),
        }
    }

    /// Records a transition (keeping the last [`EVENTS_KEPT`]).
    pub fn transition(&mut self, to: ClusterState, reason: String, at_ms: u64) {
        let from = self.status.state;
        self.status.state = to;
        self.status.since_ms = at_ms;
        self.status.reason = reason.clone();
        self.events.push_back(ClusterEvent {
            at_ms,
            from,
            to,
            reason,
        });
        while self.events.len() > EVENTS_KEPT {
            self.events.pop_front();
        }
    }

    /// Removes a pinned set, its refusal and the restart requests of its instances.
    pub fn remove_set(&mut self, name: &SetName) -> Option<StoredSet> {
        let removed = self.sets.remove(name)?;
        self.status.set_errors.remove(name);
        for id in removed.instance_ids(name) {
            self.pending_restarts.remove(&id);
        }
        Some(removed)
    }

    /// Whether `id` is an instance of one of its pinned sets.
    pub fn pins(&self, id: &InstanceId) -> bool {
        self.sets
            .iter()
            .any(|(name, set)| set.instance_ids(name).contains(id))
    }

    /// Requests of every pinned instance, summed.
    pub fn requested(&self) -> Resources {
        self.sets.values().fold(Resources::default(), |sum, set| {
            sum.plus(set.spec.resources.times(set.spec.count))
        })
    }
}
