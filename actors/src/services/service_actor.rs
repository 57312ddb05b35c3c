//! One service's actor: on every pass it reads the service from the committed state and what
//! its cluster's actor last saw of the service's set, asks the pure [`plan`] what to do, sends
//! the whole desired set through the cluster's driver (fenced by this leader's term and id),
//! and commits its status (and, for a deleted service, its end) through Raft when it changed.
//!
//! It acts only on an inventory read after its own last send (else on the agent's answer to
//! that send), so a stale view can never bring back an instance it already removed; after a
//! failed send (which the agent may have applied anyway) it decides nothing until the next
//! inventory. A failed send is retried after a jittered, doubling delay. A set the agent
//! refused (a `4xx`: it changed nothing and refuses the same set again) is remembered and given
//! to the plan, so the service is `FAILED` with the agent's words, and an event says so, for as
//! long as the plan wants that set. A new leader's actor starts from the store
//! and its cluster's first inventory of the new term: it sends nothing when the agent already
//! runs the desired set, and instance ids are deterministic, so nothing is started twice.

use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use drover_model::cluster::agent_api::{InstanceSpec, InstanceStatus, SetName};
use drover_model::cluster::ClusterRef;
use drover_model::service::placement::role_targets;
use drover_model::service::reconcile::{
    plan, Action, Phase, ReconcileStatus, Refusal, Seen, ServiceReport, Wanted,
};
use drover_model::service::rollout::RoleTarget;
use drover_model::{Command, CommandResult, Proposal};
use ractor::{Actor, ActorProcessingErr, ActorRef};

use super::backoff::{phase, retry_delay};
use super::{ServiceActorsConfig, ServiceMetrics};
use crate::clusters::{DriverError, Observations, SetInstances};
use crate::root::LeaderContext;

/// Messages of a service actor.
#[derive(Debug)]
pub enum ServiceMsg {
    /// Read, plan, act, report.
    Tick,
}

/// Arguments of a service actor.
pub struct ServiceArgs {
    pub(crate) tenant: String,
    pub(crate) service: String,
    pub(crate) uid: String,
    pub(crate) set: SetName,
    pub(crate) context: LeaderContext,
    pub(crate) observations: Observations,
    pub(crate) config: Arc<ServiceActorsConfig>,
    pub(crate) metrics: ServiceMetrics,
}

/// What the last send returned.
struct Sent {
    /// When the agent's answer arrived: an inventory read after this shows the send.
    at: Instant,
    cluster: ClusterRef,
    instances: Vec<InstanceStatus>,
}

/// A desired set the agent refused.
struct Refused {
    cluster: ClusterRef,
    instances: Vec<InstanceSpec>,
    status: u16,
    message: String,
}

impl Refused {
    fn as_refusal(&self) -> Refusal<'_> {
        Refusal {
            cluster: &self.cluster,
            instances: &self.instances,
            status: self.status,
            message: &self.message,
        }
    }
}

/// What a pass decides from besides the committed service, which its `version` stands for
/// (stamped by every change of the service: a revision, a placement, a report). The plan is a
/// pure function of the service, the set's instances and the actor's own memory of its last
/// send, so a pass whose inputs are all those of an earlier pass that wanted nothing sent
/// would decide that nothing again: it is skipped. An unplaced service is never skipped (its
/// pass asks the scheduler, which reads every cluster), nor is anything after a pass that
/// acted, wanted to act, wrote or failed.
struct PassInputs {
    version: u64,
    /// The cluster's last observation, when there is one: whether it answered, this set's
    /// instances (shared while unchanged), and whether it predates this actor's last send
    /// (then the agent's answer to the send stands in for it) or its last failed send.
    observed: Option<(bool, Option<SetInstances>, bool, bool)>,
}

