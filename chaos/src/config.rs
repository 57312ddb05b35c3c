//! What one chaos run is asked to do: its seed, length, workloads, faults and cluster size.
//! The runner carries it out and the report records it.

use std::time::Duration;

use crate::faults;

/// What one run does.
#[derive(Debug, Clone)]
pub struct RunConfig {
    /// Everything random derives from it.
    pub seed: u64,
    /// How long the workload runs.
    pub duration: Duration,
    /// Concurrent clients.
    pub clients: usize,
    /// Register keys.
    pub keys: usize,
    /// Concurrent Boskos clients contending for the pool.
    pub pool_clients: usize,
    /// Fault kinds to draw from; none for a fault-free run.
    pub faults: Vec<faults::FaultKind>,
    /// Cluster size: three or five nodes.
    pub nodes: u64,
    /// Concurrent clients of the services workload (none: no agent, no services).
    pub service_clients: usize,
}
