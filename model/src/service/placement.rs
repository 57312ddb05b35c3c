//! Placement: which cluster a service's instances run on, chosen by the pure scheduler
//! ([`crate::scheduling::schedule`]: Krake's constraints, ONLINE clusters whose free capacity
//! fits, metric scores, stickiness, deterministic ties) among the clusters its environment may
//! use. A placed service moves only through a migration (`migrating_to`: created on the new
//! cluster first, switched once ready, the old copies removed once their cluster answers). The
//! leader commits each decision as a [`Placement`] with its explanation, so a new leader knows
//! where every service runs and why.

use serde::{Deserialize, Serialize};

use super::rollout::RoleTarget;
use super::{Revision, RoleSpec, Service};
use crate::cluster::agent_api::{InstanceId, InstanceSpec, Resources, SetName};
use crate::cluster::ClusterRef;

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
