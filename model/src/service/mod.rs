//! Services and their revisions (Axebow's service endpoints, API `1.0-beta`): what a
//! service deploys ([`Deployment`]: roles with instance counts, resource requests and what each
//! instance runs), the revisions that change it (`PUT`, `PATCH`, `SCALE`, `ROLLBACK`), their
//! cost against the environment's marks, acceptance, and the one-pending-revision and
//! `previous` rules. Every change is a [`ServiceCommand`] carrying the caller's identity and is
//! applied by the pure `Platform::apply_service`.
//!
//! Reconciliation (the leader's service actors, placement on clusters) reads the accepted
//! revision; it is not part of this module.

mod channels;
mod deployment;
#[cfg(test)]
mod fixtures;
mod link_ops;
pub mod links;
pub mod placement;
mod placement_ops;
mod placement_pass;
pub mod pod_level;
pub mod reconcile;
pub mod reservations;
mod revise;
pub mod rollout;
pub mod simple;
pub mod source;
#[cfg(test)]
mod tests;
mod version_ops;
pub mod versions;
pub mod views;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

pub use deployment::{Constraints, Deployment, ResourceUse, RoleSpec, Usage, MAX_ROLE_INSTANCES};
pub use revise::{revise, Change};

use crate::platform::identity::Identity;

/// What kind of change made a revision (Axebow's history `type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum RevisionType {
    /// A whole deployment: the first revision, or a full update.
    Put,
    /// A merge patch over the previous revision.
    Patch,
    /// New instance counts only.
    Scale,
    /// A copy of an earlier revision.
    Rollback,
}

/// One revision of a service.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct Revision {
    /// Its number: 1 for the first, one more than the last for every other.
    pub number: u64,
    /// What made it.
    #[serde(rename = "type")]
    pub kind: RevisionType,
    /// The revision it was made from (none for the first).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub previous: Option<u64>,
    /// For a rollback: the revision whose deployment it copies.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reinstates: Option<u64>,
    /// The caller's comment.
    #[serde(default)]
    pub comment: String,
    /// What it deploys.
    pub deployment: Deployment,
    /// What it costs.
    pub usage: Usage,
    /// Accepted (deployed, or the one that was); a pending revision is not.
    pub accepted: bool,
    /// Leader time it was made (ms since the epoch).
    pub created_ms: u64,
    /// For each role, the revision that last changed what its instances run (program,
    /// resources, environment): instance ids carry it, so a revision that only scales keeps
    /// the running instances and one that changes a role replaces that role's.
    #[serde(default)]
    pub role_revisions: BTreeMap<String, u64>,
}

impl Revision {
    /// The role revisions of a revision numbered `number` deploying `deployment`, made from
    /// `previous` (none for the first).
    pub fn role_revisions_of(
        number: u64,
        deployment: &Deployment,
        previous: Option<&Revision>,
    ) -> BTreeMap<String, u64> {
        deployment
            .roles
            .iter()
            .map(|(role, spec)| {
                let kept = previous.and_then(|before| {
                    let old = before.deployment.roles.get(role)?;
                    let same =
                        old.exec == spec.exec && old.resources == spec.resources && old.env == spec.env;
                    same.then(|| before.role_revisions.get(role).copied())?
                });
                (role.clone(), kept.unwrap_or(number))
            })
            .collect()
    }
}

/// Where a service is deployed: one environment of one of its tenant's accounts.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, ToSchema)]
pub struct EnvironmentRef {
    /// Account name.
    pub account: String,
    /// Environment name.
    pub environment: String,
}

impl EnvironmentRef {
    /// `account/environment`, the name the selection algorithm knows it by.
    pub fn name(&self) -> String {
        format!("{}/{}", self.account, self.environment)
    }
}

