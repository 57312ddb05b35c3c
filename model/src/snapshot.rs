//! The file `drover snapshot save` writes and `drover snapshot restore` reads: one header line of
//! JSON (`format`, the state's `revision`, the length and SHA-256 of the rest), a newline, then
//! the replicated state as JSON. Reading checks the format, the length and the digest before it
//! decodes anything, so a truncated or altered file is refused with what is wrong.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use thiserror::Error;

use crate::state::State;

/// The format this build writes and reads.
pub const FORMAT: &str = "drover-snapshot/1";

/// What a snapshot file says about itself.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SnapshotInfo {
    /// [`FORMAT`].
    pub format: String,
    /// The revision of the state it holds.
    pub revision: u64,
    /// Bytes of the state after the header line.
    pub bytes: u64,
    /// SHA-256 of those bytes, lowercase hex.
    pub sha256: String,
}

/// Why a snapshot file cannot be used.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum SnapshotError {
    /// Not a Drover snapshot, or one of another format.
    #[error("not a {FORMAT} file: {0}")]
    Format(String),
    /// Shorter or longer than its header says.
    #[error("the file holds {actual} bytes of state where its header says {expected}: it is truncated or was altered")]
    Length {
        /// What the header says.
        expected: u64,
        /// What is there.
        actual: u64,
    },
    /// The digest does not match.
    #[error("checksum mismatch: the header says sha256 {expected}, the state hashes to {actual}: the file was altered")]
    Checksum {
        /// What the header says.
        expected: String,
        /// What the bytes hash to.
        actual: String,
    },
    /// The digest matches but the state does not decode (written by an incompatible build).
    #[error("the state does not decode: {0}")]
    State(String),
    /// The state leaves a counter without room to grow (a revision, the epoch, a service's or a
    /// set's revision) or its clock past the year 9999: no honest cluster gets there.
    #[error("{what} is {value}, above the {limit} a restored state may hold: every later write must get a larger one, so the file was crafted or altered")]
    NoRoom {
        /// Which counter.
        what: String,
        /// Its value in the file.
        value: u64,
        /// The most a restored state may hold.
        limit: u64,
    },
    /// The header names another revision than the state holds.
    #[error("the header says revision {header}, the state holds {state}: the file was altered")]
    Revision {
        /// What the header says.
        header: u64,
        /// What the state holds.
        state: u64,
    },
}

/// The largest revision a restored state may hold: 2^53, the largest integer a JavaScript client
/// reads exactly, and room for a billion writes a second for a century and more.
pub const MAX_RESTORED_REVISION: u64 = 1 << 53;
/// The most restores a restored state may have been through (its epoch, the agents' fence's
/// first part).
pub const MAX_RESTORED_EPOCH: u64 = 1 << 32;
/// The latest clock a restored state may hold: 9999-12-31T23:59:59.999Z.
pub const MAX_RESTORED_CLOCK_MS: u64 = 253_402_300_799_999;

/// Whether `state` leaves every counter room to grow: the revision, the epoch, the clock, each
/// service's revision numbers and each pinned set's revision.
pub fn check_room(state: &State) -> Result<(), SnapshotError> {
    let within = |what: String, value: u64, limit: u64| {
        if value > limit {
            Err(SnapshotError::NoRoom { what, value, limit })
        } else {
            Ok(())
        }
    };
    within("the revision".into(), state.revision(), MAX_RESTORED_REVISION)?;
    within("the epoch".into(), state.epoch(), MAX_RESTORED_EPOCH)?;
    within("the clock (ms)".into(), state.clock_ms(), MAX_RESTORED_CLOCK_MS)?;
    for (tenant, stored) in state.platform().tenants() {
        for (name, service) in &stored.services {
            let last = service.revisions.keys().next_back().copied().unwrap_or(0);
            within(
                format!("service {tenant}/{name}'s revision"),
                last,
                MAX_RESTORED_REVISION,
            )?;
        }
        for (name, cluster) in &stored.clusters {
            for (set, stored_set) in &cluster.sets {
                let what = format!("set {set} of cluster {tenant}/{name}'s revision");
                within(what, stored_set.revision, MAX_RESTORED_REVISION)?;
            }
        }
    }
    Ok(())
}

