//! The pure apply of cluster changes: users' changes are authorized against the cluster's
//! tenant (admins register and change clusters; operators act as owners everywhere), checked
//! completely, then made; observations from the leader's cluster actors update status and
//! record each state transition as an event.

use std::collections::{BTreeMap, VecDeque};

use super::entities::{ClusterSelection, Role};
use super::error::PlatformError;
use super::identity::OPERATOR_TENANT;
use super::{Platform, Requirement};
use crate::cluster::agent_api::{SetName, MAX_SET_INSTANCES};
use crate::cluster::{
    Cluster, ClusterCommand, ClusterObservation, ClusterOp, ClusterRef, ClusterState, ClusterStatus, SetSpec,
    StoredSet, MAX_JOIN_TOKEN_LEN,
};
use crate::scheduling::metrics::{validate_metric, validate_provider, validate_refs, MAX_METRICS_PER_TENANT};
use crate::validation::validate_metadata;

/// Checks an agent endpoint: `https://host:port` (or `http://host:port`, which the API admits
/// only where the nodes allow plain-HTTP agents), nothing else.
pub fn validate_endpoint(endpoint: &str) -> Result<(), PlatformError> {
    let rest = endpoint
        .strip_prefix("https://")
        .or_else(|| endpoint.strip_prefix("http://"))
        .ok_or_else(|| PlatformError::invalid("endpoint", "must start with https:// (or http://)"))?;
    let authority = rest.strip_suffix('/').unwrap_or(rest);
    let port = authority.rsplit_once(':').map(|(_, port)| port);
    let fine = endpoint.len() <= 255
        && !authority.is_empty()
        && authority
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-.:[]".contains(&b))
        && port.is_some_and(|p| p.parse::<u16>().is_ok_and(|p| p > 0));
    if fine {
        Ok(())
    } else {
        Err(PlatformError::invalid(
            "endpoint",
            format!("{endpoint:?} must be https://host:port or http://host:port (no path, user or query), at most 255 characters"),
        ))
    }
}

/// Most bytes of an agent's CA (PEM).
pub const MAX_CA_BYTES: usize = 64 * 1024;

/// Checks that an `https://` endpoint comes with the CA its agent's certificate is checked
/// against, that a plain `http://` one comes with none, and the CA's shape (PEM certificates;
/// the API parses them before anything is written).
pub fn validate_agent_ca(endpoint: &str, ca: Option<&str>) -> Result<(), PlatformError> {
    match (endpoint.starts_with("https://"), ca) {
        (true, None) => Err(PlatformError::invalid(
            "ca",
            "an https:// endpoint needs the CA (PEM) that signed the agent's certificate",
        )),
        (false, Some(_)) => Err(PlatformError::invalid(
            "ca",
            "a CA is for an https:// endpoint; this one is plain http://",
        )),
        (_, Some(ca))
            if ca.len() > MAX_CA_BYTES || !ca.contains("-----BEGIN CERTIFICATE-----") || !ca.is_ascii() =>
        {
            Err(PlatformError::invalid(
                "ca",
                format!("PEM certificates (-----BEGIN CERTIFICATE-----), at most {MAX_CA_BYTES} bytes"),
            ))
        }
        _ => Ok(()),
    }
}

/// Checks a join token: 16 to 4096 visible ASCII characters.
pub fn validate_join_token(token: &str) -> Result<(), PlatformError> {
    if (16..=MAX_JOIN_TOKEN_LEN).contains(&token.len()) && token.bytes().all(|b| b.is_ascii_graphic()) {
        Ok(())
    } else {
        Err(PlatformError::invalid(
            "join_token",
            format!(
                "must be 16 to {MAX_JOIN_TOKEN_LEN} visible ASCII characters (the agent's --join-token-file)"
            ),
        ))
    }
}

/// Checks a desired set: its name leaves room for instance ids, its count is bounded, its
/// program is named and its environment is well formed.
pub fn validate_set(set: &SetName, spec: &SetSpec) -> Result<(), PlatformError> {
    // `{set}.main.r{revision}.{ordinal}` must stay a valid id, and a pinned set's name has no
    // dot, so it never equals a service's set `{tenant}.{service}`.
    if !crate::validation::is_label(set.as_str()) {
        return Err(PlatformError::invalid(
            "set",
            "1-63 lower-case letters, digits or '-', starting and ending with a letter or digit",
        ));
    }
    if spec.count as usize > MAX_SET_INSTANCES {
        return Err(PlatformError::invalid(
            "count",
            format!("at most {MAX_SET_INSTANCES} instances"),
        ));
    }
    validate_program("", &spec.exec, &spec.env)?;
    let each = crate::cluster::validate::instance_bytes(&spec.exec, &spec.env, spec.resources);
    crate::cluster::validate::check_set_bytes("count", u64::from(spec.count), each).map_err(Into::into)
}

