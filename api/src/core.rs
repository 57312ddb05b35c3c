//! The ground floor: what every request shares, whatever its dialect — the Raft handle, the
//! metrics registry, the node's shutdown, the body limit, the permits for long-lived watches,
//! and the credential verifier. Every dialect's state holds one [`Core`] and reaches these
//! through it; nothing here knows a dialect.

use std::sync::Arc;

use drover_raft::RaftHandle;
use prometheus::Registry;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

use crate::auth::Verifier;

/// Largest request body accepted by the public API unless configured otherwise.
pub const MAX_BODY_BYTES: usize = 1024 * 1024;

/// Most watches (Kubernetes-style and the platform's) one node serves at once.
pub const MAX_WATCHES: usize = 2_048;

/// What every request shares, behind one `Arc`: axum clones the state for every request and
/// every middleware layer, and a clone of the fields themselves (a dozen reference counts)
/// showed up at 2 % of a node's CPU under write load.
#[derive(Clone)]
pub struct Core(Arc<CoreShared>);

impl std::ops::Deref for Core {
    type Target = CoreShared;

    fn deref(&self) -> &CoreShared {
        &self.0
    }
}

/// What [`Core`] shares.
pub struct CoreShared {
    /// The replicated store.
    pub raft: RaftHandle,
    /// The node's metrics registry, served at `/metrics`.
    pub registry: Registry,
    /// Cancelled when the node shuts down; long-lived streams end then.
    pub shutdown: CancellationToken,
    /// Largest request body accepted.
    pub max_body_bytes: usize,
    /// Permits for concurrent watches ([`MAX_WATCHES`]).
    pub watches: Arc<Semaphore>,
    /// Checks credentials (bearer tokens, Basic passwords).
    pub verifier: Verifier,
}

impl Core {
    /// The shared part of a node's API.
    pub fn new(
        raft: RaftHandle,
        registry: Registry,
        shutdown: CancellationToken,
        max_body_bytes: usize,
        verifier: Verifier,
    ) -> Self {
        Self(Arc::new(CoreShared {
            raft,
            registry,
            shutdown,
            max_body_bytes,
            watches: Arc::new(Semaphore::new(MAX_WATCHES)),
            verifier,
        }))
    }
}

/// Reads a request body of at most `limit` bytes, for handlers and layers that must check
/// something (a credential) before they read it; a larger or cut-off body gets `413`.
pub(crate) async fn read_body(
    body: axum::body::Body,
    limit: usize,
) -> Result<bytes::Bytes, axum::response::Response> {
    use axum::response::IntoResponse;
    axum::body::to_bytes(body, limit).await.map_err(|_| {
        let message = format!("the body is larger than {limit} bytes or was cut off");
        (axum::http::StatusCode::PAYLOAD_TOO_LARGE, message).into_response()
    })
}

/// A set of gauges recounted from the replica when `/metrics` is scraped (the pools', the
/// services'): the operations room asks each without knowing whose they are.
pub trait Recount: Send + Sync {
    /// Brings the gauges up to date with `raft`'s replica.
    fn recount(&self, raft: &RaftHandle);
}
