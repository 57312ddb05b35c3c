//! Watches on services and their events, as for leases: `GET /tenant/{t}/service?watch=true`
//! and `GET …/service/{s}/events?watch=true`, with `resourceVersion=N` to resume after a state
//! revision this cluster returned (without it, everything there is now comes first as `ADDED`)
//! and `timeoutSeconds`. The answer is `application/x-ndjson`: each line is `{"type":
//! "ADDED"|"MODIFIED"|"DELETED"|"ERROR", "object": …}`; every object carries its
//! `resourceVersion`.
//!
//! A watch reads this node's replicated state every 200 ms, so changes made within one poll
//! are seen together and a service changed twice shows once, as it is now. The caller's right
//! to read the tenant is checked at every poll. Watches share the node's cap (2,048) and are
//! cut when their client does not read for 10 s, like the Kubernetes dialect's.

use std::convert::Infallible;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::header;
use axum::response::{IntoResponse, Response};
use drover_model::platform::{Identity, PlatformRead};
use drover_model::service::versions::WatchKind;
use drover_model::State;
use drover_raft::Consistency;
use serde::{Deserialize, Serialize};
use serde_json::json;
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use utoipa::IntoParams;

use super::context::AxebowState;
use super::reply::{codes, AxebowError};
use crate::core::MAX_WATCHES;
use crate::kube::watch::{event_line, send_line, MAX_WATCH, WATCH_BUFFER};

/// How often a watch reads the state.
const POLL: Duration = Duration::from_millis(200);

/// `?watch=true&resourceVersion=N&timeoutSeconds=S`.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct WatchParams {
    /// Stream changes instead of answering once.
    pub watch: Option<bool>,
    /// Resume after this state revision (one this cluster returned).
    #[serde(rename = "resourceVersion")]
    #[param(rename = "resourceVersion")]
    pub resource_version: Option<String>,
    /// End the watch after this many seconds (at most an hour).
    #[serde(rename = "timeoutSeconds")]
    #[param(rename = "timeoutSeconds")]
    pub timeout_seconds: Option<u64>,
}

impl WatchParams {
    /// Whether a watch was asked for.
    pub fn watching(&self) -> bool {
        self.watch == Some(true)
    }
}

/// One line of a watch stream (the OpenAPI schema of `application/x-ndjson` answers).
#[derive(Serialize, utoipa::ToSchema)]
pub struct WatchLine {
    /// `ADDED`, `MODIFIED`, `DELETED`, or `ERROR` (then `object` is `{code, content: {message}}`
    /// and the stream ends).
    #[serde(rename = "type")]
    pub kind: String,
    /// The service (or event) as it is now.
    #[schema(value_type = Object)]
    pub object: serde_json::Value,
}

/// The media type of watch streams.
pub const NDJSON: &str = "application/x-ndjson";

/// What one poll found: lines to send (and the revision they bring the watch to), or the
/// line that ends it.
enum Poll {
    Lines(Vec<Bytes>, u64),
    End(Bytes),
}

fn ended(reason: &str, message: String) -> Bytes {
    event_line("ERROR", json!({"code": reason, "content": {"message": message}}))
}

/// An event of a service with the service's name, as an events watch shows it.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct NamedEvent<'a> {
    service: &'a str,
    #[serde(flatten)]
    event: &'a drover_model::service::reconcile::ServiceEvent,
}

fn kind_name(kind: WatchKind) -> &'static str {
    match kind {
        WatchKind::Added => "ADDED",
        WatchKind::Modified => "MODIFIED",
        WatchKind::Deleted => "DELETED",
    }
}

/// What is new for a services watch of `tenant` after `after`.
fn poll_services(state: &State, caller: &Identity, tenant: &str, after: Option<u64>) -> Poll {
    let platform = state.platform();
    if let Err(error) = platform.authorize(caller, PlatformRead::Tenant(tenant).requirement()) {
        return Poll::End(ended(codes::FORBIDDEN, error.to_string()));
    }
    match platform.service_changes(tenant, after) {
        Ok(changes) => {
            let lines = changes
                .iter()
                .map(|(kind, service)| event_line(kind_name(*kind), service))
                .collect();
            Poll::Lines(lines, state.revision())
        }
        Err(too_old) => Poll::End(ended(
            codes::GONE,
            format!(
                "resourceVersion is too old: removals before {} are forgotten; list again and watch from the list's version",
                too_old.oldest
            ),
        )),
    }
}