/// Checks what an instance runs, for a pinned set and a service's role alike, by the rules the
/// agent checks too ([`crate::cluster::validate::check_program`]). Fields are named under
/// `prefix` (`roles.web.` for a role).
pub fn validate_program(
    prefix: &str,
    exec: &crate::cluster::agent_api::ExecSpec,
    env: &BTreeMap<String, String>,
) -> Result<(), PlatformError> {
    crate::cluster::validate::check_program(exec, env).map_err(|e| e.under(prefix).into())
}

/// Checks an environment's cluster selection: each name is `name` or `operator/name`.
pub fn validate_selection(selection: &ClusterSelection) -> Result<(), PlatformError> {
    for (index, name) in selection.names.iter().enumerate() {
        let bare = name
            .strip_prefix(OPERATOR_TENANT)
            .and_then(|rest| rest.strip_prefix('/'))
            .unwrap_or(name);
        if !crate::validation::is_label(bare) {
            return Err(PlatformError::invalid(
                format!("clusters.names[{index}]"),
                format!("{name:?} must be a cluster name, or operator/<name> for a platform-wide cluster"),
            ));
        }
    }
    validate_metadata(&selection.labels, &BTreeMap::new())
        .map_err(|e| PlatformError::invalid("clusters.labels", e.to_string()))
}

/// Whether an environment of `tenant` (isolated or not, selecting with `selection`) may use
/// `cluster`, whose labels are `labels`. Pure; the one rule the API and the scheduler share.
pub fn environment_may_use(
    tenant: &str,
    isolated: bool,
    selection: Option<&ClusterSelection>,
    cluster: &ClusterRef,
    labels: &BTreeMap<String, String>,
) -> bool {
    let own = cluster.tenant == tenant;
    let platform_wide = cluster.tenant == OPERATOR_TENANT;
    if !(own || (platform_wide && !isolated)) {
        return false;
    }
    let Some(selection) = selection else {
        return true;
    };
    let named = selection.names.iter().any(|name| match name.split_once('/') {
        Some((owner, bare)) => owner == cluster.tenant && bare == cluster.name,
        None => own && *name == cluster.name,
    });
    let labelled = !selection.labels.is_empty()
        && selection
            .labels
            .iter()
            .all(|(key, value)| labels.get(key) == Some(value));
    named || labelled
}

fn labels_checked(labels: &BTreeMap<String, String>) -> Result<(), PlatformError> {
    validate_metadata(labels, &BTreeMap::new()).map_err(|e| PlatformError::invalid("labels", e.to_string()))
}

fn cluster_not_found(cluster: &ClusterRef) -> PlatformError {
    PlatformError::NotFound(format!(
        "cluster {:?} of tenant {:?} not found",
        cluster.name, cluster.tenant
    ))
}

impl Platform {
    /// Applies one cluster command. Pure: the outcome depends on `self`, `now_ms` and `command`.
    pub fn apply_cluster(&mut self, now_ms: u64, command: &ClusterCommand) -> Result<(), PlatformError> {
        match command {
            ClusterCommand::User { caller, change } => {
                // Pinned sets and removed clusters change what clusters have committed; an
                // observation changes nothing the reservations count.
                self.reservations.clear();
                let tenant = change.tenant();
                self.authorize(
                    caller,
                    Requirement::Tenant {
                        tenant,
                        role: Role::Admin,
                    },
                )?;
                self.change_cluster(now_ms, change)
            }
            ClusterCommand::Observe(observation) => {
                self.observe_cluster(now_ms, observation);
                Ok(())
            }
        }
    }

    /// Applies a cluster operation authorized elsewhere (Krake's RBAC, checked by the API).
    pub(crate) fn apply_cluster_op(&mut self, now_ms: u64, op: &ClusterOp) -> Result<(), PlatformError> {
        self.reservations.clear();
        self.change_cluster(now_ms, op)
    }

    fn cluster_mut(&mut self, cluster: &ClusterRef) -> Result<&mut Cluster, PlatformError> {
        self.tenants
            .get_mut(&cluster.tenant)
            .and_then(|tenant| tenant.clusters.get_mut(&cluster.name))
            .ok_or_else(|| cluster_not_found(cluster))
    }

