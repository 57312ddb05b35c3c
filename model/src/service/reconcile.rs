//! What a service actor does next, as a pure function of the service's committed state and what
//! its cluster's agent reports of the service's set ([`plan`]), and the status it reports
//! ([`ReconcileStatus`]), committed through Raft only when it changes (a
//! [`ServiceReport`]). Events in Axebow's shape are made from those reports by the apply, so
//! every node records the same ones.
//!
//! The decisions: a service whose revision is accepted and that is placed gets its roles rolled
//! ([`roll`]) against the observed instances, and the whole desired set is sent when its ids
//! differ from what runs; a deleted service gets an empty set until the agent reports nothing
//! left, then it is finalized (its object goes); nothing is sent to a cluster that did not
//! answer, and a service on such a cluster says so. A desired set the agent refused
//! ([`Refusal`]) is refused again until something changes, so while the plan wants that same
//! set the service is `FAILED` and says the agent's words (the actor keeps trying, slowly: room
//! may free up).

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::rollout::{roll, RoleTarget};
use crate::cluster::agent_api::{EndReason, InstanceId, InstanceSpec, InstanceState, InstanceStatus};
use crate::cluster::ClusterRef;

/// Where a service's reconciliation stands.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Phase {
    /// Not deployable yet: no accepted revision, or no cluster to run on.
    #[default]
    Waiting,
    /// Instances are being started, replaced or removed.
    Progressing,
    /// Exactly the accepted revision's instances run, all of them ready.
    Running,
    /// Its cluster does not answer: what runs there is unknown.
    Unreachable,
    /// Deleted; its instances are being removed (a finalizer), then the object goes.
    Deleting,
    /// Its cluster's agent refuses the desired set (no room, a spec it cannot run): nothing
    /// changes there until the deployment, the cluster or what else runs there does.
    Failed,
}

impl Phase {
    /// The name events give it as their `reason`.
    pub fn event_reason(self) -> &'static str {
        match self {
            Phase::Waiting => "Waiting",
            Phase::Progressing => "Progressing",
            Phase::Running => "Running",
            Phase::Unreachable => "Unreachable",
            Phase::Deleting => "Deleting",
            Phase::Failed => "Failed",
        }
    }
}

/// Instance counts of a rollout, from the agent's inventory.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct Progress {
    /// Instances the accepted revision wants.
    pub desired: u32,
    /// Of those, present on the cluster.
    pub updated: u32,
    /// Of those, running.
    pub ready: u32,
    /// Instances of older role revisions (or removed ordinals) still present.
    pub old: u32,
}

/// A service's reconciliation status, as its actor last committed it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct ReconcileStatus {
    /// Where it stands.
    pub phase: Phase,
    /// Why, in words.
    pub reason: String,
    /// The accepted revision it works towards.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revision: Option<u64>,
    /// Counts from the agent's inventory.
    #[serde(default)]
    pub progress: Progress,
    /// Why instances that should run do not, when the agent knows (an instance killed at its
    /// memory limit, one whose start failed): such a status is recorded as a `Warning` event
    /// named after it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alert: Option<EndReason>,
    /// The addresses of the service's running pods that have a network of their own, as their
    /// agent reports them: the accepted revision's first (sorted), then older ones still
    /// running. Where their container ports are reached.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub endpoints: Vec<String>,
}

/// What the service's cluster reports of its set.
#[derive(Debug, Clone, Copy)]
pub enum Seen<'a> {
    /// Nothing from this leader's term yet.
    NotYet,
    /// The cluster did not answer its last probe.
    Unreachable,
    /// The set's instances, observed after anything this actor sent.
    Instances(&'a [InstanceStatus]),
}

/// What the service should be, from the committed state.
#[derive(Debug, Clone, Copy)]
pub struct Wanted<'a> {
    /// Its accepted revision's roles (empty before the first acceptance).
    pub roles: &'a [RoleTarget],
    /// The accepted revision.
    pub revision: Option<u64>,
    /// The cluster it is placed on.
    pub cluster: Option<&'a ClusterRef>,
    /// Deleted, waiting for its instances to go.
    pub deleting: bool,
    /// Why no cluster takes it, when it is not placed (the scheduler's exclusions).
    pub unplaced: Option<&'a str>,
    /// `cluster` is the one it is moving to (its placement switches there once it runs).
    pub migrating: bool,
    /// It may not move (`migration: false`).
    pub pinned: bool,
}

