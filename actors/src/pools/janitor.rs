//! Running the cleanup command for one resource, bounded in time. The command gets the
//! resource in its environment and is killed when it outlives the timeout.

use std::process::Stdio;
use std::time::Duration;

use drover_model::pool::Resource;
use ractor::ActorRef;
use tokio::task::AbortHandle;

use super::type_actor::TypeMsg;

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
        .kill_on_drop(true)
        .spawn();
    let mut child = match spawned {
        Ok(child) => child,
        Err(e) => return CleanupOutcome::Failed(format!("cannot start {command:?}: {e}")),
    };
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

/// Starts a cleanup; the type actor gets a [`TypeMsg::Cleaned`] when it ends.
pub fn spawn_cleanup(
    actor: ActorRef<TypeMsg>,
    command: String,
    resource: Resource,
    timeout: Duration,
) -> AbortHandle {
    let task = tokio::spawn(async move {
        let outcome = run(&command, &resource, timeout).await;
        let _ = actor.send_message(TypeMsg::Cleaned {
            name: resource.name.clone(),
            token: resource.token,
            outcome,
        });
    });
    task.abort_handle()
}
