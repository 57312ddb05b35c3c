//! The platform's side of placement: applying a placement, reading where services run and
//! what they hold on each cluster.

use super::placement::{instance_ids_of, requests, set_name, Placement, Promised, RunStatus};
use super::reservations::held_by;
use super::Service;
use crate::cluster::agent_api::SetName;
use crate::cluster::{ids_digest, ClusterRef};
use crate::platform::error::PlatformError;
use crate::platform::Platform;
use crate::scheduling::{schedule, Candidate, Decision, Needs, STICKINESS};
use std::collections::BTreeSet;

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
                let executor = self
                    .cluster(&cluster)
                    .and_then(|c| c.status.facts.as_ref())
                    .map(|facts| facts.executor.as_str());
                Candidate {
                    custom_resources: self.custom_resources_of(&cluster),
                    executor,
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
            surge: revision.deployment.surge_usage(),
            labels,
            metrics,
            custom_resources: revision.deployment.constraints.custom_resources.clone(),
            containers: revision.deployment.roles.values().any(|r| r.exec.pod.is_some()),
            programs: revision.deployment.roles.values().any(|r| r.exec.pod.is_none()),
        };
        Some(schedule(
            &needs,
            &candidates,
            stored.placement.as_ref(),
            STICKINESS,
        ))
    }

    /// The custom resources a cluster advertises (its Krake `spec.custom_resources`).
    fn custom_resources_of(&self, cluster: &ClusterRef) -> &[String] {
        self.tenant(&cluster.tenant)
            .and_then(|t| t.krake.clusters.get(&cluster.name))
            .map_or(&[], |extras| extras.spec.custom_resources.as_slice())
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
