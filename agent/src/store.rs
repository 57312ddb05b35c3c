//! The state files: the highest fence in one file and every desired set in a file of its own,
//! so a change to one set writes that set alone (with one file for everything, an agent holding
//! 10,000 sets rewrote all of them on every change). Each file is written whole and atomically
//! (temporary file, fsync, rename, fsync of the directory), so a crash leaves either its old or
//! its new contents. A newer fence is written before the set that came with it, so a crash in
//! between leaves the fence raised and the set unchanged — the caller got no answer and sends
//! the set again — never a set from a newer leader under an older fence.
//!
//! The agent's id and the cluster object it is bound to are in a file of their own
//! ([`load_identity`]), created with a new id when a data directory (a new one, or an earlier
//! agent's) has none.
//!
//! The files are read once at start-up, refusing a corrupt one rather than forgetting the
//! instances it names. The one file of earlier agents (format 1) is migrated: its sets are
//! written first and its fence last, and the old file is removed only then, so a crash during
//! the migration leaves the old file to migrate again.

use std::collections::BTreeSet;
use std::io::Write;
use std::path::{Path, PathBuf};

use drover_model::cluster::agent_api::{Fence, InstanceSpec, SetName};
use drover_model::cluster::identity::{check_cluster_uid, AgentId, AgentIdentity};
use serde::{Deserialize, Serialize};

use crate::error::AgentError;
use crate::layout::Layout;
use crate::memory::{Doc, Run};

/// The format of the fence file and the set files.
pub const FORMAT: u32 = 2;

/// The fence file's contents.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct FenceFile {
    format: u32,
    fence: Fence,
}

/// A set file's contents.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct SetFile {
    format: u32,
    set: SetName,
    instances: Vec<Stored>,
}

/// One instance in a set file.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Stored {
    spec: InstanceSpec,
    run: Run,
}

/// Creates the state directories, clears what an interrupted write left behind, migrates the
/// state file of an earlier agent, and reads the state (empty for a new data directory).
pub fn load(layout: &Layout) -> Result<Doc, AgentError> {
    for dir in [layout.state(), layout.sets(), layout.state_tmp()] {
        create_private_dir(&dir)?;
    }
    clear(&layout.state_tmp())?;
    let legacy = layout.legacy_state_file();
    let migrated = exists(&layout.fence_file())?;
    if !migrated {
        if let Some(doc) = load_legacy(&legacy)? {
            migrate(layout, &doc)?;
            return Ok(doc);
        }
    } else if exists(&legacy)? {
        // The migration finished but for the removal of the old file.
        remove(&legacy)?;
    }
    let fence = match read(&layout.fence_file())? {
        Some(bytes) => {
            let file: FenceFile = parse(&layout.fence_file(), &bytes)?;
            check_format(&layout.fence_file(), file.format)?;
            file.fence
        }
        None => Fence::default(),
    };
    let mut doc = Doc {
        format: Doc::FORMAT,
        fence,
        sets: Default::default(),
        runs: Default::default(),
    };
    let entries =
        std::fs::read_dir(layout.sets()).map_err(|e| AgentError::io("cannot read", layout.sets(), e))?;
    for entry in entries {
        let entry = entry.map_err(|e| AgentError::io("cannot read", layout.sets(), e))?;
        let path = entry.path();
        let name = entry.file_name();
        let set = name
            .to_str()
            .and_then(|name| SetName::parse(name).ok())
            .ok_or_else(|| corrupt(&path, "the file name is not a set name".into()))?;
        let bytes = read(&path)?.ok_or_else(|| corrupt(&path, "vanished while read".into()))?;
        let file: SetFile = parse(&path, &bytes)?;
        check_format(&path, file.format)?;
        if file.set != set {
            return Err(corrupt(&path, format!("holds set {}, not {set}", file.set)));
        }
        let specs = doc.sets.entry(set).or_default();
        for stored in file.instances {
            doc.runs.insert(stored.spec.id.clone(), stored.run);
            specs.push(stored.spec);
        }
    }
    check_unique(&doc, &layout.sets())?;
    Ok(doc)
}

/// Records `fence` as the highest accepted.
pub fn save_fence(layout: &Layout, fence: Fence) -> Result<(), AgentError> {
    let file = FenceFile {
        format: FORMAT,
        fence,
    };
    let bytes = serde_json::to_vec(&file).map_err(|e| AgentError::Internal(e.to_string()))?;
    // Writes are one at a time (the caller's writer lock, or start-up), so the temporary name
    // never meets a set's of the same name.
    write_atomically(
        &layout.fence_file(),
        &layout.state_tmp().join("fence.json"),
        &bytes,
    )
}