/// The agent's answer to the last desired set the actor sent, when it was a refusal (a `4xx`
/// other than a fence's): the agent changed nothing, and refuses the same set again.
#[derive(Debug, Clone, Copy)]
pub struct Refusal<'a> {
    /// The cluster that refused.
    pub cluster: &'a ClusterRef,
    /// The set it refused.
    pub instances: &'a [InstanceSpec],
    /// Its HTTP status.
    pub status: u16,
    /// What it said.
    pub message: &'a str,
}

impl Refusal<'_> {
    /// Whether it refused exactly `desired` on `cluster` (in any order).
    fn of(&self, cluster: &ClusterRef, desired: &[InstanceSpec]) -> bool {
        fn by_id(specs: &[InstanceSpec]) -> BTreeMap<&InstanceId, &InstanceSpec> {
            specs.iter().map(|s| (&s.id, s)).collect()
        }
        self.cluster == cluster
            && self.instances.len() == desired.len()
            && by_id(self.instances) == by_id(desired)
    }
}

/// One step for the actor to carry out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Send this whole desired set to the service's cluster (empty: remove every instance).
    Apply(Vec<InstanceSpec>),
    /// Nothing of the deleted service runs any more: remove its object.
    Finalize,
    /// Every instance runs on the cluster it is moving to: make that its placement.
    Switch,
}

