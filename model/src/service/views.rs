//! What service reads return, shaped as the Axebow API answers: the service status after a
//! create, a revision's info after an update, the summary and full service, history and scale.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::{Deployment, Revision, RevisionType, Service};

/// One history entry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct HistoryEntry {
    /// Revision number.
    pub revision: u64,
    /// The revision it was made from.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub previous: Option<u64>,
    /// The first revision of the service.
    pub original: u64,
    /// For a rollback: the revision it copies.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reinstates: Option<u64>,
    /// The caller's comment.
    pub comment: String,
    /// What made it.
    #[serde(rename = "type")]
    pub kind: RevisionType,
    /// Whether it was accepted (`false`: it waits for acceptance).
    pub accepted: bool,
}

/// `POST …/service/{s}`: the service after its first revision.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ServiceStatus {
    /// Its first revision.
    pub first_revision: u64,
    /// The accepted revision deployed now, if any.
    pub current_revision: Option<u64>,
    /// Every revision.
    pub history: Vec<HistoryEntry>,
    /// `account/environment` it is deployed in.
    pub environment: String,
    /// When a `wait` ran out: the request to look up (`GET …/service/{s}/request/{id}`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request_id: Option<String>,
    /// A dry run of an accepted create: where the scheduler would place it now, and why.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub placement: Option<crate::scheduling::Decision>,
}

/// Usage as Axebow reports it: vCPU in millicores, RAM in MiB.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct UsageFigures {
    /// Millicores.
    pub vcpu: u64,
    /// MiB.
    pub ram: u64,
}

/// Least and most a revision uses (equal until services scale themselves).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct UsageRange {
    /// Most.
    pub max: UsageFigures,
    /// Least.
    pub min: UsageFigures,
}

/// A revision's status.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct RevisionStatus {
    /// Accepted (`false`: it waits for acceptance).
    pub accepted: bool,
    /// Tenant resources it uses: names by kind.
    pub resources: BTreeMap<String, Vec<String>>,
    /// What it costs.
    pub usage: UsageRange,
}

/// A revision's info (`#RevisionInfo`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct RevisionInfo {
    /// Its number.
    pub revision: u64,
    /// What it deploys.
    pub spec: Deployment,
    /// Acceptance, resources and cost.
    pub status: RevisionStatus,
    /// When a `wait` ran out: the request to look up (`GET …/service/{s}/request/{id}`).
    #[serde(rename = "requestId", skip_serializing_if = "Option::is_none")]
    pub request_id: Option<String>,
}

/// `GET …/service/{s}?summary=true`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct ServiceSummary {
    /// The service's uid.
    pub id: String,
    /// Whether it is being deleted.
    pub deleted: bool,
    /// The accepted revision deployed now.
    pub current: Option<u64>,
    /// Whether an accepted revision is deployed.
    pub deployed: bool,
    /// Tenant resources the current revision uses: names by kind.
    pub resources: BTreeMap<String, Vec<String>>,
}

/// The configuration part of a full service view.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct Configuration {
    /// Configuration parameters.
    #[schema(value_type = Object)]
    pub parameters: serde_json::Value,
    /// Tenant resources used: names by kind.
    pub resources: BTreeMap<String, Vec<String>>,
    /// Instances by role.
    pub scale: BTreeMap<String, u32>,
}

/// `GET …/service/{s}` (full).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ServiceFull {
    /// The revision shown (current, or the pending first one).
    pub revision: u64,
    /// Its comment.
    pub comment: String,
    /// Its configuration.
    pub configuration: Configuration,
    /// What it deploys.
    pub deployment: Deployment,
    /// When the service was created (ms since the epoch).
    pub creation_timestamp: u64,
    /// When the revision shown was made (ms since the epoch).
    pub last_modification: u64,
    /// `account/environment` it is deployed in.
    pub environment: String,
    /// The revision waiting for acceptance, if any.
    pub pending: Option<u64>,
    /// The cluster its instances run on, once placed.
    pub cluster: Option<crate::cluster::ClusterRef>,
    /// The cluster it is moving to (its cluster failed): it becomes `cluster` once every
    /// instance runs there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub migrating_to: Option<crate::cluster::ClusterRef>,
    /// Whether exactly its current revision runs (filled in by the platform's read).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<super::placement::RunStatus>,
    /// Where its reconciliation stands, as its actor last reported.
    pub reconcile: super::reconcile::ReconcileStatus,
    /// Deleted: when (ms since the epoch); it goes once its instances are removed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deletion_timestamp: Option<u64>,
    /// Its last phase changes, in Axebow's event shape.
    pub events: Vec<super::reconcile::ServiceEvent>,
    /// Its links, either end (filled in by the platform's read).
    pub links: Vec<super::links::LinkPair>,
    /// Why it runs where it runs: the scheduler's winning score, the other candidates, and
    /// why the other clusters were excluded (as of its placement).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scheduling: Option<crate::scheduling::Decision>,
}

