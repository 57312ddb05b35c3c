//! The pure apply of service changes: authorization (any confirmed member deploys), the
//! environment-selection algorithm for the first revision (and the tenant's rules again for
//! every later one), the cost against the environment's marks, acceptance, and the rules that
//! keep the history a chain: one pending revision at a time, and every update names the current
//! revision as its `previous`.

use std::collections::BTreeMap;

use serde_json::json;

use super::entities::{Role, Tenant, TenantRules};
use super::error::PlatformError;
use super::selection::{select_environment, Candidate, NeededResource, SelectionError, SelectionInput};
use super::usage::{counted, UsageIndex};
use super::{Grant, Platform, Requirement};
use crate::service::reconcile::{
    record_event, EventSource, EventTime, Phase, Progress, ReconcileStatus, ServiceReport,
};
use crate::service::reservations::held_by;
use crate::service::versions::UNSTAMPED;
use crate::service::{
    revise, selector_view, Deployment, EnvironmentRef, Revision, RevisionType, Service, ServiceCommand,
    ServiceOp, ServiceOutcome, Usage,
};

type Outcome = Result<ServiceOutcome, PlatformError>;

/// A service to create, as `ServiceOp::Create` names it.
struct NewService<'a> {
    tenant: &'a str,
    service: &'a str,
    uid: &'a str,
    deployment: &'a Deployment,
    comment: &'a str,
    accept: bool,
}

fn conflict(message: impl Into<String>) -> PlatformError {
    PlatformError::Conflict(message.into())
}

fn service_not_found(tenant: &str, service: &str) -> PlatformError {
    PlatformError::NotFound(format!("service {service:?} of tenant {tenant:?} not found"))
}

/// Why `usage` does not fit the environment's marks beside what the others use, if it does not.
fn over_marks(
    index: &UsageIndex,
    (name, tenant): (&str, &Tenant),
    environment: &EnvironmentRef,
    service: &str,
    usage: Usage,
) -> Option<String> {
    let spec = tenant
        .accounts
        .get(&environment.account)?
        .environments
        .get(&environment.environment)?;
    let others = index.used_in(name, tenant, environment, service);
    let dimensions = [
        ("vcpu", "m", others.vcpu_millis, usage.vcpu_millis),
        ("memory", "MB", others.memory_mib, usage.memory_mib),
    ];
    dimensions.into_iter().find_map(|(dimension, unit, used, wanted)| {
        let max = spec.marks.get(dimension)?.max;
        (used.saturating_add(wanted) > max).then(|| {
            format!(
                "{dimension}: the revision needs {wanted}{unit}, the environment {} allows {max}{unit} and {used}{unit} are used",
                environment.name()
            )
        })
    })
}

/// A deleted service accepts no new revision, decision or restart.
fn not_deleting(stored: &Service, service: &str) -> Result<(), PlatformError> {
    match stored.deleting_ms {
        Some(_) => Err(conflict(format!(
            "service {service:?} is being deleted; create it again once it is gone"
        ))),
        None => Ok(()),
    }
}

impl Platform {
    /// Applies one service command. Pure: the outcome depends on `self`, `now_ms` and `command`.
    pub fn apply_service(&mut self, now_ms: u64, command: &ServiceCommand) -> Outcome {
        let grant = self.authorize(
            &command.caller,
            Requirement::Tenant {
                tenant: command.change.tenant(),
                role: Role::Plain,
            },
        )?;
        self.apply_service_as(now_ms, &grant, &command.change)
    }

    /// Applies a service change a caller was already allowed to make (`grant`): Krake's
    /// applications, authorized by Krake's RBAC, go through here.
    pub(crate) fn apply_service_as(&mut self, now_ms: u64, grant: &Grant, change: &ServiceOp) -> Outcome {
        // The derived indexes (reservations by cluster, usage by environment) follow the
        // services the command names, the only ones it can change.
        let mut touched = change.services();
        touched.sort();
        touched.dedup();
        let before: Vec<_> = touched.iter().map(|(t, s)| self.footprint(t, s)).collect();
        let outcome = self.apply_service_op(now_ms, grant, change);
        for ((tenant, service), (held, counted)) in touched.iter().zip(before) {
            let (held_after, counted_after) = self.footprint(tenant, service);
            self.reservations.replace(&held, &held_after);
            self.usage
                .replace(tenant, counted.as_ref(), counted_after.as_ref());
        }
        #[cfg(test)]
        self.assert_derived_consistent();
        outcome
    }

