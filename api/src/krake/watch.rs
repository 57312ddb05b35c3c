//! `?watch` on a list route (`krake.md` §2.5): a chunked `application/x-ndjson` stream of
//! `{"type": "ADDED"|"MODIFIED"|"DELETED", "object": …}` lines from the moment it starts (no
//! initial listing, as Krake's), a bare `\n` every `heartbeat` seconds (default 10, 0 for none),
//! and for `DELETED` the object as it last was.
//!
//! With `resourceVersion=V` (the version a list returned) the watch first tells what happened
//! after V — each object removed since, with its last state, and each made (`ADDED`) or changed
//! (`MODIFIED`) since — so a client that lists, then watches from the list's version, misses
//! nothing in between (Krake's watch cannot resume). A version older than the removals Drover
//! keeps (the last 4,096) is `410`: list again.
//!
//! A watch reads this node's replica every 200 ms and compares each object's uid and
//! modification and deletion times with what it saw: an object changed twice within one poll
//! shows once, as it is now. The caller's right to list is checked again at every poll (a
//! binding removed ends the stream). Watches share the node's cap and are cut when their
//! client does not read for 10 s, as the other dialects' are.

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use drover_model::krake::apply::{keys_of, read};
use drover_model::krake::rbac::Scope;
use drover_model::krake::{KrakeBody, KrakeKey, KrakeKind, Verb};
use drover_model::State;
use drover_raft::Consistency;
use serde_json::Value;
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;

use super::context::KrakeState;
use super::guard::{allow, Caller};
use super::problem::Problem;
use super::wire::render;
use crate::core::MAX_WATCHES;
use crate::kube::watch::{event_line, send_line, MAX_WATCH, WATCH_BUFFER};

/// How often a watch reads the replica.
const POLL: Duration = Duration::from_millis(200);

/// Krake's default heartbeat, in seconds.
pub const DEFAULT_HEARTBEAT: u64 = 10;

/// What identifies a version of an object: its uid, when it was modified and deleted, and a
/// digest of its observed status (a cluster's state changes without a write to its spec).
type Fingerprint = (String, u64, Option<u64>, u64);

/// What a watch saw of each object: its version and how it looked (for `DELETED`).
type Seen = BTreeMap<KrakeKey, (Fingerprint, Value)>;

/// The objects a watch follows, as they are in `state`, rendering only those whose version is
/// not in `before`.
fn look(state: &State, kind: KrakeKind, namespace: Option<&str>, before: &Seen) -> Seen {
    keys_of(state.platform(), state.krake(), kind, namespace)
        .into_iter()
        .filter_map(|key| {
            let (meta, body) = read(state.platform(), state.krake(), &key)?;
            let status = match &body {
                KrakeBody::Cluster(_) => super::cluster_wire::status_digest(state, &key),
                KrakeBody::Application(app) => super::app_wire::status_digest(state, &key, app),
                KrakeBody::Cloud(cloud) => {
                    super::digest::digest(&super::infra_wire::cloud_status(state, &key, cloud))
                }
                _ => 0,
            };
            let print = (meta.uid.clone(), meta.modified_us, meta.deleted_us, status);
            let value = match before.get(&key) {
                Some((seen, value)) if *seen == print => value.clone(),
                _ => render(state, &key, &meta, &body),
            };
            Some((key, (print, value)))
        })
        .collect()
}

