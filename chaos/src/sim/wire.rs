//! The simulated network's messages: one JSON request and one JSON answer per turmoil TCP
//! connection, each framed by a 4-byte big-endian length. Members send each other what
//! [`drover_raft::network::transport::Transport`] carries; clients send the calls a user's
//! request turns into at a node's API. Every call has a deadline, because a held or
//! partitioned link never answers.

use std::collections::BTreeMap;
use std::time::Duration;

use drover_model::{Command, CommandResult, ObjectKey, StoredObject};
use drover_raft::network::protocol::RaftAnswer;
use drover_raft::network::protocol::{
    LeaderRequest, LeaderResponse, NodeStatus, PreVoteRequest, PreVoteResponse,
};
use drover_raft::network::transport::{NodeId, SnapshotMeta, TypeConfig, Vote};
use openraft::error::Fatal;
use openraft::raft::{
    AppendEntriesRequest, AppendEntriesResponse, SnapshotResponse, VoteRequest, VoteResponse,
};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use turmoil::net::TcpStream;

/// The port every simulated node listens on.
pub const PORT: u16 = 7000;

/// What a node is asked, by a peer or by a client.
// One message per connection: boxing would only add an allocation.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Serialize, Deserialize)]
pub enum Request {
    /// Raft's AppendEntries.
    Append(AppendEntriesRequest<TypeConfig>),
    /// Raft's RequestVote.
    Vote(VoteRequest<NodeId>),
    /// A whole snapshot.
    Snapshot {
        /// The sender's vote.
        vote: Vote,
        /// What the snapshot covers.
        meta: SnapshotMeta,
        /// The encoded state.
        data: Vec<u8>,
    },
    /// A request only the leader answers (forwarded writes, read index).
    Leader(LeaderRequest),
    /// Would the receiver vote for the sender now?
    PreVote(PreVoteRequest),
    /// The receiver's own status.
    PeerStatus,
    /// A client's write, to any node (which forwards it to the leader).
    Write(Command),
    /// A client's linearizable read of one object, to any node.
    Read(ObjectKey),
    /// The node's applied index and the objects it holds (for the checks after healing).
    Inventory,
    /// The services workload's tenant's services, read linearizably.
    Services,
}

/// What a node answers.
#[derive(Debug, Serialize, Deserialize)]
pub enum Response {
    /// To [`Request::Append`].
    Append(RaftAnswer<AppendEntriesResponse<NodeId>>),
    /// To [`Request::Vote`].
    Vote(RaftAnswer<VoteResponse<NodeId>>),
    /// To [`Request::Snapshot`].
    Snapshot(Result<SnapshotResponse<NodeId>, Fatal<NodeId>>),
    /// To [`Request::Leader`].
    Leader(LeaderResponse),
    /// To [`Request::PreVote`].
    PreVote(PreVoteResponse),
    /// To [`Request::PeerStatus`].
    PeerStatus(NodeStatus),
    /// A peer request refused before Raft saw it, with the HTTP status a node would answer.
    Refused {
        /// 400 or 422.
        status: u16,
        /// Why.
        message: String,
    },
    /// The write committed with this result.
    Written(CommandResult),
    /// The write certainly was not applied (no leader could be reached).
    NotWritten(String),
    /// The write was handed to a leader but its fate is unknown.
    WriteUnknown(String),
    /// The object read (absent: `None`).
    Read(Option<StoredObject>),
    /// No leader confirmed the read.
    NotRead(String),
    /// To [`Request::Inventory`].
    Inventory {
        /// Last applied log index.
        applied: u64,
        /// Every object: key, holder, resource version.
        objects: Vec<(String, String, u64)>,
    },
    /// To [`Request::Services`].
    Services(BTreeMap<String, Held>),
}

/// Why a call got no answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallError {
    /// No connection: the request was certainly not delivered.
    NotDelivered,
    /// Sent, but no answer in time: it may have been acted on.
    Lost,
}

/// Sends `request` to the member at `host` and waits at most `timeout` for the answer.
pub async fn call(host: &str, request: &Request, timeout: Duration) -> Result<Response, CallError> {
    call_at(host, PORT, request, timeout).await
}

/// Sends `request` to `host:port` and waits at most `timeout` for the answer.
pub async fn call_at<Q: Serialize, A: DeserializeOwned>(
    host: &str,
    port: u16,
    request: &Q,
    timeout: Duration,
) -> Result<A, CallError> {
    let connect = tokio::time::timeout(timeout, TcpStream::connect((host, port))).await;
    let mut stream = match connect {
        Ok(Ok(stream)) => stream,
        _ => return Err(CallError::NotDelivered),
    };
    let exchange = async {
        write_frame(&mut stream, request).await?;
        read_frame(&mut stream).await
    };
    match tokio::time::timeout(timeout, exchange).await {
        Ok(Ok(response)) => Ok(response),
        _ => Err(CallError::Lost),
    }
}

/// Writes one frame.
pub async fn write_frame<T: Serialize>(stream: &mut TcpStream, message: &T) -> std::io::Result<()> {
    let body = serde_json::to_vec(message).map_err(std::io::Error::other)?;
    let len = u32::try_from(body.len()).map_err(std::io::Error::other)?;
    stream.write_all(&len.to_be_bytes()).await?;
    stream.write_all(&body).await?;
    stream.flush().await
}

/// Reads one frame.
pub async fn read_frame<T: DeserializeOwned>(stream: &mut TcpStream) -> std::io::Result<T> {
    let mut len = [0u8; 4];
    stream.read_exact(&mut len).await?;
    let mut body = vec![0u8; u32::from_be_bytes(len) as usize];
    stream.read_exact(&mut body).await?;
    serde_json::from_slice(&body).map_err(std::io::Error::other)
}

/// One service as the committed state holds it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Held {
    /// Its accepted revision.
    pub current: Option<u64>,
    /// Deleted, its instances still to go.
    pub deleting: bool,
    /// Instances its accepted revision asks for.
    pub instances: u32,
    /// The revision that last changed what its role runs (instance ids carry it).
    pub role_revision: u64,
    /// Where it is placed and its last events, for a report.
    pub note: String,
}
