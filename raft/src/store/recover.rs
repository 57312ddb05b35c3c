//! The state of a stopped member, read from its data directory alone: for a cluster that lost
//! its quorum for good (`drover cluster recover`). The member's persisted snapshot, then every
//! entry of its log after it, applied as the member would have: through the last entry it holds
//! (what etcd's `--force-new-cluster` keeps), or only through the committed index it last saved.
//! The directory is opened read-only and left as it was.

use std::path::Path;

use drover_model::State;
use openraft::EntryPayload;

use super::codec::{decode, log_index, log_key};
use super::disk::{Column, Disk, RocksDisk};
use super::log_store::KEY_COMMITTED;
use super::state_machine::StateMachineStore;
use crate::error::StoreError;
use crate::typ::{Entry, LogId};

/// How far into the member's log to go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Through {
    /// Every entry the member holds, committed or not (its last writes may never have been
    /// acknowledged to their clients).
    Last,
    /// Only entries the member knew were committed (it saves that index every 64 entries or
    /// 200 ms, so the last few committed ones may be left out).
    Committed,
}

/// A member's recovered state and where it came from.
#[derive(Debug)]
pub struct Recovered {
    /// The state after the entries applied.
    pub state: State,
    /// The index of the persisted snapshot it started from (0: none).
    pub snapshot_index: u64,
    /// The last index applied.
    pub applied_index: u64,
    /// The committed index the member last saved.
    pub committed_index: u64,
    /// The last index in its log.
    pub last_index: u64,
}

/// Reads the member's state from `dir` (which must not be in use by a running node).
pub fn recover(dir: &Path, through: Through) -> Result<Recovered, StoreError> {
    if !dir.join("CURRENT").try_exists().unwrap_or(false) {
        return Err(StoreError::Config(format!(
            "{} holds no member's data (no RocksDB database in it)",
            dir.display()
        )));
    }
    let disk = RocksDisk::open_read_only(dir)?;
    let machine = StateMachineStore::open(disk.clone(), 1)?;
    let shared = machine.shared();
    let (mut state, snapshot_index) = {
        let mut applied = shared.applied.write().unwrap_or_else(|p| p.into_inner());
        let index = applied.last_applied.as_ref().map_or(0, |id| id.index);
        (std::mem::take(&mut applied.state), index)
    };
    let committed: Option<Option<LogId>> = match disk.get(Column::Meta, KEY_COMMITTED)? {
        Some(bytes) => Some(decode(&bytes)?),
        None => None,
    };
    let committed_index = committed.flatten().map_or(0, |id| id.index);
    let start = log_key(snapshot_index.saturating_add(1));
    let mut applied_index = snapshot_index;
    let mut last_index = snapshot_index;
    for (key, value) in disk.range(Column::Log, &start, None)? {
        let index = log_index(&key)?;
        last_index = index;
        if through == Through::Committed && index > committed_index {
            continue;
        }
        if index != applied_index + 1 {
            return Err(StoreError::Corrupt(format!(
                "the log jumps from entry {applied_index} to {index}"
            )));
        }
        let entry: Entry = decode(&value)?;
        if let EntryPayload::Normal(proposal) = &entry.payload {
            state.apply(index, proposal);
        }
        applied_index = index;
    }
    Ok(Recovered {
        state,
        snapshot_index,
        applied_index,
        committed_index,
        last_index,
    })
}
