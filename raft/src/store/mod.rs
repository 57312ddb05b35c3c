//! RocksDB-backed Raft storage: one database per node with three column families.
//!
//! | column family | holds |
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
mod history;
mod log_store;
pub(crate) mod recover;
mod state_machine;
mod tail;

use std::path::Path;
use std::sync::Arc;

use prometheus::Histogram;
use rocksdb::{ColumnFamilyDescriptor, Options, DB};

pub use log_store::LogStore;
pub use state_machine::{SharedState, StateMachineStore};

use crate::error::StoreError;

pub(crate) const CF_LOG: &str = "log";
pub(crate) const CF_META: &str = "meta";
pub(crate) const CF_STATE: &str = "state";

/// Opens (or creates) the node's database under `dir`.
pub fn open_db(dir: &Path) -> Result<Arc<DB>, StoreError> {
    let mut options = Options::default();
    options.create_if_missing(true);
    options.create_missing_column_families(true);
    options.set_compression_type(rocksdb::DBCompressionType::Lz4);
    let column_families = [CF_LOG, CF_META, CF_STATE]
        .into_iter()
        .map(|name| ColumnFamilyDescriptor::new(name, Options::default()));
    let db = DB::open_cf_descriptors(&options, dir, column_families).map_err(|e| {
        // RocksDB reports a newer table format only in its message.
        let detail = e.to_string();
        if detail.contains("unsupported format_version") {
            StoreError::NewerFormat {
                dir: dir.display().to_string(),
                detail,
            }
        } else {
            StoreError::Storage(e)
        }
    })?;
    Ok(Arc::new(db))
}

/// Opens the log store and state machine over one database; `append_seconds` observes every
/// durable append to the log.
pub fn open(
    dir: &Path,
    watch_history: usize,
    append_seconds: Histogram,
) -> Result<(LogStore, StateMachineStore), StoreError> {
    let db = open_db(dir)?;
    let log_store = LogStore::new(db.clone(), append_seconds);
    let state_machine = StateMachineStore::open(db, watch_history)?;
    Ok((log_store, state_machine))
}

#[cfg(test)]
mod suite_test;

#[cfg(test)]
mod tests {
    use std::path::Path;

    use tempfile::TempDir;

    use super::open_db;
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
        match open_db(dir.path()) {
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
