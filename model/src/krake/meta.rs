//! Krake's object metadata (`krake.md` §2.2): what the server sets (uid, created, modified,
//! deleted) and what a writer sets (labels, finalizers, owners). Times are the committed clock
//! of the write that set them, so every replica holds the same, in microseconds as Krake writes
//! them; `modified` moves forward by at least one microsecond at every write, so it identifies
//! the version a client read.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// The finalizer a `DELETE` appends; removed once no object names this one as its owner.
pub const CASCADE_DELETION: &str = "cascade_deletion";

/// A reference to another Krake object (Krake's `ResourceRef`), as `metadata.owners` holds.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ResourceRef {
    /// The API group.
    pub api: String,
    /// The namespace (null for global kinds).
    #[serde(default)]
    pub namespace: Option<String>,
    /// The kind.
    pub kind: String,
    /// The name.
    pub name: String,
}

/// What a writer sets of an object's metadata.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MetaInput {
    /// Labels (Krake's rules: [`super::validate::labels`]).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
    /// Finalizers, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub finalizers: Vec<String>,
    /// Objects this one depends on: deleting one of them deletes this one first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub owners: Vec<ResourceRef>,
}

/// An object's Krake metadata.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KrakeMeta {
    /// Set once, when the object is made.
    pub uid: String,
    /// When it was made (committed clock, µs).
    pub created_us: u64,
    /// When its spec or metadata last changed (µs), different at every write from either
    /// dialect: a writer that read it may ask that nothing changed since (Drover's conflict
    /// where Krake's last writer wins).
    pub modified_us: u64,
    /// When a `DELETE` marked it (µs); it is gone once its finalizers are.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deleted_us: Option<u64>,
    /// What the writers set.
    #[serde(flatten)]
    pub input: MetaInput,
}

impl KrakeMeta {
    /// The metadata of an object made now, with a uid derived from what identifies the write.
    pub fn made(identity: &str, now_ms: u64, input: MetaInput) -> Self {
        let now_us = now_ms.saturating_mul(1000);
        Self {
            uid: derive_uid(identity, now_ms),
            created_us: now_us,
            modified_us: now_us,
            deleted_us: None,
            input,
        }
    }

    /// Records a write of the object's spec or metadata.
    pub fn touched(&mut self, now_ms: u64) {
        self.modified_us = now_ms.saturating_mul(1000).max(self.modified_us + 1);
    }

    /// Marks it deleted now (its modification time stays, as Krake's `DELETE` leaves it).
    pub fn mark_deleted(&mut self, now_ms: u64) {
        self.deleted_us = Some(now_ms.saturating_mul(1000).max(self.created_us));
    }

    /// Whether a `DELETE` marked it.
    pub fn in_deletion(&self) -> bool {
        self.deleted_us.is_some()
    }
}

/// A uid in the shape of a UUID (version 4 bits), the same on every replica: a digest of the
/// object's identity and the instant it was made.
pub fn derive_uid(identity: &str, now_ms: u64) -> String {
    let mut digest = Sha256::new();
    digest.update(b"drover-krake-uid\0");
    digest.update(identity.as_bytes());
    digest.update(now_ms.to_be_bytes());
    let bytes = digest.finalize();
    let mut first = [0u8; 16];
    first.copy_from_slice(&bytes[..16]);
    uuid::Builder::from_random_bytes(first).into_uuid().to_string()
}

/// The metadata kept for an object written through a dialect that has none of its own (the
/// platform API's metrics and providers): made on the first write, touched on the next ones.
pub fn keep(metas: &mut BTreeMap<String, KrakeMeta>, identity: &str, name: &str, now_ms: u64) {
    match metas.get_mut(name) {
        Some(meta) => meta.touched(now_ms),
        None => {
            metas.insert(
                name.to_string(),
                KrakeMeta::made(identity, now_ms, MetaInput::default()),
            );
        }
    }
}
