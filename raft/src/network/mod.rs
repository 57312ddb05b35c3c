//! Peer traffic between Drover nodes: Raft RPCs and requests forwarded to the leader, as HTTP
//! on the peer listener, authenticated with the cluster secret. Both directions go through a
//! seam — [`transport::Transport`] out, [`service::PeerService`] in — so that tests and the
//! simulation run the same node over the in-process [`loopback::Switchboard`].
//!
//! | path | body | answered by |
//! |---|---|---|
//! | `POST /raft/append` | `AppendEntriesRequest` | every member |
//! | `POST /raft/vote` | `VoteRequest` | every member |
//! | `POST /raft/prevote` | [`protocol::PreVoteRequest`] | every member (would it vote?) |
//! | `POST /raft/snapshot` | framed snapshot (vote, meta, data) | every member |
//! | `POST /raft/leader` | [`protocol::LeaderRequest`] | the leader (writes, read index, membership) |
//! | `GET /raft/status` | — | every member: its own view, for `/cluster` |

pub mod client;
pub mod loopback;
pub mod plausible;
pub mod protocol;
pub mod raft_network;
pub mod server;
pub mod service;
pub mod transport;

/// The header that carries the cluster secret on every peer request.
pub const SECRET_HEADER: &str = "authorization";

pub(crate) fn bearer(secret: &str) -> String {
    format!("Bearer {secret}")
}
