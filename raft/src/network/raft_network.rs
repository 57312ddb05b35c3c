//! openraft's network over a [`Transport`]: one [`PeerConnection`] per target, whose every RPC
//! goes through the transport (HTTP between nodes, or the simulation's loopback).

use std::future::Future;
use std::sync::Arc;

use openraft::error::{
    Fatal, NetworkError, RPCError, RemoteError, ReplicationClosed, StreamingError, Unreachable,
};
use openraft::network::{RPCOption, RaftNetwork, RaftNetworkFactory};
use openraft::raft::{
    AppendEntriesRequest, AppendEntriesResponse, SnapshotResponse, VoteRequest, VoteResponse,
};
use openraft::OptionalSend;

use super::client::PeerError;
use super::protocol::RaftAnswer;
use super::transport::Transport;
use crate::typ::{NodeId, PeerNode, RaftError, Snapshot, TypeConfig, Vote};

/// Creates one [`PeerConnection`] per target for openraft.
#[derive(Clone)]
pub struct Network {
    transport: Arc<dyn Transport>,
}

impl Network {
    /// A network that sends through `transport`.
    pub fn new(transport: Arc<dyn Transport>) -> Self {
        Self { transport }
    }
}

impl RaftNetworkFactory<TypeConfig> for Network {
    type Network = PeerConnection;

    async fn new_client(&mut self, target: NodeId, node: &PeerNode) -> PeerConnection {
        PeerConnection {
            transport: self.transport.clone(),
            target,
            addr: node.peer_addr.clone(),
        }
    }
}

/// openraft's view of one peer.
pub struct PeerConnection {
    transport: Arc<dyn Transport>,
    target: NodeId,
    addr: String,
}

fn rpc_error<E: std::error::Error>(error: PeerError) -> RPCError<NodeId, PeerNode, E> {
    match error {
        PeerError::Connect { .. } => RPCError::Unreachable(Unreachable::new(&error)),
        other => RPCError::Network(NetworkError::new(&other)),
    }
}

impl PeerConnection {
    /// openraft's error for an answer that did not come, or a refusal that did.
    // The error type is the one openraft's `RaftNetwork` methods return.
    #[allow(clippy::result_large_err)]
    fn remote<T>(
        &self,
        answer: Result<RaftAnswer<T>, PeerError>,
    ) -> Result<T, RPCError<NodeId, PeerNode, RaftError>> {
        answer
            .map_err(rpc_error)?
            .map_err(|e| RPCError::RemoteError(RemoteError::new(self.target, e)))
    }
}

impl RaftNetwork<TypeConfig> for PeerConnection {
    async fn append_entries(
        &mut self,
        rpc: AppendEntriesRequest<TypeConfig>,
        option: RPCOption,
    ) -> Result<AppendEntriesResponse<NodeId>, RPCError<NodeId, PeerNode, RaftError>> {
        let answer = self.transport.append(&self.addr, rpc, option.hard_ttl()).await;
        self.remote(answer)
    }

    async fn vote(
        &mut self,
        rpc: VoteRequest<NodeId>,
        option: RPCOption,
    ) -> Result<VoteResponse<NodeId>, RPCError<NodeId, PeerNode, RaftError>> {
        let answer = self.transport.vote(&self.addr, rpc, option.hard_ttl()).await;
        self.remote(answer)
    }

    async fn full_snapshot(
        &mut self,
        vote: Vote,
        snapshot: Snapshot,
        cancel: impl Future<Output = ReplicationClosed> + OptionalSend + 'static,
        option: RPCOption,
    ) -> Result<SnapshotResponse<NodeId>, StreamingError<TypeConfig, Fatal<NodeId>>> {
        let data = snapshot.snapshot.into_inner();
        let send = self
            .transport
            .snapshot(&self.addr, vote, snapshot.meta, data, option.hard_ttl());
        let answer = tokio::select! {
            closed = cancel => return Err(StreamingError::Closed(closed)),
            sent = send => sent.map_err(|e| match e {
                PeerError::Connect { .. } => StreamingError::Unreachable(Unreachable::new(&e)),
                other => StreamingError::Network(NetworkError::new(&other)),
            })?,
        };
        answer.map_err(|e| StreamingError::RemoteError(RemoteError::new(self.target, e)))
    }
}
