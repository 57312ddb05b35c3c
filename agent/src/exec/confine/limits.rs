//! What one instance's cgroup is limited to, from what it requested.

use drover_model::cluster::agent_api::Resources;

/// What one instance's cgroup is limited to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Memory, in bytes (none when the instance asks for no memory).
    pub memory_bytes: Option<u64>,
    /// CPU, in thousandths of a CPU (none when it asks for no CPU).
    pub cpu_millis: Option<u64>,
    /// Processes and threads.
    pub pids: Option<u64>,
}

impl Limits {
    /// The limits of an instance requesting `resources`, with at most `pids` processes.
    pub fn of(resources: Resources, pids: u64) -> Limits {
        Limits {
            memory_bytes: (resources.memory_mib > 0).then(|| resources.memory_mib.saturating_mul(1 << 20)),
            cpu_millis: (resources.cpu_millis > 0).then_some(resources.cpu_millis),
            pids: Some(pids),
        }
    }
}
