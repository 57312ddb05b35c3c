//! openraft's own storage conformance suite, run against our RocksDB stores.

use openraft::testing::{StoreBuilder, Suite};
use tempfile::TempDir;

use super::{open, LogStore, StateMachineStore};
use crate::typ::{StorageError, TypeConfig};

struct RocksBuilder;

impl StoreBuilder<TypeConfig, LogStore, StateMachineStore, TempDir> for RocksBuilder {
    async fn build(&self) -> Result<(TempDir, LogStore, StateMachineStore), StorageError> {
        let dir = TempDir::new()
            .map_err(|e| StorageError::from(openraft::StorageIOError::write(openraft::AnyError::new(&e))))?;
        let append_seconds = prometheus::Histogram::with_opts(prometheus::HistogramOpts::new(
            "test_log_append_duration_seconds",
            "unregistered",
        ))
        .map_err(|e| StorageError::from(openraft::StorageIOError::write(openraft::AnyError::new(&e))))?;
        let (log_store, state_machine) = open(dir.path(), 100, append_seconds)
            .map_err(|e| StorageError::from(openraft::StorageIOError::write(openraft::AnyError::new(&e))))?;
        Ok((dir, log_store, state_machine))
    }
}

#[test]
fn rocksdb_storage_passes_the_openraft_conformance_suite() -> Result<(), StorageError> {
    Suite::test_all(RocksBuilder)?;
    Ok(())
}