impl PassInputs {
    fn same_as(&self, other: &PassInputs) -> bool {
        let same_observed = match (&self.observed, &other.observed) {
            (None, None) => true,
            (Some((reachable, set, after_sent, after_failed)), Some((r, s, a, f))) => {
                reachable == r
                    && after_sent == a
                    && after_failed == f
                    && match (set, s) {
                        (None, None) => true,
                        (Some(x), Some(y)) => Arc::ptr_eq(x, y),
                        _ => false,
                    }
            }
            _ => false,
        };
        self.version == other.version && same_observed
    }
}

/// State of a service actor.
pub struct ServiceState {
    args: ServiceArgs,
    /// The inputs of the last pass, when it wanted nothing sent or written (see
    /// [`PassInputs`]).
    quiet: Option<PassInputs>,
    sent: Option<Sent>,
    /// The last set sent, when the agent refused it.
    refused: Option<Refused>,
    /// Failed sends in a row.
    failures: u32,
    /// No send before this (after a failure).
    retry_at: Option<Instant>,
    /// When the last send failed: the agent may or may not have applied it, so nothing is
    /// decided until the cluster's actor has read its inventory again.
    failed_at: Option<Instant>,
    /// Counted in the backlog gauge: it has work it has not finished.
    in_backlog: bool,
    /// The planted bug's copy of the service as first read (see [`ServiceActor::planted_stale`]).
    #[cfg(feature = "planted-stale-service")]
    first_read: Option<Committed>,
}

/// What the actor reads of its committed service.
#[derive(Clone)]
struct Committed {
    roles: Vec<RoleTarget>,
    revision: Option<u64>,
    cluster: Option<ClusterRef>,
    deleting: bool,
    reported: ReconcileStatus,
    /// Why no cluster takes it, when it is accepted and not placed.
    unplaced: Option<String>,
    /// Moving: `cluster` is the one it moves to.
    migrating: bool,
    /// It may not move.
    pinned: bool,
}

/// Most characters of a driver's error kept in a status.
const MAX_ERROR_TEXT: usize = 256;

fn bounded(text: &str) -> String {
    crate::clusters::bounded(text, MAX_ERROR_TEXT)
}

/// The service actor.
pub struct ServiceActor;

impl ServiceActor {
    fn committed(args: &ServiceArgs) -> Option<Committed> {
        args.context.raft.local_read(|s| {
            let service = s
                .platform()
                .service(&args.tenant, &args.service)
                .ok()
                .filter(|service| service.uid == args.uid)?;
            Some(Committed {
                roles: role_targets(&args.set, service),
                revision: service.current,
                // While moving, the new cluster is where its instances are started; the old
                // one keeps what it runs until the switch, then its actor removes it.
                cluster: service.migrating_to.clone().or_else(|| service.placement.clone()),
                migrating: service.migrating_to.is_some(),
                pinned: service
                    .current
                    .and_then(|n| service.revisions.get(&n))
                    .is_some_and(|r| !r.deployment.constraints.migration),
                deleting: service.deleting_ms.is_some(),
                reported: service.reconcile.clone(),
                unplaced: (service.placement.is_none() && service.current.is_some())
                    .then(|| {
                        let platform = s.platform();
                        platform.schedule_service(&args.tenant, &args.service, &platform.reserved())
                    })
                    .flatten()
                    .filter(|decision| decision.chosen.is_none())
                    .map(|decision| decision.why_none()),
            })
        })
    }

    /// THE PLANTED BUG (feature `planted-stale-service`, for the chaos harness only): the actor
    /// acts on a stale read — its service as it read it first, kept as if a change feed
    /// refreshed it, which nothing does — so every later scale, new revision or deletion is
    /// never carried out on the agent. `scripts/chaos-planted.sh 8 25 stale-service` proves
    /// the services workload's checkers (the agent's inventory against the accepted
    /// revisions) find it.
    #[cfg(feature = "planted-stale-service")]
    fn planted_stale(state: &mut ServiceState, fresh: Committed) -> Committed {
        state.first_read.get_or_insert(fresh).clone()
    }