    /// What one service holds in the derived indexes: its reservations and its usage.
    fn footprint(
        &self,
        tenant: &str,
        service: &str,
    ) -> (
        Vec<(crate::cluster::ClusterRef, crate::cluster::agent_api::Resources)>,
        Option<super::usage::Counted>,
    ) {
        match self.tenant(tenant).and_then(|t| t.services.get(service)) {
            Some(stored) => (held_by(stored), Some(counted(stored))),
            None => (Vec::new(), None),
        }
    }

    /// The model's tests check after every command that the derived indexes hold what
    /// recounting every service gives.
    #[cfg(test)]
    pub(crate) fn assert_derived_consistent(&self) {
        let kept = self.reservations.get_or_build(|| self.reserved_uncached());
        let fresh = self.reserved_uncached();
        let nonzero = |p: &crate::service::placement::Promised| {
            p.iter()
                .filter(|(_, r)| **r != Default::default())
                .map(|(c, r)| (c.clone(), *r))
                .collect::<BTreeMap<_, _>>()
        };
        assert_eq!(nonzero(&kept), nonzero(&fresh), "the reservations kept drifted");
        assert!(self.usage.consistent(&self.tenants), "the usage kept drifted");
    }

    fn apply_service_op(&mut self, now_ms: u64, grant: &Grant, change: &ServiceOp) -> Outcome {
        let grant = grant.clone();
        match change {
            ServiceOp::Create {
                tenant,
                service,
                uid,
                deployment,
                comment,
                accept,
            } => {
                let new = NewService {
                    tenant,
                    service,
                    uid,
                    deployment,
                    comment,
                    accept: *accept,
                };
                self.create_service(now_ms, &grant, new)
            }
            ServiceOp::Revise {
                tenant,
                service,
                previous,
                change,
                comment,
                accept,
                remove_links,
            } => {
                let stored = self.service(tenant, service)?;
                not_deleting(stored, service)?;
                if let Some(pending) = stored.pending {
                    return Err(conflict(format!(
                        "revision {pending} of {service:?} waits for acceptance; accept or reject it first"
                    )));
                }
                if stored.current != Some(*previous) {
                    return Err(conflict(format!(
                        "previous must be the current revision {}, not {previous}",
                        stored.current.unwrap_or_default()
                    )));
                }
                let base = stored
                    .revisions
                    .get(previous)
                    .ok_or_else(|| PlatformError::NotFound(format!("revision {previous} not found")))?;
                let next = revise(&base.deployment, change, |number| {
                    stored.revisions.get(&number).map(|r| &r.deployment)
                })?;
                let level = self.tenant_ref(tenant)?.pod_security;
                crate::service::pod_level::pods_within(level, &next)?;
                let environment = stored.environment.clone();
                let last = stored.revisions.keys().next_back().copied().unwrap_or(0);
                let number = last.checked_add(1).ok_or_else(|| PlatformError::Invalid {
                    field: "revision".into(),
                    message: format!(
                        "service {service} has reached revision {last}; no revision can follow it"
                    ),
                })?;
                let reinstates = match change {
                    crate::service::Change::Rollback { target } => Some(*target),
                    _ => None,
                };
                let broken = self.links_broken_by(tenant, service, &next);
                if !broken.is_empty() && !remove_links {
                    return Err(conflict(format!(
                        "the revision drops channels that links use ({}); ask for remove_links=true to remove those links with it",
                        broken.join(", ")
                    )));
                }
                let selectable = self.select(&grant, tenant, service, &next, Some(&environment))?;
                let usage = next.usage();
                let tenant_ref = self.tenant_ref(tenant)?;
                let accepted = *accept
                    && selectable
                    && over_marks(&self.usage, (tenant, tenant_ref), &environment, service, usage).is_none();
                let stored = self.service_mut(tenant, service)?;
                let role_revisions =
                    Revision::role_revisions_of(number, &next, stored.revisions.get(previous));
                let revision = Revision {
                    number,
                    kind: change.kind(),
                    previous: Some(*previous),
                    reinstates,
                    comment: comment.clone(),
                    deployment: next,
                    usage,
                    accepted,
                    created_ms: now_ms,
                    role_revisions,
                };
                stored.revisions.insert(number, revision);
                if accepted {
                    stored.current = Some(number);
                } else {
                    stored.pending = Some(number);
                }
                stored.forget_oldest_revisions();
                self.remove_links(tenant, &broken);
                Ok(ServiceOutcome {
                    revision: Some(number),
                    accepted,
                    environment: Some(environment),
                    removed: false,
                    ..ServiceOutcome::default()
                })
            }
            ServiceOp::Decide {
                tenant,
                service,
                revision,
                accept,
            } => {
                let stored = self.service(tenant, service)?;
                not_deleting(stored, service)?;
                let pending = stored
                    .pending
                    .ok_or_else(|| conflict(format!("no revision of {service:?} waits for acceptance")))?;
                if revision.is_some_and(|r| r != pending) {
                    return Err(conflict(format!(
                        "revision {} is not the one waiting for acceptance ({pending})",
                        revision.unwrap_or_default()
                    )));
                }
                let environment = stored.environment.clone();
                if *accept {
                    let usage = stored
                        .revisions
                        .get(&pending)
                        .map(|r| r.usage)
                        .unwrap_or_default();
                    let tenant_ref = self.tenant_ref(tenant)?;
                    if let Some(why) =
                        over_marks(&self.usage, (tenant, tenant_ref), &environment, service, usage)
                    {
                        return Err(conflict(format!("revision {pending} exceeds the marks: {why}")));
                    }
                    // A link made while the revision waited may use a channel it drops.
                    let broken = stored
                        .revisions
                        .get(&pending)
                        .map(|r| self.links_broken_by(tenant, service, &r.deployment))
                        .unwrap_or_default();
                    if !broken.is_empty() {
                        return Err(conflict(format!(
                            "revision {pending} drops channels that links use ({}); reject it, or remove the links first",
                            broken.join(", ")
                        )));
                    }
                    let stored = self.service_mut(tenant, service)?;
                    if let Some(revision) = stored.revisions.get_mut(&pending) {
                        revision.accepted = true;
                    }
                    stored.current = Some(pending);
                    stored.pending = None;
                    return Ok(ServiceOutcome {
                        revision: Some(pending),
                        accepted: true,
                        environment: Some(environment),
                        removed: false,
                        ..ServiceOutcome::default()
                    });
                }
                let first = stored.current.is_none();
                if first {
                    self.tenant_mut_for_services(tenant)?.services.remove(service);
                    self.forget_links_of(tenant, service);
                } else {
                    let stored = self.service_mut(tenant, service)?;
                    stored.revisions.remove(&pending);
                    stored.pending = None;
                }
                Ok(ServiceOutcome {
                    revision: None,
                    accepted: false,
                    environment: Some(environment),
                    removed: first,
                    ..ServiceOutcome::default()
                })
            }
            ServiceOp::Restart {
                tenant,
                service,
                role,
                instance,
            } => self.restart_service(now_ms, tenant, service, role, instance.as_ref()),
            ServiceOp::Delete {
                tenant,
                service,
                force,
            } => self.delete_service(now_ms, &grant, tenant, service, *force),
            ServiceOp::Link { link, remove } => {
                self.apply_link(link, *remove)?;
                Ok(ServiceOutcome::default())
            }
        }
    }

