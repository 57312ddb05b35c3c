//! Asks applications to shut down: every [`TICK`], the calls the committed state says are due
//! and this actor has not made yet are sent (`PUT`, bounded by [`CALL_TIMEOUT`]). A call that
//! could not connect (the application is not listening yet, say it is still starting) never
//! reached it and is made again within the grace, after [`retry_after`] (half a second, then
//! doubling up to [`MAX_RETRY`]). A call that reached it and failed is not repeated within the
//! same grace — the application goes `DEGRADED` when the grace ends, and `PUT …/retry` starts a
//! new grace, which is called again.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use drover_model::krake::hooks_due::{shutdown_calls, ShutdownCall};
use ractor::{Actor, ActorProcessingErr, ActorRef};

use crate::root::LeaderContext;

/// How often the due calls are read.
pub const TICK: Duration = Duration::from_millis(500);

/// Longest one call may take.
pub const CALL_TIMEOUT: Duration = Duration::from_secs(5);

/// Longest wait before a call that could not connect is made again.
pub const MAX_RETRY: Duration = Duration::from_secs(10);

/// How long after its `attempts`-th failure to connect (from 1) a call is made again: [`TICK`],
/// doubling, at most [`MAX_RETRY`] — quick while an application starts, and a few thousand
/// calls at most in the longest grace (a day) if it never listens.
pub fn retry_after(attempts: u32) -> Duration {
    crate::supervision::exponential_backoff(TICK, MAX_RETRY, attempts)
}

/// A call that could not connect, and when it is made again.
struct Retry {
    /// Failures to connect so far in this grace.
    attempts: u32,
    /// When it is made again; `None` while that call is in flight.
    retry_at: Option<Instant>,
}

/// Messages of the caller.
#[derive(Debug)]
pub enum CallerMsg {
    /// Read what is due and call it.
    Tick,
    /// A call could not connect (why): it is owed again.
    Unreached(ShutdownCall, String),
}

/// Arguments of the caller.
pub struct CallerArgs {
    pub(crate) context: LeaderContext,
    pub(crate) egress: std::sync::Arc<drover_model::egress::EgressPolicy>,
}

/// State of the caller.
pub struct CallerState {
    context: LeaderContext,
    http: crate::egress::EgressClient,
    /// Calls made in this term (each grace once), forgotten once no longer due.
    made: BTreeSet<ShutdownCall>,
    /// Calls that could not connect, forgotten once no longer due (one warning per grace).
    unreached: BTreeMap<ShutdownCall, Retry>,
}

/// The shutdown caller.
pub struct ShutdownCaller;

impl Actor for ShutdownCaller {
    type Msg = CallerMsg;
    type State = CallerState;
    type Arguments = CallerArgs;

    async fn pre_start(
        &self,
        myself: ActorRef<CallerMsg>,
        args: CallerArgs,
    ) -> Result<CallerState, ActorProcessingErr> {
        myself.send_interval(TICK, || CallerMsg::Tick);
        let http = crate::egress::EgressClient::new(args.egress, crate::egress::Redirects::WithinPolicy)?;
        Ok(CallerState {
            context: args.context,
            http,
            made: BTreeSet::new(),
            unreached: BTreeMap::new(),
        })
    }

    async fn handle(
        &self,
        myself: ActorRef<CallerMsg>,
        message: CallerMsg,
        state: &mut CallerState,
    ) -> Result<(), ActorProcessingErr> {
        match message {
            CallerMsg::Tick => {
                // The leader's clock: the committed one moves only when something is written.
                let now_ms = state.context.raft.leader_clock_ms();
                let due: BTreeSet<ShutdownCall> = state
                    .context
                    .raft
                    .local_read(|s| shutdown_calls(s.platform(), now_ms.max(s.clock_ms())))
                    .into_iter()
                    .collect();
                state.made.retain(|call| due.contains(call));
                state.unreached.retain(|call, _| due.contains(call));
                let now = Instant::now();
                for (call, retry) in &mut state.unreached {
                    if retry.retry_at.is_some_and(|at| at <= now) {
                        retry.retry_at = None;
                        state.made.remove(call);
                    }
                }
                for call in due {
                    if state.made.insert(call.clone()) {
                        let request = match state.http.request(reqwest::Method::PUT, &call.url) {
                            Ok(request) => request,
                            Err(why) => {
                                tracing::warn!(tenant = %call.tenant, application = %call.name, %why,
                                    "a Krake application's shutdown hook is not called");
                                continue;
                            }
                        };
                        let myself = myself.clone();
                        tokio::spawn(async move {
                            match request.timeout(CALL_TIMEOUT).send().await {
                                Ok(answer) => tracing::info!(
                                    tenant = %call.tenant, application = %call.name,
                                    status = answer.status().as_u16(), "asked a Krake application to shut down"
                                ),
                                Err(error) if error.is_connect() => {
                                    // The actor may have stopped with the term: nothing is owed then.
                                    let why = error.to_string();
                                    let _ = myself.cast(CallerMsg::Unreached(call, why));
                                }
                                Err(error) => tracing::warn!(
                                    tenant = %call.tenant, application = %call.name, %error,
                                    "a Krake application's shutdown hook did not answer"
                                ),
                            }
                        });
                    }
                }
            }
            CallerMsg::Unreached(call, why) => {
                let retry = state.unreached.entry(call.clone()).or_insert(Retry {
                    attempts: 0,
                    retry_at: None,
                });
                if retry.attempts == 0 {
                    tracing::warn!(
                        tenant = %call.tenant, application = %call.name, %why,
                        "a Krake application's shutdown hook could not be reached; asked again within its grace"
                    );
                }
                retry.attempts = retry.attempts.saturating_add(1);
                retry.retry_at = Some(Instant::now() + retry_after(retry.attempts));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_call_that_could_not_connect_is_made_again_sooner_first_and_never_rarer_than_the_cap() {
        let ms = |attempts| retry_after(attempts).as_millis();
        let table = [
            (0, 500),
            (1, 500),
            (2, 1_000),
            (3, 2_000),
            (4, 4_000),
            (5, 8_000),
            (6, 10_000),
            (40, 10_000),
            (u32::MAX, 10_000),
        ];
        for (attempts, wanted) in table {
            assert_eq!(ms(attempts), wanted, "after {attempts} failures");
        }
    }
}
