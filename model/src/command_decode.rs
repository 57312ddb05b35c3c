//! Decoding of [`Command`] without serde's buffering. `Command` is written internally tagged
//! (`{"op": "replace", ...}`), and serde's derived decoder for such enums first copies the whole
//! object into an intermediate tree to find the tag, then decodes from that copy; for a
//! `Command::Batch` of writes it does so again for every command inside. That was 5 % of a
//! node's CPU under write load, where every node decodes every command once (the leader from
//! the forwarded batch, the followers from AppendEntries).
//!
//! Serde writes the tag first, so this decoder reads the first key and, when it is `op`, decodes
//! the rest of the object straight into the variant. Otherwise (a hand-written document) it
//! gathers the object first, as serde would. What it accepts and refuses is what the derived
//! decoder accepted and refused; the round-trip tests below hold it to the derived encoder.

use std::collections::BTreeMap;
use std::fmt;

use serde::de::value::MapAccessDeserializer;
use serde::de::{self, IgnoredAny, MapAccess, Visitor};
use serde::{Deserialize, Deserializer};
use serde_json::{Map, Value};

use crate::cluster::ClusterCommand;
use crate::command::{Command, Precondition, Proposal};
use crate::object::{LeaseSpec, ObjectKey};
use crate::platform::PlatformCommand;
use crate::pool::PoolCommand;
use crate::service::ServiceCommand;

/// The tag's values, as `rename_all = "snake_case"` writes them.
#[derive(Deserialize)]
#[serde(rename_all = "snake_case")]
enum Op {
    Create,
    Replace,
    Delete,
    Pool,
    Platform,
    Cluster,
    Service,
    Krake,
    Placement,
    ServiceReport,
    Restore,
    AuditRetention,
    Noop,
    Batch,
}

// The fields of the struct variants. Converting them into `Command` below names every field, so
// a field added to a variant and not here does not compile; the tests catch a changed attribute.

#[derive(Deserialize)]
struct CreateFields {
    key: ObjectKey,
    spec: LeaseSpec,
    labels: BTreeMap<String, String>,
    annotations: BTreeMap<String, String>,
    uid: String,
    created_at: String,
}

#[derive(Deserialize)]
struct ReplaceFields {
    key: ObjectKey,
    spec: LeaseSpec,
    labels: BTreeMap<String, String>,
    annotations: BTreeMap<String, String>,
    precondition: Precondition,
}

#[derive(Deserialize)]
struct DeleteFields {
    key: ObjectKey,
    precondition: Precondition,
}

#[derive(Deserialize)]
struct BatchFields {
    proposals: Vec<Proposal>,
}

impl Op {
    /// Decodes the fields of this variant from `fields`, the object without its tag.
    fn decode<'de, D: Deserializer<'de>>(self, fields: D) -> Result<Command, D::Error> {
        Ok(match self {
            Op::Create => {
                let f = CreateFields::deserialize(fields)?;
                Command::Create {
                    key: f.key,
                    spec: f.spec,
                    labels: f.labels,
                    annotations: f.annotations,
                    uid: f.uid,
                    created_at: f.created_at,
                }
            }
            Op::Replace => {
                let f = ReplaceFields::deserialize(fields)?;
                Command::Replace {
                    key: f.key,
                    spec: f.spec,
                    labels: f.labels,
                    annotations: f.annotations,
                    precondition: f.precondition,
                }
            }
            Op::Delete => {
                let f = DeleteFields::deserialize(fields)?;
                Command::Delete {
                    key: f.key,
                    precondition: f.precondition,
                }
            }
            Op::Pool => Command::Pool(PoolCommand::deserialize(fields)?),
            Op::Platform => Command::Platform(PlatformCommand::deserialize(fields)?),
            Op::Cluster => Command::Cluster(ClusterCommand::deserialize(fields)?),
            Op::Service => Command::Service(ServiceCommand::deserialize(fields)?),
            Op::Krake => Command::Krake(crate::krake::KrakeCommand::deserialize(fields)?),
            Op::Placement => Command::Placement(crate::service::placement::Placement::deserialize(fields)?),
            Op::ServiceReport => {
                Command::ServiceReport(crate::service::reconcile::ServiceReport::deserialize(fields)?)
            }
            Op::Restore => {
                #[derive(Deserialize)]
                struct Fields {
                    state: Box<crate::state::State>,
                }
                Command::Restore {
                    state: Fields::deserialize(fields)?.state,
                }
            }
            Op::AuditRetention => {
                #[derive(Deserialize)]
                struct Fields {
                    entries: u32,
                }
                Command::AuditRetention {
                    entries: Fields::deserialize(fields)?.entries,
                }
            }
            Op::Noop => {
                IgnoredAny::deserialize(fields)?;
                Command::Noop
            }
            Op::Batch => Command::Batch {
                proposals: BatchFields::deserialize(fields)?.proposals,
            },
        })
    }
}

