//! What the leader's cluster actors last saw of their clusters, shared in memory with the
//! service actors: each cluster's instances by set, whether it answered, when the inventory was
//! read, and the driver to reach it. Nothing here is replicated; a new leader starts empty and
//! fills it from the agents (a cluster is published only once its actor has raised the agent's
//! fence to this term, so what it shows can no longer change under a deposed leader's calls).

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, RwLock};
use tokio::time::Instant;

use drover_model::cluster::agent_api::{InstanceStatus, SetName};
use drover_model::cluster::ClusterRef;

use super::driver::Driver;

/// One cluster as its actor last saw it.
#[derive(Clone)]
pub struct Observation {
    /// The leadership term of the actor that saw it.
    pub term: u64,
    /// The cluster registration's uid.
    pub uid: String,
    /// When the inventory shown was asked for: anything sent to the agent before is in it.
    pub read_at: Instant,
    /// Whether the agent answered the last probe (when not, `sets` is from an earlier one).
    pub reachable: bool,
    /// Each set's instances. A set that did not change since the actor's previous inventory
    /// keeps the same allocation, so a service actor tells "unchanged" by pointer.
    pub sets: Arc<ObservedSets>,
    /// How to reach the cluster.
    pub driver: Arc<dyn Driver>,
}

/// One set's instances, shared.
pub type SetInstances = Arc<[InstanceStatus]>;

/// Each set's instances.
pub type ObservedSets = BTreeMap<SetName, SetInstances>;

/// The instances of each set in `instances` (taken, not copied); a set whose instances equal
/// those in `previous` shares its allocation.
pub fn by_set(instances: Vec<InstanceStatus>, previous: &ObservedSets) -> ObservedSets {
    let mut grouped: BTreeMap<SetName, Vec<InstanceStatus>> = BTreeMap::new();
    for instance in instances {
        match grouped.get_mut(&instance.set) {
            Some(members) => members.push(instance),
            None => {
                grouped.insert(instance.set.clone(), vec![instance]);
            }
        }
    }
    grouped
        .into_iter()
        .map(|(set, instances)| {
            let shared = match previous.get(&set) {
                Some(before) if **before == *instances => before.clone(),
                _ => SetInstances::from(instances),
            };
            (set, shared)
        })
        .collect()
}

/// The shared map, one per node; cheap to clone.
#[derive(Clone, Default)]
pub struct Observations(Arc<RwLock<HashMap<ClusterRef, Observation>>>);

impl Observations {
    /// What was last seen of `cluster` in `term`, if anything.
    pub fn get(&self, cluster: &ClusterRef, term: u64) -> Option<Observation> {
        let map = self.0.read().unwrap_or_else(|poisoned| poisoned.into_inner());
        map.get(cluster).filter(|o| o.term == term).cloned()
    }

    /// What was last seen of one set of `cluster` in `term`, without copying the observation:
    /// when it was read, whether the agent answered, and the set's instances.
    pub fn set_view(
        &self,
        cluster: &ClusterRef,
        term: u64,
        set: &SetName,
    ) -> Option<(Instant, bool, Option<SetInstances>)> {
        let map = self.0.read().unwrap_or_else(|poisoned| poisoned.into_inner());
        let o = map.get(cluster).filter(|o| o.term == term)?;
        Some((o.read_at, o.reachable, o.sets.get(set).cloned()))
    }

    /// Records what `cluster`'s actor saw.
    pub fn publish(&self, cluster: &ClusterRef, observation: Observation) {
        let mut map = self.0.write().unwrap_or_else(|poisoned| poisoned.into_inner());
        map.insert(cluster.clone(), observation);
    }

    /// Marks `cluster` as not answering in `term`, keeping what it last showed in this term
    /// (nothing, when it has not answered in this term at all).
    pub fn unreachable(&self, cluster: &ClusterRef, term: u64, uid: &str, driver: Arc<dyn Driver>) {
        let mut map = self.0.write().unwrap_or_else(|poisoned| poisoned.into_inner());
        match map.get_mut(cluster).filter(|o| o.term == term) {
            Some(observation) => observation.reachable = false,
            None => {
                let silent = Observation {
                    term,
                    uid: uid.to_string(),
                    read_at: Instant::now(),
                    reachable: false,
                    sets: Arc::new(BTreeMap::new()),
                    driver,
                };
                map.insert(cluster.clone(), silent);
            }
        }
    }

    /// Forgets `cluster` (its actor stopped).
    pub fn forget(&self, cluster: &ClusterRef, uid: &str) {
        let mut map = self.0.write().unwrap_or_else(|poisoned| poisoned.into_inner());
        if map.get(cluster).is_some_and(|o| o.uid == uid) {
            map.remove(cluster);
        }
    }
}
