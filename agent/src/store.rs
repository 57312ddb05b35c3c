//! The state file: written whole and atomically (temporary file, fsync, rename, fsync of the
//! directory), so a crash leaves either the old or the new contents; read once at start-up,
//! refusing a corrupt file rather than forgetting the instances it names.

use std::collections::BTreeSet;
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::error::AgentError;
use crate::memory::Doc;

/// Reads the state file at `path`; `None` when there is none yet.
pub fn load(path: &Path) -> Result<Option<Doc>, AgentError> {
    let bytes = match std::fs::read(path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(AgentError::io("cannot read", path, e)),
    };
    let corrupt = |reason: String| AgentError::Corrupt {
        path: path.to_path_buf(),
        reason,
    };
    let doc: Doc = serde_json::from_slice(&bytes).map_err(|e| corrupt(e.to_string()))?;
    if doc.format != Doc::FORMAT {
        return Err(corrupt(format!(
            "format {} is not {}, the format this agent reads",
            doc.format,
            Doc::FORMAT
        )));
    }
    let mut seen = BTreeSet::new();
    for (set, specs) in &doc.sets {
        for spec in specs {
            if !seen.insert(&spec.id) {
                return Err(corrupt(format!("instance {} appears twice (set {set})", spec.id)));
            }
        }
    }
    Ok(Some(doc))
}

/// Writes `doc` to `path` atomically.
pub fn save(path: &Path, doc: &Doc) -> Result<(), AgentError> {
    let bytes = serde_json::to_vec_pretty(doc).map_err(|e| AgentError::Internal(e.to_string()))?;
    write_atomically(path, &bytes)
}

/// Replaces `path` with `bytes`: a crash leaves the old or the new contents, never a mix.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), AgentError> {
    use std::os::unix::fs::OpenOptionsExt;
    let dir = path
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("."));
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(".tmp");
    let tmp = dir.join(name);
    let mut file = std::fs::File::options()
        .create(true)
        .truncate(true)
        .write(true)
        .mode(0o600)
        .open(&tmp)
        .map_err(|e| AgentError::io("cannot create", &tmp, e))?;
    file.write_all(bytes)
        .and_then(|()| file.sync_all())
        .map_err(|e| AgentError::io("cannot write", &tmp, e))?;
    drop(file);
    std::fs::rename(&tmp, path).map_err(|e| AgentError::io("cannot rename into place", path, e))?;
    std::fs::File::open(&dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| AgentError::io("cannot sync the directory", &dir, e))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::{Memory, Run};
    use drover_model::cluster::agent_api::{Fence, InstanceState, SetName};

    #[test]
    fn the_state_file_round_trips() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("agent.json");
        assert_eq!(load(&path).unwrap(), None);
        let mut memory = Memory::default();
        let set = SetName::parse("web").unwrap();
        let spec = crate::testutil::spec("web.main.r1.0", &["sleep", "100"]);
        memory.apply(&memory.plan(&set, Fence::new(7, 3), vec![spec.clone()]));
        let run = memory.instances.values_mut().next().unwrap();
        run.run = Run {
            state: InstanceState::Running,
            restarts: 2,
            pid: Some(1234),
            start_ticks: Some(99),
            ..Run::default()
        };
        save(&path, &memory.doc()).unwrap();
        let loaded = load(&path).unwrap().unwrap();
        assert_eq!(loaded, memory.doc());
        let again = Memory::from_doc(loaded);
        assert_eq!(again.fence, Fence::new(7, 3));
        assert_eq!(again.instances[&spec.id].run.pid, Some(1234));
        assert!(!dir.path().join("agent.json.tmp").try_exists().unwrap());
    }

    #[test]
    fn a_corrupt_state_file_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("agent.json");
        std::fs::write(&path, b"{\"format\": 1, \"fence\": ").unwrap();
        let e = load(&path).unwrap_err();
        assert!(matches!(e, AgentError::Corrupt { .. }), "{e}");
        std::fs::write(&path, b"{}").unwrap();
        assert!(matches!(load(&path), Err(AgentError::Corrupt { .. })));
    }
}