    fn create_service(&mut self, now_ms: u64, grant: &Grant, new: NewService<'_>) -> Outcome {
        let NewService {
            tenant,
            service,
            uid,
            deployment,
            comment,
            accept,
        } = new;
        crate::validation::validate_object_name("service", service)?;
        deployment.validate()?;
        crate::service::pod_level::pods_within(self.tenant_ref(tenant)?.pod_security, deployment)?;
        if self.tenant_ref(tenant)?.services.contains_key(service) {
            return Err(conflict(format!(
                "tenant {tenant:?} already has a service {service:?}; update it with a new revision"
            )));
        }
        let (environment, selection_accepted) = self.choose(grant, tenant, service, deployment)?;
        let usage = deployment.usage();
        let within = over_marks(
            &self.usage,
            (tenant, self.tenant_ref(tenant)?),
            &environment,
            service,
            usage,
        )
        .is_none();
        let accepted = accept && selection_accepted && within;
        let revision = Revision {
            number: 1,
            kind: RevisionType::Put,
            previous: None,
            reinstates: None,
            comment: comment.to_string(),
            deployment: deployment.clone(),
            usage,
            accepted,
            created_ms: now_ms,
            role_revisions: Revision::role_revisions_of(1, deployment, None),
        };
        let stored = Service {
            uid: uid.to_string(),
            environment: environment.clone(),
            revisions: BTreeMap::from([(1, revision)]),
            current: accepted.then_some(1),
            pending: (!accepted).then_some(1),
            placement: None,
            created_ms: now_ms,
            deleting_ms: None,
            reconcile: Default::default(),
            events: Default::default(),
            version: 0,
            created_version: 0,
            scheduling: None,
            migrating_to: None,
            moved_ms: 0,
        };
        self.tenant_mut_for_services(tenant)?
            .services
            .insert(service.to_string(), stored);
        Ok(ServiceOutcome {
            revision: Some(1),
            accepted,
            environment: Some(environment),
            removed: false,
            ..ServiceOutcome::default()
        })
    }

