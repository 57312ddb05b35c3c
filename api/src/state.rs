//! What every handler can reach.

use drover_raft::RaftHandle;
use prometheus::Registry;
use tokio_util::sync::CancellationToken;

use crate::boskos::AcquireClock;
use crate::claimer::ClaimerOptions;
use crate::error::ApiError;
use crate::http_metrics::HttpMetrics;
use crate::pool_metrics::PoolMetrics;

/// Settings of the API that come from the node's configuration.
#[derive(Debug, Clone, Default)]
pub struct ApiOptions {
    /// The k8s-claimer endpoints, when enabled.
    pub claimer: Option<ClaimerOptions>,
}

/// Shared state of the public API.
#[derive(Clone)]
pub struct ApiState {
    /// The replicated store.
    pub raft: RaftHandle,
    /// The node's metrics registry, served at `/metrics`.
    pub registry: Registry,
    /// HTTP request metrics.
    pub http: HttpMetrics,
    /// Cancelled when the node shuts down; long-lived streams end then.
    pub shutdown: CancellationToken,
    /// Configuration-dependent settings.
    pub options: ApiOptions,
    /// Boskos pool metrics.
    pub pool_metrics: PoolMetrics,
    /// First-poll times of waiting acquire requests.
    pub acquire_clock: AcquireClock,
}

impl ApiState {
    /// Builds the state and registers the HTTP metrics in `registry`.
    pub fn new(
        raft: RaftHandle,
        registry: Registry,
        shutdown: CancellationToken,
        options: ApiOptions,
    ) -> Result<Self, ApiError> {
        let http = HttpMetrics::register(&registry)?;
        let pool_metrics = PoolMetrics::register(&registry)?;
        Ok(Self {
            raft,
            registry,
            http,
            shutdown,
            options,
            pool_metrics,
            acquire_clock: AcquireClock::default(),
        })
    }
}