    /// One agent is one cluster: two registrations of one agent would have two cluster actors
    /// each removing the other's sets (or two leaders' worth of instances on one agent). The
    /// other registration is not named: it may be another tenant's.
    fn check_endpoint_free(&self, endpoint: &str, except: &ClusterRef) -> Result<(), PlatformError> {
        // The same agent whatever the scheme it is named with.
        let normal = |e: &str| {
            let bare = e.split_once("://").map_or(e, |(_, rest)| rest);
            bare.trim_end_matches('/').to_ascii_lowercase()
        };
        let wanted = normal(endpoint);
        let taken = self
            .clusters()
            .any(|(other, stored)| other != *except && normal(&stored.endpoint) == wanted);
        if taken {
            return Err(PlatformError::Conflict(format!(
                "another registered cluster already uses the agent at {endpoint}; an agent belongs to one cluster"
            )));
        }
        Ok(())
    }

    fn change_cluster(&mut self, now_ms: u64, change: &ClusterOp) -> Result<(), PlatformError> {
        match change {
            ClusterOp::Register {
                cluster,
                uid,
                registration,
            } => {
                crate::validation::validate_object_name("name", &cluster.name)?;
                validate_endpoint(&registration.endpoint)?;
                validate_agent_ca(&registration.endpoint, registration.ca.as_deref())?;
                validate_join_token(&registration.join_token)?;
                labels_checked(&registration.labels)?;
                validate_refs(&registration.metrics)?;
                let tenant = self.tenants.get(&cluster.tenant).ok_or_else(|| {
                    PlatformError::NotFound(format!("tenant {:?} not found", cluster.tenant))
                })?;
                if tenant.clusters.contains_key(&cluster.name) {
                    return Err(PlatformError::Conflict(format!(
                        "tenant {:?} already has a cluster {:?}; PATCH it or deregister it first",
                        cluster.tenant, cluster.name
                    )));
                }
                self.check_endpoint_free(&registration.endpoint, cluster)?;
                let Some(tenant) = self.tenants.get_mut(&cluster.tenant) else {
                    return Err(PlatformError::NotFound(format!(
                        "tenant {:?} not found",
                        cluster.tenant
                    )));
                };
                let mut stored = Cluster {
                    uid: uid.clone(),
                    endpoint: registration.endpoint.clone(),
                    ca: registration.ca.clone(),
                    join_token: registration.join_token.clone(),
                    labels: registration.labels.clone(),
                    metrics: registration.metrics.clone(),
                    draining: false,
                    registered_ms: now_ms,
                    status: ClusterStatus {
                        state: ClusterState::Pending,
                        reason: String::new(),
                        since_ms: now_ms,
                        facts: None,
                        instances: Default::default(),
                        set_errors: BTreeMap::new(),
                        sets: BTreeMap::new(),
                        metrics: Default::default(),
                    },
                    events: VecDeque::new(),
                    sets: BTreeMap::new(),
                    pending_restarts: BTreeMap::new(),
                };
                stored.transition(ClusterState::Pending, "registered".to_string(), now_ms);
                tenant.clusters.insert(cluster.name.clone(), stored);
                Ok(())
            }
            ClusterOp::Patch { cluster, patch } => {
                if let Some(endpoint) = &patch.endpoint {
                    validate_endpoint(endpoint)?;
                }
                if let Some(token) = &patch.join_token {
                    validate_join_token(token)?;
                }
                if let Some(labels) = &patch.labels {
                    labels_checked(labels)?;
                }
                if let Some(metrics) = &patch.metrics {
                    validate_refs(metrics)?;
                }
                let before = self.cluster_mut(cluster)?;
                let endpoint = patch.endpoint.clone().unwrap_or_else(|| before.endpoint.clone());
                let ca = match (&patch.ca, endpoint.starts_with("https://")) {
                    (Some(ca), _) => Some(ca.clone()),
                    (None, true) => before.ca.clone(),
                    // Back to plain HTTP: the CA goes.
                    (None, false) => None,
                };
                validate_agent_ca(&endpoint, ca.as_deref())?;
                if let Some(endpoint) = &patch.endpoint {
                    self.check_endpoint_free(endpoint, cluster)?;
                }
                if let Some(extras) = self
                    .tenants
                    .get_mut(&cluster.tenant)
                    .and_then(|t| t.krake.clusters.get_mut(&cluster.name))
                {
                    extras.meta.touched(now_ms);
                }
                let stored = self.cluster_mut(cluster)?;
                stored.endpoint = endpoint;
                stored.ca = ca;
                if let Some(token) = &patch.join_token {
                    stored.join_token = token.clone();
                }
                if let Some(labels) = &patch.labels {
                    stored.labels = labels.clone();
                }
                if let Some(metrics) = &patch.metrics {
                    // Readings of metrics it is no longer scored on go at once; new ones are
                    // read by its actor.
                    let kept = |name: &String| metrics.iter().any(|m| m.name == *name);
                    stored.status.metrics.values.retain(|name, _| kept(name));
                    stored.status.metrics.failures.retain(|name, _| kept(name));
                    stored.metrics = metrics.clone();
                }
                Ok(())
            }
            ClusterOp::Drain { cluster, draining } => {
                let stored = self.cluster_mut(cluster)?;
                stored.draining = *draining;
                Ok(())
            }
            ClusterOp::Deregister { cluster } => {
                self.cluster_mut(cluster)?;
                // Its agent would keep running them while they were placed elsewhere: two
                // copies. Moving services off a cluster is the scheduler's (next) work.
                let placed = self.tenants.iter().find_map(|(tenant, t)| {
                    t.services
                        .iter()
                        .find(|(_, s)| s.placement.as_ref() == Some(cluster))
                        .map(|(name, _)| format!("{tenant}/{name}"))
                });
                if let Some(service) = placed {
                    return Err(PlatformError::Conflict(format!(
                        "service {service} runs on cluster {cluster}; delete it (or its other services) first"
                    )));
                }
                if let Some(tenant) = self.tenants.get_mut(&cluster.tenant) {
                    tenant.clusters.remove(&cluster.name);
                    tenant.krake.clusters.remove(&cluster.name);
                }
                Ok(())
            }
            ClusterOp::PutSet { cluster, set, spec } => {
                validate_set(set, spec)?;
                let stored = self.cluster_mut(cluster)?;
                let revision = match stored.sets.get(set) {
                    Some(old) if old.spec.same_workload(spec) => old.revision,
                    Some(old) => old
                        .revision
                        .checked_add(1)
                        .ok_or_else(|| PlatformError::Invalid {
                            field: "revision".into(),
                            message: format!(
                                "set {set} has reached revision {}; change it under a new name",
                                old.revision
                            ),
                        })?,
                    None => 1,
                };
                stored.sets.insert(
                    set.clone(),
                    StoredSet {
                        spec: spec.clone(),
                        revision,
                    },
                );
                Ok(())
            }
            ClusterOp::DeleteSet { cluster, set } => {
                let stored = self.cluster_mut(cluster)?;
                stored.remove_set(set).map(|_| ()).ok_or_else(|| {
                    PlatformError::NotFound(format!("set {set} of cluster {cluster} not found"))
                })
            }
            ClusterOp::RestartInstance { cluster, instance } => {
                let stored = self.cluster_mut(cluster)?;
                if !stored.pins(instance) {
                    return Err(PlatformError::NotFound(format!(
                        "instance {instance} is not pinned to cluster {cluster}"
                    )));
                }
                stored.pending_restarts.insert(instance.clone(), now_ms);
                Ok(())
            }
            ClusterOp::PutMetricsProvider { tenant, name, spec } => {
                crate::validation::validate_object_name("name", name)?;
                validate_provider(spec)?;
                let stored = self.metrics_tenant_mut(tenant)?;
                if !stored.metrics_providers.contains_key(name)
                    && stored.metrics_providers.len() >= MAX_METRICS_PER_TENANT
                {
                    return Err(PlatformError::Conflict(format!(
                        "tenant {tenant:?} has {MAX_METRICS_PER_TENANT} metrics providers already"
                    )));
                }
                stored.metrics_providers.insert(name.clone(), spec.clone());
                let identity =
                    crate::krake::kind::KrakeKey::new(provider_kind(tenant), namespace_of(tenant), name);
                crate::krake::meta::keep(&mut stored.krake.providers, &identity.to_string(), name, now_ms);
                Ok(())
            }
            ClusterOp::DeleteMetricsProvider { tenant, name } => {
                self.metrics_tenant_mut(tenant)?;
                let stored = self.metrics_tenant_mut(tenant)?;
                stored.krake.providers.remove(name);
                stored.metrics_providers.remove(name).map(|_| ()).ok_or_else(|| {
                    PlatformError::NotFound(format!("tenant {tenant:?} has no metrics provider {name:?}"))
                })
            }
            ClusterOp::PutMetric { tenant, name, spec } => {
                crate::validation::validate_object_name("name", name)?;
                validate_metric(spec)?;
                let stored = self.metrics_tenant_mut(tenant)?;
                if !stored.metrics.contains_key(name) && stored.metrics.len() >= MAX_METRICS_PER_TENANT {
                    return Err(PlatformError::Conflict(format!(
                        "tenant {tenant:?} has {MAX_METRICS_PER_TENANT} metrics already"
                    )));
                }
                stored.metrics.insert(name.clone(), spec.clone());
                let identity =
                    crate::krake::kind::KrakeKey::new(metric_kind(tenant), namespace_of(tenant), name);
                crate::krake::meta::keep(&mut stored.krake.metrics, &identity.to_string(), name, now_ms);
                Ok(())
            }
            ClusterOp::DeleteMetric { tenant, name } => {
                self.metrics_tenant_mut(tenant)?;
                let stored = self.metrics_tenant_mut(tenant)?;
                stored.krake.metrics.remove(name);
                stored.metrics.remove(name).map(|_| ()).ok_or_else(|| {
                    PlatformError::NotFound(format!("tenant {tenant:?} has no metric {name:?}"))
                })
            }
        }
    }