impl From<SnapshotError> for crate::error::DomainError {
    fn from(error: SnapshotError) -> Self {
        crate::error::DomainError::Invalid {
            field: "snapshot".into(),
            message: error.to_string(),
        }
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The file for `state`.
pub fn write(state: &State) -> Result<Vec<u8>, SnapshotError> {
    let body = serde_json::to_vec(state).map_err(|e| SnapshotError::State(e.to_string()))?;
    let info = SnapshotInfo {
        format: FORMAT.to_string(),
        revision: state.revision(),
        bytes: body.len() as u64,
        sha256: hex(&Sha256::digest(&body)),
    };
    let mut file = serde_json::to_vec(&info).map_err(|e| SnapshotError::State(e.to_string()))?;
    file.push(b'\n');
    file.extend_from_slice(&body);
    Ok(file)
}

/// Checks a file's header, length and digest; what it says about itself, and its state's bytes.
pub fn check(file: &[u8]) -> Result<(SnapshotInfo, &[u8]), SnapshotError> {
    let newline = file
        .iter()
        .position(|b| *b == b'\n')
        .ok_or_else(|| SnapshotError::Format("no header line".into()))?;
    let (header, rest) = file.split_at(newline);
    let info: SnapshotInfo = serde_json::from_slice(header)
        .map_err(|e| SnapshotError::Format(format!("the header is not valid: {e}")))?;
    if info.format != FORMAT {
        return Err(SnapshotError::Format(format!("its format is {:?}", info.format)));
    }
    let body = &rest[1..];
    if body.len() as u64 != info.bytes {
        return Err(SnapshotError::Length {
            expected: info.bytes,
            actual: body.len() as u64,
        });
    }
    let actual = hex(&Sha256::digest(body));
    if actual != info.sha256 {
        return Err(SnapshotError::Checksum {
            expected: info.sha256,
            actual,
        });
    }
    Ok((info, body))
}

/// The state a file holds, once [`check`]ed, and once it is known to leave every counter
/// room to grow ([`check_room`]).
pub fn read(file: &[u8]) -> Result<(SnapshotInfo, State), SnapshotError> {
    let (info, body) = check(file)?;
    let state: State = serde_json::from_slice(body).map_err(|e| SnapshotError::State(e.to_string()))?;
    if info.revision != state.revision() {
        return Err(SnapshotError::Revision {
            header: info.revision,
            state: state.revision(),
        });
    }
    check_room(&state)?;
    Ok((info, state))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::command::{Command, CommandResult, Proposal};
    use crate::object::{CoordinationLeaseSpec, LeaseSpec, ObjectKey, ObjectKind};

    fn state_with_a_lease() -> State {
        let mut state = State::default();
        let create = Command::Create {
            key: ObjectKey::new(ObjectKind::CoordinationLease, "ns", "a"),
            spec: LeaseSpec::Coordination(CoordinationLeaseSpec::default()),
            labels: Default::default(),
            annotations: Default::default(),
            uid: "u".into(),
            created_at: "2026-11-23T00:00:00Z".into(),
        };
        state.apply(1, &Proposal::new(create));
        state
    }

    #[test]
    fn every_restore_raises_the_epoch_past_both_states() {
        let saved = state_with_a_lease();
        assert_eq!(saved.epoch(), 0);
        let mut fresh = State::default();
        let restore = Proposal::new(Command::Restore {
            state: Box::new(saved.clone()),
        });
        fresh.apply(5, &restore);
        assert_eq!(fresh.epoch(), 1);
        // Restoring the once-restored state again, or an older file into it, goes higher still.
        let mut again = State::default();
        again.apply(
            3,
            &Proposal::new(Command::Restore {
                state: Box::new(fresh.clone()),
            }),
        );
        assert_eq!(again.epoch(), 2);
        again.apply(9, &restore);
        assert_eq!(again.epoch(), 3);
        // A crafted epoch at the top is refused on every replica instead of overflowing, and
        // nothing of it is applied.
        let mut top = saved.clone();
        top.set_epoch_for_tests(u64::MAX);
        let mut into = State::default();
        let (result, _) = into.apply(10, &Proposal::new(Command::Restore { state: Box::new(top) }));
        assert!(matches!(result, CommandResult::Refused(_)), "{result:?}");
        assert_eq!(into.epoch(), 0);
        assert!(!into.holds_anything());
    }

    #[test]
    fn a_state_without_room_to_grow_is_refused_by_the_file_and_by_the_apply() {
        let mut crafted = state_with_a_lease();
        crafted.set_revision_for_tests(u64::MAX - 1);
        let file = write(&crafted).unwrap();
        let refused = read(&file).unwrap_err();
        assert!(matches!(refused, SnapshotError::NoRoom { .. }), "{refused}");
        assert!(
            refused
                .to_string()
                .contains("the revision is 18446744073709551614"),
            "{refused}"
        );
        // Every replica refuses it too, should a proposal carry it past the API.
        let mut into = state_with_a_lease();
        let before = into.clone();
        let (result, _) = into.apply(
            7,
            &Proposal::new(Command::Restore {
                state: Box::new(crafted),
            }),
        );
        assert!(matches!(result, CommandResult::Refused(_)), "{result:?}");
        // Only the revision moved (the refused proposal's own), nothing of the file.
        assert_eq!(
            into.list(ObjectKind::CoordinationLease, None),
            before.list(ObjectKind::CoordinationLease, None)
        );
        // The largest revision a file may hold is accepted.
        let mut highest = state_with_a_lease();
        highest.set_revision_for_tests(MAX_RESTORED_REVISION);
        assert!(read(&write(&highest).unwrap()).is_ok());
        // A header that names another revision than the state's is an altered file.
        let mut altered = write(&state_with_a_lease()).unwrap();
        let text = String::from_utf8(altered.clone()).unwrap();
        altered = text.replacen("\"revision\":1", "\"revision\":2", 1).into_bytes();
        assert!(matches!(
            read(&altered),
            Err(SnapshotError::Revision { header: 2, state: 1 })
        ));
    }

    #[test]
    fn a_write_at_the_top_of_the_revisions_is_refused_not_given_the_same_revision() {
        let mut state = state_with_a_lease();
        state.set_revision_for_tests(u64::MAX - 1);
        let create = |name: &str| {
            Proposal::new(Command::Create {
                key: ObjectKey::new(ObjectKind::CoordinationLease, "ns", name),
                spec: LeaseSpec::Coordination(CoordinationLeaseSpec::default()),
                labels: Default::default(),
                annotations: Default::default(),
                uid: name.into(),
                created_at: "2026-11-23T00:00:00Z".into(),
            })
        };
        let (first, _) = state.apply(100, &create("b"));
        assert!(!matches!(first, CommandResult::Refused(_)), "{first:?}");
        assert_eq!(state.revision(), u64::MAX);
        for name in ["c", "d"] {
            let (result, changes) = state.apply(101, &create(name));
            assert!(matches!(result, CommandResult::Refused(_)), "{result:?}");
            assert!(changes.is_empty());
            assert!(state
                .get(&ObjectKey::new(ObjectKind::CoordinationLease, "ns", name))
                .is_none());
        }
        assert_eq!(state.revision(), u64::MAX);
    }

    #[test]
    fn a_written_file_reads_back_the_same_state() {
        let state = state_with_a_lease();
        let file = write(&state).unwrap();
        let (info, back) = read(&file).unwrap();
        assert_eq!(back, state);
        assert_eq!(info.revision, state.revision());
        assert_eq!(info.format, FORMAT);
    }

    #[test]
    fn altered_truncated_or_foreign_files_are_refused_with_why() {
        let file = write(&state_with_a_lease()).unwrap();
        let mut altered = file.clone();
        let last = altered.len() - 2;
        altered[last] ^= 0x01;
        assert!(matches!(check(&altered), Err(SnapshotError::Checksum { .. })));
        let truncated = &file[..file.len() - 5];
        assert!(matches!(check(truncated), Err(SnapshotError::Length { .. })));
        assert!(matches!(
            check(b"{\"hello\": 1}\n{}"),
            Err(SnapshotError::Format(_))
        ));
        assert!(matches!(check(b"no newline"), Err(SnapshotError::Format(_))));
    }
}
