//! The cgroup files of one cgroup, as cgroup v1 (one directory per controller: `memory`,
//! `cpu`, `cpuacct`, `pids`) and v2 (one directory in the unified hierarchy) lay them out:
//! finding which the machine offers, creating a cgroup, writing its limits, reading what it
//! used, and removing it.

use std::io::{self, ErrorKind};
use std::path::{Path, PathBuf};

use super::limits::Limits;
use super::read;

/// The CFS period Drover writes (100 ms, the kernel's default): quotas are fractions of it.
pub const PERIOD_US: u64 = 100_000;
/// The smallest quota the kernel accepts (1 ms of every period: 10 millicores).
pub const MIN_QUOTA_US: u64 = 1_000;

/// The v1 controllers Drover uses, each a hierarchy of its own.
const V1_CONTROLLERS: [&str; 4] = ["memory", "cpu", "cpuacct", "pids"];
/// The v2 controllers Drover needs enabled.
const V2_CONTROLLERS: [&str; 3] = ["memory", "cpu", "pids"];

/// Where the machine's cgroups are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Hierarchy {
    /// cgroup v1: `<root>/<controller>/…`.
    V1 {
        /// Where the controllers are mounted (`/sys/fs/cgroup`).
        root: PathBuf,
    },
    /// cgroup v2: `<root>/…`, one tree.
    V2 {
        /// The unified hierarchy's mount (`/sys/fs/cgroup`).
        root: PathBuf,
    },
}

impl Hierarchy {
    /// Which hierarchy `root` holds: v2 when it is the unified hierarchy offering memory, cpu
    /// and pids; v1 when it holds those controllers' v1 mounts; why neither otherwise.
    pub fn detect(root: &Path) -> Result<Hierarchy, String> {
        let controllers = root.join("cgroup.controllers");
        if let Ok(offered) = std::fs::read_to_string(&controllers) {
            let offered: Vec<&str> = offered.split_whitespace().collect();
            let missing: Vec<&str> = V2_CONTROLLERS
                .into_iter()
                .filter(|c| !offered.contains(c))
                .collect();
            if !missing.is_empty() {
                return Err(format!(
                    "the unified cgroup hierarchy at {} does not offer the {} controller(s)",
                    root.display(),
                    missing.join(", ")
                ));
            }
            return Ok(Hierarchy::V2 {
                root: root.to_path_buf(),
            });
        }
        let missing: Vec<&str> = V1_CONTROLLERS
            .into_iter()
            .filter(|c| std::fs::metadata(root.join(c).join("cgroup.procs")).is_err())
            .collect();
        if missing.is_empty() {
            return Ok(Hierarchy::V1 {
                root: root.to_path_buf(),
            });
        }
        Err(format!(
            "{} is neither a cgroup v2 mount nor holds the cgroup v1 {} controller(s)",
            root.display(),
            missing.join(", ")
        ))
    }

    /// `v1` or `v2`.
    pub fn version(&self) -> u8 {
        match self {
            Hierarchy::V1 { .. } => 1,
            Hierarchy::V2 { .. } => 2,
        }
    }

    /// The directories of cgroup `path` (relative): one per v1 controller, or the one v2 one.
    pub fn dirs(&self, path: &Path) -> Vec<PathBuf> {
        match self {
            Hierarchy::V1 { root } => V1_CONTROLLERS
                .into_iter()
                .map(|c| root.join(c).join(path))
                .collect(),
            Hierarchy::V2 { root } => vec![root.join(path)],
        }
    }

    /// The directory of `path` for `controller` (v2 has one for all).
    fn dir(&self, controller: &str, path: &Path) -> PathBuf {
        match self {
            Hierarchy::V1 { root } => root.join(controller).join(path),
            Hierarchy::V2 { root } => root.join(path),
        }
    }

    /// Creates cgroup `path` (and its parents); in v2 the parents hand the controllers down.
    pub fn create(&self, path: &Path) -> io::Result<()> {
        match self {
            Hierarchy::V1 { .. } => {
                for dir in self.dirs(path) {
                    std::fs::create_dir_all(dir)?;
                }
                Ok(())
            }
            Hierarchy::V2 { root } => {
                let mut dir = root.clone();
                for part in path.components() {
                    enable_v2_controllers(&dir)?;
                    dir.push(part);
                    match std::fs::create_dir(&dir) {
                        Err(e) if e.kind() != ErrorKind::AlreadyExists => return Err(e),
                        _ => {}
                    }
                }
                Ok(())
            }
        }
    }

