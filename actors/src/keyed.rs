//! The bookkeeping every "one actor per committed object" supervisor shares (clusters, tenants,
//! services): which actor runs for which key and object uid, stopping those whose object went
//! or was created again, and starting a failed one again only after its restart policy's
//! backoff. A supervisor compares it with the committed state on every sync; nothing here is
//! replicated, so a new leader rebuilds the same tree from the store alone.

use std::collections::BTreeMap;
use std::time::Duration;

use tokio::time::Instant;

use ractor::{ActorCell, ActorId, ActorRef, Message};

use crate::supervision::{Decision, RestartPolicy, RestartPolicyConfig};

struct Entry<M: Message> {
    uid: String,
    actor: Option<ActorRef<M>>,
    policy: RestartPolicy,
    /// A failed actor is started again only after this.
    not_before: Option<Instant>,
}

/// One actor per key.
pub(crate) struct Keyed<K, M: Message> {
    /// Ordered, so that actors start and stop in one order and a simulation replays.
    entries: BTreeMap<K, Entry<M>>,
    /// Used when a policy gives up: the actor is retried after this instead (one bad object
    /// must not take the whole tree down).
    retry: Duration,
}

/// An actor to start: its key, its object's uid, and whether it is a restart after a failure.
pub(crate) struct Due<K> {
    pub key: K,
    pub uid: String,
    pub restart: bool,
}

impl<K: Ord + Clone, M: Message> Keyed<K, M> {
    pub fn new(retry: Duration) -> Self {
        Self {
            entries: BTreeMap::new(),
            retry,
        }
    }

    /// Stops the actors whose key is not committed any more or whose uid changed, and returns
    /// the committed keys that need an actor now.
    pub fn sync(&mut self, committed: impl IntoIterator<Item = (K, String)>, why: &str) -> Vec<Due<K>> {
        let committed: BTreeMap<K, String> = committed.into_iter().collect();
        self.entries.retain(|key, entry| {
            let keep = committed.get(key) == Some(&entry.uid);
            if !keep {
                if let Some(actor) = entry.actor.take() {
                    actor.stop(Some(why.to_string()));
                }
            }
            keep
        });
        let now = Instant::now();
        let mut due = Vec::new();
        for (key, uid) in committed {
            let entry = self.entries.entry(key.clone()).or_insert_with(|| Entry {
                uid: uid.clone(),
                actor: None,
                policy: RestartPolicy::new(RestartPolicyConfig {
                    max_restarts: usize::MAX,
                    ..RestartPolicyConfig::default()
                }),
                not_before: None,
            });
            if entry.actor.is_some() || entry.not_before.is_some_and(|at| now < at) {
                continue;
            }
            due.push(Due {
                key,
                uid,
                restart: entry.not_before.take().is_some(),
            });
        }
        due
    }

    /// Records the actor started for `key`.
    pub fn started(&mut self, key: &K, actor: ActorRef<M>) {
        if let Some(entry) = self.entries.get_mut(key) {
            entry.actor = Some(actor);
        }
    }

    /// Records that the actor `id` ended (`failed` with a reason, or stopped); returns its key
    /// and, for a failure, the delay before it is started again.
    pub fn ended(&mut self, id: ActorId, failed: bool) -> Option<(K, Option<Duration>)> {
        let (key, entry) = self
            .entries
            .iter_mut()
            .find(|(_, e)| e.actor.as_ref().is_some_and(|a| a.get_id() == id))?;
        entry.actor = None;
        if !failed {
            return Some((key.clone(), None));
        }
        let delay = match entry.policy.on_failure(Instant::now()) {
            Decision::RestartAfter(delay) => delay,
            Decision::GiveUp => self.retry,
        };
        entry.not_before = Some(Instant::now() + delay);
        Some((key.clone(), Some(delay)))
    }

    /// Actors running.
    pub fn live(&self) -> usize {
        self.entries.values().filter(|e| e.actor.is_some()).count()
    }

    /// Stops every actor.
    pub fn stop_all(&mut self, why: &str) {
        for entry in self.entries.values_mut() {
            if let Some(actor) = entry.actor.take() {
                actor.stop(Some(why.to_string()));
            }
        }
    }
}

/// The cell a supervision event is about and, when it failed, why.
pub(crate) fn ended_cell(event: ractor::SupervisionEvent) -> Option<(ActorCell, Option<String>)> {
    match event {
        ractor::SupervisionEvent::ActorFailed(cell, error) => Some((cell, Some(error.to_string()))),
        ractor::SupervisionEvent::ActorTerminated(cell, _, _) => Some((cell, None)),
        _ => None,
    }
}
