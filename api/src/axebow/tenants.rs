//! `/tenant`: tenants (create, patch, info, list, delete) and their members (invite, confirm,
//! reject, change role, remove).

use std::collections::BTreeMap;

use axum::extract::{Path, State};
use axum::http::HeaderMap;
use drover_model::platform::views::TenantInfo;
use drover_model::platform::{PlatformError, PlatformOp, PlatformRead, Role, TenantSpec};
use drover_model::pod_security::PodSecurity;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::context::AxebowState;
use super::context::Caller;
use super::reply::{done, ok, AxebowError, Body, Empty, Envelope, Params};
use super::store;

/// `GET /tenant` parameters.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ListParams {
    /// `true` (default): the caller's tenants; `false`: every tenant (operators only).
    pub strict: Option<bool>,
}

/// The role of a membership call.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct RoleParams {
    /// `owner`, `admin` or `plain`.
    pub role: Option<Role>,
}

fn required(role: Option<Role>) -> Result<Role, AxebowError> {
    role.ok_or_else(|| AxebowError::invalid("role", "the role parameter is required: owner, admin or plain"))
}

/// Creates a tenant; the caller becomes its owner.
#[utoipa::path(post, path = "/api/1.0-beta/tenant/{tenant}", tag = "tenants", request_body = TenantSpec,
    params(("tenant" = String, Path, description = "Tenant name")),
    responses((status = 200, description = "Created", body = Empty)))]
pub async fn create(
    State(state): State<AxebowState>,
    Caller(caller): Caller,
    headers: HeaderMap,
    Path(tenant): Path<String>,
    Body(spec): Body<TenantSpec>,
) -> Result<Empty, AxebowError> {
    // A tenant's name is also the lease namespace its members may use: a namespace that static
    // tokens are scoped to is not free for a user to take (operators may still create it). The
    // state machine refuses a namespace that already holds lease objects the same way.
    if state.verifier.namespace_is_scoped(&tenant) {
        let operator = state.raft.local_read(|s| {
            let platform = s.platform();
            platform
                .user_of(&caller)
                .is_some_and(|user| platform.is_operator(&user.uid))
        });
        if !operator {
            return Err(PlatformError::Conflict(format!(
                "{tenant:?} is a lease namespace that static API tokens are scoped to; only an operator may make it a tenant"
            ))
            .into());
        }
    }
    registry_reachable(&state, &spec).await?;
    store::write(
        &state,
        caller,
        PlatformOp::CreateTenant { tenant, spec },
        &headers,
    )
    .await?;
    Ok(done())
}

/// Refuses a registry the control plane may not call on the tenant's behalf (the operator's
/// egress policy): it publishes and reads modules there.
async fn registry_reachable(state: &AxebowState, spec: &TenantSpec) -> Result<(), AxebowError> {
    let Some(registry) = &spec.registry else {
        return Ok(());
    };
    match crate::agents::egress_refused(&state.axebow.options.egress, &registry.endpoint).await {
        Some(why) => Err(AxebowError::invalid(
            "registry.endpoint",
            format!("{why}: the control plane does not call it on a tenant's behalf (the operator allows networks and hosts with --tenant-egress-allow)"),
        )),
        None => Ok(()),
    }
}

/// Replaces the rules and/or the registry of a tenant (admins).
#[utoipa::path(patch, path = "/api/1.0-beta/tenant/{tenant}", tag = "tenants", request_body = TenantSpec,
    params(("tenant" = String, Path, description = "Tenant name")),
    responses((status = 200, description = "Changed", body = Empty)))]
pub async fn patch(
    State(state): State<AxebowState>,
    Caller(caller): Caller,
    headers: HeaderMap,
    Path(tenant): Path<String>,
    Body(spec): Body<TenantSpec>,
) -> Result<Empty, AxebowError> {
    registry_reachable(&state, &spec).await?;
    store::write(&state, caller, PlatformOp::PatchTenant { tenant, spec }, &headers).await?;
    Ok(done())
}

/// The body of `PUT /tenant/{tenant}/podsecurity`.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PodSecuritySetting {
    /// `baseline` (the default), `baselineWithHostNetwork` (baseline, but `hostNetwork` and host
    /// ports allowed) or `privileged` (no check).
    pub pod_security: PodSecurity,
}

/// Sets the pod security level the tenant's pods are held to (operators only: a tenant's own
/// members cannot relax it).
#[utoipa::path(put, path = "/api/1.0-beta/tenant/{tenant}/podsecurity", tag = "tenants", request_body = PodSecuritySetting,
    params(("tenant" = String, Path, description = "Tenant name")),
    responses((status = 200, description = "Set", body = Empty)))]
pub async fn set_pod_security(
    State(state): State<AxebowState>,
    Caller(caller): Caller,
    headers: HeaderMap,
    Path(tenant): Path<String>,
    Body(setting): Body<PodSecuritySetting>,
) -> Result<Empty, AxebowError> {
    let op = PlatformOp::SetPodSecurity {
        tenant,
        level: setting.pod_security,
    };
    store::write(&state, caller, op, &headers).await?;
    Ok(done())
}

/// Deletes a tenant with its accounts, environments and resources (its sole owner, or an
/// operator).
#[utoipa::path(delete, path = "/api/1.0-beta/tenant/{tenant}", tag = "tenants",
    params(("tenant" = String, Path, description = "Tenant name")),
    responses((status = 200, description = "Deleted", body = Empty)))]
pub async fn delete(
    State(state): State<AxebowState>,
    Caller(caller): Caller,
    headers: HeaderMap,
    Path(tenant): Path<String>,
) -> Result<Empty, AxebowError> {
    store::write(&state, caller, PlatformOp::DeleteTenant { tenant }, &headers).await?;
    Ok(done())
}

