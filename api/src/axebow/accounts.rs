//! `/tenant/{t}/account` and the environments inside accounts.

use axum::extract::{Path, State};
use axum::http::HeaderMap;
use drover_model::platform::views::EnvironmentInfo;
use drover_model::platform::{EnvironmentPatch, EnvironmentSpec, PlatformOp, PlatformRead, TenantAccount};
use serde::Deserialize;
use utoipa::IntoParams;

use super::context::AxebowState;
use super::context::Caller;
use super::reply::{done, ok, AxebowError, Body, Empty, Envelope, Params};
use super::store;

/// `DELETE …/account/{a}` parameters.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct DeleteParams {
    /// `true` (default): remove the account, refused while it has environments; `false`: only
    /// release IaaS resources no environment uses and keep the account.
    pub delete: Option<bool>,
}

fn check_iaas(state: &AxebowState, body: &TenantAccount) -> Result<(), AxebowError> {
    let providers = &state.axebow.options.iaas_providers;
    if providers.contains(&body.spec.iaas) {
        Ok(())
    } else {
        Err(AxebowError::invalid(
            "spec.iaas",
            format!(
                "unknown IaaS provider {:?}; this platform offers {}",
                body.spec.iaas,
                providers.join(", ")
            ),
        ))
    }
}

/// Registers an account (admins).
#[utoipa::path(post, path = "/api/1.0-beta/tenant/{tenant}/account/{account}", tag = "accounts", request_body = TenantAccount,
    params(("tenant" = String, Path, description = "Tenant name"), ("account" = String, Path, description = "Account name")),
    responses((status = 200, description = "Created", body = Empty)))]
pub async fn create(
    State(state): State<AxebowState>,
    Caller(caller): Caller,
    headers: HeaderMap,
    Path((tenant, account)): Path<(String, String)>,
    Body(body): Body<TenantAccount>,
) -> Result<Empty, AxebowError> {
    check_iaas(&state, &body)?;
    store::write(
        &state,
        caller,
        PlatformOp::CreateAccount {
            tenant,
            account,
            body,
        },
        &headers,
    )
    .await?;
    Ok(done())
}

/// Replaces an account's spec and labels (admins).
#[utoipa::path(patch, path = "/api/1.0-beta/tenant/{tenant}/account/{account}", tag = "accounts", request_body = TenantAccount,
    params(("tenant" = String, Path, description = "Tenant name"), ("account" = String, Path, description = "Account name")),
    responses((status = 200, description = "Changed", body = Empty)))]
pub async fn patch(
    State(state): State<AxebowState>,
    Caller(caller): Caller,
    headers: HeaderMap,
    Path((tenant, account)): Path<(String, String)>,
    Body(body): Body<TenantAccount>,
) -> Result<Empty, AxebowError> {
    check_iaas(&state, &body)?;
    store::write(
        &state,
        caller,
        PlatformOp::PatchAccount {
            tenant,
            account,
            body,
        },
        &headers,
    )
    .await?;
    Ok(done())
}

/// One account (IaaS credentials only for owners and admins).
#[utoipa::path(get, path = "/api/1.0-beta/tenant/{tenant}/account/{account}", tag = "accounts",
    params(("tenant" = String, Path, description = "Tenant name"), ("account" = String, Path, description = "Account name")),
    responses((status = 200, description = "The account", body = Envelope<TenantAccount>)))]
pub async fn get(
    State(state): State<AxebowState>,
    Caller(caller): Caller,
    Path((tenant, account)): Path<(String, String)>,
) -> Result<Envelope<TenantAccount>, AxebowError> {
    store::read(&state, &caller, PlatformRead::Tenant(&tenant), |p, grant| {
        p.account_info(&tenant, &account, grant)
    })
    .await
    .map(ok)
}

/// Account names.
#[utoipa::path(get, path = "/api/1.0-beta/tenant/{tenant}/account", tag = "accounts",
    params(("tenant" = String, Path, description = "Tenant name")),
    responses((status = 200, description = "Names", body = Envelope<Vec<String>>)))]
pub async fn list(
    State(state): State<AxebowState>,
    Caller(caller): Caller,
    Path(tenant): Path<String>,
) -> Result<Envelope<Vec<String>>, AxebowError> {
    store::read(&state, &caller, PlatformRead::Tenant(&tenant), |p, _| {
        p.account_names(&tenant)
    })
    .await
    .map(ok)
}

/// Removes an account (admins).
#[utoipa::path(delete, path = "/api/1.0-beta/tenant/{tenant}/account/{account}", tag = "accounts",
    params(("tenant" = String, Path, description = "Tenant name"), ("account" = String, Path, description = "Account name"), DeleteParams),
    responses((status = 200, description = "Removed", body = Empty)))]
