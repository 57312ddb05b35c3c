//! One run of an instance as an OS process: spawned in its own process group with exactly the
//! spec's environment (plus `PATH`, `HOME` and `DROVER_INSTANCE_ID`, nothing else), working in
//! its own directory, writing into its log; or adopted from an agent that ran before. Stopping sends
//! SIGTERM to the group, then SIGKILL after the grace period.

use std::os::fd::AsFd;
use std::os::unix::process::ExitStatusExt;
use std::process::Stdio;
use std::time::Duration;

use drover_model::cluster::agent_api::InstanceSpec;
use rustix::process::{Pid, Signal};

use super::{enter, files, procfs};
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

/// Starts a run of `spec`, inside the cgroup whose `cgroup.procs` files are `cgroup` when it is
/// confined ([`enter`]); the process and its start time. Its directory is made ready first,
/// whatever the last run left in it ([`files`]).
pub fn spawn(
    layout: &Layout,
    spec: &InstanceSpec,
    cgroup: Option<&[std::path::PathBuf]>,
) -> std::io::Result<(Proc, u64)> {
    let instance = files::dir_chain(&layout.instances(), &[spec.id.as_str()])?;
    let work_dir = files::real_dir_at(instance.as_fd(), Layout::WORK, 0o700)?;
    files::write_files(work_dir.as_fd(), &spec.exec.files)?;
    let log = files::append_at(instance.as_fd(), Layout::LOG, 0o600)?;
    let work = layout.work(&spec.id);
    let program = spec
        .exec
        .argv
        .first()
        .ok_or_else(|| std::io::Error::new(std::io::ErrorKind::InvalidInput, "empty argv"))?;
    let path = std::env::var_os("PATH").unwrap_or_else(|| DEFAULT_PATH.into());
    let home = std::env::var_os("HOME").unwrap_or_else(|| work.clone().into_os_string());
    // A program that cannot be run fails here, as the agent's own spawn would, and not as a
    // run of the helper that ends with 127.
    findable(program, &path, &work)?;
    let mut command = match cgroup {
        None => {
            let mut command = tokio::process::Command::new(program);
            command.args(&spec.exec.argv[1..]);
            command
        }
        Some(files) => {
            let mut command = tokio::process::Command::new(enter::SELF_EXE);
            command
                .arg0("drover")
                .args(enter::arguments(files, &spec.exec.argv));
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
