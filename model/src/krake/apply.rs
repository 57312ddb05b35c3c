//! Applying a [`KrakeCommand`] to the replicated state: Krake's operation semantics
//! (`krake.md` §2.5) on the objects it names, and the cascading deletion its garbage collector
//! would do (§6.6), run in the same apply so no replica waits for a controller.

use super::cluster::{KrakeCluster, KrakeClusterExtras};
use super::command::{KrakeBody, KrakeChange, KrakeCommand, KrakeStored};
use super::error::KrakeError;
use super::kind::{KrakeKey, KrakeKind};
use super::meta::{KrakeMeta, MetaInput, CASCADE_DELETION};
use super::rbac::KrakeRole;
use super::store::{KrakeStore, Stored, MAX_RBAC_OBJECTS};
use super::validate;
use crate::cluster::{ClusterOp, ClusterPatch, ClusterRef, ClusterRegistration};
use crate::limits::{json_depth, MAX_JSON_DEPTH};
use crate::platform::error::PlatformError;
use crate::platform::Platform;
use crate::platform::{validate_endpoint, validate_join_token};
use crate::pod_security::PodSecurity;
use crate::scheduling::metrics::{validate_metric, validate_provider, validate_refs, MAX_METRICS_PER_TENANT};

/// Most rules of a role, and most entries of a rule's or a binding's lists (and of a
/// cluster's custom resources).
pub const MAX_RULES: usize = super::validate::MAX_LIST;

/// Most bytes of what a Krake cluster keeps beside the Drover cluster (kubeconfig entries,
/// constraints).
pub const MAX_EXTRAS_BYTES: usize = 64 * 1024;

/// Krake's objects as one apply sees them: the platform's tenants and the RBAC store.
pub struct KrakeObjects<'a> {
    /// The tenants (metrics, providers, clusters, applications' services).
    pub platform: &'a mut Platform,
    /// Roles and bindings.
    pub store: &'a mut KrakeStore,
    /// Who writes (the Krake user; the environment of an application's service is chosen as
    /// for this user).
    pub(super) caller: String,
    /// The services this apply changed, with their uid before (for the watches' stamps).
    pub(super) touched: Vec<((String, String), Option<String>)>,
}

fn platform_invalid(error: PlatformError) -> KrakeError {
    match error {
        PlatformError::Invalid { field, message } => KrakeError::Invalid { field, message },
        other => KrakeError::invalid("spec", other.to_string()),
    }
}

/// The pod security level `namespace`'s pods are held to: the tenant's, as the operator set it
/// (baseline for a namespace that is no tenant: its write is refused anyway). The one place the
/// Krake apply reads it.
pub fn pod_security_of(platform: &Platform, namespace: &str) -> PodSecurity {
    platform
        .tenant(namespace)
        .map(|tenant| tenant.pod_security)
        .unwrap_or_default()
}

/// Checks an object's content against its kind. An Application's manifest that names container
/// images is translated only with `security` (its tenant's pod security level, which the apply
/// knows): without it (the check a node makes before proposing) the apply is left to do so.
pub fn validate_body(
    kind: KrakeKind,
    body: &KrakeBody,
    security: Option<PodSecurity>,
) -> Result<(), KrakeError> {
    match (kind, body) {
        (KrakeKind::Role, KrakeBody::Role(role)) => validate_role(role),
        (KrakeKind::RoleBinding, KrakeBody::RoleBinding(binding)) => {
            if binding.users.len() > MAX_RULES || binding.roles.len() > MAX_RULES {
                return Err(KrakeError::invalid(
                    "users",
                    format!("at most {MAX_RULES} users and {MAX_RULES} roles"),
                ));
            }
            for user in &binding.users {
                if user.is_empty() || user.len() > validate::MAX_NAME {
                    return Err(KrakeError::invalid("users", "a user is 1 to 255 characters"));
                }
            }
            for role in &binding.roles {
                validate::name("roles", role)?;
            }
            Ok(())
        }
        (KrakeKind::GlobalMetric | KrakeKind::Metric, KrakeBody::Metric(spec)) => {
            validate_metric(spec).map_err(platform_invalid)
        }
        (KrakeKind::GlobalMetricsProvider | KrakeKind::MetricsProvider, KrakeBody::MetricsProvider(spec)) => {
            validate_provider(spec).map_err(platform_invalid)
        }
        (KrakeKind::Cluster, KrakeBody::Cluster(cluster)) => validate_cluster(cluster),
        (
            KrakeKind::GlobalInfrastructureProvider | KrakeKind::InfrastructureProvider,
            KrakeBody::InfrastructureProvider(provider),
        ) => provider.validate(),
        (KrakeKind::GlobalCloud, KrakeBody::Cloud(cloud)) => cloud.validate(true),
        (KrakeKind::Cloud, KrakeBody::Cloud(cloud)) => cloud.validate(false),
        (KrakeKind::Application, KrakeBody::Application(app)) => {
            app.validate()?;
            let security = match security {
                Some(level) => level,
                None if super::manifest::names_images(&app.manifest) => return Ok(()),
                // Exec containers do not depend on the level.
                None => PodSecurity::default(),
            };
            let translated = super::manifest::translate(&app.manifest, security)?;
            // Without that Service it can never be asked to shut down, so its deletion could
            // only ever wait out the grace (Krake accepts it).
            let asked = super::application::SHUTDOWN_SERVICE;
            if app.hook("shutdown") && !translated.services.contains_key(asked) {
                return Err(KrakeError::invalid(
                    "spec.hooks",
                    format!("the shutdown hook needs the manifest to have a Service named {asked:?}, where the application is asked to shut down"),
                ));
            }
            Ok(())
        }
        (kind, _) => Err(KrakeError::invalid(
            "kind",
            format!("the body is not a {}", kind.name()),
        )),
    }
}

