//! Boskos's Prometheus metrics: `boskos_resources{type,state}` (refreshed from this node's replica
//! on every scrape) and `boskos_acquire_duration_seconds`.

use drover_model::pool::states;
use drover_raft::RaftHandle;
use prometheus::{HistogramOpts, HistogramVec, IntGaugeVec, Opts, Registry};

use super::wire::state_label;
use crate::error::ApiError;

/// The pool metrics of one node.
#[derive(Clone)]
pub struct PoolMetrics {
    resources: IntGaugeVec,
    /// Time from a request's first poll to its grant.
    pub acquire_duration: HistogramVec,
}

impl PoolMetrics {
    /// Creates and registers the metrics.
    pub fn register(registry: &Registry) -> Result<Self, ApiError> {
        let resources = IntGaugeVec::new(
            Opts::new("boskos_resources", "Number of resources by type and state"),
            &["type", "state"],
        )?;
        let acquire_duration = HistogramVec::new(
            HistogramOpts::new(
                "boskos_acquire_duration_seconds",
                "Time from first acquire poll to grant",
            )
            .buckets(vec![
                0.01, 0.05, 0.1, 0.5, 1.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1200.0, 2000.0,
            ]),
            &["type", "state", "dest", "has_request_id"],
        )?;
        registry.register(Box::new(resources.clone()))?;
        registry.register(Box::new(acquire_duration.clone()))?;
        Ok(Self {
            resources,
            acquire_duration,
        })
    }

    /// Recounts resources from the local replica.
    pub fn refresh(&self, raft: &RaftHandle) {
        let counts = raft.local_read(|state| {
            let pools = state.pools();
            pools
                .types()
                .into_iter()
                .map(|rtype| {
                    let mut counts: Vec<(String, i64)> = states::KNOWN
                        .iter()
                        .chain(["other"].iter())
                        .map(|s| (s.to_string(), 0))
                        .collect();
                    for resource in pools.of_type(&rtype) {
                        let label = state_label(&resource.state);
                        if let Some(entry) = counts.iter_mut().find(|(state, _)| state == label) {
                            entry.1 += 1;
                        }
                    }
                    (rtype, counts)
                })
                .collect::<Vec<_>>()
        });
        self.resources.reset();
        for (rtype, counts) in counts {
            for (state, count) in counts {
                self.resources.with_label_values(&[&rtype, &state]).set(count);
            }
        }
    }
}

impl crate::core::Recount for PoolMetrics {
    fn recount(&self, raft: &RaftHandle) {
        self.refresh(raft);
    }
}
