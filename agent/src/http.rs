//! The cluster API over HTTP:
//!
//! | route | auth | answer |
//! |---|---|---|
//! | `GET /healthz` | none | `ok` |
//! | `GET /metrics` | none | Prometheus text |
//! | `GET /v1/facts` | bearer | [`IdentifiedFacts`]: the facts, the agent's id and the cluster object it is bound to |
//! | `GET /v1/inventory[?usage=false]` | bearer | [`Inventory`] (with each instance's usage unless `usage=false`) |
//! | `PUT /v1/sets/{set}` | bearer | body [`DesiredSet`]; the set's [`Inventory`] |
//! | `PUT /v1/fence` | bearer | body [`Fenced`]; raises the fence only; the whole [`Inventory`] |
//! | `POST /v1/instances/{id}/restart` | bearer | body [`Fenced`]; the instance's status |
//! | `GET /v1/instances/{id}/logs?tail=N&since=RFC3339` or `?from=OFFSET` | bearer | text and `x-drover-log-offset` (see [`crate::logs`]) |
//! | `PUT /v1/sim/faults` | bearer | body [`SimFaults`]; the switches now on (sim only) |
//!
//! The mutating calls may name the cluster object that sends them (`x-drover-cluster`, and
//! `x-drover-take-over` to take the agent over from the one it is bound to): see
//! [`crate::identity`].
//!
//! `/v1` needs `Authorization: Bearer <join token>`, compared in constant time. Every refusal
//! is `{"error": "..."}` naming what to fix. While the `unreachable` sim fault is on, every
//! route but `PUT /v1/sim/faults` answers 503.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::SystemTime;

use axum::body::Bytes;
use axum::extract::rejection::{BytesRejection, QueryRejection};
use axum::extract::{DefaultBodyLimit, Path, Query, Request, State};
use axum::http::{header, HeaderMap, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post, put};
use axum::{Json, Router};
use drover_model::cluster::agent_api::{
    self, DesiredSet, Fenced, InstanceId, Inventory, SetName, SimFaults, LOG_OFFSET_HEADER, MAX_LOG_READ,
};
use drover_model::cluster::identity::{IdentifiedFacts, CLUSTER_HEADER, TAKE_OVER_HEADER};
use serde::de::DeserializeOwned;

use crate::core::Agent;
use crate::error::AgentError;
use crate::identity::Sender;
use crate::layout::Layout;
use crate::logs;
use crate::secret::JoinToken;

/// Largest request body: a set of 10,000 instances with generous argv and env fits.
const BODY_LIMIT: usize = 64 * 1024 * 1024;

impl IntoResponse for AgentError {
    fn into_response(self) -> Response {
        let status = StatusCode::from_u16(self.status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        if status.is_server_error() {
            tracing::error!("request failed: {self}");
        }
        let body = agent_api::AgentError {
            error: self.to_string(),
        };
        (status, Json(body)).into_response()
    }
}

#[derive(Clone)]
struct AppState {
    agent: Arc<Agent>,
    token: JoinToken,
    layout: Layout,
}

/// The router of the cluster API.
pub fn router(agent: Arc<Agent>, token: JoinToken, layout: Layout) -> Router {
    let state = AppState { agent, token, layout };
    let v1 = Router::new()
        .route("/v1/facts", get(facts))
        .route("/v1/inventory", get(inventory))
        .route("/v1/fence", put(raise_fence))
        .route("/v1/sets/{set}", put(put_set))
        .route("/v1/instances/{id}/restart", post(restart))
        .route("/v1/instances/{id}/logs", get(instance_logs))
        .route("/v1/sim/faults", put(set_faults))
        .route_layer(axum::middleware::from_fn_with_state(state.clone(), authenticate));
    Router::new()
        .route("/healthz", get(|| async { "ok" }))
        .route("/metrics", get(metrics))
        .merge(v1)
        .fallback(|method: Method, uri: axum::http::Uri| async move {
            AgentError::NotFound(format!("no route {method} {}", uri.path()))
        })
        .layer(axum::middleware::from_fn_with_state(state.clone(), unreachable))
        .layer(DefaultBodyLimit::max(BODY_LIMIT))
        .with_state(state)
}

async fn authenticate(
    State(state): State<AppState>,
    headers: HeaderMap,
    request: Request,
    next: Next,
) -> Response {
    let presented = headers
        .get(header::AUTHORIZATION)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.strip_prefix("Bearer "));
    match presented {
        Some(token) if state.token.matches(token.trim()) => next.run(request).await,
        Some(_) => {
            AgentError::Unauthorized("Authorization: the bearer token is not this agent's join token".into())
                .into_response()
        }
        None => AgentError::Unauthorized("Authorization: send `Bearer <join token>`".into()).into_response(),
    }
}