fn validate_cluster(cluster: &KrakeCluster) -> Result<(), KrakeError> {
    let kubeconfig = |error: PlatformError| match error {
        PlatformError::Invalid { message, .. } => KrakeError::invalid("spec.kubeconfig", message),
        other => KrakeError::invalid("spec.kubeconfig", other.to_string()),
    };
    validate_endpoint(&cluster.endpoint).map_err(kubeconfig)?;
    if let Some(token) = &cluster.join_token {
        validate_join_token(token).map_err(kubeconfig)?;
    }
    validate_refs(&cluster.metrics).map_err(|e| match e {
        PlatformError::Invalid { message, .. } => KrakeError::invalid("spec.metrics", message),
        other => KrakeError::invalid("spec.metrics", other.to_string()),
    })?;
    let extras = &cluster.extras;
    if extras.custom_resources.len() > MAX_RULES
        || extras
            .custom_resources
            .iter()
            .any(|r| r.is_empty() || r.len() > validate::MAX_NAME)
    {
        return Err(KrakeError::invalid(
            "spec.custom_resources",
            format!("at most {MAX_RULES} names of 1 to 255 characters"),
        ));
    }
    for (field, value) in [
        ("spec.kubeconfig", &extras.kubeconfig),
        ("spec.constraints", &extras.constraints),
    ] {
        if json_depth(value) > MAX_JSON_DEPTH {
            return Err(KrakeError::invalid(
                field,
                format!("nests at most {MAX_JSON_DEPTH} levels deep"),
            ));
        }
    }
    let size = serde_json::to_vec(&extras.kubeconfig).map_or(usize::MAX, |b| b.len())
        + serde_json::to_vec(&extras.constraints).map_or(usize::MAX, |b| b.len());
    if size > MAX_EXTRAS_BYTES {
        return Err(KrakeError::invalid(
            "spec",
            format!("the kubeconfig and constraints take at most {MAX_EXTRAS_BYTES} bytes"),
        ));
    }
    Ok(())
}

fn validate_role(role: &KrakeRole) -> Result<(), KrakeError> {
    if role.rules.len() > MAX_RULES {
        return Err(KrakeError::invalid("rules", format!("at most {MAX_RULES} rules")));
    }
    for rule in &role.rules {
        let long = [&rule.resources, &rule.namespaces]
            .iter()
            .any(|list| list.len() > MAX_RULES || list.iter().any(|e| e.len() > validate::MAX_NAME));
        if long || rule.api.len() > validate::MAX_NAME || rule.verbs.len() > MAX_RULES {
            return Err(KrakeError::invalid(
                "rules",
                format!("a rule has at most {MAX_RULES} entries per list, each at most 255 characters"),
            ));
        }
    }
    Ok(())
}

pub(super) fn no_tenant(key: &KrakeKey) -> KrakeError {
    let ns = key.tenant();
    KrakeError::NotFound(format!(
        "Namespace {ns:?} is not a tenant of this Drover: a Krake namespace is a tenant (create it with POST /api/1.0-beta/tenant/{ns})"
    ))
}

