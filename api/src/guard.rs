//! Authentication and authorization of the dialects beside the platform API: Kubernetes-style
//! lease objects, Boskos and pool administration, and cluster membership changes. They accept
//! the credentials their own clients send (`Bearer`, the Boskos client's `Basic` password, the
//! bare token of k8s-claimer clients), checked by the same verifier as the platform API, or —
//! without any of them — the client certificate the node verified on the TLS connection
//! ([`ClientCertificate`]: CN the user, O the groups).
//!
//! Who may do what: any valid credential may use the pools; lease objects in namespace `ns` need
//! a static token in group `namespace:ns` or `namespace:*`, or a user who is a confirmed member
//! of the tenant named `ns`; pool configuration and membership changes need an operator (a
//! static token in group `operators`, or a member of the operator tenant). A node configured
//! with no issuer and no static token runs these dialects open, as etcd without `--auth` does,
//! and logs so at start; the platform API never runs open.

use std::convert::Infallible;

use axum::extract::{FromRequestParts, Request};
use axum::http::header;
use axum::http::request::Parts;
use drover_model::audit::principal_of;
use drover_model::platform::Identity;

use crate::auth::{AuthError, ClientCertificate, Verified, Verifier};
use crate::core::Core;

/// The group of static tokens that act as operators.
pub const OPERATORS_GROUP: &str = "operators";
pub use crate::auth::NAMESPACE_GROUP_PREFIX;

/// What a request to a guarded dialect needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Need<'a> {
    /// Any valid credential.
    Authenticated,
    /// Lease objects of one namespace (`None`: of every namespace).
    Namespace(Option<&'a str>),
    /// An operator.
    Operator,
}

/// Why a request was turned away.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Denied {
    /// `401`: no valid credential.
    Unauthenticated(AuthError),
    /// `403`: the credential is valid but does not allow this.
    Forbidden(String),
}

/// What a request presents to prove who sends it: its `Authorization` header, and the client
/// certificate its TLS connection presented (verified by the node; see [`ClientCertificate`]).
#[derive(Debug, Clone, Default)]
pub struct Credentials {
    authorization: Option<String>,
    certificate: Option<ClientCertificate>,
}

impl Credentials {
    fn of(headers: &axum::http::HeaderMap, extensions: &axum::http::Extensions) -> Self {
        Self {
            authorization: headers
                .get(header::AUTHORIZATION)
                .and_then(|v| v.to_str().ok())
                .map(str::to_string),
            certificate: extensions.get::<ClientCertificate>().cloned(),
        }
    }
}

impl<S: Send + Sync> FromRequestParts<S> for Credentials {
    type Rejection = Infallible;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        Ok(Self::of(&parts.headers, &parts.extensions))
    }
}

/// Authenticates the request; `Ok(None)` when the node runs open.
fn authenticate(state: &Core, request: &Request) -> Result<Option<Verified>, Denied> {
    authenticate_credentials(state, &Credentials::of(request.headers(), request.extensions()))
}

/// Whether the caller may see everything an operator sees: an operator, or anyone on a node
/// that runs open.
pub fn sees_as_operator(state: &Core, credentials: &Credentials) -> bool {
    match authenticate_credentials(state, credentials) {
        Ok(None) => true,
        Ok(Some(verified)) => authorize(state, &verified, Need::Operator).is_ok(),
        Err(_) => false,
    }
}

/// A token in `Authorization` wins; without one, a verified client certificate names the caller.
fn authenticate_credentials(state: &Core, credentials: &Credentials) -> Result<Option<Verified>, Denied> {
    let verifier = &state.verifier;
    if verifier.is_open() {
        return Ok(None);
    }
    if let (None, Some(certificate)) = (&credentials.authorization, &credentials.certificate) {
        return Ok(Some(certificate.verified()));
    }
    let token =
        Verifier::credential(credentials.authorization.as_deref()).map_err(Denied::Unauthenticated)?;
    verifier
        .verify_with_groups(&token)
        .map(Some)
        .map_err(Denied::Unauthenticated)
}

/// The credential a request presents, verified: `None` when it presents none (a dialect with
/// anonymous or static users decides what that means); an error for one that does not verify.
pub fn verified(state: &Core, credentials: &Credentials) -> Result<Option<Verified>, AuthError> {
    match (&credentials.authorization, &credentials.certificate) {
        (None, None) => Ok(None),
        (None, Some(certificate)) => Ok(Some(certificate.verified())),
        (Some(_), _) => {
            let token = Verifier::credential(credentials.authorization.as_deref())?;
            state.verifier.verify_with_groups(&token).map(Some)
        }
    }
}

/// Whether the identity's user is an operator or a confirmed member of tenant `tenant`. Read
/// from this node's replica: a membership change reaches it within the replication delay.
fn platform_allows(state: &Core, identity: &Identity, tenant: Option<&str>) -> bool {
    state.raft.local_read(|s| {
        let platform = s.platform();
        let Some(user) = platform.user_of(identity) else {
            return false;
        };
        platform.is_operator(&user.uid)
            || tenant.is_some_and(|t| {
                platform
                    .tenant(t)
                    .and_then(|t| t.members.get(&user.uid))
                    .is_some_and(|m| m.confirmed)
            })
    })
}

/// Checks a verified caller against what the request needs.
pub fn authorize(state: &Core, verified: &Verified, need: Need<'_>) -> Result<(), Denied> {
    let has = |group: &str| verified.groups.iter().any(|g| g == group);
    let who = format!("{} of {}", verified.identity.subject, verified.identity.issuer);
    match need {
        Need::Authenticated => Ok(()),
        Need::Operator if has(OPERATORS_GROUP) || platform_allows(state, &verified.identity, None) => Ok(()),
        Need::Operator => Err(Denied::Forbidden(format!("{who} is not an operator"))),
        Need::Namespace(namespace) => {
            let all = format!("{NAMESPACE_GROUP_PREFIX}*");
            let allowed = has(OPERATORS_GROUP)
                || has(&all)
                || namespace.is_some_and(|ns| has(&format!("{NAMESPACE_GROUP_PREFIX}{ns}")))
                || platform_allows(state, &verified.identity, namespace);
            if allowed {
                Ok(())
            } else {
                let place = namespace.map_or("every namespace".to_string(), |ns| format!("namespace {ns:?}"));
                Err(Denied::Forbidden(format!(
                    "{who} may not use lease objects in {place}"
                )))
            }
        }
    }
}

/// Authenticates and authorizes the request; its principal for the audit log (`anonymous` on
/// a node that runs open).
pub fn check(state: &Core, request: &Request, need: Need<'_>) -> Result<String, Denied> {
    match authenticate(state, request)? {
        None => Ok(ANONYMOUS.to_string()),
        Some(verified) => {
            authorize(state, &verified, need)?;
            Ok(principal_of(&verified.identity))
        }
    }
}

/// The principal of a request from anyone on a node that runs open.
pub const ANONYMOUS: &str = "anonymous";

/// The caller's principal if they are an operator (anyone on a node that runs open).
pub fn operator(state: &Core, credentials: &Credentials) -> Result<String, Denied> {
    match authenticate_credentials(state, credentials)? {
        None => Ok(ANONYMOUS.to_string()),
        Some(verified) => {
            authorize(state, &verified, Need::Operator)?;
            Ok(principal_of(&verified.identity))
        }
    }
}