    /// What the next pass would decide from, or `None` when it must run whatever it finds
    /// (the service is gone, or accepted and unplaced).
    fn pass_inputs(state: &ServiceState) -> Option<PassInputs> {
        let args = &state.args;
        let (version, cluster) = args.context.raft.local_read(|s| {
            let service = s
                .platform()
                .service(&args.tenant, &args.service)
                .ok()
                .filter(|service| service.uid == args.uid)?;
            if service.placement.is_none() && service.current.is_some() {
                return None;
            }
            let cluster = service.migrating_to.clone().or_else(|| service.placement.clone());
            Some((service.version, cluster))
        })?;
        let observed = cluster.as_ref().and_then(|cluster| {
            let (read_at, reachable, set) =
                args.observations
                    .set_view(cluster, args.context.term, &args.set)?;
            let after_sent = state
                .sent
                .as_ref()
                .is_some_and(|sent| sent.cluster == *cluster && read_at <= sent.at);
            let after_failed = state.failed_at.is_some_and(|failed_at| read_at <= failed_at);
            Some((reachable, set, after_sent, after_failed))
        });
        Some(PassInputs { version, observed })
    }

    fn set_backlog(state: &mut ServiceState, busy: bool) {
        if busy != state.in_backlog {
            if busy {
                state.args.metrics.backlog.inc();
            } else {
                state.args.metrics.backlog.dec();
            }
            state.in_backlog = busy;
        }
    }

    /// The inputs of the next pass, unless they are those of the last quiet one: then the pass
    /// is skipped (see [`PassInputs`]) and this says so with `Err(())`.
    fn changed_inputs(state: &mut ServiceState) -> Result<Option<PassInputs>, ()> {
        let inputs = Self::pass_inputs(state);
        if let (Some(inputs), Some(quiet)) = (&inputs, &state.quiet) {
            if inputs.same_as(quiet) {
                state
                    .args
                    .metrics
                    .reconciles
                    .with_label_values(&["unchanged"])
                    .inc();
                return Err(());
            }
        }
        state.quiet = None;
        Ok(inputs)
    }