impl<'a> KrakeObjects<'a> {
    /// Krake's objects over the platform's tenants and the RBAC store.
    pub fn new(platform: &'a mut Platform, store: &'a mut KrakeStore) -> Self {
        Self {
            platform,
            store,
            caller: String::new(),
            touched: Vec::new(),
        }
    }

    /// The services this apply changed (named), and their uids before it.
    pub fn touched(self) -> (Vec<(String, String)>, Vec<Option<String>>) {
        self.touched.into_iter().unzip()
    }

    /// The object `key` names, with its metadata (made up, deterministically, for an object
    /// written before Drover kept Krake metadata).
    pub fn read(&self, key: &KrakeKey) -> Option<(KrakeMeta, KrakeBody)> {
        read(self.platform, self.store, key)
    }

    fn write(
        &mut self,
        now_ms: u64,
        key: &KrakeKey,
        meta: KrakeMeta,
        body: KrakeBody,
    ) -> Result<(), KrakeError> {
        match body {
            KrakeBody::Role(role) => {
                self.store
                    .roles
                    .insert(key.name.clone(), Stored { meta, body: role });
            }
            KrakeBody::RoleBinding(binding) => {
                self.store
                    .role_bindings
                    .insert(key.name.clone(), Stored { meta, body: binding });
            }
            KrakeBody::Metric(spec) => {
                let tenant = self.tenant_mut(key)?;
                tenant.metrics.insert(key.name.clone(), spec);
                tenant.krake.metrics.insert(key.name.clone(), meta);
            }
            KrakeBody::MetricsProvider(spec) => {
                let tenant = self.tenant_mut(key)?;
                tenant.metrics_providers.insert(key.name.clone(), spec);
                tenant.krake.providers.insert(key.name.clone(), meta);
            }
            KrakeBody::Cluster(cluster) => self.write_cluster(now_ms, key, meta, cluster)?,
            KrakeBody::Application(app) => self.write_application(now_ms, key, meta, app)?,
            KrakeBody::InfrastructureProvider(spec) => {
                let tenant = self.tenant_mut(key)?;
                tenant
                    .krake
                    .infrastructure_providers
                    .insert(key.name.clone(), Stored { meta, body: spec });
            }
            KrakeBody::Cloud(spec) => {
                let tenant = self.tenant_mut(key)?;
                tenant
                    .krake
                    .clouds
                    .insert(key.name.clone(), Stored { meta, body: spec });
            }
        }
        Ok(())
    }

    /// Registers the Drover cluster, or patches it, and keeps the Krake extras beside it.
    fn write_cluster(
        &mut self,
        now_ms: u64,
        key: &KrakeKey,
        mut meta: KrakeMeta,
        cluster: KrakeCluster,
    ) -> Result<(), KrakeError> {
        let at = ClusterRef {
            tenant: key.tenant().to_string(),
            name: key.name.clone(),
        };
        let labels = std::mem::take(&mut meta.input.labels);
        let exists = self
            .platform
            .tenant(&at.tenant)
            .ok_or_else(|| no_tenant(key))?
            .clusters
            .contains_key(&at.name);
        let op = if exists {
            ClusterOp::Patch {
                cluster: at.clone(),
                patch: ClusterPatch {
                    endpoint: Some(cluster.endpoint.clone()),
                    ca: cluster.ca.clone(),
                    join_token: cluster.join_token.clone(),
                    labels: Some(labels),
                    metrics: Some(cluster.metrics.clone()),
                },
            }
        } else {
            let join_token = cluster.join_token.clone().ok_or_else(|| {
                KrakeError::invalid(
                    "spec.kubeconfig",
                    "the user has no token: give the agent's join token",
                )
            })?;
            ClusterOp::Register {
                cluster: at.clone(),
                uid: meta.uid.clone(),
                registration: ClusterRegistration {
                    endpoint: cluster.endpoint.clone(),
                    ca: cluster.ca.clone(),
                    join_token,
                    labels,
                    metrics: cluster.metrics.clone(),
                },
            }
        };
        self.platform
            .apply_cluster_op(now_ms, &op)
            .map_err(cluster_refused)?;
        let tenant = self.tenant_mut(key)?;
        tenant.krake.clusters.insert(
            key.name.clone(),
            KrakeClusterExtras {
                meta,
                spec: cluster.extras,
            },
        );
        Ok(())
    }

