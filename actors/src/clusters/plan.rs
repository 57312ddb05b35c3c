//! Which desired sets a cluster actor sends: a pure function of the sets committed for the
//! cluster and the instances its agent reported, by set.
//!
//! At the start of a term every pinned set is sent once; afterwards only sets whose instance ids
//! differ from what the agent reports, and sets the agent runs that are neither pinned nor a
//! service's (sent empty, so their instances stop: what a forced delete orphaned, or a pinned
//! set removed while the cluster was away). Services' sets are left to their service actors.

use std::collections::{BTreeMap, BTreeSet};

use drover_model::cluster::agent_api::{InstanceId, InstanceSpec, SetName};

use super::observed::ObservedSets;
use drover_model::cluster::Cluster;

/// The desired sets of a committed cluster, each instance with its deterministic id.
pub fn desired_sets(cluster: &Cluster) -> BTreeMap<SetName, Vec<InstanceSpec>> {
    cluster
        .sets
        .iter()
        .map(|(name, stored)| {
            let instances = stored
                .instance_ids(name)
                .into_iter()
                .map(|id| InstanceSpec {
                    id,
                    exec: stored.spec.exec.clone(),
                    resources: stored.spec.resources,
                    env: stored.spec.env.clone(),
                })
                .collect();
            (name.clone(), instances)
        })
        .collect()
}

/// One call to make.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SetPush {
    /// The set.
    pub set: SetName,
    /// Its whole desired content (empty: remove it).
    pub instances: Vec<InstanceSpec>,
}

/// The pushes that make the agent's inventory match `desired`, leaving the sets in `services`
/// alone. `full` sends every desired set, changed or not (the first pass of a term).
pub fn plan_sets(
    desired: &BTreeMap<SetName, Vec<InstanceSpec>>,
    observed: &ObservedSets,
    full: bool,
    services: &BTreeSet<SetName>,
) -> Vec<SetPush> {
    let running: BTreeMap<&SetName, BTreeSet<&InstanceId>> = observed
        .iter()
        .map(|(set, instances)| (set, instances.iter().map(|i| &i.id).collect()))
        .collect();
    let mut pushes: Vec<SetPush> = desired
        .iter()
        .filter(|(set, instances)| {
            let wanted: BTreeSet<&InstanceId> = instances.iter().map(|i| &i.id).collect();
            full || running
                .get(set)
                .map_or(!wanted.is_empty(), |have| *have != wanted)
        })
        .map(|(set, instances)| SetPush {
            set: set.clone(),
            instances: instances.clone(),
        })
        .collect();
    pushes.extend(
        running
            .keys()
            .filter(|set| !desired.contains_key(**set) && !services.contains(*set))
            .map(|set| SetPush {
                set: (*set).clone(),
                instances: Vec::new(),
            }),
    );
    pushes
}

#[cfg(test)]
mod tests {
    use drover_model::cluster::agent_api::{ExecSpec, Health, InstanceState, InstanceStatus, Resources};

    use super::super::observed::by_set;
    use super::*;

    fn spec(id: &str) -> InstanceSpec {
        InstanceSpec {
            id: InstanceId::parse(id).unwrap(),
            exec: ExecSpec {
                argv: vec!["sleep".into(), "100".into()],
                probe: None,
                files: Default::default(),
                pod: None,
            },
            resources: Resources::default(),
            env: BTreeMap::new(),
        }
    }

    fn status(set: &str, id: &str) -> InstanceStatus {
        InstanceStatus {
            id: InstanceId::parse(id).unwrap(),
            set: SetName::parse(set).unwrap(),
            state: InstanceState::Running,
            exit_code: None,
            restarts: 0,
            started_at: None,
            health: Health::Unknown,
            pid: None,
            resources: Resources::default(),
            reason: None,
            oom_kills: 0,
            pod: None,
            usage: None,
        }
    }

    fn inventory(instances: Vec<InstanceStatus>) -> ObservedSets {
        by_set(instances, &ObservedSets::new())
    }

    fn set(name: &str) -> SetName {
        SetName::parse(name).unwrap()
    }

    fn names(pushes: &[SetPush]) -> Vec<(String, usize)> {
        pushes
            .iter()
            .map(|p| (p.set.to_string(), p.instances.len()))
            .collect()
    }

    #[test]
    fn only_differences_are_sent_unless_the_pass_is_full() {
        let desired = BTreeMap::from([
            (set("web"), vec![spec("web.main.r1.0"), spec("web.main.r1.1")]),
            (set("db"), vec![spec("db.main.r1.0")]),
            (set("new"), vec![spec("new.main.r1.0")]),
            (set("none"), vec![]),
        ]);
        // web matches; db has one too many; new is missing; none is empty everywhere; gone is
        // no longer desired; svc is a service's, left to its actor.
        let observed = inventory(vec![
            status("web", "web.main.r1.0"),
            status("web", "web.main.r1.1"),
            status("db", "db.main.r1.0"),
            status("db", "db.main.r1.1"),
            status("gone", "gone.main.r1.0"),
            status("svc", "svc.main.r1.0"),
        ]);
        let services = BTreeSet::from([set("svc")]);
        assert_eq!(
            names(&plan_sets(&desired, &observed, false, &services)),
            [("db".into(), 1), ("new".into(), 1), ("gone".into(), 0)]
        );
        assert_eq!(
            names(&plan_sets(&desired, &observed, false, &BTreeSet::new())),
            [
                ("db".into(), 1),
                ("new".into(), 1),
                ("gone".into(), 0),
                ("svc".into(), 0)
            ],
            "a set no service owns any more is removed"
        );
        assert_eq!(
            names(&plan_sets(&desired, &observed, true, &services)),
            [
                ("db".into(), 1),
                ("new".into(), 1),
                ("none".into(), 0),
                ("web".into(), 2),
                ("gone".into(), 0)
            ]
        );
    }

    #[test]
    fn a_converged_cluster_needs_nothing() {
        let desired = BTreeMap::from([(set("web"), vec![spec("web.main.r2.0")])]);
        let observed = inventory(vec![status("web", "web.main.r2.0")]);
        let none = BTreeSet::new();
        assert!(plan_sets(&desired, &observed, false, &none).is_empty());
        // A new revision replaces every id.
        let observed = inventory(vec![status("web", "web.main.r1.0")]);
        assert_eq!(
            names(&plan_sets(&desired, &observed, false, &none)),
            [("web".into(), 1)]
        );
    }
}