    /// Writes `limits` into cgroup `path`.
    pub fn write_limits(&self, path: &Path, limits: &Limits) -> io::Result<()> {
        let quota = limits
            .cpu_millis
            .map(|millis| (millis.saturating_mul(PERIOD_US) / 1000).max(MIN_QUOTA_US));
        match self {
            Hierarchy::V1 { .. } => {
                let memory = self.dir("memory", path);
                let bytes = limits
                    .memory_bytes
                    .map_or_else(|| "-1".to_string(), |b| b.to_string());
                // Lowering the limit below memory+swap's fails the other way round.
                let first = write(&memory.join("memory.limit_in_bytes"), &bytes);
                let swap = memory.join("memory.memsw.limit_in_bytes");
                if swap.try_exists()? {
                    // No swap beyond the limit: an instance over it is killed, not swapped out.
                    write(&swap, &bytes)?;
                }
                if first.is_err() {
                    write(&memory.join("memory.limit_in_bytes"), &bytes)?;
                }
                let cpu = self.dir("cpu", path);
                write(&cpu.join("cpu.cfs_period_us"), &PERIOD_US.to_string())?;
                let quota = quota.map_or_else(|| "-1".to_string(), |q| q.to_string());
                write(&cpu.join("cpu.cfs_quota_us"), &quota)?;
                let pids = limits.pids.map_or_else(|| "max".to_string(), |n| n.to_string());
                write(&self.dir("pids", path).join("pids.max"), &pids)
            }
            Hierarchy::V2 { root } => {
                let dir = root.join(path);
                let bytes = limits
                    .memory_bytes
                    .map_or_else(|| "max".to_string(), |b| b.to_string());
                write(&dir.join("memory.max"), &bytes)?;
                let swap = dir.join("memory.swap.max");
                if swap.try_exists()? {
                    write(&swap, if limits.memory_bytes.is_some() { "0" } else { "max" })?;
                }
                let quota = quota.map_or_else(|| "max".to_string(), |q| q.to_string());
                write(&dir.join("cpu.max"), &format!("{quota} {PERIOD_US}"))?;
                let pids = limits.pids.map_or_else(|| "max".to_string(), |n| n.to_string());
                write(&dir.join("pids.max"), &pids)
            }
        }
    }

    /// The `cgroup.procs` files a process writes `0` into to enter cgroup `path`.
    pub fn procs_files(&self, path: &Path) -> Vec<PathBuf> {
        self.dirs(path)
            .into_iter()
            .map(|d| d.join("cgroup.procs"))
            .collect()
    }

    /// The processes in cgroup `path`.
    pub fn pids(&self, path: &Path) -> Vec<u32> {
        std::fs::read_to_string(self.dir("memory", path).join("cgroup.procs"))
            .map(|text| read::pids(&text))
            .unwrap_or_default()
    }

    /// CPU time used in cgroup `path`, in nanoseconds.
    pub fn cpu_nanos(&self, path: &Path) -> Option<u64> {
        match self {
            Hierarchy::V1 { .. } => {
                let text = std::fs::read_to_string(self.dir("cpuacct", path).join("cpuacct.usage")).ok()?;
                u64::try_from(read::number(&text)?).ok()
            }
            Hierarchy::V2 { root } => {
                let text = std::fs::read_to_string(root.join(path).join("cpu.stat")).ok()?;
                read::keyed(&text, "usage_usec").map(|us| us.saturating_mul(1000))
            }
        }
    }

    /// How many processes of cgroup `path` the kernel killed at its memory limit.
    pub fn oom_kills(&self, path: &Path) -> Option<u64> {
        let file = match self {
            Hierarchy::V1 { .. } => "memory.oom_control",
            Hierarchy::V2 { .. } => "memory.events",
        };
        let text = std::fs::read_to_string(self.dir("memory", path).join(file)).ok()?;
        read::oom_kills(&text)
    }

    /// The memory limit and CPU quota in force in cgroup `path`.
    pub fn limits_in_force(&self, path: &Path) -> (Option<u64>, Option<u64>) {
        let text = |controller: &str, file: &str| {
            std::fs::read_to_string(self.dir(controller, path).join(file)).unwrap_or_default()
        };
        match self {
            Hierarchy::V1 { .. } => {
                let memory = read::v1_memory_limit(&text("memory", "memory.limit_in_bytes"));
                let quota = read::number(&text("cpu", "cpu.cfs_quota_us"));
                let period = read::number(&text("cpu", "cpu.cfs_period_us"));
                let cpu = quota.zip(period).and_then(|(q, p)| read::quota_millis(q, p));
                (memory, cpu)
            }
            Hierarchy::V2 { .. } => (
                read::v2_memory_limit(&text("memory", "memory.max")),
                read::v2_cpu_quota(&text("cpu", "cpu.max")),
            ),
        }
    }

