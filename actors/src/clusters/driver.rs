//! The one way the control plane talks to a cluster: a [`Driver`] takes whole desired sets and
//! reports the observed inventory. The `drover agent` client ([`super::AgentDriver`]) is the
//! first implementation; a Kubernetes driver (server-side apply through a kubeconfig) fits the
//! same trait. A cluster that identifies itself ([`Driver::identified_facts`]) is driven by one
//! cluster object only: the driver names the cluster object in every change
//! ([`Driver::for_cluster`]) and the cluster refuses another's ([`DriverError::Bound`]).

use std::sync::Arc;

use async_trait::async_trait;
use drover_model::cluster::agent_api::{
    Fence, InstanceId, InstanceSpec, Inventory, LogChunk, LogQuery, NodeFacts, SetName,
};
use drover_model::cluster::identity::AgentIdentity;
use thiserror::Error;

/// Why a driver call failed.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum DriverError {
    /// The cluster could not be reached (connection refused, timeout, 503).
    #[error("cluster unreachable: {0}")]
    Unreachable(String),
    /// The cluster has accepted a newer fence: this leader is deposed.
    #[error("fenced: {0}")]
    Fenced(String),
    /// The cluster is driven by another cluster object and refuses this one's changes.
    #[error("{0}")]
    Bound(String),
    /// The cluster does not know the instance or set.
    #[error("not found: {0}")]
    NotFound(String),
    /// The cluster refused the call (bad request, no room, wrong token).
    #[error("refused ({status}): {message}")]
    Refused {
        /// HTTP status.
        status: u16,
        /// The cluster's message.
        message: String,
    },
    /// The cluster's answer was not understood.
    #[error("cannot read the cluster's answer: {0}")]
    Decode(String),
}

impl DriverError {
    /// The `outcome` label of a call's metric.
    pub fn outcome<T>(result: &Result<T, DriverError>) -> &'static str {
        match result {
            Ok(_) => "ok",
            Err(DriverError::Fenced(_)) => "fenced",
            Err(DriverError::Bound(_)) => "bound",
            Err(DriverError::Unreachable(_)) => "unreachable",
            Err(_) => "error",
        }
    }
}

/// `text` cut to `max` characters (marked `…`): what a cluster says is outside the control
/// plane, and a megabyte of it must not be replicated.
pub fn bounded(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_string(),
    }
}

/// Desired sets in, observed inventory out.
#[async_trait]
pub trait Driver: Send + Sync {
    /// The cluster's machines, capacity and pressure.
    async fn facts(&self) -> Result<NodeFacts, DriverError>;
    /// Everything the cluster runs.
    async fn inventory(&self) -> Result<Inventory, DriverError>;
    /// Records `fence` as the cluster's highest, changing nothing else, and returns what it
    /// runs: after this, calls of older leaders are refused, so the inventory is final for them.
    async fn raise_fence(&self, fence: Fence) -> Result<Inventory, DriverError>;
    /// Makes `instances` the whole desired set `set` (empty: remove it), under `fence`; returns
    /// the set's inventory right after.
    async fn apply_set(
        &self,
        fence: Fence,
        set: &SetName,
        instances: Vec<InstanceSpec>,
    ) -> Result<Inventory, DriverError>;
    /// Stops and starts one instance again, under `fence`.
    async fn restart(&self, fence: Fence, id: &InstanceId) -> Result<(), DriverError>;
    /// What an instance wrote: its last lines, or what follows an offset.
    async fn logs(&self, id: &InstanceId, query: &LogQuery) -> Result<LogChunk, DriverError>;

    /// The facts and who answers: the agent's id and the cluster object it is bound to. `None`
    /// for a cluster that keeps no identity (and cannot be told apart from another).
    async fn identified_facts(&self) -> Result<(NodeFacts, Option<AgentIdentity>), DriverError> {
        Ok((self.facts().await?, None))
    }

    /// This driver with every change naming cluster object `uid`, so that the cluster, once
    /// bound to one cluster object, refuses another's changes. `None`: this kind of cluster
    /// keeps no binding, and the driver is used as it is.
    fn for_cluster(&self, uid: &str) -> Option<Arc<dyn Driver>> {
        let _ = uid;
        None
    }

    /// [`Driver::raise_fence`] that also takes the cluster over from cluster object `from`, the
    /// one it is bound to, which no longer exists. The cluster refuses it if it is bound to
    /// another.
    async fn take_over(&self, fence: Fence, from: &str) -> Result<Inventory, DriverError> {
        let _ = from;
        self.raise_fence(fence).await
    }
}
