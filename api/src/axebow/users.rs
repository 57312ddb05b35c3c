//! `/user`: registration, the caller's own info, identity profiles, removal, and the operators'
//! list of all users.

use axum::extract::{Path, State};
use axum::http::HeaderMap;
use drover_model::platform::views::{UserInfo, UserSummary};
use drover_model::platform::{PlatformOp, PlatformRead, PlatformResult, UserProfile};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::context::AxebowState;
use super::context::Caller;
use super::reply::{done, ok, AxebowError, Body, Empty, Envelope};
use super::store;
use crate::auth::{Verifier, STATIC_ISSUER};
use crate::guard::OPERATORS_GROUP;

/// The answer to a registration.
#[derive(Debug, Serialize, ToSchema)]
pub struct Registered {
    /// The platform-generated user id.
    pub userid: String,
}

/// `POST /user/provider`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewProfile {
    /// A token of the provider naming the identity to add; it must verify and not be expired.
    pub jwt: String,
}

/// Registers the caller's identity as a new user.
#[utoipa::path(post, path = "/api/1.0-beta/user", tag = "users", request_body = UserProfile,
    responses((status = 200, description = "Registered", body = Envelope<Registered>)))]
pub async fn register(
    State(state): State<AxebowState>,
    Caller(caller): Caller,
    headers: HeaderMap,
    Body(profile): Body<UserProfile>,
) -> Result<Envelope<Registered>, AxebowError> {
    let operator = state.axebow.options.operators.contains(&caller) || static_operator(&state, &headers);
    let op = PlatformOp::RegisterUser {
        uid: uuid::Uuid::new_v4().to_string(),
        profile,
        operator,
    };
    match store::write(&state, caller, op, &headers).await? {
        PlatformResult::UserRegistered { uid } => Ok(ok(Registered { userid: uid })),
        PlatformResult::Done => Err(AxebowError::internal(
            "the registration was applied without a user id",
        )),
    }
}

/// Whether the request's bearer token is a static API token in group `operators`. Such a
/// machine is an operator of every other dialect (membership, pools, every lease namespace), so
/// its user becomes one of the platform's operators when it registers, as the identities
/// `--operators` lists do: Kubernetes gives a static token's groups their rights the same way.
fn static_operator(state: &AxebowState, headers: &HeaderMap) -> bool {
    let header = headers
        .get(axum::http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok());
    Verifier::bearer(header)
        .ok()
        .and_then(|token| state.verifier.verify_with_groups(token).ok())
        .is_some_and(|verified| {
            verified.identity.issuer == STATIC_ISSUER && verified.groups.iter().any(|g| g == OPERATORS_GROUP)
        })
}

/// The caller's user: memberships, invitations and identity profiles.
#[utoipa::path(get, path = "/api/1.0-beta/user/info", tag = "users",
    responses((status = 200, description = "The caller's user", body = Envelope<UserInfo>)))]
pub async fn info(
    State(state): State<AxebowState>,
    Caller(caller): Caller,
) -> Result<Envelope<UserInfo>, AxebowError> {
    store::read(&state, &caller, PlatformRead::UserInfo, |p, grant| {
        p.user_info(grant)
    })
    .await
    .map(ok)
}

/// Every user (operators only).
#[utoipa::path(get, path = "/api/1.0-beta/user", tag = "users",
    responses((status = 200, description = "All users", body = Envelope<Vec<UserSummary>>)))]
pub async fn list(
    State(state): State<AxebowState>,
    Caller(caller): Caller,
) -> Result<Envelope<Vec<UserSummary>>, AxebowError> {
    store::read(&state, &caller, PlatformRead::ListUsers, |p, _| Ok(p.user_list()))
        .await
        .map(ok)
}

/// Removes the caller's user; refused while they are the last owner of a tenant.
#[utoipa::path(delete, path = "/api/1.0-beta/user", tag = "users",
    responses((status = 200, description = "Removed", body = Empty)))]
pub async fn remove(
    State(state): State<AxebowState>,
    Caller(caller): Caller,
    headers: HeaderMap,
) -> Result<Empty, AxebowError> {
    store::write(&state, caller, PlatformOp::RemoveUser, &headers).await?;
    Ok(done())
}

/// Adds the identity of another provider's token to the caller's user.
#[utoipa::path(post, path = "/api/1.0-beta/user/provider", tag = "users", request_body = NewProfile,
    responses((status = 200, description = "Added", body = Empty)))]
pub async fn add_profile(
    State(state): State<AxebowState>,
    Caller(caller): Caller,
    headers: HeaderMap,
    Body(body): Body<NewProfile>,
) -> Result<Empty, AxebowError> {
    let identity = state
        .verifier
        .verify_jwt(&body.jwt)
        .map_err(|e| AxebowError::invalid("jwt", e.to_string()))?;
    store::write(&state, caller, PlatformOp::AddProfile { identity }, &headers).await?;
    Ok(done())
}

/// Removes the caller's profile of one provider (not the last one).
#[utoipa::path(delete, path = "/api/1.0-beta/user/provider/{oidp}", tag = "users",
    params(("oidp" = String, Path, description = "The provider's issuer")),
    responses((status = 200, description = "Removed", body = Empty)))]
pub async fn remove_profile(
    State(state): State<AxebowState>,
    Caller(caller): Caller,
    headers: HeaderMap,
    Path(oidp): Path<String>,
) -> Result<Empty, AxebowError> {
    store::write(
        &state,
        caller,
        PlatformOp::RemoveProfile { issuer: oidp },
        &headers,
    )
    .await?;
    Ok(done())
}
