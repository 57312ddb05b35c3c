//! Test harness: starts real Drover clusters on `127.0.0.1:0` ports with temporary data
//! directories, in-process ([`cluster::TestCluster`]) or as separate `drover` processes that can
//! be killed with SIGKILL ([`process::ProcessCluster`]), and waits on conditions with deadlines.

pub mod agent;
pub mod boskos;
pub mod browser;
pub mod bundles;
pub mod client;
pub mod cluster;
pub mod containers;
pub mod krake;
pub mod krake_calls;
pub mod netns;
pub mod platform;
pub mod process;
pub mod prometheus;
pub mod services;
pub mod status;
pub mod tls;
pub mod wait;
pub mod writers;

/// The cluster secret every test cluster uses.
pub const TEST_SECRET: &str = "drover-test-cluster-secret";
pub mod verdaccio;