/// What a watch resuming after `after` (µs) missed: the objects of the kind removed since, with
/// their last state, then those made or changed since (`seen` is how they are now); `Err` with
/// the oldest version still known when removals after `after` are forgotten.
fn since(
    state: &State,
    kind: KrakeKind,
    namespace: Option<&str>,
    seen: &Seen,
    after: u64,
) -> Result<Vec<Bytes>, u64> {
    let mut lines: Vec<Bytes> = state
        .platform()
        .krake_removals()
        .since(after)?
        .filter(|r| r.key.kind == kind && namespace.is_none_or(|ns| r.key.namespace.as_deref() == Some(ns)))
        .map(|r| event_line("DELETED", render(state, &r.key, &r.meta, &r.body)))
        .collect();
    for (key, ((_, modified, deleted, _), value)) in seen {
        let Some((meta, _)) = read(state.platform(), state.krake(), key) else {
            continue;
        };
        let status_since = match kind {
            KrakeKind::Cluster => state
                .platform()
                .tenant(key.tenant())
                .and_then(|t| t.clusters.get(&key.name))
                .map_or(0, |c| c.status.since_ms.saturating_mul(1000)),
            KrakeKind::Application => super::app_wire::status_since_us(state, key),
            _ => 0,
        };
        let changed = *modified > after || deleted.is_some_and(|d| d > after) || status_since > after;
        if meta.created_us > after {
            lines.push(event_line("ADDED", value));
        } else if changed {
            lines.push(event_line("MODIFIED", value));
        }
    }
    Ok(lines)
}

/// The lines that take a watcher from `before` to `now`.
fn differences(before: &Seen, now: &Seen) -> Vec<Bytes> {
    let mut lines = Vec::new();
    for (key, (print, value)) in now {
        match before.get(key) {
            None => lines.push(event_line("ADDED", value)),
            Some((seen, _)) if seen.0 != print.0 => {
                // Removed and made again between two polls: both are told.
                if let Some((_, old)) = before.get(key) {
                    lines.push(event_line("DELETED", old));
                }
                lines.push(event_line("ADDED", value));
            }
            Some((seen, _)) if seen != print => lines.push(event_line("MODIFIED", value)),
            Some(_) => {}
        }
    }
    for (key, (_, value)) in before {
        if !now.contains_key(key) {
            lines.push(event_line("DELETED", value));
        }
    }
    lines
}

/// Starts a watch of `kind` (in `namespace`, or every namespace).
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
    let ((mut seen, missed), _) = state
        .raft
        .read(Consistency::Linearizable, |s| {
            let seen = look(s, kind, namespace.as_deref(), &Seen::new());
            let missed = match resume {
                None => Ok(Vec::new()),
                Some(after) => since(s, kind, namespace.as_deref(), &seen, after),
            };
            (seen, missed)
        })
        .await?;
    let missed = missed.map_err(|oldest| {
        Problem::plain(
            StatusCode::GONE,
            format!("410: resourceVersion is too old: removals before {oldest} are forgotten; list again and watch from the list's resourceVersion"),
        )
    })?;
    let (sender, receiver) = mpsc::channel::<Result<Bytes, Infallible>>(WATCH_BUFFER);
    let shutdown = state.shutdown.clone();
    tokio::spawn(async move {
        let _permit = permit;
        let deadline = tokio::time::Instant::now() + MAX_WATCH;
        let beat = (heartbeat > 0).then(|| Duration::from_secs(heartbeat));
        let mut next_beat = beat.map(|b| tokio::time::Instant::now() + b);
        let scope = match &namespace {
            Some(ns) => Scope::Namespace(ns),
            None if kind.namespaced() => Scope::AllNamespaces,
            None => Scope::Global,
        };
        for line in missed {
            if !send_line(&sender, line).await {
                return;
            }
        }
        loop {
            tokio::select! {
                _ = shutdown.cancelled() => return,
                _ = tokio::time::sleep_until(deadline) => return,
                _ = tokio::time::sleep(POLL) => {}
            }
            if allow(&state, &caller, kind.api(), kind.plural(), Verb::List, scope).is_err() {
                return;
            }
            let now = state
                .raft
                .local_read(|s| look(s, kind, namespace.as_deref(), &seen));
            for line in differences(&seen, &now) {
                if !send_line(&sender, line).await {
                    return;
                }
            }
            seen = now;
            if let (Some(beat), Some(at)) = (beat, next_beat) {
                if tokio::time::Instant::now() >= at {
                    if !send_line(&sender, Bytes::from_static(b"\n")).await {
                        return;
                    }
                    next_beat = Some(tokio::time::Instant::now() + beat);
                }
            }
        }
    });
    Ok((
        StatusCode::OK,
        [(header::CONTENT_TYPE, "application/x-ndjson")],
        Body::from_stream(ReceiverStream::new(receiver)),
    )
        .into_response())
}
