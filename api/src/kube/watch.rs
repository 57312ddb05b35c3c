//! Watches: `?watch=true&resourceVersion=N` streams every change after N as newline-delimited
//! `{"type": …, "object": …}` events, from any node. The stream subscribes to the change feed
//! before it reads the history, so no change falls between the two.

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::header;
use axum::response::{IntoResponse, Response};
use drover_model::{Change, ChangeKind, ObjectKind};
use drover_raft::{Consistency, HistoryGone};
use serde::Serialize;
use serde_json::json;
use tokio::sync::{broadcast, mpsc};
use tokio_stream::wrappers::ReceiverStream;

use super::selector::Selector;
use super::status::KubeError;
use super::wire::kube_object;
use crate::state::ApiState;

/// Longest watch a client may ask for; client-go asks for five to ten minutes.
const MAX_WATCH: Duration = Duration::from_secs(3600);

struct Filter {
    kind: ObjectKind,
    namespace: Option<String>,
    selector: Selector,
}

impl Filter {
    fn matches(&self, change: &Change) -> bool {
        let key = &change.object.key;
        key.kind == self.kind
            && self.namespace.as_ref().is_none_or(|ns| ns == &key.namespace)
            && self.selector.matches(&change.object)
    }
}

/// One line of a watch stream.
#[derive(Serialize)]
struct Event<'a, T> {
    #[serde(rename = "type")]
    kind: &'a str,
    object: T,
}

fn event_line(kind: &str, object: impl Serialize) -> Bytes {
    let mut line = serde_json::to_vec(&Event { kind, object }).unwrap_or_default();
    line.push(b'\n');
    Bytes::from(line)
}

fn change_line(change: &Change) -> Bytes {
    let kind = match change.kind {
        ChangeKind::Added => "ADDED",
        ChangeKind::Modified => "MODIFIED",
        ChangeKind::Deleted => "DELETED",
    };
    event_line(kind, kube_object(&change.object))
}

fn expired_line(gone: &HistoryGone) -> Bytes {
    event_line(
        "ERROR",
        json!({
            "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": gone.to_string(), "reason": "Expired", "code": 410,
        }),
    )
}

/// Starts a watch and returns the streaming response.
pub async fn watch(
    state: ApiState,
    kind: ObjectKind,
    namespace: Option<String>,
    selector: Selector,
    query: &HashMap<String, String>,
) -> Result<Response, KubeError> {
    let timeout = match query.get("timeoutSeconds") {
        None => MAX_WATCH,
        Some(text) => Duration::from_secs(text.parse::<u64>().map_err(|_| {
            KubeError::bad_request(format!("timeoutSeconds must be a whole number, got {text:?}"))
        })?)
        .min(MAX_WATCH),
    };
    let start_after = match query.get("resourceVersion").map(String::as_str) {
        None | Some("") | Some("0") => None,
        Some(text) => Some(text.parse::<u64>().map_err(|_| {
            KubeError::bad_request(format!(
                "resourceVersion must be a number this server returned, got {text:?}"
            ))
        })?),
    };
    let filter = Filter {
        kind,
        namespace,
        selector,
    };
    // Subscribe before reading anything, so nothing applied in between is missed.
    let feed = state.raft.subscribe_changes();
    let mut opening = Vec::new();
    let after = match start_after {
        Some(after) => after,
        None => {
            // No version given: the current objects as synthetic ADDED events, then changes.
            let (objects, revision) = state
                .raft
                .read(Consistency::Stale, |s| {
                    s.list(filter.kind, filter.namespace.as_deref())
                })
                .await?;
            for object in objects.iter().filter(|o| filter.selector.matches(o)) {
                opening.push(event_line("ADDED", kube_object(object)));
            }
            revision
        }
    };
    let (sender, receiver) = mpsc::channel::<Result<Bytes, Infallible>>(256);
    tokio::spawn(stream_changes(
        state, filter, feed, after, opening, timeout, sender,
    ));
    let body = Body::from_stream(ReceiverStream::new(receiver));
    Ok(([(header::CONTENT_TYPE, "application/json")], body).into_response())
}

async fn stream_changes(
    state: ApiState,
    filter: Filter,
    mut feed: broadcast::Receiver<Arc<Change>>,
    after: u64,
    opening: Vec<Bytes>,
    timeout: Duration,
    sender: mpsc::Sender<Result<Bytes, Infallible>>,
) {
    let deadline = tokio::time::Instant::now() + timeout;
    for line in opening {
        if sender.send(Ok(line)).await.is_err() {
            return;
        }
    }
    let mut last = after;
    // Catch up from history, then follow the feed; after a lag, catch up again.
    let mut catch_up = true;
    loop {
        if catch_up {
            match state.raft.changes_since(last) {
                Ok(backlog) => {
                    for change in backlog {
                        if !send_change(&sender, &filter, &change, &mut last).await {
                            return;
                        }
                    }
                }
                Err(gone) => {
                    let _ = sender.send(Ok(expired_line(&gone))).await;
                    return;
                }
            }
            catch_up = false;
        }
        tokio::select! {
            _ = state.shutdown.cancelled() => return,
            _ = tokio::time::sleep_until(deadline) => return,
            _ = sender.closed() => return,
            received = feed.recv() => match received {
                Ok(change) => {
                    if !send_change(&sender, &filter, &change, &mut last).await {
                        return;
                    }
                }
                Err(broadcast::error::RecvError::Lagged(_)) => catch_up = true,
                Err(broadcast::error::RecvError::Closed) => return,
            },
        }
    }
}

/// Sends one change if it is new and matches; returns false when the client is gone.
async fn send_change(
    sender: &mpsc::Sender<Result<Bytes, Infallible>>,
    filter: &Filter,
    change: &Change,
    last: &mut u64,
) -> bool {
    if change.index <= *last {
        return true;
    }
    *last = change.index;
    if !filter.matches(change) {
        return true;
    }
    sender.send(Ok(change_line(change))).await.is_ok()
}
