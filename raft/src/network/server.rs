//! Inbound peer traffic: the axum router that `node` serves on the peer listener.

use std::io::Cursor;

use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, Request, State};
use axum::http::StatusCode;
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use openraft::raft::{AppendEntriesRequest, AppendEntriesResponse, VoteRequest};

use super::protocol::{unframe_snapshot, LeaderRequest, PreVoteRequest};
use super::{bearer, SECRET_HEADER};
use crate::handle::RaftHandle;
use crate::typ::{Snapshot, TypeConfig};

#[derive(Clone)]
struct PeerState {
    handle: RaftHandle,
    expected_auth: std::sync::Arc<str>,
}

/// The peer router: Raft RPCs, leader requests and status, behind the cluster secret.
pub fn peer_router(handle: RaftHandle, cluster_secret: &str) -> Router {
    let state = PeerState {
        handle,
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
    (StatusCode::BAD_REQUEST, format!("malformed body: {error}")).into_response()
}

/// The answer to a vote or log id no member could have sent ([`super::plausible`]).
fn implausible(message: String) -> Response {
    tracing::warn!(%message, "refused an implausible peer request");
    (StatusCode::UNPROCESSABLE_ENTITY, message).into_response()
}

async fn append(State(state): State<PeerState>, body: Bytes) -> Response {
    let request: AppendEntriesRequest<TypeConfig> = match serde_json::from_slice(&body) {
        Ok(request) => request,
        Err(e) => return malformed(&e),
    };
    let log_ids = [request.prev_log_id, request.leader_commit];
    if let Err(message) = state
        .handle
        .known_to_peers()
        .check(&request.vote, &log_ids, &request.entries)
    {
        return implausible(message);
    }
    let answer = state.handle.raw().append_entries(request).await;
    // Anything but a refusal for a stale term means the sender is this node's leader.
    if matches!(&answer, Ok(response) if !matches!(response, AppendEntriesResponse::HigherVote(_))) {
        state.handle.heard_from_leader();
    }
    Json(answer).into_response()
}

async fn vote(State(state): State<PeerState>, Json(request): Json<VoteRequest<u64>>) -> Response {
    if let Err(message) = state
        .handle
        .known_to_peers()
        .check(&request.vote, &[request.last_log_id], &[])
    {
        return implausible(message);
    }
    let answer = state.handle.raw().vote(request).await;
    // Having voted, give the candidate a full timeout to win before campaigning here.
    if matches!(&answer, Ok(response) if response.vote_granted) {
        state.handle.heard_from_leader();
    }
    Json(answer).into_response()
}

async fn pre_vote(State(state): State<PeerState>, Json(request): Json<PreVoteRequest>) -> Response {
    Json(state.handle.answer_pre_vote(&request)).into_response()
}

async fn snapshot(State(state): State<PeerState>, body: Bytes) -> Response {
    let (header, data) = match unframe_snapshot(&body) {
        Ok(parts) => parts,
        Err(message) => return (StatusCode::BAD_REQUEST, message).into_response(),
    };
    let checked = state
        .handle
        .known_to_peers()
        .check(&header.vote, &[header.meta.last_log_id], &[]);
    if let Err(message) = checked {
        return implausible(message);
    }
    let snapshot = Snapshot {
        meta: header.meta,
        snapshot: Box::new(Cursor::new(data)),
    };
    let answer = state
        .handle
        .raw()
        .install_full_snapshot(header.vote, snapshot)
        .await;
    if matches!(&answer, Ok(response) if response.vote == header.vote) {
        state.handle.heard_from_leader();
    }
    Json(answer).into_response()
}

async fn leader(State(state): State<PeerState>, body: Bytes) -> Response {
    let request: LeaderRequest = match serde_json::from_slice(&body) {
        Ok(request) => request,
        Err(e) => return malformed(&e),
    };
    Json(state.handle.serve_leader_request(request).await).into_response()
}

async fn status(State(state): State<PeerState>) -> Response {
    Json(state.handle.status()).into_response()
}
