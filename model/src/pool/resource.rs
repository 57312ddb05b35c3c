//! The pool state: resources by name and the request-id queues.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::config::PoolConfig;

/// One leasable resource.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Resource {
    /// Unique name.
    pub name: String,
    /// Type.
    pub rtype: String,
    /// Free-form state.
    pub state: String,
    /// Owner, empty when unowned.
    pub owner: String,
    /// Leader time (ms since the epoch) of the last acquire, update or release.
    pub last_update_ms: u64,
    /// User data.
    pub user_data: BTreeMap<String, String>,
    /// When a released dynamic resource expires.
    pub expiration_ms: Option<u64>,
    /// Fencing token of the latest grant: the log index that granted it.
    pub token: u64,
    /// When a claim on it ends, server-side.
    pub claim_expires_ms: Option<u64>,
    /// Created by the dynamic lifecycle rather than listed in the config.
    pub dynamic: bool,
    /// Removed from the config while owned: deleted when released.
    pub retired: bool,
}

impl Resource {
    /// Whether a claim on it has run out at leader time `now_ms`, in a term that started at
    /// `term_start_ms`. The claim's length is counted again from the term's start when that is
    /// later than the grant, as the reaper counts idle time: a new leader whose clock runs ahead
    /// of the old one's must not end a claim before its holder could expect it.
    pub fn claim_expired(&self, now_ms: u64, term_start_ms: u64) -> bool {
        self.claim_expires_ms.is_some_and(|at| {
            let length = at.saturating_sub(self.last_update_ms);
            let deadline = at.max(term_start_ms.saturating_add(length));
            deadline <= now_ms
        })
    }
}

/// One waiting request in a `(type, state)` queue.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct QueueEntry {
    /// The caller's request id.
    pub id: String,
    /// The entry is dropped unless the caller polls again before this time.
    pub expires_ms: u64,
}

/// The FIFO of request ids waiting for one `(type, state)`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Queue {
    pub(crate) rtype: String,
    pub(crate) state: String,
    pub(crate) entries: Vec<QueueEntry>,
}

/// All pools.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Pools {
    pub(crate) config: Option<PoolConfig>,
    pub(crate) resources: BTreeMap<String, Resource>,
    pub(crate) queues: Vec<Queue>,
}

impl Pools {
    /// The committed configuration, if one was set.
    pub fn config(&self) -> Option<&PoolConfig> {
        self.config.as_ref()
    }

    /// One resource by name.
    pub fn resource(&self, name: &str) -> Option<&Resource> {
        self.resources.get(name)
    }

    /// Every resource, by name.
    pub fn resources(&self) -> impl Iterator<Item = &Resource> {
        self.resources.values()
    }

    /// Resources of one type.
    pub fn of_type<'a>(&'a self, rtype: &'a str) -> impl Iterator<Item = &'a Resource> + 'a {
        self.resources.values().filter(move |r| r.rtype == rtype)
    }

    /// Every type that is configured or still has resources.
    pub fn types(&self) -> Vec<String> {
        let mut types: Vec<String> = self
            .config
            .iter()
            .flat_map(|c| c.resources.iter().map(|t| t.rtype.clone()))
            .collect();
        types.extend(self.resources.values().map(|r| r.rtype.clone()));
        types.sort();
        types.dedup();
        types
    }

    /// Whether the type exists (configured or with resources).
    pub fn has_type(&self, rtype: &str) -> bool {
        self.config.as_ref().is_some_and(|c| c.get(rtype).is_some()) || self.of_type(rtype).next().is_some()
    }
}
