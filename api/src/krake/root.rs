//! `GET /` (the Krake version Drover answers as) and `GET /me` (the caller and the roles bound
//! to them), as Krake serves them (`krake.md` §2.7). `GET /` is also the health check of Boskos
//! and k8s-claimer clients, which send no credential: it answers anyone (Krake asks for one).

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use serde_json::json;

use super::answer::json_response;
use super::context::KrakeState;
use super::guard::authenticate;
use super::problem::Problem;
use crate::guard::Credentials;

/// The Krake release whose API Drover serves.
pub const KRAKE_VERSION: &str = "1.0.1";

/// `GET /`: `{"version": "1.0.1"}`.
pub async fn index() -> Response {
    json_response(StatusCode::OK, &json!({"version": KRAKE_VERSION}))
}

/// `GET /me`: `{"user", "roles"}`, the roles' names sorted.
pub async fn me(State(state): State<KrakeState>, credentials: Credentials) -> Result<Response, Problem> {
    let caller = authenticate(&state, &credentials)?;
    let roles = state.raft.local_read(|s| s.krake().roles_of(&caller.user));
    Ok(json_response(
        StatusCode::OK,
        &json!({"user": caller.user, "roles": roles}),
    ))
}
