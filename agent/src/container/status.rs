//! How a pod's containers are reported, in Kubernetes' words, and what the instance's state is
//! made of them. Pure: the supervisor feeds it what the runtime answered.
//!
//! The words are the kubelet's: a container not yet created is `ContainerCreating`; a pull that
//! failed is `ErrImagePull`, and `ImagePullBackOff` while the next try waits; a reference that
//! cannot be pulled is `InvalidImageName`; a create the runtime refused is
//! `CreateContainerError`; a start it refused is `StartError`; a container that ended and waits
//! to be started again is `CrashLoopBackOff`; one that ended is `Completed` (exit 0), `OOMKilled`
//! (killed at its memory limit) or `Error`.

use std::time::Duration;

use drover_model::cluster::agent_api::{Health, InstanceState};
use drover_model::cluster::pod::{ContainerPhase, ContainerReport};

/// A container not created yet.
pub const CONTAINER_CREATING: &str = "ContainerCreating";
/// A pull that failed just now.
pub const ERR_IMAGE_PULL: &str = "ErrImagePull";
/// A pull that failed, waiting for the next try.
pub const IMAGE_PULL_BACK_OFF: &str = "ImagePullBackOff";
/// A reference that cannot be pulled.
pub const INVALID_IMAGE_NAME: &str = "InvalidImageName";
/// An image that is over the agent's size limit.
pub const IMAGE_TOO_LARGE: &str = "ImageTooLarge";
/// A create the runtime refused.
pub const CREATE_CONTAINER_ERROR: &str = "CreateContainerError";
/// A start the runtime refused.
pub const START_ERROR: &str = "StartError";
/// A container waiting to be started again after it ended.
pub const CRASH_LOOP_BACK_OFF: &str = "CrashLoopBackOff";
/// Ended with exit code 0.
pub const COMPLETED: &str = "Completed";
/// Killed at its memory limit.
pub const OOM_KILLED: &str = "OOMKilled";
/// Ended otherwise.
pub const ERROR: &str = "Error";

/// Why a run ended, from its exit code and the runtime's reason.
pub fn exit_reason(exit_code: i32, runtime_reason: &str) -> &'static str {
    if runtime_reason == OOM_KILLED {
        OOM_KILLED
    } else if exit_code == 0 {
        COMPLETED
    } else {
        ERROR
    }
}

/// Restart delays: `first`, doubled after every failure up to `max`, back to `first` after a
/// run of `stable` (the kubelet's 10 s doubling to 5 min, here the agent's own
/// `--restart-backoff`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Backoff {
    /// The next delay.
    pub next: Duration,
    first: Duration,
    max: Duration,
}

impl Backoff {
    /// Delays from `first` up to `max`.
    pub fn new(first: Duration, max: Duration) -> Self {
        Self {
            next: first,
            first,
            max,
        }
    }

    /// The delay to wait now; the one after it doubles.
    pub fn take(&mut self) -> Duration {
        let now = self.next;
        self.next = (self.next * 2).min(self.max);
        now
    }

    /// Back to the first delay (after a run that lasted).
    pub fn reset(&mut self) {
        self.next = self.first;
    }
}

/// The instance's state and health from its containers' reports: running when
/// every container runs (healthy when every one is ready and any has a probe); exited when all
/// ended and none is started again, every one with 0; failed when one waits to be started again
/// after a failure (or all ended and one failed); starting otherwise.
pub fn instance_state(reports: &[ContainerReport], probed: bool) -> (InstanceState, Health) {
    let failing = |r: &ContainerReport| {
        r.state == ContainerPhase::Waiting
            && r.reason
                .as_deref()
                .is_some_and(|reason| reason != CONTAINER_CREATING)
    };
    if reports.iter().any(failing) {
        return (InstanceState::Failed, Health::Unhealthy);
    }
    if !reports.is_empty() && reports.iter().all(|r| r.state == ContainerPhase::Terminated) {
        let clean = reports.iter().all(|r| r.exit_code == Some(0));
        let state = if clean {
            InstanceState::Exited
        } else {
            InstanceState::Failed
        };
        return (state, Health::Unknown);
    }
    let running = reports.iter().all(|r| r.state != ContainerPhase::Waiting);
    if !running {
        return (InstanceState::Starting, Health::Unknown);
    }
    let ready = reports
        .iter()
        .all(|r| r.ready || r.state == ContainerPhase::Terminated);
    match (ready, probed) {
        (true, true) => (InstanceState::Running, Health::Healthy),
        (true, false) => (InstanceState::Running, Health::Unknown),
        (false, _) => (InstanceState::Starting, Health::Unknown),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(
        state: ContainerPhase,
        reason: Option<&str>,
        exit_code: Option<i32>,
        ready: bool,
    ) -> ContainerReport {
        ContainerReport {
            name: "c".into(),
            image: "i".into(),
            image_id: None,
            state,
            reason: reason.map(str::to_string),
            message: None,
            exit_code,
            restart_count: 0,
            ready,
        }
    }

    #[test]
    fn runs_end_for_the_reasons_kubernetes_gives() {
        assert_eq!(exit_reason(0, "Completed"), COMPLETED);
        assert_eq!(exit_reason(1, "Error"), ERROR);
        assert_eq!(exit_reason(137, "OOMKilled"), OOM_KILLED);
        assert_eq!(exit_reason(137, ""), ERROR);
    }

    #[test]
    fn backoff_doubles_to_its_ceiling_and_resets() {
        let mut backoff = Backoff::new(Duration::from_millis(500), Duration::from_secs(2));
        let taken: Vec<_> = (0..4).map(|_| backoff.take().as_millis()).collect();
        assert_eq!(taken, [500, 1000, 2000, 2000]);
        backoff.reset();
        assert_eq!(backoff.take(), Duration::from_millis(500));
    }

    #[test]
    fn the_instance_state_is_made_of_its_containers() {
        use ContainerPhase::*;
        let running = report(Running, None, None, true);
        let unready = report(Running, None, None, false);
        let creating = report(Waiting, Some(CONTAINER_CREATING), None, false);
        let pull = report(Waiting, Some(IMAGE_PULL_BACK_OFF), None, false);
        let crash = report(Waiting, Some(CRASH_LOOP_BACK_OFF), Some(1), false);
        let done = report(Terminated, Some(COMPLETED), Some(0), false);
        let failed = report(Terminated, Some(ERROR), Some(2), false);
        let cases = [
            (
                vec![running.clone()],
                false,
                InstanceState::Running,
                Health::Unknown,
            ),
            (
                vec![running.clone()],
                true,
                InstanceState::Running,
                Health::Healthy,
            ),
            (
                vec![running.clone(), unready],
                true,
                InstanceState::Starting,
                Health::Unknown,
            ),
            (
                vec![running.clone(), creating],
                false,
                InstanceState::Starting,
                Health::Unknown,
            ),
            (
                vec![running.clone(), pull],
                false,
                InstanceState::Failed,
                Health::Unhealthy,
            ),
            (vec![crash], false, InstanceState::Failed, Health::Unhealthy),
            (vec![done.clone()], false, InstanceState::Exited, Health::Unknown),
            (vec![done, failed], false, InstanceState::Failed, Health::Unknown),
            (vec![running], false, InstanceState::Running, Health::Unknown),
        ];
        for (reports, probed, state, health) in cases {
            assert_eq!(instance_state(&reports, probed), (state, health), "{reports:?}");
        }
    }
}