/// A stored service.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Service {
    /// Generated when it was created.
    pub uid: String,
    /// The environment it was placed in (chosen for its first revision, kept after).
    pub environment: EnvironmentRef,
    /// Every revision that was not rejected, by number.
    pub revisions: BTreeMap<u64, Revision>,
    /// The accepted revision deployed now; none until the first is accepted.
    pub current: Option<u64>,
    /// The revision waiting for acceptance, if any (at most one).
    pub pending: Option<u64>,
    /// The cluster its instances run on, once the leader placed it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub placement: Option<crate::cluster::ClusterRef>,
    /// Leader time it was created (ms since the epoch).
    pub created_ms: u64,
    /// Leader time it was deleted: its actor removes its instances (a finalizer), then the
    /// object goes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deleting_ms: Option<u64>,
    /// What its actor last reported.
    #[serde(default)]
    pub reconcile: reconcile::ReconcileStatus,
    /// The last [`reconcile::EVENTS_KEPT`] phase changes, in Axebow's event shape.
    #[serde(default)]
    pub events: std::collections::VecDeque<reconcile::ServiceEvent>,
    /// The state revision that last changed it (its resource version).
    #[serde(default)]
    pub version: u64,
    /// The state revision that created it.
    #[serde(default)]
    pub created_version: u64,
    /// Why it was placed where it runs (the scheduler's decision).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scheduling: Option<crate::scheduling::Decision>,
    /// The cluster it is moving to: its actor starts it there, and once every instance runs
    /// there it becomes the placement; the old cluster's copies are then removed by that
    /// cluster's actor (they belong to no service there any more) when it answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub migrating_to: Option<crate::cluster::ClusterRef>,
    /// Leader time its last move started (ms since the epoch; 0: it never moved): moves start
    /// at least the migration interval apart.
    #[serde(default)]
    pub moved_ms: u64,
}

/// Most revisions a service keeps; older ones (never the current or the pending one) are
/// forgotten and can no longer be rolled back to.
pub const REVISIONS_KEPT: usize = 100;

impl Service {
    /// Forgets the oldest revisions beyond [`REVISIONS_KEPT`], keeping the current and the
    /// pending one.
    pub fn forget_oldest_revisions(&mut self) {
        while self.revisions.len() > REVISIONS_KEPT {
            let Some(oldest) = self
                .revisions
                .keys()
                .copied()
                .find(|n| Some(*n) != self.current && Some(*n) != self.pending)
            else {
                break;
            };
            self.revisions.remove(&oldest);
        }
    }

    /// The current revision's usage (nothing before the first acceptance).
    pub fn deployed_usage(&self) -> Usage {
        self.current
            .and_then(|number| self.revisions.get(&number))
            .map(|revision| revision.usage)
            .unwrap_or_default()
    }

    /// The resources its revisions use (current and pending), as `(kind, name)`.
    pub fn uses_resource(&self, kind: &str, name: &str) -> bool {
        [self.current, self.pending]
            .into_iter()
            .flatten()
            .filter_map(|number| self.revisions.get(&number))
            .any(|revision| {
                revision
                    .deployment
                    .resources
                    .iter()
                    .any(|used| used.kind == kind && used.name == name)
            })
    }
}

/// One change of services, made by `caller`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServiceCommand {
    /// The verified identity of whoever asked.
    pub caller: Identity,
    /// What they asked for.
    pub change: ServiceOp,
}

