//! Channels and links (Axebow's `…/client/{cc}/tenant/{st}/service/{ss}/server/{sc}` routes): a
//! deployment declares the client and server channels of its service; a link joins a client
//! channel of one service to a server channel of another in the same environment. An update
//! whose deployment drops a linked channel is refused unless it asks for the links to go
//! (`remove_links`); deleting a service removes its links.
//!
//! Drover records, checks and lists links; it does not wire networks between instances (it has
//! no service mesh): `status.linked` says that both ends exist with their channels in their
//! accepted revisions.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

use super::Deployment;
use crate::platform::{Platform, PlatformError};
use crate::validation::is_label;

/// Most channels on each side of a deployment.
const MAX_CHANNELS: usize = 64;

/// Most bytes of the channels' metadata.
const MAX_CHANNEL_BYTES: usize = 16 * 1024;

/// The channels a service offers (`server`) and uses (`client`), each with free-form metadata.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Channels {
    /// Channels it calls out through.
    #[serde(default)]
    #[schema(value_type = Object)]
    pub client: BTreeMap<String, Value>,
    /// Channels it serves.
    #[serde(default)]
    #[schema(value_type = Object)]
    pub server: BTreeMap<String, Value>,
}

impl Channels {
    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.client.is_empty() && self.server.is_empty()
    }

    /// Checks names and sizes; the error names the field.
    pub fn validate(&self) -> Result<(), PlatformError> {
        for (side, channels) in [("client", &self.client), ("server", &self.server)] {
            if channels.len() > MAX_CHANNELS {
                return Err(PlatformError::invalid(
                    format!("channels.{side}"),
                    format!("at most {MAX_CHANNELS} channels"),
                ));
            }
            if let Some(bad) = channels.keys().find(|name| !is_label(name) || name.len() > 40) {
                return Err(PlatformError::invalid(
                    format!("channels.{side}.{bad}"),
                    "channel names are 1-40 lower-case letters, digits or '-', starting and ending with a letter or digit",
                ));
            }
        }
        let bytes = serde_json::to_vec(self).map_or(usize::MAX, |b| b.len());
        if bytes > MAX_CHANNEL_BYTES {
            return Err(PlatformError::invalid(
                "channels",
                format!("{bytes} bytes; at most {MAX_CHANNEL_BYTES}"),
            ));
        }
        Ok(())
    }
}

/// One end of a link.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, ToSchema)]
pub struct LinkEnd {
    /// Tenant name.
    pub tenant: String,
    /// Service name.
    pub service: String,
    /// Channel name.
    pub channel: String,
}

/// A link from a client channel to a server channel.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, ToSchema)]
pub struct Link {
    /// The calling side.
    pub client: LinkEnd,
    /// The serving side.
    pub server: LinkEnd,
}

impl Link {
    /// Its id: both ends, `client-tenant/service/channel>server-tenant/service/channel`.
    pub fn id(&self) -> String {
        let (c, s) = (&self.client, &self.server);
        format!(
            "{}/{}/{}>{}/{}/{}",
            c.tenant, c.service, c.channel, s.tenant, s.service, s.channel
        )
    }

    /// Whether `service` of `tenant` is one of its ends.
    pub fn involves(&self, tenant: &str, service: &str) -> bool {
        [&self.client, &self.server]
            .iter()
            .any(|end| end.tenant == tenant && end.service == service)
    }

    /// Whether a deployment of `service` of `tenant` without some channel breaks it.
    pub fn broken_by(&self, tenant: &str, service: &str, deployment: &Deployment) -> bool {
        let client = &self.client;
        let server = &self.server;
        (client.tenant == tenant
            && client.service == service
            && !deployment.channels.client.contains_key(&client.channel))
            || (server.tenant == tenant
                && server.service == service
                && !deployment.channels.server.contains_key(&server.channel))
    }
}

/// A link as `GET …/links` lists it (Axebow's shape).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct LinkView {
    /// Its id.
    pub id: String,
    /// Both ends.
    pub spec: LinkSpec,
    /// Metadata (none is kept).
    #[schema(value_type = Object)]
    pub meta: Value,
    /// Whether both ends are deployed with their channels.
    pub status: LinkStatus,
}

/// Both ends of a link, flat.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct LinkSpec {
    /// Client tenant.
    pub client_tenant: String,
    /// Client service.
    pub client_service: String,
    /// Client channel.
    pub client_channel: String,
    /// Server tenant.
    pub server_tenant: String,
    /// Server service.
    pub server_service: String,
    /// Server channel.
    pub server_channel: String,
}

/// A link's status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct LinkStatus {
    /// Both ends are deployed (accepted revisions) with their channels.
    pub linked: bool,
}

fn conflict(message: String) -> PlatformError {
    PlatformError::Conflict(message)
}

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

/// One end of a link in the full service view (Axebow's `links[].source` / `target`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct LinkPoint {
    /// Tenant name.
    pub tenant: String,
    /// Service name.
    pub deployment: String,
    /// Channel name.
    pub channel: String,
}

/// A link in the full service view: from the client (`source`) to the server (`target`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct LinkPair {
    /// The client end.
    pub source: LinkPoint,
    /// The server end.
    pub target: LinkPoint,
}

impl From<&LinkView> for LinkPair {
    fn from(view: &LinkView) -> Self {
        let s = &view.spec;
        Self {
            source: LinkPoint {
                tenant: s.client_tenant.clone(),
                deployment: s.client_service.clone(),
                channel: s.client_channel.clone(),
            },
            target: LinkPoint {
                tenant: s.server_tenant.clone(),
                deployment: s.server_service.clone(),
                channel: s.server_channel.clone(),
            },
        }
    }
}
