//! Krake's scheduler as a pure function (Krake 1.0.1's `krake/controller/scheduler/scheduler.py`,
//! https://gitlab.com/rak-n-rok/krake): which cluster a
//! service should run on, and why every other cluster was not chosen.
//!
//! 1. Only `ONLINE` clusters that pass every label and metric constraint and whose free
//!    capacity fits the service are candidates — and, for a service that runs pods of container
//!    images, whose agent runs containers ([`CONTAINER_EXECUTORS`]), and for one that runs
//!    programs, whose agent runs programs ([`PROGRAM_EXECUTORS`]); every other cluster is
//!    excluded with a reason.
//!    If any candidate also has room for a rollout's surge (the new instances a rollout starts
//!    beside the old ones, [`crate::service::rollout::surge`]), only those remain: on the
//!    others the service's next rollout would be refused by the agent (`FAILED`).
//! 2. If any candidate reports metrics, only those are scored (Krake): `score = (s·w_s + Σ vᵢ·wᵢ)
//!    / (w_s + Σ wᵢ)`, with `vᵢ` each metric normalised to [0, 1] and `wᵢ` its weight, `s = 1`
//!    and `w_s` the stickiness (0.1) for the cluster the service runs on now. Without metrics
//!    the score is the stickiness alone.
//! 3. The highest score wins; ties are broken by a hash of the service's uid and the cluster's
//!    name (rendezvous hashing: replays agree, and services spread over equal clusters) where
//!    Krake draws at random.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::constraints::{LabelConstraint, MetricConstraint};
use crate::cluster::agent_api::Resources;
use crate::cluster::{ClusterRef, ClusterState};
use crate::service::Usage;

/// Krake's default stickiness weight.
pub const STICKINESS: f64 = 0.1;

/// The agents' executors that run a pod's container images (`sim` pretends to).
pub const CONTAINER_EXECUTORS: [&str; 2] = ["container", "sim"];

/// How a cluster whose agent runs no containers is excluded.
const NO_CONTAINERS: &str = "runs no containers: its agent's executor is";

/// The executors that run programs (`sim` pretends to).
pub const PROGRAM_EXECUTORS: [&str; 2] = ["exec", "sim"];

/// One metric of a cluster, as its provider last reported it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct MetricValue {
    /// The value as reported.
    pub value: f64,
    /// Normalised to [0, 1] between the metric's bounds.
    pub normalised: f64,
    /// The cluster's weight for it.
    pub weight: f64,
}

/// A cluster the service may run on.
#[derive(Debug, Clone)]
pub struct Candidate<'a> {
    /// Which.
    pub cluster: ClusterRef,
    /// Its state.
    pub state: ClusterState,
    /// Its labels.
    pub labels: &'a BTreeMap<String, String>,
    /// Its free capacity as its agent last reported it.
    pub free: Option<Resources>,
    /// Its metrics by name (none: it is scored by stickiness alone).
    pub metrics: Option<&'a BTreeMap<String, MetricValue>>,
    /// The custom resources it advertises (a Krake cluster's `spec.custom_resources`).
    pub custom_resources: &'a [String],
    /// Its agent's executor (`exec`, `container`, `sim`), once reported.
    pub executor: Option<&'a str>,
}

/// What the service asks of a cluster.
#[derive(Debug, Clone, Default)]
pub struct Needs {
    /// Its uid (breaks ties).
    pub service: String,
    /// What it uses.
    pub usage: Usage,
    /// What a rollout of it runs at most beside `usage` (its surge).
    pub surge: Usage,
    /// Label constraints.
    pub labels: Vec<LabelConstraint>,
    /// Metric constraints.
    pub metrics: Vec<MetricConstraint>,
    /// Custom resources the cluster must advertise (Krake's `custom_resources` constraint).
    pub custom_resources: Vec<String>,
    /// Whether it runs pods of container images (only agents that run containers take it).
    pub containers: bool,
    /// Whether it runs programs (only agents that run programs take it: a `container` agent
    /// refuses them).
    pub programs: bool,
}

/// A cluster that was not chosen, and why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Excluded {
    /// Which.
    pub cluster: ClusterRef,
    /// Why, in words.
    pub reason: String,
}

/// A scored candidate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Scored {
    /// Which.
    pub cluster: ClusterRef,
    /// Its score in [0, 1].
    pub score: f64,
}

// Scores are finite (weights and normalised values are), so equality is reflexive: the stored
// decision can sit in the replicated state, whose types are `Eq`.
impl Eq for Scored {}
impl Eq for Decision {}
impl Eq for MetricValue {}

