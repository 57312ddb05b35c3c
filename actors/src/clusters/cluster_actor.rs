//! One cluster's actor: raises its agent's fence to this term first, then probes it, sends the
//! pinned desired sets and restart requests (fenced by the term and this leader's id), removes
//! sets nothing owns any more, publishes what it saw to the service actors ([`Observations`]),
//! and commits what it observed (state transitions, facts, instance counts, refused sets,
//! restarts done) through Raft, only when something changed. Services' sets are their service
//! actors' to send.
//!
//! Every change names this cluster object, and an agent that another registered cluster drives
//! is sent nothing ([`super::identity`]): the cluster is `NOTREADY`, saying whose it is.
//!
//! The offline budget counts from the agent's last answer, and the judgement is taken when it
//! runs out: a probe still in flight then is cut short, and after a failed probe the next one
//! is due no later than the budget's end. Only a change being carried out (a desired set, a
//! restart: the agent answers once removed instances have stopped) is waited for past it.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use drover_model::cluster::agent_api::{
    Confinement, Fence, InstanceId, InstanceSpec, InstanceState, Inventory, NodeFacts, SetName,
};
use drover_model::cluster::identity::AgentId;
use drover_model::cluster::{
    ids_digest, ClusterCommand, ClusterFacts, ClusterObservation, ClusterRef, ClusterState, InstanceCounts,
    SetObservation, SetsChange,
};
use drover_model::scheduling::metrics::MetricReadings;
use drover_model::{Command, CommandResult, Proposal};
use ractor::{Actor, ActorProcessingErr, ActorRef};

use super::driver::{Driver, DriverError};
use super::identity::{ownership, Ownership};
use super::lifecycle::{next_state, with_metrics, ProbeOutcome};
use super::metrics_reader::read_metrics;
use super::observed::{by_set, Observation, Observations, ObservedSets};
use super::plan::{desired_sets, plan_sets};
use super::usage;
use super::{ClusterActorMetrics, ClusterActorsConfig, DriverFactory};
use crate::root::LeaderContext;
use drover_model::cluster::AgentAccess;

/// Messages of a cluster actor.
#[derive(Debug)]
pub enum ClusterMsg {
    /// Probe, push, observe.
    Tick,
}

/// Arguments of a cluster actor.
pub struct ClusterArgs {
    pub(crate) cluster: ClusterRef,
    pub(crate) uid: String,
    pub(crate) context: LeaderContext,
    pub(crate) config: Arc<ClusterActorsConfig>,
    pub(crate) metrics: ClusterActorMetrics,
    pub(crate) drivers: DriverFactory,
    pub(crate) observations: Observations,
}

/// State of a cluster actor.
pub struct ClusterActorState {
    args: ClusterArgs,
    /// The driver and the endpoint and token it was built for.
    driver: Option<(AgentAccess, Arc<dyn Driver>)>,
    /// When the agent last answered (when this actor started, until it answers).
    last_answer: Instant,
    /// Whether the state last decided is `OFFLINE` (the budget is spent).
    offline: bool,
    /// Why the last probe that failed on its own failed (a refused certificate, a refused
    /// connection): said again when the budget cuts a later probe short.
    last_failure: Option<String>,
    /// The id of the agent that last answered, when it has one.
    agent_id: Option<AgentId>,
    /// Whether the agent accepted this term's fence.
    fenced: bool,
    /// Whether every pinned set was sent in this term.
    sent_all: bool,
    /// Reads metrics from their providers.
    http: crate::egress::EgressClient,
    /// The metrics being read, off the probe's path (a slow provider never delays a probe).
    metrics_task: Option<tokio::task::JoinHandle<MetricReadings>>,
    /// When the metrics are read next.
    metrics_due: Instant,
    /// The last inventory read and what was derived from it, kept while the agent's generation
    /// says nothing changed (then it is not read, decoded or walked again).
    last: Option<LastInventory>,
    /// When this actor last committed the cluster's measured usage ([`usage::to_commit`]).
    used_committed_at: Option<Instant>,
}

