//! The leader's service actors:
//!
//! ```text
//!  ServicesSupervisor ── placement pass (pure `place`, one batched commit)
//!     └── TenantSupervisor (one per tenant with services)
//!           └── ServiceActor (one per service): plan → send the desired set → report
//! ```
//!
//! Every decision is the pure [`drover_model::service::reconcile::plan`] of the committed
//! service and what its cluster's actor last saw ([`crate::clusters::Observations`]); the
//! service actor carries it out through that cluster's driver, fenced by term, and commits its
//! status, events and, for a deleted service, its end through Raft. The tree is rebuilt by a
//! new leader from the store alone.

mod backoff;
mod child;
mod placer;
mod service_actor;
mod supervisor;
mod tenant;

use std::time::Duration;

use prometheus::{Histogram, HistogramOpts, IntCounter, IntCounterVec, IntGauge, Opts, Registry};

pub use backoff::{phase, retry_delay};
pub use child::ServicesChild;
pub use supervisor::ServicesSupervisor;

use crate::ActorsError;

/// Settings of the service actors.
#[derive(Debug, Clone)]
pub struct ServiceActorsConfig {
    /// Time between two passes of a service actor (its cluster is probed as often).
    pub interval: Duration,
    /// How often supervisors compare their actors with the committed state, and the placement
    /// pass runs.
    pub sync_interval: Duration,
    /// First retry delay after a failed send (doubling, jittered).
    pub retry_base: Duration,
    /// Longest retry delay.
    pub retry_max: Duration,
    /// Least time between two moves of one service (a flapping cluster moves it at most once
    /// per interval).
    pub migration_interval: Duration,
    /// How often a placed service is scored again and moved if another cluster wins (Krake's
    /// `reschedule_after`); zero turns periodic rescheduling off.
    pub reschedule_after: Duration,
}

impl Default for ServiceActorsConfig {
    fn default() -> Self {
        Self {
            interval: Duration::from_secs(1),
            sync_interval: Duration::from_millis(500),
            retry_base: Duration::from_millis(500),
            retry_max: Duration::from_secs(30),
            migration_interval: Duration::from_secs(60),
            reschedule_after: Duration::from_secs(60),
        }
    }
}

/// Metrics of the service actors.
#[derive(Clone)]
pub struct ServiceMetrics {
    pub(crate) actors: IntGauge,
    pub(crate) tenants: IntGauge,
    pub(crate) restarts: IntCounter,
    pub(crate) reconciles: IntCounterVec,
    pub(crate) reconcile_seconds: Histogram,
    pub(crate) backlog: IntGauge,
    pub(crate) driver_calls: IntCounterVec,
}

impl ServiceMetrics {
    /// Creates and registers the metrics.
    pub fn register(registry: &Registry) -> Result<Self, ActorsError> {
        let actors = IntGauge::new(
            "drover_service_actors",
            "Service actors running on this node (the leader)",
        )?;
        let tenants = IntGauge::new(
            "drover_tenant_supervisors",
            "Tenant supervisors running on this node (one per tenant with services)",
        )?;
        let restarts = IntCounter::new(
            "drover_service_actor_restarts_total",
            "Service actors and tenant supervisors started again after they failed",
        )?;
        let reconciles = IntCounterVec::new(
            Opts::new(
                "drover_service_reconciles_total",
                "Passes of service actors by result (idle: nothing to do; acted: sent or finalized; failed)",
            ),
            &["result"],
        )?;
        let reconcile_seconds = Histogram::with_opts(
            HistogramOpts::new(
                "drover_service_reconcile_seconds",
                "Time of one pass of a service actor (read, plan, send, report)",
            )
            .buckets(vec![0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1.0, 5.0]),
        )?;
        let backlog = IntGauge::new(
            "drover_service_reconcile_backlog",
            "Services whose actor has work left: not RUNNING exactly their accepted revision",
        )?;
        let driver_calls = IntCounterVec::new(
            Opts::new(
                "drover_service_driver_calls_total",
                "Desired sets service actors sent to clusters, by outcome",
            ),
            &["outcome"],
        )?;
        registry.register(Box::new(actors.clone()))?;
        registry.register(Box::new(tenants.clone()))?;
        registry.register(Box::new(restarts.clone()))?;
        registry.register(Box::new(reconciles.clone()))?;
        registry.register(Box::new(reconcile_seconds.clone()))?;
        registry.register(Box::new(backlog.clone()))?;
        registry.register(Box::new(driver_calls.clone()))?;
        Ok(Self {
            actors,
            tenants,
            restarts,
            reconciles,
            reconcile_seconds,
            backlog,
            driver_calls,
        })
    }
}