    fn metrics_tenant_mut(&mut self, tenant: &str) -> Result<&mut super::Tenant, PlatformError> {
        self.tenants
            .get_mut(tenant)
            .ok_or_else(|| PlatformError::NotFound(format!("tenant {tenant:?} not found")))
    }

    /// Applies an observation to the cluster it names, if that cluster still has its uid.
    fn observe_cluster(&mut self, now_ms: u64, observation: &ClusterObservation) {
        let Ok(stored) = self.cluster_mut(&observation.cluster) else {
            return;
        };
        if stored.uid != observation.uid {
            return;
        }
        if stored.status.state != observation.state {
            stored.transition(observation.state, observation.reason.clone(), now_ms);
        }
        if let Some(facts) = &observation.facts {
            stored.status.facts = Some(crate::cluster::ClusterFacts::clone(facts));
        }
        if let Some(instances) = observation.instances {
            stored.status.instances = instances;
        }
        if let Some(errors) = &observation.set_errors {
            stored.status.set_errors = errors.clone();
        }
        if let Some(sets) = &observation.sets {
            stored.status.sets = sets.clone();
        }
        if let Some(change) = &observation.sets_changed {
            change.apply_to(&mut stored.status.sets);
        }
        if let Some(metrics) = &observation.metrics {
            // A reading started before the cluster's metrics changed keeps only what it lists.
            let mut metrics = metrics.clone();
            let listed = |name: &String| stored.metrics.iter().any(|m| m.name == *name);
            metrics.values.retain(|name, _| listed(name));
            metrics.failures.retain(|name, _| listed(name));
            stored.status.metrics = metrics;
        }
        for (instance, requested_ms) in &observation.restarted {
            if stored.pending_restarts.get(instance) == Some(requested_ms) {
                stored.pending_restarts.remove(instance);
            }
        }
    }