/// What the actor derived from the last inventory read. The inventory itself is not kept: its
/// instances are moved into the sets published to the service actors, so the leader holds each
/// instance's status once.
struct LastInventory {
    /// The agent that answered, and its generation then.
    agent: String,
    generation: Option<u64>,
    /// The instances by set, as published to the service actors (the next inventory's
    /// unchanged sets share these).
    published: Arc<ObservedSets>,
    /// What each set shows, as committed (an unchanged set's is not derived again).
    sets: BTreeMap<SetName, SetObservation>,
    counts: InstanceCounts,
}

impl LastInventory {
    /// What `inventory` shows; the sets that did not change since `previous` share its
    /// instances and observations.
    fn of(inventory: Inventory, previous: Option<&LastInventory>) -> Self {
        // Its instances carry no usage (asked with `usage=false`, and the answers to changes
        // have none): measured afresh at every read, usage would make every set differ from the
        // last read and wake every service actor.
        let empty = ObservedSets::new();
        let published = by_set(inventory.instances, previous.map_or(&empty, |p| &p.published));
        LastInventory {
            agent: inventory.agent,
            generation: inventory.generation,
            sets: set_observations(&published, previous),
            counts: counts(&published),
            published: Arc::new(published),
        }
    }

    /// Whether `facts` were answered at the generation this inventory was.
    fn still_exact(&self, facts: &NodeFacts) -> bool {
        facts.generation.is_some() && self.generation == facts.generation && self.agent == facts.agent
    }
}

/// What the actor reads of its committed cluster.
struct Committed {
    endpoint: String,
    token: String,
    ca: Option<String>,
    draining: bool,
    state: ClusterState,
    facts: Option<ClusterFacts>,
    instances: InstanceCounts,
    set_errors: BTreeMap<SetName, String>,
    sets: BTreeMap<SetName, SetObservation>,
    metrics: MetricReadings,
    /// Pinned sets.
    desired: BTreeMap<SetName, Vec<InstanceSpec>>,
    restarts: Vec<(InstanceId, u64)>,
}

/// What a probe found.
enum Probed {
    /// The agent answered and this cluster drives it: its facts, and when the inventory (now
    /// the actor's `last`) was asked for.
    Driven { facts: Box<NodeFacts>, read_at: Instant },
    /// The agent answered, but another cluster drives it: nothing is sent to it.
    NotDriven { reason: String },
}

/// What one pass of sending did.
#[derive(Default)]
struct Sent {
    /// Something was sent, so the inventory is read again.
    changed: bool,
    /// Why the agent refused sets.
    set_errors: BTreeMap<SetName, String>,
    /// Restart requests carried out.
    restarted: Vec<(InstanceId, u64)>,
}

/// The cluster actor.
pub struct ClusterActor;

fn counts(sets: &ObservedSets) -> InstanceCounts {
    let mut counts = InstanceCounts::default();
    for instance in sets.values().flat_map(|set| set.iter()) {
        match instance.state {
            InstanceState::Starting => counts.starting = counts.starting.saturating_add(1),
            InstanceState::Running => counts.running = counts.running.saturating_add(1),
            InstanceState::Exited => counts.exited = counts.exited.saturating_add(1),
            InstanceState::Failed => counts.failed = counts.failed.saturating_add(1),
        }
        counts.restarts = counts.restarts.saturating_add(u64::from(instance.restarts));
        counts.oom_kills = counts.oom_kills.saturating_add(u64::from(instance.oom_kills));
    }
    counts
}

/// Most characters of an agent's text (an error, its version) that go into the replicated
/// state: an agent is outside the control plane, and a megabyte of it must not be replicated.
const MAX_AGENT_TEXT: usize = 512;

/// Most sets of one agent whose counts are replicated.
const MAX_OBSERVED_SETS: usize = 10_000;

/// `text` cut to [`MAX_AGENT_TEXT`] characters.
fn bounded(text: &str) -> String {
    super::driver::bounded(text, MAX_AGENT_TEXT)
}

