//! Outbound peer traffic over HTTP: [`PeerClient`], the transport that carries Raft's RPCs,
//! forwards requests to the leader and asks peers for their status (openraft's side of it is
//! [`super::raft_network`]). One `reqwest` client per node keeps connections alive across
//! requests.

use std::sync::Arc;
use std::time::Duration;

use openraft::error::Fatal;
use openraft::raft::SnapshotResponse;
use reqwest::header::HeaderValue;
use reqwest::IntoUrl;
use serde::de::DeserializeOwned;
use serde::Serialize;
use thiserror::Error;

use super::protocol::{
    frame_snapshot, LeaderRequest, LeaderResponse, NodeStatus, PreVoteRequest, PreVoteResponse, RaftAnswer,
    SnapshotHeader,
};
use super::{bearer, SECRET_HEADER};
use crate::typ::{NodeId, SnapshotMeta, Vote};

/// Why a peer request failed.
#[derive(Debug, Clone, Error)]
pub enum PeerError {
    /// No connection could be made: the request was certainly not delivered.
    #[error("cannot connect to {addr}: {message}")]
    Connect {
        /// The peer address.
        addr: String,
        /// What went wrong.
        message: String,
    },
    /// The peer did not answer in time: the request may have been delivered.
    #[error("no answer from {addr} within {timeout:?}")]
    Timeout {
        /// The peer address.
        addr: String,
        /// The deadline that passed.
        timeout: Duration,
    },
    /// The connection failed mid-request: the request may have been delivered.
    #[error("request to {addr} failed: {message}")]
    Transport {
        /// The peer address.
        addr: String,
        /// What went wrong.
        message: String,
    },
    /// The peer answered with an HTTP error status.
    #[error("{addr} answered {status}: {message}")]
    Status {
        /// The peer address.
        addr: String,
        /// HTTP status code.
        status: u16,
        /// The body of the answer.
        message: String,
    },
}

impl PeerError {
    /// True when the request certainly did not reach the peer's handler.
    pub fn not_delivered(&self) -> bool {
        match self {
            PeerError::Connect { .. } => true,
            PeerError::Status { status, .. } => *status == 401 || *status == 404,
            PeerError::Timeout { .. } | PeerError::Transport { .. } => false,
        }
    }
}

/// HTTP client for peer requests.
#[derive(Clone)]
pub struct PeerClient {
    http: reqwest::Client,
    /// `http`, or `https` when peers speak mutual TLS.
    scheme: &'static str,
    /// The `authorization` header every peer request carries, built once.
    credential: Arc<HeaderValue>,
}

impl PeerClient {
    /// A client that authenticates with `secret` and, given `source_ip`, opens its connections
    /// from that address, so that peers and firewalls see which node is calling. It neither
    /// follows redirects nor retries: peers send no redirects, a forwarded write must not be
    /// sent twice behind the caller's back, and both layers cost CPU on every AppendEntries.
    ///
    /// With `tls`, peers are reached over HTTPS with that configuration (the cluster's CA and
    /// this node's client certificate: mutual TLS).
    pub fn new(
        secret: &str,
        source_ip: Option<std::net::IpAddr>,
        tls: Option<Arc<tokio_rustls::rustls::ClientConfig>>,
    ) -> Self {
        let mut builder = reqwest::Client::builder()
            .pool_idle_timeout(Duration::from_secs(60))
            .redirect(reqwest::redirect::Policy::none())
            .retry(reqwest::retry::never())
            .tcp_nodelay(true)
            .local_address(source_ip);
        let scheme = match tls {
            Some(config) => {
                builder = builder.use_preconfigured_tls((*config).clone());
                "https"
            }
            None => "http",
        };
        let http = builder.build().unwrap_or_default();
        // The node's configuration refuses a secret that is not printable ASCII; were one to
        // get here anyway, the peers would refuse the empty credential with 401.
        let credential = HeaderValue::from_str(&bearer(secret)).unwrap_or(HeaderValue::from_static(""));
        Self {
            http,
            scheme,
            credential: Arc::new(credential),
        }
    }

