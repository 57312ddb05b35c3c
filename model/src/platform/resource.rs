//! Kumori resources a tenant registers: certificate authorities, certificates, domains, ports,
//! secrets and volumes, and the checks their data must pass.

use std::fmt;
use std::ops::RangeInclusive;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

use super::error::PlatformError;
use super::selector::Selector;
use crate::validation::is_subdomain;

/// The kinds of resource.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum ResourceKind {
    /// A certificate authority (PEM).
    Ca,
    /// A TLS certificate `{cert, key, domain}`.
    Certificate,
    /// A domain name.
    Domain,
    /// A TCP port inside the platform's port range.
    Port,
    /// An opaque secret string.
    Secret,
    /// A persistent volume `{items, size, type, provider}`.
    Volume,
}

impl ResourceKind {
    /// Every kind, in path order.
    pub const ALL: [ResourceKind; 6] = [
        ResourceKind::Ca,
        ResourceKind::Certificate,
        ResourceKind::Domain,
        ResourceKind::Port,
        ResourceKind::Secret,
        ResourceKind::Volume,
    ];

    /// The kind's path segment.
    pub fn as_str(self) -> &'static str {
        match self {
            ResourceKind::Ca => "ca",
            ResourceKind::Certificate => "certificate",
            ResourceKind::Domain => "domain",
            ResourceKind::Port => "port",
            ResourceKind::Secret => "secret",
            ResourceKind::Volume => "volume",
        }
    }

    /// Parses a path segment.
    pub fn parse(text: &str) -> Option<ResourceKind> {
        ResourceKind::ALL.into_iter().find(|kind| kind.as_str() == text)
    }
}

impl fmt::Display for ResourceKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a caller registers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ResourceSpec {
    /// The kind-specific value: PEM string (`ca`), `{cert, key, domain}` (`certificate`), domain
    /// name (`domain`), port number (`port`), string (`secret`), `{items, size, type, provider}`
    /// (`volume`).
    #[schema(value_type = Object)]
    pub data: Value,
    /// Free-form metadata.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub meta: Option<Value>,
    /// An environment selector: the resource may be used only in environments where it holds.
    /// It may reference `$.this` and `$.environment`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selector: Option<Selector>,
}

/// The roots a resource's own selector may reference.
pub const RESOURCE_SELECTOR_ROOTS: [&str; 2] = ["this", "environment"];

fn invalid(field: &str, message: impl Into<String>) -> PlatformError {
    PlatformError::invalid(format!("data{field}"), message)
}

fn pem(field: &str, value: &Value, marker: &str) -> Result<(), PlatformError> {
    match value.as_str() {
        Some(text) if text.contains("-----BEGIN") && text.contains(marker) => Ok(()),
        _ => Err(invalid(
            field,
            format!("must be a PEM string containing {marker:?}"),
        )),
    }
}

fn domain(field: &str, value: &Value) -> Result<(), PlatformError> {
    match value.as_str() {
        Some(name) if is_subdomain(name) && name.contains('.') => Ok(()),
        _ => Err(invalid(
            field,
            "must be a lower-case DNS name with at least two labels, such as app.example.com",
        )),
    }
}

fn object<'a>(
    value: &'a Value,
    fields: &[&str],
) -> Result<&'a serde_json::Map<String, Value>, PlatformError> {
    let map = value
        .as_object()
        .ok_or_else(|| invalid("", format!("must be an object with {}", fields.join(", "))))?;
    if let Some(unknown) = map.keys().find(|key| !fields.contains(&key.as_str())) {
        return Err(invalid(
            &format!(".{unknown}"),
            format!("unknown field; expected {}", fields.join(", ")),
        ));
    }
    Ok(map)
}

fn field<'a>(map: &'a serde_json::Map<String, Value>, name: &str) -> Result<&'a Value, PlatformError> {
    map.get(name)
        .ok_or_else(|| invalid(&format!(".{name}"), "is required"))
}

/// A volume size: digits then K, M, G or T, optionally followed by `i` (`10M`, `5Gi`).
fn is_magnitude(text: &str) -> bool {
    let digits = text.bytes().take_while(u8::is_ascii_digit).count();
    let unit = &text[digits..];
    digits > 0
        && text[..digits].parse::<u64>().is_ok_and(|n| n > 0)
        && ["K", "M", "G", "T", "Ki", "Mi", "Gi", "Ti"].contains(&unit)
}

/// The port number of a `port` resource's data, once valid.
pub fn port_of(data: &Value) -> Option<u16> {
    data.as_u64().and_then(|n| u16::try_from(n).ok())
}

