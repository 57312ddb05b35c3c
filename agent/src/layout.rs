//! Where the agent keeps things under its data directory:
//!
//! ```text
//! <data-dir>/            mode 0700
//!   state/fence.json     the highest fence accepted
//!   state/identity.json  the agent's id and the cluster object it is bound to
//!   state/sets/<set>     one desired set: its instances' specs and run records
//!   state/tmp/           where a state file is written before it is renamed into place
//!   agent.json           the whole state in one file (format 1, earlier agents): migrated once
//!   agent.lock           held (flock) while an agent runs on this directory
//!   instances/<id>/work  an instance's working directory
//!   instances/<id>/output.log, output.log.1   its stdout and stderr
//! ```

use std::fs::File;
use std::path::{Path, PathBuf};

use drover_model::cluster::agent_api::{InstanceId, SetName};

use crate::error::AgentError;

/// The data directory's paths.
#[derive(Debug, Clone)]
pub struct Layout {
    root: PathBuf,
}

impl Layout {
    /// The name of an instance's working directory in its directory.
    pub const WORK: &'static str = "work";
    /// The name of an instance's current log in its directory.
    pub const LOG: &'static str = "output.log";

    /// The layout under `root`.
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self { root: root.into() }
    }

    /// The data directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The whole-state file of earlier agents (format 1), migrated at start-up.
    pub fn legacy_state_file(&self) -> PathBuf {
        self.root.join("agent.json")
    }

    /// The directory of the state files.
    pub fn state(&self) -> PathBuf {
        self.root.join("state")
    }

    /// The file of the highest fence accepted.
    pub fn fence_file(&self) -> PathBuf {
        self.state().join("fence.json")
    }

    /// The file of the agent's id and the cluster object it is bound to.
    pub fn identity_file(&self) -> PathBuf {
        self.state().join("identity.json")
    }

    /// The directory of the set files.
    pub fn sets(&self) -> PathBuf {
        self.state().join("sets")
    }

    /// The file of one desired set.
    pub fn set_file(&self, set: &SetName) -> PathBuf {
        // Set names never hold '/' and never are "." or "..", and are at most 253 bytes, so
        // the name alone is a file name (a suffix could pass the 255-byte limit).
        self.sets().join(set.as_str())
    }

    /// Where state files are written before they are renamed into place.
    pub fn state_tmp(&self) -> PathBuf {
        self.state().join("tmp")
    }

    /// The directory of every instance.
    pub fn instances(&self) -> PathBuf {
        self.root.join("instances")
    }

    /// The directory of one instance.
    pub fn instance(&self, id: &InstanceId) -> PathBuf {
        // Instance ids never hold '/' and never are "." or "..": see `InstanceId::parse`.
        self.instances().join(id.as_str())
    }

    /// An instance's working directory.
    pub fn work(&self, id: &InstanceId) -> PathBuf {
        self.instance(id).join(Self::WORK)
    }

    /// An instance's current log.
    pub fn log(&self, id: &InstanceId) -> PathBuf {
        self.instance(id).join(Self::LOG)
    }

    /// An instance's rotated log.
    pub fn rotated_log(&self, id: &InstanceId) -> PathBuf {
        self.instance(id).join("output.log.1")
    }

    /// Creates the data directory (mode 0700) and takes its lock, so that two agents never
    /// share one directory. The lock lasts as long as the returned file is open.
    pub fn open(&self) -> Result<File, AgentError> {
        use std::os::unix::fs::DirBuilderExt;
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&self.root)
            .map_err(|e| AgentError::io("cannot create the data directory", &self.root, e))?;
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(self.instances())
            .map_err(|e| AgentError::io("cannot create", self.instances(), e))?;
        let path = self.root.join("agent.lock");
        let lock = File::options()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(|e| AgentError::io("cannot open", &path, e))?;
        rustix::fs::flock(&lock, rustix::fs::FlockOperation::NonBlockingLockExclusive).map_err(|_| {
            AgentError::config(
                "--data-dir",
                format!("{} is in use by another drover agent", self.root.display()),
            )
        })?;
        Ok(lock)
    }
}
