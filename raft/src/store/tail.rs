//! The newest log entries, kept in memory as they were appended.
//!
//! openraft 0.9 reads every entry back from the log store after appending it: once per follower
//! to replicate it and once more to apply it, each time decoding it from RocksDB. Profiles of
//! writes at 64 clients showed those decodes at about a tenth of each node's CPU. The tail keeps
//! the last [`TAIL_ENTRIES`] entries so that those reads are served from memory; older ranges (a
//! follower far behind, a restart) still come from RocksDB. The tail only ever holds entries that
//! RocksDB holds too: it is filled after an append is written and cut on truncate and purge.

use std::collections::VecDeque;

use crate::typ::Entry;

/// Entries kept. A batch entry holds at most 64 writes, so this stays within a few MiB.
pub(crate) const TAIL_ENTRIES: usize = 256;

/// Consecutive entries `first..first + entries.len()`.
#[derive(Default)]
pub(crate) struct LogTail {
    entries: VecDeque<Entry>,
}

impl LogTail {
    fn first(&self) -> Option<u64> {
        self.entries.front().map(|entry| entry.log_id.index)
    }

    fn end(&self) -> Option<u64> {
        self.entries.back().map(|entry| entry.log_id.index + 1)
    }

    /// Records entries just written to the log. A gap (never made by openraft, which truncates
    /// before it overwrites) empties the tail rather than keep a hole.
    pub(crate) fn appended(&mut self, entries: Vec<Entry>) {
        for entry in entries {
            if self.end().is_some_and(|end| end != entry.log_id.index) {
                self.entries.clear();
            }
            self.entries.push_back(entry);
        }
        while self.entries.len() > TAIL_ENTRIES {
            self.entries.pop_front();
        }
    }

    /// Forgets the entries at `index` and after (the log was truncated there).
    pub(crate) fn truncated(&mut self, index: u64) {
        while self.end().is_some_and(|end| end > index) {
            self.entries.pop_back();
        }
    }

    /// Forgets the entries up to and including `index` (the log was purged there).
    pub(crate) fn purged(&mut self, index: u64) {
        while self.first().is_some_and(|first| first <= index) {
            self.entries.pop_front();
        }
    }

    /// Clones of entries `start..end` when the tail holds all of them.
    pub(crate) fn get(&self, start: u64, end: u64) -> Option<Vec<Entry>> {
        let first = self.first()?;
        if start < first || end > self.end()? || start >= end {
            return None;
        }
        let from = usize::try_from(start - first).ok()?;
        let to = usize::try_from(end - first).ok()?;
        Some(self.entries.range(from..to).cloned().collect())
    }
}

#[cfg(test)]
mod tests {
    use drover_model::command::{Command, Proposal};
    use openraft::{CommittedLeaderId, EntryPayload, LogId};

    use super::*;

    fn entry(term: u64, index: u64) -> Entry {
        Entry {
            log_id: LogId::new(CommittedLeaderId::new(term, 1), index),
            payload: EntryPayload::Normal(Proposal::new(Command::Noop)),
        }
    }

    fn indexes(entries: Option<Vec<Entry>>) -> Option<Vec<(u64, u64)>> {
        entries.map(|entries| {
            entries
                .iter()
                .map(|entry| (entry.log_id.leader_id.term, entry.log_id.index))
                .collect()
        })
    }

    #[test]
    fn serves_only_ranges_it_holds_whole() {
        let mut tail = LogTail::default();
        assert_eq!(indexes(tail.get(1, 2)), None);
        tail.appended(vec![entry(1, 5), entry(1, 6), entry(1, 7)]);
        assert_eq!(indexes(tail.get(5, 8)), Some(vec![(1, 5), (1, 6), (1, 7)]));
        assert_eq!(indexes(tail.get(6, 7)), Some(vec![(1, 6)]));
        assert_eq!(indexes(tail.get(4, 6)), None, "starts before the tail");
        assert_eq!(indexes(tail.get(6, 9)), None, "ends after the tail");
        assert_eq!(indexes(tail.get(6, 6)), None, "empty range");
    }

    #[test]
    fn truncate_and_purge_cut_the_tail_like_the_log() {
        let mut tail = LogTail::default();
        tail.appended(vec![entry(1, 1), entry(1, 2), entry(1, 3), entry(1, 4)]);
        tail.truncated(3);
        assert_eq!(indexes(tail.get(1, 3)), Some(vec![(1, 1), (1, 2)]));
        assert_eq!(indexes(tail.get(1, 4)), None);
        // A new leader's entries replace the truncated ones.
        tail.appended(vec![entry(2, 3)]);
        assert_eq!(indexes(tail.get(2, 4)), Some(vec![(1, 2), (2, 3)]));
        tail.purged(2);
        assert_eq!(indexes(tail.get(3, 4)), Some(vec![(2, 3)]));
        assert_eq!(indexes(tail.get(2, 4)), None);
    }

    #[test]
    fn a_gap_empties_the_tail_and_old_entries_fall_off() {
        let mut tail = LogTail::default();
        tail.appended(vec![entry(1, 1), entry(1, 2)]);
        tail.appended(vec![entry(1, 10)]);
        assert_eq!(indexes(tail.get(1, 3)), None);
        assert_eq!(indexes(tail.get(10, 11)), Some(vec![(1, 10)]));
        let many: Vec<Entry> = (11..11 + TAIL_ENTRIES as u64).map(|i| entry(1, i)).collect();
        tail.appended(many);
        assert_eq!(indexes(tail.get(10, 11)), None);
        let last = 10 + TAIL_ENTRIES as u64;
        assert_eq!(
            indexes(tail.get(11, last + 1)).map(|v| v.len()),
            Some(TAIL_ENTRIES)
        );
    }
}
