//! Placement, first cut: which cluster a service's instances run on, as a pure function of the
//! clusters its environment may use (their state and free capacity as their agents last
//! reported) and where it runs now. A placed service stays on its cluster while that cluster is
//! registered, whatever its state or the environment's selection: moving it (migration, create
//! first, remove the old copies only once their cluster answers) is Krake's full scheduler, the
//! next step; until then nothing here can leave a copy on one cluster while starting another.
//! The leader commits each decision as a [`Placement`], so a new leader knows where every
//! service runs.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use super::rollout::RoleTarget;
use super::{Revision, Service, Usage};
use crate::cluster::agent_api::{InstanceId, InstanceSpec, SetName};
use crate::cluster::views::UsableCluster;
use crate::cluster::{ids_digest, ClusterRef, ClusterState};
use crate::platform::{Platform, PlatformError};

/// A placement decision (`Command::Placement`), proposed by the leader only.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Placement {
    /// Tenant name.
    pub tenant: String,
    /// Service name.
    pub service: String,
    /// The service's uid (a service created again under the same name is another).
    pub uid: String,
    /// Where it runs.
    pub cluster: ClusterRef,
}

/// Where a service needing `needed` should run: its `current` cluster while that cluster is
/// `registered`, else the `ONLINE` cluster with the most free CPU (then memory, then name) that
/// fits it; `None` when none fits.
pub fn place(
    candidates: &[UsableCluster],
    needed: Usage,
    current: Option<&ClusterRef>,
    registered: impl Fn(&ClusterRef) -> bool,
) -> Option<ClusterRef> {
    if let Some(current) = current.filter(|c| registered(c)) {
        return Some(current.clone());
    }
    let reference = |c: &UsableCluster| ClusterRef {
        tenant: c.tenant.clone(),
        name: c.name.clone(),
    };
    candidates
        .iter()
        .filter(|c| c.state == ClusterState::Online)
        .filter_map(|c| c.free.map(|free| (c, free)))
        .filter(|(_, free)| free.cpu_millis >= needed.vcpu_millis && free.memory_mib >= needed.memory_mib)
        .max_by(|(a, a_free), (b, b_free)| {
            a_free
                .cpu_millis
                .cmp(&b_free.cpu_millis)
                .then(a_free.memory_mib.cmp(&b_free.memory_mib))
                .then((&b.tenant, &b.name).cmp(&(&a.tenant, &a.name)))
        })
        .map(|(c, _)| reference(c))
}

/// The desired set name of a service: `{tenant}.{service}`.
pub fn set_name(tenant: &str, service: &str) -> Option<SetName> {
    SetName::parse(&format!("{tenant}.{service}")).ok()
}

impl Platform {
    /// Records a placement, if the service still has that uid; whether it changed anything.
    pub fn apply_placement(&mut self, placement: &Placement) -> Result<bool, PlatformError> {
        let stored = self
            .tenants
            .get_mut(&placement.tenant)
            .and_then(|t| t.services.get_mut(&placement.service))
            .filter(|s| s.uid == placement.uid);
        let Some(stored) = stored else {
            return Ok(false);
        };
        let changed = stored.placement.as_ref() != Some(&placement.cluster);
        stored.placement = Some(placement.cluster.clone());
        Ok(changed)
    }

    /// The sets of every service placed on `cluster`, deleted ones included: the cluster's
    /// actor leaves them to their service actors and removes any other set no pinned set or
    /// service owns (what a forced delete orphaned).
    pub fn service_sets_on(&self, cluster: &ClusterRef) -> BTreeSet<SetName> {
        self.tenants()
            .flat_map(|(tenant, stored)| {
                stored
                    .services
                    .iter()
                    .filter(|(_, service)| service.placement.as_ref() == Some(cluster))
                    .filter_map(move |(name, _)| set_name(tenant, name))
            })
            .collect()
    }

    /// Where a service runs and whether exactly its current revision's instances run there,
    /// from what the cluster's actor last committed.
    pub fn service_run_status(&self, tenant: &str, service: &str) -> Result<RunStatus, PlatformError> {
        let stored = self.service(tenant, service)?;
        let revision = stored.current.and_then(|n| stored.revisions.get(&n));
        let desired = revision.map_or(Vec::new(), |r| {
            set_name(tenant, service).map_or(Vec::new(), |set| instances_of(&set, r))
        });
        let observed = stored
            .placement
            .as_ref()
            .and_then(|cluster| self.cluster(cluster))
            .and_then(|cluster| cluster.status.sets.get(&set_name(tenant, service)?).copied())
            .unwrap_or_default();
        let wanted = ids_digest(desired.iter().map(|i| &i.id));
        let count = u32::try_from(desired.len()).unwrap_or(u32::MAX);
        Ok(RunStatus {
            cluster: stored.placement.clone(),
            revision: stored.current,
            desired: count,
            running: observed.running,
            converged: revision.is_some()
                && stored.placement.is_some()
                && observed.total == count
                && observed.running == count
                && observed.digest == wanted,
        })
    }
}

