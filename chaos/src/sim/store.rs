//! The simulated node's storage: the Raft log and vote on a [`Disk`] that outlives the host
//! (a crash loses nothing that was acknowledged, as with a synced WAL), and the state machine
//! in memory, rebuilt at start from the last snapshot on the disk plus the log openraft
//! re-applies — the shape of the RocksDB store, with Drover's own [`State::apply`].

use std::collections::BTreeMap;
use std::fmt::Debug;
use std::io::Cursor;
use std::ops::RangeBounds;
use std::sync::{Arc, Mutex};

use drover_model::{CommandResult, Proposal, State};
use openraft::storage::{LogFlushed, LogState, RaftLogStorage, RaftStateMachine};
use openraft::{AnyError, EntryPayload, OptionalSend, RaftLogReader, RaftSnapshotBuilder, StorageIOError};

use drover_raft::runtime::DroverRuntime;

openraft::declare_raft_types!(
    /// The simulation's Raft types: Drover's proposals and results, seeded randomness.
    pub SimTypes:
        D = Proposal,
        R = CommandResult,
        NodeId = u64,
        Node = openraft::BasicNode,
        Entry = openraft::Entry<SimTypes>,
        SnapshotData = Cursor<Vec<u8>>,
        AsyncRuntime = DroverRuntime,
);

/// A log id.
pub type LogId = openraft::LogId<u64>;
/// A vote.
pub type Vote = openraft::Vote<u64>;
/// A log entry.
pub type Entry = openraft::Entry<SimTypes>;
/// Snapshot metadata.
pub type SnapshotMeta = openraft::SnapshotMeta<u64, openraft::BasicNode>;
/// A snapshot.
pub type Snapshot = openraft::Snapshot<SimTypes>;
/// Storage errors as openraft wants them.
pub type StorageError = openraft::StorageError<u64>;
type StoredMembership = openraft::StoredMembership<u64, openraft::BasicNode>;

/// What one node keeps across crashes.
#[derive(Debug, Default)]
pub struct DiskContents {
    vote: Option<Vote>,
    committed: Option<LogId>,
    last_purged: Option<LogId>,
    log: BTreeMap<u64, Entry>,
    snapshot: Option<(SnapshotMeta, Vec<u8>)>,
    /// THE PLANTED BUG "no fsync" (for the checkers to find): appends are acknowledged before
    /// they are synced, so they sit in the page cache, and a crash loses them.
    pub planted_no_fsync: bool,
    /// Log indexes appended and acknowledged but never synced (only with `planted_no_fsync`).
    unsynced: std::collections::BTreeSet<u64>,
}

impl DiskContents {
    /// What a crash does to the disk: writes that were never synced are gone, from the first
    /// of them on (and the committed index with them). Nothing, for an honest disk.
    pub fn lose_unsynced(&mut self) {
        let Some(&first) = self.unsynced.iter().next() else {
            return;
        };
        self.log.split_off(&first);
        self.unsynced.clear();
        if self.committed.is_some_and(|c| c.index >= first) {
            self.committed = self
                .log
                .values()
                .next_back()
                .map(|e| e.log_id)
                .or(self.last_purged);
        }
    }
}

/// One node's disk, shared between the incarnations of its host.
pub type Disk = Arc<Mutex<DiskContents>>;

fn lock(disk: &Disk) -> std::sync::MutexGuard<'_, DiskContents> {
    disk.lock().unwrap_or_else(|p| p.into_inner())
}

/// The log store.
#[derive(Clone)]
pub struct MemLog {
    disk: Disk,
}

impl MemLog {
    /// A log store on `disk`.
    pub fn new(disk: Disk) -> Self {
        Self { disk }
    }
}

impl RaftLogReader<SimTypes> for MemLog {
    async fn try_get_log_entries<RB: RangeBounds<u64> + Clone + Debug + OptionalSend>(
        &mut self,
        range: RB,
    ) -> Result<Vec<Entry>, StorageError> {
        Ok(lock(&self.disk)
            .log
            .range(range)
            .map(|(_, e)| e.clone())
            .collect())
    }
}

