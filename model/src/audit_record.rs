//! The audit record of a proposal: what change a command is (its dialect, verb and object) and
//! how it ended, derived from the command and its result when the state applies it.

use serde::Serialize;

use crate::audit::{principal_of, MAX_RESULT};
use crate::cluster::{ClusterCommand, ClusterOp};
use crate::command::{Command, CommandResult};
use crate::pool::PoolCommand;
use crate::service::ServiceOp;

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
        Command::Krake(command) => Some(Described {
            dialect: "krake",
            verb: match command.change {
                crate::krake::KrakeChange::Create { .. } => "create",
                crate::krake::KrakeChange::Update { .. } => "update",
                crate::krake::KrakeChange::Delete { force: false } => "delete",
                crate::krake::KrakeChange::Delete { force: true } => "force_delete",
                crate::krake::KrakeChange::Hook {
                    call: crate::krake::HookCall::Complete { .. },
                } => "complete",
                crate::krake::KrakeChange::Hook {
                    call: crate::krake::HookCall::Shutdown { .. },
                } => "shutdown",
                crate::krake::KrakeChange::Hook {
                    call: crate::krake::HookCall::Retry,
                } => "retry",
            }
            .to_string(),
            object: command.key.to_string(),
            caller: Some(command.caller.clone()),
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
