//! Resource pools with Boskos semantics: typed resources that move between free-form states while
//! owners acquire and release them, plus k8s-claimer cluster claims, request-id queues, dynamic
//! resources and fencing tokens. Everything here is pure and driven by committed commands.

mod apply;
pub mod config;
mod resource;
#[cfg(test)]
mod tests;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use thiserror::Error;

pub use apply::LEASED_RESOURCES;
pub use config::{parse_duration_ms, PoolConfig, TypeConfig};
pub use resource::{Pools, QueueEntry, Resource};

/// States with a meaning of their own.
pub mod states {
    /// Unowned and ready.
    pub const FREE: &str = "free";
    /// Owned and in use.
    pub const BUSY: &str = "busy";
    /// Needs cleaning before reuse.
    pub const DIRTY: &str = "dirty";
    /// Being cleaned by the janitor.
    pub const CLEANING: &str = "cleaning";
    /// Leased (claims and Mason children).
    pub const LEASED: &str = "leased";
    /// A dynamic resource on its way out.
    pub const TO_BE_DELETED: &str = "toBeDeleted";
    /// A dynamic resource whose children were released; deleted on the next sync.
    pub const TOMBSTONE: &str = "tombstone";
    /// Every state Boskos reports in metrics, in its order.
    pub const KNOWN: [&str; 7] = [FREE, BUSY, DIRTY, CLEANING, LEASED, TO_BE_DELETED, TOMBSTONE];
}

/// Owner names of the built-in leader actors.
pub mod owners {
    /// The janitor.
    pub const JANITOR: &str = "Janitor";
}

/// How long a `request_id` keeps its place in a queue without a new poll.
pub const REQUEST_TTL_MS: u64 = 30_000;

/// A change of pool state, proposed through Raft.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "pool_op", rename_all = "snake_case")]
pub enum PoolCommand {
    /// Replace the configuration and reconcile static resources to it.
    SetConfig {
        /// The new configuration (already validated by the proposer; checked again).
        config: PoolConfig,
    },
    /// Acquire one resource of a type in a state (Boskos `/acquire`, claimer `POST /lease`).
    Acquire {
        /// Resource type.
        rtype: String,
        /// State to take from.
        state: String,
        /// State to move to.
        dest: String,
        /// New owner.
        owner: String,
        /// Queue position key, kept across polls.
        request_id: Option<String>,
        /// Only these names may be granted (claimer `cluster_regex`), when set.
        candidates: Option<Vec<String>>,
        /// Server-side expiry of the grant (claimer `max_time`), when set.
        claim_for_ms: Option<u64>,
        /// Name for a dynamic resource this request may create.
        new_dynamic_name: Option<String>,
    },
    /// Acquire a named set, all or nothing (Boskos `/acquirebystate`).
    AcquireByState {
        /// State every named resource must be in.
        state: String,
        /// State to move to.
        dest: String,
        /// New owner.
        owner: String,
        /// The names.
        names: Vec<String>,
    },
    /// Release an owned resource into `dest`.
    Release {
        /// Resource name.
        name: String,
        /// State to move to.
        dest: String,
        /// Current owner.
        owner: String,
        /// Fencing token of the grant, when the caller has it.
        token: Option<u64>,
    },
    /// Heartbeat and merge user data (a `""` value deletes the key).
    Update {
        /// Resource name.
        name: String,
        /// Current owner.
        owner: String,
        /// State the resource must be in.
        state: String,
        /// User data to merge.
        user_data: BTreeMap<String, String>,
        /// Fencing token of the grant, when the caller has it.
        token: Option<u64>,
    },
    /// Reclaim owned resources not updated for `expire_ms` (Boskos `/reset`, the reaper).
    Reset {
        /// Resource type.
        rtype: String,
        /// State to reclaim from.
        state: String,
        /// State to move to.
        dest: String,
        /// Idle time after which a resource is reclaimed.
        expire_ms: u64,
        /// Idle time counts from no earlier than this (the leader's term start, so a failover
        /// never shortens a holder's deadline).
        not_before_ms: u64,
    },
    /// Release a claim by its token (claimer `DELETE /lease/{token}`).
    ReleaseClaim {
        /// The claim token.
        token: String,
    },
    /// Free claims whose time is up.
    ExpireClaims {
        /// Resource type.
        rtype: String,
        /// Not before this time (the leader's term start plus grace).
        not_before_ms: u64,
    },
    /// Run the dynamic-resource lifecycle of a type once.
    SyncDynamic {
        /// Resource type.
        rtype: String,
        /// Fresh names to create resources with, as many as may be needed.
        new_names: Vec<String>,
    },
    /// Release a retired dynamic resource's children and tombstone it (the cleaner).
    Retire {
        /// Resource name.
        name: String,
    },
    /// Mason: prepare a dirty resource of a type with `needs`. Its previous children are
    /// released dirty, the needed children are taken from their free pools into the state named
    /// after it, recorded under `leasedResources`, and the resource becomes free.
    Fulfil {
        /// Resource name.
        name: String,
    },
}

/// The replicated outcome of a pool command.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum PoolResult {
    /// One resource as it is after the command.
    Resource(Resource),
    /// Several resources.
    Resources(Vec<Resource>),
    /// Reclaimed resources and their previous owners.
    Reclaimed(BTreeMap<String, String>),
    /// Nothing to report.
    Done,
}

/// Why a pool command was refused. Nothing changed, except a request's place in its queue.
#[derive(Debug, Clone, PartialEq, Eq, Error, Serialize, Deserialize)]
pub enum PoolError {
    /// No resource of the type exists or is configured.
    #[error("resource type {0:?} does not exist")]
    TypeNotFound(String),
    /// Nothing matching is free now.
    #[error("no available resource {0}, try again later.")]
    NoneAvailable(String),
    /// Nothing matching is free for this request yet; it keeps its place in the queue.
    #[error("no available resource {rtype}, try again later.")]
    Queued {
        /// The resource type.
        rtype: String,
        /// The request's place in the queue (1: next).
        position: usize,
    },
    /// No resource of that name.
    #[error("cannot find resource {0}")]
    NotFound(String),
    /// Someone else owns the resource.
    #[error("owner mismatch request by {requested}, currently owned by {current}")]
    OwnerMismatch {
        /// Who asked.
        requested: String,
        /// Who owns it.
        current: String,
    },
    /// The resource is in another state.
    #[error("state mismatch - expected {expected}, current {current}")]
    StateMismatch {
        /// The state the caller named.
        expected: String,
        /// The resource's state.
        current: String,
    },
    /// The caller's grant was superseded: its lease is lost.
    #[error("stale fencing token {given}: the current grant of {name} has token {current}")]
    StaleToken {
        /// Resource name.
        name: String,
        /// The token presented.
        given: u64,
        /// The current grant's token.
        current: u64,
    },
    /// No claim has that token.
    #[error("no lease with token {0}")]
    ClaimNotFound(String),
    /// Too many distinct `(type, state)` queues have waiting requests.
    #[error("too many request queues ({0}) have waiting requests; try again once some are served")]
    TooManyQueues(usize),
}
