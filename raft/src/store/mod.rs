//! Raft storage: the log store and the state machine over a [`Disk`] of three keyspaces —
//! RocksDB on a node (a column family each), memory in the simulation.
//!
//! | keyspace | holds |
//! |---|---|
//! | `log` | log entries keyed by big-endian index |
//! | `meta` | vote, committed log id, last purged log id |
//! | `state` | the current snapshot of the state machine (metadata and data) |
//!
//! The state machine itself lives in memory and is rebuilt at start-up from the snapshot plus
//! the committed log after it, which openraft re-applies. Appends and votes are written with a
//! synced WAL before they are reported done. The newest log entries are also kept in memory
//! (`tail`), so that replicating and applying them does not read them back from RocksDB.

// openraft's storage traits fix the error type (`StorageError`, about 200 bytes); our helpers
// return it too rather than converting at every call.
#![allow(clippy::result_large_err)]

mod codec;
pub mod disk;
mod history;
mod log_store;
pub(crate) mod recover;
mod state_machine;
mod tail;

use std::sync::Arc;

use prometheus::Histogram;

pub use disk::{Disk, RocksDisk};
pub use log_store::LogStore;
pub use state_machine::{ApplyObserver, SharedState, StateMachineStore};

use crate::error::StoreError;

/// Opens the log store and state machine over one disk; `append_seconds` observes every
/// durable append to the log.
pub fn open(
    disk: Arc<dyn Disk>,
    watch_history: usize,
    append_seconds: Histogram,
) -> Result<(LogStore, StateMachineStore), StoreError> {
    let log_store = LogStore::new(disk.clone(), append_seconds);
    let state_machine = StateMachineStore::open(disk, watch_history)?;
    Ok((log_store, state_machine))
}

#[cfg(test)]
mod suite_test;

#[cfg(test)]
mod tests {
    use std::path::Path;

    use tempfile::TempDir;

    use super::RocksDisk;
    use crate::error::StoreError;

    #[test]
    fn a_data_directory_written_by_rocksdb_10_is_refused_with_what_to_do(
    ) -> Result<(), Box<dyn std::error::Error>> {
        let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/rocksdb-10-data-dir");
        let dir = TempDir::new()?;
        for file in std::fs::read_dir(&fixture)? {
            let file = file?;
            if file.file_name() != "README.md" {
                std::fs::copy(file.path(), dir.path().join(file.file_name()))?;
            }
        }
        match RocksDisk::open(dir.path()) {
            Err(error @ StoreError::NewerFormat { .. }) => {
                let message = error.to_string();
                assert!(message.contains(&dir.path().display().to_string()), "{message}");
                assert!(message.contains("replace this member"), "{message}");
                Ok(())
            }
            Err(other) => Err(format!("expected NewerFormat, got {other}").into()),
            Ok(_) => Err("RocksDB 7.8 opened a RocksDB 10 data directory".into()),
        }
    }
}
