//! The Boskos dialect, wire-compatible with the Boskos server and its Go client: `/acquire`,
//! `/acquirebystate`, `/release`, `/update`, `/reset`, `/metric`, with query-string parameters,
//! Boskos's status codes and JSON shapes. Grants also return a `fencing_token`, which `/update`
//! and `/release` accept to refuse a holder whose lease was lost.

pub mod guard;
pub mod metrics;
pub mod pools;
pub mod wire;

use std::collections::{BTreeMap, HashMap};
use std::time::Instant;

use axum::body::Bytes;
use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use drover_model::pool::{PoolCommand, PoolError, PoolResult};
use drover_model::{Command, CommandResult, DomainError, Proposal};
use drover_raft::Consistency;

use self::metrics::PoolMetrics;
use self::wire::{metric_json, resource_json};
use crate::core::Core;
use crate::error::ApiError;

/// The Boskos room's state (the pool administration's too): the core, the pools' gauges, and
/// when each waiting acquire request was first seen.
#[derive(Clone)]
pub struct BoskosState {
    core: Core,
    /// The pools' gauges and the acquire-duration histogram.
    pub pool_metrics: PoolMetrics,
    /// First-poll times of waiting acquire requests.
    pub acquire_clock: AcquireClock,
}

impl BoskosState {
    /// The room over `core`; registers the pool metrics in the core's registry.
    pub fn new(core: Core) -> Result<Self, ApiError> {
        Ok(Self {
            pool_metrics: PoolMetrics::register(&core.registry)?,
            acquire_clock: AcquireClock::default(),
            core,
        })
    }
}

impl std::ops::Deref for BoskosState {
    type Target = Core;

    fn deref(&self) -> &Core {
        &self.core
    }
}

/// Routes of the Boskos dialect. Its health check `GET /` is answered by the Krake room
/// (`200` with Krake's version document, to anyone).
pub fn routes() -> Router<BoskosState> {
    Router::new()
        .route("/acquire", post(acquire))
        .route("/acquirebystate", post(acquire_by_state))
        .route("/release", post(release))
        .route("/update", post(update))
        .route("/reset", post(reset))
        .route("/metric", get(metric))
}

/// A Boskos error: a status code and a plain-text message, as the Boskos server writes them.
#[derive(Debug)]
pub struct BoskosError {
    status: StatusCode,
    message: String,
    /// A waiting request's place in its queue, answered in [`QUEUE_POSITION_HEADER`].
    queue_position: Option<usize>,
}

/// Response header of a refused `acquire` that holds a place in the queue (one with a
/// `request_id`): the place, 1 being next. A Drover addition; Boskos clients ignore it.
pub const QUEUE_POSITION_HEADER: &str = "x-drover-queue-position";

impl BoskosError {
    /// An error with this status and message.
    pub fn new(status: StatusCode, message: impl Into<String>) -> Self {
        Self {
            status,
            message: message.into(),
            queue_position: None,
        }
    }

    fn bad_request(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, message)
    }
}

impl BoskosError {
    /// Renders the error with its status mapped by `map` (the claimer answers 409 where Boskos
    /// answers 404).
    pub fn into_response_with(self, map: impl FnOnce(StatusCode) -> StatusCode) -> Response {
        Self {
            status: map(self.status),
            ..self
        }
        .into_response()
    }
}

impl IntoResponse for BoskosError {
    fn into_response(self) -> Response {
        let mut response = (self.status, self.message).into_response();
        if self.status == StatusCode::SERVICE_UNAVAILABLE {
            response.headers_mut().insert(
                axum::http::header::RETRY_AFTER,
                axum::http::HeaderValue::from(crate::error::RETRY_AFTER_SECONDS),
            );
        }
        if let Some(position) = self.queue_position {
            response.headers_mut().insert(
                axum::http::HeaderName::from_static(QUEUE_POSITION_HEADER),
                axum::http::HeaderValue::from(position),
            );
        }
        response
    }
}

impl From<DomainError> for BoskosError {
    fn from(error: DomainError) -> Self {
        let status = match &error {
            DomainError::Pool(pool) => match pool {
                PoolError::TypeNotFound(_)
                | PoolError::NoneAvailable(_)
                | PoolError::Queued { .. }
                | PoolError::NotFound(_) => StatusCode::NOT_FOUND,
                PoolError::OwnerMismatch { .. } | PoolError::StaleToken { .. } => StatusCode::UNAUTHORIZED,
                PoolError::StateMismatch { .. } | PoolError::ClaimNotFound(_) => StatusCode::CONFLICT,
                PoolError::TooManyQueues(_) => StatusCode::TOO_MANY_REQUESTS,
            },
            DomainError::NotFound { .. } => StatusCode::NOT_FOUND,
            DomainError::AlreadyExists { .. } | DomainError::Conflict { .. } => StatusCode::CONFLICT,
            DomainError::Invalid { .. } => StatusCode::BAD_REQUEST,
            DomainError::Platform(_) | DomainError::Krake(_) => StatusCode::INTERNAL_SERVER_ERROR,
        };
        let queue_position = match &error {
            DomainError::Pool(PoolError::Queued { position, .. }) => Some(*position),
            _ => None,
        };
        Self {
            queue_position,
            ..Self::new(status, error.to_string())
        }
    }
}