    /// The tenant holding a metric or provider. The operator tenant is made when a global one
    /// is written before any operator registered (registering makes it the same way).
    fn tenant_mut(&mut self, key: &KrakeKey) -> Result<&mut crate::platform::Tenant, KrakeError> {
        if key.namespace.is_none() {
            return Ok(self.platform.tenants.entry(key.tenant().to_string()).or_default());
        }
        self.platform
            .tenants
            .get_mut(key.tenant())
            .ok_or_else(|| no_tenant(key))
    }

    fn remove(&mut self, now_ms: u64, key: &KrakeKey) -> Result<(), KrakeError> {
        match key.kind {
            KrakeKind::Role => {
                self.store.roles.remove(&key.name);
            }
            KrakeKind::RoleBinding => {
                self.store.role_bindings.remove(&key.name);
            }
            KrakeKind::GlobalMetric | KrakeKind::Metric => {
                if let Some(tenant) = self.platform.tenants.get_mut(key.tenant()) {
                    tenant.metrics.remove(&key.name);
                    tenant.krake.metrics.remove(&key.name);
                }
            }
            KrakeKind::GlobalMetricsProvider | KrakeKind::MetricsProvider => {
                if let Some(tenant) = self.platform.tenants.get_mut(key.tenant()) {
                    tenant.metrics_providers.remove(&key.name);
                    tenant.krake.providers.remove(&key.name);
                }
            }
            KrakeKind::Cluster => {
                let at = ClusterRef {
                    tenant: key.tenant().to_string(),
                    name: key.name.clone(),
                };
                // The platform's deregistration also drops the Krake extras and records the
                // removal, as for a cluster deregistered through the platform API.
                return self
                    .platform
                    .apply_cluster_op(now_ms, &ClusterOp::Deregister { cluster: at })
                    .map_err(cluster_refused);
            }
            // Its service is deleted; the application goes with it (and records its removal).
            KrakeKind::Application => return self.retire_application(now_ms, key, false),
            KrakeKind::GlobalInfrastructureProvider | KrakeKind::InfrastructureProvider => {
                if let Some(tenant) = self.platform.tenants.get_mut(key.tenant()) {
                    tenant.krake.infrastructure_providers.remove(&key.name);
                }
            }
            KrakeKind::GlobalCloud | KrakeKind::Cloud => {
                if let Some(tenant) = self.platform.tenants.get_mut(key.tenant()) {
                    tenant.krake.clouds.remove(&key.name);
                }
            }
        }
        Ok(())
    }

    fn room_for(&self, key: &KrakeKey) -> Result<(), KrakeError> {
        let (count, max) = match key.kind {
            // The platform's registration and services have their own bounds.
            KrakeKind::Cluster | KrakeKind::Application => return Ok(()),
            KrakeKind::Role => (self.store.roles.len(), MAX_RBAC_OBJECTS),
            KrakeKind::RoleBinding => (self.store.role_bindings.len(), MAX_RBAC_OBJECTS),
            KrakeKind::GlobalMetric | KrakeKind::Metric => {
                let Some(tenant) = self.platform.tenants.get(key.tenant()) else {
                    // The operator tenant is made by the first global write.
                    return if key.namespace.is_none() {
                        Ok(())
                    } else {
                        Err(no_tenant(key))
                    };
                };
                (tenant.metrics.len(), MAX_METRICS_PER_TENANT)
            }
            KrakeKind::GlobalMetricsProvider | KrakeKind::MetricsProvider => {
                let Some(tenant) = self.platform.tenants.get(key.tenant()) else {
                    // The operator tenant is made by the first global write.
                    return if key.namespace.is_none() {
                        Ok(())
                    } else {
                        Err(no_tenant(key))
                    };
                };
                (tenant.metrics_providers.len(), MAX_METRICS_PER_TENANT)
            }
            KrakeKind::GlobalInfrastructureProvider
            | KrakeKind::InfrastructureProvider
            | KrakeKind::GlobalCloud
            | KrakeKind::Cloud => {
                let Some(tenant) = self.platform.tenants.get(key.tenant()) else {
                    // The operator tenant is made by the first global write.
                    return if key.namespace.is_none() {
                        Ok(())
                    } else {
                        Err(no_tenant(key))
                    };
                };
                let count = if matches!(key.kind, KrakeKind::GlobalCloud | KrakeKind::Cloud) {
                    tenant.krake.clouds.len()
                } else {
                    tenant.krake.infrastructure_providers.len()
                };
                (count, super::infrastructure::MAX_PER_TENANT)
            }
        };
        if count >= max {
            return Err(KrakeError::invalid(
                "metadata.name",
                format!("there are {max} objects of kind {} here already", key.kind.name()),
            ));
        }
        Ok(())
    }