pub async fn delete(
    State(state): State<AxebowState>,
    Caller(caller): Caller,
    headers: HeaderMap,
    Path((tenant, account)): Path<(String, String)>,
    Params(params): Params<DeleteParams>,
) -> Result<Empty, AxebowError> {
    let delete = params.delete.unwrap_or(true);
    store::write(
        &state,
        caller,
        PlatformOp::DeleteAccount {
            tenant,
            account,
            delete,
        },
        &headers,
    )
    .await?;
    Ok(done())
}

/// Creates an environment in an account (admins).
#[utoipa::path(post, path = "/api/1.0-beta/tenant/{tenant}/account/{account}/environment/{environment}", tag = "environments",
    request_body = EnvironmentSpec,
    params(("tenant" = String, Path, description = "Tenant name"), ("account" = String, Path, description = "Account name"),
        ("environment" = String, Path, description = "Environment name")),
    responses((status = 200, description = "Created", body = Empty)))]
pub async fn create_environment(
    State(state): State<AxebowState>,
    Caller(caller): Caller,
    headers: HeaderMap,
    Path((tenant, account, environment)): Path<(String, String, String)>,
    Body(spec): Body<EnvironmentSpec>,
) -> Result<Empty, AxebowError> {
    let op = PlatformOp::CreateEnvironment {
        tenant,
        account,
        environment,
        spec,
    };
    store::write(&state, caller, op, &headers).await?;
    Ok(done())
}

/// Changes an environment's marks or labels (admins); affects only future placements.
#[utoipa::path(patch, path = "/api/1.0-beta/tenant/{tenant}/account/{account}/environment/{environment}", tag = "environments",
    request_body = EnvironmentPatch,
    params(("tenant" = String, Path, description = "Tenant name"), ("account" = String, Path, description = "Account name"),
        ("environment" = String, Path, description = "Environment name")),
    responses((status = 200, description = "Changed", body = Empty)))]
pub async fn patch_environment(
    State(state): State<AxebowState>,
    Caller(caller): Caller,
    headers: HeaderMap,
    Path((tenant, account, environment)): Path<(String, String, String)>,
    Body(patch): Body<EnvironmentPatch>,
) -> Result<Empty, AxebowError> {
    let op = PlatformOp::PatchEnvironment {
        tenant,
        account,
        environment,
        patch,
    };
    store::write(&state, caller, op, &headers).await?;
    Ok(done())
}

/// One environment with the usage of each mark.
#[utoipa::path(get, path = "/api/1.0-beta/tenant/{tenant}/account/{account}/environment/{environment}", tag = "environments",
    params(("tenant" = String, Path, description = "Tenant name"), ("account" = String, Path, description = "Account name"),
        ("environment" = String, Path, description = "Environment name")),
    responses((status = 200, description = "The environment", body = Envelope<EnvironmentInfo>)))]
pub async fn get_environment(
    State(state): State<AxebowState>,
    Caller(caller): Caller,
    Path((tenant, account, environment)): Path<(String, String, String)>,
) -> Result<Envelope<EnvironmentInfo>, AxebowError> {
    store::read(&state, &caller, PlatformRead::Tenant(&tenant), |p, _| {
        p.environment_info(&tenant, &account, &environment)
    })
    .await
    .map(ok)
}

/// Environment names of an account.
#[utoipa::path(get, path = "/api/1.0-beta/tenant/{tenant}/account/{account}/environment", tag = "environments",
    params(("tenant" = String, Path, description = "Tenant name"), ("account" = String, Path, description = "Account name")),
    responses((status = 200, description = "Names", body = Envelope<Vec<String>>)))]
pub async fn list_environments(
    State(state): State<AxebowState>,
    Caller(caller): Caller,
    Path((tenant, account)): Path<(String, String)>,
) -> Result<Envelope<Vec<String>>, AxebowError> {
    store::read(&state, &caller, PlatformRead::Tenant(&tenant), |p, _| {
        p.environment_names(&tenant, &account)
    })
    .await
    .map(ok)
}

/// Removes an environment (admins).
#[utoipa::path(delete, path = "/api/1.0-beta/tenant/{tenant}/account/{account}/environment/{environment}", tag = "environments",
    params(("tenant" = String, Path, description = "Tenant name"), ("account" = String, Path, description = "Account name"),
        ("environment" = String, Path, description = "Environment name")),
    responses((status = 200, description = "Removed", body = Empty)))]
pub async fn delete_environment(
    State(state): State<AxebowState>,
    Caller(caller): Caller,
    headers: HeaderMap,
    Path((tenant, account, environment)): Path<(String, String, String)>,
) -> Result<Empty, AxebowError> {
    let op = PlatformOp::DeleteEnvironment {
        tenant,
        account,
        environment,
    };
    store::write(&state, caller, op, &headers).await?;
    Ok(done())
}