impl From<drover_raft::WriteError> for BoskosError {
    fn from(error: drover_raft::WriteError) -> Self {
        Self::new(StatusCode::SERVICE_UNAVAILABLE, error.to_string())
    }
}

impl From<drover_raft::ReadError> for BoskosError {
    fn from(error: drover_raft::ReadError) -> Self {
        Self::new(StatusCode::SERVICE_UNAVAILABLE, error.to_string())
    }
}

type Params = HashMap<String, String>;

fn required<'a>(params: &'a Params, name: &str) -> Result<&'a str, BoskosError> {
    let value = params
        .get(name)
        .map(String::as_str)
        .filter(|value| !value.is_empty())
        .ok_or_else(|| BoskosError::bad_request(format!("{name} must be set in the request.")))?;
    // Values are echoed in errors and logs: bound them before anything reads them.
    if !drover_model::limits::is_printable_word(value) {
        return Err(BoskosError::bad_request(format!(
            "{name} must be at most {} bytes of visible characters (got {} bytes)",
            drover_model::limits::MAX_POOL_WORD_LEN,
            value.len()
        )));
    }
    Ok(value)
}

fn fencing_token(params: &Params) -> Result<Option<u64>, BoskosError> {
    params
        .get("fencing_token")
        .filter(|value| !value.is_empty())
        .map(|value| {
            value.parse::<u64>().map_err(|_| {
                BoskosError::bad_request(format!(
                    "fencing_token must be the number a grant returned, got {value:?}"
                ))
            })
        })
        .transpose()
}

/// Commits a pool command and returns its result, or the refusal as a Boskos error. Answered
/// once the leader has applied it (a follower does not wait for its own apply): every pool read
/// goes through `RaftHandle::read`, which waits for what this node answered.
pub async fn run(state: &Core, command: PoolCommand) -> Result<PoolResult, BoskosError> {
    let proposal = Proposal::new(Command::Pool(command)).with_principal(crate::audit::principal());
    let written = state.raft.write_answered(proposal).await?;
    match written.result {
        CommandResult::Pool(result) => Ok(result),
        CommandResult::Refused(error) => Err(error.into()),
        other => Err(BoskosError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("unexpected result {other:?}"),
        )),
    }
}

async fn acquire(
    State(state): State<BoskosState>,
    Query(params): Query<Params>,
) -> Result<Response, BoskosError> {
    let rtype = required(&params, "type")?.to_string();
    let from = required(&params, "state")?.to_string();
    let dest = required(&params, "dest")?.to_string();
    let owner = required(&params, "owner")?.to_string();
    let request_id = params.get("request_id").filter(|id| !id.is_empty()).cloned();
    let started = state.acquire_clock.started(request_id.as_deref());
    let command = PoolCommand::Acquire {
        rtype: rtype.clone(),
        state: from.clone(),
        dest: dest.clone(),
        owner,
        new_dynamic_name: request_id.as_ref().map(|_| uuid::Uuid::new_v4().to_string()),
        request_id: request_id.clone(),
        candidates: None,
        claim_for_ms: None,
    };
    match run(&state, command).await? {
        PoolResult::Resource(resource) => {
            let waited = state.acquire_clock.finished(request_id.as_deref(), started);
            state
                .pool_metrics
                .acquire_duration
                // Free-form states map to "other": label values stay bounded.
                .with_label_values(&[
                    rtype.as_str(),
                    wire::state_label(&from),
                    wire::state_label(&dest),
                    if request_id.is_some() { "true" } else { "false" },
                ])
                .observe(waited.as_secs_f64());
            Ok(Json(resource_json(&resource)).into_response())
        }
        other => Err(unexpected(other)),
    }
}

fn unexpected(result: PoolResult) -> BoskosError {
    BoskosError::new(
        StatusCode::INTERNAL_SERVER_ERROR,
        format!("unexpected result {result:?}"),
    )
}

