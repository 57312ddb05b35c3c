//! Calls to a tenant's module registry (an npm registry) on the tenant's behalf. The API builds
//! what to send and reads what comes back; the node supplies the transport
//! ([`RegistryCalls`]), made within the operator's egress policy like every call for a tenant.

use base64::Engine;
use futures::future::BoxFuture;

/// What a registry answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RegistryAnswer {
    /// HTTP status.
    pub status: u16,
    /// Body (bounded by the transport).
    pub body: Vec<u8>,
}

/// Why a registry call was not answered.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct RegistryUnreachable(pub String);

/// A registry call in flight.
pub type RegistryFuture = BoxFuture<'static, Result<RegistryAnswer, RegistryUnreachable>>;

/// The transport to tenants' registries.
pub trait RegistryCalls: Send + Sync {
    /// `GET url`.
    fn get(&self, url: String, authorization: Option<String>) -> RegistryFuture;
    /// `PUT url` with a JSON body.
    fn put_json(&self, url: String, authorization: Option<String>, body: Vec<u8>) -> RegistryFuture;
}

impl std::fmt::Debug for dyn RegistryCalls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("RegistryCalls")
    }
}

/// The `Authorization` header for a registry's credentials: `user:password` is sent as Basic,
/// anything else as a Bearer token (what `npm login` hands out).
pub fn authorization(credentials: Option<&str>) -> Option<String> {
    let credentials = credentials?;
    Some(if credentials.contains(':') {
        format!(
            "Basic {}",
            base64::engine::general_purpose::STANDARD.encode(credentials)
        )
    } else {
        format!("Bearer {credentials}")
    })
}

/// `endpoint` joined with a package name (`@scope/name`, its `/` escaped as npm does).
pub fn package_url(endpoint: &str, package: &str) -> String {
    format!(
        "{}/{}",
        endpoint.trim_end_matches('/'),
        package.replace('/', "%2f")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_become_basic_or_bearer_and_names_are_escaped() {
        assert_eq!(authorization(Some("ci:pw")).as_deref(), Some("Basic Y2k6cHc="));
        assert_eq!(authorization(Some("tok")).as_deref(), Some("Bearer tok"));
        assert_eq!(authorization(None), None);
        assert_eq!(
            package_url("http://r:4873/", "@acme.mods/hello"),
            "http://r:4873/@acme.mods%2fhello"
        );
    }
}