async fn unreachable(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let faults_call = request.method() == Method::PUT && request.uri().path() == "/v1/sim/faults";
    if !faults_call && state.agent.unreachable() {
        return AgentError::Unavailable("unreachable: the sim fault `unreachable` is on".into())
            .into_response();
    }
    next.run(request).await
}

/// Runs a mutation to its end even when the caller hangs up (the server drops a handler whose
/// connection closed): dropped halfway, a change could be on disk and in memory but never
/// carried out — a set recorded but its instances never started, which the same set sent again
/// would find unchanged — or a newer fence on disk that memory does not hold yet.
async fn to_completion<T: Send + 'static>(
    mutation: impl std::future::Future<Output = Result<T, AgentError>> + Send + 'static,
) -> Result<T, AgentError> {
    tokio::spawn(mutation)
        .await
        .map_err(|e| AgentError::Internal(format!("the change's task failed: {e}")))?
}

/// Parses a JSON body, naming what is wrong.
fn json_body<T: DeserializeOwned>(body: Result<Bytes, BytesRejection>) -> Result<T, AgentError> {
    let bytes = body.map_err(|e| {
        let text = format!("body: {}", e.body_text());
        if e.status() == StatusCode::PAYLOAD_TOO_LARGE {
            AgentError::TooLarge(text)
        } else {
            AgentError::BadRequest(text)
        }
    })?;
    serde_json::from_slice(&bytes).map_err(|e| AgentError::BadRequest(format!("body: {e}")))
}

async fn metrics(State(state): State<AppState>) -> Result<Response, AgentError> {
    let text = state.agent.metrics_text()?;
    Ok(([(header::CONTENT_TYPE, "text/plain; version=0.0.4")], text).into_response())
}

async fn facts(State(state): State<AppState>) -> Json<IdentifiedFacts> {
    Json(state.agent.identified_facts())
}

/// The cluster object a change names, from its headers.
fn sender(headers: &HeaderMap) -> Result<Sender, AgentError> {
    let value = |name: &str| -> Result<Option<String>, AgentError> {
        headers
            .get(name)
            .map(|value| {
                value
                    .to_str()
                    .map(|text| text.trim().to_string())
                    .map_err(|_| AgentError::BadRequest(format!("{name}: not visible ASCII")))
            })
            .transpose()
    };
    Sender {
        cluster: value(CLUSTER_HEADER)?,
        take_over: value(TAKE_OVER_HEADER)?,
    }
    .checked()
}

/// `GET /v1/inventory` parameters.
#[derive(Debug, serde::Deserialize)]
struct InventoryQuery {
    /// Measure what each instance uses (default); the control plane's probes say `false`.
    usage: Option<bool>,
}

async fn inventory(
    State(state): State<AppState>,
    query: Result<Query<InventoryQuery>, QueryRejection>,
) -> Result<Json<Inventory>, AgentError> {
    let Query(query) = query.map_err(|e| AgentError::BadRequest(format!("query: {}", e.body_text())))?;
    let inventory = state.agent.inventory(None);
    if query.usage == Some(false) {
        return Ok(Json(inventory));
    }
    Ok(Json(state.agent.measured(inventory)))
}

