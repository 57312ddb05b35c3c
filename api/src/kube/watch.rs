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
use crate::core::{Core, MAX_WATCHES};

/// Longest watch a client may ask for; client-go asks for five to ten minutes.
pub(crate) const MAX_WATCH: Duration = Duration::from_secs(3600);
/// Events buffered per watch before the client must read.
pub(crate) const WATCH_BUFFER: usize = 16;
/// How long a watch may wait for its client to read an event before it is cut (the client
/// resumes from its last resource version, or lists again after `410`), as the Kubernetes API
/// server cuts a watcher that does not keep up.
pub const SLOW_WATCHER: Duration = Duration::from_secs(10);
/// Changes read from the history at a time while a watch catches up.
const CATCH_UP_PAGE: usize = 64;

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

pub(crate) fn event_line(kind: &str, object: impl Serialize) -> Bytes {
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
    state: Core,
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
    let Ok(permit) = state.watches.clone().try_acquire_owned() else {
        return Err(KubeError::too_many_requests(format!(
            "this node serves {MAX_WATCHES} watches already; retry, or watch through another node"
        )));
    };
    if let Some(after) = start_after {
        // A version from the future: after catching up with the leader this node still has not
        // reached it, so it was never returned by this cluster.
        let (current, _) = state
            .raft
            .read(Consistency::Linearizable, |s| s.revision())
            .await?;
        if after > current {
            return Err(KubeError::too_large_resource_version(after, current));
        }
    }
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
    let (sender, receiver) = mpsc::channel::<Result<Bytes, Infallible>>(WATCH_BUFFER);
    tokio::spawn(async move {
        stream_changes(state, filter, feed, after, opening, timeout, sender).await;
        drop(permit);
    });
    let body = Body::from_stream(ReceiverStream::new(receiver));
    Ok(([(header::CONTENT_TYPE, "application/json")], body).into_response())
}

async fn stream_changes(
    state: Core,
    filter: Filter,
    mut feed: broadcast::Receiver<Arc<Change>>,
    after: u64,
    opening: Vec<Bytes>,
    timeout: Duration,
    sender: mpsc::Sender<Result<Bytes, Infallible>>,
) {
    let deadline = tokio::time::Instant::now() + timeout;
    for line in opening {
        if !send_line(&sender, line).await {
            return;
        }
    }
    let mut last = after;
    // Catch up from history a page at a time (a page holds the changes it names alive), then
    // follow the feed; after a lag, catch up again.
    let mut catch_up = true;
    loop {
        while catch_up {
            match state.raft.changes_since(last, CATCH_UP_PAGE) {
                Ok(page) => {
                    catch_up = page.len() == CATCH_UP_PAGE;
                    for change in page {
                        if !send_change(&sender, &filter, &change, &mut last).await {
                            return;
                        }
                    }
                }
                Err(gone) => {
                    send_line(&sender, expired_line(&gone)).await;
                    return;
                }
            }
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
    send_line(sender, change_line(change)).await
}

/// Sends one line; false when the client is gone or has not read for [`SLOW_WATCHER`], which
/// ends the watch.
pub(crate) async fn send_line(sender: &mpsc::Sender<Result<Bytes, Infallible>>, line: Bytes) -> bool {
    matches!(
        tokio::time::timeout(SLOW_WATCHER, sender.send(Ok(line))).await,
        Ok(Ok(()))
    )
}
