//! Krake's cluster states as a pure function of the last state, whether the cluster is being
//! drained, what the last probe saw and for how long the agent has not answered.
//!
//! The budget counts from the agent's last answer (from the actor's start for an agent not
//! reached yet), not from the first probe that failed: a cluster whose probe fails is `DEGRADED`
//! while the agent has been silent for less than the budget and `OFFLINE` once it has been
//! silent for the budget (a cluster never reached stays `PENDING` until then). An `OFFLINE`
//! cluster that answers again is `CONNECTING` for one probe, then `ONLINE`. An agent that
//! reports pressure is `UNHEALTHY`; a drained cluster that answers is `NOTREADY`, and so is one
//! whose agent another cluster drives.

use std::time::Duration;

use drover_model::cluster::ClusterState;

/// What one probe of the agent saw.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProbeOutcome {
    /// The agent answered; `pressure` says why it is under pressure, if it is.
    Answered {
        /// The agent's pressure report.
        pressure: Option<String>,
    },
    /// The agent did not answer.
    Failed {
        /// Why.
        error: String,
    },
    /// The agent answered, but another cluster drives it: this cluster sends it nothing.
    NotDriven {
        /// Why (which agent, and who drives it).
        reason: String,
    },
}

/// The next state and its reason. `silent_for` is how long the agent has not answered: since
/// its last answer, or since the actor began probing it (ignored when the probe answered).
pub fn next_state(
    current: ClusterState,
    draining: bool,
    outcome: &ProbeOutcome,
    silent_for: Duration,
    budget: Duration,
) -> (ClusterState, String) {
    use ClusterState::*;
    match outcome {
        ProbeOutcome::NotDriven { reason } => (NotReady, reason.clone()),
        ProbeOutcome::Answered { pressure } => {
            if current == Offline {
                (Connecting, "the agent answers again".to_string())
            } else if draining {
                (NotReady, "draining: nothing new is placed here".to_string())
            } else if let Some(pressure) = pressure {
                (Unhealthy, format!("the agent reports pressure: {pressure}"))
            } else if current == Online {
                (Online, String::new())
            } else {
                (Online, "the agent answers".to_string())
            }
        }
        ProbeOutcome::Failed { error } => {
            if silent_for >= budget {
                (
                    Offline,
                    format!(
                        "no answer for {}s (budget {}s): {error}",
                        silent_for.as_secs(),
                        budget.as_secs()
                    ),
                )
            } else if matches!(current, Pending | Offline) {
                (current, format!("not reached yet: {error}"))
            } else {
                (Degraded, format!("probe failed: {error}"))
            }
        }
    }
}

