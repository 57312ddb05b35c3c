//! The Raft log and Raft metadata (vote, committed, purged) on the member's [`Disk`].

use std::fmt::Debug;
use std::ops::{Bound, RangeBounds};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use openraft::storage::{LogFlushed, LogState, RaftLogStorage};
use openraft::{AnyError, OptionalSend, RaftLogReader, StorageIOError};
use prometheus::Histogram;
use tokio::time::Instant;

use super::codec::{decode, encode, log_index, log_key};
use super::disk::{Column, Disk, DiskOp};
use super::tail::LogTail;
use crate::typ::{Entry, LogId, StorageError, TypeConfig, Vote};

const KEY_VOTE: &[u8] = b"vote";
pub(super) const KEY_COMMITTED: &[u8] = b"committed";
const KEY_LAST_PURGED: &[u8] = b"last_purged";

/// The committed index is written when it has moved this many entries since the last write...
const SAVE_COMMITTED_EVERY_ENTRIES: u64 = 64;
/// ...or this long after the last write (at the next advance). Writing it at every advance (on
/// every member, for every entry) was 3–4 % of the nodes' CPU under write load; an older value
/// is as safe, since a restarted member learns the rest from the leader.
const SAVE_COMMITTED_EVERY: Duration = Duration::from_millis(200);

/// The Raft log store. Cheap to clone: clones share the database.
#[derive(Clone)]
pub struct LogStore {
    disk: Arc<dyn Disk>,
    /// Index of the last committed entry this node has heard of, for metrics and readiness.
    committed_index: Arc<AtomicU64>,
    /// The newest entries, served from memory to replication and apply.
    tail: Arc<Mutex<LogTail>>,
    /// Observes how long each durable append took.
    append_seconds: Histogram,
    /// The committed index last written and when.
    committed_saved: Arc<Mutex<Option<(u64, Instant)>>>,
    /// [`SAVE_COMMITTED_EVERY`], longer in a test that must not depend on the clock.
    save_committed_every: Duration,
}

fn io_read(e: impl std::error::Error + 'static) -> StorageError {
    StorageIOError::read_logs(AnyError::new(&e)).into()
}

fn io_write(e: impl std::error::Error + 'static) -> StorageError {
    StorageIOError::write_logs(AnyError::new(&e)).into()
}

impl LogStore {
    pub(crate) fn new(disk: Arc<dyn Disk>, append_seconds: Histogram) -> Self {
        Self {
            disk,
            committed_index: Arc::new(AtomicU64::new(0)),
            tail: Arc::default(),
            append_seconds,
            committed_saved: Arc::default(),
            save_committed_every: SAVE_COMMITTED_EVERY,
        }
    }

    fn tail(&self) -> MutexGuard<'_, LogTail> {
        // The tail is only ever changed whole by one call; a panic elsewhere leaves it usable.
        self.tail.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// A shared view of the committed index this node last heard of.
    pub fn committed_index(&self) -> Arc<AtomicU64> {
        self.committed_index.clone()
    }

    fn get_meta<T: serde::de::DeserializeOwned>(&self, key: &[u8]) -> Result<Option<T>, StorageError> {
        match self.disk.get(Column::Meta, key).map_err(io_read)? {
            Some(bytes) => decode(&bytes).map(Some).map_err(io_read),
            None => Ok(None),
        }
    }

    fn put_meta<T: serde::Serialize>(&self, key: &[u8], value: &T, sync: bool) -> Result<(), StorageError> {
        let change = DiskOp::Put {
            column: Column::Meta,
            key: key.to_vec(),
            value: encode(value).map_err(io_write)?,
        };
        self.disk.write(vec![change], sync).map_err(io_write)
    }

    fn last_log_id(&self) -> Result<Option<LogId>, StorageError> {
        match self.disk.last(Column::Log).map_err(io_read)? {
            Some((_, value)) => {
                let entry: Entry = decode(&value).map_err(io_read)?;
                Ok(Some(entry.log_id))
            }
            None => Ok(None),
        }
    }

    /// The last log id this node holds, or the last purged one when the log is empty.
    pub(crate) fn last_log_id_or_purged(&self) -> Result<Option<LogId>, StorageError> {
        let last_purged: Option<LogId> = self.get_meta(KEY_LAST_PURGED)?;
        Ok(self.last_log_id()?.or(last_purged))
    }

    fn delete_range(&self, from: u64, to: u64, sync: bool) -> Result<(), StorageError> {
        let change = DiskOp::DeleteRange {
            column: Column::Log,
            from: log_key(from).to_vec(),
            to: log_key(to).to_vec(),
        };
        self.disk.write(vec![change], sync).map_err(io_write)
    }
}

impl RaftLogReader<TypeConfig> for LogStore {
    async fn try_get_log_entries<RB: RangeBounds<u64> + Clone + Debug + OptionalSend>(
        &mut self,
        range: RB,
    ) -> Result<Vec<Entry>, StorageError> {
        let start = match range.start_bound() {
            Bound::Included(&i) => i,
            Bound::Excluded(&i) => i + 1,
            Bound::Unbounded => 0,
        };
        let end = match range.end_bound() {
            Bound::Included(&i) => i.saturating_add(1),
            Bound::Excluded(&i) => i,
            Bound::Unbounded => u64::MAX,
        };
        if let Some(entries) = self.tail().get(start, end) {
            return Ok(entries);
        }
        let mut entries = Vec::new();
        let to = (end != u64::MAX).then(|| log_key(end));
        let stored = self
            .disk
            .range(Column::Log, &log_key(start), to.as_ref().map(|key| &key[..]))
            .map_err(io_read)?;
        for (key, value) in stored {
            let index = log_index(&key).map_err(io_read)?;
            if !range.contains(&index) {
                break;
            }
            entries.push(decode(&value).map_err(io_read)?);
        }
        Ok(entries)
    }
}

