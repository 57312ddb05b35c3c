//! The agent's identity and its binding to one cluster object.
//!
//! The agent generates its [`AgentId`] once (16 random bytes, a version 4 UUID) and keeps it
//! in `state/identity.json` with the uid of the cluster object it is bound to; a data directory
//! of an earlier agent, which has no such file, gets one at start-up. The agent binds itself to
//! the first cluster object whose change it accepts and refuses changes naming another one
//! ([`check`]), unless the change takes the agent over from exactly the cluster object it is
//! bound to. See [`drover_model::cluster::identity`] for the protocol.

use std::io::Read;

use drover_model::cluster::identity::{check_cluster_uid, AgentId, CLUSTER_HEADER, TAKE_OVER_HEADER};

use crate::error::AgentError;

/// Who sends a change: the cluster object it names, and the one it takes the agent over from.
/// Both absent for a control plane that knows nothing of identities.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Sender {
    /// The uid of the sending cluster object ([`CLUSTER_HEADER`]).
    pub cluster: Option<String>,
    /// The uid of the cluster object it takes the agent over from ([`TAKE_OVER_HEADER`]).
    pub take_over: Option<String>,
}

impl Sender {
    /// The sender of a change from cluster object `uid`.
    pub fn cluster(uid: &str) -> Self {
        Self {
            cluster: Some(uid.to_string()),
            take_over: None,
        }
    }

    /// Checks the headers' values: each a cluster object uid, and a takeover only by a named
    /// cluster object.
    pub fn checked(self) -> Result<Self, AgentError> {
        for (header, value) in [
            (CLUSTER_HEADER, &self.cluster),
            (TAKE_OVER_HEADER, &self.take_over),
        ] {
            if let Some(uid) = value {
                check_cluster_uid(uid).map_err(|e| AgentError::BadRequest(format!("{header}: {e}")))?;
            }
        }
        if self.take_over.is_some() && self.cluster.is_none() {
            return Err(AgentError::BadRequest(format!(
                "{TAKE_OVER_HEADER}: a takeover names the cluster object that takes over in {CLUSTER_HEADER}"
            )));
        }
        Ok(self)
    }
}

/// Whether a change from `sender` may be carried out by an agent bound to `bound`: `Ok(None)`
/// when the binding stays, `Ok(Some(uid))` when the agent is to be bound to `uid` first (its
/// first cluster object, or one that takes it over), and `409 bound: …` otherwise. Pure.
pub fn check(bound: Option<&str>, sender: &Sender) -> Result<Option<String>, AgentError> {
    let Some(offered) = sender.cluster.as_deref() else {
        // A control plane that names no cluster object cannot be told apart from another.
        return Ok(None);
    };
    match bound {
        None => Ok(Some(offered.to_string())),
        Some(bound) if bound == offered => Ok(None),
        Some(bound) if sender.take_over.as_deref() == Some(bound) => Ok(Some(offered.to_string())),
        Some(bound) => Err(AgentError::Bound {
            bound: bound.to_string(),
            offered: offered.to_string(),
        }),
    }
}

/// A new agent id from the system's random source.
pub fn generate() -> Result<AgentId, AgentError> {
    let path = "/dev/urandom";
    let mut bytes = [0u8; 16];
    std::fs::File::open(path)
        .and_then(|mut random| random.read_exact(&mut bytes))
        .map_err(|e| AgentError::io("cannot read", path, e))?;
    Ok(AgentId::from_random_bytes(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn from(cluster: Option<&str>, take_over: Option<&str>) -> Sender {
        Sender {
            cluster: cluster.map(str::to_string),
            take_over: take_over.map(str::to_string),
        }
    }

    /// The binding to record, or the refusal's status.
    type Expected = Result<Option<String>, u16>;

    #[test]
    fn binding_rules() {
        let bind = |uid: &str| Ok::<_, u16>(Some(uid.to_string()));
        let table: [(Option<&str>, Sender, Expected); 9] = [
            // (bound to, sender, expected: the binding to record, or the refusal's status)
            (None, from(None, None), Ok(None)),
            (Some("a"), from(None, None), Ok(None)),
            (None, from(Some("a"), None), bind("a")),
            (Some("a"), from(Some("a"), None), Ok(None)),
            (Some("a"), from(Some("b"), None), Err(409)),
            // A takeover names the cluster object the agent is bound to, or it is refused.
            (Some("a"), from(Some("b"), Some("a")), bind("b")),
            (Some("a"), from(Some("b"), Some("c")), Err(409)),
            (None, from(Some("b"), Some("a")), bind("b")),
            (Some("b"), from(Some("b"), Some("a")), Ok(None)),
        ];
        for (bound, sender, expected) in table {
            let got = check(bound, &sender).map_err(|e| e.status());
            assert_eq!(got, expected, "bound to {bound:?}, {sender:?}");
        }
    }

    #[test]
    fn a_refusal_says_who_drives_the_agent() {
        let e = check(Some("uid-a"), &Sender::cluster("uid-b")).unwrap_err();
        assert_eq!(e.status(), 409);
        let text = e.to_string();
        assert!(text.starts_with("bound: "), "{text}");
        assert!(text.contains("uid-a") && text.contains("uid-b"), "{text}");
    }

    #[test]
    fn headers_are_checked() {
        assert!(from(Some("a"), Some("b")).checked().is_ok());
        assert_eq!(from(None, Some("b")).checked().unwrap_err().status(), 400);
        assert_eq!(from(Some("a b"), None).checked().unwrap_err().status(), 400);
        assert_eq!(from(Some(""), None).checked().unwrap_err().status(), 400);
    }

    #[test]
    fn generated_ids_differ() {
        assert_ne!(generate().unwrap(), generate().unwrap());
    }
}