/// Each set's instances, running ones and the digest of the running ones' ids; a set that
/// shares its instances with `previous` keeps the observation derived from them there.
fn set_observations(
    sets: &ObservedSets,
    previous: Option<&LastInventory>,
) -> BTreeMap<SetName, SetObservation> {
    sets.iter()
        .take(MAX_OBSERVED_SETS)
        .map(|(set, instances)| {
            let kept = previous
                .filter(|p| {
                    p.published
                        .get(set)
                        .is_some_and(|before| Arc::ptr_eq(before, instances))
                })
                .and_then(|p| p.sets.get(set).copied());
            let observation = kept.unwrap_or_else(|| {
                let running: Vec<&InstanceId> = instances
                    .iter()
                    .filter(|i| i.state == InstanceState::Running)
                    .map(|i| &i.id)
                    .collect();
                SetObservation {
                    total: u32::try_from(instances.len()).unwrap_or(u32::MAX),
                    running: u32::try_from(running.len()).unwrap_or(u32::MAX),
                    digest: ids_digest(running),
                }
            });
            (set.clone(), observation)
        })
        .collect()
}

fn replicated_facts(facts: &NodeFacts) -> ClusterFacts {
    ClusterFacts {
        nodes: facts.nodes,
        capacity: facts.capacity,
        free: facts.free,
        executor: bounded(&facts.executor),
        version: bounded(&facts.version),
        used: facts.used,
        confinement: facts.confinement.clone().map(bounded_confinement),
    }
}

/// `confinement` with its reason cut to [`MAX_AGENT_TEXT`].
fn bounded_confinement(confinement: Confinement) -> Confinement {
    match confinement {
        Confinement::Unconfined { reason } => Confinement::Unconfined {
            reason: bounded(&reason),
        },
        other => other,
    }
}

impl ClusterActor {
    fn committed(state: &ClusterActorState) -> Option<Committed> {
        let args = &state.args;
        args.context.raft.local_read(|s| {
            let cluster = s
                .platform()
                .cluster(&args.cluster)
                .filter(|c| c.uid == args.uid)?;
            Some(Committed {
                endpoint: cluster.endpoint.clone(),
                token: cluster.join_token.clone(),
                ca: cluster.ca.clone(),
                draining: cluster.draining,
                state: cluster.status.state,
                facts: cluster.status.facts.clone(),
                instances: cluster.status.instances,
                set_errors: cluster.status.set_errors.clone(),
                sets: cluster.status.sets.clone(),
                metrics: cluster.status.metrics.clone(),
                desired: desired_sets(cluster),
                restarts: cluster
                    .pending_restarts
                    .iter()
                    .map(|(id, at)| (id.clone(), *at))
                    .collect(),
            })
        })
    }

    fn driver(state: &mut ClusterActorState, committed: &Committed) -> Result<Arc<dyn Driver>, DriverError> {
        let access = AgentAccess {
            endpoint: committed.endpoint.clone(),
            token: committed.token.clone(),
            ca: committed.ca.clone(),
        };
        if let Some((cached, driver)) = &state.driver {
            if *cached == access {
                return Ok(driver.clone());
            }
        }
        let built = (state.args.drivers)(&access)?;
        // Every change names this cluster object, so an agent bound to another refuses it.
        let driver = built.for_cluster(&state.args.uid).unwrap_or(built);
        state.driver = Some((access, driver.clone()));
        Ok(driver)
    }

    fn fence(args: &ClusterArgs) -> Fence {
        args.context.fence()
    }

    /// The registered cluster whose uid is `uid`, if any.
    fn holder(args: &ClusterArgs, uid: &str) -> Option<ClusterRef> {
        args.context.raft.local_read(|s| {
            s.platform()
                .clusters()
                .find(|(_, stored)| stored.uid == uid)
                .map(|(cluster, _)| cluster)
        })
    }