/// Checks a resource's data for its kind; ports must lie in `port_range`.
pub fn validate_resource(
    kind: ResourceKind,
    spec: &ResourceSpec,
    port_range: &RangeInclusive<u16>,
) -> Result<(), PlatformError> {
    let data = &spec.data;
    match kind {
        ResourceKind::Ca => pem("", data, "CERTIFICATE")?,
        ResourceKind::Certificate => {
            let map = object(data, &["cert", "key", "domain"])?;
            pem(".cert", field(map, "cert")?, "CERTIFICATE")?;
            pem(".key", field(map, "key")?, "PRIVATE KEY")?;
            domain(".domain", field(map, "domain")?)?;
        }
        ResourceKind::Domain => domain("", data)?,
        ResourceKind::Port => match port_of(data) {
            Some(port) if port_range.contains(&port) => {}
            _ => {
                return Err(invalid(
                    "",
                    format!(
                        "must be a port number between {} and {} (the platform's portRange)",
                        port_range.start(),
                        port_range.end()
                    ),
                ))
            }
        },
        ResourceKind::Secret => {
            if !data.is_string() {
                return Err(invalid("", "must be a string"));
            }
        }
        ResourceKind::Volume => {
            let map = object(data, &["items", "size", "type", "provider"])?;
            if field(map, "items")?.as_u64().is_none_or(|n| n < 1) {
                return Err(invalid(".items", "must be a positive integer"));
            }
            if !field(map, "size")?.as_str().is_some_and(is_magnitude) {
                return Err(invalid(".size", "must be a size such as 10M, 5G or 1Ti"));
            }
            if !matches!(field(map, "type")?.as_str(), Some("replicated" | "single")) {
                return Err(invalid(".type", "must be \"replicated\" or \"single\""));
            }
            if field(map, "provider")?.as_str().is_none_or(str::is_empty) {
                return Err(invalid(".provider", "must name a CSI provider"));
            }
        }
    }
    check_selector(spec)
}

/// Checks a resource's own selector, which may reference `$.this` and `$.environment`.
pub fn check_selector(spec: &ResourceSpec) -> Result<(), PlatformError> {
    match &spec.selector {
        Some(selector) => selector
            .validate(&RESOURCE_SELECTOR_ROOTS)
            .map_err(|e| PlatformError::invalid(format!("selector[{}]", e.item), e.message)),
        None => Ok(()),
    }
}

/// The data a caller without the right to read secrets sees: secret values and private keys
/// are left out.
pub fn redacted(kind: ResourceKind, spec: &ResourceSpec) -> ResourceSpec {
    let mut spec = spec.clone();
    match kind {
        ResourceKind::Secret => spec.data = Value::Null,
        ResourceKind::Certificate => {
            if let Some(map) = spec.data.as_object_mut() {
                map.remove("key");
            }
        }
        _ => {}
    }
    spec
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn spec(data: Value) -> ResourceSpec {
        ResourceSpec {
            data,
            meta: None,
            selector: None,
        }
    }

    const CERT: &str = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";
    const KEY: &str = "-----BEGIN PRIVATE KEY-----\nMIIE\n-----END PRIVATE KEY-----\n";

    #[test]
    fn each_kind_accepts_its_data_and_refuses_other_data() {
        let range = 30000..=32767;
        let good = [
            (ResourceKind::Ca, json!(CERT)),
            (
                ResourceKind::Certificate,
                json!({"cert": CERT, "key": KEY, "domain": "a.example.com"}),
            ),
            (ResourceKind::Domain, json!("app.example.com")),
            (ResourceKind::Port, json!(30001)),
            (ResourceKind::Secret, json!("x")),
            (
                ResourceKind::Volume,
                json!({"items": 1, "size": "10M", "type": "single", "provider": "csi-x"}),
            ),
        ];
        for (kind, data) in good {
            validate_resource(kind, &spec(data), &range).unwrap_or_else(|e| panic!("{kind}: {e}"));
        }
        let bad = [
            (ResourceKind::Ca, json!("not pem"), "data"),
            (
                ResourceKind::Certificate,
                json!({"cert": CERT, "domain": "a.example.com"}),
                "data.key",
            ),
            (ResourceKind::Domain, json!("localhost"), "data"),
            (ResourceKind::Domain, json!("Bad_Name.com"), "data"),
            (ResourceKind::Port, json!(80), "data"),
            (ResourceKind::Port, json!("30001"), "data"),
            (ResourceKind::Secret, json!(1), "data"),
            (
                ResourceKind::Volume,
                json!({"items": 1, "size": "10X", "type": "single", "provider": "p"}),
                "data.size",
            ),
            (
                ResourceKind::Volume,
                json!({"items": 0, "size": "1G", "type": "single", "provider": "p"}),
                "data.items",
            ),
            (
                ResourceKind::Volume,
                json!({"items": 1, "size": "1G", "type": "raid", "provider": "p"}),
                "data.type",
            ),
        ];
        for (kind, data, field) in bad {
            match validate_resource(kind, &spec(data.clone()), &range) {
                Err(PlatformError::Invalid { field: got, .. }) => assert_eq!(got, field, "{kind} {data}"),
                other => panic!("{kind} {data}: {other:?}"),
            }
        }
    }

    #[test]
    fn redaction_hides_secret_values_and_private_keys() {
        let secret = redacted(ResourceKind::Secret, &spec(json!("hunter2")));
        assert_eq!(secret.data, Value::Null);
        let cert = redacted(
            ResourceKind::Certificate,
            &spec(json!({"cert": CERT, "key": KEY, "domain": "a.example.com"})),
        );
        assert!(cert.data.get("key").is_none());
        assert_eq!(cert.data["cert"], json!(CERT));
        assert_eq!(
            redacted(ResourceKind::Port, &spec(json!(30001))).data,
            json!(30001)
        );
    }
}