    /// Applies `command` at the committed time `now_ms`.
    pub fn apply(&mut self, now_ms: u64, command: &KrakeCommand) -> Result<KrakeStored, KrakeError> {
        let key = &command.key;
        check_key(key)?;
        self.caller.clone_from(&command.caller);
        let stored = match &command.change {
            KrakeChange::Create { meta, body } => self.create(now_ms, key, meta, body)?,
            KrakeChange::Update {
                meta,
                body,
                modified_us,
            } => self.update(now_ms, key, meta, body, *modified_us)?,
            KrakeChange::Delete { force } => self.delete(now_ms, key, *force)?,
            KrakeChange::Hook { call } => self.hook_call(now_ms, key, call)?,
        };
        self.collect(now_ms);
        Ok(stored)
    }

    fn create(
        &mut self,
        now_ms: u64,
        key: &KrakeKey,
        input: &MetaInput,
        body: &KrakeBody,
    ) -> Result<KrakeStored, KrakeError> {
        validate::meta_input(input)?;
        validate_body(key.kind, body, Some(pod_security_of(self.platform, key.tenant())))?;
        if self.read(key).is_some() {
            return Err(KrakeError::AlreadyExists(format!(
                "{} already exists",
                key.described()
            )));
        }
        self.room_for(key)?;
        let meta = KrakeMeta::made(&key.to_string(), now_ms, input.clone());
        self.write(now_ms, key, meta.clone(), body.clone())?;
        Ok(KrakeStored {
            key: key.clone(),
            meta,
            body: body.clone(),
            gone: false,
        })
    }

    fn update(
        &mut self,
        now_ms: u64,
        key: &KrakeKey,
        input: &MetaInput,
        body: &KrakeBody,
        modified_us: Option<u64>,
    ) -> Result<KrakeStored, KrakeError> {
        validate::meta_input(input)?;
        validate_body(key.kind, body, Some(pod_security_of(self.platform, key.tenant())))?;
        let (mut meta, _) = self.read(key).ok_or_else(|| not_found(key))?;
        if modified_us.is_some_and(|read| read != meta.modified_us) {
            return Err(KrakeError::Transaction(format!(
                "{} was changed since it was read: read it again and apply the change to what it is now",
                key.described(),
            )));
        }
        if meta.in_deletion() && !input.finalizers.iter().all(|f| meta.input.finalizers.contains(f)) {
            return Err(KrakeError::Finalizers(
                "Finalizers can only be removed if a deletion is in progress.".to_string(),
            ));
        }
        meta.input = input.clone();
        meta.touched(now_ms);
        let gone = meta.in_deletion() && meta.input.finalizers.is_empty();
        if gone && key.kind != KrakeKind::Application {
            self.remove(now_ms, key)?;
        } else {
            self.write(now_ms, key, meta.clone(), body.clone())?;
            if gone {
                // An application goes once its service does (or waits for its shutdown hook).
                self.remove(now_ms, key)?;
            }
        }
        let gone = gone && self.read(key).is_none();
        Ok(KrakeStored {
            key: key.clone(),
            meta,
            body: body.clone(),
            gone,
        })
    }

    fn delete(&mut self, now_ms: u64, key: &KrakeKey, force: bool) -> Result<KrakeStored, KrakeError> {
        let (mut meta, body) = self.read(key).ok_or_else(|| not_found(key))?;
        if force {
            if key.kind == KrakeKind::Application {
                self.retire_application(now_ms, key, true)?;
            } else {
                self.remove(now_ms, key)?;
            }
            // Answered with the time of its deletion, as Krake's forced delete is.
            meta.mark_deleted(now_ms);
            return Ok(KrakeStored {
                key: key.clone(),
                meta,
                body,
                gone: true,
            });
        }
        if !meta.in_deletion() {
            meta.mark_deleted(now_ms);
            if meta.input.finalizers.last().map(String::as_str) != Some(CASCADE_DELETION) {
                meta.input.finalizers.push(CASCADE_DELETION.to_string());
            }
            self.write(now_ms, key, meta.clone(), body.clone())?;
        }
        Ok(KrakeStored {
            key: key.clone(),
            meta,
            body,
            gone: false,
        })
    }

