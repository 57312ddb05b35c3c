//! Wire types of the peer requests that are Drover's own (not openraft's).

use drover_model::{CommandResult, Proposal};
use serde::{Deserialize, Serialize};

use crate::typ::{LogId, NodeId, PeerNode, RaftError, SnapshotMeta, Vote};

/// What a Raft RPC's receiver answers: its Raft's result, refusals included.
pub type RaftAnswer<T, E = openraft::error::Infallible> = Result<T, RaftError<E>>;

/// A request only the leader can answer; followers forward it.
// One message per request, moved a few times: boxing would only add an allocation.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum LeaderRequest {
    /// Propose and commit a command.
    Write(Proposal),
    /// Propose and commit several commands (a follower's clients' writes sent together); each
    /// gets its own answer.
    WriteBatch(Vec<Proposal>),
    /// Confirm leadership and return the index a linearizable read must wait for.
    ReadIndex,
    /// Add a member as learner, wait for it to catch up, then promote it to voter.
    AddMember {
        /// The new member's id.
        id: NodeId,
        /// Its addresses.
        node: PeerNode,
    },
    /// Remove a member (voter or learner).
    RemoveMember {
        /// The member to remove.
        id: NodeId,
    },
}

/// The leader's answer to a [`LeaderRequest`].
// One message per request, moved a few times: boxing would only add an allocation.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum LeaderResponse {
    /// The write committed at `index` with `result`.
    Written {
        /// Log index of the committed entry.
        index: u64,
        /// What the state machine answered.
        result: CommandResult,
    },
    /// The answers to a [`LeaderRequest::WriteBatch`], in its order.
    Batch {
        /// One answer per proposal.
        answers: Vec<LeaderResponse>,
    },
    /// Reads must wait until this index is applied.
    ReadIndex {
        /// The read index.
        index: u64,
    },
    /// The membership change committed.
    MembershipChanged,
    /// The receiver is not the leader; `leader` is who it believes is.
    NotLeader {
        /// The leader the receiver knows of.
        leader: Option<NodeId>,
    },
    /// The leader refused the request; nothing was applied.
    Refused {
        /// Why.
        message: String,
    },
    /// The leader failed while the request was in flight: it may have been applied.
    Failed {
        /// What happened.
        message: String,
    },
}

/// A candidate asking whether a voter would vote for it, before it starts a term.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PreVoteRequest {
    /// The node that would campaign.
    pub candidate: NodeId,
    /// The last entry of its log.
    pub last_log_id: Option<LogId>,
}

/// A voter's answer to a [`PreVoteRequest`].
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PreVoteResponse {
    /// Whether it would vote for the candidate now.
    pub granted: bool,
    /// Why not, when it would not.
    pub reason: String,
}

/// What one node reports about itself.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeStatus {
    /// The node's id.
    pub id: NodeId,
    /// Its public API address.
    pub api_addr: String,
    /// Its peer address.
    pub peer_addr: String,
    /// `leader`, `follower`, `candidate`, `learner` or `shutdown`.
    pub role: String,
    /// The term it is in.
    pub term: u64,
    /// The leader it knows of.
    pub leader: Option<NodeId>,
    /// Index of its last log entry.
    pub last_log_index: u64,
    /// The commit index it last heard of.
    pub commit_index: u64,
    /// The last index its state machine applied.
    pub applied_index: u64,
    /// Index of its current snapshot.
    pub snapshot_index: u64,
    /// Index up to which its log was purged (disk is bounded behind snapshots).
    pub purged_index: u64,
    /// Its software version (empty from a node older than the field).
    #[serde(default)]
    pub version: String,
}

/// The header of a snapshot transfer; the snapshot bytes follow it in the body.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct SnapshotHeader {
    pub(crate) vote: Vote,
    pub(crate) meta: SnapshotMeta,
}

/// Frames a snapshot: a 4-byte big-endian header length, the JSON header, then the data.
pub(crate) fn frame_snapshot(header: &SnapshotHeader, data: &[u8]) -> Result<Vec<u8>, serde_json::Error> {
    let header = serde_json::to_vec(header)?;
    let mut body = Vec::with_capacity(4 + header.len() + data.len());
    // A JSON header of a vote and a membership is far below 4 GiB.
    body.extend_from_slice(&u32::try_from(header.len()).unwrap_or(u32::MAX).to_be_bytes());
    body.extend_from_slice(&header);
    body.extend_from_slice(data);
    Ok(body)
}

/// Splits a framed snapshot into its header and data.
pub(crate) fn unframe_snapshot(body: &[u8]) -> Result<(SnapshotHeader, Vec<u8>), String> {
    let (len, rest) = body
        .split_at_checked(4)
        .ok_or("snapshot body shorter than its length prefix")?;
    let len = u32::from_be_bytes([len[0], len[1], len[2], len[3]]) as usize;
    let (header, data) = rest
        .split_at_checked(len)
        .ok_or("snapshot body shorter than its header")?;
    let header = serde_json::from_slice(header).map_err(|e| format!("bad snapshot header: {e}"))?;
    Ok((header, data.to_vec()))
}