    async fn send(
        &self,
        addr: &str,
        request: reqwest::RequestBuilder,
        timeout: Duration,
    ) -> Result<bytes::Bytes, PeerError> {
        let response = request
            .header(SECRET_HEADER, HeaderValue::clone(&self.credential))
            .timeout(timeout)
            .send()
            .await
            .map_err(|e| classify(addr, timeout, &e))?;
        let status = response.status();
        let body = response.bytes().await.map_err(|e| classify(addr, timeout, &e))?;
        if !status.is_success() {
            return Err(PeerError::Status {
                addr: addr.to_string(),
                status: status.as_u16(),
                message: String::from_utf8_lossy(&body).into_owned(),
            });
        }
        Ok(body)
    }

    async fn post_json<Req: Serialize, Resp: DeserializeOwned>(
        &self,
        addr: &str,
        url: impl IntoUrl,
        body: &Req,
        timeout: Duration,
    ) -> Result<Resp, PeerError> {
        let request = self.http.post(url).json(body);
        let bytes = self.send(addr, request, timeout).await?;
        decode(addr, &bytes)
    }

    /// Sends a request to the node at `addr`, expected to be the leader.
    pub async fn leader_request(
        &self,
        addr: &str,
        request: &LeaderRequest,
        timeout: Duration,
    ) -> Result<LeaderResponse, PeerError> {
        self.post_json(
            addr,
            format!("{}://{addr}/raft/leader", self.scheme),
            request,
            timeout,
        )
        .await
    }

    /// Asks the voter at `addr` whether it would vote for this node.
    pub async fn pre_vote(
        &self,
        addr: &str,
        request: &PreVoteRequest,
        timeout: Duration,
    ) -> Result<PreVoteResponse, PeerError> {
        self.post_json(
            addr,
            format!("{}://{addr}/raft/prevote", self.scheme),
            request,
            timeout,
        )
        .await
    }

    /// Asks the node at `addr` for its status.
    pub async fn status(&self, addr: &str, timeout: Duration) -> Result<NodeStatus, PeerError> {
        let request = self.http.get(format!("{}://{addr}/raft/status", self.scheme));
        let bytes = self.send(addr, request, timeout).await?;
        decode(addr, &bytes)
    }

    /// Sends one of openraft's RPCs to the member at `addr` (`path` is its route).
    pub(crate) async fn post_raft<Req: Serialize, Resp: DeserializeOwned>(
        &self,
        addr: &str,
        path: &str,
        request: &Req,
        timeout: Duration,
    ) -> Result<RaftAnswer<Resp>, PeerError> {
        self.post_json(addr, format!("{}://{addr}{path}", self.scheme), request, timeout)
            .await
    }

    /// Sends a whole snapshot, framed, to the member at `addr`.
    pub(crate) async fn send_snapshot(
        &self,
        addr: &str,
        vote: Vote,
        meta: SnapshotMeta,
        data: &[u8],
        timeout: Duration,
    ) -> Result<Result<SnapshotResponse<NodeId>, Fatal<NodeId>>, PeerError> {
        let body =
            frame_snapshot(&SnapshotHeader { vote, meta }, data).map_err(|e| PeerError::Transport {
                addr: addr.to_string(),
                message: format!("cannot frame the snapshot: {e}"),
            })?;
        let request = self
            .http
            .post(format!("{}://{addr}/raft/snapshot", self.scheme))
            .body(body);
        let bytes = self.send(addr, request, timeout).await?;
        decode(addr, &bytes)
    }
}

fn decode<T: DeserializeOwned>(addr: &str, bytes: &[u8]) -> Result<T, PeerError> {
    serde_json::from_slice(bytes).map_err(|e| PeerError::Transport {
        addr: addr.to_string(),
        message: format!("undecodable answer: {e}"),
    })
}

fn classify(addr: &str, timeout: Duration, error: &reqwest::Error) -> PeerError {
    if error.is_connect() {
        PeerError::Connect {
            addr: addr.to_string(),
            message: error.to_string(),
        }
    } else if error.is_timeout() {
        PeerError::Timeout {
            addr: addr.to_string(),
            timeout,
        }
    } else {
        PeerError::Transport {
            addr: addr.to_string(),
            message: error.to_string(),
        }
    }
}