/// A deployment as reads show it: without its pods' pull credentials (`pullAuth`), which only
/// the agents that pull are sent. A deployment read and sent back therefore has none: change
/// a Krake Application's images through Krake, which keeps its Secrets.
pub fn without_secrets(deployment: &Deployment) -> Deployment {
    let mut shown = deployment.clone();
    for role in shown.roles.values_mut() {
        if let Some(pod) = &mut role.exec.pod {
            pod.pull_auth.clear();
        }
    }
    shown
}

fn resources_of(revision: &Revision) -> BTreeMap<String, Vec<String>> {
    let mut by_kind: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for used in &revision.deployment.resources {
        by_kind
            .entry(used.kind.clone())
            .or_default()
            .push(used.name.clone());
    }
    by_kind
}

impl Service {
    /// The revision reads show: the current one, else the pending first one.
    pub fn shown(&self) -> Option<&Revision> {
        self.current
            .or(self.pending)
            .and_then(|number| self.revisions.get(&number))
    }

    /// Every revision as history entries.
    pub fn history(&self) -> Vec<HistoryEntry> {
        let original = self.revisions.keys().next().copied().unwrap_or(1);
        self.revisions
            .values()
            .map(|r| HistoryEntry {
                revision: r.number,
                previous: r.previous,
                original,
                reinstates: r.reinstates,
                comment: r.comment.clone(),
                kind: r.kind,
                accepted: r.accepted,
            })
            .collect()
    }

    /// The status after a create.
    pub fn status(&self) -> ServiceStatus {
        ServiceStatus {
            first_revision: self.revisions.keys().next().copied().unwrap_or(1),
            current_revision: self.current,
            history: self.history(),
            environment: self.environment.name(),
            request_id: None,
            placement: None,
        }
    }

    /// The summary.
    pub fn summary(&self) -> ServiceSummary {
        let current = self.current.and_then(|n| self.revisions.get(&n));
        ServiceSummary {
            id: self.uid.clone(),
            deleted: self.deleting_ms.is_some(),
            current: self.current,
            deployed: current.is_some(),
            resources: current.map(resources_of).unwrap_or_default(),
        }
    }

    /// The full view (`None` only for a service without revisions, which cannot be stored).
    pub fn full(&self) -> Option<ServiceFull> {
        let shown = self.shown()?;
        Some(ServiceFull {
            revision: shown.number,
            comment: shown.comment.clone(),
            configuration: Configuration {
                parameters: shown.deployment.parameters.clone(),
                resources: resources_of(shown),
                scale: self.scale_of(shown),
            },
            deployment: without_secrets(&shown.deployment),
            creation_timestamp: self.created_ms,
            last_modification: shown.created_ms,
            environment: self.environment.name(),
            pending: self.pending,
            cluster: self.placement.clone(),
            migrating_to: self.migrating_to.clone(),
            status: None,
            reconcile: self.reconcile.clone(),
            deletion_timestamp: self.deleting_ms,
            events: self.events.iter().cloned().collect(),
            links: Vec::new(),
            scheduling: self.scheduling.clone(),
        })
    }

    fn scale_of(&self, revision: &Revision) -> BTreeMap<String, u32> {
        revision
            .deployment
            .roles
            .iter()
            .map(|(role, spec)| (role.clone(), spec.instances))
            .collect()
    }

    /// Instances by role of the revision shown.
    pub fn scale(&self) -> BTreeMap<String, u32> {
        self.shown().map(|r| self.scale_of(r)).unwrap_or_default()
    }

    /// A revision's info.
    pub fn revision_info(&self, number: u64) -> Option<RevisionInfo> {
        let revision = self.revisions.get(&number)?;
        let figures = UsageFigures {
            vcpu: revision.usage.vcpu_millis,
            ram: revision.usage.memory_mib,
        };
        Some(RevisionInfo {
            revision: number,
            spec: without_secrets(&revision.deployment),
            status: RevisionStatus {
                accepted: revision.accepted,
                resources: resources_of(revision),
                usage: UsageRange {
                    max: figures,
                    min: figures,
                },
            },
            request_id: None,
        })
    }
}
