//! What was removed of Krake's objects, for watches that resume: a watch started from a
//! version (a time in µs a list returned) is told every object changed after it and every
//! object removed after it, with its last state. Kept by the platform (where the platform API's
//! deletions of metrics, providers and clusters record theirs too), oldest first, bounded.

use std::collections::VecDeque;

use serde::{Deserialize, Serialize};

use super::command::KrakeBody;
use super::kind::KrakeKey;
use super::meta::KrakeMeta;

/// Removals kept.
pub const REMOVALS_KEPT: usize = 4096;

/// One removal: when (committed clock, µs), which object, and how it last was.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Removal {
    /// When.
    pub at_us: u64,
    /// Which.
    pub key: KrakeKey,
    /// Its metadata when it went.
    pub meta: KrakeMeta,
    /// Its content when it went (a cluster's join token left out).
    pub body: KrakeBody,
}

/// The removals kept, and up to when they were forgotten.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct KrakeRemovals {
    /// Oldest first.
    #[serde(default)]
    pub kept: VecDeque<Removal>,
    /// The newest time of a removal no longer kept (0: none forgotten).
    #[serde(default)]
    pub forgotten_up_to_us: u64,
}

impl KrakeRemovals {
    /// Records a removal at `now_ms`.
    pub fn record(&mut self, now_ms: u64, key: KrakeKey, meta: KrakeMeta, mut body: KrakeBody) {
        if let KrakeBody::Cluster(cluster) = &mut body {
            cluster.join_token = None;
        }
        self.kept.push_back(Removal {
            at_us: now_ms.saturating_mul(1000),
            key,
            meta,
            body,
        });
        while self.kept.len() > REMOVALS_KEPT {
            if let Some(gone) = self.kept.pop_front() {
                self.forgotten_up_to_us = self.forgotten_up_to_us.max(gone.at_us);
            }
        }
    }

    /// The removals after `after_us`, oldest first; `Err` with the oldest version still known
    /// when some of them are forgotten.
    pub fn since(&self, after_us: u64) -> Result<impl Iterator<Item = &Removal>, u64> {
        if after_us < self.forgotten_up_to_us {
            return Err(self.forgotten_up_to_us);
        }
        Ok(self.kept.iter().filter(move |r| r.at_us > after_us))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::krake::kind::KrakeKind;
    use crate::krake::meta::MetaInput;
    use crate::krake::rbac::KrakeRole;

    #[test]
    fn removals_are_kept_bounded_and_a_forgotten_version_is_refused() {
        let mut removals = KrakeRemovals::default();
        let body = KrakeBody::Role(KrakeRole { rules: vec![] });
        for i in 0..(REMOVALS_KEPT as u64 + 10) {
            let key = KrakeKey::new(KrakeKind::Role, None, &format!("r{i}"));
            let meta = KrakeMeta::made("r", i, MetaInput::default());
            removals.record(i + 1, key, meta, body.clone());
        }
        assert_eq!(removals.kept.len(), REMOVALS_KEPT);
        assert_eq!(removals.forgotten_up_to_us, 10_000);
        assert_eq!(removals.since(9_999).err(), Some(10_000));
        let after: Vec<u64> = removals
            .since(4_100_000)
            .expect("kept")
            .map(|r| r.at_us)
            .collect();
        assert_eq!(
            after,
            vec![4_101_000, 4_102_000, 4_103_000, 4_104_000, 4_105_000, 4_106_000]
        );
    }
}
