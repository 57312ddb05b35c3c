//! The seam between the Raft stores and the bytes under them: everything the log store and the
//! state machine persist goes through a [`Disk`] of three ordered keyspaces ([`Column`]). A
//! node runs on [`RocksDisk`] (one RocksDB database, a column family per keyspace); the
//! deterministic simulation runs the same stores on a [`MemDisk`], which keeps what was written
//! since the last sync apart from what was synced, so that a simulated power cut loses exactly
//! what a real one could.

use std::collections::BTreeMap;
use std::ops::Bound;
use std::path::Path;
use std::sync::{Arc, Mutex};

use rocksdb::{ColumnFamilyDescriptor, Direction, IteratorMode, Options, WriteBatch, WriteOptions, DB};

use crate::error::StoreError;

/// One of a member's keyspaces.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Column {
    /// Log entries keyed by big-endian index.
    Log,
    /// Vote, committed log id, last purged log id.
    Meta,
    /// The current snapshot of the state machine (metadata and data).
    State,
}

impl Column {
    const ALL: [Column; 3] = [Column::Log, Column::Meta, Column::State];

    /// The RocksDB column family that holds it.
    fn family(self) -> &'static str {
        match self {
            Column::Log => "log",
            Column::Meta => "meta",
            Column::State => "state",
        }
    }

    fn slot(self) -> usize {
        self as usize
    }
}

/// One change in a batch written at once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DiskOp {
    /// Sets `key` to `value`.
    Put {
        /// The keyspace.
        column: Column,
        /// The key.
        key: Vec<u8>,
        /// The value.
        value: Vec<u8>,
    },
    /// Removes every key from `from` (included) to `to` (excluded).
    DeleteRange {
        /// The keyspace.
        column: Column,
        /// First key removed.
        from: Vec<u8>,
        /// First key kept.
        to: Vec<u8>,
    },
}

/// A key and its value.
pub type Pair = (Vec<u8>, Vec<u8>);

/// Keys and values as a range read returns them, in key order.
pub type Pairs = Vec<Pair>;

/// Where a member's Raft state lives. Writes are applied whole or not at all; a write with
/// `sync` is durable (with every write before it) when it returns.
pub trait Disk: Send + Sync + 'static {
    /// The value at `key`.
    fn get(&self, column: Column, key: &[u8]) -> Result<Option<Vec<u8>>, StoreError>;

    /// The last key of `column` and its value.
    fn last(&self, column: Column) -> Result<Option<Pair>, StoreError>;

    /// The keys from `from` (included) to `to` (excluded; `None`: to the end), in order.
    fn range(&self, column: Column, from: &[u8], to: Option<&[u8]>) -> Result<Pairs, StoreError>;

    /// Applies `changes` at once; durably, with everything written before, when `sync`.
    fn write(&self, changes: Vec<DiskOp>, sync: bool) -> Result<(), StoreError>;

    /// Whether a synced write holds its thread long enough to belong off the async runtime.
    fn blocks(&self) -> bool;
}

/// A member's RocksDB database: a column family per [`Column`].
pub struct RocksDisk {
    db: DB,
}

impl RocksDisk {
    /// Opens (or creates) the database under `dir`.
    pub fn open(dir: &Path) -> Result<Arc<Self>, StoreError> {
        let mut options = Options::default();
        options.create_if_missing(true);
        options.create_missing_column_families(true);
        options.set_compression_type(rocksdb::DBCompressionType::Lz4);
        let column_families = Column::ALL
            .into_iter()
            .map(|column| ColumnFamilyDescriptor::new(column.family(), Options::default()));
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
        Ok(Arc::new(Self { db }))
    }

    /// Opens the database under `dir` for reading only (it must not be in use by a node).
    pub fn open_read_only(dir: &Path) -> Result<Arc<Self>, StoreError> {
        let families = Column::ALL.map(Column::family);
        let db = DB::open_cf_for_read_only(&Options::default(), dir, families, false)?;
        Ok(Arc::new(Self { db }))
    }

    fn cf(&self, column: Column) -> Result<&rocksdb::ColumnFamily, StoreError> {
        self.db
            .cf_handle(column.family())
            .ok_or_else(|| StoreError::Corrupt(format!("missing column family {}", column.family())))
    }
}

impl Disk for RocksDisk {
    fn get(&self, column: Column, key: &[u8]) -> Result<Option<Vec<u8>>, StoreError> {
        Ok(self.db.get_cf(self.cf(column)?, key)?)
    }