/// A map key: the tag, or any other name.
enum Key {
    Op,
    Other(String),
}

impl<'de> Deserialize<'de> for Key {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct KeyVisitor;

        impl Visitor<'_> for KeyVisitor {
            type Value = Key;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a field name")
            }

            fn visit_str<E: de::Error>(self, name: &str) -> Result<Key, E> {
                Ok(if name == "op" {
                    Key::Op
                } else {
                    Key::Other(name.to_string())
                })
            }
        }

        deserializer.deserialize_identifier(KeyVisitor)
    }
}

struct CommandVisitor;

impl<'de> Visitor<'de> for CommandVisitor {
    type Value = Command;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a command: an object with an \"op\" field")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Command, A::Error> {
        match map.next_key::<Key>()? {
            None => Err(de::Error::missing_field("op")),
            Some(Key::Op) => {
                let op: Op = map.next_value()?;
                op.decode(MapAccessDeserializer::new(map))
            }
            Some(Key::Other(first)) => {
                let mut object = Map::new();
                object.insert(first, map.next_value::<Value>()?);
                while let Some((name, value)) = map.next_entry::<String, Value>()? {
                    object.insert(name, value);
                }
                let op = object
                    .remove("op")
                    .ok_or_else(|| de::Error::missing_field("op"))?;
                let op = Op::deserialize(op).map_err(de::Error::custom)?;
                op.decode(Value::Object(object)).map_err(de::Error::custom)
            }
        }
    }
}

