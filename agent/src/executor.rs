//! The one seam between shared code (API, fencing, validation, persistence) and what actually
//! runs instances: `exec` runs child processes ([`crate::exec`]), `sim` pretends
//! ([`crate::sim`]). An executor reports what it observes into the shared run records.

use drover_model::cluster::agent_api::{InstanceId, InstanceSpec, Resources};
use futures::future::BoxFuture;

use crate::error::AgentError;
use crate::memory::Run;

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
    /// Why the machine is under pressure, if it is.
    pub pressure: Option<String>,
}

/// Runs instances.
pub trait Executor: Send + Sync {
    /// `exec` or `sim`.
    fn kind(&self) -> &'static str;

    /// The machine now.
    fn machine(&self) -> Machine;

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
