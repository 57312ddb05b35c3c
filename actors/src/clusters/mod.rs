//! The leader's cluster actors: one [`ClustersSupervisor`] under the root keeps one
//! [`ClusterActor`](cluster_actor::ClusterActor) per registered cluster. A cluster actor is the
//! only path through which the control plane changes what a cluster runs: it probes the agent
//! through a [`Driver`], moves the cluster through Krake's states ([`lifecycle`]), reads the
//! metrics it is scored on, sends the committed desired sets ([`plan`]) fenced by (term, leader
//! id) to an agent no other cluster drives ([`identity`]), and commits what it observed.

mod agent_driver;
mod child;
mod cluster_actor;
mod driver;
pub mod identity;
pub mod lifecycle;
mod metrics_reader;
pub mod observed;
pub mod plan;
mod supervisor;
mod usage;

use std::sync::Arc;
use std::time::Duration;

use prometheus::{
    Histogram, HistogramOpts, IntCounter, IntCounterVec, IntGauge, IntGaugeVec, Opts, Registry,
};

pub use agent_driver::{AgentDriver, ClientIdentity};
pub use child::ClustersChild;
pub use driver::{bounded, Driver, DriverError};
pub use observed::{Observation, Observations, ObservedSets, SetInstances};
pub use supervisor::ClustersSupervisor;

use crate::ActorsError;

/// Builds the driver of a cluster from its committed endpoint and join token.
pub type DriverFactory =
    Arc<dyn Fn(&drover_model::cluster::AgentAccess) -> Result<Arc<dyn Driver>, DriverError> + Send + Sync>;

/// Settings of the cluster actors.
#[derive(Debug, Clone)]
pub struct ClusterActorsConfig {
    /// Time between the end of one probe of an agent and the start of the next.
    pub probe_interval: Duration,
    /// A probe (each call to the agent) gives up after this long, or sooner when the offline
    /// budget runs out.
    pub probe_timeout: Duration,
    /// A call that changes what runs (a desired set, a restart, the fence) gives up after this
    /// long: the agent answers once removed instances have stopped (up to its stop grace).
    pub apply_timeout: Duration,
    /// A cluster whose agent has not answered for this long (since its last answer, or since
    /// the actor started) is `OFFLINE` (`DEGRADED` before), judged when the time is up.
    pub offline_after: Duration,
    /// How often the supervisor compares its actors with the committed clusters.
    pub sync_interval: Duration,
    /// How often a cluster's metrics are read from their providers.
    pub metrics_interval: Duration,
    /// What the control plane presents to agents that require a client certificate.
    pub client_identity: agent_driver::ClientIdentity,
    /// Where metrics providers may be called (the operator's egress policy).
    pub egress: std::sync::Arc<drover_model::egress::EgressPolicy>,
}

impl Default for ClusterActorsConfig {
    fn default() -> Self {
        Self {
            probe_interval: Duration::from_secs(1),
            probe_timeout: Duration::from_secs(2),
            apply_timeout: Duration::from_secs(30),
            offline_after: Duration::from_secs(10),
            sync_interval: Duration::from_millis(500),
            metrics_interval: Duration::from_secs(10),
            client_identity: agent_driver::ClientIdentity::none(),
            egress: Default::default(),
        }
    }
}

/// Metrics of the cluster actors.
#[derive(Clone)]
pub struct ClusterActorMetrics {
    pub(crate) actors: IntGauge,
    pub(crate) restarts: IntCounter,
    pub(crate) clusters: IntGaugeVec,
    pub(crate) transitions: IntCounterVec,
    pub(crate) probe_seconds: Histogram,
    pub(crate) driver_calls: IntCounterVec,
}

impl ClusterActorMetrics {
    /// Creates and registers the metrics.
    pub fn register(registry: &Registry) -> Result<Self, ActorsError> {
        let actors = IntGauge::new(
            "drover_cluster_actors",
            "Cluster actors running on this node (the leader)",
        )?;
        let restarts = IntCounter::new(
            "drover_cluster_actor_restarts_total",
            "Cluster actors started again after they failed",
        )?;
        let clusters = IntGaugeVec::new(
            Opts::new(
                "drover_clusters",
                "Registered clusters by committed state (leader only)",
            ),
            &["state"],
        )?;
        let transitions = IntCounterVec::new(
            Opts::new(
                "drover_cluster_transitions_total",
                "Cluster state changes this node committed",
            ),
            &["from", "to"],
        )?;
        let probe_seconds = Histogram::with_opts(
            HistogramOpts::new(
                "drover_cluster_probe_seconds",
                "Time of one probe of an agent (facts, inventory and any desired sets sent)",
            )
            .buckets(vec![0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1.0, 2.5, 5.0]),
        )?;
        let driver_calls = IntCounterVec::new(
            Opts::new(
                "drover_cluster_driver_calls_total",
                "Mutating calls to clusters by call and outcome",
            ),
            &["call", "outcome"],
        )?;
        registry.register(Box::new(actors.clone()))?;
        registry.register(Box::new(restarts.clone()))?;
        registry.register(Box::new(clusters.clone()))?;
        registry.register(Box::new(transitions.clone()))?;
        registry.register(Box::new(probe_seconds.clone()))?;
        registry.register(Box::new(driver_calls.clone()))?;
        Ok(Self {
            actors,
            restarts,
            clusters,
            transitions,
            probe_seconds,
            driver_calls,
        })
    }
}
