//! The agent's Prometheus metrics, in a registry of its own (`GET /metrics`).

use std::collections::BTreeMap;

use drover_model::cluster::agent_api::{InstanceState, InstanceStatus};
use prometheus::{
    CounterVec, Histogram, HistogramOpts, IntCounter, IntCounterVec, IntGauge, IntGaugeVec, Opts, Registry,
    TextEncoder,
};

/// Most instances given series of their own (the label set stays bounded whatever runs).
pub const MAX_INSTANCE_SERIES: usize = 1000;

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
    /// Per instance (the first [`MAX_INSTANCE_SERIES`] by id): CPU time, resident memory, the
    /// memory limit and OOM kills.
    per_instance: PerInstance,
    /// Held while the per-instance series are reset and filled, so that scrapes at the same
    /// time never see them half filled.
    rendering: std::sync::Arc<std::sync::Mutex<()>>,
}

#[derive(Clone)]
struct PerInstance {
    cpu_seconds: CounterVec,
    memory_bytes: IntGaugeVec,
    memory_limit_bytes: IntGaugeVec,
    oom_kills: IntCounterVec,
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
        let per_instance = PerInstance {
            cpu_seconds: CounterVec::new(
                Opts::new(
                    "drover_agent_instance_cpu_seconds_total",
                    "CPU time of an instance's cgroup",
                ),
                &["instance"],
            )
            .map_err(internal)?,
            memory_bytes: IntGaugeVec::new(
                Opts::new(
                    "drover_agent_instance_memory_bytes",
                    "Resident memory of an instance's processes",
                ),
                &["instance"],
            )
            .map_err(internal)?,
            memory_limit_bytes: IntGaugeVec::new(
                Opts::new(
                    "drover_agent_instance_memory_limit_bytes",
                    "Memory limit an instance runs under",
                ),
                &["instance"],
            )
            .map_err(internal)?,
            oom_kills: IntCounterVec::new(
                Opts::new(
                    "drover_agent_instance_oom_kills_total",
                    "Runs of an instance killed at its memory limit",
                ),
                &["instance"],
            )
            .map_err(internal)?,
        };
        registry
            .register(Box::new(per_instance.cpu_seconds.clone()))
            .map_err(internal)?;
        registry
            .register(Box::new(per_instance.memory_bytes.clone()))
            .map_err(internal)?;
        registry
            .register(Box::new(per_instance.memory_limit_bytes.clone()))
            .map_err(internal)?;
        registry
            .register(Box::new(per_instance.oom_kills.clone()))
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
            per_instance,
            rendering: Default::default(),
        })
    }

    /// Records the term of the highest fence.
    pub fn set_fence_term(&self, term: u64) {
        self.fence_term.set(i64::try_from(term).unwrap_or(i64::MAX));
    }

    /// The text exposition, with the instance gauge set from `by_state` and the per-instance
    /// series from `instances` (measured ones, ordered by id).
    pub fn render(
        &self,
        by_state: &BTreeMap<InstanceState, usize>,
        instances: &[InstanceStatus],
    ) -> Result<String, AgentError> {
        let _rendering = self.rendering.lock().unwrap_or_else(|p| p.into_inner());
        let series = &self.per_instance;
        // Instances that left take their series with them.
        series.cpu_seconds.reset();
        series.memory_bytes.reset();
        series.memory_limit_bytes.reset();
        series.oom_kills.reset();
        for instance in instances.iter().take(MAX_INSTANCE_SERIES) {
            let label = [instance.id.as_str()];
            series
                .oom_kills
                .with_label_values(&label)
                .inc_by(u64::from(instance.oom_kills));
            let Some(usage) = instance.usage else { continue };
            series
                .cpu_seconds
                .with_label_values(&label)
                .inc_by(usage.cpu_time_ms as f64 / 1000.0);
            series
                .memory_bytes
                .with_label_values(&label)
                .set(i64::try_from(usage.memory_bytes).unwrap_or(i64::MAX));
            if let Some(limit) = usage.memory_limit_bytes {
                series
                    .memory_limit_bytes
                    .with_label_values(&label)
                    .set(i64::try_from(limit).unwrap_or(i64::MAX));
            }
        }
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
