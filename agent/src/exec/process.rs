//! One run of an instance as an OS process: spawned in its own process group with exactly the
//! spec's environment (plus `PATH`, `HOME` and `DROVER_INSTANCE_ID`), working in its own
//! directory, writing into its log; or adopted from an agent that ran before. Stopping sends
//! SIGTERM to the group, then SIGKILL after the grace period.

use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::os::unix::process::ExitStatusExt;
use std::process::Stdio;
use std::time::Duration;

use drover_model::cluster::agent_api::InstanceSpec;
use rustix::process::{Pid, Signal};

use super::procfs;
use crate::layout::Layout;
use crate::validate::INSTANCE_ID_ENV;

/// `PATH` for instances when the agent has none.
const DEFAULT_PATH: &str = "/usr/local/bin:/usr/bin:/bin";

/// How often an adopted process (not the agent's child, so it cannot be waited for) is checked.
const ADOPTED_POLL: Duration = Duration::from_millis(500);

/// How long to wait for a process to vanish after SIGKILL.
const KILL_WAIT: Duration = Duration::from_secs(10);

/// A running instance process.
#[derive(Debug)]
pub enum Proc {
    /// Spawned by this agent: waited for (and so reaped) through tokio.
    Child {
        /// The child.
        child: tokio::process::Child,
        /// Its pid (also its process group).
        pid: u32,
    },
    /// Left running by an earlier agent: watched through `/proc`.
    Adopted {
        /// Its pid (also its process group).
        pid: u32,
        /// Its start time, to tell it from a later process with the same pid.
        start_ticks: u64,
    },
}

/// Sends `signal` to the process group `pgid`; an empty group is no error.
pub fn signal_group(pgid: u32, signal: Signal) {
    let Some(group) = i32::try_from(pgid).ok().and_then(Pid::from_raw) else {
        return;
    };
    // ESRCH (the group is empty) is the usual answer after the leader exited.
    let _ = rustix::process::kill_process_group(group, signal);
}

impl Proc {
    /// Its pid.
    pub fn pid(&self) -> u32 {
        match self {
            Proc::Child { pid, .. } | Proc::Adopted { pid, .. } => *pid,
        }
    }

    /// Waits until it ends; its exit code (128 + signal when killed by one), or `None` when
    /// unknown (an adopted process).
    pub async fn wait(&mut self) -> Option<i32> {
        match self {
            Proc::Child { child, .. } => match child.wait().await {
                Ok(status) => status.code().or_else(|| status.signal().map(|s| 128 + s)),
                Err(e) => {
                    tracing::warn!("cannot wait for an instance process: {e}");
                    None
                }
            },
            Proc::Adopted { pid, start_ticks } => {
                while procfs::alive(*pid, *start_ticks) {
                    tokio::time::sleep(ADOPTED_POLL).await;
                }
                None
            }
        }
    }

    /// Stops it: SIGTERM to its group, SIGKILL after `grace`, and SIGKILL to whatever is left
    /// of the group once the leader is gone.
    pub async fn terminate(&mut self, grace: Duration) {
        let pid = self.pid();
        signal_group(pid, Signal::TERM);
        if tokio::time::timeout(grace, self.wait()).await.is_err() {
            tracing::info!(
                pid,
                "instance ignored SIGTERM for {grace:?}; killing its process group"
            );
            signal_group(pid, Signal::KILL);
            if tokio::time::timeout(KILL_WAIT, self.wait()).await.is_err() {
                tracing::warn!(pid, "instance process still there {KILL_WAIT:?} after SIGKILL");
            }
        }
        signal_group(pid, Signal::KILL);
    }
}

/// Moves the shell into the cgroups named by its arguments (`count`, then that many
/// `cgroup.procs` files), then replaces it with the instance's program (the rest).
const ENTER_CGROUP: &str = r#"n=$1; shift; while [ "$n" -gt 0 ]; do echo 0 > "$1" || exit 126; shift; n=$((n - 1)); done; exec "$@""#;

/// The shell that carries an instance into its cgroup.
const SHELL: &str = "/bin/sh";