/// A tenant's accounts, environments, members, resources and rules (confirmed members and
/// operators).
#[utoipa::path(get, path = "/api/1.0-beta/tenant/{tenant}", tag = "tenants",
    params(("tenant" = String, Path, description = "Tenant name")),
    responses((status = 200, description = "The tenant", body = Envelope<TenantInfo>)))]
pub async fn info(
    State(state): State<AxebowState>,
    Caller(caller): Caller,
    Path(tenant): Path<String>,
) -> Result<Envelope<TenantInfo>, AxebowError> {
    store::read(&state, &caller, PlatformRead::Tenant(&tenant), |p, grant| {
        p.tenant_info(&tenant, grant)
    })
    .await
    .map(ok)
}

/// The caller's role in each tenant (`strict=false`: every tenant, operators only).
#[utoipa::path(get, path = "/api/1.0-beta/tenant", tag = "tenants", params(ListParams),
    responses((status = 200, description = "Role by tenant", body = Envelope<BTreeMap<String, String>>)))]
pub async fn list(
    State(state): State<AxebowState>,
    Caller(caller): Caller,
    Params(params): Params<ListParams>,
) -> Result<Envelope<BTreeMap<String, String>>, AxebowError> {
    let strict = params.strict.unwrap_or(true);
    let read = if strict {
        PlatformRead::ListOwnTenants
    } else {
        PlatformRead::ListAllTenants
    };
    store::read(&state, &caller, read, |p, grant| Ok(p.tenant_list(grant, strict)))
        .await
        .map(ok)
}

/// Invites a user (admins; only owners invite owners). The membership stays pending until the
/// user confirms it.
#[utoipa::path(post, path = "/api/1.0-beta/tenant/{tenant}/user/{user}", tag = "members",
    params(("tenant" = String, Path, description = "Tenant name"), ("user" = String, Path, description = "User id"), RoleParams),
    responses((status = 200, description = "Invited", body = Empty)))]
pub async fn invite(
    State(state): State<AxebowState>,
    Caller(caller): Caller,
    headers: HeaderMap,
    Path((tenant, user)): Path<(String, String)>,
    Params(params): Params<RoleParams>,
) -> Result<Empty, AxebowError> {
    let role = params.role.unwrap_or(Role::Plain);
    store::write(
        &state,
        caller,
        PlatformOp::Invite { tenant, user, role },
        &headers,
    )
    .await?;
    Ok(done())
}

/// Accepts the caller's invitation; `role` must be the invited one.
#[utoipa::path(put, path = "/api/1.0-beta/tenant/{tenant}/user", tag = "members",
    params(("tenant" = String, Path, description = "Tenant name"), RoleParams),
    responses((status = 200, description = "Confirmed", body = Empty)))]
pub async fn confirm(
    State(state): State<AxebowState>,
    Caller(caller): Caller,
    headers: HeaderMap,
    Path(tenant): Path<String>,
    Params(params): Params<RoleParams>,
) -> Result<Empty, AxebowError> {
    let role = required(params.role)?;
    store::write(&state, caller, PlatformOp::Confirm { tenant, role }, &headers).await?;
    Ok(done())
}

/// Declines the caller's invitation; `role` must be the invited one.
#[utoipa::path(delete, path = "/api/1.0-beta/tenant/{tenant}/user", tag = "members",
    params(("tenant" = String, Path, description = "Tenant name"), RoleParams),
    responses((status = 200, description = "Declined", body = Empty)))]
pub async fn reject(
    State(state): State<AxebowState>,
    Caller(caller): Caller,
    headers: HeaderMap,
    Path(tenant): Path<String>,
    Params(params): Params<RoleParams>,
) -> Result<Empty, AxebowError> {
    let role = required(params.role)?;
    store::write(&state, caller, PlatformOp::Reject { tenant, role }, &headers).await?;
    Ok(done())
}

/// Changes a confirmed member's role (admins; never above the caller's own role; the last
/// owner stays owner).
#[utoipa::path(put, path = "/api/1.0-beta/tenant/{tenant}/user/{user}", tag = "members",
    params(("tenant" = String, Path, description = "Tenant name"), ("user" = String, Path, description = "User id"), RoleParams),
    responses((status = 200, description = "Changed", body = Empty)))]
pub async fn set_role(
    State(state): State<AxebowState>,
    Caller(caller): Caller,
    headers: HeaderMap,
    Path((tenant, user)): Path<(String, String)>,
    Params(params): Params<RoleParams>,
) -> Result<Empty, AxebowError> {
    let role = required(params.role)?;
    store::write(
        &state,
        caller,
        PlatformOp::SetRole { tenant, user, role },
        &headers,
    )
    .await?;
    Ok(done())
}

/// Removes a member or withdraws an invitation (admins; anyone may remove themselves; the
/// last owner stays).
#[utoipa::path(delete, path = "/api/1.0-beta/tenant/{tenant}/user/{user}", tag = "members",
    params(("tenant" = String, Path, description = "Tenant name"), ("user" = String, Path, description = "User id")),
    responses((status = 200, description = "Removed", body = Empty)))]
pub async fn remove_member(
    State(state): State<AxebowState>,
    Caller(caller): Caller,
    headers: HeaderMap,
    Path((tenant, user)): Path<(String, String)>,
) -> Result<Empty, AxebowError> {
    store::write(
        &state,
        caller,
        PlatformOp::RemoveMember { tenant, user },
        &headers,
    )
    .await?;
    Ok(done())
}