    /// Every cluster of every tenant.
    pub fn clusters(&self) -> impl Iterator<Item = (ClusterRef, &Cluster)> {
        self.tenants.iter().flat_map(|(tenant, t)| {
            t.clusters.iter().map(move |(name, cluster)| {
                (
                    ClusterRef {
                        tenant: tenant.clone(),
                        name: name.clone(),
                    },
                    cluster,
                )
            })
        })
    }

    /// One cluster.
    pub fn cluster(&self, cluster: &ClusterRef) -> Option<&Cluster> {
        self.tenants.get(&cluster.tenant)?.clusters.get(&cluster.name)
    }
}

/// The Krake kind of a metric of `tenant`: the operator tenant's are Krake's global ones.
fn metric_kind(tenant: &str) -> crate::krake::kind::KrakeKind {
    if tenant == super::OPERATOR_TENANT {
        crate::krake::kind::KrakeKind::GlobalMetric
    } else {
        crate::krake::kind::KrakeKind::Metric
    }
}

/// The Krake kind of a metrics provider of `tenant`.
fn provider_kind(tenant: &str) -> crate::krake::kind::KrakeKind {
    if tenant == super::OPERATOR_TENANT {
        crate::krake::kind::KrakeKind::GlobalMetricsProvider
    } else {
        crate::krake::kind::KrakeKind::MetricsProvider
    }
}

/// The Krake namespace of `tenant`'s objects (none for the operator tenant's global ones).
fn namespace_of(tenant: &str) -> Option<&str> {
    (tenant != super::OPERATOR_TENANT).then_some(tenant)
}