/// Records `set` as holding `instances`; an empty set's file is removed.
pub fn save_set(
    layout: &Layout,
    set: &SetName,
    instances: Vec<(InstanceSpec, Run)>,
) -> Result<(), AgentError> {
    let path = layout.set_file(set);
    if instances.is_empty() {
        return remove(&path);
    }
    let file = SetFile {
        format: FORMAT,
        set: set.clone(),
        instances: instances
            .into_iter()
            .map(|(spec, run)| Stored { spec, run })
            .collect(),
    };
    let bytes = serde_json::to_vec(&file).map_err(|e| AgentError::Internal(e.to_string()))?;
    write_atomically(&path, &layout.state_tmp().join(set.as_str()), &bytes)
}

/// The format of the identity file.
pub const IDENTITY_FORMAT: u32 = 1;

/// The identity file's contents.
#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct IdentityFile {
    format: u32,
    agent_id: AgentId,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    cluster_uid: Option<String>,
}

/// Reads the agent's identity; a data directory without one (new, or an earlier agent's) gets
/// a new id, written before it is reported. Runs after [`load`], which creates the directories.
pub fn load_identity(layout: &Layout) -> Result<AgentIdentity, AgentError> {
    let path = layout.identity_file();
    match read(&path)? {
        Some(bytes) => {
            let file: IdentityFile = parse(&path, &bytes)?;
            if file.format != IDENTITY_FORMAT {
                return Err(corrupt(
                    &path,
                    format!(
                        "format {} is not {IDENTITY_FORMAT}, the format this agent reads",
                        file.format
                    ),
                ));
            }
            if let Some(uid) = &file.cluster_uid {
                check_cluster_uid(uid).map_err(|e| corrupt(&path, format!("cluster_uid: {e}")))?;
            }
            Ok(AgentIdentity {
                agent_id: file.agent_id,
                cluster_uid: file.cluster_uid,
            })
        }
        None => {
            let identity = AgentIdentity {
                agent_id: crate::identity::generate()?,
                cluster_uid: None,
            };
            save_identity(layout, &identity)?;
            tracing::debug!(agent_id = %identity.agent_id, "generated the agent's id");
            Ok(identity)
        }
    }
}

/// Records the agent's identity (its id and the cluster object it is bound to).
pub fn save_identity(layout: &Layout, identity: &AgentIdentity) -> Result<(), AgentError> {
    let file = IdentityFile {
        format: IDENTITY_FORMAT,
        agent_id: identity.agent_id.clone(),
        cluster_uid: identity.cluster_uid.clone(),
    };
    let bytes = serde_json::to_vec(&file).map_err(|e| AgentError::Internal(e.to_string()))?;
    // '_' is in no set name, so the temporary name never meets a set's.
    write_atomically(
        &layout.identity_file(),
        &layout.state_tmp().join("_identity.json"),
        &bytes,
    )
}

/// Writes the sets of `doc`, then its fence, then removes the old file.
fn migrate(layout: &Layout, doc: &Doc) -> Result<(), AgentError> {
    // Set files left by a migration that crashed are written again.
    for (set, specs) in &doc.sets {
        let instances = specs
            .iter()
            .map(|spec| {
                let run = doc.runs.get(&spec.id).cloned().unwrap_or_default();
                (spec.clone(), run)
            })
            .collect();
        save_set(layout, set, instances)?;
    }
    save_fence(layout, doc.fence)?;
    remove(&layout.legacy_state_file())?;
    tracing::info!(sets = doc.sets.len(), "migrated the state file to a file per set");
    Ok(())
}

/// Reads the one state file of an earlier agent; `None` when there is none.
fn load_legacy(path: &Path) -> Result<Option<Doc>, AgentError> {
    let Some(bytes) = read(path)? else {
        return Ok(None);
    };
    let doc: Doc = parse(path, &bytes)?;
    if doc.format != Doc::FORMAT {
        return Err(corrupt(
            path,
            format!(
                "format {} is not {}, the format of the one-file state this agent migrates",
                doc.format,
                Doc::FORMAT
            ),
        ));
    }
    check_unique(&doc, path)?;
    Ok(Some(doc))
}

/// Refuses state that names one instance twice.
fn check_unique(doc: &Doc, path: &Path) -> Result<(), AgentError> {
    let mut seen = BTreeSet::new();
    for (set, specs) in &doc.sets {
        for spec in specs {
            if !seen.insert(&spec.id) {
                return Err(corrupt(
                    path,
                    format!("instance {} appears twice (set {set})", spec.id),
                ));
            }
        }
    }
    Ok(())
}

fn check_format(path: &Path, format: u32) -> Result<(), AgentError> {
    if format == FORMAT {
        Ok(())
    } else {
        Err(corrupt(
            path,
            format!("format {format} is not {FORMAT}, the format this agent reads"),
        ))
    }
}