impl RaftLogStorage<TypeConfig> for LogStore {
    type LogReader = Self;

    async fn get_log_state(&mut self) -> Result<LogState<TypeConfig>, StorageError> {
        let last_purged_log_id: Option<LogId> = self.get_meta(KEY_LAST_PURGED)?;
        let last_log_id = self.last_log_id()?.or(last_purged_log_id);
        Ok(LogState {
            last_purged_log_id,
            last_log_id,
        })
    }

    async fn get_log_reader(&mut self) -> Self::LogReader {
        self.clone()
    }

    async fn save_vote(&mut self, vote: &Vote) -> Result<(), StorageError> {
        self.put_meta(KEY_VOTE, vote, true)
            .map_err(|e| StorageIOError::write_vote(AnyError::new(&e)).into())
    }

    async fn read_vote(&mut self) -> Result<Option<Vote>, StorageError> {
        self.get_meta(KEY_VOTE)
    }

    async fn save_committed(&mut self, committed: Option<LogId>) -> Result<(), StorageError> {
        let Some(index) = committed.as_ref().map(|log_id| log_id.index) else {
            return Ok(());
        };
        self.committed_index.fetch_max(index, Ordering::Relaxed);
        let now = Instant::now();
        {
            let mut saved = self.committed_saved.lock().unwrap_or_else(|p| p.into_inner());
            let due = saved.is_none_or(|(saved_index, at)| {
                index >= saved_index + SAVE_COMMITTED_EVERY_ENTRIES || now >= at + self.save_committed_every
            });
            if !due {
                return Ok(());
            }
            *saved = Some((index, now));
        }
        // Not synced either: after a crash it is learnt again from the leader.
        self.put_meta(KEY_COMMITTED, &committed, false)
    }

    async fn read_committed(&mut self) -> Result<Option<LogId>, StorageError> {
        let committed: Option<Option<LogId>> = self.get_meta(KEY_COMMITTED)?;
        let committed = committed.flatten();
        if let Some(log_id) = &committed {
            self.committed_index.fetch_max(log_id.index, Ordering::Relaxed);
        }
        Ok(committed)
    }

    async fn append<I>(&mut self, entries: I, callback: LogFlushed<TypeConfig>) -> Result<(), StorageError>
    where
        I: IntoIterator<Item = Entry> + OptionalSend,
        I::IntoIter: OptionalSend,
    {
        let entries: Vec<Entry> = entries.into_iter().collect();
        let mut changes = Vec::with_capacity(entries.len());
        for entry in &entries {
            changes.push(DiskOp::Put {
                column: Column::Log,
                key: log_key(entry.log_id.index).to_vec(),
                value: encode(entry).map_err(io_write)?,
            });
        }
        // The append is durable once the WAL is synced; only then is it reported done.
        let disk = self.disk.clone();
        let timer = self.append_seconds.start_timer();
        let write = move || {
            let written = disk.write(changes, true);
            timer.observe_duration();
            written
        };
        let written = if self.disk.blocks() {
            tokio::task::spawn_blocking(write).await.map_err(io_write)?
        } else {
            write()
        };
        match written {
            Ok(()) => {
                self.tail().appended(entries);
                callback.log_io_completed(Ok(()));
                Ok(())
            }
            Err(e) => {
                callback.log_io_completed(Err(std::io::Error::other(e.to_string())));
                Err(io_write(e))
            }
        }
    }

    async fn truncate(&mut self, log_id: LogId) -> Result<(), StorageError> {
        // The tail first, so it never holds an entry the log no longer has.
        self.tail().truncated(log_id.index);
        self.delete_range(log_id.index, u64::MAX, true)
    }

    async fn purge(&mut self, log_id: LogId) -> Result<(), StorageError> {
        // Record the purge point first, so a crash in between never hides the gap.
        self.put_meta(KEY_LAST_PURGED, &log_id, true)?;
        self.tail().purged(log_id.index);
        self.delete_range(0, log_id.index + 1, false)
    }
}

#[cfg(test)]
mod tests {
    use openraft::{CommittedLeaderId, LogId};

    use super::*;
    use crate::store::RocksDisk;

    fn committed(index: u64) -> Option<LogId<u64>> {
        Some(LogId::new(CommittedLeaderId::new(1, 1), index))
    }

    #[tokio::test]
    async fn the_committed_index_is_written_every_64_entries_and_known_at_once(
    ) -> Result<(), Box<dyn std::error::Error>> {
        let dir = tempfile::TempDir::new()?;
        let mut store = LogStore::new(
            RocksDisk::open(dir.path())?,
            crate::metrics::unregistered_histogram()?,
        );
        store.save_committed_every = Duration::from_secs(3600);
        let known = store.committed_index();
        store.save_committed(committed(1)).await?;
        store.save_committed(committed(2)).await?;
        assert_eq!(known.load(Ordering::Relaxed), 2, "readiness sees every advance");
        assert_eq!(
            store.read_committed().await?,
            committed(1),
            "an older index is as safe"
        );
        store.save_committed(committed(65)).await?;
        assert_eq!(store.read_committed().await?, committed(65));
        Ok(())
    }
}