impl RaftLogStorage<SimTypes> for MemLog {
    type LogReader = Self;

    async fn get_log_state(&mut self) -> Result<LogState<SimTypes>, StorageError> {
        let disk = lock(&self.disk);
        let last = disk
            .log
            .values()
            .next_back()
            .map(|e| e.log_id)
            .or(disk.last_purged);
        Ok(LogState {
            last_purged_log_id: disk.last_purged,
            last_log_id: last,
        })
    }

    async fn get_log_reader(&mut self) -> Self::LogReader {
        self.clone()
    }

    async fn save_vote(&mut self, vote: &Vote) -> Result<(), StorageError> {
        lock(&self.disk).vote = Some(*vote);
        Ok(())
    }

    async fn read_vote(&mut self) -> Result<Option<Vote>, StorageError> {
        Ok(lock(&self.disk).vote)
    }

    async fn save_committed(&mut self, committed: Option<LogId>) -> Result<(), StorageError> {
        lock(&self.disk).committed = committed;
        Ok(())
    }

    async fn read_committed(&mut self) -> Result<Option<LogId>, StorageError> {
        Ok(lock(&self.disk).committed)
    }

    async fn append<I>(&mut self, entries: I, callback: LogFlushed<SimTypes>) -> Result<(), StorageError>
    where
        I: IntoIterator<Item = Entry> + OptionalSend,
        I::IntoIter: OptionalSend,
    {
        {
            let mut disk = lock(&self.disk);
            for entry in entries {
                if disk.planted_no_fsync {
                    disk.unsynced.insert(entry.log_id.index);
                }
                disk.log.insert(entry.log_id.index, entry);
            }
        }
        // Honest: the entries are on the disk now. Planted: acknowledged all the same.
        callback.log_io_completed(Ok(()));
        Ok(())
    }

    async fn truncate(&mut self, log_id: LogId) -> Result<(), StorageError> {
        let mut disk = lock(&self.disk);
        disk.log.split_off(&log_id.index);
        disk.unsynced.split_off(&log_id.index);
        Ok(())
    }

    async fn purge(&mut self, log_id: LogId) -> Result<(), StorageError> {
        let mut disk = lock(&self.disk);
        disk.last_purged = Some(log_id);
        let kept = disk.log.split_off(&(log_id.index + 1));
        disk.log = kept;
        // Purged entries are behind a snapshot, which is synced.
        let unsynced = disk.unsynced.split_off(&(log_id.index + 1));
        disk.unsynced = unsynced;
        Ok(())
    }
}

/// The applied state, shared with the node's request handlers.
#[derive(Debug, Default)]
pub struct Applied {
    /// The last entry applied.
    pub last_applied: Option<LogId>,
    last_membership: StoredMembership,
    /// Drover's replicated state.
    pub state: State,
}

/// The state machine.
#[derive(Clone)]
pub struct MemStateMachine {
    disk: Disk,
    /// What has been applied; the node reads it.
    pub applied: Arc<Mutex<Applied>>,
}

fn snapshot_error(e: impl std::error::Error + 'static) -> StorageError {
    StorageIOError::read_snapshot(None, AnyError::new(&e)).into()
}

impl MemStateMachine {
    /// Starts from the snapshot on `disk`, if any.
    pub fn open(disk: Disk) -> Result<Self, serde_json::Error> {
        let applied = match &lock(&disk).snapshot {
            Some((meta, data)) => Applied {
                last_applied: meta.last_log_id,
                last_membership: meta.last_membership.clone(),
                state: serde_json::from_slice(data)?,
            },
            None => Applied::default(),
        };
        Ok(Self {
            disk,
            applied: Arc::new(Mutex::new(applied)),
        })
    }

