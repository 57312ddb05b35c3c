//! The seam between a node and the wire: every request one member sends another goes through a
//! [`Transport`]. Production nodes speak HTTP through [`PeerClient`]; a test or the simulation
//! plugs the in-process [`super::loopback::Switchboard`] instead, and the same `RaftHandle`
//! (elector, group commit, forwarding, read batching) runs over it unchanged.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use openraft::error::Fatal;
use openraft::raft::{
    AppendEntriesRequest, AppendEntriesResponse, SnapshotResponse, VoteRequest, VoteResponse,
};

use super::client::{PeerClient, PeerError};
use super::protocol::{
    LeaderRequest, LeaderResponse, NodeStatus, PreVoteRequest, PreVoteResponse, RaftAnswer,
};
// The openraft types a transport carries, named for transports outside this crate.
pub use crate::typ::{NodeId, RaftError, SnapshotMeta, TypeConfig, Vote};

/// A request on its way: the peer's answer, or why there is none.
pub type PeerFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T, PeerError>> + Send + 'a>>;

/// How this node reaches the member at a peer address. Each call is bounded by `timeout`; an
/// error says whether the request was certainly not delivered ([`PeerError::not_delivered`]).
pub trait Transport: Send + Sync + 'static {
    /// Raft's AppendEntries (and heartbeats).
    fn append<'a>(
        &'a self,
        addr: &'a str,
        request: AppendEntriesRequest<TypeConfig>,
        timeout: Duration,
    ) -> PeerFuture<'a, RaftAnswer<AppendEntriesResponse<NodeId>>>;

    /// Raft's RequestVote.
    fn vote<'a>(
        &'a self,
        addr: &'a str,
        request: VoteRequest<NodeId>,
        timeout: Duration,
    ) -> PeerFuture<'a, RaftAnswer<VoteResponse<NodeId>>>;

    /// A whole snapshot, for a member too far behind the leader's log.
    fn snapshot<'a>(
        &'a self,
        addr: &'a str,
        vote: Vote,
        meta: SnapshotMeta,
        data: Vec<u8>,
        timeout: Duration,
    ) -> PeerFuture<'a, Result<SnapshotResponse<NodeId>, Fatal<NodeId>>>;

    /// A request only the leader answers (writes, read index, membership changes).
    fn leader_request<'a>(
        &'a self,
        addr: &'a str,
        request: &'a LeaderRequest,
        timeout: Duration,
    ) -> PeerFuture<'a, LeaderResponse>;

    /// Whether the voter at `addr` would vote for this node now.
    fn pre_vote<'a>(
        &'a self,
        addr: &'a str,
        request: &'a PreVoteRequest,
        timeout: Duration,
    ) -> PeerFuture<'a, PreVoteResponse>;

    /// The member's own status, for `/cluster`.
    fn status<'a>(&'a self, addr: &'a str, timeout: Duration) -> PeerFuture<'a, NodeStatus>;
}

impl Transport for PeerClient {
    fn append<'a>(
        &'a self,
        addr: &'a str,
        request: AppendEntriesRequest<TypeConfig>,
        timeout: Duration,
    ) -> PeerFuture<'a, RaftAnswer<AppendEntriesResponse<NodeId>>> {
        Box::pin(async move { self.post_raft(addr, "/raft/append", &request, timeout).await })
    }

    fn vote<'a>(
        &'a self,
        addr: &'a str,
        request: VoteRequest<NodeId>,
        timeout: Duration,
    ) -> PeerFuture<'a, RaftAnswer<VoteResponse<NodeId>>> {
        Box::pin(async move { self.post_raft(addr, "/raft/vote", &request, timeout).await })
    }

    fn snapshot<'a>(
        &'a self,
        addr: &'a str,
        vote: Vote,
        meta: SnapshotMeta,
        data: Vec<u8>,
        timeout: Duration,
    ) -> PeerFuture<'a, Result<SnapshotResponse<NodeId>, Fatal<NodeId>>> {
        Box::pin(async move { self.send_snapshot(addr, vote, meta, &data, timeout).await })
    }

    fn leader_request<'a>(
        &'a self,
        addr: &'a str,
        request: &'a LeaderRequest,
        timeout: Duration,
    ) -> PeerFuture<'a, LeaderResponse> {
        Box::pin(PeerClient::leader_request(self, addr, request, timeout))
    }

    fn pre_vote<'a>(
        &'a self,
        addr: &'a str,
        request: &'a PreVoteRequest,
        timeout: Duration,
    ) -> PeerFuture<'a, PreVoteResponse> {
        Box::pin(PeerClient::pre_vote(self, addr, request, timeout))
    }

    fn status<'a>(&'a self, addr: &'a str, timeout: Duration) -> PeerFuture<'a, NodeStatus> {
        Box::pin(PeerClient::status(self, addr, timeout))
    }
}
