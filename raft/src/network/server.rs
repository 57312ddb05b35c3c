//! Inbound peer traffic over HTTP: the axum router that `node` serves on the peer listener, in
//! front of the member's [`PeerService`].

use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, Request, State};
use axum::http::StatusCode;
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use openraft::raft::{AppendEntriesRequest, VoteRequest};
use serde::Serialize;

use super::protocol::{unframe_snapshot, LeaderRequest, PreVoteRequest};
use super::service::{PeerService, Refusal};
use super::{bearer, SECRET_HEADER};
use crate::handle::RaftHandle;
use crate::typ::TypeConfig;

#[derive(Clone)]
struct PeerState {
    service: PeerService,
    expected_auth: std::sync::Arc<str>,
}

/// The peer router: Raft RPCs, leader requests and status, behind the cluster secret.
pub fn peer_router(handle: RaftHandle, cluster_secret: &str) -> Router {
    let state = PeerState {
        service: PeerService::new(handle),
        expected_auth: std::sync::Arc::from(bearer(cluster_secret)),
    };
    Router::new()
        .route("/raft/append", post(append))
        .route("/raft/vote", post(vote))
        .route("/raft/prevote", post(pre_vote))
        .route("/raft/snapshot", post(snapshot))
        .route("/raft/leader", post(leader))
        .route("/raft/status", get(status))
        .layer(middleware::from_fn_with_state(state.clone(), authenticate))
        // Snapshots can be large; the peer listener only takes authenticated members.
        .layer(DefaultBodyLimit::disable())
        .with_state(state)
}

/// Compares secrets in time independent of where the first difference is.
pub fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

async fn authenticate(State(state): State<PeerState>, request: Request, next: Next) -> Response {
    let presented = request
        .headers()
        .get(SECRET_HEADER)
        .map(|value| value.as_bytes())
        .unwrap_or_default();
    if !constant_time_eq(presented, state.expected_auth.as_bytes()) {
        return (StatusCode::UNAUTHORIZED, "peer requests need the cluster secret").into_response();
    }
    next.run(request).await
}

/// The answer to a body that is not the JSON a route expects. The two busiest routes parse with
/// `serde_json` directly rather than axum's `Json`, whose error-path tracking cost a few percent
/// of a follower's CPU under write load.
fn malformed(error: &serde_json::Error) -> Response {
    refused(&Refusal::Malformed(error.to_string()))
}

fn refused(refusal: &Refusal) -> Response {
    let status = StatusCode::from_u16(refusal.status()).unwrap_or(StatusCode::BAD_REQUEST);
    (status, refusal.to_string()).into_response()
}

/// The JSON answer to a request the service took, or the refusal of one it did not.
fn answered<T: Serialize>(answer: Result<T, Refusal>) -> Response {
    match answer {
        Ok(answer) => Json(answer).into_response(),
        Err(refusal) => refused(&refusal),
    }
}

async fn append(State(state): State<PeerState>, body: Bytes) -> Response {
    match serde_json::from_slice::<AppendEntriesRequest<TypeConfig>>(&body) {
        Ok(request) => answered(state.service.append(request).await),
        Err(e) => malformed(&e),
    }
}

async fn vote(State(state): State<PeerState>, Json(request): Json<VoteRequest<u64>>) -> Response {
    answered(state.service.vote(request).await)
}

async fn pre_vote(State(state): State<PeerState>, Json(request): Json<PreVoteRequest>) -> Response {
    Json(state.service.pre_vote(&request)).into_response()
}

async fn snapshot(State(state): State<PeerState>, body: Bytes) -> Response {
    match unframe_snapshot(&body) {
        Ok((header, data)) => answered(state.service.snapshot(header.vote, header.meta, data).await),
        Err(message) => refused(&Refusal::Malformed(message)),
    }
}

async fn leader(State(state): State<PeerState>, body: Bytes) -> Response {
    match serde_json::from_slice::<LeaderRequest>(&body) {
        Ok(request) => Json(state.service.leader(request).await).into_response(),
        Err(e) => malformed(&e),
    }
}

async fn status(State(state): State<PeerState>) -> Response {
    Json(state.service.status()).into_response()
}
