//! The services' Prometheus gauges, counted from this node's replica on every scrape (as
//! kube-state-metrics counts objects): `drover_services{phase}` by the phase their actors last
//! committed, `drover_services_placed`, those placed on a cluster, and
//! `drover_services_converged`, those that run exactly their current revision by what their
//! cluster's actor last committed (the `converged` of a service's status). Any node answers,
//! so a follower can be watched without loading the leader. Scrapes within 200 ms of a
//! recount get its figures.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use drover_model::service::reconcile::Phase;
use drover_raft::RaftHandle;
use prometheus::{IntGauge, IntGaugeVec, Opts, Registry};

use crate::error::ApiError;

/// Every phase, in the order they are exported.
const PHASES: [Phase; 6] = [
    Phase::Waiting,
    Phase::Progressing,
    Phase::Running,
    Phase::Unreachable,
    Phase::Deleting,
    Phase::Failed,
];

/// The service gauges of one node.
#[derive(Clone)]
pub struct ServiceMetrics {
    by_phase: IntGaugeVec,
    placed: IntGauge,
    converged: IntGauge,
    /// When the gauges were last recounted.
    counted_at: Arc<Mutex<Option<Instant>>>,
}

/// Scrapes within this of a recount are answered with its figures.
const RECOUNT_EVERY: Duration = Duration::from_millis(200);

impl ServiceMetrics {
    /// Creates and registers the gauges.
    pub fn register(registry: &Registry) -> Result<Self, ApiError> {
        let by_phase = IntGaugeVec::new(
            Opts::new(
                "drover_services",
                "Services by the phase their actors last committed",
            ),
            &["phase"],
        )?;
        let converged = IntGauge::new(
            "drover_services_converged",
            "Services running exactly their current revision, by their cluster's last observation",
        )?;
        let placed = IntGauge::new("drover_services_placed", "Services placed on a cluster")?;
        registry.register(Box::new(by_phase.clone()))?;
        registry.register(Box::new(placed.clone()))?;
        registry.register(Box::new(converged.clone()))?;
        Ok(Self {
            by_phase,
            placed,
            converged,
            counted_at: Arc::default(),
        })
    }

    /// Recounts the services from the local replica, at most five times a second: `/metrics` needs
    /// no credential, and a recount walks every service under the state's read lock, so a
    /// caller scraping in a loop must not make every apply wait behind it.
    pub fn refresh(&self, raft: &RaftHandle) {
        {
            let mut last = self
                .counted_at
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            if last.is_some_and(|at| at.elapsed() < RECOUNT_EVERY) {
                return;
            }
            *last = Some(Instant::now());
        }
        let (counts, placed, converged) = raft.local_read(|state| {
            let platform = state.platform();
            let mut counts = [0i64; PHASES.len()];
            let (mut placed, mut converged) = (0i64, 0i64);
            for (name, tenant) in platform.tenants() {
                for (service, stored) in &tenant.services {
                    if let Some(slot) = PHASES.iter().position(|p| *p == stored.reconcile.phase) {
                        counts[slot] += 1;
                    }
                    placed += i64::from(stored.placement.is_some());
                    let run = platform.service_run_status(name, service);
                    converged += i64::from(run.is_ok_and(|run| run.converged));
                }
            }
            (counts, placed, converged)
        });
        for (phase, count) in PHASES.iter().zip(counts) {
            self.by_phase
                .with_label_values(&[phase.event_reason()])
                .set(count);
        }
        self.placed.set(placed);
        self.converged.set(converged);
    }
}

impl crate::core::Recount for ServiceMetrics {
    fn recount(&self, raft: &RaftHandle) {
        self.refresh(raft);
    }
}