impl<'de> Deserialize<'de> for Command {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(CommandVisitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::object::{CoordinationLeaseSpec, ObjectKind};
    use crate::pool::PoolConfig;

    fn key() -> ObjectKey {
        ObjectKey::new(ObjectKind::CoordinationLease, "ns", "a")
    }

    fn spec(holder: &str) -> LeaseSpec {
        LeaseSpec::Coordination(CoordinationLeaseSpec {
            holder_identity: Some(holder.into()),
            ..Default::default()
        })
    }

    fn every_kind() -> Vec<Command> {
        let replace = Command::Replace {
            key: key(),
            spec: spec("n2"),
            labels: BTreeMap::from([("app".into(), "x".into())]),
            annotations: BTreeMap::new(),
            precondition: Precondition {
                resource_version: Some(7),
                uid: Some("u-1".into()),
            },
        };
        let release = Command::Pool(PoolCommand::Release {
            name: "r1".into(),
            dest: "free".into(),
            owner: "me".into(),
            token: Some(3),
        });
        let mut keyed = Proposal::new(replace.clone()).with_idempotency_key(Some("k".into()));
        keyed.now_ms = 42;
        vec![
            Command::Create {
                key: key(),
                spec: spec("n1"),
                labels: BTreeMap::new(),
                annotations: BTreeMap::from([("note".into(), "\"quoted\"".into())]),
                uid: "u-1".into(),
                created_at: "2026-11-22T19:00:00Z".into(),
            },
            replace,
            Command::Delete {
                key: key(),
                precondition: Precondition::default(),
            },
            release.clone(),
            Command::Pool(PoolCommand::SetConfig {
                config: PoolConfig::default(),
            }),
            Command::Cluster(crate::cluster::ClusterCommand::User {
                caller: crate::platform::identity::Identity {
                    issuer: "https://idp".into(),
                    subject: "alice".into(),
                },
                change: crate::cluster::ClusterOp::Drain {
                    cluster: crate::cluster::ClusterRef {
                        tenant: "acme".into(),
                        name: "edge".into(),
                    },
                    draining: true,
                },
            }),
            Command::Cluster(crate::cluster::ClusterCommand::Observe(
                crate::cluster::ClusterObservation {
                    metrics: None,
                    cluster: crate::cluster::ClusterRef {
                        tenant: "acme".into(),
                        name: "edge".into(),
                    },
                    uid: "c-1".into(),
                    state: crate::cluster::ClusterState::NotReady,
                    reason: "drained".into(),
                    facts: None,
                    instances: Some(Default::default()),
                    set_errors: None,
                    sets: None,
                    sets_changed: None,
                    restarted: Vec::new(),
                },
            )),
            Command::Service(crate::service::ServiceCommand {
                caller: crate::platform::identity::Identity {
                    issuer: "https://idp".into(),
                    subject: "alice".into(),
                },
                change: crate::service::ServiceOp::Revise {
                    tenant: "acme".into(),
                    service: "web".into(),
                    previous: 3,
                    change: crate::service::Change::Scale {
                        scale: BTreeMap::from([("frontend".into(), 5)]),
                    },
                    comment: "more".into(),
                    accept: true,
                    remove_links: true,
                },
            }),
            Command::ServiceReport(crate::service::reconcile::ServiceReport {
                tenant: "acme".into(),
                service: "web".into(),
                uid: "u-1".into(),
                status: crate::service::reconcile::ReconcileStatus {
                    phase: crate::service::reconcile::Phase::Deleting,
                    reason: "removing 2 instances".into(),
                    revision: Some(3),
                    progress: crate::service::reconcile::Progress {
                        desired: 0,
                        updated: 0,
                        ready: 0,
                        old: 2,
                    },
                    alert: None,
                    endpoints: Vec::new(),
                },
                finalize: true,
                switched_to: None,
            }),
            Command::Noop,
            Command::Batch {
                proposals: vec![keyed, Proposal::new(release), Proposal::new(Command::Noop)],
            },
        ]
    }

    #[test]
    fn every_command_decodes_to_what_was_encoded() {
        for command in every_kind() {
            let bytes = serde_json::to_vec(&command).expect("encode");
            let decoded: Command = serde_json::from_slice(&bytes).expect("decode");
            assert_eq!(decoded, command, "{}", String::from_utf8_lossy(&bytes));
        }
    }

    #[test]
    fn a_tag_that_is_not_first_still_decodes() {
        for command in every_kind() {
            let mut document = serde_json::to_value(&command).expect("encode");
            let object = document.as_object_mut().expect("an object");
            let op = object.remove("op").expect("a tag");
            // The other fields, then the tag last.
            let mut text = serde_json::to_string(&document).expect("encode");
            text.pop();
            if text.len() > 1 {
                text.push(',');
            }
            text.push_str(&format!("\"op\":{op}}}"));
            let decoded: Command = serde_json::from_str(&text).expect("decode");
            assert_eq!(decoded, command, "{text}");
        }
    }

    #[test]
    fn what_the_derived_decoder_refused_is_refused() {
        for (text, expected) in [
            (r#"{}"#, "missing field `op`"),
            (r#"{"key": 1}"#, "missing field `op`"),
            (r#"{"op": "rename"}"#, "unknown variant `rename`"),
            (
                r#"{"op": "delete", "key": {"kind": "CoordinationLease", "namespace": "ns", "name": "a"}}"#,
                "missing field `precondition`",
            ),
            (r#"{"op": "batch", "proposals": 3}"#, "invalid type: integer `3`"),
            (r#"[1, 2]"#, "invalid type: sequence"),
        ] {
            let error = serde_json::from_str::<Command>(text).expect_err(text).to_string();
            assert!(error.contains(expected), "{text}: {error}");
        }
    }
}