/// What is new for an events watch of one service after `after`.
fn poll_events(state: &State, caller: &Identity, tenant: &str, service: &str, after: Option<u64>) -> Poll {
    let platform = state.platform();
    if let Err(error) = platform.authorize(caller, PlatformRead::Tenant(tenant).requirement()) {
        return Poll::End(ended(codes::FORBIDDEN, error.to_string()));
    }
    let Ok(stored) = platform.service(tenant, service) else {
        return Poll::End(ended(codes::NOT_FOUND, format!("service {service:?} is gone")));
    };
    let lines = stored
        .events
        .iter()
        .filter(|e| after.is_none_or(|after| e.resource_version > after))
        .map(|event| {
            let kind = if event.counter > 1 && after.is_some() {
                "MODIFIED"
            } else {
                "ADDED"
            };
            event_line(kind, NamedEvent { service, event })
        })
        .collect();
    Poll::Lines(lines, state.revision())
}

/// What a watch follows.
pub enum Watched {
    /// A tenant's services.
    Services {
        /// Tenant name.
        tenant: String,
    },
    /// One service's events.
    Events {
        /// Tenant name.
        tenant: String,
        /// Service name.
        service: String,
    },
}

impl Watched {
    fn tenant(&self) -> &str {
        match self {
            Watched::Services { tenant } | Watched::Events { tenant, .. } => tenant,
        }
    }

    fn poll(&self, state: &State, caller: &Identity, after: Option<u64>) -> Poll {
        match self {
            Watched::Services { tenant } => poll_services(state, caller, tenant, after),
            Watched::Events { tenant, service } => poll_events(state, caller, tenant, service, after),
        }
    }
}

/// Starts a watch: checks the parameters and the caller's right (a linearizable read, so a
/// version this cluster returned anywhere is known here), then streams.
pub async fn watch(
    state: AxebowState,
    caller: Identity,
    watched: Watched,
    params: &WatchParams,
) -> Result<Response, AxebowError> {
    let timeout = params
        .timeout_seconds
        .map_or(MAX_WATCH, Duration::from_secs)
        .min(MAX_WATCH);
    let after = match params.resource_version.as_deref() {
        None | Some("") | Some("0") => None,
        Some(text) => Some(text.parse::<u64>().map_err(|_| {
            AxebowError::invalid(
                "resourceVersion",
                format!("must be a number this cluster returned, got {text:?}"),
            )
        })?),
    };
    let tenant = watched.tenant().to_string();
    let (current, _) = state
        .raft
        .read(Consistency::Linearizable, |s| {
            s.platform()
                .authorize(&caller, PlatformRead::Tenant(&tenant).requirement())
                .map(|_| s.revision())
        })
        .await?;
    let current = current?;
    if let Some(after) = after.filter(|after| *after > current) {
        return Err(AxebowError::invalid(
            "resourceVersion",
            format!("{after} is newer than this cluster's revision {current}"),
        ));
    }
    let Ok(permit) = state.watches.clone().try_acquire_owned() else {
        return Err(AxebowError::new(
            axum::http::StatusCode::TOO_MANY_REQUESTS,
            codes::TOO_MANY_WATCHES,
            format!("this node serves {MAX_WATCHES} watches already; retry, or watch through another node"),
        ));
    };
    let (sender, receiver) = mpsc::channel::<Result<Bytes, Infallible>>(WATCH_BUFFER);
    tokio::spawn(async move {
        follow(&state, &caller, &watched, after, timeout, &sender).await;
        drop(permit);
    });
    let body = Body::from_stream(ReceiverStream::new(receiver));
    Ok(([(header::CONTENT_TYPE, NDJSON)], body).into_response())
}

async fn follow(
    state: &AxebowState,
    caller: &Identity,
    watched: &Watched,
    mut after: Option<u64>,
    timeout: Duration,
    sender: &mpsc::Sender<Result<Bytes, Infallible>>,
) {
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        match state.raft.local_read(|s| watched.poll(s, caller, after)) {
            Poll::Lines(lines, revision) => {
                for line in lines {
                    if !send_line(sender, line).await {
                        return;
                    }
                }
                after = Some(revision);
            }
            Poll::End(line) => {
                send_line(sender, line).await;
                return;
            }
        }
        tokio::select! {
            _ = state.shutdown.cancelled() => return,
            _ = tokio::time::sleep_until(deadline) => return,
            _ = sender.closed() => return,
            _ = tokio::time::sleep(POLL) => {}
        }
    }
}