/// The changes of services (any confirmed member of the tenant, as Axebow's deploy rights go;
/// the tenant's `validateEnvironmentUser` rules decide further).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ServiceOp {
    /// Create a service with its first revision.
    Create {
        /// Tenant name.
        tenant: String,
        /// Service name.
        service: String,
        /// Generated by the proposer.
        uid: String,
        /// What it deploys.
        deployment: Deployment,
        /// The caller's comment.
        comment: String,
        /// Accept at once when the revision is within the marks and the environment was chosen
        /// as accepting.
        accept: bool,
    },
    /// A new revision made from `previous`, which must be the current one.
    Revise {
        /// Tenant name.
        tenant: String,
        /// Service name.
        service: String,
        /// The revision it is made from.
        previous: u64,
        /// How it differs.
        change: Change,
        /// The caller's comment.
        comment: String,
        /// Accept at once when within the marks.
        accept: bool,
        /// Remove the links that use channels the new revision drops (else such an update is
        /// refused).
        #[serde(default)]
        remove_links: bool,
    },
    /// Accept or reject the pending revision (`revision`, when given, must be it).
    Decide {
        /// Tenant name.
        tenant: String,
        /// Service name.
        service: String,
        /// The revision meant.
        revision: Option<u64>,
        /// Accept (`true`) or reject.
        accept: bool,
    },
    /// Delete a service and its history: at once when nothing of it can run, else it is
    /// marked deleting and goes once its actor has removed its instances. `force` (operators
    /// only) removes it at once, orphaning what runs (the cluster's actor removes a set that
    /// belongs to no service when the cluster answers).
    Delete {
        /// Tenant name.
        tenant: String,
        /// Service name.
        service: String,
        /// Remove the object now, whatever runs.
        #[serde(default)]
        force: bool,
    },
    /// Link a client channel to a server channel of a service in the same environment, or
    /// remove the link.
    Link {
        /// The link; its client's tenant is the one the caller must belong to.
        link: links::Link,
        /// Remove it instead.
        remove: bool,
    },
    /// Restart every instance of a role, or one of them (Axebow's `DELETE` on a role or an
    /// instance): the request is committed on the service's cluster and carried out by its
    /// actor.
    Restart {
        /// Tenant name.
        tenant: String,
        /// Service name.
        service: String,
        /// Role name.
        role: String,
        /// One instance of the role; all of them when `None`.
        instance: Option<crate::cluster::agent_api::InstanceId>,
    },
}

impl ServiceOp {
    /// The services the change is about, as (tenant, service).
    pub fn services(&self) -> Vec<(String, String)> {
        match self {
            ServiceOp::Create { tenant, service, .. }
            | ServiceOp::Revise { tenant, service, .. }
            | ServiceOp::Decide { tenant, service, .. }
            | ServiceOp::Delete { tenant, service, .. }
            | ServiceOp::Restart { tenant, service, .. } => vec![(tenant.clone(), service.clone())],
            ServiceOp::Link { link, .. } => vec![
                (link.client.tenant.clone(), link.client.service.clone()),
                (link.server.tenant.clone(), link.server.service.clone()),
            ],
        }
    }

    /// The tenant the change is about.
    pub fn tenant(&self) -> &str {
        match self {
            ServiceOp::Create { tenant, .. }
            | ServiceOp::Revise { tenant, .. }
            | ServiceOp::Decide { tenant, .. }
            | ServiceOp::Delete { tenant, .. }
            | ServiceOp::Restart { tenant, .. } => tenant,
            ServiceOp::Link { link, .. } => &link.client.tenant,
        }
    }
}

/// What a service change reports.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct ServiceOutcome {
    /// The revision made or decided (none for a delete or a rejection).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revision: Option<u64>,
    /// Whether that revision is accepted now.
    pub accepted: bool,
    /// The service's environment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub environment: Option<EnvironmentRef>,
    /// Whether the service is gone (deleted, or its first revision rejected).
    pub removed: bool,
    /// Deleted, and waiting for its instances to go.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub deleting: bool,
    /// What a forced delete left running: the cluster and how many instances it last reported.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub orphaned: Option<Orphaned>,
}

/// Instances a forced delete left on a cluster.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct Orphaned {
    /// The cluster.
    pub cluster: crate::cluster::ClusterRef,
    /// Instances of the service its agent last reported.
    pub instances: u32,
}

/// The `$.service` a selector reads for a revision: its name, roles and usage.
pub fn selector_view(service: &str, deployment: &Deployment, usage: Usage) -> Value {
    serde_json::json!({
        "name": service,
        "roles": deployment.roles.keys().collect::<Vec<_>>(),
        "usage": {"vcpu": usage.vcpu_millis, "memory": usage.memory_mib},
    })
}
