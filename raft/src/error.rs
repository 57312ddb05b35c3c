//! Errors of the replicated store, classified by what the caller must do.

use thiserror::Error;

/// Errors of opening or running the store.
#[derive(Debug, Error)]
pub enum StoreError {
    /// A setting is invalid.
    #[error("invalid raft configuration: {0}")]
    Config(String),
    /// RocksDB failed.
    #[error("storage: {0}")]
    Storage(#[from] rocksdb::Error),
    /// Stored bytes could not be decoded.
    #[error("corrupt stored data: {0}")]
    Corrupt(String),
    /// The data directory was written by a newer RocksDB than the one Drover links (before
    /// Drover linked Debian's RocksDB 7.8 it bundled RocksDB 10, whose files 7.8 cannot read).
    #[error(
        "the data directory {dir} was written by a newer RocksDB and cannot be opened ({detail}); \
         replace this member: remove it from the cluster, empty its data directory and add it \
         again (it catches up from a snapshot), or for a demo delete the directory"
    )]
    NewerFormat {
        /// The node's data directory.
        dir: String,
        /// RocksDB's own message.
        detail: String,
    },
    /// Raft itself failed to start or initialise.
    #[error("raft: {0}")]
    Raft(String),
}

/// Why a write did not complete.
#[derive(Debug, Clone, Error)]
pub enum WriteError {
    /// No leader could be reached within the request timeout; nothing was applied.
    #[error("no leader is available: {0}")]
    Unavailable(String),
    /// The write was handed to a leader but its outcome was not confirmed within the request
    /// timeout: it may or may not have been applied. Retry with the same idempotency key.
    #[error("the write was not confirmed in time and may or may not have been applied: {0}")]
    MaybeCommitted(String),
    /// This node is shutting down.
    #[error("the node is shutting down")]
    ShuttingDown,
}

/// Why a read did not complete.
#[derive(Debug, Clone, Error)]
pub enum ReadError {
    /// No leader confirmed the read within the request timeout.
    #[error("no leader is available to confirm a linearizable read: {0}")]
    Unavailable(String),
    /// This node is shutting down.
    #[error("the node is shutting down")]
    ShuttingDown,
}

/// Why a watch cannot resume from the revision asked for.
#[derive(Debug, Clone, Error)]
#[error("too old resource version: {requested} (oldest available: {oldest})")]
pub struct HistoryGone {
    /// The revision the caller asked to resume after.
    pub requested: u64,
    /// The oldest revision this node can resume after.
    pub oldest: u64,
}

/// Why a membership change failed.
#[derive(Debug, Clone, Error)]
pub enum MembershipError {
    /// No leader was reachable.
    #[error("no leader is available: {0}")]
    Unavailable(String),
    /// The change is not allowed (for example removing the last voter).
    #[error("membership change refused: {0}")]
    Refused(String),
}
