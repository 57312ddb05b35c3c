//! Drover's HTTP API, served by every node: the Axebow platform API (`/api/1.0-beta`, with its
//! OpenAPI document and `/docs`), Kubernetes-style lease objects (`coordination.k8s.io/v1` and
//! `akka.io/v1`) with the discovery documents kubectl needs, the Boskos and k8s-claimer dialects
//! over the resource pools, pool administration, and the operations endpoints (`/healthz`,
//! `/readyz`, `/cluster`, `/metrics`); one credential verifier guards them all ([`guard`]).
//!
//! Handlers turn requests into [`drover_model::Command`]s and reads through
//! [`drover_raft::RaftHandle`]; the handle forwards to the leader, so any node answers.

pub mod agents;
pub mod audit;
pub mod auth;
pub mod axebow;
pub mod boskos;
pub mod claimer;
pub mod error;
pub mod guard;
pub mod http_metrics;
pub mod idempotency;
pub mod kube;
pub mod ops;
pub mod pool_metrics;
pub mod pools;
pub mod service_metrics;
pub mod snapshot;
pub mod state;

use axum::extract::DefaultBodyLimit;
use axum::Router;
use tower_http::limit::RequestBodyLimitLayer;

pub use state::{ApiOptions, ApiState};

/// Largest request body accepted by the public API unless configured otherwise.
pub const MAX_BODY_BYTES: usize = 1024 * 1024;

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

/// The public router of one node.
pub fn router(state: ApiState) -> Router {
    let limit = state.max_body_bytes;
    let dialects = Router::new()
        .merge(ops::routes().layer(axum::middleware::from_fn_with_state(
            state.clone(),
            guard::membership,
        )))
        .merge(kube::routes().layer(axum::middleware::from_fn_with_state(state.clone(), guard::kube)))
        .merge(
            boskos::routes()
                .merge(pools::routes())
                .layer(axum::middleware::from_fn_with_state(state.clone(), guard::boskos)),
        )
        .merge(claimer::routes())
        .merge(audit::routes())
        .layer(RequestBodyLimitLayer::new(limit));
    // The platform API reads bodies itself, so an oversized one gets its error envelope.
    let platform = axebow::routes().layer(DefaultBodyLimit::max(limit));
    dialects
        .merge(platform)
        .merge(snapshot::routes())
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            idempotency::scope,
        ))
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            http_metrics::record,
        ))
        .with_state(state)
}
