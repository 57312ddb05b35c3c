//! Krake's watch journal: every change of a Krake object, at the state revision of the proposal
//! that made it, kept by each node from its own apply (the raft handle shows it the state after
//! every proposal: [`ApplyObserver`]). A watch is told from it every change once, in order, from
//! any node, and resumes after a list's `resourceVersion` (the revision the list read) without
//! a repeat or a gap — as the other dialects' watches are told from the change feed.
//!
//! Krake's objects are views of the platform's (a Cluster's status is what its actor observed,
//! an Application's its service's, a cloud's status whether its metrics exist), so no command
//! names every Krake object it changes. After each proposal that may change one (every command
//! but a lease's, a pool's and the audit's), the journal compares each object's uid, its
//! modification and deletion times and a digest of its status with what it saw last, and
//! renders only those that moved: a change is an `ADDED`, `MODIFIED` or `DELETED` event
//! carrying the object as that proposal left it (`DELETED`: as it last was). What changes with
//! time alone (a shutdown grace passing) is looked for every [`REFRESH`]. The journal keeps
//! the last [`EVENTS_KEPT`] events (at most [`EVENT_BYTES_KEPT`] bytes); a watch resuming from
//! before them is told to list again (`410`), as is one from before this node started.

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex};

use axum::body::Bytes;
use drover_model::krake::apply::{keys_of, read};
use drover_model::krake::{KrakeBody, KrakeKey, KrakeKind};
use drover_model::{Command, CommandResult, Proposal, State};
use drover_raft::ApplyObserver;
use serde_json::Value;
use tokio::sync::broadcast;

use super::wire::render;
use crate::kube::watch::event_line;

/// Events kept for watches that resume.
pub const EVENTS_KEPT: usize = 8192;
/// Most bytes of event lines kept.
pub const EVENT_BYTES_KEPT: usize = 32 * 1024 * 1024;
/// How often the journal looks for what changed with time alone.
pub const REFRESH: std::time::Duration = std::time::Duration::from_secs(1);
/// Events a slow watch may fall behind the live feed before it catches up from the journal.
const FEED_CAPACITY: usize = 1024;

/// One change of one Krake object.
#[derive(Debug)]
pub struct KrakeEvent {
    /// Its place in this node's journal (one proposal may change several objects).
    pub seq: u64,
    /// The state revision of the proposal that made it.
    pub revision: u64,
    /// Which object.
    pub key: KrakeKey,
    /// The watch line: `{"type": …, "object": …}` and a newline.
    pub line: Bytes,
}

/// What identifies a version of an object as a watcher sees it: its uid, when it was modified
/// and deleted, and a digest of its observed status (a cluster's state changes without a write
/// to its spec).
type Fingerprint = (String, u64, Option<u64>, u64);

/// What the journal saw of each object: its version and how it looked (for `DELETED`).
type Seen = BTreeMap<KrakeKey, (Fingerprint, Value)>;

#[derive(Default)]
struct Inner {
    seen: Seen,
    events: VecDeque<Arc<KrakeEvent>>,
    bytes: usize,
    /// Every event after this revision is kept.
    floor: u64,
    /// The place of the last event forgotten.
    dropped: u64,
    /// The place of the last event recorded.
    seq: u64,
    /// Whether it was shown its first state.
    started: bool,
}

/// Where a watch is in the journal: after a revision (a list's, or the state's when it
/// started), then after the last event it was shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Position {
    /// After every event of this revision and before.
    Revision(u64),
    /// After this event.
    Seq(u64),
}

impl Position {
    /// Whether `event` comes after this position.
    pub fn before(self, event: &KrakeEvent) -> bool {
        match self {
            Position::Revision(revision) => event.revision > revision,
            Position::Seq(seq) => event.seq > seq,
        }
    }
}

/// The journal of one node (see the module).
pub struct KrakeJournal {
    inner: Mutex<Inner>,
    feed: broadcast::Sender<Arc<KrakeEvent>>,
}

