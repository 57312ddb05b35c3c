//! Workload clusters: the replicated cluster objects the control plane keeps, the changes users
//! and cluster actors make to them, and the wire protocol ([`agent_api`]) the control plane
//! speaks with the `drover agent` behind each cluster, whose identity ([`identity`]) binds it to
//! one cluster object.

pub mod agent_api;
mod command;
pub mod identity;
pub mod image;
mod object;
pub mod pod;
mod resources;
mod spec_error;
#[cfg(test)]
mod tests;
pub mod validate;
pub mod views;

pub use command::{ClusterCommand, ClusterObservation, ClusterOp, SetsChange};
pub use object::{
    ids_digest, AgentAccess, Cluster, ClusterEvent, ClusterFacts, ClusterPatch, ClusterRef,
    ClusterRegistration, ClusterState, ClusterStatus, InstanceCounts, SetObservation, SetSpec, StoredSet,
    EVENTS_KEPT, MAX_JOIN_TOKEN_LEN,
};