fn corrupt(path: &Path, reason: String) -> AgentError {
    AgentError::Corrupt {
        path: path.to_path_buf(),
        reason,
    }
}

fn parse<T: serde::de::DeserializeOwned>(path: &Path, bytes: &[u8]) -> Result<T, AgentError> {
    serde_json::from_slice(bytes).map_err(|e| corrupt(path, e.to_string()))
}

fn read(path: &Path) -> Result<Option<Vec<u8>>, AgentError> {
    match std::fs::read(path) {
        Ok(bytes) => Ok(Some(bytes)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(AgentError::io("cannot read", path, e)),
    }
}

fn exists(path: &Path) -> Result<bool, AgentError> {
    path.try_exists()
        .map_err(|e| AgentError::io("cannot look for", path, e))
}

fn create_private_dir(dir: &Path) -> Result<(), AgentError> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(|e| AgentError::io("cannot create", dir, e))
}

/// Removes every file in `dir`.
fn clear(dir: &Path) -> Result<(), AgentError> {
    let entries = std::fs::read_dir(dir).map_err(|e| AgentError::io("cannot read", dir, e))?;
    for entry in entries {
        let path = entry.map_err(|e| AgentError::io("cannot read", dir, e))?.path();
        std::fs::remove_file(&path).map_err(|e| AgentError::io("cannot remove", &path, e))?;
    }
    Ok(())
}

/// Removes `path` if it exists and makes the removal durable.
fn remove(path: &Path) -> Result<(), AgentError> {
    match std::fs::remove_file(path) {
        Ok(()) => sync_dir(&parent(path)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(AgentError::io("cannot remove", path, e)),
    }
}

fn parent(path: &Path) -> PathBuf {
    path.parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("."))
}

fn sync_dir(dir: &Path) -> Result<(), AgentError> {
    std::fs::File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| AgentError::io("cannot sync the directory", dir, e))
}