/// Starts a run of `spec`, inside the cgroup whose `cgroup.procs` files are `cgroup` when it is
/// confined; the process and its start time.
pub fn spawn(
    layout: &Layout,
    spec: &InstanceSpec,
    cgroup: Option<&[std::path::PathBuf]>,
) -> std::io::Result<(Proc, u64)> {
    let work = layout.work(&spec.id);
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(&work)?;
    write_files(&work, &spec.exec.files)?;
    let log = std::fs::File::options()
        .create(true)
        .append(true)
        .mode(0o600)
        .open(layout.log(&spec.id))?;
    let (program, args) = spec
        .exec
        .argv
        .split_first()
        .ok_or_else(|| std::io::Error::new(std::io::ErrorKind::InvalidInput, "empty argv"))?;
    let path = std::env::var_os("PATH").unwrap_or_else(|| DEFAULT_PATH.into());
    let home = std::env::var_os("HOME").unwrap_or_else(|| work.clone().into_os_string());
    // A program that cannot be run fails here, as the agent's own spawn would, and not as a
    // run of the shell that ends with 127.
    findable(program, &path, &work)?;
    let mut command = match cgroup {
        None => {
            let mut command = tokio::process::Command::new(program);
            command.args(args);
            command
        }
        Some(files) => {
            let mut command = tokio::process::Command::new(SHELL);
            command
                .args(["-c", ENTER_CGROUP, "drover-enter-cgroup"])
                .arg(files.len().to_string())
                .args(files)
                .arg(program)
                .args(args);
            command
        }
    };
    command
        .env_clear()
        .env("PATH", path)
        .env("HOME", home)
        .envs(&spec.env)
        .env(INSTANCE_ID_ENV, spec.id.as_str())
        .current_dir(&work)
        .stdin(Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log)
        .process_group(0)
        .kill_on_drop(false);
    let child = command.spawn()?;
    let pid = child
        .id()
        .ok_or_else(|| std::io::Error::other("the child has no pid"))?;
    let start_ticks = procfs::stat(pid).map(|s| s.start_ticks).unwrap_or(0);
    Ok((Proc::Child { child, pid }, start_ticks))
}

/// Writes an instance's files into its working directory `work` (their paths were checked
/// when the set was accepted: plain and relative). A file is written afresh at every start, so
/// a run always begins with what the spec says; a symbolic link left in the way (a run can make
/// one) is replaced, never followed.
fn write_files(
    work: &std::path::Path,
    files: &std::collections::BTreeMap<String, String>,
) -> std::io::Result<()> {
    for (path, content) in files {
        let target = work.join(path);
        let mut dir = work.to_path_buf();
        let parts: Vec<&str> = path.split('/').collect();
        for part in &parts[..parts.len().saturating_sub(1)] {
            dir.push(part);
            match std::fs::symlink_metadata(&dir) {
                Ok(meta) if meta.is_dir() => {}
                Ok(_) => {
                    std::fs::remove_file(&dir)?;
                    std::fs::DirBuilder::new().mode(0o700).create(&dir)?;
                }
                Err(_) => std::fs::DirBuilder::new().mode(0o700).create(&dir)?,
            }
        }
        if std::fs::symlink_metadata(&target).is_ok_and(|meta| !meta.is_dir()) {
            std::fs::remove_file(&target)?;
        }
        let mut file = std::fs::File::options()
            .write(true)
            .create_new(true)
            .mode(0o700)
            .open(&target)?;
        std::io::Write::write_all(&mut file, content.as_bytes())?;
    }
    Ok(())
}

/// Whether `program` is an executable file (looked up in `path` when it has no `/`, relative
/// to `work` when it is a relative path).
fn findable(program: &str, path: &std::ffi::OsStr, work: &std::path::Path) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let executable = |candidate: &std::path::Path| {
        std::fs::metadata(candidate).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    let found = if program.contains('/') {
        // A relative path is the instance's: it runs in its working directory.
        executable(&work.join(program))
    } else {
        std::env::split_paths(path).any(|dir| executable(&dir.join(program)))
    };
    if found {
        Ok(())
    } else {
        Err(std::io::Error::from(rustix::io::Errno::NOENT))
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    #[test]
    fn files_are_written_afresh_and_links_a_run_left_are_replaced_not_followed() {
        let work = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let files = BTreeMap::from([
            ("main.sh".to_string(), "echo one".to_string()),
            ("lib/util.sh".to_string(), "true".to_string()),
        ]);
        write_files(work.path(), &files).unwrap();
        assert_eq!(
            std::fs::read_to_string(work.path().join("main.sh")).unwrap(),
            "echo one"
        );
        // A run edits a file, and swaps a directory and a file for links out of its directory.
        std::fs::write(work.path().join("main.sh"), "tampered").unwrap();
        std::fs::remove_dir_all(work.path().join("lib")).unwrap();
        std::os::unix::fs::symlink(outside.path(), work.path().join("lib")).unwrap();
        let victim = outside.path().join("victim");
        std::fs::write(&victim, "mine").unwrap();
        std::fs::remove_file(work.path().join("main.sh")).unwrap();
        std::os::unix::fs::symlink(&victim, work.path().join("main.sh")).unwrap();
        write_files(work.path(), &files).unwrap();
        assert_eq!(
            std::fs::read_to_string(work.path().join("main.sh")).unwrap(),
            "echo one"
        );
        assert_eq!(
            std::fs::read_to_string(work.path().join("lib/util.sh")).unwrap(),
            "true"
        );
        assert_eq!(
            std::fs::read_to_string(&victim).unwrap(),
            "mine",
            "a link was followed"
        );
        assert!(std::fs::read_dir(outside.path()).unwrap().count() == 1);
    }
}