    fn last(&self, column: Column) -> Result<Option<Pair>, StoreError> {
        match self.db.iterator_cf(self.cf(column)?, IteratorMode::End).next() {
            Some(item) => {
                let (key, value) = item?;
                Ok(Some((key.into_vec(), value.into_vec())))
            }
            None => Ok(None),
        }
    }

    fn range(&self, column: Column, from: &[u8], to: Option<&[u8]>) -> Result<Pairs, StoreError> {
        let mut pairs = Vec::new();
        let iter = self
            .db
            .iterator_cf(self.cf(column)?, IteratorMode::From(from, Direction::Forward));
        for item in iter {
            let (key, value) = item?;
            if to.is_some_and(|to| *key >= *to) {
                break;
            }
            pairs.push((key.into_vec(), value.into_vec()));
        }
        Ok(pairs)
    }

    fn write(&self, changes: Vec<DiskOp>, sync: bool) -> Result<(), StoreError> {
        let mut batch = WriteBatch::default();
        for change in changes {
            match change {
                DiskOp::Put { column, key, value } => batch.put_cf(self.cf(column)?, key, value),
                DiskOp::DeleteRange { column, from, to } => batch.delete_range_cf(self.cf(column)?, from, to),
            }
        }
        let mut options = WriteOptions::default();
        options.set_sync(sync);
        Ok(self.db.write_opt(batch, &options)?)
    }

    fn blocks(&self) -> bool {
        true
    }
}

type Keyspaces = [BTreeMap<Vec<u8>, Vec<u8>>; 3];

fn apply(keyspaces: &mut Keyspaces, change: &DiskOp) {
    match change {
        DiskOp::Put { column, key, value } => {
            keyspaces[column.slot()].insert(key.clone(), value.clone());
        }
        DiskOp::DeleteRange { column, from, to } => {
            let keyspace = &mut keyspaces[column.slot()];
            if from < to {
                let mut kept = keyspace.split_off(from.as_slice());
                let mut after = kept.split_off(to.as_slice());
                keyspace.append(&mut after);
            }
        }
    }
}

/// What a [`MemDisk`] holds.
#[derive(Debug, Default)]
struct MemContents {
    /// What reads see: every write so far.
    live: Keyspaces,
    /// What survives a power cut: every write up to the last sync.
    durable: Keyspaces,
    /// Writes since the last sync, in order.
    unsynced: Vec<DiskOp>,
    /// Whether syncs of log appends are skipped (see [`MemDisk::planted_lying_fsync`]).
    lying_fsync: bool,
}

/// A disk in memory that outlives the simulated host it belongs to: reads see every write;
/// [`MemDisk::power_cut`] keeps only what was synced, as a machine that loses power does (a
/// killed process loses nothing the kernel has, which is why this needs a simulation).
#[derive(Debug, Default, Clone)]
pub struct MemDisk {
    contents: Arc<Mutex<MemContents>>,
}

impl MemDisk {
    /// An empty disk.
    pub fn new() -> Self {
        Self::default()
    }

    fn contents(&self) -> std::sync::MutexGuard<'_, MemContents> {
        self.contents.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// What a power cut does: every write since the last sync is gone.
    pub fn power_cut(&self) {
        let mut contents = self.contents();
        contents.unsynced.clear();
        contents.live = contents.durable.clone();
    }

    /// THE PLANTED BUG "lying fsync", for proving the simulation finds it: a synced write that
    /// only appends to the log returns before it is durable, as on a disk whose write cache
    /// ignores flushes, so a power cut loses acknowledged entries. Any other synced write still
    /// makes everything before it durable, as a write-ahead log does.
    pub fn planted_lying_fsync(&self) {
        self.contents().lying_fsync = true;
    }
}

impl Disk for MemDisk {
    fn get(&self, column: Column, key: &[u8]) -> Result<Option<Vec<u8>>, StoreError> {
        Ok(self.contents().live[column.slot()].get(key).cloned())
    }

    fn last(&self, column: Column) -> Result<Option<Pair>, StoreError> {
        Ok(self.contents().live[column.slot()]
            .last_key_value()
            .map(|(key, value)| (key.clone(), value.clone())))
    }