    /// The metadata stored for Krake objects, with their keys (an object without stored
    /// metadata was never marked deleted and names no owner).
    fn stored_metas(&self) -> Vec<(KrakeKey, KrakeMeta)> {
        let mut metas: Vec<(KrakeKey, KrakeMeta)> = Vec::new();
        for (name, stored) in &self.store.roles {
            metas.push((KrakeKey::new(KrakeKind::Role, None, name), stored.meta.clone()));
        }
        for (name, stored) in &self.store.role_bindings {
            metas.push((
                KrakeKey::new(KrakeKind::RoleBinding, None, name),
                stored.meta.clone(),
            ));
        }
        for (tenant, stored) in &self.platform.tenants {
            let global = tenant == crate::platform::OPERATOR_TENANT;
            let (metric, provider, namespace) = if global {
                (KrakeKind::GlobalMetric, KrakeKind::GlobalMetricsProvider, None)
            } else {
                (
                    KrakeKind::Metric,
                    KrakeKind::MetricsProvider,
                    Some(tenant.as_str()),
                )
            };
            for (name, meta) in &stored.krake.metrics {
                metas.push((KrakeKey::new(metric, namespace, name), meta.clone()));
            }
            for (name, meta) in &stored.krake.providers {
                metas.push((KrakeKey::new(provider, namespace, name), meta.clone()));
            }
            for (name, extras) in &stored.krake.clusters {
                metas.push((
                    KrakeKey::new(KrakeKind::Cluster, Some(tenant), name),
                    extras.meta.clone(),
                ));
            }
            let (provider, cloud) = if global {
                (KrakeKind::GlobalInfrastructureProvider, KrakeKind::GlobalCloud)
            } else {
                (KrakeKind::InfrastructureProvider, KrakeKind::Cloud)
            };
            for (name, stored) in &stored.krake.infrastructure_providers {
                metas.push((KrakeKey::new(provider, namespace, name), stored.meta.clone()));
            }
            for (name, stored) in &stored.krake.clouds {
                metas.push((KrakeKey::new(cloud, namespace, name), stored.meta.clone()));
            }
            for (name, extras) in &stored.krake.applications {
                let mut meta = extras.meta.clone();
                if let Some(cluster) = stored.services.get(name).and_then(|s| s.placement.as_ref()) {
                    meta.input.owners.push(super::application::cluster_owner(cluster));
                }
                metas.push((KrakeKey::new(KrakeKind::Application, Some(tenant), name), meta));
            }
        }
        metas
    }

    /// Runs the cascading deletion if any object waits for it (after writes of other kinds).
    pub fn collect_pending(&mut self, now_ms: u64) {
        self.collect(now_ms);
    }

    /// Cascading deletion (Krake's garbage collector): an object in deletion whose last
    /// finalizer is `cascade_deletion` marks the objects that name it as owner deleted; once
    /// none is left it drops the finalizer, and an object in deletion with no finalizer is
    /// removed. Repeated until nothing changes (each round removes or marks at least one). Reads
    /// only the stored metadata until it changes an object.
    fn collect(&mut self, now_ms: u64) {
        let mut rounds = 0;
        loop {
            rounds += 1;
            let metas = self.stored_metas();
            if !metas.iter().any(|(_, meta)| cascading(meta)) {
                return;
            }
            let mut changed = false;
            for (key, _) in metas.iter().filter(|(_, meta)| cascading(meta)) {
                let me = key.owner_ref();
                let dependents: Vec<&(KrakeKey, KrakeMeta)> = metas
                    .iter()
                    .filter(|(other, other_meta)| other != key && other_meta.input.owners.contains(&me))
                    .collect();
                if !dependents.is_empty() {
                    for (dependent, dependent_meta) in dependents {
                        if !dependent_meta.in_deletion() {
                            let _ = self.delete(now_ms, dependent, false);
                            changed = true;
                        }
                    }
                    continue;
                }
                let Some((mut meta, body)) = self.read(key) else {
                    continue;
                };
                meta.input.finalizers.pop();
                meta.touched(now_ms);
                if meta.input.finalizers.is_empty() && key.kind == KrakeKind::Application {
                    // Its service is deleted; it goes with it.
                    let _ = self.write(now_ms, key, meta, body);
                    changed |= self.remove(now_ms, key).is_ok();
                } else if meta.input.finalizers.is_empty() {
                    // A cluster that services still run on stays (with its finalizer) until
                    // they are gone; a later write collects it.
                    changed |= self.remove(now_ms, key).is_ok();
                } else {
                    // Cannot fail: the object was just read from its tenant.
                    let _ = self.write(now_ms, key, meta, body);
                    changed = true;
                }
            }
            if !changed || rounds > metas.len() + 1 {
                return;
            }
        }
    }
}