    /// Facts and who answers; then, when this cluster drives the agent, its inventory and when
    /// that was asked for. The term's first probe raises the agent's fence (taking the agent
    /// over, when it is bound to a cluster object registered no more) and takes the inventory
    /// from that answer, so nothing a deposed leader sends afterwards can change what this
    /// leader acts on. Records when the agent answered.
    async fn probe(state: &mut ClusterActorState, driver: &dyn Driver) -> Result<Probed, DriverError> {
        let asked = Instant::now();
        let (facts, identity) = driver.identified_facts().await?;
        let mut read_at = Instant::now();
        state.last_answer = read_at;
        if let Some(identity) = &identity {
            if let Some(seen) = state.agent_id.as_ref().filter(|seen| **seen != identity.agent_id) {
                // Another agent answers at the endpoint: it has not heard this leader's fence
                // and runs none of what was sent.
                tracing::warn!(cluster = %state.args.cluster, from = %seen, to = %identity.agent_id, "another agent answers at the cluster's endpoint");
                state.fenced = false;
                state.sent_all = false;
                state.last = None;
            }
            state.agent_id = Some(identity.agent_id.clone());
        }
        let args = &state.args;
        let holder = identity
            .as_ref()
            .and_then(|i| i.cluster_uid.as_deref())
            .filter(|uid| *uid != args.uid)
            .and_then(|uid| Self::holder(args, uid));
        let fence = Self::fence(args);
        let changed = match ownership(&args.cluster, &args.uid, identity.as_ref(), holder.as_ref()) {
            Ownership::Refuse { reason } => {
                state.fenced = false;
                return Ok(Probed::NotDriven { reason });
            }
            Ownership::TakeOver { from } => {
                let taken = driver.take_over(fence, &from).await;
                if taken.is_ok() {
                    tracing::info!(cluster = %args.cluster, %from, "took the agent over from a cluster object registered no more");
                    state.sent_all = false;
                }
                Some(taken)
            }
            Ownership::Drive if state.fenced => None,
            Ownership::Drive => Some(driver.raise_fence(fence).await),
        };
        let exact = state.last.as_ref().is_some_and(|last| last.still_exact(&facts));
        let inventory = match (changed, exact) {
            // Nothing the inventory shows changed since the one kept was answered: it is what
            // the agent held when the facts were asked for (so anything answered before then
            // is in it).
            (None, true) => {
                read_at = asked;
                None
            }
            (None, false) => Some(driver.inventory().await?),
            (Some(Ok(inventory)), _) => {
                state.fenced = true;
                Some(inventory)
            }
            // Another cluster object bound the agent first (or took it over first).
            (Some(Err(DriverError::Bound(message))), _) => {
                return Ok(Probed::NotDriven {
                    reason: format!("the agent refuses this cluster: {message}"),
                })
            }
            (Some(Err(error)), _) => return Err(error),
        };
        if let Some(inventory) = inventory {
            state.last = Some(LastInventory::of(inventory, state.last.as_ref()));
        }
        state.last_answer = Instant::now();
        Ok(Probed::Driven {
            facts: Box::new(facts),
            read_at,
        })
    }

    /// [`Self::probe`], cut short when the offline budget runs out while it is in flight, so
    /// the cluster is judged `OFFLINE` when the agent has not answered for the budget, not a
    /// probe timeout later. Once judged, probes take their own time.
    async fn probe_within_budget(
        state: &mut ClusterActorState,
        driver: &dyn Driver,
    ) -> Result<Probed, DriverError> {
        if state.offline {
            return Self::probe(state, driver).await;
        }
        let budget = state.args.config.offline_after;
        let deadline = (state.last_answer + budget).max(Instant::now());
        match tokio::time::timeout_at(deadline, Self::probe(state, driver)).await {
            Ok(Err(error)) => {
                state.last_failure = Some(error.to_string());
                Err(error)
            }
            Ok(probed) => {
                state.last_failure = None;
                probed
            }
            Err(_) => Err(DriverError::Unreachable(match &state.last_failure {
                Some(before) => format!(
                    "timed out: no answer within the offline budget ({budget:?}); the probe before: {before}"
                ),
                None => format!("timed out: no answer within the offline budget ({budget:?})"),
            })),
        }
    }

