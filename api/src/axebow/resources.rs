//! `/tenant/{t}/{kind}[/{name}]`: Kumori resources (ca, certificate, domain, port, secret,
//! volume).

use axum::extract::{Path, State};
use axum::http::HeaderMap;
use drover_model::platform::resource::validate_resource;
use drover_model::platform::views::{PortList, ResourceInfo, ResourceItem};
use drover_model::platform::{PlatformOp, PlatformRead, ResourceKind, ResourceSpec};
use serde::Serialize;
use utoipa::ToSchema;

use super::context::AxebowState;
use super::context::Caller;
use super::reply::{done, ok, AxebowError, Body, Empty, Envelope};
use super::store;

/// A resource list: for ports, the list plus the port numbers held.
#[derive(Debug, Serialize, ToSchema)]
#[serde(untagged)]
pub enum ResourceListing {
    /// Every kind but `port`.
    Items(Vec<ResourceItem>),
    /// `port`.
    Ports(PortList),
}

fn kind_of(text: &str) -> Result<ResourceKind, AxebowError> {
    ResourceKind::parse(text).ok_or_else(|| {
        let kinds: Vec<&str> = ResourceKind::ALL.iter().map(|k| k.as_str()).collect();
        AxebowError::not_found(format!("no resource kind {text:?}; kinds: {}", kinds.join(", ")))
    })
}

fn checked(state: &AxebowState, kind: ResourceKind, spec: &ResourceSpec) -> Result<(), AxebowError> {
    validate_resource(kind, spec, &state.axebow.options.port_range).map_err(AxebowError::from)
}

/// Registers a resource (any confirmed member). Ports and domains are unique across tenants.
#[utoipa::path(post, path = "/api/1.0-beta/tenant/{tenant}/{kind}/{name}", tag = "resources", request_body = ResourceSpec,
    params(("tenant" = String, Path, description = "Tenant name"), ("kind" = ResourceKind, Path, description = "Resource kind"),
        ("name" = String, Path, description = "Resource name")),
    responses((status = 200, description = "Registered", body = Empty)))]
pub async fn register(
    State(state): State<AxebowState>,
    Caller(caller): Caller,
    headers: HeaderMap,
    Path((tenant, kind, name)): Path<(String, String, String)>,
    Body(spec): Body<ResourceSpec>,
) -> Result<Empty, AxebowError> {
    let kind = kind_of(&kind)?;
    checked(&state, kind, &spec)?;
    let op = PlatformOp::RegisterResource {
        tenant,
        kind,
        name,
        spec,
    };
    store::write(&state, caller, op, &headers).await?;
    Ok(done())
}

/// Replaces a resource's spec.
#[utoipa::path(put, path = "/api/1.0-beta/tenant/{tenant}/{kind}/{name}", tag = "resources", request_body = ResourceSpec,
    params(("tenant" = String, Path, description = "Tenant name"), ("kind" = ResourceKind, Path, description = "Resource kind"),
        ("name" = String, Path, description = "Resource name")),
    responses((status = 200, description = "Replaced", body = Empty)))]
pub async fn update(
    State(state): State<AxebowState>,
    Caller(caller): Caller,
    headers: HeaderMap,
    Path((tenant, kind, name)): Path<(String, String, String)>,
    Body(spec): Body<ResourceSpec>,
) -> Result<Empty, AxebowError> {
    let kind = kind_of(&kind)?;
    checked(&state, kind, &spec)?;
    let op = PlatformOp::UpdateResource {
        tenant,
        kind,
        name,
        spec,
    };
    store::write(&state, caller, op, &headers).await?;
    Ok(done())
}

/// One resource; secret values and private keys only for the tenant's owners and admins.
#[utoipa::path(get, path = "/api/1.0-beta/tenant/{tenant}/{kind}/{name}", tag = "resources",
    params(("tenant" = String, Path, description = "Tenant name"), ("kind" = ResourceKind, Path, description = "Resource kind"),
        ("name" = String, Path, description = "Resource name")),
    responses((status = 200, description = "The resource", body = Envelope<ResourceInfo>)))]
pub async fn get(
    State(state): State<AxebowState>,
    Caller(caller): Caller,
    Path((tenant, kind, name)): Path<(String, String, String)>,
) -> Result<Envelope<ResourceInfo>, AxebowError> {
    let kind = kind_of(&kind)?;
    store::read(&state, &caller, PlatformRead::Tenant(&tenant), |p, grant| {
        p.resource_info(&tenant, kind, &name, grant)
    })
    .await
    .map(ok)
}

/// The resources of one kind.
#[utoipa::path(get, path = "/api/1.0-beta/tenant/{tenant}/{kind}", tag = "resources",
    params(("tenant" = String, Path, description = "Tenant name"), ("kind" = ResourceKind, Path, description = "Resource kind")),
    responses((status = 200, description = "The resources", body = Envelope<ResourceListing>)))]
pub async fn list(
    State(state): State<AxebowState>,
    Caller(caller): Caller,
    Path((tenant, kind)): Path<(String, String)>,
) -> Result<Envelope<ResourceListing>, AxebowError> {
    let kind = kind_of(&kind)?;
    store::read(
        &state,
        &caller,
        PlatformRead::Tenant(&tenant),
        |p, _| match kind {
            ResourceKind::Port => p.port_list(&tenant).map(ResourceListing::Ports),
            _ => p.resource_list(&tenant, kind).map(ResourceListing::Items),
        },
    )
    .await
    .map(ok)
}

/// Removes a resource.
#[utoipa::path(delete, path = "/api/1.0-beta/tenant/{tenant}/{kind}/{name}", tag = "resources",
    params(("tenant" = String, Path, description = "Tenant name"), ("kind" = ResourceKind, Path, description = "Resource kind"),
        ("name" = String, Path, description = "Resource name")),
    responses((status = 200, description = "Removed", body = Empty)))]
pub async fn unregister(
    State(state): State<AxebowState>,
    Caller(caller): Caller,
    headers: HeaderMap,
    Path((tenant, kind, name)): Path<(String, String, String)>,
) -> Result<Empty, AxebowError> {
    let kind = kind_of(&kind)?;
    let op = PlatformOp::UnregisterResource { tenant, kind, name };
    store::write(&state, caller, op, &headers).await?;
    Ok(done())
}