/// The scheduler's decision and its explanation.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Decision {
    /// The winner, if any cluster qualifies.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chosen: Option<Scored>,
    /// The other candidates, best first.
    #[serde(default)]
    pub others: Vec<Scored>,
    /// The clusters that do not qualify.
    #[serde(default)]
    pub excluded: Vec<Excluded>,
}

impl Decision {
    /// One line saying why nothing was chosen (every exclusion), for a status.
    pub fn why_none(&self) -> String {
        if self.excluded.is_empty() {
            return "its environment may use no cluster".to_string();
        }
        let executors: Vec<String> = self
            .excluded
            .iter()
            .filter_map(|e| Some(format!("{} runs {}", e.cluster, executor_named(&e.reason)?)))
            .collect();
        if executors.len() == self.excluded.len() {
            return format!(
                "no cluster runs containers: start its agent with --executor container ({})",
                executors.join("; ")
            );
        }
        self.excluded
            .iter()
            .map(|e| format!("{}: {}", e.cluster, e.reason))
            .collect::<Vec<_>>()
            .join("; ")
    }
}

/// The executor an exclusion for running no containers names.
fn executor_named(reason: &str) -> Option<&str> {
    reason.strip_prefix(NO_CONTAINERS)?.trim().split(' ').next()
}

/// Why `candidate` cannot take the service, if it cannot.
fn exclusion(candidate: &Candidate<'_>, needs: &Needs) -> Option<String> {
    if candidate.state != ClusterState::Online {
        return Some(format!(
            "{} (only ONLINE clusters are scheduled to)",
            candidate.state.as_str()
        ));
    }
    if let Some(executor) = candidate
        .executor
        .filter(|e| needs.containers && !CONTAINER_EXECUTORS.contains(e))
    {
        return Some(format!(
            "{NO_CONTAINERS} {executor} (start it with --executor container to run container images)"
        ));
    }
    if let Some(executor) = candidate
        .executor
        .filter(|e| needs.programs && !PROGRAM_EXECUTORS.contains(e))
    {
        return Some(format!(
            "runs no programs: its agent's executor is {executor} (programs run on agents started with --executor exec)"
        ));
    }
    if let Some(failed) = needs.labels.iter().find(|c| !c.matches(candidate.labels)) {
        let why = if candidate.labels.contains_key(&failed.key) {
            "is false"
        } else {
            "is false: the cluster has no such label"
        };
        return Some(format!("label constraint `{failed}` {why}"));
    }
    if let Some(missing) = needs
        .custom_resources
        .iter()
        .find(|r| !candidate.custom_resources.contains(r))
    {
        return Some(format!(
            "custom resource constraint `{missing}`: the cluster does not advertise it"
        ));
    }
    for constraint in &needs.metrics {
        match candidate.metrics.and_then(|m| m.get(&constraint.metric)) {
            None => {
                return Some(format!(
                    "metric constraint `{}`: the cluster reports no metric {:?}",
                    constraint.expression, constraint.metric
                ))
            }
            Some(metric) if !constraint.holds(metric.value) => {
                return Some(format!(
                    "metric constraint `{}` is false ({} is {})",
                    constraint.expression, constraint.metric, metric.value
                ))
            }
            Some(_) => {}
        }
    }
    let Some(free) = candidate.free else {
        return Some("its agent has not reported its capacity yet".to_string());
    };
    if free.cpu_millis < needs.usage.vcpu_millis || free.memory_mib < needs.usage.memory_mib {
        return Some(format!(
            "needs {}m CPU and {} MiB; {}m and {} MiB are free",
            needs.usage.vcpu_millis, needs.usage.memory_mib, free.cpu_millis, free.memory_mib
        ));
    }
    None
}

/// Whether `candidate`'s free room holds the service and a rollout's surge beside it.
fn holds_surge(candidate: &Candidate<'_>, needs: &Needs) -> bool {
    let rolling = rolling(needs);
    candidate
        .free
        .is_some_and(|free| free.cpu_millis >= rolling.vcpu_millis && free.memory_mib >= rolling.memory_mib)
}

/// The service's usage with its surge.
fn rolling(needs: &Needs) -> Usage {
    Usage {
        vcpu_millis: needs.usage.vcpu_millis.saturating_add(needs.surge.vcpu_millis),
        memory_mib: needs.usage.memory_mib.saturating_add(needs.surge.memory_mib),
    }
}

