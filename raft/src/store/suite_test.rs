//! openraft's own storage conformance suite, run against our stores on both disks.

use openraft::testing::{StoreBuilder, Suite};
use tempfile::TempDir;

use super::disk::MemDisk;
use super::{open, LogStore, RocksDisk, StateMachineStore};
use crate::typ::{StorageError, TypeConfig};

struct RocksBuilder;

struct MemBuilder;

/// Setting up a store failed; the suite only takes a `StorageError`.
fn setup_failed(e: impl std::error::Error + 'static) -> StorageError {
    openraft::StorageIOError::write(openraft::AnyError::new(&e)).into()
}

impl StoreBuilder<TypeConfig, LogStore, StateMachineStore, TempDir> for RocksBuilder {
    async fn build(&self) -> Result<(TempDir, LogStore, StateMachineStore), StorageError> {
        let dir = TempDir::new().map_err(setup_failed)?;
        let append_seconds = crate::metrics::unregistered_histogram().map_err(setup_failed)?;
        let disk = RocksDisk::open(dir.path()).map_err(setup_failed)?;
        let (log_store, state_machine) = open(disk, 100, append_seconds).map_err(setup_failed)?;
        Ok((dir, log_store, state_machine))
    }
}

impl StoreBuilder<TypeConfig, LogStore, StateMachineStore, ()> for MemBuilder {
    async fn build(&self) -> Result<((), LogStore, StateMachineStore), StorageError> {
        let append_seconds = crate::metrics::unregistered_histogram().map_err(setup_failed)?;
        let disk = std::sync::Arc::new(MemDisk::new());
        let (log_store, state_machine) = open(disk, 100, append_seconds).map_err(setup_failed)?;
        Ok(((), log_store, state_machine))
    }
}

#[test]
fn rocksdb_storage_passes_the_openraft_conformance_suite() -> Result<(), StorageError> {
    Suite::test_all(RocksBuilder)?;
    Ok(())
}

#[test]
fn the_simulations_memory_disk_passes_the_openraft_conformance_suite() -> Result<(), StorageError> {
    Suite::test_all(MemBuilder)?;
    Ok(())
}
