//! The state machine: an in-memory [`State`] fed by committed entries, with its snapshot
//! persisted on the member's [`Disk`]. Applied changes are published to watchers after each batch.

use std::collections::BTreeMap;
use std::io::Cursor;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use drover_model::{Change, CommandResult, Proposal, State};
use openraft::storage::RaftStateMachine;
use openraft::{AnyError, EntryPayload, OptionalSend, RaftSnapshotBuilder, StorageIOError};
use serde::{Deserialize, Serialize};
use tokio::sync::{broadcast, oneshot};

use super::codec::{decode, encode};
use super::disk::{Column, Disk, DiskOp};
use super::history::ChangeHistory;
use crate::error::StoreError;
use crate::typ::{Entry, LogId, Snapshot, SnapshotMeta, StorageError, StoredMembership, TypeConfig};

/// Most bytes of objects the watch history keeps (besides its count, `watch_history`); a watch
/// that resumes from older than what is kept gets `410 Gone` and lists again.
pub const WATCH_HISTORY_BYTES: usize = 64 * 1024 * 1024;

const KEY_SNAPSHOT_META: &[u8] = b"snapshot_meta";
const KEY_SNAPSHOT_DATA: &[u8] = b"snapshot_data";

/// What a snapshot's data holds.
#[derive(Deserialize)]
struct SnapshotData {
    state: State,
}

/// [`SnapshotData`] by reference, so building a snapshot encodes the state without copying it.
#[derive(Serialize)]
struct SnapshotDataRef<'a> {
    state: &'a State,
}

/// The applied state with the log position it reflects.
#[derive(Debug, Default)]
pub(crate) struct Applied {
    pub(crate) last_applied: Option<LogId>,
    pub(crate) last_membership: StoredMembership,
    pub(crate) state: State,
}

/// The index applied so far and the callers waiting for later ones, by the index they wait
/// for. A watch of the applied index would wake every waiter at every apply; this wakes each
/// once, when its index is reached (at 64 clients, a few dozen waiters and hundreds of applies
/// a second).
struct AppliedIndex {
    applied: u64,
    waiters: BTreeMap<u64, Vec<oneshot::Sender<()>>>,
}

/// What the state machine shares with the rest of the node: the applied state for reads, the
/// applied index, the change feed and its recent history.
pub struct SharedState {
    pub(crate) applied: RwLock<Applied>,
    pub(crate) history: Mutex<ChangeHistory>,
    pub(crate) changes: broadcast::Sender<Arc<Change>>,
    /// The applied index and who waits for a later one.
    applied_index: Mutex<AppliedIndex>,
    pub(crate) snapshots_built: AtomicU64,
    pub(crate) snapshots_installed: AtomicU64,
    /// Views shown the state after every applied proposal ([`ApplyObserver`]).
    observers: RwLock<Vec<Arc<dyn ApplyObserver>>>,
}

/// A view kept from the applied state at every proposal (Krake's watch journal): shown the
/// state after each proposal of each entry in log order, while the state cannot change (so it
/// must be quick), and the whole state when a snapshot replaces it.
pub trait ApplyObserver: Send + Sync {
    /// `state` just applied `proposal` with `result`; `state.revision()` is its revision.
    fn applied(&self, state: &State, proposal: &Proposal, result: &CommandResult);
    /// `state` is new: the starting point when the observer is added, or an installed snapshot.
    fn replaced(&self, state: &State);
}

impl SharedState {
    /// Adds an observer of every proposal applied from now on; it is first shown the state as
    /// it is, with no proposal applied in between.
    pub fn observe(&self, observer: Arc<dyn ApplyObserver>) {
        let applied = self.applied.read().unwrap_or_else(|p| p.into_inner());
        observer.replaced(&applied.state);
        self.observers
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .push(observer);
    }

    /// Runs `f` over the applied state; returns its result and the revision it saw.
    pub fn with_state<R>(&self, f: impl FnOnce(&State) -> R) -> (R, u64) {
        let applied = self
            .applied
            .read()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        (f(&applied.state), applied.state.revision())
    }

    /// A receiver that resolves once `index` is applied; `None` when it already is. It fails
    /// when the state machine is dropped first.
    pub(crate) fn applied_waiter(&self, index: u64) -> Option<oneshot::Receiver<()>> {
        let mut applied = self.applied_index.lock().unwrap_or_else(|p| p.into_inner());
        if applied.applied >= index {
            return None;
        }
        let (waiter, reached) = oneshot::channel();
        applied.waiters.entry(index).or_default().push(waiter);
        Some(reached)
    }

