//! The cluster API between the control plane and a `drover agent`: the JSON both sides speak.
//!
//! The control plane sends *whole desired sets*: every instance of one set (a service, later)
//! at once, each with a deterministic [`InstanceId`], so resending a set changes nothing and a
//! new leader can resend everything. Every mutating call carries a [`Fence`]; the agent keeps
//! the highest it has seen and refuses older ones.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::pod::{PodReport, PodSpec};
pub use super::resources::Resources;

/// Longest instance or set id: a DNS subdomain, so it can name a directory, a container or a
/// Kubernetes object.
pub const MAX_ID_LEN: usize = 253;

/// Most instances one desired set may hold.
pub const MAX_SET_INSTANCES: usize = 10_000;

/// The control plane's fence: the replicated state's epoch (raised by every restore of a
/// snapshot, so a cluster restored from another one outranks it although its Raft terms start
/// again from 1), the Raft term its leader was elected in and that leader's node id. Ordered by
/// epoch, then term, then leader, so the agent can keep the highest.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, ToSchema,
)]
pub struct Fence {
    /// The state's epoch (0 until a snapshot is restored; absent from older agents' files).
    #[serde(default)]
    pub epoch: u64,
    /// Raft term of the leader that sent the call.
    pub term: u64,
    /// Node id of that leader.
    pub leader: u64,
}

impl Fence {
    /// The fence of `leader` elected in `term`, in epoch 0.
    pub fn new(term: u64, leader: u64) -> Self {
        Self {
            epoch: 0,
            term,
            leader,
        }
    }

    /// The same fence in `epoch`.
    pub fn in_epoch(self, epoch: u64) -> Self {
        Self { epoch, ..self }
    }
}

impl fmt::Display for Fence {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.epoch > 0 {
            write!(f, "epoch {} ", self.epoch)?;
        }
        write!(f, "term {} (leader {})", self.term, self.leader)
    }
}

/// Why an id is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0:?} is not a valid id: use 1 to 253 lowercase letters, digits, '-' and '.', starting and ending with a letter or digit")]
pub struct BadId(pub String);

fn check_id(text: &str) -> Result<(), BadId> {
    let ok = !text.is_empty()
        && text.len() <= MAX_ID_LEN
        && text
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.')
        && text.starts_with(|c: char| c.is_ascii_alphanumeric())
        && text.ends_with(|c: char| c.is_ascii_alphanumeric())
        && !text.contains("..");
    if ok {
        Ok(())
    } else {
        Err(BadId(text.to_string()))
    }
}

/// The id of one instance: deterministic from service, revision, role and ordinal, so every
/// leader derives the same id for the same instance.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, ToSchema)]
#[serde(try_from = "String", into = "String")]
#[schema(value_type = String)]
pub struct InstanceId(String);

impl InstanceId {
    /// The id of ordinal `ordinal` of `role` in `revision` of `service`:
    /// `{service}.{role}.r{revision}.{ordinal}`.
    pub fn derive(service: &str, revision: u64, role: &str, ordinal: u32) -> Result<Self, BadId> {
        Self::try_from(format!("{service}.{role}.r{revision}.{ordinal}"))
    }

    /// Checks a received id.
    pub fn parse(text: &str) -> Result<Self, BadId> {
        check_id(text)?;
        Ok(Self(text.to_string()))
    }

    /// The id as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl TryFrom<String> for InstanceId {
    type Error = BadId;
    fn try_from(text: String) -> Result<Self, BadId> {
        check_id(&text)?;
        Ok(Self(text))
    }
}

impl From<InstanceId> for String {
    fn from(id: InstanceId) -> String {
        id.0
    }
}

impl fmt::Display for InstanceId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The name of one desired set (one service's instances on this agent).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, ToSchema)]
#[serde(try_from = "String", into = "String")]
#[schema(value_type = String)]
pub struct SetName(String);

impl SetName {
    /// Checks a received set name.
    pub fn parse(text: &str) -> Result<Self, BadId> {
        check_id(text)?;
        Ok(Self(text.to_string()))
    }

    /// The name as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl TryFrom<String> for SetName {
    type Error = BadId;
    fn try_from(text: String) -> Result<Self, BadId> {
        check_id(&text)?;
        Ok(Self(text))
    }
}

impl From<SetName> for String {
    fn from(name: SetName) -> String {
        name.0
    }
}

impl fmt::Display for SetName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A readiness probe: the instance is `healthy` once it answers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Probe {
    /// An HTTP GET on 127.0.0.1 that answers 2xx or 3xx.
    Http {
        /// Port on 127.0.0.1.
        port: u16,
        /// Path, starting with `/`.
        #[serde(default = "default_probe_path")]
        path: String,
    },
    /// A TCP connection to 127.0.0.1 that is accepted.
    Tcp {
        /// Port on 127.0.0.1.
        port: u16,
    },
}

fn default_probe_path() -> String {
    "/".to_string()
}

/// What to run: a program and its arguments, and the files it needs. The `exec` executor runs
/// it as a child process in its own process group, in a working directory under the agent's
/// data directory into which it writes `files` before every start; the `sim` executor only
/// pretends.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ExecSpec {
    /// Program (looked up in `PATH` when it has no `/`) and arguments.
    pub argv: Vec<String>,
    /// Readiness probe, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probe: Option<Probe>,
    /// Text files written into the instance's working directory before each start, by their
    /// path relative to it (a component's files, from a bundle or a marketplace module).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub files: BTreeMap<String, String>,
    /// A pod of container images to run instead of a program (`argv` and `files` empty): only
    /// a `container` agent runs it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod: Option<PodSpec>,
}

