//! The real node's [`Transport`] over simulated TCP: what a member sends its peers leaves its
//! simulated host as a [`Request`] frame, so turmoil's latency, partitions, held links and
//! crashes act on it, and the answer (or its absence) comes back as a node's HTTP client
//! would report it.

use std::time::Duration;

use drover_raft::network::client::PeerError;
use drover_raft::network::protocol::RaftAnswer;
use drover_raft::network::protocol::{
    LeaderRequest, LeaderResponse, NodeStatus, PreVoteRequest, PreVoteResponse,
};
use drover_raft::network::transport::{NodeId, PeerFuture, SnapshotMeta, Transport, TypeConfig, Vote};
use openraft::error::Fatal;
use openraft::raft::{
    AppendEntriesRequest, AppendEntriesResponse, SnapshotResponse, VoteRequest, VoteResponse,
};

use super::wire::{call, CallError, Request, Response};

/// Peers reached by their host name over the simulation's TCP.
pub struct SimTransport;

/// Sends `request` to the member at `addr`; its answer, or the error a node's client reports.
async fn ask(addr: &str, request: &Request, timeout: Duration) -> Result<Response, PeerError> {
    match call(addr, request, timeout).await {
        Ok(Response::Refused { status, message }) => Err(PeerError::Status {
            addr: addr.to_string(),
            status,
            message,
        }),
        Ok(response) => Ok(response),
        Err(CallError::NotDelivered) => Err(PeerError::Connect {
            addr: addr.to_string(),
            message: "no connection".into(),
        }),
        Err(CallError::Lost) => Err(PeerError::Timeout {
            addr: addr.to_string(),
            timeout,
        }),
    }
}

/// [`ask`], then the answer `pick` finds in the response; any other response is an error
/// (`pick` describes it).
async fn exchange<T>(
    addr: &str,
    request: &Request,
    timeout: Duration,
    pick: fn(Response) -> Result<T, String>,
) -> Result<T, PeerError> {
    pick(ask(addr, request, timeout).await?).map_err(|other| PeerError::Transport {
        addr: addr.to_string(),
        message: format!("unexpected answer {other}"),
    })
}

impl Transport for SimTransport {
    fn append<'a>(
        &'a self,
        addr: &'a str,
        request: AppendEntriesRequest<TypeConfig>,
        timeout: Duration,
    ) -> PeerFuture<'a, RaftAnswer<AppendEntriesResponse<NodeId>>> {
        Box::pin(async move {
            exchange(addr, &Request::Append(request), timeout, |r| match r {
                Response::Append(answer) => Ok(answer),
                other => Err(format!("{other:?}")),
            })
            .await
        })
    }

    fn vote<'a>(
        &'a self,
        addr: &'a str,
        request: VoteRequest<NodeId>,
        timeout: Duration,
    ) -> PeerFuture<'a, RaftAnswer<VoteResponse<NodeId>>> {
        Box::pin(async move {
            exchange(addr, &Request::Vote(request), timeout, |r| match r {
                Response::Vote(answer) => Ok(answer),
                other => Err(format!("{other:?}")),
            })
            .await
        })
    }

    fn snapshot<'a>(
        &'a self,
        addr: &'a str,
        vote: Vote,
        meta: SnapshotMeta,
        data: Vec<u8>,
        timeout: Duration,
    ) -> PeerFuture<'a, Result<SnapshotResponse<NodeId>, Fatal<NodeId>>> {
        Box::pin(async move {
            exchange(
                addr,
                &Request::Snapshot { vote, meta, data },
                timeout,
                |r| match r {
                    Response::Snapshot(answer) => Ok(answer),
                    other => Err(format!("{other:?}")),
                },
            )
            .await
        })
    }

    fn leader_request<'a>(
        &'a self,
        addr: &'a str,
        request: &'a LeaderRequest,
        timeout: Duration,
    ) -> PeerFuture<'a, LeaderResponse> {
        Box::pin(async move {
            exchange(addr, &Request::Leader(request.clone()), timeout, |r| match r {
                Response::Leader(answer) => Ok(answer),
                other => Err(format!("{other:?}")),
            })
            .await
        })
    }

    fn pre_vote<'a>(
        &'a self,
        addr: &'a str,
        request: &'a PreVoteRequest,
        timeout: Duration,
    ) -> PeerFuture<'a, PreVoteResponse> {
        Box::pin(async move {
            exchange(addr, &Request::PreVote(request.clone()), timeout, |r| match r {
                Response::PreVote(answer) => Ok(answer),
                other => Err(format!("{other:?}")),
            })
            .await
        })
    }

    fn status<'a>(&'a self, addr: &'a str, timeout: Duration) -> PeerFuture<'a, NodeStatus> {
        Box::pin(async move {
            exchange(addr, &Request::PeerStatus, timeout, |r| match r {
                Response::PeerStatus(answer) => Ok(answer),
                other => Err(format!("{other:?}")),
            })
            .await
        })
    }
}
