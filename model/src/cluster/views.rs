//! What cluster reads return: everything but the join token, which is write-only.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::agent_api::SetName;
use super::object::{Cluster, ClusterEvent, ClusterRef, ClusterStatus, StoredSet};
use crate::platform::{Platform, PlatformError};

/// A cluster as the API shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct ClusterView {
    /// Owning tenant (`operator` for platform-wide clusters).
    pub tenant: String,
    /// Name.
    pub name: String,
    /// Generated at registration.
    pub uid: String,
    /// The agent's cluster API.
    pub endpoint: String,
    /// Labels.
    pub labels: BTreeMap<String, String>,
    /// Being drained.
    pub draining: bool,
    /// When it was registered (ms since the epoch).
    pub registered_ms: u64,
    /// What its actor last observed.
    pub status: ClusterStatus,
    /// Recent state transitions, oldest first.
    pub events: Vec<ClusterEvent>,
    /// Desired sets pinned to it.
    #[schema(value_type = Object)]
    pub sets: BTreeMap<SetName, StoredSet>,
}

impl ClusterView {
    /// The view of a stored cluster.
    pub fn of(cluster: &ClusterRef, stored: &Cluster) -> Self {
        Self {
            tenant: cluster.tenant.clone(),
            name: cluster.name.clone(),
            uid: stored.uid.clone(),
            endpoint: stored.endpoint.clone(),
            labels: stored.labels.clone(),
            draining: stored.draining,
            registered_ms: stored.registered_ms,
            status: stored.status.clone(),
            events: stored.events.iter().cloned().collect(),
            sets: stored.sets.clone(),
        }
    }
}

impl Platform {
    /// The clusters of one tenant.
    pub fn cluster_list(&self, tenant: &str) -> Result<Vec<ClusterView>, PlatformError> {
        let found = self
            .tenant(tenant)
            .ok_or_else(|| PlatformError::NotFound(format!("tenant {tenant:?} not found")))?;
        Ok(found
            .clusters
            .iter()
            .map(|(name, stored)| {
                let cluster = ClusterRef {
                    tenant: tenant.to_string(),
                    name: name.clone(),
                };
                ClusterView::of(&cluster, stored)
            })
            .collect())
    }

    /// One cluster.
    pub fn cluster_view(&self, cluster: &ClusterRef) -> Result<ClusterView, PlatformError> {
        self.cluster(cluster)
            .map(|stored| ClusterView::of(cluster, stored))
            .ok_or_else(|| {
                PlatformError::NotFound(format!(
                    "cluster {:?} of tenant {:?} not found",
                    cluster.name, cluster.tenant
                ))
            })
    }

    /// Every cluster of every tenant (operators).
    pub fn all_clusters(&self) -> Vec<ClusterView> {
        self.clusters()
            .map(|(cluster, stored)| ClusterView::of(&cluster, stored))
            .collect()
    }
}
