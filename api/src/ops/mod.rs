//! The operations room: liveness, readiness, the cluster view, membership changes (operators
//! only, [`guard`]), `/metrics`, the audit log ([`audit`]) and snapshots ([`snapshot`]).

pub mod audit;
pub mod snapshot;

use std::sync::Arc;

use axum::extract::{Path, Request, State};
use axum::http::{header, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, get};
use axum::{Json, Router};
use drover_raft::{MemberView, NodeId, PeerNode};
use prometheus::{Encoder, TextEncoder};
use serde::Deserialize;
use serde_json::{json, Value};

use crate::core::{Core, Recount};
use crate::error::ApiError;
use crate::guard::{check, Denied, Need};

/// The operations room's state: the core, and the gauges `/metrics` recounts.
#[derive(Clone)]
pub struct OpsState {
    core: Core,
    recounts: Arc<[Arc<dyn Recount>]>,
}

impl OpsState {
    /// The room over `core`, recounting `recounts` on every scrape.
    pub fn new(core: Core, recounts: Vec<Arc<dyn Recount>>) -> Self {
        Self {
            core,
            recounts: recounts.into(),
        }
    }
}

impl std::ops::Deref for OpsState {
    type Target = Core;

    fn deref(&self) -> &Core {
        &self.core
    }
}

/// Guards membership changes (operators only); health, readiness, metrics and the cluster view
/// stay open for probes and Prometheus.
pub async fn guard(State(state): State<OpsState>, request: Request, next: Next) -> Response {
    if request.method() == Method::GET {
        return next.run(request).await;
    }
    match check(&state, &request, Need::Operator) {
        Ok(principal) => crate::audit::scoped(principal, next.run(request)).await,
        Err(Denied::Unauthenticated(e)) => {
            crate::error::ApiError::Unauthorized(e.to_string()).into_response()
        }
        Err(Denied::Forbidden(message)) => crate::error::ApiError::Forbidden(message).into_response(),
    }
}

/// Routes of the operations endpoints.
pub fn routes() -> Router<OpsState> {
    Router::new()
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .route("/metrics", get(metrics))
        .route("/cluster", get(cluster))
        .route("/cluster/members", axum::routing::post(add_member))
        .route("/cluster/members/{id}", delete(remove_member))
}

async fn healthz() -> &'static str {
    "ok"
}

async fn readyz(State(state): State<OpsState>) -> Response {
    let status = state.raft.status();
    if state.raft.is_ready() {
        (StatusCode::OK, "ok").into_response()
    } else {
        let reason = match status.leader {
            None => "no leader is known".to_string(),
            Some(leader) if !state.raft.is_voter(leader) => {
                format!("the leader this node heard of, {leader}, is not a voter of its membership")
            }
            Some(_) => format!(
                "applied index {} is behind commit index {}",
                status.applied_index, status.commit_index
            ),
        };
        (StatusCode::SERVICE_UNAVAILABLE, format!("not ready: {reason}")).into_response()
    }
}

async fn metrics(State(state): State<OpsState>) -> Response {
    for gauges in state.recounts.iter() {
        gauges.recount(&state.raft);
    }
    state.raft.refresh_metrics();
    let mut buffer = Vec::new();
    let families = state.registry.gather();
    if let Err(e) = TextEncoder::new().encode(&families, &mut buffer) {
        return (
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("cannot encode metrics: {e}"),
        )
            .into_response();
    }
    (
        [(header::CONTENT_TYPE, "text/plain; version=0.0.4; charset=utf-8")],
        buffer,
    )
        .into_response()
}

/// One member as `GET /cluster` shows it (`drover get members` reads these fields).
pub fn member_json(member: MemberView) -> Value {
    let mut entry = json!({
        "id": member.id,
        "membership": member.membership,
        "peerAddr": member.peer_addr,
        "replicationLag": member.replication_lag,
    });
    match member.status {
        Ok(status) => {
            entry["reachable"] = json!(true);
            entry["apiAddr"] = json!(status.api_addr);
            entry["role"] = json!(status.role);
            entry["term"] = json!(status.term);
            entry["commitIndex"] = json!(status.commit_index);
            entry["appliedIndex"] = json!(status.applied_index);
            entry["lastLogIndex"] = json!(status.last_log_index);
            entry["snapshotIndex"] = json!(status.snapshot_index);
            entry["purgedIndex"] = json!(status.purged_index);
            entry["version"] = json!(status.version);
        }
        Err(error) => {
            entry["reachable"] = json!(false);
            entry["error"] = json!(error);
        }
    }
    entry
}

async fn cluster(State(state): State<OpsState>) -> Json<Value> {
    let view = state.raft.cluster().await;
    let members: Vec<Value> = view.members.into_iter().map(member_json).collect();
    Json(json!({
        "self": state.raft.id(),
        "leader": view.leader,
        "term": view.term,
        "members": members,
    }))
}

/// Body of `POST /cluster/members`.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct AddMember {
    id: NodeId,
    peer_addr: String,
    #[serde(default)]
    api_addr: String,
}

fn check_addr(field: &str, value: &str) -> Result<(), ApiError> {
    let ok = value
        .rsplit_once(':')
        .is_some_and(|(host, port)| !host.is_empty() && port.parse::<u16>().is_ok());
    if ok {
        Ok(())
    } else {
        Err(ApiError::BadRequest(format!(
            "{field} must be host:port, got {value:?}"
        )))
    }
}

async fn add_member(State(state): State<OpsState>, body: axum::body::Bytes) -> Result<Response, ApiError> {
    let request: AddMember = serde_json::from_slice(&body).map_err(|e| {
        ApiError::BadRequest(format!(
            "body must be {{\"id\": <u64>, \"peerAddr\": \"host:port\", \"apiAddr\": \"host:port\"}}: {e}"
        ))
    })?;
    if request.id == 0 {
        return Err(ApiError::BadRequest("id must be greater than zero".into()));
    }
    check_addr("peerAddr", &request.peer_addr)?;
    if !request.api_addr.is_empty() {
        check_addr("apiAddr", &request.api_addr)?;
    }
    let node = PeerNode {
        peer_addr: request.peer_addr,
        api_addr: request.api_addr,
    };
    state.raft.add_member(request.id, node).await?;
    Ok((StatusCode::CREATED, Json(json!({ "added": request.id }))).into_response())
}

async fn remove_member(State(state): State<OpsState>, Path(id): Path<String>) -> Result<Response, ApiError> {
    let id: NodeId = id
        .parse()
        .map_err(|_| ApiError::BadRequest(format!("member id must be a positive integer, got {id:?}")))?;
    state.raft.remove_member(id).await?;
    Ok(Json(json!({ "removed": id })).into_response())
}
