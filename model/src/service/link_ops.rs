//! What the platform does with links: link and unlink two services, list a service's links
//! and the channels they give it.

use super::links::{conflict, Link, LinkEnd, LinkSpec, LinkStatus, LinkView};
use super::Deployment;
use crate::platform::error::PlatformError;
use crate::platform::Platform;
use serde_json::Value;

impl Platform {
    /// Creates (`remove == false`) or removes a link; the client's tenant is `tenant`.
    pub(crate) fn apply_link(&mut self, link: &Link, remove: bool) -> Result<(), PlatformError> {
        let tenant = &link.client.tenant;
        if remove {
            let removed = self
                .tenants
                .get_mut(tenant)
                .and_then(|t| t.links.remove(&link.id()));
            return match removed {
                Some(_) => Ok(()),
                None => Err(PlatformError::NotFound(format!("no link {}", link.id()))),
            };
        }
        // The caller was authorized on the client's tenant only: another tenant's services are
        // not looked at (whether one exists there is not this caller's to learn).
        if link.server.tenant != *tenant {
            return Err(conflict(format!(
                "service {:?} and a service of another tenant are not in the same environment; only services of one environment can be linked",
                link.client.service
            )));
        }
        let client = self.service(tenant, &link.client.service)?;
        let server = self.service(tenant, &link.server.service)?;
        for (end, stored) in [(&link.client, client), (&link.server, server)] {
            if stored.deleting_ms.is_some() {
                return Err(conflict(format!("service {:?} is being deleted", end.service)));
            }
        }
        if client.environment != server.environment {
            return Err(conflict(format!(
                "services {:?} and {:?} are not in the same environment; only services of one environment can be linked",
                link.client.service, link.server.service
            )));
        }
        let has = |stored: &super::Service, client_side: bool, channel: &str| {
            stored.shown().is_some_and(|r| {
                let channels = &r.deployment.channels;
                if client_side {
                    channels.client.contains_key(channel)
                } else {
                    channels.server.contains_key(channel)
                }
            })
        };
        if !has(client, true, &link.client.channel) {
            return Err(PlatformError::NotFound(format!(
                "service {:?} has no client channel {:?}",
                link.client.service, link.client.channel
            )));
        }
        if !has(server, false, &link.server.channel) {
            return Err(PlatformError::NotFound(format!(
                "service {:?} has no server channel {:?}",
                link.server.service, link.server.channel
            )));
        }
        let links = &mut self.tenant_mut_for_links(tenant)?.links;
        if links.contains_key(&link.id()) {
            return Err(conflict(format!("link {} exists", link.id())));
        }
        links.insert(link.id(), link.clone());
        Ok(())
    }

    fn tenant_mut_for_links(
        &mut self,
        tenant: &str,
    ) -> Result<&mut crate::platform::entities::Tenant, PlatformError> {
        self.tenants
            .get_mut(tenant)
            .ok_or_else(|| PlatformError::NotFound(format!("tenant {tenant:?} not found")))
    }

    /// The links a deployment of `service` would break.
    pub(crate) fn links_broken_by(
        &self,
        tenant: &str,
        service: &str,
        deployment: &Deployment,
    ) -> Vec<String> {
        self.tenants
            .get(tenant)
            .map(|t| {
                t.links
                    .values()
                    .filter(|l| l.broken_by(tenant, service, deployment))
                    .map(Link::id)
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Removes links by id.
    pub(crate) fn remove_links(&mut self, tenant: &str, ids: &[String]) {
        if let Some(t) = self.tenants.get_mut(tenant) {
            for id in ids {
                t.links.remove(id);
            }
        }
    }

    /// Removes every link of a service (it is being removed).
    pub(crate) fn forget_links_of(&mut self, tenant: &str, service: &str) {
        if let Some(t) = self.tenants.get_mut(tenant) {
            t.links.retain(|_, l| !l.involves(tenant, service));
        }
    }

    /// The links of a service, either end, as `GET …/links` shows them.
    pub fn links_of(&self, tenant: &str, service: &str) -> Result<Vec<LinkView>, PlatformError> {
        self.service(tenant, service)?;
        let deployed = |end: &LinkEnd, client_side: bool| {
            self.service(&end.tenant, &end.service)
                .ok()
                .and_then(|s| s.current.and_then(|n| s.revisions.get(&n)))
                .is_some_and(|r| {
                    let channels = &r.deployment.channels;
                    if client_side {
                        channels.client.contains_key(&end.channel)
                    } else {
                        channels.server.contains_key(&end.channel)
                    }
                })
        };
        Ok(self
            .tenants
            .get(tenant)
            .map(|t| {
                t.links
                    .values()
                    .filter(|l| l.involves(tenant, service))
                    .map(|l| LinkView {
                        id: l.id(),
                        spec: LinkSpec {
                            client_tenant: l.client.tenant.clone(),
                            client_service: l.client.service.clone(),
                            client_channel: l.client.channel.clone(),
                            server_tenant: l.server.tenant.clone(),
                            server_service: l.server.service.clone(),
                            server_channel: l.server.channel.clone(),
                        },
                        meta: Value::Object(serde_json::Map::new()),
                        status: LinkStatus {
                            linked: deployed(&l.client, true) && deployed(&l.server, false),
                        },
                    })
                    .collect()
            })
            .unwrap_or_default())
    }
}