    /// One pass with `inputs` read before it; `false` when the service is gone (the actor
    /// stops).
    async fn tick(state: &mut ServiceState, inputs: Option<PassInputs>) -> Result<bool, ActorProcessingErr> {
        let started = Instant::now();
        let Some(committed) = Self::committed(&state.args) else {
            return Ok(false);
        };
        #[cfg(feature = "planted-stale-service")]
        let committed = Self::planted_stale(state, committed);
        let args = &state.args;
        let observation = committed
            .cluster
            .as_ref()
            .and_then(|cluster| args.observations.get(cluster, args.context.term));
        if let (Some(failed_at), Some(o)) = (state.failed_at, &observation) {
            if o.read_at <= failed_at {
                // What the failed send did is unknown until the next inventory.
                args.metrics.reconciles.with_label_values(&["idle"]).inc();
                return Ok(true);
            }
        }
        // An inventory read after the last send shows what the send did: its answer is not
        // needed again (a cluster's read times only grow) and is not kept (at 10,000 services
        // of ten instances, 100,000 instance statuses held by the leader for nothing).
        if let (Some(o), Some(cluster)) = (&observation, &committed.cluster) {
            if state
                .sent
                .as_ref()
                .is_some_and(|sent| sent.cluster == *cluster && o.read_at > sent.at)
            {
                state.sent = None;
            }
        }
        let seen = match (&observation, &committed.cluster) {
            (None, _) | (_, None) => Seen::NotYet,
            (Some(o), _) if !o.reachable => Seen::Unreachable,
            (Some(o), Some(cluster)) => match &state.sent {
                // The cluster's last inventory predates this actor's last send: the agent's
                // answer to that send is newer.
                Some(sent) if sent.cluster == *cluster && o.read_at <= sent.at => {
                    Seen::Instances(&sent.instances)
                }
                _ => Seen::Instances(o.sets.get(&args.set).map_or(&[], |set| &set[..])),
            },
        };
        let wanted = Wanted {
            roles: &committed.roles,
            revision: committed.revision,
            cluster: committed.cluster.as_ref(),
            deleting: committed.deleting,
            unplaced: committed.unplaced.as_deref(),
            migrating: committed.migrating,
            pinned: committed.pinned,
        };
        let (actions, mut status) = plan(wanted, seen, state.refused.as_ref().map(Refused::as_refusal));
        let mut finalize = false;
        let mut switch = false;
        let mut acted = false;
        let mut failed = false;
        let waiting = state.retry_at.is_some_and(|at| Instant::now() < at);
        let mut apply = None;
        let wants_apply = actions.iter().any(|action| matches!(action, Action::Apply(_)));
        for action in actions {
            match action {
                Action::Finalize => finalize = true,
                Action::Switch => switch = true,
                Action::Apply(_) if waiting => {}
                Action::Apply(instances) => apply = Some(instances),
            }
        }
        if let (Some(instances), Some(observation), Some(cluster)) = (apply, &observation, &committed.cluster)
        {
            let fence = args.context.fence();
            acted = true;
            let sending = instances.clone();
            let result = observation.driver.apply_set(fence, &args.set, instances).await;
            args.metrics
                .driver_calls
                .with_label_values(&[DriverError::outcome(&result)])
                .inc();
            match result {
                Ok(inventory) => {
                    state.sent = Some(Sent {
                        at: Instant::now(),
                        cluster: cluster.clone(),
                        instances: inventory.instances,
                    });
                    state.failures = 0;
                    state.retry_at = None;
                    state.failed_at = None;
                    state.refused = None;
                }
                Err(error) => {
                    failed = true;
                    state.failures = state.failures.saturating_add(1);
                    let delay = retry_delay(
                        &args.uid,
                        state.failures,
                        args.config.retry_base,
                        args.config.retry_max,
                    );
                    state.retry_at = Some(Instant::now() + delay);
                    state.failed_at = Some(Instant::now());
                    tracing::warn!(tenant = %args.tenant, service = %args.service, %error, ?delay, "desired set not applied; retrying");
                    match error {
                        // The agent changed nothing and will refuse this set again: the plan
                        // says so for as long as it wants this set.
                        DriverError::Refused {
                            status: code,
                            message,
                        } if (400..500).contains(&code) => {
                            let refused = Refused {
                                cluster: cluster.clone(),
                                instances: sending,
                                status: code,
                                message: bounded(&message),
                            };
                            status = plan(wanted, seen, Some(refused.as_refusal())).1;
                            state.refused = Some(refused);
                        }
                        error => {
                            status.reason = format!(
                                "{}; the last send failed: {}",
                                status.reason,
                                bounded(&error.to_string())
                            );
                        }
                    }
                    state.sent = None;
                }
            }
        }
        // Work left: anything but a service running exactly its revision.
        Self::set_backlog(state, status.phase != Phase::Running);
        let writes = finalize || switch || status != committed.reported;
        if !wants_apply && !writes && !failed && committed.unplaced.is_none() {
            state.quiet = inputs;
        }
        let args = &state.args;
        if writes {
            let report = ServiceReport {
                tenant: args.tenant.clone(),
                service: args.service.clone(),
                uid: args.uid.clone(),
                status,
                finalize,
                switched_to: committed.cluster.clone().filter(|_| switch),
            };
            match args
                .context
                .raft
                .write(Proposal::new(Command::ServiceReport(report)))
                .await
            {
                Ok(written) if matches!(written.result, CommandResult::Refused(_)) => {
                    tracing::warn!(tenant = %args.tenant, service = %args.service, result = ?written.result, "service report refused");
                }
                Ok(_) if finalize => {
                    tracing::info!(tenant = %args.tenant, service = %args.service, "deleted service finalized");
                }
                Ok(_) => {}
                Err(error) => {
                    failed = true;
                    tracing::warn!(tenant = %args.tenant, service = %args.service, %error, "service report not committed");
                }
            }
        }
        let result = if failed {
            "failed"
        } else if acted || finalize || switch {
            "acted"
        } else {
            "idle"
        };
        args.metrics.reconciles.with_label_values(&[result]).inc();
        args.metrics
            .reconcile_seconds
            .observe(started.elapsed().as_secs_f64());
        Ok(true)
    }
}