    /// How long until the next probe: the probe interval, or less when the offline budget runs
    /// out sooner (the agent is judged then, not an interval later).
    fn next_probe_in(state: &ClusterActorState) -> Duration {
        let interval = state.args.config.probe_interval;
        if state.offline {
            return interval;
        }
        let deadline = state.last_answer + state.args.config.offline_after;
        interval.min(deadline.saturating_duration_since(Instant::now()))
    }

    /// Which sets of the inventory that no pinned set names belong to services placed on this
    /// cluster, read after the inventory: a set a service actor sent is then known to belong
    /// to a service.
    fn service_sets(args: &ClusterArgs, committed: &Committed, observed: &ObservedSets) -> BTreeSet<SetName> {
        let unpinned: BTreeSet<&SetName> = observed
            .keys()
            .filter(|set| !committed.desired.contains_key(*set))
            .collect();
        args.context
            .raft
            .local_read(|s| s.platform().service_sets_among(&args.cluster, unpinned))
    }

    /// Sends the pinned sets that differ (all of them on the term's first pass) and removes the
    /// sets nothing owns, then the requested restarts, all under this leader's fence.
    async fn send(
        state: &mut ClusterActorState,
        driver: &dyn Driver,
        committed: &Committed,
        observed: &ObservedSets,
    ) -> Sent {
        let args = &state.args;
        let fence = Self::fence(args);
        let services = Self::service_sets(args, committed, observed);
        let pushes = plan_sets(&committed.desired, observed, !state.sent_all, &services);
        let mut sent = Sent {
            changed: !pushes.is_empty() || !committed.restarts.is_empty(),
            ..Sent::default()
        };
        let mut all_sent = true;
        for push in pushes {
            let result = driver.apply_set(fence, &push.set, push.instances).await;
            args.metrics
                .driver_calls
                .with_label_values(&["apply_set", DriverError::outcome(&result)])
                .inc();
            match result {
                Ok(_) => {}
                Err(DriverError::Refused { message, .. }) => {
                    // The agent will refuse it again until the set changes: say why on the
                    // cluster, and log it once rather than every probe. It did hear this
                    // leader's fence, so the term's first pass counts as done.
                    if committed.set_errors.get(&push.set) != Some(&message) {
                        tracing::warn!(cluster = %args.cluster, set = %push.set, %message, "the agent refuses a desired set");
                    }
                    sent.set_errors.insert(push.set, bounded(&message));
                }
                Err(error) => {
                    all_sent = false;
                    tracing::warn!(cluster = %args.cluster, set = %push.set, %error, "desired set not applied");
                    if matches!(error, DriverError::Fenced(_) | DriverError::Bound(_)) {
                        // A newer leader reached the agent (this tree is about to be stopped),
                        // or another cluster object drives it (the next probe says which).
                        return sent;
                    }
                }
            }
        }
        if all_sent {
            state.sent_all = true;
        }
        for (instance, requested) in &committed.restarts {
            let result = driver.restart(fence, instance).await;
            args.metrics
                .driver_calls
                .with_label_values(&["restart", DriverError::outcome(&result)])
                .inc();
            match result {
                // An instance the agent does not run (yet) has nothing to restart.
                Ok(()) | Err(DriverError::NotFound(_)) => sent.restarted.push((instance.clone(), *requested)),
                Err(error) => {
                    tracing::warn!(cluster = %args.cluster, %instance, %error, "instance not restarted");
                    if matches!(error, DriverError::Fenced(_) | DriverError::Bound(_)) {
                        return sent;
                    }
                }
            }
        }
        sent
    }

