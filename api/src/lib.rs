//! Drover's HTTP API, served by every node: the Axebow platform API (`/api/1.0-beta`, with its
//! OpenAPI document and `/docs`), Kubernetes-style lease objects (`coordination.k8s.io/v1` and
//! `akka.io/v1`) with the discovery documents kubectl needs, the Boskos and k8s-claimer dialects
//! over the resource pools, pool administration, and the operations endpoints (`/healthz`,
//! `/readyz`, `/cluster`, `/metrics`); one credential verifier guards them all ([`guard`]).
//!
//! Handlers turn requests into [`drover_model::Command`]s and reads through
//! [`drover_raft::RaftHandle`]; the handle forwards to the leader, so any node answers.

// The ground floor (what every request shares) and the layers every dialect passes through.
pub mod agents;
pub mod audit;
pub mod auth;
pub mod core;
pub mod error;
pub mod guard;
pub mod http_metrics;
pub mod idempotency;
pub mod images;
pub mod registry;
// One room per dialect.
pub mod axebow;
pub mod boskos;
pub mod claimer;
pub mod krake;
pub mod kube;
pub mod ops;
// The top floor: the rooms put together.
pub mod state;
pub mod ui;
pub mod unmatched;

use axum::extract::DefaultBodyLimit;
use axum::middleware::from_fn_with_state;
use axum::Router;
use tower_http::limit::RequestBodyLimitLayer;

pub use state::{ApiOptions, ApiState};

pub use crate::core::MAX_BODY_BYTES;

/// The public router of one node.
pub fn router(state: ApiState) -> Router {
    let ApiState {
        core,
        http,
        boskos,
        claimer,
        axebow,
        krake,
        ops,
    } = state;
    let limit = core.max_body_bytes;
    let dialects = Router::new()
        .merge(
            ops::routes()
                .layer(from_fn_with_state(ops.clone(), ops::guard))
                .with_state(ops.clone()),
        )
        .merge(
            kube::routes()
                .layer(from_fn_with_state(core.clone(), kube::guard::guard))
                .with_state(core.clone()),
        )
        .merge(
            boskos::routes()
                .merge(boskos::pools::routes())
                .layer(from_fn_with_state(boskos.clone(), boskos::guard::guard))
                .with_state(boskos),
        )
        .merge(claimer::routes().with_state(claimer))
        .merge(
            krake::routes()
                .layer(from_fn_with_state(krake.clone(), krake::cors::cors))
                .with_state(krake),
        )
        .merge(ops::audit::routes().with_state(ops.clone()))
        .layer(RequestBodyLimitLayer::new(limit));
    // The platform API reads bodies itself, so an oversized one gets its error envelope.
    let platform = axebow::routes()
        .layer(DefaultBodyLimit::max(limit))
        .with_state(axebow);
    dialects
        .merge(platform)
        .merge(ops::snapshot::routes().with_state(ops))
        .merge(ui::routes())
        .fallback(unmatched::no_route)
        .method_not_allowed_fallback(unmatched::wrong_method)
        .layer(from_fn_with_state(core, idempotency::scope))
        .layer(from_fn_with_state(http, http_metrics::record))
}
