//! The agent's Prometheus metrics, in a registry of its own (`GET /metrics`).

use std::collections::BTreeMap;

use drover_model::cluster::agent_api::InstanceState;
use prometheus::{Histogram, HistogramOpts, IntCounter, IntGauge, IntGaugeVec, Opts, Registry, TextEncoder};

use crate::error::AgentError;

/// Every metric the agent exports.
#[derive(Clone)]
pub struct Metrics {
    registry: Registry,
    instances: IntGaugeVec,
    /// Instances started again (after a failure, a crash fault or a restart call).
    pub restarts: IntCounter,
    /// Term of the highest fence accepted.
    pub fence_term: IntGauge,
    /// Calls refused by fencing.
    pub fenced: IntCounter,
    /// How long applying a desired set took.
    pub apply_seconds: Histogram,
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Metrics")
    }
}

fn internal(e: prometheus::Error) -> AgentError {
    AgentError::Internal(format!("metrics: {e}"))
}

impl Metrics {
    /// Registers every metric.
    pub fn new() -> Result<Self, AgentError> {
        let registry = Registry::new();
        let instances = IntGaugeVec::new(
            Opts::new("drover_agent_instances", "Desired instances by state"),
            &["state"],
        )
        .map_err(internal)?;
        let restarts = IntCounter::new(
            "drover_agent_instance_restarts_total",
            "Instances started again after they ended or were restarted",
        )
        .map_err(internal)?;
        let fence_term = IntGauge::new(
            "drover_agent_fence_term",
            "Raft term of the highest fence the agent accepted",
        )
        .map_err(internal)?;
        let fenced = IntCounter::new(
            "drover_agent_fenced_total",
            "Mutating calls refused because their fence was older",
        )
        .map_err(internal)?;
        let apply_seconds = Histogram::with_opts(HistogramOpts::new(
            "drover_agent_apply_seconds",
            "Time to apply a desired set",
        ))
        .map_err(internal)?;
        registry.register(Box::new(instances.clone())).map_err(internal)?;
        registry.register(Box::new(restarts.clone())).map_err(internal)?;
        registry
            .register(Box::new(fence_term.clone()))
            .map_err(internal)?;
        registry.register(Box::new(fenced.clone())).map_err(internal)?;
        registry
            .register(Box::new(apply_seconds.clone()))
            .map_err(internal)?;
        Ok(Self {
            registry,
            instances,
            restarts,
            fence_term,
            fenced,
            apply_seconds,
        })
    }

    /// Records the term of the highest fence.
    pub fn set_fence_term(&self, term: u64) {
        self.fence_term.set(i64::try_from(term).unwrap_or(i64::MAX));
    }

    /// The text exposition, with the instance gauge set from `by_state`.
    pub fn render(&self, by_state: &BTreeMap<InstanceState, usize>) -> Result<String, AgentError> {
        for (state, name) in [
            (InstanceState::Starting, "starting"),
            (InstanceState::Running, "running"),
            (InstanceState::Exited, "exited"),
            (InstanceState::Failed, "failed"),
        ] {
            let count = by_state.get(&state).copied().unwrap_or(0);
            self.instances
                .with_label_values(&[name])
                .set(i64::try_from(count).unwrap_or(i64::MAX));
        }
        TextEncoder::new()
            .encode_to_string(&self.registry.gather())
            .map_err(internal)
    }
}
