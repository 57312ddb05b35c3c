//! How the Krake room reads a request body and answers a write: bodies bounded and JSON (`415`
//! otherwise), a proposal's result as Krake's objects or problem documents, JSON answers with
//! Krake's content type.

use axum::body::{Body, Bytes};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use drover_model::krake::{KrakeChange, KrakeCommand, KrakeKey, KrakeStored};
use drover_model::{Command, CommandResult, Proposal};
use serde_json::Value;

use super::context::KrakeState;
use super::guard::Caller;
use super::problem::Problem;
use super::wire::render;

/// A JSON answer as Krake's server sends it.
pub fn json_response(status: StatusCode, value: &Value) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "application/json; charset=utf-8")],
        value.to_string(),
    )
        .into_response()
}

/// A request body as JSON, read within the body limit.
pub async fn body_json(state: &KrakeState, body: Body) -> Result<Value, Problem> {
    let bytes: Bytes = axum::body::to_bytes(body, state.max_body_bytes)
        .await
        .map_err(|_| {
            Problem::plain(
                StatusCode::PAYLOAD_TOO_LARGE,
                format!(
                    "413: the body is larger than {} bytes or was cut off",
                    state.max_body_bytes
                ),
            )
        })?;
    serde_json::from_slice(&bytes).map_err(|_| Problem::http(StatusCode::UNSUPPORTED_MEDIA_TYPE))
}

/// How Krake shows an object a write returned (its status read from this node's replica,
/// which has applied the write).
pub fn shown(state: &KrakeState, stored: &KrakeStored) -> Value {
    state
        .raft
        .local_read(|s| render(s, &stored.key, &stored.meta, &stored.body))
}

/// Proposes a Krake command as `caller` and gives what it stored, or its refusal as a problem.
pub async fn propose(
    state: &KrakeState,
    caller: &Caller,
    key: KrakeKey,
    change: KrakeChange,
) -> Result<KrakeStored, Problem> {
    let command = Command::Krake(KrakeCommand {
        caller: caller.principal.clone(),
        key,
        change,
    });
    let proposal = Proposal::new(command).with_principal(Some(caller.principal.clone()));
    match state.raft.write(proposal).await?.result {
        CommandResult::Krake(stored) => Ok(stored),
        CommandResult::Refused(drover_model::DomainError::Krake(error)) => Err(error.into()),
        CommandResult::Refused(other) => Err(Problem::plain(
            StatusCode::UNPROCESSABLE_ENTITY,
            other.to_string(),
        )),
        other => Err(Problem::plain(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("500: the write answered {other:?}"),
        )),
    }
}
