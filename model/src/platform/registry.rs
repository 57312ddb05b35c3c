//! A tenant's module registry (Axebow's `TenantSpec.registry`): checked when it is written, and
//! its credentials held like every other secret — written, never shown. A `PATCH` that gives the
//! registry without credentials keeps the stored ones only while the endpoint stays the same:
//! credentials are never carried over to another host.

use super::entities::Registry;
use super::error::PlatformError;

/// Longest credentials accepted.
const MAX_CREDENTIALS: usize = 4096;
/// Longest domain accepted (an npm scope is at most 214 characters with its package name).
const MAX_DOMAIN: usize = 100;

/// Checks a registry as written: an absolute `http(s)` URL with no user, query or fragment; a
/// domain usable as an npm scope; credentials of one line.
pub fn validate_registry(registry: &Registry) -> Result<(), PlatformError> {
    check_endpoint(&registry.endpoint).map_err(|why| PlatformError::invalid("registry.endpoint", why))?;
    check_domain(&registry.domain).map_err(|why| PlatformError::invalid("registry.domain", why))?;
    if let Some(credentials) = &registry.credentials {
        if credentials.is_empty() || credentials.len() > MAX_CREDENTIALS || credentials.contains(['\r', '\n'])
        {
            return Err(PlatformError::invalid(
                "registry.credentials",
                format!("must be one line of 1 to {MAX_CREDENTIALS} characters: a token, or user:password"),
            ));
        }
    }
    Ok(())
}

fn check_endpoint(endpoint: &str) -> Result<(), String> {
    let rest = endpoint
        .strip_prefix("https://")
        .or_else(|| endpoint.strip_prefix("http://"))
        .ok_or("must be an http:// or https:// URL")?;
    let host = rest.split('/').next().unwrap_or_default();
    if host.is_empty() {
        return Err("names no host".into());
    }
    if host.contains('@') {
        return Err("must not carry a user or password: give them as registry.credentials".into());
    }
    if endpoint.contains(['?', '#']) || endpoint.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err("must not carry a query, a fragment or spaces".into());
    }
    Ok(())
}

/// A domain is the npm scope modules are published under: lowercase letters, digits, `.`, `-`
/// and `_`, starting with a letter or digit, and not a name npm excludes.
fn check_domain(domain: &str) -> Result<(), String> {
    let ok = !domain.is_empty()
        && domain.len() <= MAX_DOMAIN
        && domain.starts_with(|c: char| c.is_ascii_lowercase() || c.is_ascii_digit())
        && domain
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || matches!(b, b'.' | b'-' | b'_'))
        && !["node_modules", "favicon.ico"].contains(&domain);
    if ok {
        Ok(())
    } else {
        Err(format!(
            "{domain:?} must be 1 to {MAX_DOMAIN} lowercase letters, digits, '.', '-' or '_', starting with a letter or digit, and not node_modules or favicon.ico (it is the npm scope modules are published under)"
        ))
    }
}

/// The registry to store when `written` replaces `stored`: written credentials win; none
/// written keeps the stored ones only for the same endpoint.
pub fn merged(stored: Option<&Registry>, written: &Registry) -> Registry {
    let mut next = written.clone();
    next.has_credentials = false;
    if next.credentials.is_none() {
        next.credentials = stored
            .filter(|s| s.endpoint == written.endpoint)
            .and_then(|s| s.credentials.clone());
    }
    next
}

#[cfg(test)]
mod tests {
    use super::*;

    fn registry(endpoint: &str, domain: &str, credentials: Option<&str>) -> Registry {
        Registry {
            endpoint: endpoint.into(),
            credentials: credentials.map(str::to_string),
            domain: domain.into(),
            public: true,
            has_credentials: false,
        }
    }

    #[test]
    fn registries_are_checked_field_by_field() {
        let cases = [
            ("https://npm.example.com", "acme.mods", None, None),
            ("http://127.0.0.1:4873/", "acme", Some("user:pw"), None),
            ("ftp://x", "acme", None, Some("registry.endpoint")),
            ("https://", "acme", None, Some("registry.endpoint")),
            ("https://u:p@host", "acme", None, Some("registry.endpoint")),
            ("https://host/?a=b", "acme", None, Some("registry.endpoint")),
            ("https://host", "Acme", None, Some("registry.domain")),
            ("https://host", "", None, Some("registry.domain")),
            ("https://host", ".acme", None, Some("registry.domain")),
            ("https://host", "node_modules", None, Some("registry.domain")),
            ("https://host", "favicon.ico", None, Some("registry.domain")),
            ("https://host", "acme", Some(""), Some("registry.credentials")),
            ("https://host", "acme", Some("a\nb"), Some("registry.credentials")),
        ];
        for (endpoint, domain, credentials, field) in cases {
            let result = validate_registry(&registry(endpoint, domain, credentials));
            match field {
                None => assert!(result.is_ok(), "{endpoint} {domain}: {result:?}"),
                Some(field) => {
                    let error = result.expect_err(endpoint).to_string();
                    assert!(error.contains(field), "{endpoint} {domain}: {error}");
                }
            }
        }
    }

    #[test]
    fn a_registry_written_without_public_is_private() {
        let written: Registry =
            serde_json::from_str(r#"{"endpoint": "https://host", "domain": "acme"}"#).unwrap();
        assert!(!written.public);
        let public: Registry =
            serde_json::from_str(r#"{"endpoint": "https://host", "domain": "acme", "public": true}"#)
                .unwrap();
        assert!(public.public);
    }

    #[test]
    fn credentials_are_kept_for_the_same_endpoint_only() {
        let stored = registry("https://a", "acme", Some("secret"));
        let same = merged(Some(&stored), &registry("https://a", "other", None));
        assert_eq!(same.credentials.as_deref(), Some("secret"));
        assert_eq!(same.domain, "other");
        let moved = merged(Some(&stored), &registry("https://b", "acme", None));
        assert_eq!(moved.credentials, None);
        let new = merged(Some(&stored), &registry("https://b", "acme", Some("new")));
        assert_eq!(new.credentials.as_deref(), Some("new"));
        assert_eq!(
            merged(None, &registry("https://a", "acme", None)).credentials,
            None
        );
    }
}