/// Why a candidate that fits the service is passed over for one that holds its surge too.
fn no_room_for_surge(candidate: &Candidate<'_>, needs: &Needs) -> String {
    let rolling = rolling(needs);
    let free = candidate.free.unwrap_or_default();
    format!(
        "no room for a rollout's surge: needs {}m CPU and {} MiB with it; {}m and {} MiB are free, and others have room",
        rolling.vcpu_millis, rolling.memory_mib, free.cpu_millis, free.memory_mib
    )
}

/// The score of a qualifying candidate.
fn score(candidate: &Candidate<'_>, current: Option<&ClusterRef>, stickiness: f64) -> f64 {
    let sticky = if current == Some(&candidate.cluster) {
        1.0
    } else {
        0.0
    };
    let (sum, weights) = candidate
        .metrics
        .map(|metrics| {
            metrics.values().fold((0.0, 0.0), |(sum, weights), m| {
                (sum + m.normalised.clamp(0.0, 1.0) * m.weight, weights + m.weight)
            })
        })
        .unwrap_or((0.0, 0.0));
    let total = stickiness + weights;
    if total <= 0.0 {
        return 0.0;
    }
    (sticky * stickiness + sum) / total
}

/// FNV-1a of the service's uid and a cluster, mixed (splitmix64's finalizer, so that names
/// differing in their last byte still land far apart): the tie-breaker.
fn tie_breaker(service: &str, cluster: &ClusterRef) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in service
        .bytes()
        .chain([0])
        .chain(cluster.tenant.bytes())
        .chain([0])
        .chain(cluster.name.bytes())
    {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    hash ^= hash >> 30;
    hash = hash.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    hash ^= hash >> 27;
    hash = hash.wrapping_mul(0x94d0_49bb_1331_11eb);
    hash ^ (hash >> 31)
}