/// The object `key` names, with its metadata.
pub fn read(platform: &Platform, store: &KrakeStore, key: &KrakeKey) -> Option<(KrakeMeta, KrakeBody)> {
    let made_up = || KrakeMeta::made(&key.to_string(), 0, MetaInput::default());
    match key.kind {
        KrakeKind::Role => store
            .roles
            .get(&key.name)
            .map(|s| (s.meta.clone(), KrakeBody::Role(s.body.clone()))),
        KrakeKind::RoleBinding => store
            .role_bindings
            .get(&key.name)
            .map(|s| (s.meta.clone(), KrakeBody::RoleBinding(s.body.clone()))),
        KrakeKind::GlobalMetric | KrakeKind::Metric => {
            let tenant = platform.tenant(key.tenant())?;
            let spec = tenant.metrics.get(&key.name)?;
            let meta = tenant
                .krake
                .metrics
                .get(&key.name)
                .cloned()
                .unwrap_or_else(made_up);
            Some((meta, KrakeBody::Metric(spec.clone())))
        }
        KrakeKind::Cluster => {
            let tenant = platform.tenant(key.tenant())?;
            let cluster = tenant.clusters.get(&key.name)?;
            let extras = tenant.krake.clusters.get(&key.name);
            let mut meta = match extras {
                Some(extras) => extras.meta.clone(),
                None => KrakeMeta::made(&key.to_string(), cluster.registered_ms, MetaInput::default()),
            };
            // One copy: the uid and labels are the Drover cluster's.
            meta.uid = cluster.uid.clone();
            meta.input.labels = cluster.labels.clone();
            let body = KrakeCluster {
                endpoint: cluster.endpoint.clone(),
                ca: cluster.ca.clone(),
                join_token: Some(cluster.join_token.clone()),
                metrics: cluster.metrics.clone(),
                extras: extras.map(|e| e.spec.clone()).unwrap_or_default(),
            };
            Some((meta, KrakeBody::Cluster(body)))
        }
        KrakeKind::GlobalInfrastructureProvider | KrakeKind::InfrastructureProvider => {
            let stored = platform
                .tenant(key.tenant())?
                .krake
                .infrastructure_providers
                .get(&key.name)?;
            Some((
                stored.meta.clone(),
                KrakeBody::InfrastructureProvider(stored.body.clone()),
            ))
        }
        KrakeKind::GlobalCloud | KrakeKind::Cloud => {
            let stored = platform.tenant(key.tenant())?.krake.clouds.get(&key.name)?;
            Some((stored.meta.clone(), KrakeBody::Cloud(stored.body.clone())))
        }
        KrakeKind::Application => {
            let tenant = platform.tenant(key.tenant())?;
            let extras = tenant.krake.applications.get(&key.name)?;
            let mut meta = extras.meta.clone();
            // Krake's binding makes the cluster it runs on its owner: derived, never stored.
            if let Some(cluster) = tenant.services.get(&key.name).and_then(|s| s.placement.as_ref()) {
                meta.input.owners.push(super::application::cluster_owner(cluster));
            }
            Some((meta, KrakeBody::Application(extras.spec.clone())))
        }
        KrakeKind::GlobalMetricsProvider | KrakeKind::MetricsProvider => {
            let tenant = platform.tenant(key.tenant())?;
            let spec = tenant.metrics_providers.get(&key.name)?;
            let meta = tenant
                .krake
                .providers
                .get(&key.name)
                .cloned()
                .unwrap_or_else(made_up);
            Some((meta, KrakeBody::MetricsProvider(spec.clone())))
        }
    }
}

