//! The simulated network's messages: one JSON request and one JSON answer per turmoil TCP
//! connection, each framed by a 4-byte big-endian length. Every call has a deadline, because a
//! held or partitioned link never answers.

use std::time::Duration;

use drover_model::{Command, CommandResult, ObjectKey, StoredObject};
use openraft::error::{Fatal, RaftError};
use openraft::raft::{
    AppendEntriesRequest, AppendEntriesResponse, SnapshotResponse, VoteRequest, VoteResponse,
};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use turmoil::net::TcpStream;

use super::store::{SimTypes, SnapshotMeta, Vote};

/// The port every simulated node listens on.
pub const PORT: u16 = 7000;

/// What a node is asked.
// One message per connection: boxing would only add an allocation.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Serialize, Deserialize)]
pub enum Request {
    /// openraft's AppendEntries.
    Append(AppendEntriesRequest<SimTypes>),
    /// openraft's RequestVote.
    Vote(VoteRequest<u64>),
    /// A whole snapshot.
    Snapshot {
        /// The sender's vote.
        vote: Vote,
        /// What the snapshot covers.
        meta: SnapshotMeta,
        /// The encoded state.
        data: Vec<u8>,
    },
    /// A client's write, served by the leader only.
    Write(Command),
    /// A client's linearizable read of one object, served by the leader only.
    Read(ObjectKey),
    /// The node's applied index and the objects it holds (for the checks after healing).
    Status,
}

/// What a node answers.
#[derive(Debug, Serialize, Deserialize)]
pub enum Response {
    /// To [`Request::Append`].
    Append(Result<AppendEntriesResponse<u64>, RaftError<u64>>),
    /// To [`Request::Vote`].
    Vote(Result<VoteResponse<u64>, RaftError<u64>>),
    /// To [`Request::Snapshot`].
    Snapshot(Result<SnapshotResponse<u64>, Fatal<u64>>),
    /// The write committed with this result.
    Written(CommandResult),
    /// The write was handed to Raft but its fate is unknown.
    WriteUnknown(String),
    /// The object read (absent: `None`).
    Read(Option<StoredObject>),
    /// This node does not lead; nothing was done. `leader` is who it believes does.
    NotLeader {
        /// The leader it knows of.
        leader: Option<u64>,
    },
    /// To [`Request::Status`].
    Status {
        /// Last applied log index.
        applied: u64,
        /// Every object: key, holder, resource version.
        objects: Vec<(String, String, u64)>,
    },
}

/// Why a call got no answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallError {
    /// No connection: the request was certainly not delivered.
    NotDelivered,
    /// Sent, but no answer in time: it may have been acted on.
    Lost,
}

/// Sends `request` to `host` and waits at most `timeout` for the answer.
pub async fn call(host: &str, request: &Request, timeout: Duration) -> Result<Response, CallError> {
    let connect = tokio::time::timeout(timeout, TcpStream::connect((host, PORT))).await;
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
