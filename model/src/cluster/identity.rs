//! Who an agent is, and which cluster object drives it.
//!
//! Every `drover agent` generates an [`AgentId`] once and keeps it in its data directory. It
//! reports the id in its facts ([`IdentifiedFacts`]) together with the uid of the cluster object
//! it is bound to, and binds itself to the first cluster object whose change it accepts: each
//! change a cluster actor sends names its cluster object's uid ([`CLUSTER_HEADER`]), and a
//! change naming another one is refused with `409 bound: …`. So two cluster objects registered
//! for one agent (under `127.0.0.1` and under `localhost`, say) can never both drive it.
//!
//! A cluster object takes over an agent bound to a cluster object that no longer exists
//! (deregistered, or registered again under a new uid) by naming that one
//! ([`TAKE_OVER_HEADER`]); the agent rebinds only if it names the object it is bound to, so two
//! racing takeovers cannot both win. A cluster object keeps its uid across a snapshot restore,
//! so a restored control plane drives its agents without taking them over.
//!
//! Changes that name no cluster object (older control planes, tests) are accepted as before;
//! an agent that reports no id (an older agent) cannot be told apart from another.

use std::fmt;

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::agent_api::NodeFacts;

/// Request header of a change: the uid of the cluster object that sends it.
pub const CLUSTER_HEADER: &str = "x-drover-cluster";

/// Request header of a change that takes the agent over: the uid of the cluster object the
/// agent is bound to now, which no longer exists.
pub const TAKE_OVER_HEADER: &str = "x-drover-take-over";

/// Longest cluster object uid an agent records.
pub const MAX_CLUSTER_UID_LEN: usize = 128;

/// Why an agent id is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0:?} is not an agent id: an agent id is a UUID such as 0f8e4c1a-6a3e-4b8e-9d43-7c1f2a9b5e60")]
pub struct BadAgentId(pub String);

/// An agent's identity: a random UUID it generated once and keeps in its data directory.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, ToSchema)]
#[serde(try_from = "String", into = "String")]
#[schema(value_type = String)]
pub struct AgentId(String);

impl AgentId {
    /// The id made of 16 random bytes (a version 4 UUID).
    pub fn from_random_bytes(bytes: [u8; 16]) -> Self {
        let id = uuid::Builder::from_random_bytes(bytes).into_uuid();
        Self(id.hyphenated().to_string())
    }

    /// Checks a received id (any UUID, written in its lowercase hyphenated form).
    pub fn parse(text: &str) -> Result<Self, BadAgentId> {
        match uuid::Uuid::try_parse(text) {
            Ok(id) if id.hyphenated().to_string() == text => Ok(Self(text.to_string())),
            _ => Err(BadAgentId(text.to_string())),
        }
    }

    /// The id as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl TryFrom<String> for AgentId {
    type Error = BadAgentId;
    fn try_from(text: String) -> Result<Self, BadAgentId> {
        Self::parse(&text)
    }
}

impl From<AgentId> for String {
    fn from(id: AgentId) -> String {
        id.0
    }
}

impl fmt::Display for AgentId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Checks a cluster object uid a change names: 1 to [`MAX_CLUSTER_UID_LEN`] visible ASCII
/// characters.
pub fn check_cluster_uid(uid: &str) -> Result<(), String> {
    if (1..=MAX_CLUSTER_UID_LEN).contains(&uid.len()) && uid.bytes().all(|b| b.is_ascii_graphic()) {
        Ok(())
    } else {
        Err(format!(
            "a cluster object uid is 1 to {MAX_CLUSTER_UID_LEN} visible ASCII characters"
        ))
    }
}

/// Who answers at a cluster's endpoint.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgentIdentity {
    /// The agent's id.
    pub agent_id: AgentId,
    /// The uid of the cluster object it is bound to, once one has driven it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster_uid: Option<String>,
}

/// `GET /v1/facts` as an agent with an identity answers it: its facts, its id and the cluster
/// object it is bound to. A control plane that knows nothing of identities reads the facts
/// alone.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IdentifiedFacts {
    /// The machine, capacity and pressure.
    #[serde(flatten)]
    pub facts: NodeFacts,
    /// The agent's id (absent from agents older than identities).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<AgentId>,
    /// The uid of the cluster object the agent is bound to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster_uid: Option<String>,
}

impl IdentifiedFacts {
    /// Who answered, when the agent has an identity.
    pub fn identity(&self) -> Option<AgentIdentity> {
        self.agent_id.clone().map(|agent_id| AgentIdentity {
            agent_id,
            cluster_uid: self.cluster_uid.clone(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::agent_api::Resources;
    use std::collections::BTreeMap;

    #[test]
    fn agent_ids_are_uuids() {
        let id = AgentId::from_random_bytes([0xab; 16]);
        assert_eq!(AgentId::parse(id.as_str()), Ok(id.clone()));
        assert_eq!(id.as_str().len(), 36);
        assert_ne!(id, AgentId::from_random_bytes([8; 16]));
        assert!(AgentId::parse("edge").is_err());
        assert!(AgentId::parse("").is_err());
        // Only the canonical spelling, so that one agent has one id.
        assert!(AgentId::parse(&id.as_str().to_uppercase()).is_err());
        assert!(serde_json::from_str::<AgentId>("\"not-an-id\"").is_err());
    }

    #[test]
    fn cluster_uids_are_bounded_visible_text() {
        assert!(check_cluster_uid("4b1c8a1e-0000-4000-8000-000000000001").is_ok());
        assert!(check_cluster_uid("").is_err());
        assert!(check_cluster_uid("a b").is_err());
        assert!(check_cluster_uid(&"u".repeat(MAX_CLUSTER_UID_LEN + 1)).is_err());
    }

    #[test]
    fn facts_carry_the_identity_beside_what_older_control_planes_read() {
        let facts = NodeFacts {
            agent: "edge-1".into(),
            executor: "sim".into(),
            nodes: 1,
            cpus: 2,
            memory_mib: 1024,
            labels: BTreeMap::new(),
            capacity: Resources::default(),
            free: Resources::default(),
            pressure: None,
            used: None,
            confinement: None,
            version: "test".into(),
            generation: None,
        };
        let identified = IdentifiedFacts {
            facts: facts.clone(),
            agent_id: Some(AgentId::from_random_bytes([1; 16])),
            cluster_uid: Some("c-1".into()),
        };
        let wire = serde_json::to_string(&identified).unwrap();
        // An older control plane reads the same answer as facts.
        assert_eq!(serde_json::from_str::<NodeFacts>(&wire).unwrap(), facts);
        let read: IdentifiedFacts = serde_json::from_str(&wire).unwrap();
        assert_eq!(read, identified);
        assert_eq!(read.identity().unwrap().cluster_uid.as_deref(), Some("c-1"));
        // An older agent's facts: no identity.
        let old: IdentifiedFacts = serde_json::from_str(&serde_json::to_string(&facts).unwrap()).unwrap();
        assert_eq!(old.identity(), None);
    }
}
