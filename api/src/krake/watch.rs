//! `?watch` on a list route (`krake.md` §2.5): a chunked `application/x-ndjson` stream of
//! `{"type": "ADDED"|"MODIFIED"|"DELETED", "object": …}` lines from the moment it starts (no
//! initial listing, as Krake's), a bare `\n` every `heartbeat` seconds (default 10, 0 for none),
//! and for `DELETED` the object as it last was.
//!
//! The lines come from the node's journal ([`super::journal`]): every change of an object of
//! the watched kind (and namespace), once, in the order of the replicated log, each with the
//! object as its change left it — an object made and removed at once is told `ADDED` then
//! `DELETED`. With `resourceVersion=V` (the version a list returned: the state revision it
//! read) the watch first tells every change after V, so a client that lists, then watches from
//! the list's version, sees nothing twice and misses nothing (Krake's watch cannot resume). A
//! version older than what the journal keeps is `410`: list again.
//!
//! The caller's right to list is checked again before every change told and every 200 ms (a
//! binding removed ends the stream). Watches share the node's cap and are cut when their
//! client does not read for 10 s, as the other dialects' are.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use drover_model::krake::rbac::Scope;
use drover_model::krake::{KrakeKind, Verb};
use drover_raft::Consistency;
use tokio::sync::{broadcast, mpsc};
use tokio_stream::wrappers::ReceiverStream;

use super::context::KrakeState;
use super::guard::{allow, Caller};
use super::journal::{KrakeEvent, Position};
use super::problem::Problem;
use crate::core::MAX_WATCHES;
use crate::kube::watch::{send_line, MAX_WATCH, WATCH_BUFFER};

/// How often a watch checks again that its caller may still list.
const RECHECK: Duration = Duration::from_millis(200);

/// Events read from the journal at a time while a watch catches up.
const CATCH_UP_PAGE: usize = 64;

/// Krake's default heartbeat, in seconds.
pub const DEFAULT_HEARTBEAT: u64 = 10;

/// What a watch follows and who asked.
struct Watched {
    state: KrakeState,
    caller: Caller,
    kind: KrakeKind,
    namespace: Option<String>,
}

impl Watched {
    fn matches(&self, event: &KrakeEvent) -> bool {
        event.key.kind == self.kind
            && self
                .namespace
                .as_ref()
                .is_none_or(|ns| event.key.namespace.as_deref() == Some(ns))
    }

    /// Whether the caller may still list what it watches.
    fn allowed(&self) -> bool {
        let scope = match &self.namespace {
            Some(ns) => Scope::Namespace(ns),
            None if self.kind.namespaced() => Scope::AllNamespaces,
            None => Scope::Global,
        };
        allow(
            &self.state,
            &self.caller,
            self.kind.api(),
            self.kind.plural(),
            Verb::List,
            scope,
        )
        .is_ok()
    }
}

fn gone(oldest: u64) -> Problem {
    Problem::plain(
        StatusCode::GONE,
        format!("410: resourceVersion is too old: this node keeps the changes after {oldest}; list again and watch from the list's resourceVersion"),
    )
}

/// Starts a watch of `kind` (in `namespace`, or every namespace), after revision `resume` when
/// given (else from now).
pub async fn watch(
    state: KrakeState,
    caller: Caller,
    kind: KrakeKind,
    namespace: Option<String>,
    heartbeat: u64,
    resume: Option<u64>,
) -> Result<Response, Problem> {
    let Ok(permit) = state.watches.clone().try_acquire_owned() else {
        return Err(Problem::plain(
            StatusCode::TOO_MANY_REQUESTS,
            format!(
                "429: this node serves {MAX_WATCHES} watches already; retry, or watch through another node"
            ),
        ));
    };
    // Subscribe before reading the revision, so nothing applied in between is missed.
    let feed = state.journal.subscribe();
    // Linearizable: a version another node returned has been applied here first.
    let (current, _) = state
        .raft
        .read(Consistency::Linearizable, |s| s.revision())
        .await?;
    let after = match resume {
        Some(after) if after > current => {
            return Err(Problem::invalid(
                "resourceVersion",
                &format!("{after} is newer than this cluster's state ({current}): give the resourceVersion a list returned."),
            ))
        }
        Some(after) => {
            // Refused now rather than after the answer's status is sent.
            state.journal.since(Position::Revision(after), 0).map_err(gone)?;
            after
        }
        None => current,
    };
    let (sender, receiver) = mpsc::channel::<Result<Bytes, Infallible>>(WATCH_BUFFER);
    let watched = Watched {
        state,
        caller,
        kind,
        namespace,
    };
    tokio::spawn(async move {
        let _permit = permit;
        stream(watched, feed, after, heartbeat, sender).await;
    });
    Ok((
        StatusCode::OK,
        [(header::CONTENT_TYPE, "application/x-ndjson")],
        Body::from_stream(ReceiverStream::new(receiver)),
    )
        .into_response())
}

/// Tells the events after `after` from the journal, then from the feed (from the journal again
/// after falling behind), until the client goes, the watch's time is up or the caller may no
/// longer list.
async fn stream(
    watched: Watched,
    mut feed: broadcast::Receiver<Arc<KrakeEvent>>,
    after: u64,
    heartbeat: u64,
    sender: mpsc::Sender<Result<Bytes, Infallible>>,
) {
    let deadline = tokio::time::Instant::now() + MAX_WATCH;
    let beat = Duration::from_secs(heartbeat.max(1));
    let mut beats = tokio::time::interval_at(tokio::time::Instant::now() + beat, beat);
    let mut rechecks = tokio::time::interval(RECHECK);
    let mut last = Position::Revision(after);
    let mut catch_up = true;
    loop {
        while catch_up {
            let Ok(page) = watched.state.journal.since(last, CATCH_UP_PAGE) else {
                // Forgotten while the client read slowly: it ends, and the client lists again.
                return;
            };
            catch_up = page.len() == CATCH_UP_PAGE;
            for event in page {
                if !tell(&watched, &sender, &event, &mut last).await {
                    return;
                }
            }
        }
        tokio::select! {
            _ = watched.state.shutdown.cancelled() => return,
            _ = tokio::time::sleep_until(deadline) => return,
            _ = sender.closed() => return,
            _ = rechecks.tick() => {
                if !watched.allowed() {
                    return;
                }
            }
            _ = beats.tick(), if heartbeat > 0 => {
                if !send_line(&sender, Bytes::from_static(b"\n")).await {
                    return;
                }
            }
            received = feed.recv() => match received {
                Ok(event) => {
                    if !tell(&watched, &sender, &event, &mut last).await {
                        return;
                    }
                }
                Err(broadcast::error::RecvError::Lagged(_)) => catch_up = true,
                Err(broadcast::error::RecvError::Closed) => return,
            },
        }
    }
}

/// Sends one event if it is new and watched; false when the watch ends.
async fn tell(
    watched: &Watched,
    sender: &mpsc::Sender<Result<Bytes, Infallible>>,
    event: &KrakeEvent,
    last: &mut Position,
) -> bool {
    if !last.before(event) {
        return true;
    }
    *last = Position::Seq(event.seq);
    if !watched.matches(event) {
        return true;
    }
    watched.allowed() && send_line(sender, event.line.clone()).await
}