    fn range(&self, column: Column, from: &[u8], to: Option<&[u8]>) -> Result<Pairs, StoreError> {
        let contents = self.contents();
        let end = to.map_or(Bound::Unbounded, Bound::Excluded);
        if to.is_some_and(|to| to <= from) {
            return Ok(Vec::new());
        }
        Ok(contents.live[column.slot()]
            .range::<[u8], _>((Bound::Included(from), end))
            .map(|(key, value)| (key.clone(), value.clone()))
            .collect())
    }

    fn write(&self, changes: Vec<DiskOp>, sync: bool) -> Result<(), StoreError> {
        let mut contents = self.contents();
        for change in &changes {
            apply(&mut contents.live, change);
        }
        let only_appends = changes.iter().all(|change| {
            matches!(
                change,
                DiskOp::Put {
                    column: Column::Log,
                    ..
                }
            )
        });
        contents.unsynced.extend(changes);
        if sync && !(contents.lying_fsync && only_appends) {
            let MemContents {
                durable, unsynced, ..
            } = &mut *contents;
            for change in unsynced.drain(..) {
                apply(durable, &change);
            }
        }
        Ok(())
    }

    fn blocks(&self) -> bool {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn put(column: Column, key: &[u8], value: &[u8]) -> DiskOp {
        DiskOp::Put {
            column,
            key: key.to_vec(),
            value: value.to_vec(),
        }
    }

    fn keys(disk: &dyn Disk, column: Column) -> Vec<Vec<u8>> {
        disk.range(column, &[], None)
            .map(|pairs| pairs.into_iter().map(|(key, _)| key).collect())
            .unwrap_or_default()
    }

    /// The same calls on both disks: ranges, last keys and deletes agree.
    fn exercise(disk: &dyn Disk) -> Result<(), StoreError> {
        disk.write(
            vec![
                put(Column::Log, &[1], b"a"),
                put(Column::Log, &[2], b"b"),
                put(Column::Log, &[3], b"c"),
                put(Column::Meta, b"vote", b"v"),
            ],
            true,
        )?;
        assert_eq!(disk.get(Column::Meta, b"vote")?, Some(b"v".to_vec()));
        assert_eq!(disk.get(Column::State, b"vote")?, None, "keyspaces are apart");
        assert_eq!(disk.last(Column::Log)?, Some((vec![3], b"c".to_vec())));
        assert_eq!(
            disk.range(Column::Log, &[2], Some(&[3]))?,
            vec![(vec![2], b"b".to_vec())]
        );
        disk.write(
            vec![DiskOp::DeleteRange {
                column: Column::Log,
                from: vec![1],
                to: vec![3],
            }],
            false,
        )?;
        assert_eq!(keys(disk, Column::Log), vec![vec![3]]);
        Ok(())
    }

    #[test]
    fn rocks_and_memory_disks_answer_alike() -> Result<(), Box<dyn std::error::Error>> {
        let dir = tempfile::TempDir::new()?;
        exercise(RocksDisk::open(dir.path())?.as_ref())?;
        exercise(&MemDisk::new())?;
        Ok(())
    }

    #[test]
    fn a_power_cut_loses_what_was_not_synced_and_a_sync_keeps_all_before_it() -> Result<(), StoreError> {
        let disk = MemDisk::new();
        disk.write(vec![put(Column::Log, &[1], b"a")], false)?;
        disk.write(vec![put(Column::Meta, b"vote", b"v")], true)?;
        disk.write(vec![put(Column::Log, &[2], b"b")], false)?;
        assert_eq!(keys(&disk, Column::Log), vec![vec![1], vec![2]]);
        disk.power_cut();
        assert_eq!(
            keys(&disk, Column::Log),
            vec![vec![1]],
            "the unsynced tail is gone"
        );
        assert_eq!(disk.get(Column::Meta, b"vote")?, Some(b"v".to_vec()));
        Ok(())
    }

    #[test]
    fn a_lying_fsync_loses_acknowledged_appends_until_another_sync() -> Result<(), StoreError> {
        let disk = MemDisk::new();
        disk.planted_lying_fsync();
        disk.write(vec![put(Column::Log, &[1], b"a")], true)?;
        disk.power_cut();
        assert!(keys(&disk, Column::Log).is_empty(), "the synced append was lost");
        disk.write(vec![put(Column::Log, &[1], b"a")], true)?;
        disk.write(vec![put(Column::Meta, b"vote", b"v")], true)?;
        disk.power_cut();
        assert_eq!(
            keys(&disk, Column::Log),
            vec![vec![1]],
            "the vote's sync flushed it"
        );
        Ok(())
    }
}
