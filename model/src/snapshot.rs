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

/// The state a file holds, once [`check`]ed.
pub fn read(file: &[u8]) -> Result<(SnapshotInfo, State), SnapshotError> {
    let (info, body) = check(file)?;
    let state: State = serde_json::from_slice(body).map_err(|e| SnapshotError::State(e.to_string()))?;
    Ok((info, state))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::command::{Command, Proposal};
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
        // A crafted epoch at the top stays there instead of overflowing on every replica.
        let mut top = saved.clone();
        top.set_epoch_for_tests(u64::MAX);
        let mut into = State::default();
        into.apply(10, &Proposal::new(Command::Restore { state: Box::new(top) }));
        assert_eq!(into.epoch(), u64::MAX);
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
