//! Confinement of `exec` instances: each instance runs in a cgroup of its own,
//! `<parent>/<agent id>/<instance id>` (v1: under each of the `memory`, `cpu`, `cpuacct` and
//! `pids` controllers; v2: in the unified hierarchy), with a memory limit from its requested
//! memory (no swap beyond it), a CPU quota from its requested millicores and a pids limit. The
//! agent's own cgroup `<parent>/<agent id>` is limited to the agent's capacity, which leaves
//! the operator's reserve to the agent and the machine whatever the instances ask.
//!
//! A process enters its cgroup before it runs the instance's program: the agent starts its own
//! binary as a helper ([`super::enter`]), which writes `0` into the cgroup's `cgroup.procs`
//! files (moving itself) and then `exec`s the program, so the program and everything it forks
//! are confined from their first instruction (Drover forbids `unsafe`, which a `pre_exec` hook
//! would need).
//!
//! Where no cgroup can be written the agent refuses to start, unless the operator allows
//! unconfined instances (`--allow-unconfined`); the facts then say so, and why.

pub mod hierarchy;
pub mod limits;
pub mod read;

use std::path::{Path, PathBuf};

use drover_model::cluster::agent_api::{Confinement, InstanceId, Resources};

use hierarchy::Hierarchy;
pub use limits::Limits;

/// How the agent confines its instances.
#[derive(Debug)]
pub enum Confiner {
    /// In cgroups.
    Cgroups(Cgroups),
    /// Not at all, as the operator allowed; why cgroups could not be used.
    Unconfined(String),
}

/// The agent's cgroups.
#[derive(Debug)]
pub struct Cgroups {
    hierarchy: Hierarchy,
    /// The agent's cgroup, relative to the hierarchy: `<parent>/<agent id>`.
    agent: PathBuf,
}

/// Why the agent cannot confine its instances.
#[derive(Debug, thiserror::Error)]
#[error("cannot confine instances in cgroups: {0}")]
pub struct CannotConfine(pub String);

impl Confiner {
    /// The agent's cgroups under `root` (`/sys/fs/cgroup`): `<parent>/<agent_id>` created and
    /// limited to `capacity`; unconfined (with the reason) when that fails and `allow_unconfined`.
    pub fn open(
        root: &Path,
        parent: &str,
        agent_id: &str,
        capacity: Resources,
        allow_unconfined: bool,
    ) -> Result<Confiner, CannotConfine> {
        match Cgroups::open(root, parent, agent_id, capacity) {
            Ok(cgroups) => Ok(Confiner::Cgroups(cgroups)),
            Err(reason) if allow_unconfined => {
                tracing::warn!("instances run unconfined (--allow-unconfined): {reason}");
                Ok(Confiner::Unconfined(reason))
            }
            Err(reason) => Err(CannotConfine(reason)),
        }
    }

    /// What the facts say of it.
    pub fn describe(&self) -> Confinement {
        match self {
            Confiner::Cgroups(c) if c.hierarchy.version() == 1 => Confinement::CgroupV1,
            Confiner::Cgroups(_) => Confinement::CgroupV2,
            Confiner::Unconfined(reason) => Confinement::Unconfined {
                reason: reason.clone(),
            },
        }
    }

    /// The cgroups, when instances are confined.
    pub fn cgroups(&self) -> Option<&Cgroups> {
        match self {
            Confiner::Cgroups(c) => Some(c),
            Confiner::Unconfined(_) => None,
        }
    }
}

impl Cgroups {
    fn open(root: &Path, parent: &str, agent_id: &str, capacity: Resources) -> Result<Cgroups, String> {
        let hierarchy = Hierarchy::detect(root)?;
        let agent = Path::new(parent).join(agent_id);
        hierarchy
            .create(&agent)
            .map_err(|e| format!("cannot create the agent's cgroup {}: {e}", agent.display()))?;
        // Everything the instances may take together; pids are limited per instance.
        let all = Limits {
            pids: None,
            ..Limits::of(capacity, 0)
        };
        if let Err(e) = hierarchy.write_limits(&agent, &all) {
            // Instances already using more than a lowered capacity keep the old limit.
            tracing::warn!("cannot limit the agent's cgroup to its capacity: {e}");
        }
        Ok(Cgroups { hierarchy, agent })
    }

    /// The cgroup of instance `id`, relative to the hierarchy.
    fn path(&self, id: &InstanceId) -> PathBuf {
        self.agent.join(id.as_str())
    }

    /// Creates (or keeps) the cgroup of `id` with `limits`; the `cgroup.procs` files its
    /// process writes itself into.
    pub fn prepare(&self, id: &InstanceId, limits: &Limits) -> std::io::Result<Vec<PathBuf>> {
        let path = self.path(id);
        self.hierarchy.create(&path)?;
        self.hierarchy.write_limits(&path, limits)?;
        Ok(self.hierarchy.procs_files(&path))
    }

    /// The processes in `id`'s cgroup.
    pub fn pids(&self, id: &InstanceId) -> Vec<u32> {
        self.hierarchy.pids(&self.path(id))
    }

    /// Sends SIGKILL to every process in `id`'s cgroup (what a run left behind, even outside
    /// its process group).
    pub fn kill_all(&self, id: &InstanceId) {
        for pid in self.pids(id) {
            if let Some(pid) = i32::try_from(pid).ok().and_then(rustix::process::Pid::from_raw) {
                let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
            }
        }
    }

    /// CPU nanoseconds used in `id`'s cgroup.
    pub fn cpu_nanos(&self, id: &InstanceId) -> Option<u64> {
        self.hierarchy.cpu_nanos(&self.path(id))
    }

    /// Processes of `id`'s cgroup killed at its memory limit.
    pub fn oom_kills(&self, id: &InstanceId) -> Option<u64> {
        self.hierarchy.oom_kills(&self.path(id))
    }

    /// The memory limit (bytes) and CPU quota (millicores) in force for `id`.
    pub fn limits_in_force(&self, id: &InstanceId) -> (Option<u64>, Option<u64>) {
        self.hierarchy.limits_in_force(&self.path(id))
    }

    /// Removes `id`'s cgroup once nothing runs in it.
    pub fn remove(&self, id: &InstanceId) {
        if let Err(e) = self.hierarchy.remove(&self.path(id)) {
            tracing::warn!(instance = %id, "cannot remove the instance's cgroup: {e}");
        }
    }

    /// Removes the empty cgroups of instances that are not `kept` (left by an agent that was
    /// stopped before it removed them); a cgroup that still holds a process stays.
    pub fn prune(&self, kept: &dyn Fn(&str) -> bool) {
        for name in self.hierarchy.children(&self.agent) {
            if !kept(&name) {
                let _ = self.hierarchy.remove(&self.agent.join(&name));
            }
        }
    }
}
