//! Channels and links (Axebow's `…/client/{cc}/tenant/{st}/service/{ss}/server/{sc}` routes): a
//! deployment declares the client and server channels of its service; a link joins a client
//! channel of one service to a server channel of another in the same environment. An update
//! whose deployment drops a linked channel is refused unless it asks for the links to go
//! (`remove_links`); deleting a service removes its links.
//!
//! Drover records, checks and lists links; it does not wire networks between instances (it has
//! no service mesh): `status.linked` says that both ends exist with their channels in their
//! accepted revisions.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

pub use super::channels::Channels;
use super::deployment::Deployment;
use crate::platform::error::PlatformError;

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

pub(super) fn conflict(message: String) -> PlatformError {
    PlatformError::Conflict(message)
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
