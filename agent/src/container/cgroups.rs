//! The pod cgroups the runtime leaves behind: containerd's cgroupfs driver makes each
//! container's cgroup under the pod's (`<parent>/<instance id>`) in every hierarchy and removes
//! only the container's own, so the agent removes the pod's once its sandbox is gone, as the
//! kubelet does. Only empty directories are removed (`rmdir`), never a tree.

use std::path::{Path, PathBuf};

/// Where the cgroup hierarchies are mounted.
const CGROUP_ROOT: &str = "/sys/fs/cgroup";

/// Removes the (empty) cgroup `path` (`/drover/<agent>/<instance>`) from every hierarchy.
pub fn remove(path: &str) {
    for dir in directories(Path::new(CGROUP_ROOT), path) {
        match std::fs::remove_dir(&dir) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => tracing::warn!("cannot remove the pod's cgroup {}: {e}", dir.display()),
        }
    }
}

/// `path` under the unified hierarchy at `root` and under each v1 hierarchy mounted below it.
fn directories(root: &Path, path: &str) -> Vec<PathBuf> {
    let relative = path.trim_start_matches('/');
    if relative.is_empty() || relative.split('/').any(|c| c.is_empty() || c == "." || c == "..") {
        return Vec::new();
    }
    let mut dirs = vec![root.join(relative)];
    if let Ok(entries) = std::fs::read_dir(root) {
        for entry in entries.flatten() {
            let is_dir = entry.file_type().is_ok_and(|t| t.is_dir());
            if is_dir {
                dirs.push(entry.path().join(relative));
            }
        }
    }
    dirs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_plain_paths_under_each_hierarchy_are_named() {
        let root = tempfile::tempdir().unwrap();
        std::fs::create_dir(root.path().join("memory")).unwrap();
        std::fs::create_dir(root.path().join("cpu")).unwrap();
        let mut dirs = directories(root.path(), "/drover/a/pod");
        dirs.sort();
        assert_eq!(
            dirs,
            [
                root.path().join("cpu/drover/a/pod"),
                root.path().join("drover/a/pod"),
                root.path().join("memory/drover/a/pod"),
            ]
        );
        assert!(directories(root.path(), "/drover/../etc").is_empty());
        assert!(directories(root.path(), "/").is_empty());
    }
}