impl Default for KrakeJournal {
    fn default() -> Self {
        Self {
            inner: Mutex::new(Inner::default()),
            feed: broadcast::channel(FEED_CAPACITY).0,
        }
    }
}

impl KrakeJournal {
    /// Events from now on. Subscribe before reading the revision to start after, so that
    /// nothing applied in between is missed.
    pub fn subscribe(&self) -> broadcast::Receiver<Arc<KrakeEvent>> {
        self.feed.subscribe()
    }

    /// At most `limit` events after `after`, oldest first; `Err` with the oldest revision a
    /// watch may still resume from when some of them are forgotten.
    pub fn since(&self, after: Position, limit: usize) -> Result<Vec<Arc<KrakeEvent>>, u64> {
        let inner = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        let start = match after {
            Position::Revision(revision) if revision < inner.floor => return Err(inner.floor),
            Position::Seq(seq) if seq < inner.dropped => return Err(inner.floor),
            Position::Revision(revision) => inner.events.partition_point(|e| e.revision <= revision),
            Position::Seq(seq) => inner.events.partition_point(|e| e.seq <= seq),
        };
        Ok(inner.events.iter().skip(start).take(limit).cloned().collect())
    }

    /// Records what moved with time alone since the last proposal (a shutdown grace that
    /// passed shows `DEGRADED`), as a change after the state's revision: a list at that
    /// revision showed it as it was before.
    pub fn refresh(&self, state: &State) {
        self.record(state, state.revision().saturating_add(1));
    }

    /// Compares the objects of `state` with what was seen and records what moved at
    /// `revision`.
    fn record(&self, state: &State, revision: u64) {
        let mut inner = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        let now = look(state, &inner.seen);
        for (kind, key, value) in differences(&inner.seen, &now) {
            inner.seq += 1;
            let event = Arc::new(KrakeEvent {
                seq: inner.seq,
                revision,
                key,
                line: event_line(kind, value),
            });
            inner.bytes += event.line.len();
            inner.events.push_back(event.clone());
            // No receivers is fine: nobody is watching.
            let _ = self.feed.send(event);
        }
        while inner.events.len() > EVENTS_KEPT || (inner.bytes > EVENT_BYTES_KEPT && inner.events.len() > 1) {
            if let Some(oldest) = inner.events.pop_front() {
                inner.bytes = inner.bytes.saturating_sub(oldest.line.len());
                // A resume after a revision below the dropped one would miss it.
                inner.floor = inner.floor.max(oldest.revision);
                inner.dropped = oldest.seq;
            }
        }
        inner.seen = now;
    }
}

impl ApplyObserver for KrakeJournal {
    fn applied(&self, state: &State, proposal: &Proposal, result: &CommandResult) {
        if may_change_krake(&proposal.command) && !matches!(result, CommandResult::Refused(_)) {
            self.record(state, state.revision());
        }
    }

    fn replaced(&self, state: &State) {
        let started = self.inner.lock().unwrap_or_else(|p| p.into_inner()).started;
        if started {
            // A snapshot's state: what it changed is told to the watches following the feed.
            self.record(state, state.revision());
        }
        // No watch may resume from before it: the changes up to it are unknown here.
        let mut inner = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        if !started {
            inner.seen = look(state, &Seen::new());
            inner.started = true;
        }
        inner.floor = inner.floor.max(state.revision());
    }
}

/// Whether a command can change what a Krake object looks like: all but the leasing dialects'
/// and the audit's.
fn may_change_krake(command: &Command) -> bool {
    !matches!(
        command,
        Command::Create { .. }
            | Command::Replace { .. }
            | Command::Delete { .. }
            | Command::Pool(_)
            | Command::AuditRetention { .. }
            | Command::Noop
    )
}

/// Every Krake object as it is in `state`, rendering only those whose version is not in
/// `before`.
fn look(state: &State, before: &Seen) -> Seen {
    let mut now = Seen::new();
    for kind in KrakeKind::ALL {
        for key in keys_of(state.platform(), state.krake(), kind, None) {
            let Some((meta, body)) = read(state.platform(), state.krake(), &key) else {
                continue;
            };
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
            now.insert(key, (print, value));
        }
    }
    now
}