    fn applied(&self) -> std::sync::MutexGuard<'_, Applied> {
        self.applied.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl RaftSnapshotBuilder<SimTypes> for MemStateMachine {
    async fn build_snapshot(&mut self) -> Result<Snapshot, StorageError> {
        let (data, meta) = {
            let applied = self.applied();
            let data = serde_json::to_vec(&applied.state).map_err(snapshot_error)?;
            let last = applied.last_applied;
            let meta = SnapshotMeta {
                last_log_id: last,
                last_membership: applied.last_membership.clone(),
                snapshot_id: format!("{}", last.map_or(0, |id| id.index)),
            };
            (data, meta)
        };
        lock(&self.disk).snapshot = Some((meta.clone(), data.clone()));
        Ok(Snapshot {
            meta,
            snapshot: Box::new(Cursor::new(data)),
        })
    }
}

impl RaftStateMachine<SimTypes> for MemStateMachine {
    type SnapshotBuilder = Self;

    async fn applied_state(&mut self) -> Result<(Option<LogId>, StoredMembership), StorageError> {
        let applied = self.applied();
        Ok((applied.last_applied, applied.last_membership.clone()))
    }

    async fn apply<I>(&mut self, entries: I) -> Result<Vec<CommandResult>, StorageError>
    where
        I: IntoIterator<Item = Entry> + OptionalSend,
        I::IntoIter: OptionalSend,
    {
        let mut applied = self.applied();
        let mut results = Vec::new();
        for entry in entries {
            applied.last_applied = Some(entry.log_id);
            match entry.payload {
                EntryPayload::Blank => results.push(CommandResult::Done),
                EntryPayload::Normal(proposal) => {
                    results.push(applied.state.apply(entry.log_id.index, &proposal).0);
                }
                EntryPayload::Membership(membership) => {
                    applied.last_membership = StoredMembership::new(Some(entry.log_id), membership);
                    results.push(CommandResult::Done);
                }
            }
        }
        Ok(results)
    }

    async fn get_snapshot_builder(&mut self) -> Self::SnapshotBuilder {
        self.clone()
    }

    async fn begin_receiving_snapshot(&mut self) -> Result<Box<Cursor<Vec<u8>>>, StorageError> {
        Ok(Box::new(Cursor::new(Vec::new())))
    }

    async fn install_snapshot(
        &mut self,
        meta: &SnapshotMeta,
        snapshot: Box<Cursor<Vec<u8>>>,
    ) -> Result<(), StorageError> {
        let data = snapshot.into_inner();
        let state: State = serde_json::from_slice(&data).map_err(snapshot_error)?;
        lock(&self.disk).snapshot = Some((meta.clone(), data));
        let mut applied = self.applied();
        applied.last_applied = meta.last_log_id;
        applied.last_membership = meta.last_membership.clone();
        applied.state = state;
        Ok(())
    }

    async fn get_current_snapshot(&mut self) -> Result<Option<Snapshot>, StorageError> {
        Ok(lock(&self.disk).snapshot.clone().map(|(meta, data)| Snapshot {
            meta,
            snapshot: Box::new(Cursor::new(data)),
        }))
    }
}

#[cfg(test)]
mod tests {
    use openraft::testing::{StoreBuilder, Suite};

    use super::*;

    struct MemBuilder;

    impl StoreBuilder<SimTypes, MemLog, MemStateMachine, ()> for MemBuilder {
        async fn build(&self) -> Result<((), MemLog, MemStateMachine), StorageError> {
            let disk = Disk::default();
            let state_machine = MemStateMachine::open(disk.clone()).map_err(snapshot_error)?;
            Ok(((), MemLog::new(disk), state_machine))
        }
    }

    #[test]
    fn the_simulated_storage_passes_the_openraft_conformance_suite() -> anyhow::Result<()> {
        Suite::test_all(MemBuilder)?;
        Ok(())
    }
}
