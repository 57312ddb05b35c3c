//! Inbound peer traffic, whatever carried it: what a member does with each request another
//! member sends. The HTTP router ([`super::server`]) and the in-process
//! [`super::loopback::Switchboard`] both hand requests to a [`PeerService`], so a simulated
//! cluster runs the same checks and the same elector bookkeeping as a real one.

use std::io::Cursor;

use openraft::error::Fatal;
use openraft::raft::{
    AppendEntriesRequest, AppendEntriesResponse, SnapshotResponse, VoteRequest, VoteResponse,
};
use thiserror::Error;

use super::protocol::RaftAnswer;
use super::protocol::{LeaderRequest, LeaderResponse, NodeStatus, PreVoteRequest, PreVoteResponse};
use crate::handle::RaftHandle;
use crate::typ::{NodeId, Snapshot, SnapshotMeta, TypeConfig, Vote};

/// Why a member did not hand a peer's request to Raft at all.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum Refusal {
    /// The request does not decode.
    #[error("malformed body: {0}")]
    Malformed(String),
    /// A vote or log id no member could have sent ([`super::plausible`]).
    #[error("{0}")]
    Implausible(String),
}

impl Refusal {
    /// The HTTP status the refusal is answered with.
    pub fn status(&self) -> u16 {
        match self {
            Refusal::Malformed(_) => 400,
            Refusal::Implausible(_) => 422,
        }
    }

    fn implausible(message: String) -> Self {
        tracing::warn!(%message, "refused an implausible peer request");
        Refusal::Implausible(message)
    }
}

/// One member's answers to its peers.
#[derive(Clone)]
pub struct PeerService {
    handle: RaftHandle,
}

impl PeerService {
    /// The service of the member behind `handle`.
    pub fn new(handle: RaftHandle) -> Self {
        Self { handle }
    }

    /// Raft's AppendEntries, after the plausibility check.
    pub async fn append(
        &self,
        request: AppendEntriesRequest<TypeConfig>,
    ) -> Result<RaftAnswer<AppendEntriesResponse<NodeId>>, Refusal> {
        let log_ids = [request.prev_log_id, request.leader_commit];
        self.handle
            .known_to_peers()
            .check(&request.vote, &log_ids, &request.entries)
            .map_err(Refusal::implausible)?;
        let answer = self.handle.raw().append_entries(request).await;
        // Anything but a refusal for a stale term means the sender is this node's leader.
        if matches!(&answer, Ok(response) if !matches!(response, AppendEntriesResponse::HigherVote(_))) {
            self.handle.heard_from_leader();
        }
        Ok(answer)
    }

    /// Raft's RequestVote, after the plausibility check.
    pub async fn vote(
        &self,
        request: VoteRequest<NodeId>,
    ) -> Result<RaftAnswer<VoteResponse<NodeId>>, Refusal> {
        self.handle
            .known_to_peers()
            .check(&request.vote, &[request.last_log_id], &[])
            .map_err(Refusal::implausible)?;
        let answer = self.handle.raw().vote(request).await;
        // Having voted, give the candidate a full timeout to win before campaigning here.
        if matches!(&answer, Ok(response) if response.vote_granted) {
            self.handle.heard_from_leader();
        }
        Ok(answer)
    }

    /// Whether this member would vote for the candidate now.
    pub fn pre_vote(&self, request: &PreVoteRequest) -> PreVoteResponse {
        self.handle.answer_pre_vote(request)
    }

    /// A whole snapshot from the leader, after the plausibility check.
    pub async fn snapshot(
        &self,
        vote: Vote,
        meta: SnapshotMeta,
        data: Vec<u8>,
    ) -> Result<Result<SnapshotResponse<NodeId>, Fatal<NodeId>>, Refusal> {
        self.handle
            .known_to_peers()
            .check(&vote, &[meta.last_log_id], &[])
            .map_err(Refusal::implausible)?;
        let snapshot = Snapshot {
            meta,
            snapshot: Box::new(Cursor::new(data)),
        };
        let answer = self.handle.raw().install_full_snapshot(vote, snapshot).await;
        if matches!(&answer, Ok(response) if response.vote == vote) {
            self.handle.heard_from_leader();
        }
        Ok(answer)
    }

    /// A request only the leader answers.
    pub async fn leader(&self, request: LeaderRequest) -> LeaderResponse {
        self.handle.serve_leader_request(request).await
    }

    /// This member's own status.
    pub fn status(&self) -> NodeStatus {
        self.handle.status()
    }
}
