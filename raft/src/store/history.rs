//! The recent changes a node keeps so that watches can resume from an older revision.

use std::collections::VecDeque;
use std::sync::Arc;

use drover_model::Change;

use crate::error::HistoryGone;

/// Recent applied changes, oldest first, bounded in count and in bytes.
///
/// Invariant: every change with `index > floor` that this node applied is in `changes`.
#[derive(Debug)]
pub struct ChangeHistory {
    changes: VecDeque<Arc<Change>>,
    floor: u64,
    capacity: usize,
    max_bytes: usize,
    bytes: usize,
}

impl ChangeHistory {
    /// An empty history that is complete after `floor`, keeping at most `capacity` changes and
    /// `max_bytes` of objects ([`drover_model::StoredObject::approx_bytes`]).
    pub fn new(floor: u64, capacity: usize, max_bytes: usize) -> Self {
        Self {
            changes: VecDeque::new(),
            floor,
            capacity: capacity.max(1),
            max_bytes,
            bytes: 0,
        }
    }

    /// Records changes applied in order.
    pub fn push(&mut self, change: Arc<Change>) {
        self.bytes += change.object.approx_bytes();
        self.changes.push_back(change);
        while self.changes.len() > self.capacity || (self.bytes > self.max_bytes && self.changes.len() > 1) {
            if let Some(oldest) = self.changes.pop_front() {
                self.bytes = self.bytes.saturating_sub(oldest.object.approx_bytes());
                // A resume after an index below the dropped one would miss it.
                self.floor = self.floor.max(oldest.index);
            }
        }
    }

    /// Forgets everything: the state was replaced by a snapshot at `floor`.
    pub fn reset(&mut self, floor: u64) {
        self.changes.clear();
        self.bytes = 0;
        self.floor = floor;
    }

    /// At most `limit` kept changes with an index greater than `after`, oldest first.
    pub fn since(&self, after: u64, limit: usize) -> Result<Vec<Arc<Change>>, HistoryGone> {
        if after < self.floor {
            return Err(HistoryGone {
                requested: after,
                oldest: self.floor,
            });
        }
        let start = self.changes.partition_point(|change| change.index <= after);
        Ok(self.changes.iter().skip(start).take(limit).cloned().collect())
    }
}

#[cfg(test)]
mod tests {
    use drover_model::{
        ChangeKind, CoordinationLeaseSpec, LeaseSpec, ObjectKey, ObjectKind, ObjectMeta, StoredObject,
    };

    use super::*;

    fn change(index: u64) -> Arc<Change> {
        Arc::new(Change {
            index,
            kind: ChangeKind::Added,
            object: StoredObject {
                key: ObjectKey::new(ObjectKind::CoordinationLease, "ns", format!("o{index}")),
                meta: ObjectMeta {
                    uid: String::new(),
                    resource_version: index,
                    created_index: index,
                    creation_timestamp: String::new(),
                    labels: Default::default(),
                    annotations: Default::default(),
                },
                spec: LeaseSpec::Coordination(CoordinationLeaseSpec::default()),
            },
        })
    }

    #[test]
    fn resumes_after_any_kept_revision_and_refuses_older_ones() {
        let mut history = ChangeHistory::new(0, 3, usize::MAX);
        for index in 1..=5 {
            history.push(change(index));
        }
        assert_eq!(history.floor, 2);
        let indexes: Vec<u64> = history
            .since(2, 10)
            .expect("kept")
            .iter()
            .map(|c| c.index)
            .collect();
        assert_eq!(indexes, vec![3, 4, 5]);
        let page: Vec<u64> = history
            .since(2, 2)
            .expect("kept")
            .iter()
            .map(|c| c.index)
            .collect();
        assert_eq!(page, vec![3, 4]);
        assert!(history.since(1, 10).is_err());
        assert!(history.since(5, 10).expect("kept").is_empty());
    }

    #[test]
    fn reset_moves_the_floor_to_the_snapshot() {
        let mut history = ChangeHistory::new(0, 10, usize::MAX);
        history.push(change(1));
        history.reset(40);
        assert!(history.since(39, 10).is_err());
        assert!(history.since(40, 10).expect("kept").is_empty());
    }

    #[test]
    fn big_objects_are_forgotten_by_bytes() {
        // Finding 5: 50,000 versions of a large object were all kept.
        let one = change(1).object.approx_bytes();
        // Room for three changes (the names of later ones are a byte longer).
        let mut history = ChangeHistory::new(0, 50_000, one * 3 + 3);
        for index in 1..=10 {
            history.push(change(index));
        }
        assert!(history.bytes <= one * 3 + 3, "{} bytes kept", history.bytes);
        assert_eq!(history.changes.len(), 3);
        assert!(history.since(6, 10).is_err());
        assert_eq!(history.since(7, 10).expect("kept").len(), 3);
    }
}