fn count(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// The counts of a rollout: `target` ids against what runs.
fn progress(roles: &[RoleTarget], observed: &[InstanceStatus]) -> Progress {
    let target: BTreeSet<&InstanceId> = roles
        .iter()
        .flat_map(|r| r.target.iter().map(|s| &s.id))
        .collect();
    let present = observed.iter().filter(|i| target.contains(&i.id));
    Progress {
        desired: count(target.len()),
        updated: count(present.clone().count()),
        ready: count(present.filter(|i| i.state == InstanceState::Running).count()),
        old: count(observed.iter().filter(|i| !target.contains(&i.id)).count()),
    }
}

/// The addresses of the running pods of `observed`, each once: those of `roles`' target ids
/// first (sorted), then those of older revisions still running (sorted) — during a rollout a
/// Service reaches old pods until a new one runs, as a Kubernetes Service's endpoints do.
fn endpoints(roles: &[RoleTarget], observed: &[InstanceStatus]) -> Vec<String> {
    let target: BTreeSet<&InstanceId> = roles
        .iter()
        .flat_map(|r| r.target.iter().map(|s| &s.id))
        .collect();
    let addresses = |new: bool| -> BTreeSet<String> {
        observed
            .iter()
            .filter(|i| target.contains(&i.id) == new && i.state == InstanceState::Running)
            .filter_map(|i| i.pod.as_ref()?.ip.clone())
            .collect()
    };
    let new = addresses(true);
    let old = addresses(false);
    new.iter().chain(old.difference(&new)).cloned().collect()
}

fn status(phase: Phase, reason: String, revision: Option<u64>, progress: Progress) -> ReconcileStatus {
    ReconcileStatus {
        phase,
        reason,
        revision,
        progress,
        alert: None,
        endpoints: Vec::new(),
    }
}

/// The instances of `observed` waiting to run again because the agent knows why they do not
/// (killed at their memory limit, or their start failed), in words, with the reason to alert
/// with (the first of those kinds found, in that order), when there are any.
fn alerting(observed: &[InstanceStatus]) -> Option<(EndReason, String)> {
    let waiting = |reason: EndReason| {
        observed
            .iter()
            .filter(move |i| i.reason == Some(reason) && i.state != InstanceState::Running)
    };
    let killed = waiting(EndReason::OomKilled).map(|i| {
        format!(
            "instance {} was killed at its memory limit of {} MiB (OOMKilled; {} kills, {} restarts)",
            i.id, i.resources.memory_mib, i.oom_kills, i.restarts
        )
    });
    let unstarted = waiting(EndReason::StartError).map(|i| {
        format!(
            "instance {} cannot start (StartError; {} restarts; its log says why)",
            i.id, i.restarts
        )
    });
    let words: Vec<String> = killed.chain(unstarted).collect();
    let alert = [EndReason::OomKilled, EndReason::StartError]
        .into_iter()
        .find(|reason| waiting(*reason).next().is_some())?;
    Some((alert, words.join("; ")))
}

/// The next actions and the status to report, from the committed service (`wanted`), what its
/// cluster reports of its set (`seen`) and the agent's refusal of the last set sent, if it
/// refused it.
pub fn plan(
    wanted: Wanted<'_>,
    seen: Seen<'_>,
    refused: Option<Refusal<'_>>,
) -> (Vec<Action>, ReconcileStatus) {
    let revision = wanted.revision;
    if wanted.deleting {
        let Some(cluster) = wanted.cluster else {
            let reason = "deleted; it never ran on a cluster".to_string();
            return (
                vec![Action::Finalize],
                status(Phase::Deleting, reason, revision, Progress::default()),
            );
        };
        return match seen {
            Seen::Instances([]) => {
                let reason = format!("deleted; nothing of it runs on cluster {cluster} any more");
                (
                    vec![Action::Finalize],
                    status(Phase::Deleting, reason, revision, Progress::default()),
                )
            }
            Seen::Instances(observed) => {
                let reason = format!(
                    "deleted; removing {} instances from cluster {cluster}",
                    observed.len()
                );
                let progress = Progress {
                    old: count(observed.len()),
                    ..Progress::default()
                };
                (
                    vec![Action::Apply(Vec::new())],
                    status(Phase::Deleting, reason, revision, progress),
                )
            }
            Seen::NotYet | Seen::Unreachable => {
                let reason = format!(
                    "deleted; cluster {cluster} does not answer, so its instances are removed (and the service goes) when it does"
                );
                (
                    Vec::new(),
                    status(Phase::Deleting, reason, revision, Progress::default()),
                )
            }
        };
    }
    let Some(number) = revision else {
        let reason = "no accepted revision yet".to_string();
        return (
            Vec::new(),
            status(Phase::Waiting, reason, None, Progress::default()),
        );
    };
    let Some(cluster) = wanted.cluster else {
        let reason = format!(
            "not placed: {}",
            wanted.unplaced.unwrap_or("waiting for the placement pass")
        );
        return (
            Vec::new(),
            status(Phase::Waiting, reason, revision, Progress::default()),
        );
    };
    let observed = match seen {
        Seen::Instances(observed) => observed,
        Seen::NotYet => {
            let reason = format!("waiting for cluster {cluster}'s first report in this term");
            return (
                Vec::new(),
                status(Phase::Waiting, reason, revision, Progress::default()),
            );
        }
        Seen::Unreachable => {
            let pinned = if wanted.pinned {
                "; it stays there (migration: false)"
            } else {
                ""
            };
            let reason = format!("cluster {cluster} does not answer; what runs there is unknown{pinned}");
            return (
                Vec::new(),
                status(Phase::Unreachable, reason, revision, Progress::default()),
            );
        }
    };
    let desired: Vec<InstanceSpec> = wanted
        .roles
        .iter()
        .flat_map(|role| roll(role, observed))
        .collect();
    let desired_ids: BTreeSet<&InstanceId> = desired.iter().map(|s| &s.id).collect();
    let observed_ids: BTreeSet<&InstanceId> = observed.iter().map(|i| &i.id).collect();
    let progress = progress(wanted.roles, observed);
    let endpoints = endpoints(wanted.roles, observed);
    let status = |phase, reason, revision, progress| ReconcileStatus {
        endpoints: endpoints.clone(),
        ..status(phase, reason, revision, progress)
    };
    let refusal = refused.filter(|r| desired_ids != observed_ids && r.of(cluster, &desired));
    let actions = if desired_ids == observed_ids {
        Vec::new()
    } else {
        vec![Action::Apply(desired)]
    };
    if let Some(refusal) = refusal {
        // Sent again after the actor's backoff (room may free up), but it stands until then.
        let reason = format!(
            "revision {number} on cluster {cluster}: the agent refuses the desired set ({}): {}; {} of {} updated, {} ready, {} old",
            refusal.status,
            refusal.message,
            progress.updated,
            progress.desired,
            progress.ready,
            progress.old
        );
        return (actions, status(Phase::Failed, reason, revision, progress));
    }
    let done =
        progress.updated == progress.desired && progress.ready == progress.desired && progress.old == 0;
    if done && actions.is_empty() && wanted.migrating {
        let reason = format!(
            "revision {number}: {} instances running on cluster {cluster}, which it moved to",
            progress.desired
        );
        return (
            vec![Action::Switch],
            status(Phase::Running, reason, revision, progress),
        );
    }
    if done && actions.is_empty() {
        let reason = format!(
            "revision {number}: {} instances running on cluster {cluster}",
            progress.desired
        );
        return (actions, status(Phase::Running, reason, revision, progress));
    }
    let mut reason = format!(
        "revision {number} on cluster {cluster}: {} of {} updated, {} ready, {} old",
        progress.updated, progress.desired, progress.ready, progress.old
    );
    let mut progressing = status(Phase::Progressing, String::new(), revision, progress);
    if let Some((alert, words)) = alerting(observed) {
        reason = format!("{reason}; {words}");
        progressing.alert = Some(alert);
    }
    progressing.reason = reason;
    (actions, progressing)
}

/// A service actor's report (`Command::ServiceReport`, proposed by the leader only).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServiceReport {
    /// Tenant name.
    pub tenant: String,
    /// Service name.
    pub service: String,
    /// The service's uid (a service created again under the same name is another).
    pub uid: String,
    /// Its status now.
    pub status: ReconcileStatus,
    /// Nothing of the deleted service runs: remove the object.
    pub finalize: bool,
    /// Every instance runs on the cluster it is moving to: that becomes its placement.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub switched_to: Option<ClusterRef>,
}

