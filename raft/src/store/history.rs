//! The recent changes a node keeps so that watches can resume from an older revision.

use std::collections::VecDeque;
use std::sync::Arc;

use drover_model::Change;

use crate::error::HistoryGone;

/// Recent applied changes, oldest first, bounded in length.
///
/// Invariant: every change with `index > floor` that this node applied is in `changes`.
#[derive(Debug)]
pub struct ChangeHistory {
    changes: VecDeque<Arc<Change>>,
    floor: u64,
    capacity: usize,
}

impl ChangeHistory {
    /// An empty history that is complete after `floor`.
    pub fn new(floor: u64, capacity: usize) -> Self {
        Self {
            changes: VecDeque::new(),
            floor,
            capacity: capacity.max(1),
        }
    }

    /// Records changes applied in order.
    pub fn push(&mut self, change: Arc<Change>) {
        self.changes.push_back(change);
        while self.changes.len() > self.capacity {
            if let Some(oldest) = self.changes.pop_front() {
                // A resume after an index below the dropped one would miss it.
                self.floor = self.floor.max(oldest.index);
            }
        }
    }

    /// Forgets everything: the state was replaced by a snapshot at `floor`.
    pub fn reset(&mut self, floor: u64) {
        self.changes.clear();
        self.floor = floor;
    }

    /// Every kept change with an index greater than `after`.
    pub fn since(&self, after: u64) -> Result<Vec<Arc<Change>>, HistoryGone> {
        if after < self.floor {
            return Err(HistoryGone {
                requested: after,
                oldest: self.floor,
            });
        }
        let start = self.changes.partition_point(|change| change.index <= after);
        Ok(self.changes.iter().skip(start).cloned().collect())
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
        let mut history = ChangeHistory::new(0, 3);
        for index in 1..=5 {
            history.push(change(index));
        }
        assert_eq!(history.floor, 2);
        let indexes: Vec<u64> = history.since(2).expect("kept").iter().map(|c| c.index).collect();
        assert_eq!(indexes, vec![3, 4, 5]);
        assert!(history.since(1).is_err());
        assert!(history.since(5).expect("kept").is_empty());
    }

    #[test]
    fn reset_moves_the_floor_to_the_snapshot() {
        let mut history = ChangeHistory::new(0, 10);
        history.push(change(1));
        history.reset(40);
        assert!(history.since(39).is_err());
        assert!(history.since(40).expect("kept").is_empty());
    }
}