/// Where the service should run, given the clusters its environment may use and where it runs
/// now (`current`, which gets the stickiness).
pub fn schedule(
    needs: &Needs,
    candidates: &[Candidate<'_>],
    current: Option<&ClusterRef>,
    stickiness: f64,
) -> Decision {
    let mut excluded = Vec::new();
    let mut qualified = Vec::new();
    for candidate in candidates {
        match exclusion(candidate, needs) {
            Some(reason) => excluded.push(Excluded {
                cluster: candidate.cluster.clone(),
                reason,
            }),
            None => qualified.push(candidate),
        }
    }
    // Clusters with room for a rollout's surge are preferred: if any qualify, only they are.
    if needs.surge != Usage::default() && qualified.iter().any(|c| holds_surge(c, needs)) {
        let (roomy, tight): (Vec<_>, Vec<_>) = qualified.into_iter().partition(|c| holds_surge(c, needs));
        excluded.extend(tight.into_iter().map(|c| Excluded {
            cluster: c.cluster.clone(),
            reason: no_room_for_surge(c, needs),
        }));
        qualified = roomy;
    }
    // Clusters with metrics are preferred: if any qualify, only they are scored.
    if qualified.iter().any(|c| c.metrics.is_some_and(|m| !m.is_empty())) {
        let (with, without): (Vec<_>, Vec<_>) = qualified
            .into_iter()
            .partition(|c| c.metrics.is_some_and(|m| !m.is_empty()));
        excluded.extend(without.into_iter().map(|c| Excluded {
            cluster: c.cluster.clone(),
            reason: "reports no metrics, and others that qualify do".to_string(),
        }));
        qualified = with;
    }
    let mut scored: Vec<(Scored, u64)> = qualified
        .into_iter()
        .map(|c| {
            let scored = Scored {
                cluster: c.cluster.clone(),
                score: score(c, current, stickiness),
            };
            let tie = tie_breaker(&needs.service, &c.cluster);
            (scored, tie)
        })
        .collect();
    scored.sort_by(|(a, a_tie), (b, b_tie)| b.score.total_cmp(&a.score).then(b_tie.cmp(a_tie)));
    let mut ranked = scored.into_iter().map(|(s, _)| s);
    Decision {
        chosen: ranked.next(),
        others: ranked.collect(),
        excluded,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(name: &str) -> ClusterRef {
        ClusterRef {
            tenant: "operator".into(),
            name: name.into(),
        }
    }

    struct Fixture {
        name: &'static str,
        state: ClusterState,
        labels: BTreeMap<String, String>,
        free: Option<Resources>,
        metrics: Option<BTreeMap<String, MetricValue>>,
        executor: Option<&'static str>,
    }

    fn cluster(name: &'static str, location: &str) -> Fixture {
        Fixture {
            name,
            state: ClusterState::Online,
            labels: BTreeMap::from([("location".to_string(), location.to_string())]),
            free: Some(Resources {
                cpu_millis: 4000,
                memory_mib: 4096,
            }),
            metrics: None,
            executor: None,
        }
    }

    fn metric(value: f64, weight: f64) -> MetricValue {
        MetricValue {
            value,
            normalised: value,
            weight,
        }
    }

    fn candidates(fixtures: &[Fixture]) -> Vec<Candidate<'_>> {
        fixtures
            .iter()
            .map(|f| Candidate {
                cluster: at(f.name),
                state: f.state,
                labels: &f.labels,
                free: f.free,
                metrics: f.metrics.as_ref(),
                custom_resources: &[],
                executor: f.executor,
            })
            .collect()
    }

    fn needs(labels: &[&str], metrics: &[&str]) -> Needs {
        Needs {
            service: "svc-1".into(),
            usage: Usage {
                vcpu_millis: 1000,
                memory_mib: 512,
            },
            surge: Usage::default(),
            labels: labels
                .iter()
                .map(|l| LabelConstraint::parse(l).unwrap())
                .collect(),
            metrics: metrics
                .iter()
                .map(|m| MetricConstraint::parse(m).unwrap())
                .collect(),
            custom_resources: Vec::new(),
            containers: false,
            programs: true,
        }
    }

    fn chosen(decision: &Decision) -> Option<&str> {
        decision.chosen.as_ref().map(|s| s.cluster.name.as_str())
    }

    #[test]
    fn constraints_state_and_capacity_exclude_with_reasons() {
        let mut offline = cluster("off", "DE");
        offline.state = ClusterState::Offline;
        let mut full = cluster("full", "DE");
        full.free = Some(Resources {
            cpu_millis: 500,
            memory_mib: 4096,
        });
        let mut unlabelled = cluster("bare", "DE");
        unlabelled.labels.clear();
        let fixtures = [
            cluster("de", "DE"),
            cluster("sk", "SK"),
            offline,
            full,
            unlabelled,
        ];
        let decision = schedule(
            &needs(&["location is DE"], &[]),
            &candidates(&fixtures),
            None,
            STICKINESS,
        );
        assert_eq!(chosen(&decision), Some("de"));
        let reasons: BTreeMap<&str, &str> = decision
            .excluded
            .iter()
            .map(|e| (e.cluster.name.as_str(), e.reason.as_str()))
            .collect();
        assert!(reasons["sk"].contains("`location is DE` is false"), "{reasons:?}");
        assert!(reasons["off"].starts_with("OFFLINE"), "{reasons:?}");
        assert!(reasons["full"].contains("500m"), "{reasons:?}");
        assert!(reasons["bare"].contains("no such label"), "{reasons:?}");
        // `!=` on a cluster without the label is false too (Krake's rule).
        let decision = schedule(
            &needs(&["location != SK"], &[]),
            &candidates(&fixtures),
            None,
            STICKINESS,
        );
        assert_eq!(chosen(&decision), Some("de"));
        assert!(decision.excluded.iter().any(|e| e.cluster.name == "bare"));
        // Nothing qualifies: every reason is told.
        let decision = schedule(
            &needs(&["location is FR"], &[]),
            &candidates(&fixtures),
            None,
            STICKINESS,
        );
        assert_eq!(chosen(&decision), None);
        assert_eq!(
            decision.why_none().matches("operator/").count(),
            5,
            "{}",
            decision.why_none()
        );
    }

    #[test]
    fn clusters_without_room_for_a_rollouts_surge_lose_to_those_with_it() {
        // The service needs 1000m and 512 MiB, and 250m and 128 MiB more while a rollout runs
        // its surge beside the old instances.
        let surge = Usage {
            vcpu_millis: 250,
            memory_mib: 128,
        };
        let at_free = |name: &'static str, cpu: u64, memory: u64, green: f64| {
            let mut fixture = cluster(name, "DE");
            fixture.free = Some(Resources {
                cpu_millis: cpu,
                memory_mib: memory,
            });
            fixture.metrics = Some(BTreeMap::from([("green".to_string(), metric(green, 1.0))]));
            fixture
        };
        // (case, clusters, where it runs now, its surge), then (the winner, those passed over).
        type Row = (&'static str, Vec<Fixture>, Option<&'static str>, Usage);
        let table: Vec<(Row, (&str, Vec<&str>))> = vec![
            (
                (
                    "the surge fits only the worse-scored cluster",
                    vec![
                        at_free("tight", 1000, 512, 0.9),
                        at_free("roomy", 1500, 1024, 0.1),
                    ],
                    None,
                    surge,
                ),
                ("roomy", vec!["tight"]),
            ),
            (
                (
                    "exactly the room of the service and its surge is room",
                    vec![
                        at_free("tight", 1249, 4096, 0.9),
                        at_free("exact", 1250, 640, 0.1),
                    ],
                    None,
                    surge,
                ),
                ("exact", vec!["tight"]),
            ),
            (
                (
                    "memory counts as CPU does",
                    vec![
                        at_free("cpu-rich", 4000, 639, 0.9),
                        at_free("both", 1250, 640, 0.1),
                    ],
                    None,
                    surge,
                ),
                ("both", vec!["cpu-rich"]),
            ),
            (
                (
                    "no cluster holds the surge: the best that holds the service wins",
                    vec![at_free("best", 1000, 512, 0.9), at_free("worse", 1100, 600, 0.1)],
                    None,
                    surge,
                ),
                ("best", vec![]),
            ),
            (
                (
                    "stickiness does not keep it where its surge has no room",
                    vec![at_free("here", 1000, 512, 0.5), at_free("there", 1250, 640, 0.5)],
                    Some("here"),
                    surge,
                ),
                ("there", vec!["here"]),
            ),
            (
                (
                    "without a surge the score decides alone",
                    vec![
                        at_free("tight", 1000, 512, 0.9),
                        at_free("roomy", 1500, 1024, 0.1),
                    ],
                    None,
                    Usage::default(),
                ),
                ("tight", vec![]),
            ),
        ];
        for ((case, fixtures, current, surge), (winner, passed_over)) in &table {
            let mut wants = needs(&[], &[]);
            wants.surge = *surge;
            let current = current.map(at);
            let decision = schedule(&wants, &candidates(fixtures), current.as_ref(), STICKINESS);
            assert_eq!(chosen(&decision), Some(*winner), "{case}: {decision:?}");
            let excluded: Vec<&str> = decision
                .excluded
                .iter()
                .map(|e| e.cluster.name.as_str())
                .collect();
            assert_eq!(&excluded, passed_over, "{case}");
            for e in &decision.excluded {
                assert!(
                    e.reason
                        .starts_with("no room for a rollout's surge: needs 1250m CPU and 640 MiB"),
                    "{case}: {}",
                    e.reason
                );
            }
        }
    }

    #[test]
    fn metric_weights_stickiness_and_ties() {
        // a: 0.9 on a metric of weight 1; b: 0.5. Unplaced: a wins.
        let mut a = cluster("a", "DE");
        a.metrics = Some(BTreeMap::from([("green".to_string(), metric(0.9, 1.0))]));
        let mut b = cluster("b", "DE");
        b.metrics = Some(BTreeMap::from([("green".to_string(), metric(0.5, 1.0))]));
        let fixtures = [a, b, cluster("plain", "DE")];
        let decision = schedule(&needs(&[], &[]), &candidates(&fixtures), None, STICKINESS);
        assert_eq!(chosen(&decision), Some("a"));
        // Clusters without metrics are not scored when others have them.
        assert!(decision.excluded.iter().any(|e| e.cluster.name == "plain"));
        // On b now: b scores (0.1 + 0.5) / 1.1 = 0.545, a 0.9 / 1.1 = 0.818: a still wins.
        let decision = schedule(
            &needs(&[], &[]),
            &candidates(&fixtures),
            Some(&at("b")),
            STICKINESS,
        );
        assert_eq!(chosen(&decision), Some("a"));
        let b_score = decision
            .others
            .iter()
            .find(|s| s.cluster.name == "b")
            .unwrap()
            .score;
        assert!((b_score - 0.6 / 1.1).abs() < 1e-9, "{b_score}");
        // Close metrics: stickiness keeps the service where it is.
        let mut a = cluster("a", "DE");
        a.metrics = Some(BTreeMap::from([("green".to_string(), metric(0.55, 1.0))]));
        let mut b = cluster("b", "DE");
        b.metrics = Some(BTreeMap::from([("green".to_string(), metric(0.5, 1.0))]));
        let close = [a, b];
        let decision = schedule(&needs(&[], &[]), &candidates(&close), Some(&at("b")), STICKINESS);
        assert_eq!(chosen(&decision), Some("b"));
        // Weights: a heavy metric outweighs a light one.
        let mut a = cluster("a", "DE");
        a.metrics = Some(BTreeMap::from([
            ("cheap".to_string(), metric(1.0, 0.1)),
            ("green".to_string(), metric(0.0, 10.0)),
        ]));
        let mut b = cluster("b", "DE");
        b.metrics = Some(BTreeMap::from([
            ("cheap".to_string(), metric(0.0, 0.1)),
            ("green".to_string(), metric(0.2, 10.0)),
        ]));
        let weighted = [a, b];
        assert_eq!(
            chosen(&schedule(
                &needs(&[], &[]),
                &candidates(&weighted),
                None,
                STICKINESS
            )),
            Some("b")
        );
        // Metric constraints compare the reported value; a cluster without the metric fails.
        let decision = schedule(
            &needs(&[], &["green > 0.1"]),
            &candidates(&weighted),
            None,
            STICKINESS,
        );
        assert_eq!(chosen(&decision), Some("b"));
        assert!(
            decision.excluded[0].reason.contains("is false (green is 0)"),
            "{:?}",
            decision.excluded
        );
        let decision = schedule(
            &needs(&[], &["blue > 0"]),
            &candidates(&weighted),
            None,
            STICKINESS,
        );
        assert_eq!(chosen(&decision), None);
        assert!(decision.why_none().contains("no metric \"blue\""));

        // Ties (no metrics, not placed): decided by the service's uid, the same every time, and
        // different services spread over equal clusters.
        let equal = [cluster("x", "DE"), cluster("y", "DE"), cluster("z", "DE")];
        let pick = |service: &str| {
            let mut n = needs(&[], &[]);
            n.service = service.into();
            schedule(&n, &candidates(&equal), None, STICKINESS)
                .chosen
                .map(|s| s.cluster.name)
        };
        assert_eq!(pick("svc-1"), pick("svc-1"));
        let mut spread: BTreeMap<String, usize> = BTreeMap::new();
        for i in 0..300 {
            let uid = format!("4f6c0a1e-2b7d-4c11-9e3a-{i:012}");
            *spread.entry(pick(&uid).unwrap()).or_default() += 1;
        }
        assert!(
            spread.len() == 3 && spread.values().all(|n| (70..=130).contains(n)),
            "{spread:?}"
        );
        // Without metrics the current cluster wins by stickiness alone.
        let mut n = needs(&[], &[]);
        n.service = "svc-7".into();
        let decision = schedule(&n, &candidates(&equal), Some(&at("y")), STICKINESS);
        assert_eq!(chosen(&decision), Some("y"));
    }

    #[test]
    fn pods_of_images_go_only_where_agents_run_containers() {
        let with = |name: &'static str, executor: Option<&'static str>| Fixture {
            executor,
            ..cluster(name, "DE")
        };
        let mut pods = needs(&[], &[]);
        pods.containers = true;
        pods.programs = false;
        let programs = needs(&[], &[]);
        // (clusters, needs, chosen, why nothing was chosen)
        let table: Vec<(Vec<Fixture>, &Needs, Option<&str>, &str)> = vec![
            (vec![with("e", Some("exec")), with("c", Some("container"))], &pods, Some("c"), ""),
            (vec![with("e", Some("exec")), with("s", Some("sim"))], &pods, Some("s"), ""),
            (vec![with("e", Some("exec"))], &programs, Some("e"), ""),
            (vec![with("c", Some("container")), with("e", Some("exec"))], &programs, Some("e"), ""),
            (
                vec![with("c", Some("container"))],
                &programs,
                None,
                "operator/c: runs no programs: its agent's executor is container (programs run on agents started with --executor exec)",
            ),
            (
                vec![with("e", Some("exec")), with("f", Some("exec"))],
                &pods,
                None,
                "no cluster runs containers: start its agent with --executor container (operator/e runs exec; operator/f runs exec)",
            ),
            (
                vec![with("e", Some("exec")), Fixture { state: ClusterState::Offline, ..with("c", Some("container")) }],
                &pods,
                None,
                "operator/e: runs no containers: its agent's executor is exec (start it with --executor container to run container images); operator/c: OFFLINE (only ONLINE clusters are scheduled to)",
            ),
        ];
        for (fixtures, needs, want, why) in table {
            let decision = schedule(needs, &candidates(&fixtures), None, STICKINESS);
            assert_eq!(chosen(&decision), want, "{decision:?}");
            if want.is_none() {
                assert_eq!(decision.why_none(), why);
            }
        }
    }
}