/// The events that take a watcher from `before` to `now`, each with its object.
fn differences(before: &Seen, now: &Seen) -> Vec<(&'static str, KrakeKey, Value)> {
    let mut events = Vec::new();
    for (key, (print, value)) in now {
        match before.get(key) {
            None => events.push(("ADDED", key.clone(), value.clone())),
            Some((seen, old)) if seen.0 != print.0 => {
                // Removed and made again by one proposal (a restored snapshot): both are told.
                events.push(("DELETED", key.clone(), old.clone()));
                events.push(("ADDED", key.clone(), value.clone()));
            }
            Some((seen, _)) if seen != print => events.push(("MODIFIED", key.clone(), value.clone())),
            Some(_) => {}
        }
    }
    for (key, (_, value)) in before {
        if !now.contains_key(key) {
            events.push(("DELETED", key.clone(), value.clone()));
        }
    }
    events
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seen(entries: &[(&str, &str, u64)]) -> Seen {
        entries
            .iter()
            .map(|(name, uid, modified)| {
                let key = KrakeKey::new(KrakeKind::Role, None, name);
                let print = (uid.to_string(), *modified, None, 0);
                (
                    key,
                    (print, serde_json::json!({"name": name, "modified": modified})),
                )
            })
            .collect()
    }

    fn kinds(events: &[(&'static str, KrakeKey, Value)]) -> Vec<(&'static str, String)> {
        events
            .iter()
            .map(|(kind, key, _)| (*kind, key.name.clone()))
            .collect()
    }

    #[test]
    fn differences_tell_each_change_once() {
        let before = seen(&[
            ("kept", "u1", 1),
            ("changed", "u2", 1),
            ("gone", "u3", 1),
            ("remade", "u4", 1),
        ]);
        let now = seen(&[
            ("kept", "u1", 1),
            ("changed", "u2", 2),
            ("new", "u5", 3),
            ("remade", "u6", 3),
        ]);
        assert_eq!(
            kinds(&differences(&before, &now)),
            vec![
                ("MODIFIED", "changed".to_string()),
                ("ADDED", "new".to_string()),
                ("DELETED", "remade".to_string()),
                ("ADDED", "remade".to_string()),
                ("DELETED", "gone".to_string()),
            ]
        );
        assert!(differences(&now, &now).is_empty());
    }

    #[test]
    fn a_resume_gets_what_came_after_its_revision_or_is_told_to_list_again() {
        let journal = KrakeJournal::default();
        {
            let mut inner = journal.inner.lock().expect("lock");
            inner.floor = 4;
            for (seq, revision, name) in [(1, 5, "a"), (2, 5, "b"), (3, 7, "c")] {
                inner.events.push_back(Arc::new(KrakeEvent {
                    seq,
                    revision,
                    key: KrakeKey::new(KrakeKind::Role, None, name),
                    line: Bytes::from_static(b"{}\n"),
                }));
            }
        }
        let names = |after: Position, limit| -> Vec<String> {
            journal
                .since(after, limit)
                .expect("kept")
                .iter()
                .map(|e| e.key.name.clone())
                .collect()
        };
        use Position::{Revision, Seq};
        assert_eq!(names(Revision(4), 10), vec!["a", "b", "c"]);
        assert_eq!(names(Revision(5), 10), vec!["c"]);
        assert_eq!(names(Revision(4), 2), vec!["a", "b"]);
        // One of two events of a revision told: the other comes next.
        assert_eq!(names(Seq(1), 10), vec!["b", "c"]);
        assert!(names(Revision(7), 10).is_empty());
        assert_eq!(journal.since(Revision(3), 10).err(), Some(4));
        journal.inner.lock().expect("lock").dropped = 1;
        assert_eq!(journal.since(Seq(0), 10).err(), Some(4));
        assert_eq!(names(Seq(1), 10), vec!["b", "c"]);
    }
}
