//! What is committed to run on each cluster ([`Platform::reserved`]), kept between placements
//! so that taking capacity in the apply costs a lookup instead of a scan of every service (at
//! 5,000 services that scan, on every replica for every placement, was most of a placement's
//! cost). Derived data only: never serialized, equal whatever it holds. Placements, service
//! commands and reports update it in place for the services they touch (a create scan at
//! 10,000 services made the rebuild the cost of every create); observations leave it alone;
//! the rare commands that may change many services or a cluster's pinned sets empty it, and
//! the next reader rebuilds it.

use super::placement::{requests, Promised};
use super::Service;
use crate::cluster::agent_api::Resources;
use crate::cluster::ClusterRef;
use crate::derived::Derived;

/// The cache; see the module.
#[derive(Default, Clone, PartialEq, Eq, Debug)]
pub struct ReservationCache(Derived<Option<Promised>>);

impl ReservationCache {
    fn lock(&self) -> std::sync::MutexGuard<'_, Option<Promised>> {
        self.0.lock()
    }

    /// The reservations, built by `build` when nothing is kept.
    pub fn get_or_build(&self, build: impl FnOnce() -> Promised) -> Promised {
        self.lock().get_or_insert_with(build).clone()
    }

    /// One cluster's reservation, built by `build` when nothing is kept.
    pub fn on(&self, cluster: &ClusterRef, build: impl FnOnce() -> Promised) -> Resources {
        self.lock()
            .get_or_insert_with(build)
            .get(cluster)
            .copied()
            .unwrap_or_default()
    }

    /// Forgets everything (a change that may touch reservations in any way).
    pub fn clear(&self) {
        *self.lock() = None;
    }

    /// A service's reservations change from `before` to `after` (each: its clusters and what
    /// it requests on each).
    pub fn replace(&self, before: &[(ClusterRef, Resources)], after: &[(ClusterRef, Resources)]) {
        if let Some(kept) = self.lock().as_mut() {
            for (cluster, requested) in before {
                let entry = kept.entry(cluster.clone()).or_default();
                *entry = entry.minus(*requested);
            }
            for (cluster, requested) in after {
                let entry = kept.entry(cluster.clone()).or_default();
                *entry = entry.plus(*requested);
            }
        }
    }
}

/// What `service` reserves, by cluster: its current revision's requests on the cluster it is
/// placed on and the one it moves to.
pub fn held_by(service: &Service) -> Vec<(ClusterRef, Resources)> {
    let Some(revision) = service.current.and_then(|n| service.revisions.get(&n)) else {
        return Vec::new();
    };
    service
        .placement
        .iter()
        .chain(service.migrating_to.iter())
        .map(|cluster| (cluster.clone(), requests(revision)))
        .collect()
}