/// The state once the cluster's metrics count: an `ONLINE` cluster with a metric that cannot be
/// read is `FAILING_METRICS` (nothing new is placed there, what runs stays); it is `ONLINE`
/// again once every metric is read (Krake 1.0.1 never clears the state). Other states win:
/// an agent that does not answer is not made `FAILING_METRICS`.
pub fn with_metrics(
    current: ClusterState,
    (next, reason): (ClusterState, String),
    failing: Option<String>,
) -> (ClusterState, String) {
    match (next, failing) {
        (ClusterState::Online, Some(why)) => (ClusterState::FailingMetrics, why),
        (ClusterState::Online, None) if current == ClusterState::FailingMetrics => {
            (ClusterState::Online, "every metric is read again".to_string())
        }
        (next, _) => (next, reason),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ClusterState::*;

    fn answered() -> ProbeOutcome {
        ProbeOutcome::Answered { pressure: None }
    }

    fn failed() -> ProbeOutcome {
        ProbeOutcome::Failed {
            error: "connection refused".into(),
        }
    }

    #[test]
    fn every_transition() {
        let budget = Duration::from_secs(10);
        let short = Duration::from_secs(3);
        let long = Duration::from_secs(10);
        let pressure = ProbeOutcome::Answered {
            pressure: Some("memory".into()),
        };
        let elsewhere = ProbeOutcome::NotDriven {
            reason: "agent 1 is already driven by cluster acme/edge".into(),
        };
        let table = [
            // (current, draining, outcome, silent_for, expected)
            (Pending, false, answered(), short, Online),
            (Pending, false, failed(), short, Pending),
            (Pending, false, failed(), long, Offline),
            (Online, false, answered(), short, Online),
            (Online, false, failed(), Duration::ZERO, Degraded),
            (Online, false, failed(), short, Degraded),
            (Degraded, false, failed(), short, Degraded),
            (Degraded, false, failed(), long, Offline),
            (Degraded, false, answered(), short, Online),
            (Offline, false, failed(), long, Offline),
            (Offline, false, answered(), short, Connecting),
            (Offline, true, answered(), short, Connecting),
            (Connecting, false, answered(), short, Online),
            (Connecting, false, failed(), short, Degraded),
            (Online, false, pressure.clone(), short, Unhealthy),
            (Unhealthy, false, answered(), short, Online),
            (Unhealthy, false, failed(), short, Degraded),
            (Online, true, answered(), short, NotReady),
            (NotReady, true, pressure.clone(), short, NotReady),
            (NotReady, false, answered(), short, Online),
            (NotReady, true, failed(), short, Degraded),
            (Connecting, true, answered(), short, NotReady),
            // An agent another cluster drives answers: NOTREADY, whatever came before, and
            // never OFFLINE however long this cluster has sent it nothing.
            (Pending, false, elsewhere.clone(), short, NotReady),
            (Online, false, elsewhere.clone(), short, NotReady),
            (Offline, false, elsewhere.clone(), long, NotReady),
            (NotReady, false, elsewhere.clone(), long, NotReady),
            (NotReady, false, answered(), short, Online),
            // The budget is silence since the last answer: reached exactly at the budget.
            (
                Online,
                false,
                failed(),
                budget - Duration::from_millis(1),
                Degraded,
            ),
            (Online, false, failed(), budget, Offline),
        ];
        for (current, draining, outcome, silent_for, expected) in table {
            let (got, reason) = next_state(current, draining, &outcome, silent_for, budget);
            assert_eq!(
                got, expected,
                "{current:?} draining={draining} {outcome:?} {silent_for:?}"
            );
            if got != current {
                assert!(!reason.is_empty(), "a transition has a reason");
            }
        }
    }

    #[test]
    fn failing_metrics_is_set_on_online_clusters_and_cleared_when_read_again() {
        let budget = Duration::from_secs(10);
        let why = || Some("metrics not read: load: UNREACHABLE_METRICS_PROVIDER (refused)".to_string());
        let table = [
            // (current, draining, outcome, failing metrics, expected)
            (Online, false, answered(), why(), FailingMetrics),
            (FailingMetrics, false, answered(), why(), FailingMetrics),
            (FailingMetrics, false, answered(), None, Online),
            (Pending, false, answered(), why(), FailingMetrics),
            (FailingMetrics, false, failed(), why(), Degraded),
            (FailingMetrics, true, answered(), why(), NotReady),
            (
                Online,
                false,
                ProbeOutcome::Answered {
                    pressure: Some("disk".into()),
                },
                why(),
                Unhealthy,
            ),
            (Offline, false, answered(), why(), Connecting),
            (Online, false, answered(), None, Online),
        ];
        for (current, draining, outcome, failing, expected) in table {
            let lifecycle = next_state(current, draining, &outcome, Duration::ZERO, budget);
            let (got, reason) = with_metrics(current, lifecycle, failing.clone());
            assert_eq!(
                got, expected,
                "{current:?} draining={draining} {outcome:?} {failing:?}"
            );
            if got == FailingMetrics {
                assert!(reason.contains("UNREACHABLE_METRICS_PROVIDER"), "{reason}");
            }
            if current == FailingMetrics && got == Online {
                assert_eq!(reason, "every metric is read again");
            }
        }
    }

    #[test]
    fn the_reasons_say_why() {
        let budget = Duration::from_secs(10);
        let (_, reason) = next_state(Degraded, false, &failed(), Duration::from_secs(12), budget);
        assert_eq!(reason, "no answer for 12s (budget 10s): connection refused");
        let pressure = ProbeOutcome::Answered {
            pressure: Some("memory: MemAvailable below 5%".into()),
        };
        let (_, reason) = next_state(Online, false, &pressure, Duration::ZERO, budget);
        assert!(reason.ends_with("memory: MemAvailable below 5%"));
        let elsewhere = ProbeOutcome::NotDriven {
            reason: "agent 1 is already driven by cluster acme/edge".into(),
        };
        let (_, reason) = next_state(Pending, false, &elsewhere, Duration::ZERO, budget);
        assert_eq!(reason, "agent 1 is already driven by cluster acme/edge");
    }
}
