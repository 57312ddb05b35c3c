//! The audit log: every change made through a dialect (the platform API, Kubernetes-style
//! leases, Boskos and the pools) recorded where it is applied, so every replica holds the same
//! log — who (the principal), which dialect, the verb, the object, the result (`ok` or why it was
//! refused) and the revision. Changes the leader's own actors make (observations, placements,
//! reports, the reaper and the janitor) are not users' and are not recorded. The log keeps the
//! last `retention` entries, a replicated setting operators change.

use std::collections::VecDeque;

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::platform::identity::Identity;

/// Entries kept unless operators say otherwise.
pub const DEFAULT_RETENTION: u32 = 10_000;

/// Most entries operators may ask to keep.
pub const MAX_RETENTION: u32 = 1_000_000;

/// Most characters of a refusal's message that are recorded.
pub(crate) const MAX_RESULT: usize = 256;

/// One recorded change.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct AuditEntry {
    /// The revision the change was applied at.
    pub revision: u64,
    /// Leader time of the commit (RFC 3339, milliseconds).
    pub time: String,
    /// Who: `subject@issuer` of the verified credential, `anonymous` on a node that runs open.
    pub principal: String,
    /// `platform`, `kubernetes` or `boskos`.
    pub dialect: String,
    /// What was asked (`create`, `update`, `delete`, `acquire`, `create_tenant`, …).
    pub verb: String,
    /// What it was asked of (`leases/ns/name`, `tenant/acme/service/web`, `pool/type`, …).
    pub object: String,
    /// `ok`, or `refused: …` with the reason.
    pub result: String,
}

/// The log as the state holds it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuditLog {
    entries: VecDeque<AuditEntry>,
    retention: u32,
}

impl Default for AuditLog {
    fn default() -> Self {
        Self {
            entries: VecDeque::new(),
            retention: DEFAULT_RETENTION,
        }
    }
}

impl AuditLog {
    /// Appends an entry, forgetting the oldest beyond the retention.
    pub fn record(&mut self, entry: AuditEntry) {
        self.entries.push_back(entry);
        self.trim();
    }

    fn trim(&mut self) {
        while self.entries.len() > self.retention as usize {
            self.entries.pop_front();
        }
    }

    /// Sets how many entries are kept (at least one).
    pub fn set_retention(&mut self, entries: u32) {
        self.retention = entries.clamp(1, MAX_RETENTION);
        self.trim();
    }

    /// How many entries are kept.
    pub fn retention(&self) -> u32 {
        self.retention
    }

    /// Up to `limit` entries applied after revision `since`, oldest first.
    pub fn since(&self, since: u64, limit: usize) -> Vec<AuditEntry> {
        self.entries
            .iter()
            .filter(|e| e.revision > since)
            .take(limit)
            .cloned()
            .collect()
    }
}

/// `subject@issuer`.
pub fn principal_of(identity: &Identity) -> String {
    format!("{}@{}", identity.subject, identity.issuer)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(revision: u64) -> AuditEntry {
        AuditEntry {
            revision,
            time: String::new(),
            principal: "alice@idp".into(),
            dialect: "kubernetes".into(),
            verb: "create".into(),
            object: format!("leases/ns/l{revision}"),
            result: "ok".into(),
        }
    }

    #[test]
    fn the_log_keeps_its_retention_and_reads_from_a_revision() {
        let mut log = AuditLog::default();
        log.set_retention(3);
        for revision in 1..=5 {
            log.record(entry(revision));
        }
        let kept: Vec<u64> = log.since(0, 100).iter().map(|e| e.revision).collect();
        assert_eq!(kept, [3, 4, 5]);
        assert_eq!(log.since(3, 100).len(), 2);
        assert_eq!(log.since(0, 1).len(), 1);
        log.set_retention(1);
        assert_eq!(log.since(0, 100).len(), 1);
        log.set_retention(0);
        assert_eq!(log.retention(), 1, "at least one entry is kept");
    }
}
