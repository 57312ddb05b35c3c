//! The one seam between shared code (API, fencing, validation, persistence) and what actually
//! runs instances: `exec` runs child processes ([`crate::exec`]), `sim` pretends
//! ([`crate::sim`]). An executor reports what it observes into the shared run records.

use drover_model::cluster::agent_api::{Confinement, InstanceId, InstanceSpec, Resources, Usage};
use futures::future::BoxFuture;
use tokio::sync::oneshot;

use crate::error::AgentError;
use crate::memory::Run;

/// A command to an instance's supervisor task (each executor runs one per instance).
#[derive(Debug)]
pub enum Cmd {
    /// Stop the instance (and with `forget`, delete its files); answer when it is gone.
    Stop {
        /// Whether the instance leaves the agent.
        forget: bool,
        /// Answered when done.
        done: oneshot::Sender<()>,
    },
    /// Stop it and start it again, counting a restart; answer when it is started.
    Restart {
        /// Answered when done.
        done: oneshot::Sender<()>,
    },
}

/// One instance for an executor to run.
#[derive(Debug, Clone)]
pub struct Launch {
    /// What to run.
    pub spec: InstanceSpec,
    /// The entry's epoch, to tag reports with.
    pub epoch: u64,
    /// Its run record: fresh for a new instance; for one loaded at start-up, what was recorded
    /// (an `exec` process to adopt, an instance that exited and stays so).
    pub run: Run,
}

/// The machine (or simulated machines) behind the agent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Machine {
    /// Number of machines.
    pub nodes: u32,
    /// CPUs in all.
    pub cpus: u32,
    /// Memory in all, MiB.
    pub memory_mib: u64,
    /// Capacity unless configured otherwise.
    pub capacity: Resources,
    /// Whether a configured capacity may not exceed `capacity` (a real machine less the
    /// agent's reserve); simulated machines take any.
    pub capacity_is_ceiling: bool,
    /// Why the machine is under pressure, if it is.
    pub pressure: Option<String>,
}

impl Machine {
    /// The capacity offered to instances: what is configured (`cpu_millis`, `memory_mib`),
    /// else the machine's, never above the machine's when that is a ceiling.
    pub fn offered(&self, cpu_millis: Option<u64>, memory_mib: Option<u64>) -> Resources {
        let chosen = Resources {
            cpu_millis: cpu_millis.unwrap_or(self.capacity.cpu_millis),
            memory_mib: memory_mib.unwrap_or(self.capacity.memory_mib),
        };
        if !self.capacity_is_ceiling {
            return chosen;
        }
        Resources {
            cpu_millis: chosen.cpu_millis.min(self.capacity.cpu_millis),
            memory_mib: chosen.memory_mib.min(self.capacity.memory_mib),
        }
    }
}

/// The usage of every instance summed: CPU time so far (milliseconds) and resident memory now
/// (bytes).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct UsageTotal {
    /// CPU time of the instances so far, in milliseconds.
    pub cpu_time_ms: u64,
    /// Their resident memory now, in bytes.
    pub memory_bytes: u64,
}

/// Runs instances.
pub trait Executor: Send + Sync {
    /// `exec` or `sim`.
    fn kind(&self) -> &'static str;

    /// The machine now.
    fn machine(&self) -> Machine;

    /// How the instances are confined.
    fn confinement(&self) -> Confinement;

    /// What instance `id` uses now (its current run's leader is `pid`), where measured.
    fn usage(&self, id: &InstanceId, pid: Option<u32>) -> Option<Usage> {
        let _ = (id, pid);
        None
    }

    /// What every instance uses now, summed, where measured.
    fn usage_total(&self) -> Option<UsageTotal> {
        None
    }

    /// Starts running `launches` (returns at once; progress shows in the run records).
    fn start(&self, launches: Vec<Launch>);

    /// Stops `ids`; resolves when they are gone. With `forget` the instances leave the agent
    /// and their files (working directory, logs) go too; without, they are about to be started
    /// again with a new spec.
    fn stop(&self, ids: Vec<InstanceId>, forget: bool) -> BoxFuture<'static, ()>;

    /// Stops `id` and starts it again, counting a restart; resolves when it is started again.
    fn restart(&self, id: InstanceId) -> BoxFuture<'static, ()>;

    /// Fails `ids` once now (the `crash` sim fault).
    fn crash(&self, ids: Vec<InstanceId>) -> Result<(), AgentError> {
        let _ = ids;
        Err(AgentError::NotFound(format!(
            "faults can only be injected into a sim agent; this agent's executor is {}",
            self.kind()
        )))
    }
}