/// What a service's accepted revision runs in set `set`, role by role: the revision's
/// instances, and what older role revisions run so that a rollout keeps them unchanged while
/// the new ones start ([`super::rollout::roll`]). Empty before the first acceptance.
pub fn role_targets(set: &SetName, service: &Service) -> Vec<RoleTarget> {
    let Some(revision) = service.current.and_then(|n| service.revisions.get(&n)) else {
        return Vec::new();
    };
    let instances = instances_of(set, revision);
    revision
        .deployment
        .roles
        .keys()
        .map(|role| {
            let prefix = format!("{set}.{role}.");
            let current = revision
                .role_revisions
                .get(role)
                .copied()
                .unwrap_or(revision.number);
            let older = service
                .revisions
                .values()
                .filter(|r| r.accepted)
                .filter_map(|r| {
                    let rev = r.role_revisions.get(role).copied()?;
                    let spec = r.deployment.roles.get(role)?;
                    let id = InstanceId::derive(set.as_str(), rev, role, 0).ok()?;
                    let template = InstanceSpec {
                        id,
                        exec: spec.exec.clone(),
                        resources: spec.resources,
                        env: spec.env.clone(),
                    };
                    (rev != current).then_some((rev, template))
                })
                .collect();
            RoleTarget {
                target: instances
                    .iter()
                    .filter(|i| i.id.as_str().starts_with(&prefix))
                    .cloned()
                    .collect(),
                prefix,
                revision: current,
                older,
            }
        })
        .collect()
}

/// Every instance of `revision` in set `set`, with ids `{set}.{role}.r{role revision}.{ordinal}`.
pub(crate) fn instances_of(set: &SetName, revision: &Revision) -> Vec<InstanceSpec> {
    let mut instances = Vec::new();
    for (role, spec) in &revision.deployment.roles {
        let role_revision = revision
            .role_revisions
            .get(role)
            .copied()
            .unwrap_or(revision.number);
        for ordinal in 0..spec.instances {
            if let Ok(id) = InstanceId::derive(set.as_str(), role_revision, role, ordinal) {
                instances.push(InstanceSpec {
                    id,
                    exec: spec.exec.clone(),
                    resources: spec.resources,
                    env: spec.env.clone(),
                });
            }
        }
    }
    instances
}

/// Where a service runs and whether it has converged.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct RunStatus {
    /// The cluster it is placed on.
    pub cluster: Option<ClusterRef>,
    /// Its current (accepted) revision.
    pub revision: Option<u64>,
    /// Instances its current revision wants.
    pub desired: u32,
    /// Instances of its set running on the cluster.
    pub running: u32,
    /// Exactly the current revision's instances run, and nothing else of the service.
    pub converged: bool,
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::cluster::agent_api::Resources;

    fn cluster(name: &str, state: ClusterState, cpu: u64) -> UsableCluster {
        UsableCluster {
            tenant: "operator".into(),
            name: name.into(),
            state,
            labels: BTreeMap::new(),
            capacity: Some(Resources {
                cpu_millis: 8000,
                memory_mib: 8192,
            }),
            free: Some(Resources {
                cpu_millis: cpu,
                memory_mib: 4096,
            }),
        }
    }

    fn at(name: &str) -> ClusterRef {
        ClusterRef {
            tenant: "operator".into(),
            name: name.into(),
        }
    }

    #[test]
    fn the_roomiest_online_cluster_that_fits_and_stickiness() {
        let needed = Usage {
            vcpu_millis: 1000,
            memory_mib: 512,
        };
        let candidates = [
            cluster("a", ClusterState::Online, 2000),
            cluster("b", ClusterState::Online, 3000),
            cluster("c", ClusterState::Offline, 9000),
            cluster("d", ClusterState::Online, 500),
            cluster("e", ClusterState::Online, 3000),
        ];
        let registered = |c: &ClusterRef| c.name != "gone";
        let table: [(Option<ClusterRef>, Option<ClusterRef>); 5] = [
            // New: the most free CPU among ONLINE clusters that fit; a tie goes to the first name.
            (None, Some(at("b"))),
            // Placed: stays, even on a cluster that is offline or full now.
            (Some(at("c")), Some(at("c"))),
            (Some(at("d")), Some(at("d"))),
            // Placed on a registered cluster the environment no longer selects: stays (moving
            // it would run a second copy there until the first is removed).
            (Some(at("unselected")), Some(at("unselected"))),
            // Placed on a cluster that is no longer registered: placed again.
            (Some(at("gone")), Some(at("b"))),
        ];
        for (current, expected) in table {
            assert_eq!(
                place(&candidates, needed, current.as_ref(), registered),
                expected,
                "{current:?}"
            );
        }
        let huge = Usage {
            vcpu_millis: 5000,
            memory_mib: 1,
        };
        assert_eq!(place(&candidates, huge, None, registered), None);
        assert_eq!(place(&[], needed, None, registered), None);
    }
}
