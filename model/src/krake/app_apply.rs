//! Applying Krake's operations to an `Application`: the service it is is created or revised
//! through the platform's own service operations (with the tenant's rules choosing its
//! environment, as for a tenant admin), deleted through them (its actor removes the instances,
//! then the service and the application go), and its hooks' calls (`complete`, `shutdown`,
//! `retry`, `krake.md` §6.7) move its deletion on. Every check is made before anything changes.

use super::application::{deployment_of, Cleaning, KrakeApplication, KrakeApplicationExtras};
use super::apply::KrakeObjects;
use super::command::{HookCall, KrakeStored};
use super::error::KrakeError;
use super::kind::{KrakeKey, KrakeKind};
use super::meta::{KrakeMeta, ResourceRef};
use crate::platform::error::PlatformError;
use crate::platform::{Grant, Role};
use crate::service::{Change, ServiceOp};

/// What a refused hook call says (Krake's words).
const BAD_TOKEN: &str = "No token has been provided or the provided one is invalid.";

/// Whether `owner` names a cluster (an application's is derived from where it runs, never
/// stored).
fn is_cluster(owner: &ResourceRef) -> bool {
    owner.api == "kubernetes" && owner.kind == "Cluster"
}

/// A refusal of the platform's service operations, in Krake's terms.
fn service_refused(error: PlatformError) -> KrakeError {
    match error {
        PlatformError::Invalid { field, message } => KrakeError::invalid(format!("spec.{field}"), message),
        PlatformError::NotFound(message) => KrakeError::NotFound(message),
        PlatformError::Conflict(message) => KrakeError::Busy(message),
        other => KrakeError::invalid("spec", other.to_string()),
    }
}

