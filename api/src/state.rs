//! What every handler can reach.

use drover_raft::RaftHandle;
use prometheus::Registry;
use tokio_util::sync::CancellationToken;

use crate::error::ApiError;
use crate::http_metrics::HttpMetrics;

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
}

impl ApiState {
    /// Builds the state and registers the HTTP metrics in `registry`.
    pub fn new(raft: RaftHandle, registry: Registry, shutdown: CancellationToken) -> Result<Self, ApiError> {
        let http = HttpMetrics::register(&registry)?;
        Ok(Self {
            raft,
            registry,
            http,
            shutdown,
        })
    }
}
