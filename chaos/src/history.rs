//! What the clients observed, recorded as they go.

use std::sync::{Arc, Mutex};
use std::time::Instant;

use serde::{Deserialize, Serialize};

use crate::checker::linearizable::{RegisterOp, Timed};
use crate::checker::mutex::{Accepted, Grant};

/// One recorded operation on a register key.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct KeyedOp {
    /// The key.
    pub key: String,
    /// The operation with its time bounds.
    pub op: Timed,
}

/// A create of a unique object whose acknowledgement was seen.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Acknowledged {
    /// Object name.
    pub name: String,
    /// When the create was sent (µs from the start).
    pub invoked: u64,
    /// When the acknowledgement arrived.
    pub at: u64,
}

/// Everything the clients saw in one run.
#[derive(Debug, Default, Clone, Serialize, Deserialize)]
pub struct History {
    /// Register operations, per key.
    pub register: Vec<KeyedOp>,
    /// Acknowledged creates of unique objects.
    pub acknowledged: Vec<Acknowledged>,
    /// Successful pool acquires.
    pub grants: Vec<Grant>,
    /// Pool updates and releases accepted with a fencing token.
    pub accepted: Vec<Accepted>,
    /// Successful writes as (invoked, returned) times in µs.
    pub write_successes: Vec<(u64, u64)>,
    /// When each operation that failed for sure (not applied) returned, in µs.
    pub failures: Vec<u64>,
    /// Operations that failed for sure (not applied).
    pub failed: u64,
    /// Operations whose outcome is unknown.
    pub unknown: u64,
}

/// A shared recorder with the run's time origin.
#[derive(Clone)]
pub struct Recorder {
    origin: Instant,
    history: Arc<Mutex<History>>,
}

impl Recorder {
    /// A recorder whose clock starts now.
    pub fn new() -> Self {
        Self {
            origin: Instant::now(),
            history: Arc::new(Mutex::new(History::default())),
        }
    }

    /// Microseconds since the start of the run.
    pub fn now(&self) -> u64 {
        u64::try_from(self.origin.elapsed().as_micros()).unwrap_or(u64::MAX)
    }

    /// Runs `f` on the history.
    pub fn with<R>(&self, f: impl FnOnce(&mut History) -> R) -> R {
        let mut history = self.history.lock().unwrap_or_else(|p| p.into_inner());
        f(&mut history)
    }

    /// Records a register operation.
    pub fn register(&self, key: &str, invoked: u64, returned: Option<u64>, op: RegisterOp) {
        let is_write_success = matches!(op, RegisterOp::Created { .. } | RegisterOp::Swapped { .. });
        self.with(|h| {
            if is_write_success {
                if let Some(at) = returned {
                    h.write_successes.push((invoked, at));
                }
            }
            if returned.is_none() {
                h.unknown += 1;
            }
            h.register.push(KeyedOp {
                key: key.to_string(),
                op: Timed {
                    invoked,
                    returned,
                    op,
                },
            });
        });
    }

    /// Records an operation that certainly failed.
    pub fn failed(&self) {
        let at = self.now();
        self.with(|h| {
            h.failed += 1;
            h.failures.push(at);
        });
    }

    /// Records a successful write outside the registers.
    pub fn write_succeeded(&self, invoked: u64) {
        let at = self.now();
        self.with(|h| h.write_successes.push((invoked, at)));
    }

    /// A snapshot of the history.
    pub fn snapshot(&self) -> History {
        self.with(|h| h.clone())
    }
}

impl Default for Recorder {
    fn default() -> Self {
        Self::new()
    }
}
