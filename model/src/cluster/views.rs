//! What cluster reads return: everything but the join token, which is write-only; and the
//! clusters an environment may use.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::agent_api::{InstanceId, Resources, SetName};
use super::object::{Cluster, ClusterEvent, ClusterRef, ClusterState, ClusterStatus, StoredSet};
use crate::platform::error::PlatformError;
use crate::platform::{environment_may_use, Platform};
use crate::scheduling::metrics::MetricRef;
use crate::scheduling::score::MetricValue;

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
    /// How the control plane reaches the agent: `tls` (its certificate checked against `ca`)
    /// or `plain-http` (no TLS: its join token crosses the network in the clear).
    pub transport: String,
    /// The CA its certificate is checked against (PEM).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ca: Option<String>,
    /// Labels.
    pub labels: BTreeMap<String, String>,
    /// The metrics it is scored on, each with a weight.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub metrics: Vec<MetricRef>,
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
    /// Instances its actor is asked to restart.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pending_restarts: Vec<InstanceId>,
}

/// How an agent at `endpoint` is reached: `tls` or `plain-http`.
pub fn transport_of(endpoint: &str) -> &'static str {
    if endpoint.starts_with("https://") {
        "tls"
    } else {
        "plain-http"
    }
}

/// A pinned set as views show it: without its pod's pull credentials, which only the agent is
/// sent.
fn without_pull_auth(set: &StoredSet) -> StoredSet {
    let mut shown = set.clone();
    if let Some(pod) = &mut shown.spec.exec.pod {
        pod.pull_auth.clear();
    }
    shown
}

impl ClusterView {
    /// The view of a stored cluster.
    pub fn of(cluster: &ClusterRef, stored: &Cluster) -> Self {
        Self {
            tenant: cluster.tenant.clone(),
            name: cluster.name.clone(),
            uid: stored.uid.clone(),
            endpoint: stored.endpoint.clone(),
            transport: transport_of(&stored.endpoint).to_string(),
            ca: stored.ca.clone(),
            labels: stored.labels.clone(),
            metrics: stored.metrics.clone(),
            draining: stored.draining,
            registered_ms: stored.registered_ms,
            status: stored.status.clone(),
            events: stored.events.iter().cloned().collect(),
            sets: stored
                .sets
                .iter()
                .map(|(name, set)| (name.clone(), without_pull_auth(set)))
                .collect(),
            pending_restarts: stored.pending_restarts.keys().cloned().collect(),
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

/// A cluster an environment may use, as `GET …/environment/{e}/clusters` shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct UsableCluster {
    /// Owning tenant (`operator` for platform-wide clusters).
    pub tenant: String,
    /// Name.
    pub name: String,
    /// Its committed state.
    pub state: ClusterState,
    /// Labels.
    pub labels: BTreeMap<String, String>,
    /// Capacity as its agent last reported it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capacity: Option<Resources>,
    /// Free capacity as its agent last reported it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub free: Option<Resources>,
    /// The metrics it is scored on, as its actor last read them.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    #[schema(value_type = Object)]
    pub metrics: BTreeMap<String, MetricValue>,
}

/// The clusters an environment may use and their free capacity.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct EnvironmentClusters {
    /// Every cluster the environment may use, whatever its state.
    pub clusters: Vec<UsableCluster>,
    /// Free capacity of those that are `ONLINE`, summed.
    pub free: Resources,
}

impl Platform {
    /// The clusters environment `environment` of `account` in `tenant` may use.
    pub fn environment_clusters(
        &self,
        tenant: &str,
        account: &str,
        environment: &str,
    ) -> Result<EnvironmentClusters, PlatformError> {
        let spec = self
            .tenant(tenant)
            .and_then(|t| t.accounts.get(account))
            .and_then(|a| a.environments.get(environment))
            .ok_or_else(|| {
                PlatformError::NotFound(format!(
                    "environment {environment:?} of account {account:?} not found"
                ))
            })?;
        let clusters: Vec<UsableCluster> = self
            .clusters()
            .filter(|(cluster, stored)| {
                environment_may_use(
                    tenant,
                    spec.isolated,
                    spec.clusters.as_ref(),
                    cluster,
                    &stored.labels,
                )
            })
            .map(|(cluster, stored)| UsableCluster {
                tenant: cluster.tenant,
                name: cluster.name,
                state: stored.status.state,
                labels: stored.labels.clone(),
                capacity: stored.status.facts.as_ref().map(|f| f.capacity),
                free: stored.status.facts.as_ref().map(|f| f.free),
                metrics: stored.status.metrics.values.clone(),
            })
            .collect();
        let free = clusters
            .iter()
            .filter(|c| c.state == ClusterState::Online)
            .filter_map(|c| c.free)
            .fold(Resources::default(), Resources::plus);
        Ok(EnvironmentClusters { clusters, free })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::agent_api::ExecSpec;
    use crate::cluster::pod::{ContainerSpec, PodSpec, PullAuth, RestartPolicy};

    #[test]
    fn a_pinned_pods_pull_credentials_are_not_shown() {
        let pod = PodSpec {
            containers: vec![ContainerSpec::new("web", "127.0.0.1:5000/web:v1")],
            restart_policy: RestartPolicy::Always,
            host_network: false,
            termination_grace_secs: 30,
            pull_auth: vec![PullAuth {
                registry: "127.0.0.1:5000".into(),
                username: "puller".into(),
                password: "never-shown".into(),
            }],
        };
        let set = StoredSet {
            spec: crate::cluster::object::SetSpec {
                count: 1,
                exec: ExecSpec {
                    pod: Some(pod),
                    ..ExecSpec::default()
                },
                resources: Resources::default(),
                env: BTreeMap::new(),
            },
            revision: 1,
        };
        let shown = serde_json::to_string(&without_pull_auth(&set)).expect("json");
        assert!(
            shown.contains("web:v1") && !shown.contains("never-shown") && !shown.contains("pullAuth"),
            "{shown}"
        );
        assert_eq!(
            set.spec.exec.pod.map(|p| p.pull_auth.len()),
            Some(1),
            "the stored set keeps them"
        );
    }
}
