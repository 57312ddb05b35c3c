//! The platform's record of removed services, and the changes a watch of services reads.

use super::versions::{Removal, Removals, TooOld, WatchKind, WatchedService, REMOVALS_KEPT, UNSTAMPED};
use crate::platform::Platform;

impl Platform {
    /// The uids of the named services now (`None` for one that does not exist).
    pub fn service_uids(&self, services: &[(String, String)]) -> Vec<Option<String>> {
        services
            .iter()
            .map(|(tenant, service)| self.service(tenant, service).ok().map(|s| s.uid.clone()))
            .collect()
    }

    /// Records that `revision` changed the named services, whose uids before it were `before`.
    pub fn stamp_services(
        &mut self,
        revision: u64,
        services: &[(String, String)],
        before: &[Option<String>],
    ) {
        for ((tenant, name), before) in services.iter().zip(before) {
            let stored = self
                .tenants
                .get_mut(tenant)
                .and_then(|t| t.services.get_mut(name));
            match (stored, before) {
                (Some(service), _) => {
                    if before.as_deref() != Some(service.uid.as_str()) {
                        service.created_version = revision;
                    }
                    service.version = revision;
                    if let Some(event) = service
                        .events
                        .back_mut()
                        .filter(|e| e.resource_version == UNSTAMPED)
                    {
                        event.resource_version = revision;
                    }
                }
                (None, Some(uid)) => {
                    let removals = &mut self.service_removals;
                    removals.kept.push_back(Removal {
                        revision,
                        tenant: tenant.clone(),
                        service: name.clone(),
                        uid: uid.clone(),
                    });
                    while removals.kept.len() > REMOVALS_KEPT {
                        if let Some(old) = removals.kept.pop_front() {
                            removals.forgotten_up_to = old.revision;
                        }
                    }
                }
                (None, None) => {}
            }
        }
    }

    /// Runs `change`, which says whether it changed anything, and then stamps the `touched`
    /// services with `revision` (or records their removal).
    pub fn changing_services<R>(
        &mut self,
        revision: u64,
        touched: &[(String, String)],
        change: impl FnOnce(&mut Self) -> Result<(R, bool), crate::platform::error::PlatformError>,
    ) -> Result<R, crate::platform::error::PlatformError> {
        let before = self.service_uids(touched);
        let (result, changed) = change(self)?;
        if changed {
            self.stamp_services(revision, touched, &before);
        }
        Ok(result)
    }

    /// What watches need to resume.
    pub fn service_removals(&self) -> &Removals {
        &self.service_removals
    }
}

impl Platform {
    /// The changes of `tenant`'s services after state revision `after` (every service as
    /// `ADDED` when `after` is `None`), oldest first, each service once with what it is now.
    pub fn service_changes(
        &self,
        tenant: &str,
        after: Option<u64>,
    ) -> Result<Vec<(WatchKind, WatchedService)>, TooOld> {
        let removals = &self.service_removals;
        if let Some(after) = after {
            if after < removals.forgotten_up_to {
                return Err(TooOld {
                    oldest: removals.forgotten_up_to,
                });
            }
        }
        let mut changes: Vec<(WatchKind, WatchedService)> = Vec::new();
        if let Some(stored) = self.tenants.get(tenant) {
            for (name, service) in &stored.services {
                let kind = match after {
                    None => WatchKind::Added,
                    Some(after) if service.version <= after => continue,
                    Some(after) if service.created_version > after => WatchKind::Added,
                    Some(_) => WatchKind::Modified,
                };
                changes.push((
                    kind,
                    WatchedService {
                        name: name.clone(),
                        id: service.uid.clone(),
                        resource_version: service.version,
                        deleted: service.deleting_ms.is_some(),
                        current: service.current,
                        pending: service.pending,
                        cluster: service.placement.clone(),
                        reconcile: Some(service.reconcile.clone()),
                    },
                ));
            }
        }
        if let Some(after) = after {
            for removal in removals
                .kept
                .iter()
                .filter(|r| r.tenant == tenant && r.revision > after)
            {
                changes.push((
                    WatchKind::Deleted,
                    WatchedService {
                        name: removal.service.clone(),
                        id: removal.uid.clone(),
                        resource_version: removal.revision,
                        deleted: true,
                        current: None,
                        pending: None,
                        cluster: None,
                        reconcile: None,
                    },
                ));
            }
        }
        changes.sort_by_key(|(_, s)| s.resource_version);
        Ok(changes)
    }
}