async fn acquire_by_state(
    State(state): State<BoskosState>,
    Query(params): Query<Params>,
) -> Result<Response, BoskosError> {
    let from = required(&params, "state")?.to_string();
    let dest = required(&params, "dest")?.to_string();
    let owner = required(&params, "owner")?.to_string();
    let names: Vec<String> = params
        .get("names")
        .map(String::as_str)
        .unwrap_or_default()
        .split(',')
        .map(str::trim)
        .filter(|n| !n.is_empty())
        .map(str::to_string)
        .collect();
    if names.is_empty() {
        return Err(BoskosError::bad_request("names must be set in the request."));
    }
    if let Some(bad) = names
        .iter()
        .find(|n| !drover_model::pool::config::is_resource_name(n))
    {
        return Err(BoskosError::bad_request(format!(
            "names: {:?} is not a resource name (a DNS-1123 subdomain of at most 253 characters)",
            bad.chars().take(64).collect::<String>()
        )));
    }
    // Upstream's Ranch answers ResourceNotFound (404) when a named resource is in another state
    // or owned, and the Go client's AcquireByStateWait keeps waiting on 404 only.
    let acquired = run(
        &state,
        PoolCommand::AcquireByState {
            state: from,
            dest,
            owner,
            names,
        },
    )
    .await
    .map_err(|error| match error.status {
        StatusCode::CONFLICT | StatusCode::UNAUTHORIZED => {
            BoskosError::new(StatusCode::NOT_FOUND, error.message)
        }
        _ => error,
    })?;
    match acquired {
        PoolResult::Resources(resources) => {
            Ok(Json(resources.iter().map(resource_json).collect::<Vec<_>>()).into_response())
        }
        other => Err(unexpected(other)),
    }
}

async fn release(
    State(state): State<BoskosState>,
    Query(params): Query<Params>,
) -> Result<Response, BoskosError> {
    let command = PoolCommand::Release {
        name: required(&params, "name")?.to_string(),
        dest: required(&params, "dest")?.to_string(),
        owner: required(&params, "owner")?.to_string(),
        token: fencing_token(&params)?,
    };
    run(&state, command).await?;
    Ok(StatusCode::OK.into_response())
}

async fn update(
    State(state): State<BoskosState>,
    Query(params): Query<Params>,
    body: Bytes,
) -> Result<Response, BoskosError> {
    let user_data: BTreeMap<String, String> = if body.iter().all(u8::is_ascii_whitespace) {
        BTreeMap::new()
    } else {
        serde_json::from_slice(&body).map_err(|e| {
            BoskosError::bad_request(format!(
                "the body must be a JSON object of string values (user data): {e}"
            ))
        })?
    };
    let command = PoolCommand::Update {
        name: required(&params, "name")?.to_string(),
        owner: required(&params, "owner")?.to_string(),
        state: required(&params, "state")?.to_string(),
        user_data,
        token: fencing_token(&params)?,
    };
    run(&state, command).await?;
    Ok(StatusCode::OK.into_response())
}

async fn reset(
    State(state): State<BoskosState>,
    Query(params): Query<Params>,
) -> Result<Response, BoskosError> {
    let expire = required(&params, "expire")?;
    let expire_ms = drover_model::pool::parse_duration_ms(expire)
        .map_err(|e| BoskosError::bad_request(format!("invalid expire {expire:?}: {e}")))?;
    let command = PoolCommand::Reset {
        rtype: required(&params, "type")?.to_string(),
        state: required(&params, "state")?.to_string(),
        dest: required(&params, "dest")?.to_string(),
        expire_ms,
        not_before_ms: 0,
    };
    match run(&state, command).await? {
        PoolResult::Reclaimed(reclaimed) => Ok(Json(reclaimed).into_response()),
        other => Err(unexpected(other)),
    }
}

async fn metric(
    State(state): State<BoskosState>,
    Query(params): Query<Params>,
) -> Result<Response, BoskosError> {
    let rtype = required(&params, "type")?.to_string();
    let (resources, _) = state
        .raft
        .read(Consistency::Linearizable, |s| {
            s.pools().of_type(&rtype).cloned().collect::<Vec<_>>()
        })
        .await?;
    if resources.is_empty() {
        return Err(BoskosError::new(
            StatusCode::NOT_FOUND,
            format!("resource type {rtype:?} does not exist"),
        ));
    }
    Ok(Json(metric_json(&rtype, &resources)).into_response())
}

/// Remembers when each `request_id` first polled on this node, so that
/// `boskos_acquire_duration_seconds` measures the whole wait, as Boskos does.
#[derive(Clone, Default)]
pub struct AcquireClock {
    first_seen: std::sync::Arc<std::sync::Mutex<HashMap<String, Instant>>>,
}

/// Most request ids remembered at once; the oldest are forgotten first.
const CLOCK_CAPACITY: usize = 10_000;

impl AcquireClock {
    fn started(&self, request_id: Option<&str>) -> Instant {
        let now = Instant::now();
        let Some(id) = request_id else { return now };
        let mut first_seen = self.first_seen.lock().unwrap_or_else(|p| p.into_inner());
        if first_seen.len() >= CLOCK_CAPACITY && !first_seen.contains_key(id) {
            if let Some(oldest) = first_seen
                .iter()
                .min_by_key(|(_, at)| **at)
                .map(|(k, _)| k.clone())
            {
                first_seen.remove(&oldest);
            }
        }
        *first_seen.entry(id.to_string()).or_insert(now)
    }

    fn finished(&self, request_id: Option<&str>, started: Instant) -> std::time::Duration {
        if let Some(id) = request_id {
            self.first_seen
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .remove(id);
        }
        started.elapsed()
    }
}
