//! An in-process network for clusters of real [`RaftHandle`]s in one test or simulation: each
//! member's [`Transport`] hands requests straight to the addressed member's [`PeerService`], with
//! no sockets and no serialisation, and links can be cut and healed to partition the cluster.
//!
//! A member is reachable once [`Switchboard::attach`]ed (after its `RaftHandle` started) and
//! until [`Switchboard::detach`]ed (before it is shut down, as a crash would). A request over a
//! cut link, or to a member that is not attached, is not delivered; an answer whose link was cut
//! while the request was being handled is lost (the request may have taken effect), as on a
//! real network.

use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use openraft::error::Fatal;
use openraft::raft::{
    AppendEntriesRequest, AppendEntriesResponse, SnapshotResponse, VoteRequest, VoteResponse,
};

use super::client::PeerError;
use super::protocol::RaftAnswer;
use super::protocol::{LeaderRequest, LeaderResponse, NodeStatus, PreVoteRequest, PreVoteResponse};
use super::service::{PeerService, Refusal};
use super::transport::{PeerFuture, Transport};
use crate::handle::RaftHandle;
use crate::typ::{NodeId, SnapshotMeta, TypeConfig, Vote};

/// The members of an in-process cluster and the links between them.
#[derive(Clone, Default)]
pub struct Switchboard {
    board: Arc<Mutex<Board>>,
}

#[derive(Default)]
struct Board {
    members: BTreeMap<String, PeerService>,
    /// Cut links, each stored as (lower address, higher address).
    cut: BTreeSet<(String, String)>,
}

fn link(a: &str, b: &str) -> (String, String) {
    if a <= b {
        (a.to_string(), b.to_string())
    } else {
        (b.to_string(), a.to_string())
    }
}

impl Switchboard {
    /// An empty switchboard.
    pub fn new() -> Self {
        Self::default()
    }

    fn board(&self) -> std::sync::MutexGuard<'_, Board> {
        // The board holds plain maps: a panic elsewhere cannot leave them half-changed.
        self.board.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The transport of the member at `addr`: what its `RaftHandle` is started with.
    pub fn transport(&self, addr: &str) -> Arc<dyn Transport> {
        Arc::new(LoopbackTransport {
            from: addr.to_string(),
            board: self.clone(),
        })
    }

    /// Makes the member at `addr` reachable by the others.
    pub fn attach(&self, addr: &str, handle: &RaftHandle) {
        self.board()
            .members
            .insert(addr.to_string(), PeerService::new(handle.clone()));
    }

    /// Makes the member at `addr` unreachable, as a crashed process is.
    pub fn detach(&self, addr: &str) {
        self.board().members.remove(addr);
    }

    /// Cuts the link between `a` and `b`, both ways.
    pub fn cut(&self, a: &str, b: &str) {
        self.board().cut.insert(link(a, b));
    }

    /// Cuts every link of the member at `addr` to the `others`.
    pub fn isolate(&self, addr: &str, others: &[&str]) {
        for other in others {
            self.cut(addr, other);
        }
    }

    /// Restores every cut link.
    pub fn heal(&self) {
        self.board().cut.clear();
    }

    /// The service at `to`, when `from` can reach it now.
    fn reach(&self, from: &str, to: &str) -> Result<PeerService, PeerError> {
        let board = self.board();
        if board.cut.contains(&link(from, to)) {
            return Err(PeerError::Connect {
                addr: to.to_string(),
                message: "the link is cut".into(),
            });
        }
        board.members.get(to).cloned().ok_or_else(|| PeerError::Connect {
            addr: to.to_string(),
            message: "no member is attached at this address".into(),
        })
    }

    fn still_linked(&self, from: &str, to: &str) -> bool {
        !self.board().cut.contains(&link(from, to))
    }
}

/// One member's way out onto a [`Switchboard`].
struct LoopbackTransport {
    from: String,
    board: Switchboard,
}

impl LoopbackTransport {
    /// Delivers a request to the member at `to` and brings its answer back, within `timeout`.
    async fn call<T, F, Fut>(&self, to: &str, timeout: Duration, handle: F) -> Result<T, PeerError>
    where
        F: FnOnce(PeerService) -> Fut,
        Fut: Future<Output = Result<T, Refusal>>,
    {
        let service = self.board.reach(&self.from, to)?;
        let answer = tokio::time::timeout(timeout, handle(service))
            .await
            .map_err(|_| PeerError::Timeout {
                addr: to.to_string(),
                timeout,
            })?;
        if !self.board.still_linked(&self.from, to) {
            return Err(PeerError::Transport {
                addr: to.to_string(),
                message: "the link was cut before the answer came back".into(),
            });
        }
        answer.map_err(|refusal| PeerError::Status {
            addr: to.to_string(),
            status: refusal.status(),
            message: refusal.to_string(),
        })
    }
}

impl Transport for LoopbackTransport {
    fn append<'a>(
        &'a self,
        addr: &'a str,
        request: AppendEntriesRequest<TypeConfig>,
        timeout: Duration,
    ) -> PeerFuture<'a, RaftAnswer<AppendEntriesResponse<NodeId>>> {
        Box::pin(self.call(addr, timeout, move |service| async move {
            service.append(request).await
        }))
    }

    fn vote<'a>(
        &'a self,
        addr: &'a str,
        request: VoteRequest<NodeId>,
        timeout: Duration,
    ) -> PeerFuture<'a, RaftAnswer<VoteResponse<NodeId>>> {
        Box::pin(self.call(addr, timeout, move |service| async move {
            service.vote(request).await
        }))
    }

    fn snapshot<'a>(
        &'a self,
        addr: &'a str,
        vote: Vote,
        meta: SnapshotMeta,
        data: Vec<u8>,
        timeout: Duration,
    ) -> PeerFuture<'a, Result<SnapshotResponse<NodeId>, Fatal<NodeId>>> {
        Box::pin(self.call(addr, timeout, move |service| async move {
            service.snapshot(vote, meta, data).await
        }))
    }

    fn leader_request<'a>(
        &'a self,
        addr: &'a str,
        request: &'a LeaderRequest,
        timeout: Duration,
    ) -> PeerFuture<'a, LeaderResponse> {
        Box::pin(self.call(addr, timeout, move |service| async move {
            Ok(service.leader(request.clone()).await)
        }))
    }

    fn pre_vote<'a>(
        &'a self,
        addr: &'a str,
        request: &'a PreVoteRequest,
        timeout: Duration,
    ) -> PeerFuture<'a, PreVoteResponse> {
        Box::pin(self.call(addr, timeout, move |service| async move {
            Ok(service.pre_vote(request))
        }))
    }

    fn status<'a>(&'a self, addr: &'a str, timeout: Duration) -> PeerFuture<'a, NodeStatus> {
        Box::pin(self.call(addr, timeout, |service| async move { Ok(service.status()) }))
    }
}