/// What an event is about (Axebow's `source`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct EventSource {
    /// The object's uid.
    pub id: String,
    /// Its kind (`service`).
    pub kind: String,
    /// Its name.
    pub name: String,
}

/// An event in Axebow's shape: repeated ones are counted, not stored again.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ServiceEvent {
    /// How many times it happened in a row.
    pub counter: u32,
    /// When it first happened (RFC 3339).
    pub first_timestamp: String,
    /// When it last happened (RFC 3339).
    pub last_timestamp: String,
    /// What happened.
    pub message: String,
    /// What it is about.
    pub source: EventSource,
    /// The phase entered.
    pub reason: String,
    /// `Normal` or `Warning`.
    #[serde(rename = "type")]
    pub kind: String,
    /// The state revision that recorded it or last counted it (watches resume from it).
    #[serde(default)]
    pub resource_version: u64,
}

/// Events a service keeps (the last ones).
pub const EVENTS_KEPT: usize = 32;

/// When and at which state revision an event happens.
#[derive(Debug, Clone)]
pub struct EventTime {
    /// RFC 3339.
    pub at: String,
    /// The state revision.
    pub revision: u64,
}

/// Records that the service entered `status.phase`, counting a repeat of the last event.
pub fn record_event(
    events: &mut VecDeque<ServiceEvent>,
    source: EventSource,
    status: &ReconcileStatus,
    time: EventTime,
) {
    let EventTime { at, revision } = time;
    let reason = status
        .alert
        .map_or_else(|| status.phase.event_reason(), EndReason::as_str);
    if let Some(last) = events.back_mut() {
        if last.reason == reason && last.message == status.reason {
            last.counter = last.counter.saturating_add(1);
            last.last_timestamp = at;
            last.resource_version = revision;
            return;
        }
    }
    let kind = match status.phase {
        _ if status.alert.is_some() => "Warning",
        Phase::Unreachable | Phase::Failed => "Warning",
        _ => "Normal",
    };
    events.push_back(ServiceEvent {
        counter: 1,
        first_timestamp: at.clone(),
        last_timestamp: at,
        message: status.reason.clone(),
        source,
        reason: reason.to_string(),
        kind: kind.to_string(),
        resource_version: revision,
    });
    while events.len() > EVENTS_KEPT {
        events.pop_front();
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::service::fixtures::{self, seen};

    fn spec(id: &str) -> InstanceSpec {
        fixtures::spec(id, "v")
    }

    /// Role `api` of `acme.web` at role revision 2 with `count` instances (revision 1 known).
    fn roles(count: u32) -> Vec<RoleTarget> {
        vec![RoleTarget {
            prefix: "acme.web.api.".into(),
            revision: 2,
            target: (0..count)
                .map(|i| spec(&format!("acme.web.api.r2.{i}")))
                .collect(),
            older: BTreeMap::from([(1, spec("acme.web.api.r1.0"))]),
        }]
    }

    fn ids(actions: &[Action]) -> Vec<Vec<String>> {
        actions
            .iter()
            .map(|a| match a {
                Action::Apply(specs) => {
                    let mut ids: Vec<String> = specs.iter().map(|s| s.id.to_string()).collect();
                    ids.sort();
                    ids
                }
                Action::Finalize => vec!["FINALIZE".into()],
                Action::Switch => vec!["SWITCH".into()],
            })
            .collect()
    }

    /// The events recorded for `status` entered by service `web`.
    fn recorded(status: &ReconcileStatus) -> VecDeque<ServiceEvent> {
        let mut events = VecDeque::new();
        let source = EventSource {
            id: "u".into(),
            kind: "service".into(),
            name: "web".into(),
        };
        let time = EventTime {
            at: "t".into(),
            revision: 1,
        };
        record_event(&mut events, source, status, time);
        events
    }

    #[test]
    fn an_instance_killed_at_its_memory_limit_is_a_warning_until_it_runs_again() {
        use InstanceState::*;
        let cluster = ClusterRef {
            tenant: "operator".into(),
            name: "edge".into(),
        };
        let two = roles(2);
        let wanted = Wanted {
            roles: &two,
            revision: Some(2),
            cluster: Some(&cluster),
            deleting: false,
            unplaced: None,
            migrating: false,
            pinned: false,
        };
        let mut killed = seen("acme.web.api.r2.0", Failed);
        killed.reason = Some(EndReason::OomKilled);
        killed.oom_kills = 2;
        killed.restarts = 1;
        killed.resources.memory_mib = 32;
        let observed = [killed.clone(), seen("acme.web.api.r2.1", Running)];
        let (_, status) = plan(wanted, Seen::Instances(&observed), None);
        assert_eq!(
            (status.phase, status.alert),
            (Phase::Progressing, Some(EndReason::OomKilled))
        );
        assert!(
            status.reason.ends_with(
                "instance acme.web.api.r2.0 was killed at its memory limit of 32 MiB (OOMKilled; 2 kills, 1 restarts)"
            ),
            "{}",
            status.reason
        );
        let events = recorded(&status);
        assert_eq!(
            (events[0].reason.as_str(), events[0].kind.as_str()),
            ("OOMKilled", "Warning")
        );
        // Running again (its reason kept as the last run's): no alert; neither for a starting one
        // that ended otherwise.
        killed.state = Running;
        let observed = [killed.clone(), seen("acme.web.api.r2.1", Running)];
        let (_, status) = plan(wanted, Seen::Instances(&observed), None);
        assert_eq!((status.phase, status.alert), (Phase::Running, None));
        let observed = [
            seen("acme.web.api.r2.0", Failed),
            seen("acme.web.api.r2.1", Running),
        ];
        let (_, status) = plan(wanted, Seen::Instances(&observed), None);
        assert_eq!((status.phase, status.alert), (Phase::Progressing, None));
        // One whose start fails (its program is gone): told and alerted as such, after a kill.
        let mut unstarted = seen("acme.web.api.r2.1", Failed);
        unstarted.reason = Some(EndReason::StartError);
        unstarted.restarts = 3;
        let observed = [unstarted.clone(), seen("acme.web.api.r2.0", Running)];
        let (_, status) = plan(wanted, Seen::Instances(&observed), None);
        assert_eq!(
            (status.phase, status.alert),
            (Phase::Progressing, Some(EndReason::StartError))
        );
        assert!(
            status.reason.ends_with(
                "instance acme.web.api.r2.1 cannot start (StartError; 3 restarts; its log says why)"
            ),
            "{}",
            status.reason
        );
        assert_eq!(recorded(&status)[0].reason, "StartError");
        killed.state = Failed;
        let observed = [killed, unstarted];
        let (_, status) = plan(wanted, Seen::Instances(&observed), None);
        assert_eq!(status.alert, Some(EndReason::OomKilled));
        assert!(
            status
                .reason
                .contains("(OOMKilled; 2 kills, 1 restarts); instance acme.web.api.r2.1 cannot start"),
            "{}",
            status.reason
        );
    }

    #[test]
    fn endpoints_are_running_pods_new_first() {
        use InstanceState::*;
        let pod = |id: &str, state, ip: Option<&str>| {
            let mut status = seen(id, state);
            status.pod = Some(crate::cluster::pod::PodReport {
                ip: ip.map(str::to_string),
                containers: Vec::new(),
            });
            status
        };
        let two = roles(2);
        let cases: Vec<(&str, Vec<InstanceStatus>, Vec<&str>)> = vec![
            (
                "no pod reports an address",
                vec![seen("acme.web.api.r2.0", Running)],
                vec![],
            ),
            (
                "only running pods, sorted",
                vec![
                    pod("acme.web.api.r2.1", Running, Some("10.0.0.9")),
                    pod("acme.web.api.r2.0", Running, Some("10.0.0.3")),
                    pod("acme.web.api.r1.0", Failed, Some("10.0.0.7")),
                ],
                vec!["10.0.0.3", "10.0.0.9"],
            ),
            (
                "an old pod still running comes after the new ones",
                vec![
                    pod("acme.web.api.r1.0", Running, Some("10.0.0.1")),
                    pod("acme.web.api.r2.0", Running, Some("10.0.0.5")),
                    pod("acme.web.api.r2.1", Starting, Some("10.0.0.6")),
                ],
                vec!["10.0.0.5", "10.0.0.1"],
            ),
            (
                "old pods alone while no new one runs",
                vec![
                    pod("acme.web.api.r1.0", Running, Some("10.0.0.1")),
                    pod("acme.web.api.r2.0", Starting, None),
                ],
                vec!["10.0.0.1"],
            ),
        ];
        for (case, observed, expected) in cases {
            assert_eq!(endpoints(&two, &observed), expected, "{case}");
        }
        let cluster = ClusterRef {
            tenant: "operator".into(),
            name: "edge".into(),
        };
        let wanted = Wanted {
            roles: &two,
            revision: Some(2),
            cluster: Some(&cluster),
            deleting: false,
            unplaced: None,
            migrating: false,
            pinned: false,
        };
        let observed = [
            pod("acme.web.api.r2.0", Running, Some("10.0.0.5")),
            pod("acme.web.api.r2.1", Running, Some("10.0.0.4")),
        ];
        let (_, status) = plan(wanted, Seen::Instances(&observed), None);
        assert_eq!(
            (status.phase, status.endpoints),
            (
                Phase::Running,
                vec!["10.0.0.4".to_string(), "10.0.0.5".to_string()]
            ),
            "the report carries them"
        );
    }

    #[test]
    fn plan_table() {
        use InstanceState::*;
        let cluster = ClusterRef {
            tenant: "operator".into(),
            name: "edge".into(),
        };
        let two = roles(2);
        let running_new = [
            seen("acme.web.api.r2.0", Running),
            seen("acme.web.api.r2.1", Running),
        ];
        let starting_new = [
            seen("acme.web.api.r2.0", Starting),
            seen("acme.web.api.r2.1", Running),
        ];
        let old = [
            seen("acme.web.api.r1.0", Running),
            seen("acme.web.api.r1.1", Running),
        ];
        let extra = [
            seen("acme.web.api.r2.0", Running),
            seen("acme.web.api.r2.1", Running),
            seen("acme.web.api.r2.2", Running),
        ];
        let wanted = |deleting: bool, placed: bool, accepted: bool| Wanted {
            roles: if accepted { &two } else { &[] },
            revision: accepted.then_some(2),
            cluster: placed.then_some(&cluster),
            deleting,
            unplaced: (!placed).then_some("operator/edge: OFFLINE"),
            migrating: false,
            pinned: false,
        };
        let all_new = vec![vec!["acme.web.api.r2.0".to_string(), "acme.web.api.r2.1".into()]];
        // (case, wanted, seen, actions, phase)
        type Row<'a> = (&'a str, Wanted<'a>, Seen<'a>, Vec<Vec<String>>, Phase);
        let table: Vec<Row<'_>> = vec![
            (
                "not accepted",
                wanted(false, false, false),
                Seen::Instances(&[]),
                vec![],
                Phase::Waiting,
            ),
            (
                "not placed",
                wanted(false, false, true),
                Seen::Instances(&[]),
                vec![],
                Phase::Waiting,
            ),
            (
                "no report in this term",
                wanted(false, true, true),
                Seen::NotYet,
                vec![],
                Phase::Waiting,
            ),
            (
                "cluster silent: nothing sent",
                wanted(false, true, true),
                Seen::Unreachable,
                vec![],
                Phase::Unreachable,
            ),
            (
                "nothing runs: the whole set",
                wanted(false, true, true),
                Seen::Instances(&[]),
                all_new.clone(),
                Phase::Progressing,
            ),
            (
                "converged: nothing to do",
                wanted(false, true, true),
                Seen::Instances(&running_new),
                vec![],
                Phase::Running,
            ),
            (
                "ids match, one starting",
                wanted(false, true, true),
                Seen::Instances(&starting_new),
                vec![],
                Phase::Progressing,
            ),
            (
                "scaled down: the extra one goes",
                wanted(false, true, true),
                Seen::Instances(&extra),
                all_new,
                Phase::Progressing,
            ),
            (
                "new revision: one surges, old kept",
                wanted(false, true, true),
                Seen::Instances(&old),
                vec![vec![
                    "acme.web.api.r1.0".to_string(),
                    "acme.web.api.r1.1".into(),
                    "acme.web.api.r2.0".into(),
                ]],
                Phase::Progressing,
            ),
            (
                "deleted, never placed",
                wanted(true, false, true),
                Seen::NotYet,
                vec![vec!["FINALIZE".into()]],
                Phase::Deleting,
            ),
            (
                "deleted, instances run: empty set",
                wanted(true, true, true),
                Seen::Instances(&old),
                vec![vec![]],
                Phase::Deleting,
            ),
            (
                "deleted, nothing left: finalize",
                wanted(true, true, true),
                Seen::Instances(&[]),
                vec![vec!["FINALIZE".into()]],
                Phase::Deleting,
            ),
            (
                "deleted, cluster silent: wait",
                wanted(true, true, true),
                Seen::Unreachable,
                vec![],
                Phase::Deleting,
            ),
            (
                "deleted, no report yet: wait",
                wanted(true, true, true),
                Seen::NotYet,
                vec![],
                Phase::Deleting,
            ),
        ];
        for (case, wanted, seen, actions, phase) in table {
            let (got, status) = plan(wanted, seen, None);
            assert_eq!(ids(&got), actions, "{case}");
            assert_eq!(status.phase, phase, "{case}");
            assert!(!status.reason.is_empty(), "{case}");
        }
        let (_, status) = plan(wanted(false, true, true), Seen::Instances(&starting_new), None);
        assert_eq!(
            status.progress,
            Progress {
                desired: 2,
                updated: 2,
                ready: 1,
                old: 0
            }
        );
        let (_, status) = plan(wanted(true, true, true), Seen::Unreachable, None);
        assert!(status.reason.contains("does not answer"), "{}", status.reason);
        let (_, status) = plan(wanted(false, false, true), Seen::NotYet, None);
        assert_eq!(status.reason, "not placed: operator/edge: OFFLINE");
        // Moving: once every instance runs on the new cluster, switch; before, start them there.
        let moving = Wanted {
            migrating: true,
            ..wanted(false, true, true)
        };
        let (actions, _) = plan(moving, Seen::Instances(&running_new), None);
        assert_eq!(ids(&actions), [vec!["SWITCH".to_string()]]);
        let (actions, status) = plan(moving, Seen::Instances(&[]), None);
        assert_eq!(ids(&actions).len(), 1);
        assert_eq!(status.phase, Phase::Progressing);
        let (actions, _) = plan(moving, Seen::Instances(&starting_new), None);
        assert!(actions.is_empty(), "no switch before every instance runs");
        // Pinned on a silent cluster: says it stays.
        let pinned = Wanted {
            pinned: true,
            ..wanted(false, true, true)
        };
        let (actions, status) = plan(pinned, Seen::Unreachable, None);
        assert!(actions.is_empty());
        assert!(status.reason.ends_with("(migration: false)"), "{}", status.reason);
    }

    /// A refusal by the agent reaches the service: `FAILED` with the agent's words while the
    /// plan wants the very set refused; anything that makes it another set (a new revision,
    /// another cluster) ends it, and so does a set that runs after all or a deletion.
    #[test]
    fn a_refused_set_fails_the_service_until_the_set_changes() {
        use InstanceState::*;
        fn wanted<'a>(roles: &'a [RoleTarget], cluster: &'a ClusterRef, deleting: bool) -> Wanted<'a> {
            Wanted {
                roles,
                revision: Some(2),
                cluster: Some(cluster),
                deleting,
                unplaced: None,
                migrating: false,
                pinned: false,
            }
        }
        let edge = ClusterRef {
            tenant: "operator".into(),
            name: "edge".into(),
        };
        let far = ClusterRef {
            tenant: "operator".into(),
            name: "far".into(),
        };
        let (two, three) = (roles(2), roles(3));
        // What the plan sends when nothing runs: the whole set.
        let (sent, _) = plan(wanted(&two, &edge, false), Seen::Instances(&[]), None);
        let Some(Action::Apply(set)) = sent.into_iter().next() else {
            panic!("nothing sent");
        };
        let mut backwards = set.clone();
        backwards.reverse();
        let message = "instances[1] (acme.web.api.r2.1) does not fit: it requests 100 millicpus";
        let refusal = |cluster, instances| {
            Some(Refusal {
                cluster,
                instances,
                status: 422,
                message,
            })
        };
        let one_running = [seen("acme.web.api.r2.0", Running)];
        let both_running = [
            seen("acme.web.api.r2.0", Running),
            seen("acme.web.api.r2.1", Running),
        ];
        // (case, wanted, seen, refusal, phase, still sent)
        type Row<'a> = (&'a str, Wanted<'a>, Seen<'a>, Option<Refusal<'a>>, Phase, bool);
        let table: Vec<Row<'_>> = vec![
            (
                "no refusal",
                wanted(&two, &edge, false),
                Seen::Instances(&[]),
                None,
                Phase::Progressing,
                true,
            ),
            (
                "the same set refused",
                wanted(&two, &edge, false),
                Seen::Instances(&[]),
                refusal(&edge, &set),
                Phase::Failed,
                true,
            ),
            (
                "the same set in another order",
                wanted(&two, &edge, false),
                Seen::Instances(&[]),
                refusal(&edge, &backwards),
                Phase::Failed,
                true,
            ),
            (
                "one of them runs: the same set all the same",
                wanted(&two, &edge, false),
                Seen::Instances(&one_running),
                refusal(&edge, &set),
                Phase::Failed,
                true,
            ),
            (
                "refused by another cluster",
                wanted(&two, &far, false),
                Seen::Instances(&[]),
                refusal(&edge, &set),
                Phase::Progressing,
                true,
            ),
            (
                "a new revision wants another set",
                wanted(&three, &edge, false),
                Seen::Instances(&[]),
                refusal(&edge, &set),
                Phase::Progressing,
                true,
            ),
            (
                "it runs after all: nothing to send",
                wanted(&two, &edge, false),
                Seen::Instances(&both_running),
                refusal(&edge, &set),
                Phase::Running,
                false,
            ),
            (
                "deleted: its instances go whatever was refused",
                wanted(&two, &edge, true),
                Seen::Instances(&one_running),
                refusal(&edge, &set),
                Phase::Deleting,
                true,
            ),
            (
                "cluster silent: unknown, not refused",
                wanted(&two, &edge, false),
                Seen::Unreachable,
                refusal(&edge, &set),
                Phase::Unreachable,
                false,
            ),
        ];
        for (case, wanted, seen, refused, phase, sends) in table {
            let (actions, status) = plan(wanted, seen, refused);
            assert_eq!(status.phase, phase, "{case}: {}", status.reason);
            let sent = actions.iter().any(|a| matches!(a, Action::Apply(_)));
            assert_eq!(sent, sends, "{case}");
            if phase == Phase::Failed {
                assert!(
                    status
                        .reason
                        .starts_with("revision 2 on cluster operator/edge: the agent refuses the desired set (422): instances[1]")
                        && status.reason.contains(message),
                    "{case}: {}",
                    status.reason
                );
            }
        }
        // Its event is a warning.
        let (_, failed) = plan(
            wanted(&two, &edge, false),
            Seen::Instances(&[]),
            refusal(&edge, &set),
        );
        let events = recorded(&failed);
        assert_eq!(
            (events[0].reason.as_str(), events[0].kind.as_str()),
            ("Failed", "Warning")
        );
        assert_eq!(events[0].message, failed.reason);
    }

    #[test]
    fn events_count_repeats_and_are_bounded() {
        let source = || EventSource {
            id: "u".into(),
            kind: "service".into(),
            name: "web".into(),
        };
        let status = |phase, reason: &str| ReconcileStatus {
            phase,
            reason: reason.into(),
            revision: None,
            progress: Progress::default(),
            alert: None,
            endpoints: Vec::new(),
        };
        let time = |at: &str, revision| EventTime {
            at: at.into(),
            revision,
        };
        let mut events = VecDeque::new();
        record_event(
            &mut events,
            source(),
            &status(Phase::Progressing, "a"),
            time("t1", 1),
        );
        record_event(
            &mut events,
            source(),
            &status(Phase::Progressing, "a"),
            time("t2", 2),
        );
        assert_eq!(events.len(), 1);
        assert_eq!((events[0].counter, events[0].last_timestamp.as_str()), (2, "t2"));
        assert_eq!(
            events[0].resource_version, 2,
            "a repeat is counted at its revision"
        );
        record_event(
            &mut events,
            source(),
            &status(Phase::Unreachable, "b"),
            time("t3", 3),
        );
        assert_eq!(events[1].kind, "Warning");
        for i in 0..100 {
            record_event(
                &mut events,
                source(),
                &status(Phase::Running, &i.to_string()),
                time("t", 4 + i),
            );
        }
        assert_eq!(events.len(), EVENTS_KEPT);
    }
}
