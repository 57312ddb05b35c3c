//! Running the cleanup command for one resource, bounded in time. The command gets the
//! resource in its environment and is killed when it outlives the timeout.

use std::process::Stdio;
use std::time::Duration;

use drover_model::pool::Resource;
use tokio::task::AbortHandle;

/// How one cleanup ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CleanupOutcome {
    /// Exit status 0.
    Succeeded,
    /// Non-zero exit or the command could not run.
    Failed(String),
    /// Still running at the timeout; it was killed.
    TimedOut,
}

async fn run(command: &str, resource: &Resource, timeout: Duration) -> CleanupOutcome {
    let user_data = serde_json::to_string(&resource.user_data).unwrap_or_else(|_| "{}".into());
    let spawned = tokio::process::Command::new("sh")
        .arg("-c")
        .arg(command)
        .env("DROVER_RESOURCE_NAME", &resource.name)
        .env("DROVER_RESOURCE_TYPE", &resource.rtype)
        .env("DROVER_RESOURCE_USERDATA", user_data)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        // Its own process group, so that what the command starts dies with it.
        .process_group(0)
        .kill_on_drop(true)
        .spawn();
    let mut child = match spawned {
        Ok(child) => child,
        Err(e) => return CleanupOutcome::Failed(format!("cannot start {command:?}: {e}")),
    };
    let _group = child.id().map(ProcessGroup);
    match tokio::time::timeout(timeout, child.wait()).await {
        Ok(Ok(status)) if status.success() => CleanupOutcome::Succeeded,
        Ok(Ok(status)) => CleanupOutcome::Failed(format!("exited with {status}")),
        Ok(Err(e)) => CleanupOutcome::Failed(e.to_string()),
        Err(_) => {
            if let Err(e) = child.kill().await {
                tracing::warn!(name = %resource.name, error = %e, "cannot kill a timed-out cleanup");
            }
            CleanupOutcome::TimedOut
        }
    }
}

/// Kills a whole process group when dropped: when the cleanup ends, times out or its task is
/// aborted, nothing it started outlives it (`kill_on_drop` alone kills `sh`, not its children).
struct ProcessGroup(u32);

impl Drop for ProcessGroup {
    fn drop(&mut self) {
        let group = i32::try_from(self.0)
            .ok()
            .and_then(rustix::process::Pid::from_raw);
        if let Some(group) = group {
            // ESRCH (everything already gone) is the usual answer.
            let _ = rustix::process::kill_process_group(group, rustix::process::Signal::KILL);
        }
    }
}

/// Starts a cleanup; `done` is given the resource and how the cleanup ended (the type actor
/// sends itself a message with them).
pub fn spawn_cleanup(
    command: String,
    resource: Resource,
    timeout: Duration,
    done: impl FnOnce(Resource, CleanupOutcome) + Send + 'static,
) -> AbortHandle {
    let task = tokio::spawn(async move {
        let outcome = run(&command, &resource, timeout).await;
        done(resource, outcome);
    });
    task.abort_handle()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn alive(pid: &str) -> bool {
        // Gone, or a zombie waiting for a reaper, counts as dead.
        std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .map(|stat| {
                !stat
                    .rsplit(')')
                    .next()
                    .unwrap_or_default()
                    .trim_start()
                    .starts_with('Z')
            })
            .unwrap_or(false)
    }

    #[tokio::test]
    async fn a_timed_out_cleanup_takes_its_children_with_it() {
        // Finding 9: kill_on_drop killed `sh` but left what it started running.
        let dir = tempfile::tempdir().expect("temp dir");
        let pid_file = dir.path().join("child.pid");
        let command = format!("sleep 300 & echo $! > {}; wait", pid_file.display());
        let outcome = run(&command, &Resource::default(), Duration::from_millis(500)).await;
        assert_eq!(outcome, CleanupOutcome::TimedOut);
        let pid = std::fs::read_to_string(&pid_file).expect("the command wrote its child's pid");
        let pid = pid.trim().to_string();
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while alive(&pid) && std::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert!(!alive(&pid), "the cleanup's child {pid} outlived it");
    }
}
