//! Restart policy as code: exponential backoff and a cap on restarts per time window.
//! ractor leaves restart decisions to supervisors; this is ours.

use std::collections::VecDeque;
use std::time::Duration;

use tokio::time::Instant;

/// Settings of a [`RestartPolicy`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RestartPolicyConfig {
    /// Delay before the first restart.
    pub initial_backoff: Duration,
    /// Longest delay between restarts.
    pub max_backoff: Duration,
    /// Most restarts allowed within `window`; one more and the supervisor gives up.
    pub max_restarts: usize,
    /// The sliding window the cap applies to.
    pub window: Duration,
}

impl Default for RestartPolicyConfig {
    fn default() -> Self {
        Self {
            initial_backoff: Duration::from_millis(100),
            max_backoff: Duration::from_secs(10),
            max_restarts: 5,
            window: Duration::from_secs(60),
        }
    }
}

/// What to do after a child failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// Restart it after this delay.
    RestartAfter(Duration),
    /// Too many restarts in the window: escalate to the parent.
    GiveUp,
}

/// Tracks one child's recent failures.
#[derive(Debug, Clone)]
pub struct RestartPolicy {
    config: RestartPolicyConfig,
    failures: VecDeque<Instant>,
}

impl RestartPolicy {
    /// A policy with no failures yet.
    pub fn new(config: RestartPolicyConfig) -> Self {
        Self {
            config,
            failures: VecDeque::new(),
        }
    }

    /// Records a failure at `now` and decides.
    pub fn on_failure(&mut self, now: Instant) -> Decision {
        while self
            .failures
            .front()
            .is_some_and(|at| now.duration_since(*at) > self.config.window)
        {
            self.failures.pop_front();
        }
        self.failures.push_back(now);
        let recent = self.failures.len();
        if recent > self.config.max_restarts {
            return Decision::GiveUp;
        }
        Decision::RestartAfter(exponential_backoff(
            self.config.initial_backoff,
            self.config.max_backoff,
            u32::try_from(recent).unwrap_or(u32::MAX),
        ))
    }
}

/// The wait after the `failures`-th failure in a row (from 1): `initial`, doubling with each
/// failure after the first, at most `max`.
pub fn exponential_backoff(initial: Duration, max: Duration, failures: u32) -> Duration {
    let exponent = failures.saturating_sub(1).min(20);
    initial.saturating_mul(1u32 << exponent).min(max)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config() -> RestartPolicyConfig {
        RestartPolicyConfig {
            initial_backoff: Duration::from_millis(100),
            max_backoff: Duration::from_millis(350),
            max_restarts: 3,
            window: Duration::from_secs(10),
        }
    }

    #[test]
    fn backs_off_exponentially_up_to_the_cap_then_gives_up() {
        let mut policy = RestartPolicy::new(config());
        let start = Instant::now();
        assert_eq!(
            policy.on_failure(start),
            Decision::RestartAfter(Duration::from_millis(100))
        );
        assert_eq!(
            policy.on_failure(start),
            Decision::RestartAfter(Duration::from_millis(200))
        );
        assert_eq!(
            policy.on_failure(start),
            Decision::RestartAfter(Duration::from_millis(350))
        );
        assert_eq!(policy.on_failure(start), Decision::GiveUp);
    }

    #[test]
    fn failures_outside_the_window_are_forgotten() {
        let mut policy = RestartPolicy::new(config());
        let start = Instant::now();
        for _ in 0..3 {
            policy.on_failure(start);
        }
        let later = start + Duration::from_secs(11);
        assert_eq!(
            policy.on_failure(later),
            Decision::RestartAfter(Duration::from_millis(100))
        );
    }
}
