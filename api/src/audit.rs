//! The audit log's reading side and who a request is: the guards of the Kubernetes, Boskos and
//! pool dialects run each request inside a scope naming its verified principal, and the writes
//! of those dialects carry it in their proposal; the platform API's commands name their caller
//! themselves. `GET /audit` (operators) reads the replicated log; `PUT /audit/retention`
//! (operators) sets how many entries it keeps.

use std::future::Future;

use axum::extract::{Query, State};
use axum::routing::{get, put};
use axum::{Json, Router};
use drover_model::audit::{AuditEntry, MAX_RETENTION};
use drover_model::{Command, Proposal};
use drover_raft::Consistency;
use serde::{Deserialize, Serialize};

use crate::error::ApiError;
use crate::guard::{operator, Credentials, Denied};
use crate::state::ApiState;

tokio::task_local! {
    static PRINCIPAL: String;
}

/// Runs `future` as `principal`: the proposals it writes name them.
pub async fn scoped<F: Future>(principal: String, future: F) -> F::Output {
    PRINCIPAL.scope(principal, future).await
}

/// The principal of the request being served, if its dialect's guard named one.
pub fn principal() -> Option<String> {
    PRINCIPAL.try_with(Clone::clone).ok()
}

/// Routes of the audit log.
pub fn routes() -> Router<ApiState> {
    Router::new()
        .route("/audit", get(read))
        .route("/audit/retention", put(set_retention))
}

/// `GET /audit` parameters.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ReadParams {
    /// Only entries applied after this revision.
    #[serde(default)]
    since: u64,
    /// At most this many (default and most 1,000).
    limit: Option<usize>,
}

/// `GET /audit`.
#[derive(Debug, Serialize)]
struct AuditPage {
    entries: Vec<AuditEntry>,
    retention: u32,
}

/// `PUT /audit/retention`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Retention {
    entries: u32,
}

/// The operations error of a guard's refusal.
pub(crate) fn refused(denied: Denied) -> ApiError {
    match denied {
        Denied::Unauthenticated(e) => ApiError::Unauthorized(e.to_string()),
        Denied::Forbidden(message) => ApiError::Forbidden(message),
    }
}

async fn read(
    State(state): State<ApiState>,
    credentials: Credentials,
    params: Result<Query<ReadParams>, axum::extract::rejection::QueryRejection>,
) -> Result<Json<AuditPage>, ApiError> {
    operator(&state, &credentials).map_err(refused)?;
    let Query(params) =
        params.map_err(|e| ApiError::BadRequest(format!("since and limit are numbers: {e}")))?;
    let limit = params.limit.unwrap_or(1000).clamp(1, 1000);
    let (page, _) = state
        .raft
        .read(Consistency::Linearizable, |s| AuditPage {
            entries: s.audit().since(params.since, limit),
            retention: s.audit().retention(),
        })
        .await
        .map_err(|e| ApiError::Unavailable(e.to_string()))?;
    Ok(Json(page))
}

async fn set_retention(
    State(state): State<ApiState>,
    credentials: Credentials,
    body: axum::body::Bytes,
) -> Result<Json<serde_json::Value>, ApiError> {
    let principal = operator(&state, &credentials).map_err(refused)?;
    let retention: Retention = serde_json::from_slice(&body).map_err(|e| {
        ApiError::BadRequest(format!(
            "body must be {{\"entries\": <1 to {MAX_RETENTION}>}}: {e}"
        ))
    })?;
    if !(1..=MAX_RETENTION).contains(&retention.entries) {
        return Err(ApiError::BadRequest(format!(
            "entries must be 1 to {MAX_RETENTION}"
        )));
    }
    let command = Command::AuditRetention {
        entries: retention.entries,
    };
    state
        .raft
        .write(Proposal::new(command).with_principal(Some(principal)))
        .await
        .map_err(|e| ApiError::Unavailable(e.to_string()))?;
    Ok(Json(serde_json::json!({ "retention": retention.entries })))
}