/// The keys of the objects of `kind` (in `namespace`, or every namespace), in name order
/// within each namespace.
pub fn keys_of(
    platform: &Platform,
    store: &KrakeStore,
    kind: KrakeKind,
    namespace: Option<&str>,
) -> Vec<KrakeKey> {
    let global = |names: Vec<&String>| -> Vec<KrakeKey> {
        names.into_iter().map(|n| KrakeKey::new(kind, None, n)).collect()
    };
    match kind {
        KrakeKind::Role => global(store.roles.keys().collect()),
        KrakeKind::RoleBinding => global(store.role_bindings.keys().collect()),
        KrakeKind::GlobalMetric => platform
            .tenant(crate::platform::OPERATOR_TENANT)
            .map(|t| global(t.metrics.keys().collect()))
            .unwrap_or_default(),
        KrakeKind::GlobalMetricsProvider => platform
            .tenant(crate::platform::OPERATOR_TENANT)
            .map(|t| global(t.metrics_providers.keys().collect()))
            .unwrap_or_default(),
        KrakeKind::GlobalInfrastructureProvider => platform
            .tenant(crate::platform::OPERATOR_TENANT)
            .map(|t| global(t.krake.infrastructure_providers.keys().collect()))
            .unwrap_or_default(),
        KrakeKind::GlobalCloud => platform
            .tenant(crate::platform::OPERATOR_TENANT)
            .map(|t| global(t.krake.clouds.keys().collect()))
            .unwrap_or_default(),
        KrakeKind::Metric
        | KrakeKind::MetricsProvider
        | KrakeKind::Cluster
        | KrakeKind::Application
        | KrakeKind::InfrastructureProvider
        | KrakeKind::Cloud => platform
            .tenants()
            .filter(|(name, _)| {
                matches!(kind, KrakeKind::Cluster | KrakeKind::Application)
                    || name.as_str() != crate::platform::OPERATOR_TENANT
            })
            .filter(|(name, _)| namespace.is_none_or(|ns| ns == name.as_str()))
            .flat_map(|(name, tenant)| {
                let names: Vec<&String> = match kind {
                    KrakeKind::Metric => tenant.metrics.keys().collect(),
                    KrakeKind::MetricsProvider => tenant.metrics_providers.keys().collect(),
                    KrakeKind::Application => tenant.krake.applications.keys().collect(),
                    KrakeKind::InfrastructureProvider => {
                        tenant.krake.infrastructure_providers.keys().collect()
                    }
                    KrakeKind::Cloud => tenant.krake.clouds.keys().collect(),
                    _ => tenant.clusters.keys().collect(),
                };
                names
                    .into_iter()
                    .map(|n| KrakeKey::new(kind, Some(name), n))
                    .collect::<Vec<_>>()
            })
            .collect(),
    }
}

pub(super) fn not_found(key: &KrakeKey) -> KrakeError {
    KrakeError::NotFound(format!("{} does not exist", key.described()))
}

fn check_key(key: &KrakeKey) -> Result<(), KrakeError> {
    validate::name("metadata.name", &key.name)?;
    if key.kind == KrakeKind::Application {
        validate::application_name(&key.name)?;
    }
    match (&key.namespace, key.kind.namespaced()) {
        // The operator tenant's metrics and providers are the global kinds; its clusters (the
        // platform-wide ones) have no global kind and are its namespace's.
        (Some(namespace), true)
            if namespace == crate::platform::OPERATOR_TENANT
                && !matches!(key.kind, KrakeKind::Cluster | KrakeKind::Application) =>
        {
            Err(KrakeError::invalid(
                "metadata.namespace",
                format!("namespace {namespace:?} is the operator tenant, whose metrics and providers are the global kinds"),
            ))
        }
        (Some(namespace), true) => validate::name("metadata.namespace", namespace),
        (None, false) => Ok(()),
        (Some(_), false) => Err(KrakeError::invalid(
            "metadata.namespace",
            format!("{} is not namespaced", key.kind.name()),
        )),
        (None, true) => Err(KrakeError::invalid(
            "metadata.namespace",
            format!("{} needs a namespace", key.kind.name()),
        )),
    }
}

/// Whether an object waits for cascading deletion: in deletion, `cascade_deletion` its last
/// finalizer.
fn cascading(meta: &KrakeMeta) -> bool {
    meta.in_deletion() && meta.input.finalizers.last().map(String::as_str) == Some(CASCADE_DELETION)
}

/// A refusal of the platform's cluster operations, in Krake's terms.
fn cluster_refused(error: PlatformError) -> KrakeError {
    match error {
        PlatformError::Invalid { field, message } => {
            let field = match field.as_str() {
                "endpoint" | "join_token" => "spec.kubeconfig".to_string(),
                "labels" => "metadata.labels".to_string(),
                "name" => "metadata.name".to_string(),
                other => other.to_string(),
            };
            KrakeError::Invalid { field, message }
        }
        PlatformError::NotFound(message) => KrakeError::NotFound(message),
        PlatformError::Conflict(message) => KrakeError::Busy(message),
        other => KrakeError::Busy(other.to_string()),
    }
}
