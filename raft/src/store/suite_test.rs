//! openraft's own storage conformance suite, run against our RocksDB stores.

use openraft::testing::{StoreBuilder, Suite};
use tempfile::TempDir;

use super::{open, LogStore, StateMachineStore};
use crate::typ::{StorageError, TypeConfig};

struct RocksBuilder;

/// Setting up a store failed; the suite only takes a `StorageError`.
fn setup_failed(e: impl std::error::Error + 'static) -> StorageError {
    openraft::StorageIOError::write(openraft::AnyError::new(&e)).into()
}

impl StoreBuilder<TypeConfig, LogStore, StateMachineStore, TempDir> for RocksBuilder {
    async fn build(&self) -> Result<(TempDir, LogStore, StateMachineStore), StorageError> {
        let dir = TempDir::new().map_err(setup_failed)?;
        let append_seconds = crate::metrics::unregistered_histogram().map_err(setup_failed)?;
        let (log_store, state_machine) = open(dir.path(), 100, append_seconds).map_err(setup_failed)?;
        Ok((dir, log_store, state_machine))
    }
}

#[test]
fn rocksdb_storage_passes_the_openraft_conformance_suite() -> Result<(), StorageError> {
    Suite::test_all(RocksBuilder)?;
    Ok(())
}
