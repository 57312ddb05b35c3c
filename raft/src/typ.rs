//! The openraft type configuration and short aliases for its generic types. Only this crate
//! names them; everything outside sees the facade in [`crate::handle`].

use std::fmt;
use std::io::Cursor;

use drover_model::{CommandResult, Proposal};
use serde::{Deserialize, Serialize};

/// A node's id in the cluster, as given by `--node-id`.
pub type NodeId = u64;

/// The addresses a member is reached at, stored in the replicated membership.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PeerNode {
    /// `host:port` of the peer (Raft) listener.
    pub peer_addr: String,
    /// `host:port` of the public API listener, when known.
    #[serde(default)]
    pub api_addr: String,
}

impl fmt::Display for PeerNode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "peer={} api={}", self.peer_addr, self.api_addr)
    }
}

openraft::declare_raft_types!(
    /// Drover's Raft types: proposals in, command results out, snapshots as bytes, tokio with
    /// replaceable randomness.
    pub TypeConfig:
        D = Proposal,
        R = CommandResult,
        NodeId = NodeId,
        Node = PeerNode,
        Entry = openraft::Entry<TypeConfig>,
        SnapshotData = Cursor<Vec<u8>>,
        AsyncRuntime = crate::runtime::DroverRuntime,
);

/// The Raft instance.
pub type Raft = openraft::Raft<TypeConfig>;
/// A log id (term and index).
pub type LogId = openraft::LogId<NodeId>;
/// One log entry.
pub type Entry = openraft::Entry<TypeConfig>;
/// Storage errors as openraft wants them.
pub type StorageError = openraft::StorageError<NodeId>;
/// Membership with its log id.
pub type StoredMembership = openraft::StoredMembership<NodeId, PeerNode>;
/// Snapshot metadata.
pub type SnapshotMeta = openraft::SnapshotMeta<NodeId, PeerNode>;
/// A snapshot with its data.
pub type Snapshot = openraft::Snapshot<TypeConfig>;
/// Vote.
pub type Vote = openraft::Vote<NodeId>;
/// Metrics published by openraft.
pub type RaftMetrics = openraft::RaftMetrics<NodeId, PeerNode>;
/// Errors of Raft API calls.
pub type RaftError<E = openraft::error::Infallible> = openraft::error::RaftError<NodeId, E>;
/// Errors of a client write.
pub type ClientWriteError = openraft::error::ClientWriteError<NodeId, PeerNode>;
