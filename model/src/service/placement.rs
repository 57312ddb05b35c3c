//! Placement: which cluster a service's instances run on, chosen by the pure scheduler
//! ([`crate::scheduling::schedule`]: Krake's constraints, ONLINE clusters whose free capacity
//! fits, metric scores, stickiness, deterministic ties) among the clusters its environment may
//! use. A placed service moves only through a migration (`migrating_to`: created on the new
//! cluster first, switched once ready, the old copies removed once their cluster answers). The
//! leader commits each decision as a [`Placement`] with its explanation, so a new leader knows
//! where every service runs and why.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use super::reservations::held_by;
use super::rollout::RoleTarget;
use super::{Revision, RoleSpec, Service};
use crate::cluster::agent_api::{InstanceId, InstanceSpec, Resources, SetName};
use crate::cluster::{ids_digest, ClusterRef};
use crate::platform::{Platform, PlatformError};
use crate::scheduling::{schedule, Candidate, Decision, Needs, STICKINESS};

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
    /// Why: the winning score, the other candidates and why the rest were excluded.
    #[serde(default)]
    pub decision: crate::scheduling::Decision,
    /// A move of a placed service (its cluster failed): the service starts on `cluster` first
    /// and switches once it runs there.
    #[serde(default)]
    pub migrate: bool,
    /// The leader's time the decision was taken at (ms since the epoch): a move's start, from
    /// which the next migration interval counts. 0 in entries of earlier builds (then the
    /// entry's own time counts).
    #[serde(default)]
    pub decided_ms: u64,
}

/// What clusters are promised, by cluster: what is committed to run there
/// ([`Platform::reserved`]) plus what a placement pass placed there before committing.
pub type Promised = std::collections::HashMap<ClusterRef, crate::cluster::agent_api::Resources>;

/// What a revision's instances request, as cluster resources.
pub(crate) fn requests(revision: &Revision) -> Resources {
    Resources {
        cpu_millis: revision.usage.vcpu_millis,
        memory_mib: revision.usage.memory_mib,
    }
}

/// The desired set name of a service: `{tenant}.{service}`.
pub fn set_name(tenant: &str, service: &str) -> Option<SetName> {
    SetName::parse(&format!("{tenant}.{service}")).ok()
}

impl Platform {
    /// Records a placement (or the start of a move), if the service still has that uid and is
    /// not being deleted; whether it changed anything.
    pub fn apply_placement(&mut self, now_ms: u64, placement: &Placement) -> Result<bool, PlatformError> {
        self.check_room(placement)?;
        let stored = self
            .tenants
            .get_mut(&placement.tenant)
            .and_then(|t| t.services.get_mut(&placement.service))
            .filter(|s| s.uid == placement.uid && s.deleting_ms.is_none());
        let Some(stored) = stored else {
            return Ok(false);
        };
        let before = held_by(stored);
        let changed = Self::place(stored, now_ms, placement);
        self.reservations.replace(&before, &held_by(stored));
        #[cfg(test)]
        self.assert_derived_consistent();
        Ok(changed)
    }

    /// Moves `stored` as `placement` says; whether it changed anything.
    fn place(stored: &mut Service, now_ms: u64, placement: &Placement) -> bool {
        if placement.migrate {
            if stored.placement.is_none() || stored.placement.as_ref() == Some(&placement.cluster) {
                // Not placed, or already there: a move makes no sense.
                return false;
            }
            if stored.migrating_to.is_none() {
                // A move starts: the next one may start only a migration interval after the
                // time it was decided at (committed with it, so every replica agrees).
                stored.moved_ms = if placement.decided_ms == 0 {
                    now_ms
                } else {
                    placement.decided_ms.min(now_ms)
                };
            }
            let changed = stored.migrating_to.as_ref() != Some(&placement.cluster);
            stored.migrating_to = Some(placement.cluster.clone());
            stored.scheduling = Some(placement.decision.clone());
            return changed;
        }
        let moved = stored.placement.as_ref() != Some(&placement.cluster);
        let ended_move = stored.migrating_to.take().is_some();
        stored.placement = Some(placement.cluster.clone());
        stored.scheduling = Some(placement.decision.clone());
        moved || ended_move
    }