/// One instance the control plane wants running.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct InstanceSpec {
    /// Deterministic id ([`InstanceId::derive`]).
    pub id: InstanceId,
    /// What to run.
    pub exec: ExecSpec,
    /// What it needs of the agent's capacity.
    #[serde(default)]
    pub resources: Resources,
    /// Environment variables (the instance sees only these, plus `PATH`, `HOME` and
    /// `DROVER_INSTANCE_ID`).
    #[serde(default)]
    pub env: BTreeMap<String, String>,
}

/// `PUT /v1/sets/{set}`: the whole desired set; an empty list removes the set.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct DesiredSet {
    /// Who sends it.
    pub fence: Fence,
    /// Every instance of the set.
    pub instances: Vec<InstanceSpec>,
}

/// The body of a mutating call that carries nothing but its fence (restart).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Fenced {
    /// Who sends it.
    pub fence: Fence,
}

/// Where an instance is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum InstanceState {
    /// Started, not yet ready (or waiting to be restarted after a backoff).
    Starting,
    /// Running (and ready, when it has a probe).
    Running,
    /// Ended with exit code 0 and is not restarted.
    Exited,
    /// Ended otherwise; restarted after a backoff.
    Failed,
}

/// What the readiness probe last said.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Health {
    /// No probe, or none answered yet.
    Unknown,
    /// The probe answered.
    Healthy,
    /// The probe failed after the instance had been healthy, or never answered.
    Unhealthy,
}

/// One instance as the agent observes it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct InstanceStatus {
    /// The instance's id.
    pub id: InstanceId,
    /// The set it belongs to.
    pub set: SetName,
    /// Where it is in its life.
    pub state: InstanceState,
    /// Exit code of its last run, when it ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    /// How many times it was started again after it ended or was restarted.
    pub restarts: u32,
    /// RFC 3339 start time of its current run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_at: Option<String>,
    /// What the readiness probe last said.
    pub health: Health,
    /// Process id of its current run (`exec` only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
    /// Its resource requests.
    pub resources: Resources,
    /// Why its last run ended, when the agent knows more than the exit code.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<EndReason>,
    /// Runs killed at their memory limit, since the instance came to this agent.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub oom_kills: u32,
    /// Its pod's address and containers, for an instance that is a pod.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod: Option<PodReport>,
    /// What it uses now, sampled when the inventory was answered (`exec` only; not covered by
    /// the inventory's generation).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// Why a run ended, beyond its exit code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub enum EndReason {
    /// Killed by the kernel at the instance's memory limit.
    #[serde(rename = "OOMKilled")]
    OomKilled,
    /// The agent could not start it (its program cannot be run, its directory or cgroup
    /// cannot be made ready): the instance's log says why. Kubernetes' name for a container
    /// whose start failed.
    StartError,
}

impl EndReason {
    /// The name Kubernetes gives it.
    pub fn as_str(self) -> &'static str {
        match self {
            EndReason::OomKilled => "OOMKilled",
            EndReason::StartError => "StartError",
        }
    }
}

/// What an instance uses, from its cgroup (or from `/proc` for an unconfined one).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct Usage {
    /// CPU time of every process it ran in this cgroup, in milliseconds (user and system).
    pub cpu_time_ms: u64,
    /// Resident memory of its processes now, in bytes (the sum of their `VmRSS`).
    pub memory_bytes: u64,
    /// The memory limit it runs under, in bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_limit_bytes: Option<u64>,
    /// The CPU quota it runs under, in thousandths of a CPU.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_quota_millis: Option<u64>,
    /// Processes in it now.
    pub processes: u32,
}

/// How an agent confines its instances.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "kebab-case", tag = "mode")]
pub enum Confinement {
    /// Each instance in a cgroup of its own (v1 controllers).
    CgroupV1,
    /// Each instance in a cgroup of its own (the unified hierarchy).
    CgroupV2,
    /// Not confined: the machine's cgroups cannot be written and the operator allowed it
    /// (`--allow-unconfined`).
    Unconfined {
        /// Why cgroups could not be used.
        reason: String,
    },
    /// Simulated instances.
    Simulated,
}

/// `GET /v1/inventory`: everything the agent runs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct Inventory {
    /// The agent's name.
    pub agent: String,
    /// The highest fence the agent has accepted.
    pub fence: Fence,
    /// Every instance, ordered by id.
    pub instances: Vec<InstanceStatus>,
    /// The agent's generation when it answered (see [`NodeFacts::generation`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generation: Option<u64>,
}