    /// The readings of the metrics read since the last pass, if a reading finished; starts the
    /// next reading when it is due. A cluster scored on no metric reads nothing (and drops
    /// readings of metrics it no longer lists).
    async fn metrics(state: &mut ClusterActorState) -> Option<MetricReadings> {
        if state
            .metrics_task
            .as_ref()
            .is_some_and(|task| !task.is_finished())
        {
            return None;
        }
        let mut fresh = match state.metrics_task.take() {
            Some(task) => task.await.ok(),
            None => None,
        };
        let now = Instant::now();
        if now >= state.metrics_due {
            state.metrics_due = now + state.args.config.metrics_interval;
            let args = &state.args;
            let sources = args
                .context
                .raft
                .local_read(|s| s.platform().cluster_metric_sources(&args.cluster));
            if sources.is_empty() {
                fresh.get_or_insert_with(MetricReadings::default);
            } else {
                state.metrics_task = Some(tokio::spawn(read_metrics(state.http.clone(), sources)));
            }
        }
        fresh
    }

    async fn tick(state: &mut ClusterActorState) -> Result<bool, ActorProcessingErr> {
        let Some(committed) = Self::committed(state) else {
            return Ok(false);
        };
        let metrics = Self::metrics(state).await;
        let started = Instant::now();
        let mut sent = Sent::default();
        let probed = match Self::driver(state, &committed) {
            Ok(driver) => match Self::probe_within_budget(state, driver.as_ref()).await {
                Ok(Probed::Driven { facts, mut read_at }) => {
                    let observed = state
                        .last
                        .as_ref()
                        .map(|last| last.published.clone())
                        .unwrap_or_default();
                    sent = Self::send(state, driver.as_ref(), &committed, &observed).await;
                    if sent.changed {
                        let again = Instant::now();
                        if let Ok(after) = driver.inventory().await {
                            state.last = Some(LastInventory::of(after, state.last.as_ref()));
                            read_at = again;
                            state.last_answer = Instant::now();
                        }
                    }
                    let published = state
                        .last
                        .as_ref()
                        .map(|last| last.published.clone())
                        .unwrap_or_default();
                    let observation = Observation {
                        term: state.args.context.term,
                        uid: state.args.uid.clone(),
                        read_at,
                        reachable: true,
                        sets: published,
                        driver: driver.clone(),
                    };
                    state.args.observations.publish(&state.args.cluster, observation);
                    Ok(Probed::Driven { facts, read_at })
                }
                // Not reached, or driven by another cluster: the service actors must not send
                // this cluster's sets to it either.
                other => {
                    let args = &state.args;
                    args.observations.unreachable(
                        &args.cluster,
                        args.context.term,
                        &args.uid,
                        driver.clone(),
                    );
                    if let Ok(Probed::NotDriven { reason }) = &other {
                        if committed.state != ClusterState::NotReady {
                            tracing::warn!(cluster = %args.cluster, %reason, "the agent is driven by another cluster; sending it nothing");
                        }
                    }
                    other
                }
            },
            Err(error) => Err(error),
        };
        state
            .args
            .metrics
            .probe_seconds
            .observe(started.elapsed().as_secs_f64());
        let driven = matches!(probed, Ok(Probed::Driven { .. }));
        // Only the sets that differ from what is committed are committed.
        let sets_changed = match &probed {
            Ok(Probed::Driven { .. }) => {
                let observed = state.last.as_ref().map(|last| &last.sets);
                observed
                    .map(|sets| SetsChange::between(&committed.sets, sets))
                    .filter(|change| !change.is_empty())
            }
            _ => None,
        };
        let (outcome, facts, instances) = match probed {
            Ok(Probed::Driven { facts, .. }) => {
                let outcome = ProbeOutcome::Answered {
                    pressure: facts.pressure.clone(),
                };
                let instances = state.last.as_ref().map(|last| last.counts);
                let mut facts = replicated_facts(&facts);
                facts.used = usage::to_commit(
                    committed.facts.as_ref().and_then(|f| f.used),
                    facts.used,
                    facts.capacity,
                    state.used_committed_at.map(|at| at.elapsed()),
                );
                (outcome, Some(Box::new(facts)), instances)
            }
            Ok(Probed::NotDriven { reason }) => (ProbeOutcome::NotDriven { reason }, None, None),
            Err(error) => (
                ProbeOutcome::Failed {
                    error: error.to_string(),
                },
                None,
                None,
            ),
        };
        let silent_for = state.last_answer.elapsed();
        let failing_metrics = metrics.as_ref().unwrap_or(&committed.metrics).why_failing();
        let (next, reason) = with_metrics(
            committed.state,
            next_state(
                committed.state,
                committed.draining,
                &outcome,
                silent_for,
                state.args.config.offline_after,
            ),
            failing_metrics,
        );
        state.offline = next == ClusterState::Offline;
        let set_errors = driven.then_some(sent.set_errors);
        let unchanged = next == committed.state
            && facts.as_ref().is_none_or(|f| committed.facts.as_ref() == Some(f))
            && instances.is_none_or(|i| i == committed.instances)
            && set_errors.as_ref().is_none_or(|e| *e == committed.set_errors)
            && sets_changed.is_none()
            && metrics.as_ref().is_none_or(|m| *m == committed.metrics)
            && sent.restarted.is_empty();
        if unchanged {
            return Ok(true);
        }
        let observation = ClusterObservation {
            cluster: state.args.cluster.clone(),
            uid: state.args.uid.clone(),
            state: next,
            reason: bounded(&reason),
            facts,
            instances,
            set_errors,
            sets: None,
            sets_changed,
            restarted: sent.restarted,
            metrics,
        };
        let used = observation.facts.as_ref().map(|f| f.used);
        let used_changed = used.is_some_and(|used| used != committed.facts.as_ref().and_then(|f| f.used));
        let proposal = Proposal::new(Command::Cluster(ClusterCommand::Observe(observation)));
        match state.args.context.raft.write(proposal).await {
            Ok(written) if !matches!(written.result, CommandResult::Refused(_)) => {
                if used_changed {
                    state.used_committed_at = Some(Instant::now());
                }
                if next != committed.state {
                    state
                        .args
                        .metrics
                        .transitions
                        .with_label_values(&[committed.state.as_str(), next.as_str()])
                        .inc();
                    tracing::info!(cluster = %state.args.cluster, from = committed.state.as_str(), to = next.as_str(), %reason, "cluster state changed");
                }
            }
            Ok(written) => {
                tracing::warn!(cluster = %state.args.cluster, result = ?written.result, "observation refused")
            }
            Err(error) => tracing::warn!(cluster = %state.args.cluster, %error, "observation not committed"),
        }
        Ok(true)
    }
}

