//! Prometheus metrics of the actor trees.

use prometheus::{IntCounter, IntCounterVec, IntGauge, Opts, Registry};

use crate::ActorsError;

/// Counters and gauges of the gate and the root supervisor.
#[derive(Clone)]
pub(crate) struct ActorMetrics {
    pub(crate) root_running: IntGauge,
    pub(crate) root_starts: IntCounter,
    pub(crate) root_failures: IntCounter,
    pub(crate) child_restarts: IntCounterVec,
}

impl ActorMetrics {
    pub(crate) fn register(registry: &Registry) -> Result<Self, ActorsError> {
        let root_running = IntGauge::new(
            "drover_actors_root_running",
            "1 while this node runs the leader-only actor tree",
        )?;
        let root_starts = IntCounter::new(
            "drover_actors_root_starts_total",
            "Times the root supervisor was started",
        )?;
        let root_failures = IntCounter::new(
            "drover_actors_root_failures_total",
            "Times the root supervisor failed (a child exhausted its restart budget)",
        )?;
        let child_restarts = IntCounterVec::new(
            Opts::new(
                "drover_actors_child_restarts_total",
                "Restarts of the root's children by child",
            ),
            &["child"],
        )?;
        registry.register(Box::new(root_running.clone()))?;
        registry.register(Box::new(root_starts.clone()))?;
        registry.register(Box::new(root_failures.clone()))?;
        registry.register(Box::new(child_restarts.clone()))?;
        Ok(Self {
            root_running,
            root_starts,
            root_failures,
            child_restarts,
        })
    }
}