    /// Records the applied index and wakes whoever waits for it or an earlier one.
    fn advance_applied(&self, index: u64) {
        let ready = {
            let mut applied = self.applied_index.lock().unwrap_or_else(|p| p.into_inner());
            applied.applied = index;
            let later = applied.waiters.split_off(&index.saturating_add(1));
            std::mem::replace(&mut applied.waiters, later)
        };
        for waiter in ready.into_values().flatten() {
            // A caller that gave up no longer listens.
            let _ = waiter.send(());
        }
    }
}

/// The openraft state machine over [`SharedState`].
#[derive(Clone)]
pub struct StateMachineStore {
    disk: Arc<dyn Disk>,
    shared: Arc<SharedState>,
}

fn sm_read(e: impl std::error::Error + 'static) -> StorageError {
    StorageIOError::read_state_machine(AnyError::new(&e)).into()
}

fn snapshot_write(e: impl std::error::Error + 'static) -> StorageError {
    StorageIOError::write_snapshot(None, AnyError::new(&e)).into()
}

impl StateMachineStore {
    /// Loads the state machine from the persisted snapshot, if there is one.
    pub(crate) fn open(disk: Arc<dyn Disk>, watch_history: usize) -> Result<Self, StoreError> {
        let meta: Option<SnapshotMeta> = match disk.get(Column::State, KEY_SNAPSHOT_META)? {
            Some(bytes) => Some(decode(&bytes)?),
            None => None,
        };
        let applied = match (&meta, disk.get(Column::State, KEY_SNAPSHOT_DATA)?) {
            (Some(meta), Some(bytes)) => {
                let data: SnapshotData = decode(&bytes)?;
                Applied {
                    last_applied: meta.last_log_id,
                    last_membership: meta.last_membership.clone(),
                    state: data.state,
                }
            }
            _ => Applied::default(),
        };
        let floor = applied.last_applied.as_ref().map_or(0, |id| id.index);
        let revision = applied.state.revision();
        // A slow subscriber keeps at most this many changes alive (at most 64 MiB of objects at
        // their size limit); one that lags catches up from the history.
        let (changes, _) = broadcast::channel(256);
        let shared = Arc::new(SharedState {
            applied: RwLock::new(applied),
            history: Mutex::new(ChangeHistory::new(revision, watch_history, WATCH_HISTORY_BYTES)),
            changes,
            applied_index: Mutex::new(AppliedIndex {
                applied: floor,
                waiters: BTreeMap::new(),
            }),
            snapshots_built: AtomicU64::new(0),
            snapshots_installed: AtomicU64::new(0),
            observers: RwLock::new(Vec::new()),
        });
        Ok(Self { disk, shared })
    }

    /// The state shared with readers and watchers.
    pub fn shared(&self) -> Arc<SharedState> {
        self.shared.clone()
    }

    fn persist_snapshot(&self, meta: &SnapshotMeta, data: &[u8]) -> Result<(), StorageError> {
        let changes = vec![
            DiskOp::Put {
                column: Column::State,
                key: KEY_SNAPSHOT_META.to_vec(),
                value: encode(meta).map_err(snapshot_write)?,
            },
            DiskOp::Put {
                column: Column::State,
                key: KEY_SNAPSHOT_DATA.to_vec(),
                value: data.to_vec(),
            },
        ];
        // The log behind this snapshot may be purged next, so it must be on disk first.
        self.disk.write(changes, true).map_err(snapshot_write)
    }

    fn publish(&self, changes: Vec<Change>, applied_index: u64) {
        if !changes.is_empty() {
            let mut history = self.shared.history.lock().unwrap_or_else(|p| p.into_inner());
            for change in changes {
                let change = Arc::new(change);
                history.push(change.clone());
                // No receivers is fine: nobody is watching.
                let _ = self.shared.changes.send(change);
            }
        }
        self.shared.advance_applied(applied_index);
    }
}

impl RaftSnapshotBuilder<TypeConfig> for StateMachineStore {
    async fn build_snapshot(&mut self) -> Result<Snapshot, StorageError> {
        let (data, last_applied, last_membership) = {
            let applied = self.shared.applied.read().unwrap_or_else(|p| p.into_inner());
            let data = encode(&SnapshotDataRef {
                state: &applied.state,
            })
            .map_err(snapshot_write)?;
            (data, applied.last_applied, applied.last_membership.clone())
        };
        let sequence = self.shared.snapshots_built.fetch_add(1, Ordering::Relaxed) + 1;
        let snapshot_id = match &last_applied {
            Some(id) => format!("{}-{}-{sequence}", id.leader_id.term, id.index),
            None => format!("0-0-{sequence}"),
        };
        let meta = SnapshotMeta {
            last_log_id: last_applied,
            last_membership,
            snapshot_id,
        };
        self.persist_snapshot(&meta, &data)?;
        Ok(Snapshot {
            meta,
            snapshot: Box::new(Cursor::new(data)),
        })
    }
}

