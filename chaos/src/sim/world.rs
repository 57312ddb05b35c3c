//! What every simulated host agrees on: the nodes' host names and the simulated time.

use drover_raft::NodeId;

/// The host name (and peer address) of node `id`.
pub fn host_name(id: NodeId) -> String {
    format!("node-{id}")
}

/// Microseconds of simulated time.
pub fn now_us() -> u64 {
    turmoil::sim_elapsed().map_or(0, |d| u64::try_from(d.as_micros()).unwrap_or(u64::MAX))
}