    /// Deletes a service: at once when nothing of it can run (never accepted or never placed)
    /// or when an operator forces it; else it is marked deleting and its actor finalizes it.
    fn delete_service(
        &mut self,
        now_ms: u64,
        grant: &Grant,
        tenant: &str,
        service: &str,
        force: bool,
    ) -> Outcome {
        let stored = self.service(tenant, service)?;
        if force && !grant.operator {
            return Err(PlatformError::Forbidden(
                "only operators may force a delete (it leaves the service's instances running until its cluster's actor removes them)".into(),
            ));
        }
        let placed = stored.placement.clone().filter(|_| stored.current.is_some());
        if let (Some(cluster), false) = (&placed, force) {
            let stored = self.service_mut(tenant, service)?;
            stored.deleting_ms.get_or_insert(now_ms);
            // A move stops: what started on the new cluster belongs to no service there any
            // more, so that cluster's actor removes it.
            stored.migrating_to = None;
            // The phase says so from this commit on, not from the actor's next report.
            let status = ReconcileStatus {
                phase: Phase::Deleting,
                reason: format!("deleted; its instances are being removed from cluster {cluster}"),
                revision: stored.current,
                progress: Progress {
                    old: stored
                        .reconcile
                        .progress
                        .updated
                        .saturating_add(stored.reconcile.progress.old),
                    ..Progress::default()
                },
                alert: None,
                endpoints: Vec::new(),
            };
            Self::set_reconcile(stored, service, &status, now_ms, UNSTAMPED);
            return Ok(ServiceOutcome {
                deleting: true,
                ..ServiceOutcome::default()
            });
        }
        let orphaned = placed.and_then(|cluster| {
            let set = crate::service::placement::set_name(tenant, service)?;
            let instances = self.cluster(&cluster)?.status.sets.get(&set)?.total;
            Some(crate::service::Orphaned { cluster, instances })
        });
        self.tenant_mut_for_services(tenant)?.services.remove(service);
        self.forget_links_of(tenant, service);
        Ok(ServiceOutcome {
            removed: true,
            orphaned,
            ..ServiceOutcome::default()
        })
    }