impl Actor for ClusterActor {
    type Msg = ClusterMsg;
    type State = ClusterActorState;
    type Arguments = ClusterArgs;

    async fn pre_start(
        &self,
        myself: ActorRef<ClusterMsg>,
        args: ClusterArgs,
    ) -> Result<ClusterActorState, ActorProcessingErr> {
        myself.send_message(ClusterMsg::Tick)?;
        // Providers are called within the operator's egress policy, with no proxy from the
        // environment.
        let http = crate::egress::EgressClient::new(
            args.config.egress.clone(),
            crate::egress::Redirects::WithinPolicy,
        )
        .map_err(|e| format!("no HTTP client for metrics: {e}"))?;
        Ok(ClusterActorState {
            args,
            driver: None,
            last_answer: Instant::now(),
            last_failure: None,
            offline: false,
            agent_id: None,
            fenced: false,
            sent_all: false,
            http,
            metrics_task: None,
            metrics_due: Instant::now(),
            last: None,
            used_committed_at: None,
        })
    }

    async fn post_stop(
        &self,
        _myself: ActorRef<ClusterMsg>,
        state: &mut ClusterActorState,
    ) -> Result<(), ActorProcessingErr> {
        state
            .args
            .observations
            .forget(&state.args.cluster, &state.args.uid);
        if let Some(task) = state.metrics_task.take() {
            task.abort();
        }
        Ok(())
    }

