//! `GET /snapshot` (operators): the replicated state as a snapshot file
//! (`drover_model::snapshot`), read linearizably, so it holds every write acknowledged before
//! the request; `PUT /snapshot` (operators): restore such a file into this cluster — checked
//! (format, length, SHA-256) before anything is proposed, then committed as one `Restore`
//! proposal that every replica applies. A cluster that already holds leases, users or pool
//! resources refuses a restore with `409` unless `?force=true`.

use axum::body::Bytes;
use axum::extract::{Query, State};
use axum::http::header;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use drover_model::snapshot;
use drover_model::{Command, Proposal};
use drover_raft::Consistency;
use serde::Deserialize;

use super::audit::refused;
use super::OpsState;
use crate::error::ApiError;
use crate::guard::{operator, Credentials};

/// Most bytes of a snapshot a restore takes.
pub const MAX_SNAPSHOT_BYTES: usize = 256 * 1024 * 1024;

/// Routes of snapshots (with their own body limit: a snapshot is larger than any request).
pub fn routes() -> Router<OpsState> {
    Router::new()
        .route("/snapshot", get(save).put(restore))
        .layer(axum::extract::DefaultBodyLimit::max(MAX_SNAPSHOT_BYTES))
}

/// `PUT /snapshot` parameters.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RestoreParams {
    /// Replace a state that holds something.
    #[serde(default)]
    force: bool,
}

async fn save(State(state): State<OpsState>, credentials: Credentials) -> Result<Response, ApiError> {
    operator(&state, &credentials).map_err(refused)?;
    let (file, _) = state
        .raft
        .read(Consistency::Linearizable, snapshot::write)
        .await
        .map_err(|e| ApiError::Unavailable(e.to_string()))?;
    let file = file.map_err(|e| ApiError::Unavailable(format!("the state does not encode: {e}")))?;
    Ok(([(header::CONTENT_TYPE, "application/octet-stream")], file).into_response())
}

async fn restore(
    State(state): State<OpsState>,
    credentials: Credentials,
    params: Result<Query<RestoreParams>, axum::extract::rejection::QueryRejection>,
    body: Bytes,
) -> Result<Json<serde_json::Value>, ApiError> {
    let principal = operator(&state, &credentials).map_err(refused)?;
    let Query(params) = params.map_err(|e| ApiError::BadRequest(format!("force=true or nothing: {e}")))?;
    let (info, restored) = snapshot::read(&body).map_err(|e| ApiError::BadRequest(e.to_string()))?;
    if !params.force {
        let (occupied, _) = state
            .raft
            .read(Consistency::Linearizable, |s| s.holds_anything())
            .await
            .map_err(|e| ApiError::Unavailable(e.to_string()))?;
        if occupied {
            return Err(ApiError::Conflict(
                "this cluster already holds leases, users or pool resources; restore into a new cluster, or add ?force=true to replace them".into(),
            ));
        }
    }
    let command = Command::Restore {
        state: Box::new(restored),
    };
    state
        .raft
        .write(Proposal::new(command).with_principal(Some(principal)))
        .await
        .map_err(|e| ApiError::Unavailable(e.to_string()))?;
    Ok(Json(serde_json::json!({
        "restored": {"revision": info.revision, "bytes": info.bytes, "sha256": info.sha256}
    })))
}
