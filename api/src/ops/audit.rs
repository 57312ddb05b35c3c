//! The audit log's reading side: `GET /audit` (operators) reads the replicated log;
//! `PUT /audit/retention` (operators) sets how many entries it keeps.

use axum::extract::{Query, State};
use axum::routing::{get, put};
use axum::{Json, Router};
use drover_model::audit::{AuditEntry, MAX_RETENTION};
use drover_model::{Command, Proposal};
use drover_raft::Consistency;
use serde::{Deserialize, Serialize};

use super::OpsState;
use crate::error::ApiError;
use crate::guard::{operator, Credentials, Denied};

/// Routes of the audit log.
pub fn routes() -> Router<OpsState> {
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
    State(state): State<OpsState>,
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
    State(state): State<OpsState>,
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
