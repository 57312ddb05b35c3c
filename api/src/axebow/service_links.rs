//! Links between services' channels and the channels themselves (Axebow's L1–L3 and S4):
//! `POST`/`DELETE /tenant/{ct}/service/{cs}/client/{cc}/tenant/{st}/service/{ss}/server/{sc}`,
//! `GET …/service/{s}/links` and `GET …/service/{s}/channels`.

use axum::extract::{Path, State};
use axum::http::HeaderMap;
use drover_model::platform::PlatformRead;
use drover_model::service::links::{Channels, Link, LinkEnd, LinkView};
use drover_model::service::ServiceOp;

use super::context::AxebowState;
use super::context::Caller;
use super::reply::{done, ok, AxebowError, Empty, Envelope};
use super::store;

/// The path of a link: client tenant, service, channel; server tenant, service, channel.
type LinkPath = (String, String, String, String, String, String);

fn link_of((ct, cs, cc, st, ss, sc): LinkPath) -> Link {
    Link {
        client: LinkEnd {
            tenant: ct,
            service: cs,
            channel: cc,
        },
        server: LinkEnd {
            tenant: st,
            service: ss,
            channel: sc,
        },
    }
}

async fn write_link(
    state: &AxebowState,
    caller: Caller,
    headers: &HeaderMap,
    path: LinkPath,
    remove: bool,
) -> Result<Empty, AxebowError> {
    let change = ServiceOp::Link {
        link: link_of(path),
        remove,
    };
    store::write_service(state, caller.0, change, headers).await?;
    Ok(done())
}

/// Links a client channel of one service to a server channel of another in the same
/// environment.
#[utoipa::path(post, path = "/api/1.0-beta/tenant/{tenant}/service/{service}/client/{channel}/tenant/{server_tenant}/service/{server_service}/server/{server_channel}", tag = "services",
    params(("tenant" = String, Path, description = "Client tenant"), ("service" = String, Path, description = "Client service"),
        ("channel" = String, Path, description = "Client channel"), ("server_tenant" = String, Path, description = "Server tenant"),
        ("server_service" = String, Path, description = "Server service"), ("server_channel" = String, Path, description = "Server channel")),
    responses((status = 200, description = "Linked", body = Empty),
        (status = 404, description = "A service or channel does not exist", body = super::reply::ErrorBody),
        (status = 409, description = "Not in one environment, or linked already", body = super::reply::ErrorBody)))]
pub async fn link(
    State(state): State<AxebowState>,
    caller: Caller,
    headers: HeaderMap,
    Path(path): Path<LinkPath>,
) -> Result<Empty, AxebowError> {
    write_link(&state, caller, &headers, path, false).await
}

/// Removes a link.
#[utoipa::path(delete, path = "/api/1.0-beta/tenant/{tenant}/service/{service}/client/{channel}/tenant/{server_tenant}/service/{server_service}/server/{server_channel}", tag = "services",
    params(("tenant" = String, Path, description = "Client tenant"), ("service" = String, Path, description = "Client service"),
        ("channel" = String, Path, description = "Client channel"), ("server_tenant" = String, Path, description = "Server tenant"),
        ("server_service" = String, Path, description = "Server service"), ("server_channel" = String, Path, description = "Server channel")),
    responses((status = 200, description = "Unlinked", body = Empty),
        (status = 404, description = "No such link", body = super::reply::ErrorBody)))]
pub async fn unlink(
    State(state): State<AxebowState>,
    caller: Caller,
    headers: HeaderMap,
    Path(path): Path<LinkPath>,
) -> Result<Empty, AxebowError> {
    write_link(&state, caller, &headers, path, true).await
}

/// The links of a service, either end.
#[utoipa::path(get, path = "/api/1.0-beta/tenant/{tenant}/service/{service}/links", tag = "services",
    params(("tenant" = String, Path, description = "Tenant name"), ("service" = String, Path, description = "Service name")),
    responses((status = 200, description = "Its links", body = Envelope<Vec<LinkView>>)))]
pub async fn links(
    State(state): State<AxebowState>,
    Caller(caller): Caller,
    Path((tenant, service)): Path<(String, String)>,
) -> Result<Envelope<Vec<LinkView>>, AxebowError> {
    store::read(&state, &caller, PlatformRead::Tenant(&tenant), |p, _| {
        p.links_of(&tenant, &service)
    })
    .await
    .map(ok)
}

/// The channels of the revision shown (current, or the pending first one).
#[utoipa::path(get, path = "/api/1.0-beta/tenant/{tenant}/service/{service}/channels", tag = "services",
    params(("tenant" = String, Path, description = "Tenant name"), ("service" = String, Path, description = "Service name")),
    responses((status = 200, description = "Client and server channels with their metadata", body = Envelope<Channels>)))]
pub async fn channels(
    State(state): State<AxebowState>,
    Caller(caller): Caller,
    Path((tenant, service)): Path<(String, String)>,
) -> Result<Envelope<Channels>, AxebowError> {
    store::read(&state, &caller, PlatformRead::Tenant(&tenant), |p, _| {
        Ok(p.service(&tenant, &service)?
            .shown()
            .map(|r| r.deployment.channels.clone())
            .unwrap_or_default())
    })
    .await
    .map(ok)
}