impl Actor for ServiceActor {
    type Msg = ServiceMsg;
    type State = ServiceState;
    type Arguments = ServiceArgs;

    async fn pre_start(
        &self,
        myself: ActorRef<ServiceMsg>,
        args: ServiceArgs,
    ) -> Result<ServiceState, ActorProcessingErr> {
        // Spread the passes of actors started together over one interval.
        let first = phase(&args.uid, args.config.interval);
        myself.send_after(first, || ServiceMsg::Tick);
        args.metrics.actors.inc();
        Ok(ServiceState {
            args,
            quiet: None,
            sent: None,
            refused: None,
            failures: 0,
            retry_at: None,
            failed_at: None,
            in_backlog: false,
            #[cfg(feature = "planted-stale-service")]
            first_read: None,
        })
    }

    async fn post_stop(
        &self,
        _myself: ActorRef<ServiceMsg>,
        state: &mut ServiceState,
    ) -> Result<(), ActorProcessingErr> {
        Self::set_backlog(state, false);
        state.args.metrics.actors.dec();
        Ok(())
    }

    async fn handle(
        &self,
        myself: ActorRef<ServiceMsg>,
        message: ServiceMsg,
        state: &mut ServiceState,
    ) -> Result<(), ActorProcessingErr> {
        match message {
            ServiceMsg::Tick => {
                let alive = match Self::changed_inputs(state) {
                    Err(()) => true,
                    Ok(inputs) => {
                        // Every line a pass logs names the service, the leader and its term.
                        let span = tracing::info_span!(
                            "reconcile",
                            node = state.args.context.raft.id(),
                            term = state.args.context.term,
                            tenant = %state.args.tenant,
                            service = %state.args.service,
                        );
                        // Boxed: a task's allocation is as large as the largest state its
                        // future can be in, and a pass awaits a driver call and a Raft write.
                        // Inline, those made each of 10,000 idle actors hold about 10 KiB
                        // (heaptrack, docs/BENCHMARKS.md); boxed, a pass holds it only
                        // while it runs.
                        Box::pin(tracing::Instrument::instrument(Self::tick(state, inputs), span)).await?
                    }
                };
                if alive {
                    let next = state.retry_at.map_or(state.args.config.interval, |at| {
                        at.saturating_duration_since(Instant::now())
                            .max(Duration::from_millis(10))
                            .min(state.args.config.interval)
                    });
                    myself.send_after(next, || ServiceMsg::Tick);
                } else {
                    myself.stop(Some("service gone".into()));
                }
                Ok(())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set() -> SetInstances {
        SetInstances::from(Vec::new())
    }

    #[test]
    fn a_pass_is_skipped_only_when_every_input_is_the_same() {
        let shared = set();
        let inputs = |version, observed| PassInputs { version, observed };
        let quiet = inputs(7, Some((true, Some(shared.clone()), false, false)));
        // The same service version and the very same instances (shared, not equal): skipped.
        assert!(inputs(7, Some((true, Some(shared.clone()), false, false))).same_as(&quiet));
        // Anything else runs the pass: a newer version, another observation of the set (even
        // with equal contents), the set gone or come, the agent silent, a send or a failed send
        // the observation predates, no observation at all.
        let differ = [
            inputs(8, Some((true, Some(shared.clone()), false, false))),
            inputs(7, Some((true, Some(set()), false, false))),
            inputs(7, Some((true, None, false, false))),
            inputs(7, Some((false, Some(shared.clone()), false, false))),
            inputs(7, Some((true, Some(shared.clone()), true, false))),
            inputs(7, Some((true, Some(shared.clone()), false, true))),
            inputs(7, None),
        ];
        for (at, other) in differ.iter().enumerate() {
            assert!(!other.same_as(&quiet), "case {at}");
        }
        assert!(inputs(7, None).same_as(&inputs(7, None)));
    }
}