    /// Applies a service actor's report (whether it changed anything): its status (an event
    /// when the phase changes), and the removal of a deleted service once nothing of it runs.
    pub fn apply_service_report(
        &mut self,
        revision: u64,
        now_ms: u64,
        report: &ServiceReport,
    ) -> Result<bool, PlatformError> {
        let Some(stored) = self
            .tenants
            .get_mut(&report.tenant)
            .and_then(|t| t.services.get_mut(&report.service))
            .filter(|s| s.uid == report.uid)
        else {
            // Deleted or created again meanwhile: the report is about a service that is gone.
            return Ok(false);
        };
        if report.finalize {
            if stored.deleting_ms.is_none() {
                return Err(conflict(format!(
                    "service {:?} is not being deleted",
                    report.service
                )));
            }
            let held = held_by(stored);
            let counted = counted(stored);
            if let Some(tenant) = self.tenants.get_mut(&report.tenant) {
                tenant.services.remove(&report.service);
            }
            self.reservations.replace(&held, &[]);
            self.usage.replace(&report.tenant, Some(&counted), None);
            self.forget_links_of(&report.tenant, &report.service);
            #[cfg(test)]
            self.assert_derived_consistent();
            return Ok(true);
        }
        let mut switched = false;
        if let Some(to) = &report.switched_to {
            if stored.migrating_to.as_ref() == Some(to) {
                let before = held_by(stored);
                stored.placement = Some(to.clone());
                stored.migrating_to = None;
                self.reservations.replace(&before, &held_by(stored));
                switched = true;
            }
        }
        if stored.reconcile == report.status {
            return Ok(switched);
        }
        if stored.deleting_ms.is_some() && report.status.phase != Phase::Deleting {
            // Planned before the delete was committed: a deleted service stays DELETING.
            return Ok(switched);
        }
        Self::set_reconcile(stored, &report.service, &report.status, now_ms, revision);
        Ok(true)
    }

    /// Sets a service's status, with an event when its phase changes, recorded at `revision`.
    fn set_reconcile(stored: &mut Service, name: &str, status: &ReconcileStatus, now_ms: u64, revision: u64) {
        // A new alert is an event too, though the phase stays.
        let alerted = status.alert.is_some() && stored.reconcile.alert != status.alert;
        if stored.reconcile.phase != status.phase || alerted {
            let source = EventSource {
                id: stored.uid.clone(),
                kind: "service".into(),
                name: name.to_string(),
            };
            let time = EventTime {
                at: crate::time::rfc3339_ms(now_ms),
                revision,
            };
            record_event(&mut stored.events, source, status, time);
        }
        stored.reconcile = status.clone();
    }

    /// Records restart requests for a role's instances (or one) on the service's cluster.
    fn restart_service(
        &mut self,
        now_ms: u64,
        tenant: &str,
        service: &str,
        role: &str,
        instance: Option<&crate::cluster::agent_api::InstanceId>,
    ) -> Outcome {
        let stored = self.service(tenant, service)?;
        not_deleting(stored, service)?;
        let revision = stored
            .current
            .and_then(|n| stored.revisions.get(&n))
            .ok_or_else(|| conflict(format!("service {service:?} has no accepted revision running")))?;
        if !revision.deployment.roles.contains_key(role) {
            return Err(PlatformError::NotFound(format!(
                "service {service:?} has no role {role:?}"
            )));
        }
        let cluster = stored
            .placement
            .clone()
            .ok_or_else(|| conflict(format!("service {service:?} is not placed on a cluster yet")))?;
        let set = crate::service::placement::set_name(tenant, service)
            .ok_or_else(|| PlatformError::invalid("service", "no valid set name"))?;
        let prefix = format!("{set}.{role}.");
        let ids: Vec<crate::cluster::agent_api::InstanceId> =
            crate::service::placement::instances_of(&set, revision)
                .into_iter()
                .map(|spec| spec.id)
                .filter(|id| id.as_str().starts_with(&prefix))
                .filter(|id| instance.is_none_or(|wanted| wanted == id))
                .collect();
        if let (Some(wanted), true) = (instance, ids.is_empty()) {
            return Err(PlatformError::NotFound(format!(
                "instance {wanted} is not an instance of role {role:?} of {service:?}"
            )));
        }
        let environment = stored.environment.clone();
        let current = stored.current;
        let stored_cluster = self
            .tenants
            .get_mut(&cluster.tenant)
            .and_then(|t| t.clusters.get_mut(&cluster.name))
            .ok_or_else(|| conflict(format!("the service's cluster {cluster} is no longer registered")))?;
        for id in ids {
            stored_cluster.pending_restarts.insert(id, now_ms);
        }
        Ok(ServiceOutcome {
            revision: current,
            accepted: true,
            environment: Some(environment),
            removed: false,
            ..ServiceOutcome::default()
        })
    }