    async fn handle(
        &self,
        myself: ActorRef<ClusterMsg>,
        message: ClusterMsg,
        state: &mut ClusterActorState,
    ) -> Result<(), ActorProcessingErr> {
        match message {
            ClusterMsg::Tick => {
                // Every line a probe logs names the cluster, the leader and its term.
                let span = tracing::info_span!(
                    "probe",
                    node = state.args.context.raft.id(),
                    term = state.args.context.term,
                    cluster = %state.args.cluster,
                );
                let alive = tracing::Instrument::instrument(Self::tick(state), span).await?;
                if alive {
                    // The next probe is timed from the end of this one, so a slow agent never
                    // piles up ticks; it comes sooner when the offline budget runs out sooner.
                    myself.send_after(Self::next_probe_in(state), || ClusterMsg::Tick);
                } else {
                    myself.stop(Some("cluster deregistered".into()));
                }
                Ok(())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_agents_text_is_cut_before_it_is_replicated() {
        assert_eq!(bounded("short"), "short");
        let long = "é".repeat(MAX_AGENT_TEXT + 10);
        let cut = bounded(&long);
        assert_eq!(cut.chars().count(), MAX_AGENT_TEXT + 1);
        assert!(cut.ends_with('…'));
    }

    fn status(id: &str, state: InstanceState) -> drover_model::cluster::agent_api::InstanceStatus {
        let id = InstanceId::parse(id).unwrap();
        drover_model::cluster::agent_api::InstanceStatus {
            set: SetName::parse(id.as_str().split('.').next().unwrap()).unwrap(),
            id,
            state,
            exit_code: None,
            restarts: 1,
            started_at: None,
            health: drover_model::cluster::agent_api::Health::Unknown,
            pid: None,
            resources: Default::default(),
            reason: None,
            oom_kills: 0,
            pod: None,
            usage: None,
        }
    }

    fn inventory(
        instances: Vec<drover_model::cluster::agent_api::InstanceStatus>,
        generation: u64,
    ) -> Inventory {
        Inventory {
            agent: "a".into(),
            fence: Fence::default(),
            instances,
            generation: Some(generation),
        }
    }

    #[test]
    fn an_inventory_is_derived_again_only_for_the_sets_that_changed() {
        use InstanceState::{Running, Starting};
        let first = LastInventory::of(
            inventory(
                vec![
                    status("db.main.r1.0", Running),
                    status("web.main.r1.0", Running),
                    status("web.main.r1.1", Starting),
                ],
                1,
            ),
            None,
        );
        let web = set("web");
        assert_eq!(first.published[&web].len(), 2);
        assert_eq!(
            first.sets[&web],
            SetObservation {
                total: 2,
                running: 1,
                digest: ids_digest([&InstanceId::parse("web.main.r1.0").unwrap()]),
            }
        );
        assert_eq!(
            (first.counts.running, first.counts.starting, first.counts.restarts),
            (2, 1, 3)
        );
        // web's second instance runs now; db is unchanged.
        let second = LastInventory::of(
            inventory(
                vec![
                    status("db.main.r1.0", Running),
                    status("web.main.r1.0", Running),
                    status("web.main.r1.1", Running),
                ],
                2,
            ),
            Some(&first),
        );
        assert!(Arc::ptr_eq(
            &first.published[&set("db")],
            &second.published[&set("db")]
        ));
        assert!(!Arc::ptr_eq(&first.published[&web], &second.published[&web]));
        assert_eq!((second.sets[&web].total, second.sets[&web].running), (2, 2));
        assert_eq!(second.sets[&set("db")], first.sets[&set("db")]);
        assert_eq!((second.counts.running, second.counts.starting), (3, 0));
        // A set gone from the inventory is gone from what is derived.
        let third = LastInventory::of(
            inventory(vec![status("web.main.r1.0", Running)], 3),
            Some(&second),
        );
        assert_eq!(third.sets.keys().collect::<Vec<_>>(), [&web]);
        assert_eq!(third.generation, Some(3));
    }

    fn set(name: &str) -> SetName {
        SetName::parse(name).unwrap()
    }
}