impl RaftStateMachine<TypeConfig> for StateMachineStore {
    type SnapshotBuilder = Self;

    async fn applied_state(&mut self) -> Result<(Option<LogId>, StoredMembership), StorageError> {
        let applied = self.shared.applied.read().unwrap_or_else(|p| p.into_inner());
        Ok((applied.last_applied, applied.last_membership.clone()))
    }

    async fn apply<I>(&mut self, entries: I) -> Result<Vec<CommandResult>, StorageError>
    where
        I: IntoIterator<Item = Entry> + OptionalSend,
        I::IntoIter: OptionalSend,
    {
        let mut results = Vec::new();
        let mut changes = Vec::new();
        let applied_index = {
            let mut applied = self.shared.applied.write().unwrap_or_else(|p| p.into_inner());
            let observers = self.shared.observers.read().unwrap_or_else(|p| p.into_inner());
            let mut observe = |state: &State, proposal: &Proposal, result: &CommandResult| {
                for observer in observers.iter() {
                    observer.applied(state, proposal, result);
                }
            };
            for entry in entries {
                let index = entry.log_id.index;
                applied.last_applied = Some(entry.log_id);
                match entry.payload {
                    EntryPayload::Blank => results.push(CommandResult::Done),
                    EntryPayload::Normal(proposal) => {
                        let (result, mut applied_changes) =
                            applied.state.apply_observed(index, &proposal, &mut observe);
                        changes.append(&mut applied_changes);
                        results.push(result);
                    }
                    EntryPayload::Membership(membership) => {
                        applied.last_membership = StoredMembership::new(Some(entry.log_id), membership);
                        results.push(CommandResult::Done);
                    }
                }
            }
            applied.last_applied.as_ref().map_or(0, |id| id.index)
        };
        self.publish(changes, applied_index);
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
        let bytes = snapshot.into_inner();
        let data: SnapshotData = decode(&bytes).map_err(|e| {
            StorageError::from(StorageIOError::read_snapshot(
                Some(meta.signature()),
                AnyError::new(&e),
            ))
        })?;
        self.persist_snapshot(meta, &bytes)?;
        let floor = meta.last_log_id.as_ref().map_or(0, |id| id.index);
        {
            let mut applied = self.shared.applied.write().unwrap_or_else(|p| p.into_inner());
            applied.last_applied = meta.last_log_id;
            applied.last_membership = meta.last_membership.clone();
            applied.state = data.state;
            // Watchers behind the snapshot cannot be served from history any more.
            self.shared
                .history
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .reset(applied.state.revision());
            for observer in self
                .shared
                .observers
                .read()
                .unwrap_or_else(|p| p.into_inner())
                .iter()
            {
                observer.replaced(&applied.state);
            }
        }
        self.shared.snapshots_installed.fetch_add(1, Ordering::Relaxed);
        self.shared.advance_applied(floor);
        Ok(())
    }

    async fn get_current_snapshot(&mut self) -> Result<Option<Snapshot>, StorageError> {
        let meta = self.disk.get(Column::State, KEY_SNAPSHOT_META).map_err(sm_read)?;
        let data = self.disk.get(Column::State, KEY_SNAPSHOT_DATA).map_err(sm_read)?;
        match (meta, data) {
            (Some(meta), Some(data)) => {
                let meta: SnapshotMeta = decode(&meta).map_err(sm_read)?;
                Ok(Some(Snapshot {
                    meta,
                    snapshot: Box::new(Cursor::new(data)),
                }))
            }
            _ => Ok(None),
        }
    }
}

#[cfg(test)]
mod tests {
    use tokio::sync::oneshot::error::TryRecvError;

    use super::*;
    use crate::store::disk::MemDisk;

    #[test]
    fn a_waiter_wakes_when_its_index_is_applied_and_not_before() -> Result<(), Box<dyn std::error::Error>> {
        let store = StateMachineStore::open(Arc::new(MemDisk::new()), 16)?;
        let shared = store.shared();
        let mut five = shared.applied_waiter(5).ok_or("index 5 is not applied yet")?;
        let mut seven = shared.applied_waiter(7).ok_or("index 7 is not applied yet")?;
        shared.advance_applied(4);
        assert_eq!(five.try_recv(), Err(TryRecvError::Empty));
        shared.advance_applied(6);
        assert_eq!(five.try_recv(), Ok(()));
        assert_eq!(seven.try_recv(), Err(TryRecvError::Empty));
        assert!(shared.applied_waiter(6).is_none(), "index 6 is applied");
        drop(store);
        drop(shared);
        assert_eq!(
            seven.try_recv(),
            Err(TryRecvError::Closed),
            "nobody is left to wake it"
        );
        Ok(())
    }
}