    fn tenant_ref(&self, tenant: &str) -> Result<&Tenant, PlatformError> {
        self.tenant(tenant)
            .ok_or_else(|| PlatformError::NotFound(format!("tenant {tenant:?} not found")))
    }

    fn tenant_mut_for_services(&mut self, tenant: &str) -> Result<&mut Tenant, PlatformError> {
        self.tenants
            .get_mut(tenant)
            .ok_or_else(|| PlatformError::NotFound(format!("tenant {tenant:?} not found")))
    }

    /// One service.
    pub fn service(&self, tenant: &str, service: &str) -> Result<&Service, PlatformError> {
        self.tenant_ref(tenant)?
            .services
            .get(service)
            .ok_or_else(|| service_not_found(tenant, service))
    }

    fn service_mut(&mut self, tenant: &str, service: &str) -> Result<&mut Service, PlatformError> {
        self.tenant_mut_for_services(tenant)?
            .services
            .get_mut(service)
            .ok_or_else(|| service_not_found(tenant, service))
    }
}

/// The selection input for a revision of `service` deploying `deployment`.
fn selection_input<'a>(
    index: &UsageIndex,
    grant: &Grant,
    (tenant_name, tenant): (&str, &'a Tenant),
    rules: &'a TenantRules,
    service: &str,
    deployment: &Deployment,
    current: Option<&EnvironmentRef>,
) -> Result<SelectionInput<'a>, PlatformError> {
    let usage = deployment.usage();
    let environments = tenant
        .accounts
        .iter()
        .flat_map(|(account, stored)| {
            stored.environments.iter().map(move |(name, spec)| {
                let reference = EnvironmentRef {
                    account: account.clone(),
                    environment: name.clone(),
                };
                let used = index.used_in(tenant_name, tenant, &reference, service);
                let free_vcpu = spec.marks.get("vcpu").map_or(i64::MAX / 2, |mark| {
                    i64::try_from(mark.max).unwrap_or(i64::MAX / 2)
                        - i64::try_from(used.vcpu_millis).unwrap_or(i64::MAX / 2)
                });
                Candidate {
                    name: reference.name(),
                    environment: json!({
                        "name": reference.name(),
                        "account": account,
                        "environment": name,
                        "labels": spec.labels,
                        "isolated": spec.isolated,
                    }),
                    free_vcpu,
                }
            })
        })
        .collect();
    let mut resources = Vec::new();
    for (index, used) in deployment.resources.iter().enumerate() {
        let kind = super::ResourceKind::parse(&used.kind).ok_or_else(|| {
            PlatformError::invalid(
                format!("resources[{index}].kind"),
                format!("no resource kind {:?}", used.kind),
            )
        })?;
        let spec = tenant
            .resources
            .get(&kind)
            .and_then(|names| names.get(&used.name))
            .ok_or_else(|| {
                PlatformError::invalid(
                    format!("resources[{index}]"),
                    format!("tenant {tenant_name:?} has no {} {:?}", used.kind, used.name),
                )
            })?;
        resources.push(NeededResource {
            resource: json!({"kind": used.kind, "name": used.name, "meta": spec.meta}),
            selector: spec.selector.clone(),
        });
    }
    Ok(SelectionInput {
        rules,
        this: json!({"name": tenant_name}),
        service: selector_view(service, deployment, usage),
        user: json!({"uid": grant.uid(), "role": grant.effective_role().map(Role::as_str)}),
        environments,
        current: current.map(EnvironmentRef::name),
        resources,
    })
}