    /// What is committed to run on each cluster: its pinned sets, and every service placed on
    /// it or moving to it (deleted ones too, until their end is committed).
    pub fn reserved(&self) -> Promised {
        self.reservations.get_or_build(|| self.reserved_uncached())
    }

    /// [`Self::reserved`] computed from every service.
    pub(crate) fn reserved_uncached(&self) -> Promised {
        let mut reserved: Promised = self
            .clusters()
            .map(|(cluster, stored)| (cluster, stored.requested()))
            .collect();
        for (_, tenant) in self.tenants() {
            for service in tenant.services.values() {
                for (cluster, requested) in held_by(service) {
                    let entry = reserved.entry(cluster).or_default();
                    *entry = entry.plus(requested);
                }
            }
        }
        reserved
    }

    /// Capacity is taken in the apply: a placement that puts a service on a cluster it does not
    /// occupy yet is refused unless what is committed there, with this service, fits the
    /// cluster's capacity — two placements can never count on the same room, whatever the
    /// leader that proposed them believed.
    fn check_room(&self, placement: &Placement) -> Result<(), PlatformError> {
        let Ok(stored) = self.service(&placement.tenant, &placement.service) else {
            return Ok(());
        };
        let occupies = stored.placement.as_ref() == Some(&placement.cluster)
            || stored.migrating_to.as_ref() == Some(&placement.cluster);
        let Some(revision) = stored.current.and_then(|n| stored.revisions.get(&n)) else {
            return Ok(());
        };
        if stored.uid != placement.uid || occupies {
            return Ok(());
        }
        let capacity = self
            .cluster(&placement.cluster)
            .and_then(|c| c.status.facts.as_ref())
            .map(|facts| facts.capacity)
            .ok_or_else(|| {
                PlatformError::Conflict(format!(
                    "cluster {} has not reported its capacity yet",
                    placement.cluster
                ))
            })?;
        // The service does not occupy this cluster: all it holds is others'.
        let committed = self
            .reservations
            .on(&placement.cluster, || self.reserved_uncached());
        let needed = requests(revision);
        let total = committed.plus(needed);
        if total.cpu_millis > capacity.cpu_millis || total.memory_mib > capacity.memory_mib {
            return Err(PlatformError::Conflict(format!(
                "cluster {} has no room for service {}/{}: it needs {}m CPU and {} MiB; {}m and {} MiB of its {}m and {} MiB are committed",
                placement.cluster,
                placement.tenant,
                placement.service,
                needed.cpu_millis,
                needed.memory_mib,
                committed.cpu_millis,
                committed.memory_mib,
                capacity.cpu_millis,
                capacity.memory_mib
            )));
        }
        Ok(())
    }

    /// Where `tenant`'s `service` should run now, by the scheduler ([`crate::scheduling`]),
    /// among the clusters its environment may use; a cluster's free room is its capacity less
    /// what `promised` holds for it ([`Platform::reserved`], plus what a pass placed before
    /// committing), the service's own share given back where it runs. `None` for a service
    /// that does not exist or has no accepted revision.
    pub fn schedule_service(&self, tenant: &str, service: &str, promised: &Promised) -> Option<Decision> {
        let stored = self.service(tenant, service).ok()?;
        let revision = stored.current.and_then(|n| stored.revisions.get(&n))?;
        let (labels, metrics) = revision.deployment.constraints.parsed().ok()?;
        let usage = requests(revision);
        let environment = &stored.environment;
        let usable = self
            .environment_clusters(tenant, &environment.account, &environment.environment)
            .map(|usable| usable.clusters)
            .unwrap_or_default();
        let candidates: Vec<Candidate<'_>> = usable
            .iter()
            .map(|c| {
                let cluster = ClusterRef {
                    tenant: c.tenant.clone(),
                    name: c.name.clone(),
                };
                let taken = promised.get(&cluster).copied().unwrap_or_default();
                let free = c.capacity.map(|capacity| capacity.minus(taken));
                // Where it runs (or is moving to), its own instances take no room from it.
                let own = stored.placement.as_ref() == Some(&cluster)
                    || stored.migrating_to.as_ref() == Some(&cluster);
                let free = free.map(|free| if own { free.plus(usage) } else { free });
                Candidate {
                    cluster,
                    state: c.state,
                    labels: &c.labels,
                    free,
                    metrics: (!c.metrics.is_empty()).then_some(&c.metrics),
                }
            })
            .collect();
        let needs = Needs {
            service: stored.uid.clone(),
            usage: revision.usage,
            labels,
            metrics,
        };
        Some(schedule(
            &needs,
            &candidates,
            stored.placement.as_ref(),
            STICKINESS,
        ))
    }