/// `GET /v1/facts`: the agent's machine.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct NodeFacts {
    /// The agent's name.
    pub agent: String,
    /// `exec` or `sim`.
    pub executor: String,
    /// Number of (simulated) machines behind the agent: 1 for `exec`.
    pub nodes: u32,
    /// CPUs of the machine(s).
    pub cpus: u32,
    /// Memory of the machine(s) in MiB.
    pub memory_mib: u64,
    /// Labels from the agent's configuration.
    pub labels: BTreeMap<String, String>,
    /// What instances may request in all.
    pub capacity: Resources,
    /// Capacity less the requests of every desired instance.
    pub free: Resources,
    /// Why the agent is under pressure (memory, disk), if it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pressure: Option<String>,
    /// What its instances use now, summed: CPU over the time since the facts were last
    /// answered (thousandths of a CPU) and resident memory (MiB). Absent where not measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub used: Option<Resources>,
    /// How its instances are confined (absent from agents older than confinement).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confinement: Option<Confinement>,
    /// Agent version.
    pub version: String,
    /// A number that grows with every change of what the agent's inventory shows (a set, an
    /// instance's state, the fence) and with nothing else, so that a reader who holds an
    /// inventory answered at the same generation knows it is still exact without reading it
    /// again. It starts again when the agent restarts (compare it only with answers of the
    /// same agent process: an inventory's generation together with its agent's name and
    /// fence).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generation: Option<u64>,
}

/// `PUT /v1/sim/faults` (sim executor only): switches for fault tests.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SimFaults {
    /// Every route but this one answers `503`, as if the cluster could not be reached.
    #[serde(default)]
    pub unreachable: bool,
    /// Applying a desired set takes this much longer.
    #[serde(default)]
    pub slow_apply_ms: u64,
    /// Report this as the agent's pressure.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pressure: Option<String>,
    /// Crash these instances once now (each fails with exit code 137 and is restarted).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub crash: Vec<InstanceId>,
}

/// The JSON body of every refusal: `{"error": "..."}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct AgentError {
    /// What went wrong and what to fix.
    pub error: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn instance_ids_are_deterministic_and_checked() {
        let id = InstanceId::derive("web", 3, "frontend", 1).unwrap();
        assert_eq!(id.as_str(), "web.frontend.r3.1");
        assert_eq!(id, InstanceId::derive("web", 3, "frontend", 1).unwrap());
        assert!(InstanceId::derive("Web", 3, "frontend", 1).is_err());
        assert!(InstanceId::parse("../etc").is_err());
        assert!(InstanceId::parse("a..b").is_err());
        assert!(InstanceId::parse(&"a".repeat(254)).is_err());
        assert!(serde_json::from_str::<InstanceId>("\"x/y\"").is_err());
    }

    #[test]
    fn fences_order_by_epoch_then_term_then_leader() {
        let older = Fence::new(3, 9);
        let newer = Fence::new(4, 1);
        assert!(older < newer);
        assert_eq!(newer.to_string(), "term 4 (leader 1)");
        // A restored cluster starts its terms again, in a higher epoch.
        let restored = Fence::new(1, 1).in_epoch(1);
        assert!(newer < restored);
        assert_eq!(restored.to_string(), "epoch 1 term 1 (leader 1)");
        // An agent's file written before epochs existed reads as epoch 0.
        let old: Fence = serde_json::from_str(r#"{"term": 7, "leader": 2}"#).unwrap();
        assert_eq!(old, Fence::new(7, 2));
    }

    #[test]
    fn resources_add_subtract_and_fit() {
        let cap = Resources {
            cpu_millis: 1000,
            memory_mib: 512,
        };
        let req = Resources {
            cpu_millis: 600,
            memory_mib: 100,
        };
        assert!(cap.fits(req));
        assert!(!cap.minus(req).fits(req));
        assert_eq!(cap.minus(req).plus(req), cap);
    }
}

/// Response header of every log read: where a follower's next read of new output starts
/// (`from`), a byte offset into the instance's current log file.
pub const LOG_OFFSET_HEADER: &str = "x-drover-log-offset";

/// Most bytes one `from` read returns; a follower catches up over several reads.
pub const MAX_LOG_READ: u64 = 1024 * 1024;

/// Which part of an instance's log to read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LogQuery {
    /// The last lines (the agent's default when unset).
    pub tail: Option<u32>,
    /// Skip files last written before this RFC 3339 time.
    pub since: Option<String>,
    /// Instead of a tail: what was written from this offset on (a previous read's
    /// [`LogChunk::next`]); output rotated away meanwhile is read from the rotated file.
    pub from: Option<u64>,
}

/// A piece of an instance's log.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LogChunk {
    /// The lines, as the instance wrote them.
    pub text: String,
    /// Where the next read of new output starts (`from`), when the agent says.
    pub next: Option<u64>,
}
