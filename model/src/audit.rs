//! The audit log: every change made through a dialect (the platform API, Kubernetes-style
//! leases, Boskos and the pools) recorded where it is applied, so every replica holds the same
//! log — who (the principal), which dialect, the verb, the object, the result (`ok` or why it was
//! refused) and the revision. Changes the leader's own actors make (observations, placements,
//! reports, the reaper and the janitor) are not users' and are not recorded. The log keeps the
//! last `retention` entries, a replicated setting operators change.

use std::collections::VecDeque;

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::cluster::{ClusterCommand, ClusterOp};
use crate::command::{Command, CommandResult};
use crate::platform::Identity;
use crate::pool::PoolCommand;
use crate::service::ServiceOp;

/// Entries kept unless operators say otherwise.
pub const DEFAULT_RETENTION: u32 = 10_000;

/// Most entries operators may ask to keep.
pub const MAX_RETENTION: u32 = 1_000_000;

/// Most characters of a refusal's message that are recorded.
const MAX_RESULT: usize = 256;

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

/// What an audited change was.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Described {
    /// The dialect.
    pub dialect: &'static str,
    /// The verb.
    pub verb: String,
    /// The object.
    pub object: String,
    /// The principal the command itself carries (platform changes name their caller).
    pub caller: Option<String>,
}

/// `subject@issuer`.
pub fn principal_of(identity: &Identity) -> String {
    format!("{}@{}", identity.subject, identity.issuer)
}

/// The name of a serde-tagged value's variant (`{"kind": "register", …}` → `register`).
fn tag_of<T: Serialize>(value: &T, tag: &str) -> String {
    serde_json::to_value(value)
        .ok()
        .and_then(|v| v.get(tag).and_then(|t| t.as_str()).map(str::to_string))
        .unwrap_or_else(|| "change".to_string())
}

/// The verb and object of a pool change, without serializing it (Boskos heartbeats are
/// frequent).
fn pool(command: &PoolCommand) -> (&'static str, String) {
    match command {
        PoolCommand::SetConfig { .. } => ("set_config", "pools/config".to_string()),
        PoolCommand::Acquire { rtype, .. } => ("acquire", format!("pool/{rtype}")),
        PoolCommand::Reset { rtype, .. } => ("reset", format!("pool/{rtype}")),
        PoolCommand::ExpireClaims { rtype, .. } => ("expire_claims", format!("pool/{rtype}")),
        PoolCommand::SyncDynamic { rtype, .. } => ("sync_dynamic", format!("pool/{rtype}")),
        PoolCommand::AcquireByState { state, .. } => ("acquire_by_state", format!("pool/state/{state}")),
        PoolCommand::Release { name, .. } => ("release", format!("resource/{name}")),
        PoolCommand::Update { name, .. } => ("update", format!("resource/{name}")),
        PoolCommand::Retire { name } => ("retire", format!("resource/{name}")),
        PoolCommand::Fulfil { name } => ("fulfil", format!("resource/{name}")),
        PoolCommand::ReleaseClaim { .. } => ("release_claim", "claim".to_string()),
    }
}

/// What `command` is, if it is a change users make; `None` for the leader's own.
pub fn describe(command: &Command) -> Option<Described> {
    let plain = |dialect, verb: &str, object: String| Described {
        dialect,
        verb: verb.to_string(),
        object,
        caller: None,
    };
    match command {
        Command::Create { key, .. } => Some(plain("kubernetes", "create", key.to_string())),
        Command::Replace { key, .. } => Some(plain("kubernetes", "update", key.to_string())),
        Command::Delete { key, .. } => Some(plain("kubernetes", "delete", key.to_string())),
        Command::Pool(command) => {
            let (verb, object) = pool(command);
            Some(Described {
                dialect: "boskos",
                verb: verb.to_string(),
                object,
                caller: None,
            })
        }
        Command::Platform(command) => Some(Described {
            dialect: "platform",
            verb: tag_of(&command.op, "platform_op"),
            object: platform_object(&command.op),
            caller: Some(principal_of(&command.caller)),
        }),
        Command::Cluster(ClusterCommand::User { caller, change }) => Some(Described {
            dialect: "platform",
            verb: tag_of(change, "kind"),
            object: cluster_object(change),
            caller: Some(principal_of(caller)),
        }),
        Command::Service(command) => Some(Described {
            dialect: "platform",
            verb: tag_of(&command.change, "kind"),
            object: service_object(&command.change),
            caller: Some(principal_of(&command.caller)),
        }),
        Command::AuditRetention { .. } => Some(plain("platform", "set_audit_retention", "audit".into())),
        Command::Restore { .. } => Some(plain("platform", "restore_snapshot", "state".into())),
        Command::Cluster(ClusterCommand::Observe(_))
        | Command::Placement(_)
        | Command::ServiceReport(_)
        | Command::Noop
        | Command::Batch { .. } => None,
    }
}

fn platform_object(op: &crate::platform::PlatformOp) -> String {
    // Most platform changes name a tenant; the rest are about the caller's own user.
    serde_json::to_value(op)
        .ok()
        .and_then(|v| {
            v.get("tenant")
                .and_then(|t| t.as_str())
                .map(|t| format!("tenant/{t}"))
        })
        .unwrap_or_else(|| "user".to_string())
}

fn cluster_object(change: &ClusterOp) -> String {
    match change {
        ClusterOp::PutMetricsProvider { tenant, name, .. }
        | ClusterOp::DeleteMetricsProvider { tenant, name } => {
            format!("tenant/{tenant}/metricsprovider/{name}")
        }
        ClusterOp::PutMetric { tenant, name, .. } | ClusterOp::DeleteMetric { tenant, name } => {
            format!("tenant/{tenant}/metric/{name}")
        }
        other => other.cluster().map_or_else(
            || "cluster".to_string(),
            |cluster| format!("tenant/{}/cluster/{}", cluster.tenant, cluster.name),
        ),
    }
}

fn service_object(change: &ServiceOp) -> String {
    let services = change.services();
    match services.first() {
        Some((tenant, service)) => format!("tenant/{tenant}/service/{service}"),
        None => "service".to_string(),
    }
}

/// `ok`, or `refused: …`.
pub fn outcome(result: &CommandResult) -> String {
    match result {
        CommandResult::Refused(error) => {
            let message: String = error.to_string().chars().take(MAX_RESULT).collect();
            format!("refused: {message}")
        }
        _ => "ok".to_string(),
    }
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

    #[test]
    fn pool_verbs_are_the_commands_wire_names() {
        let commands = [
            PoolCommand::Release {
                name: "r".into(),
                dest: "d".into(),
                owner: "o".into(),
                token: None,
            },
            PoolCommand::ReleaseClaim { token: "t".into() },
            PoolCommand::Retire { name: "r".into() },
            PoolCommand::ExpireClaims {
                rtype: "t".into(),
                not_before_ms: 0,
            },
        ];
        for command in commands {
            assert_eq!(pool(&command).0, tag_of(&command, "pool_op"));
        }
    }

    #[test]
    fn the_leaders_own_changes_are_not_users() {
        assert!(describe(&Command::Noop).is_none());
        let release = Command::Pool(PoolCommand::Release {
            name: "r1".into(),
            dest: "dirty".into(),
            owner: "me".into(),
            token: None,
        });
        let described = describe(&release).unwrap();
        assert_eq!(
            (described.dialect, described.verb.as_str()),
            ("boskos", "release")
        );
        assert_eq!(described.object, "resource/r1");
    }
}