    /// Which of `sets` belong to a service placed on (or moving to) `cluster`, deleted ones
    /// included: the cluster's actor leaves them to their service actors and removes any other
    /// set no pinned set or service owns (what a forced delete orphaned, or the old copies of a
    /// service that moved away). A set is named `tenant.service`; every way of cutting its name
    /// at a dot is looked up, so the cost is a few lookups per set, not a walk of every service.
    pub fn service_sets_among<'a>(
        &self,
        cluster: &ClusterRef,
        sets: impl IntoIterator<Item = &'a SetName>,
    ) -> BTreeSet<SetName> {
        sets.into_iter()
            .filter(|set| {
                let name = set.as_str();
                name.match_indices('.').any(|(at, _)| {
                    let (tenant, service) = (&name[..at], &name[at + 1..]);
                    self.tenants
                        .get(tenant)
                        .and_then(|t| t.services.get(service))
                        .is_some_and(|service| {
                            service.placement.as_ref() == Some(cluster)
                                || service.migrating_to.as_ref() == Some(cluster)
                        })
                })
            })
            .cloned()
            .collect()
    }

    /// The sets of every service placed on (or moving to) `cluster`, deleted ones included
    /// (the walk of every service that [`Self::service_sets_among`] answers for given sets;
    /// kept for the tables that check the two agree).
    #[cfg(test)]
    pub(crate) fn service_sets_on(&self, cluster: &ClusterRef) -> BTreeSet<SetName> {
        self.tenants()
            .flat_map(|(tenant, stored)| {
                stored
                    .services
                    .iter()
                    .filter(|(_, service)| {
                        service.placement.as_ref() == Some(cluster)
                            || service.migrating_to.as_ref() == Some(cluster)
                    })
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
            set_name(tenant, service).map_or(Vec::new(), |set| instance_ids_of(&set, r))
        });
        let observed = stored
            .placement
            .as_ref()
            .and_then(|cluster| self.cluster(cluster))
            .and_then(|cluster| cluster.status.sets.get(&set_name(tenant, service)?).copied())
            .unwrap_or_default();
        let wanted = ids_digest(desired.iter());
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

/// Each instance of `revision` in set `set`: its role's spec and its id
/// `{set}.{role}.r{role revision}.{ordinal}`.
fn each_instance<'a>(
    set: &'a SetName,
    revision: &'a Revision,
) -> impl Iterator<Item = (&'a RoleSpec, InstanceId)> + 'a {
    revision.deployment.roles.iter().flat_map(move |(role, spec)| {
        let role_revision = revision
            .role_revisions
            .get(role)
            .copied()
            .unwrap_or(revision.number);
        (0..spec.instances).filter_map(move |ordinal| {
            InstanceId::derive(set.as_str(), role_revision, role, ordinal)
                .ok()
                .map(|id| (spec, id))
        })
    })
}

/// Every instance of `revision` in set `set`.
pub(crate) fn instances_of(set: &SetName, revision: &Revision) -> Vec<InstanceSpec> {
    each_instance(set, revision)
        .map(|(spec, id)| InstanceSpec {
            id,
            exec: spec.exec.clone(),
            resources: spec.resources,
            env: spec.env.clone(),
        })
        .collect()
}

/// The ids of every instance of `revision` in set `set`, without building their specs (a
/// status needs only the ids).
pub(crate) fn instance_ids_of(set: &SetName, revision: &Revision) -> Vec<InstanceId> {
    each_instance(set, revision).map(|(_, id)| id).collect()
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