async fn put_set(
    State(state): State<AppState>,
    Path(set): Path<String>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Json<Inventory>, AgentError> {
    let set = SetName::parse(&set).map_err(|e| AgentError::BadRequest(format!("set: {e}")))?;
    let sender = sender(&headers)?;
    let desired: DesiredSet = json_body(body)?;
    let agent = state.agent.clone();
    Ok(Json(
        to_completion(async move { agent.put_set_from(&sender, set, desired).await }).await?,
    ))
}

async fn raise_fence(
    State(state): State<AppState>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Json<Inventory>, AgentError> {
    let sender = sender(&headers)?;
    let fenced: Fenced = json_body(body)?;
    let agent = state.agent.clone();
    Ok(Json(
        to_completion(async move { agent.raise_fence_from(&sender, fenced.fence).await }).await?,
    ))
}

fn instance_id(text: &str) -> Result<InstanceId, AgentError> {
    InstanceId::parse(text).map_err(|e| AgentError::BadRequest(format!("id: {e}")))
}

async fn restart(
    State(state): State<AppState>,
    Path(id): Path<String>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Json<agent_api::InstanceStatus>, AgentError> {
    let id = instance_id(&id)?;
    let sender = sender(&headers)?;
    let fenced: Fenced = json_body(body)?;
    let agent = state.agent.clone();
    Ok(Json(
        to_completion(async move { agent.restart_from(&sender, id, fenced.fence).await }).await?,
    ))
}

async fn instance_logs(
    State(state): State<AppState>,
    Path(id): Path<String>,
    query: Result<Query<BTreeMap<String, String>>, QueryRejection>,
) -> Result<Response, AgentError> {
    let id = instance_id(&id)?;
    let Query(query) = query.map_err(|e| AgentError::BadRequest(format!("query: {}", e.body_text())))?;
    let mut tail = logs::DEFAULT_TAIL;
    let mut since = None;
    let mut from = None;
    for (name, value) in &query {
        match name.as_str() {
            "from" => {
                from = Some(value.parse::<u64>().map_err(|_| {
                    AgentError::BadRequest(format!(
                        "from: {value:?} is not a byte offset (a previous read's {LOG_OFFSET_HEADER})"
                    ))
                })?);
            }
            "tail" => {
                tail = value
                    .parse::<usize>()
                    .ok()
                    .filter(|n| *n <= logs::MAX_TAIL)
                    .ok_or_else(|| {
                        AgentError::BadRequest(format!(
                            "tail: {value:?} is not a number of lines from 0 to {}",
                            logs::MAX_TAIL
                        ))
                    })?;
            }
            "since" => {
                let at = time::OffsetDateTime::parse(value, &time::format_description::well_known::Rfc3339)
                    .map_err(|e| {
                    AgentError::BadRequest(format!("since: {value:?} is not an RFC 3339 time: {e}"))
                })?;
                since = Some(SystemTime::from(at));
            }
            other => {
                return Err(AgentError::BadRequest(format!(
                    "{other}: unknown query parameter; use tail, since or from"
                )))
            }
        }
    }
    if !state.agent.has_instance(&id) {
        return Err(AgentError::NotFound(format!(
            "id: no instance {id} on this agent"
        )));
    }
    let (current, rotated) = (state.layout.log(&id), state.layout.rotated_log(&id));
    let (text, next) = tokio::task::spawn_blocking(move || match from {
        Some(from) => logs::read_from(&current, &rotated, from, MAX_LOG_READ),
        None => logs::read(&current, &rotated, tail, since),
    })
    .await
    .map_err(|e| AgentError::Internal(format!("log reader: {e}")))?
    .map_err(|e| AgentError::io("cannot read the log of", state.layout.instance(&id), e))?;
    Ok((
        [
            (header::CONTENT_TYPE, "text/plain; charset=utf-8".to_string()),
            (
                header::HeaderName::from_static(LOG_OFFSET_HEADER),
                next.to_string(),
            ),
        ],
        String::from_utf8_lossy(&text).into_owned(),
    )
        .into_response())
}

async fn set_faults(
    State(state): State<AppState>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Json<SimFaults>, AgentError> {
    let faults: SimFaults = json_body(body)?;
    state.agent.set_faults(faults.clone())?;
    Ok(Json(SimFaults {
        crash: Vec::new(),
        ..faults
    }))
}