impl Platform {
    /// Runs the selection; operators bypass the tenant's rules, as Axebow says.
    fn run_selection(
        &self,
        grant: &Grant,
        tenant_name: &str,
        service: &str,
        deployment: &Deployment,
        current: Option<&EnvironmentRef>,
    ) -> Result<(String, bool), PlatformError> {
        let tenant = self.tenant_ref(tenant_name)?;
        let no_rules = TenantRules::default();
        let rules = match (&tenant.spec.rules, grant.operator) {
            (Some(rules), false) => rules,
            _ => &no_rules,
        };
        let input = selection_input(
            &self.usage,
            grant,
            (tenant_name, tenant),
            rules,
            service,
            deployment,
            current,
        )?;
        match select_environment(&input) {
            Ok(selection) => Ok((selection.environment, selection.accepted)),
            Err(SelectionError::NoEnvironment { .. }) if input.environments.is_empty() => {
                Err(PlatformError::Conflict(format!(
                    "tenant {tenant_name:?} has no environment to deploy in; create one first"
                )))
            }
            Err(SelectionError::NoEnvironment { reasons }) => Err(PlatformError::Forbidden(format!(
                "no environment accepts this revision: {}",
                reasons.join("; ")
            ))),
            Err(SelectionError::UserRefused { reasons }) => Err(PlatformError::Forbidden(format!(
                "the tenant's rules do not let you deploy here: {}",
                reasons.join("; ")
            ))),
        }
    }

    /// The environment a new service goes to, and whether it was chosen as accepting.
    fn choose(
        &self,
        grant: &Grant,
        tenant: &str,
        service: &str,
        deployment: &Deployment,
    ) -> Result<(EnvironmentRef, bool), PlatformError> {
        let (name, accepted) = self.run_selection(grant, tenant, service, deployment, None)?;
        let (account, environment) = name.split_once('/').ok_or_else(|| {
            PlatformError::Conflict(format!("selection chose {name:?}, no account/environment"))
        })?;
        Ok((
            EnvironmentRef {
                account: account.to_string(),
                environment: environment.to_string(),
            },
            accepted,
        ))
    }

    /// Whether a later revision passes the tenant's rules in its environment, and may be
    /// accepted at once (`false`: only through `selectAcceptEnvironmentService`).
    fn select(
        &self,
        grant: &Grant,
        tenant: &str,
        service: &str,
        deployment: &Deployment,
        environment: Option<&EnvironmentRef>,
    ) -> Result<bool, PlatformError> {
        self.run_selection(grant, tenant, service, deployment, environment)
            .map(|(_, accepted)| accepted)
    }

    /// What the services deployed in an environment use, by mark dimension.
    pub fn environment_usage(&self, tenant: &str, environment: &EnvironmentRef) -> BTreeMap<String, u64> {
        let Some(stored) = self.tenant(tenant) else {
            return BTreeMap::new();
        };
        let used = self.usage.used_in(tenant, stored, environment, "");
        BTreeMap::from([
            ("vcpu".to_string(), used.vcpu_millis),
            ("memory".to_string(), used.memory_mib),
        ])
    }

    /// Services of a tenant deployed in an environment (for the guard on its deletion).
    pub(crate) fn services_in(&self, tenant: &str, environment: &EnvironmentRef) -> Vec<String> {
        self.tenant(tenant)
            .map(|t| {
                t.services
                    .iter()
                    .filter(|(_, s)| s.environment == *environment)
                    .map(|(name, _)| name.clone())
                    .collect()
            })
            .unwrap_or_default()
    }
}
