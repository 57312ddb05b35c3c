//! What every handler can reach.

use std::sync::Arc;

use drover_raft::RaftHandle;
use prometheus::Registry;
use tokio_util::sync::CancellationToken;

use crate::agents::AgentReads;
use crate::auth::Verifier;
use crate::axebow::{AxebowContext, PlatformOptions};
use crate::boskos::AcquireClock;
use crate::claimer::ClaimerOptions;
use crate::error::ApiError;
use crate::http_metrics::HttpMetrics;
use crate::pool_metrics::PoolMetrics;
use crate::service_metrics::ServiceMetrics;

/// Settings of the API that come from the node's configuration.
#[derive(Debug, Clone)]
pub struct ApiOptions {
    /// The k8s-claimer endpoints, when enabled.
    pub claimer: Option<ClaimerOptions>,
    /// Checks the bearer tokens of the platform API.
    pub verifier: Verifier,
    /// Settings of the platform API.
    pub platform: PlatformOptions,
    /// Largest request body accepted.
    pub max_body_bytes: usize,
    /// Live reads of clusters' agents; the cluster inventory and log routes answer `503`
    /// without.
    pub agents: Option<Arc<dyn AgentReads>>,
}

impl std::fmt::Debug for dyn AgentReads {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("AgentReads")
    }
}

impl Default for ApiOptions {
    fn default() -> Self {
        Self {
            claimer: None,
            verifier: Verifier::default(),
            platform: PlatformOptions::default(),
            max_body_bytes: crate::MAX_BODY_BYTES,
            agents: None,
        }
    }
}

/// Shared state of the public API, behind one `Arc`: axum clones the state for every request
/// and every middleware layer, and a clone of the fields themselves (a dozen reference counts)
/// showed up at 2 % of a node's CPU under write load.
#[derive(Clone)]
pub struct ApiState(Arc<ApiShared>);

impl std::ops::Deref for ApiState {
    type Target = ApiShared;

    fn deref(&self) -> &ApiShared {
        &self.0
    }
}

/// What [`ApiState`] shares.
pub struct ApiShared {
    /// The replicated store.
    pub raft: RaftHandle,
    /// The node's metrics registry, served at `/metrics`.
    pub registry: Registry,
    /// HTTP request metrics.
    pub http: HttpMetrics,
    /// Cancelled when the node shuts down; long-lived streams end then.
    pub shutdown: CancellationToken,
    /// The k8s-claimer endpoints, when enabled.
    pub claimer: Option<ClaimerOptions>,
    /// Largest request body accepted.
    pub max_body_bytes: usize,
    /// Boskos pool metrics.
    pub pool_metrics: PoolMetrics,
    /// The services' gauges.
    pub service_metrics: ServiceMetrics,
    /// First-poll times of waiting acquire requests.
    pub acquire_clock: AcquireClock,
    /// The platform API's verifier, settings and rate limiter.
    pub axebow: Arc<AxebowContext>,
    /// Permits for concurrent watches ([`crate::kube::watch::MAX_WATCHES`]).
    pub watches: Arc<tokio::sync::Semaphore>,
    /// Live reads of clusters' agents.
    pub agents: Option<Arc<dyn AgentReads>>,
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
        let service_metrics = ServiceMetrics::register(&registry)?;
        let ApiOptions {
            claimer,
            verifier,
            platform,
            max_body_bytes,
            agents,
        } = options;
        Ok(Self(Arc::new(ApiShared {
            axebow: Arc::new(AxebowContext::new(verifier, platform)),
            raft,
            registry,
            http,
            shutdown,
            claimer,
            max_body_bytes,
            pool_metrics,
            service_metrics,
            acquire_clock: AcquireClock::default(),
            watches: Arc::new(tokio::sync::Semaphore::new(crate::kube::watch::MAX_WATCHES)),
            agents,
        })))
    }
}