impl KrakeObjects<'_> {
    /// The grant an application's service changes are made with: the caller was allowed by
    /// Krake's RBAC, and the tenant's rules choose the environment as for one of its admins.
    fn tenant_admin(&self) -> Grant {
        Grant {
            uid: Some(self.caller.clone()),
            operator: false,
            role: Some(Role::Admin),
        }
    }

    /// Notes that `tenant`'s `service` is about to change (for the watches' stamps).
    fn touch(&mut self, tenant: &str, service: &str) {
        let name = (tenant.to_string(), service.to_string());
        if self.touched.iter().any(|(n, _)| *n == name) {
            return;
        }
        let before = self.platform.service(tenant, service).ok().map(|s| s.uid.clone());
        self.touched.push((name, before));
    }

    fn service_op(
        &mut self,
        now_ms: u64,
        grant: &Grant,
        op: &ServiceOp,
    ) -> Result<crate::service::ServiceOutcome, KrakeError> {
        for (tenant, service) in op.services() {
            self.touch(&tenant, &service);
        }
        self.platform
            .apply_service_as(now_ms, grant, op)
            .map_err(service_refused)
    }

    /// Creates or changes the application's service, and keeps its Krake side beside it.
    pub(super) fn write_application(
        &mut self,
        now_ms: u64,
        key: &KrakeKey,
        mut meta: KrakeMeta,
        mut app: KrakeApplication,
    ) -> Result<(), KrakeError> {
        let (namespace, name) = (key.tenant().to_string(), key.name.clone());
        let tenant = self
            .platform
            .tenant(&namespace)
            .ok_or_else(|| super::apply::no_tenant(key))?;
        let stored = tenant.krake.applications.get(&name);
        let issued = app.issued.take();
        let mut tokens = stored.map(|s| s.tokens.clone()).unwrap_or_default();
        if tokens.endpoint.is_empty() {
            tokens.endpoint = issued.as_ref().map(|i| i.endpoint.clone()).unwrap_or_default();
        }
        for (hook, slot, fresh) in [
            (
                "complete",
                &mut tokens.complete,
                issued.as_ref().map(|i| &i.complete_token),
            ),
            (
                "shutdown",
                &mut tokens.shutdown,
                issued.as_ref().map(|i| &i.shutdown_token),
            ),
        ] {
            if !app.hook(hook) {
                *slot = None;
            } else if slot.is_none() {
                *slot = Some(fresh.cloned().ok_or_else(|| {
                    KrakeError::invalid("spec.hooks", "the node issued no token for the hook")
                })?);
            }
        }
        if (tokens.complete.is_some() || tokens.shutdown.is_some()) && tokens.endpoint.is_empty() {
            return Err(KrakeError::invalid(
                "spec.hooks",
                "the node named no endpoint for the hooks",
            ));
        }
        let security = super::apply::pod_security_of(self.platform, &namespace);
        let (deployment, ports) = deployment_of(&namespace, &name, &app, &tokens, security)?;
        let cleaning = stored.and_then(|s| s.cleaning);
        let op = match (stored, tenant.services.get(&name)) {
            (None, Some(_)) => {
                return Err(KrakeError::AlreadyExists(format!(
                    "tenant {namespace:?} has a service {name:?} made through the platform API; an Application needs a name of its own"
                )))
            }
            (None, None) => Some(ServiceOp::Create {
                tenant: namespace.clone(),
                service: name.clone(),
                uid: meta.uid.clone(),
                deployment,
                comment: "Krake Application created".to_string(),
                accept: true,
            }),
            (Some(_), None) => {
                // Its service is gone (deleted through the platform API): nothing runs it.
                return Err(KrakeError::Busy(format!(
                    "the service of {} is gone; delete the application and create it again",
                    key.described()
                )));
            }
            (Some(_), Some(service)) => {
                let current = service
                    .current
                    .and_then(|n| service.revisions.get(&n).map(|r| (n, &r.deployment)));
                match current {
                    Some((_, running)) if *running == deployment => None,
                    _ if service.deleting_ms.is_some() => {
                        return Err(KrakeError::Busy(format!(
                            "{} is being deleted; its manifest can no longer change",
                            key.described()
                        )))
                    }
                    Some((previous, _)) if service.pending.is_none() => Some(ServiceOp::Revise {
                        tenant: namespace.clone(),
                        service: name.clone(),
                        previous,
                        change: Change::Put { deployment },
                        comment: "Krake Application updated".to_string(),
                        accept: true,
                        remove_links: false,
                    }),
                    _ => {
                        return Err(KrakeError::Busy(format!(
                            "a revision of {} waits for the tenant's acceptance (POST …/service/{name}/revision/accept); change it once that is decided",
                            key.described()
                        )))
                    }
                }
            }
        };
        if let Some(op) = op {
            let admin = self.tenant_admin();
            self.service_op(now_ms, &admin, &op)?;
        }
        meta.input.owners.retain(|owner| !is_cluster(owner));
        let extras = KrakeApplicationExtras {
            meta,
            spec: app,
            tokens,
            cleaning,
            ports,
        };
        if let Some(tenant) = self.platform.tenants.get_mut(&namespace) {
            tenant.krake.applications.insert(name, extras);
        }
        Ok(())
    }

    /// Ends a deleted application: with the `shutdown` hook it first waits for the hook's call
    /// (up to its grace time; the leader asks the application to shut down); then its service
    /// is deleted (its actor removes the instances) and the application goes with it. `force`
    /// removes both at once, as Krake's `?force` does.
    pub(super) fn retire_application(
        &mut self,
        now_ms: u64,
        key: &KrakeKey,
        force: bool,
    ) -> Result<(), KrakeError> {
        let (namespace, name) = (key.tenant().to_string(), key.name.clone());
        let Some(tenant) = self.platform.tenants.get_mut(&namespace) else {
            return Err(super::apply::no_tenant(key));
        };
        let Some(extras) = tenant.krake.applications.get_mut(&name) else {
            return Err(super::apply::not_found(key));
        };
        let has_service = tenant.services.contains_key(&name);
        if !force && has_service && extras.spec.hook("shutdown") && extras.cleaning != Some(Cleaning::Ready) {
            if extras.cleaning.is_none() {
                let grace_ms = extras.spec.shutdown_grace_time.saturating_mul(1000);
                extras.cleaning = Some(Cleaning::Waiting {
                    until_ms: now_ms.saturating_add(grace_ms),
                });
            }
            return Ok(());
        }
        if has_service
            && tenant
                .services
                .get(&name)
                .is_some_and(|s| s.deleting_ms.is_none() || force)
        {
            let op = ServiceOp::Delete {
                tenant: namespace.clone(),
                service: name.clone(),
                force,
            };
            let operator = Grant {
                uid: Some(self.caller.clone()),
                operator: true,
                role: Some(Role::Owner),
            };
            self.service_op(now_ms, &operator, &op)?;
        }
        self.forget_gone_applications(&[(namespace, name)]);
        Ok(())
    }

    /// Removes the named applications whose service is gone.
    pub fn forget_gone_applications(&mut self, services: &[(String, String)]) {
        for (namespace, name) in services {
            let Some(tenant) = self.platform.tenants.get_mut(namespace) else {
                continue;
            };
            if tenant.services.contains_key(name) {
                continue;
            }
            tenant.krake.applications.remove(name);
        }
    }

    /// An application's hook call or retry.
    pub(super) fn hook_call(
        &mut self,
        now_ms: u64,
        key: &KrakeKey,
        call: &HookCall,
    ) -> Result<KrakeStored, KrakeError> {
        if key.kind != KrakeKind::Application {
            return Err(KrakeError::invalid("kind", "only applications have hooks"));
        }
        let tenant = self
            .platform
            .tenants
            .get_mut(key.tenant())
            .ok_or_else(|| super::apply::no_tenant(key))?;
        let extras = tenant
            .krake
            .applications
            .get_mut(&key.name)
            .ok_or_else(|| super::apply::not_found(key))?;
        let token_matches =
            |stored: &Option<String>, given: &str| stored.as_deref().is_some_and(|t| same_secret(t, given));
        let mut retire = false;
        match call {
            HookCall::Complete { token } => {
                if !token_matches(&extras.tokens.complete, token) {
                    return Err(KrakeError::BadToken(BAD_TOKEN.to_string()));
                }
                extras.cleaning = Some(Cleaning::Ready);
                if !extras.meta.in_deletion() {
                    extras.meta.mark_deleted(now_ms);
                }
                extras.meta.touched(now_ms);
                retire = extras.meta.input.finalizers.is_empty();
            }
            HookCall::Shutdown { token } => {
                if !token_matches(&extras.tokens.shutdown, token) {
                    return Err(KrakeError::BadToken(BAD_TOKEN.to_string()));
                }
                if matches!(extras.cleaning, Some(Cleaning::Waiting { .. })) {
                    extras.cleaning = Some(Cleaning::Ready);
                    retire = extras.meta.in_deletion() && extras.meta.input.finalizers.is_empty();
                }
            }
            HookCall::Retry => match extras.cleaning {
                Some(Cleaning::Waiting { until_ms }) if now_ms > until_ms => {
                    let grace_ms = extras.spec.shutdown_grace_time.saturating_mul(1000);
                    extras.cleaning = Some(Cleaning::Waiting {
                        until_ms: now_ms.saturating_add(grace_ms),
                    });
                }
                _ => {
                    return Err(KrakeError::NothingToDo(
                        "No migration or deletion retry needed".to_string(),
                    ))
                }
            },
        }
        let (meta, body) = self.read(key).ok_or_else(|| super::apply::not_found(key))?;
        if retire {
            self.retire_application(now_ms, key, false)?;
        }
        let gone = self.read(key).is_none();
        Ok(KrakeStored {
            key: key.clone(),
            meta,
            body,
            gone,
        })
    }
}

/// Whether two secrets are equal, in time independent of where they differ (the model cannot
/// use the raft crate's `constant_time_eq`: the crate graph runs the other way).
fn same_secret(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    let mut diff = a.len() ^ b.len();
    for i in 0..a.len().max(b.len()) {
        diff |= usize::from(a.get(i).copied().unwrap_or(0) ^ b.get(i).copied().unwrap_or(0xff));
    }
    diff == 0
}