/// Replaces `path` with `bytes` by way of `tmp` (on the same file system): a crash leaves the
/// old or the new contents, never a mix.
fn write_atomically(path: &Path, tmp: &Path, bytes: &[u8]) -> Result<(), AgentError> {
    use std::os::unix::fs::OpenOptionsExt;
    let mut file = std::fs::File::options()
        .create(true)
        .truncate(true)
        .write(true)
        .mode(0o600)
        .open(tmp)
        .map_err(|e| AgentError::io("cannot create", tmp, e))?;
    file.write_all(bytes)
        .and_then(|()| file.sync_all())
        .map_err(|e| AgentError::io("cannot write", tmp, e))?;
    drop(file);
    std::fs::rename(tmp, path).map_err(|e| AgentError::io("cannot rename into place", path, e))?;
    sync_dir(&parent(path))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::Memory;
    use drover_model::cluster::agent_api::InstanceState;

    fn web() -> SetName {
        SetName::parse("web").unwrap()
    }

    /// A memory with set `web` holding one running instance under fence 7/3.
    fn memory() -> Memory {
        let mut memory = Memory::default();
        let spec = crate::testutil::spec("web.main.r1.0", &["sleep", "100"]);
        memory.apply(&memory.plan(&web(), Fence::new(7, 3), vec![spec]));
        let run = memory.instances.values_mut().next().unwrap();
        run.run = Run {
            state: InstanceState::Running,
            restarts: 2,
            pid: Some(1234),
            start_ticks: Some(99),
            ..Run::default()
        };
        memory
    }

    fn save(layout: &Layout, memory: &Memory) {
        load(layout).unwrap();
        save_fence(layout, memory.fence).unwrap();
        for set in memory.sets.keys() {
            save_set(layout, set, memory.set_instances(set)).unwrap();
        }
    }

    #[test]
    fn the_state_files_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let layout = Layout::new(dir.path());
        assert_eq!(load(&layout).unwrap(), Memory::default().doc());
        let memory = memory();
        save(&layout, &memory);
        let loaded = load(&layout).unwrap();
        assert_eq!(loaded, memory.doc());
        let again = Memory::from_doc(loaded);
        assert_eq!(again.fence, Fence::new(7, 3));
        assert_eq!(again.instances.values().next().unwrap().run.pid, Some(1234));
        assert!(layout.set_file(&web()).try_exists().unwrap());
        assert_eq!(std::fs::read_dir(layout.state_tmp()).unwrap().count(), 0);

        // An emptied set's file is removed.
        save_set(&layout, &web(), Vec::new()).unwrap();
        assert!(!layout.set_file(&web()).try_exists().unwrap());
        assert!(load(&layout).unwrap().sets.is_empty());
    }

    #[test]
    fn the_one_file_of_an_earlier_agent_is_migrated_once() {
        let dir = tempfile::tempdir().unwrap();
        let layout = Layout::new(dir.path());
        let memory = memory();
        let legacy = serde_json::to_vec_pretty(&memory.doc()).unwrap();
        std::fs::write(layout.legacy_state_file(), &legacy).unwrap();
        assert_eq!(load(&layout).unwrap(), memory.doc());
        assert!(!layout.legacy_state_file().try_exists().unwrap());
        assert!(layout.fence_file().try_exists().unwrap());
        assert_eq!(load(&layout).unwrap(), memory.doc());

        // A migration that crashed before its fence file was written runs again, over the set
        // files it left; one that crashed before removing the old file only removes it.
        std::fs::remove_file(layout.fence_file()).unwrap();
        std::fs::write(layout.legacy_state_file(), &legacy).unwrap();
        assert_eq!(load(&layout).unwrap(), memory.doc());
        std::fs::write(layout.legacy_state_file(), b"not read again").unwrap();
        assert_eq!(load(&layout).unwrap(), memory.doc());
        assert!(!layout.legacy_state_file().try_exists().unwrap());
    }

    #[test]
    fn corrupt_state_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let layout = Layout::new(dir.path());
        std::fs::write(layout.legacy_state_file(), b"{\"format\": 1, \"fence\": ").unwrap();
        assert!(matches!(load(&layout), Err(AgentError::Corrupt { .. })));
        std::fs::write(layout.legacy_state_file(), b"{}").unwrap();
        assert!(matches!(load(&layout), Err(AgentError::Corrupt { .. })));
        std::fs::remove_file(layout.legacy_state_file()).unwrap();

        save(&layout, &memory());
        // A set file under another set's name.
        let other = SetName::parse("api").unwrap();
        std::fs::copy(layout.set_file(&web()), layout.set_file(&other)).unwrap();
        let e = load(&layout).unwrap_err();
        assert!(e.to_string().contains("holds set web, not api"), "{e}");
        // The same instance in two sets.
        let spec = crate::testutil::spec("web.main.r1.0", &["sleep", "100"]);
        save_set(&layout, &other, vec![(spec, Run::default())]).unwrap();
        let e = load(&layout).unwrap_err();
        assert!(e.to_string().contains("appears twice"), "{e}");
        std::fs::remove_file(layout.set_file(&other)).unwrap();
        // A torn fence file.
        std::fs::write(layout.fence_file(), b"{\"format\":2,").unwrap();
        assert!(matches!(load(&layout), Err(AgentError::Corrupt { .. })));
    }

    #[test]
    fn an_agent_keeps_its_id_and_an_earlier_agents_directory_gets_one() {
        let dir = tempfile::tempdir().unwrap();
        let layout = Layout::new(dir.path());
        // An earlier agent's data directory: state files, no identity.
        save(&layout, &memory());
        assert!(!layout.identity_file().try_exists().unwrap());
        let first = load_identity(&layout).unwrap();
        assert_eq!(first.cluster_uid, None);
        assert!(layout.identity_file().try_exists().unwrap());
        assert_eq!(load(&layout).unwrap(), memory().doc(), "the state is untouched");
        // The same id at every start; a binding is kept.
        assert_eq!(load_identity(&layout).unwrap(), first);
        let bound = AgentIdentity {
            cluster_uid: Some("c-1".into()),
            ..first.clone()
        };
        save_identity(&layout, &bound).unwrap();
        assert_eq!(load_identity(&layout).unwrap(), bound);
        assert_eq!(std::fs::read_dir(layout.state_tmp()).unwrap().count(), 0);
        // Another data directory, another id.
        let other = tempfile::tempdir().unwrap();
        let other = Layout::new(other.path());
        load(&other).unwrap();
        assert_ne!(load_identity(&other).unwrap().agent_id, first.agent_id);
        // A damaged file stops the agent rather than giving it another identity.
        std::fs::write(layout.identity_file(), b"{\"format\": 1,").unwrap();
        assert!(matches!(load_identity(&layout), Err(AgentError::Corrupt { .. })));
        std::fs::write(layout.identity_file(), b"{\"format\": 1, \"agent_id\": \"x\"}").unwrap();
        assert!(matches!(load_identity(&layout), Err(AgentError::Corrupt { .. })));
    }

    #[test]
    fn an_interrupted_write_is_cleared_at_start_up() {
        let dir = tempfile::tempdir().unwrap();
        let layout = Layout::new(dir.path());
        save(&layout, &memory());
        std::fs::write(layout.state_tmp().join("web"), b"{\"half").unwrap();
        assert_eq!(load(&layout).unwrap(), memory().doc());
        assert_eq!(std::fs::read_dir(layout.state_tmp()).unwrap().count(), 0);
    }
}