    /// Removes cgroup `path` (it must hold no process and no cgroup); a missing one is fine.
    pub fn remove(&self, path: &Path) -> io::Result<()> {
        for dir in self.dirs(path) {
            match std::fs::remove_dir(&dir) {
                Err(e) if e.kind() != ErrorKind::NotFound => return Err(e),
                _ => {}
            }
        }
        Ok(())
    }

    /// The names of the cgroups directly under `path`.
    pub fn children(&self, path: &Path) -> Vec<String> {
        let Ok(entries) = std::fs::read_dir(self.dir("memory", path)) else {
            return Vec::new();
        };
        entries
            .flatten()
            .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
            .filter_map(|e| e.file_name().into_string().ok())
            .collect()
    }
}

/// Lets `dir`'s children use the controllers Drover needs (v2).
fn enable_v2_controllers(dir: &Path) -> io::Result<()> {
    let file = dir.join("cgroup.subtree_control");
    let enabled = std::fs::read_to_string(&file)?;
    for controller in V2_CONTROLLERS {
        if !enabled.split_whitespace().any(|c| c == controller) {
            write(&file, &format!("+{controller}"))?;
        }
    }
    Ok(())
}

/// Writes `value` to a cgroup file, naming the file in the error.
fn write(file: &Path, value: &str) -> io::Result<()> {
    std::fs::write(file, value).map_err(|e| {
        io::Error::new(
            e.kind(),
            format!("cannot write {value:?} to {}: {e}", file.display()),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn touch(path: &Path) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, "").unwrap();
    }

    #[test]
    fn detection_tells_the_versions_apart_and_says_what_is_missing() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let err = Hierarchy::detect(root).unwrap_err();
        assert!(err.contains("memory, cpu, cpuacct, pids"), "{err}");
        for c in ["memory", "cpu", "cpuacct"] {
            touch(&root.join(c).join("cgroup.procs"));
        }
        let err = Hierarchy::detect(root).unwrap_err();
        assert!(err.ends_with("the cgroup v1 pids controller(s)"), "{err}");
        touch(&root.join("pids").join("cgroup.procs"));
        assert_eq!(Hierarchy::detect(root).unwrap().version(), 1);
        std::fs::write(root.join("cgroup.controllers"), "cpuset cpu io memory\n").unwrap();
        let err = Hierarchy::detect(root).unwrap_err();
        assert!(err.contains("does not offer the pids controller"), "{err}");
        std::fs::write(root.join("cgroup.controllers"), "cpuset cpu io memory pids\n").unwrap();
        assert_eq!(Hierarchy::detect(root).unwrap().version(), 2);
    }

    #[test]
    fn v2_limits_are_written_in_its_own_words() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().to_path_buf();
        std::fs::write(root.join("cgroup.subtree_control"), "memory cpu pids").unwrap();
        let hierarchy = Hierarchy::V2 { root: root.clone() };
        // A plain directory is not cgroupfs: give the child its subtree file by hand.
        std::fs::create_dir_all(root.join("drover")).unwrap();
        std::fs::write(root.join("drover/cgroup.subtree_control"), "memory cpu pids").unwrap();
        hierarchy.create(Path::new("drover/one")).unwrap();
        touch(&root.join("drover/one/memory.swap.max"));
        let limits = Limits {
            memory_bytes: Some(32 << 20),
            cpu_millis: Some(200),
            pids: Some(64),
        };
        hierarchy.write_limits(Path::new("drover/one"), &limits).unwrap();
        let read = |f: &str| std::fs::read_to_string(root.join("drover/one").join(f)).unwrap();
        assert_eq!(read("memory.max"), "33554432");
        assert_eq!(read("memory.swap.max"), "0");
        assert_eq!(read("cpu.max"), "20000 100000");
        assert_eq!(read("pids.max"), "64");
        assert_eq!(
            hierarchy.limits_in_force(Path::new("drover/one")),
            (Some(32 << 20), Some(200))
        );
        let tiny = Limits {
            memory_bytes: None,
            cpu_millis: Some(1),
            pids: None,
        };
        hierarchy.write_limits(Path::new("drover/one"), &tiny).unwrap();
        assert_eq!(read("memory.max"), "max");
        assert_eq!(read("cpu.max"), "1000 100000");
        assert_eq!(read("pids.max"), "max");
    }
}
