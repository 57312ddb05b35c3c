//! Drover's replicated store: openraft over RocksDB, reached only through [`RaftHandle`].
//!
//! ```text
//!   api / actors ──write/read/watch──▶ RaftHandle ──forward──▶ leader's /raft/leader
//!                                          │
//!                                  openraft::Raft ◀──/raft/{append,vote,snapshot}──▶ peers
//!                                   │          │
//!                          LogStore (log, meta)  StateMachineStore (State in memory,
//!                          synced WAL appends     snapshot in RocksDB, change feed)
//! ```
//!
//! No openraft or RocksDB type appears in the public API of this crate except through the
//! peer router, which only `node` mounts, and the seams ([`Seams`]: the transport of
//! [`network::transport`], the [`Disk`] and the clock), which tests and the simulation plug an
//! in-process [`network::loopback::Switchboard`], a [`MemDisk`] and simulated time into.

mod batcher;
mod bootstrap;
mod commit;
pub mod config;
mod elector;
pub mod error;
mod handle;
mod leadership;
mod lease;
mod metrics;
pub mod network;
pub mod runtime;
mod store;
mod typ;

pub use config::RaftConfig;
pub use error::{HistoryGone, MembershipError, ReadError, StoreError, WriteError};
pub use handle::{
    wall_clock_ms, ClusterView, Consistency, Leadership, MemberView, RaftHandle, Seams, StartOptions, Written,
};
pub use network::protocol::NodeStatus;
pub use network::server::{constant_time_eq, peer_router};
pub use store::disk::{Column, Disk, DiskOp, MemDisk, Pairs, RocksDisk};
pub use store::recover::{recover, Recovered, Through};
pub use store::ApplyObserver;
pub use typ::{NodeId, PeerNode};
