//! `wait` on service calls (Axebow §2.5): block until the revision a call made runs exactly (or,
//! for a delete, until the service's instances are gone). `wait=N` waits up to N seconds,
//! `wait=0` until it happens; left out, a call answers once the change is committed. On a
//! timeout a create or update answers `201` with a request id that `GET
//! …/service/{s}/request/{id}` resolves later; a rollback, scale or delete answers `408` (its
//! change is committed all the same). A revision that waits for acceptance has nothing to wait
//! for and answers at once. A wait also ends, early, when the service's actor has committed
//! that the revision cannot run (`FAILED`: its agent refuses its set), answered as a timeout is,
//! with the service's phase and reason in what it reads.

use std::time::Duration;

use drover_model::service::placement::RunStatus;
use drover_model::service::reconcile::Phase;
use tokio::time::Instant;

use super::context::AxebowState;
use super::reply::AxebowError;

/// How often the local state is looked at while waiting.
const POLL: Duration = Duration::from_millis(100);

/// The longest finite wait, in seconds (a day).
const MAX_WAIT_SECONDS: f64 = 86_400.0;

/// What a `wait` parameter asks for.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Wait {
    /// Answer once committed.
    No,
    /// Wait up to this long.
    For(Duration),
    /// Wait until it happens.
    Forever,
}

/// Parses `wait`: seconds (fractions allowed), `0` for no limit.
pub fn wait_of(text: Option<&str>) -> Result<Wait, AxebowError> {
    let Some(text) = text else {
        return Ok(Wait::No);
    };
    let seconds: f64 = text
        .trim()
        .parse()
        .map_err(|_| AxebowError::invalid("wait", format!("{text:?} is not a number of seconds")))?;
    if !seconds.is_finite() || !(0.0..=MAX_WAIT_SECONDS).contains(&seconds) {
        return Err(AxebowError::invalid(
            "wait",
            format!("seconds from 0 (no limit) to {MAX_WAIT_SECONDS}"),
        ));
    }
    Ok(if seconds == 0.0 {
        Wait::Forever
    } else {
        Wait::For(Duration::from_secs_f64(seconds))
    })
}

/// Where revision `revision` of a service stands: `done` when it is current and runs exactly.
pub fn request_status(
    state: &AxebowState,
    tenant: &str,
    service: &str,
    revision: u64,
) -> Option<(bool, RunStatus)> {
    state.raft.local_read(|s| {
        let status = s.platform().service_run_status(tenant, service).ok()?;
        let done = status.revision == Some(revision) && status.converged;
        Some((done, status))
    })
}

/// How a wait ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ended {
    /// What was waited for happened (or nothing was to be waited for).
    Done,
    /// It cannot happen without another change: answered as a timeout, at once.
    Failed,
    /// The wait ran out.
    TimedOut,
}

async fn until(wait: Wait, mut ended: impl FnMut() -> Option<Ended>) -> Ended {
    let deadline = match wait {
        Wait::No => return Ended::Done,
        Wait::For(limit) => Some(Instant::now() + limit),
        Wait::Forever => None,
    };
    loop {
        if let Some(ended) = ended() {
            return ended;
        }
        if deadline.is_some_and(|at| Instant::now() >= at) {
            return Ended::TimedOut;
        }
        tokio::time::sleep(POLL).await;
    }
}

/// Whether the service's actor has committed that revision `revision` cannot run.
fn failed(state: &AxebowState, tenant: &str, service: &str, revision: u64) -> bool {
    state.raft.local_read(|s| {
        s.platform().service(tenant, service).is_ok_and(|stored| {
            stored.current == Some(revision)
                && stored.reconcile.revision == Some(revision)
                && stored.reconcile.phase == Phase::Failed
        })
    })
}

/// Waits for revision `revision` to run exactly; `false` on a timeout, or as soon as the
/// service's actor has committed that the revision fails.
pub async fn converged(state: &AxebowState, tenant: &str, service: &str, revision: u64, wait: Wait) -> bool {
    let ended = until(wait, || {
        if request_status(state, tenant, service, revision).is_some_and(|(done, _)| done) {
            Some(Ended::Done)
        } else if failed(state, tenant, service, revision) {
            Some(Ended::Failed)
        } else {
            None
        }
    })
    .await;
    ended == Ended::Done
}

/// Waits until a deleted service's object is gone (its actor removed its instances and
/// finalized it); `false` on a timeout.
pub async fn gone(state: &AxebowState, tenant: &str, service: &str, wait: Wait) -> bool {
    let ended = until(wait, || {
        state
            .raft
            .local_read(|s| {
                s.platform()
                    .service(tenant, service)
                    .map_or(true, |stored| stored.deleting_ms.is_none())
            })
            .then_some(Ended::Done)
    })
    .await;
    ended == Ended::Done
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wait_parameters() {
        assert_eq!(wait_of(None).ok(), Some(Wait::No));
        assert_eq!(wait_of(Some("0")).ok(), Some(Wait::Forever));
        assert_eq!(
            wait_of(Some("1.5")).ok(),
            Some(Wait::For(Duration::from_millis(1500)))
        );
        for bad in ["", "-1", "soon", "NaN", "inf", "86401"] {
            assert!(wait_of(Some(bad)).is_err(), "{bad:?}");
        }
    }
}
