//! Name rules shared by the API (to answer early) and the state machine (to stay safe).

use crate::error::DomainError;
use crate::limits::MAX_OBJECT_BYTES;
use crate::object::ObjectKind;
use crate::platform::error::PlatformError;

/// Longest DNS-1123 label (namespaces, Akka lease names).
pub const MAX_LABEL_LEN: usize = 63;
/// Longest DNS-1123 subdomain (Kubernetes object names).
pub const MAX_SUBDOMAIN_LEN: usize = 253;

fn invalid(field: &str, message: String) -> DomainError {
    DomainError::Invalid {
        field: field.to_string(),
        message,
    }
}

/// Whether `value` is non-empty, made of bytes `allowed` accepts, and starts and ends with an
/// ASCII letter or digit: the shape shared by DNS labels and Kubernetes name parts.
fn is_shaped(value: &str, allowed: impl Fn(u8) -> bool) -> bool {
    let bytes = value.as_bytes();
    bytes.iter().all(|b| allowed(*b))
        && bytes.first().is_some_and(u8::is_ascii_alphanumeric)
        && bytes.last().is_some_and(u8::is_ascii_alphanumeric)
}

fn is_dns_byte(b: u8) -> bool {
    b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-'
}

pub(crate) fn is_label(value: &str) -> bool {
    value.len() <= MAX_LABEL_LEN && is_shaped(value, is_dns_byte)
}

/// A DNS-1123 subdomain as Kubernetes checks it: at most 253 characters of dot-separated parts,
/// each of lower-case letters, digits and '-', starting and ending with a letter or digit. Unlike
/// a label, one part may be longer than 63 characters (Kubernetes accepts such object names).
pub(crate) fn is_subdomain(value: &str) -> bool {
    value.len() <= MAX_SUBDOMAIN_LEN && value.split('.').all(|part| is_shaped(part, is_dns_byte))
}

/// Whether `value` is a Kubernetes qualified name part: at most 63 letters, digits, '-', '_' or
/// '.', starting and ending with a letter or digit.
fn is_qualified_part(value: &str) -> bool {
    value.len() <= MAX_LABEL_LEN
        && is_shaped(value, |b| {
            b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.')
        })
}

/// A label or annotation key: `[prefix/]name`, the prefix a DNS subdomain, the name a qualified
/// name part (Kubernetes' `IsQualifiedName`).
fn is_qualified_key(key: &str) -> bool {
    match key.split_once('/') {
        Some((prefix, name)) => is_subdomain(prefix) && is_qualified_part(name),
        None => is_qualified_part(key),
    }
}

/// Checks what an object holds besides its name: its size ([`MAX_OBJECT_BYTES`]) and its labels
/// and annotations ([`validate_metadata`]). The API runs it before proposing, the state machine
/// again when applying.
pub fn validate_contents(
    key: &crate::object::ObjectKey,
    labels: &std::collections::BTreeMap<String, String>,
    annotations: &std::collections::BTreeMap<String, String>,
    spec: &crate::object::LeaseSpec,
) -> Result<(), DomainError> {
    let bytes = crate::object::approx_object_bytes(key, labels, annotations, spec);
    if bytes > MAX_OBJECT_BYTES {
        return Err(invalid(
            "metadata",
            format!(
                "the object holds {bytes} bytes of names, labels, annotations and spec; at most {MAX_OBJECT_BYTES} are allowed"
            ),
        ));
    }
    validate_metadata(labels, annotations)
}

/// Checks label keys and values and annotation keys as Kubernetes does: keys are qualified
/// names, label values empty or qualified name parts; annotation values are free text (their
/// size counts against the object's).
pub fn validate_metadata(
    labels: &std::collections::BTreeMap<String, String>,
    annotations: &std::collections::BTreeMap<String, String>,
) -> Result<(), DomainError> {
    let shown = |text: &str| {
        text.chars()
            .take(64)
            .collect::<String>()
            .escape_debug()
            .to_string()
    };
    for (key, value) in labels {
        if !is_qualified_key(key) {
            return Err(invalid(
                "metadata.labels",
                format!("key \"{}\" must be [prefix/]name: a DNS subdomain prefix, then at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit", shown(key)),
            ));
        }
        if !value.is_empty() && !is_qualified_part(value) {
            return Err(invalid(
                "metadata.labels",
                format!("value \"{}\" of {key}: at most 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit, or empty", shown(value)),
            ));
        }
    }
    for key in annotations.keys() {
        if !is_qualified_key(key) {
            return Err(invalid(
                "metadata.annotations",
                format!("key \"{}\" must be [prefix/]name like a label key", shown(key)),
            ));
        }
    }
    Ok(())
}

/// Checks a namespace: a DNS-1123 label.
pub fn validate_namespace(namespace: &str) -> Result<(), DomainError> {
    if is_label(namespace) {
        Ok(())
    } else {
        Err(invalid(
            "metadata.namespace",
            format!(
                "{namespace:?} must be a DNS-1123 label: at most {MAX_LABEL_LEN} lower-case letters, digits or '-', starting and ending with a letter or digit"
            ),
        ))
    }
}

/// Checks an object name for its kind.
///
/// Kubernetes leases take a DNS-1123 subdomain (up to 253 characters). Akka leases take a
/// DNS-1039 label (up to 63, starting with a letter): the Akka client sanitises names to that
/// form, and an over-long name is refused rather than truncated, so two long names can never
/// silently become one lease.
pub fn validate_name(kind: ObjectKind, name: &str) -> Result<(), DomainError> {
    let ok = match kind {
        ObjectKind::CoordinationLease => is_subdomain(name),
        ObjectKind::AkkaLease => is_label(name) && name.as_bytes()[0].is_ascii_lowercase(),
    };
    if ok {
        return Ok(());
    }
    let rule = match kind {
        ObjectKind::CoordinationLease => format!(
            "a DNS-1123 subdomain: at most {MAX_SUBDOMAIN_LEN} characters of lower-case letters, digits, '-' and '.'"
        ),
        ObjectKind::AkkaLease => format!(
            "a DNS-1039 label: at most {MAX_LABEL_LEN} lower-case letters, digits or '-', starting with a letter and ending with a letter or digit"
        ),
    };
    Err(invalid(
        "metadata.name",
        format!("{name:?} (length {}) must be {rule}", name.len()),
    ))
}

/// Checks a tenant, account, environment or resource name.
pub fn validate_object_name(field: &str, name: &str) -> Result<(), PlatformError> {
    if is_label(name) {
        Ok(())
    } else {
        Err(PlatformError::invalid(
            field,
            format!("{name:?} must be 1-63 lower-case letters, digits or '-', starting and ending with a letter or digit"),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn akka_names_over_63_are_refused_not_truncated() {
        let long = "a".repeat(64);
        assert!(validate_name(ObjectKind::AkkaLease, &long).is_err());
        assert!(validate_name(ObjectKind::AkkaLease, &"a".repeat(63)).is_ok());
        assert!(validate_name(ObjectKind::AkkaLease, "1abc").is_err());
        assert!(validate_name(ObjectKind::AkkaLease, "my-system-akka-sbr").is_ok());
    }

    #[test]
    fn coordination_names_are_subdomains() {
        assert!(validate_name(ObjectKind::CoordinationLease, "kube-scheduler.example").is_ok());
        assert!(validate_name(ObjectKind::CoordinationLease, "Upper").is_err());
        assert!(validate_name(ObjectKind::CoordinationLease, "").is_err());
        assert!(validate_name(ObjectKind::CoordinationLease, "a..b").is_err());
        assert!(validate_name(ObjectKind::CoordinationLease, &"a".repeat(254)).is_err());
        // Finding 11: Kubernetes takes a 64-character single-part name; the rule said 253.
        assert!(validate_name(ObjectKind::CoordinationLease, &"a".repeat(64)).is_ok());
        assert!(validate_name(ObjectKind::CoordinationLease, &"a".repeat(253)).is_ok());
    }

    #[test]
    fn label_and_annotation_keys_and_label_values_follow_kubernetes() {
        use std::collections::BTreeMap;
        let map = |pairs: &[(&str, &str)]| -> BTreeMap<String, String> {
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        };
        let good = map(&[("app", "web"), ("example.com/tier", ""), ("a_b.c", "v-1.2_3")]);
        assert!(validate_metadata(
            &good,
            &map(&[("kubernetes.io/description", "free text \u{0} ok")])
        )
        .is_ok());
        for bad in [
            "BAD KEY/../\u{0}",
            "",
            "-x",
            "a/b/c",
            "Example.com/x",
            &"k".repeat(64),
        ] {
            assert!(
                validate_metadata(&map(&[(bad, "v")]), &BTreeMap::new()).is_err(),
                "{bad:?}"
            );
            assert!(
                validate_metadata(&BTreeMap::new(), &map(&[(bad, "v")])).is_err(),
                "{bad:?}"
            );
        }
        for bad in ["a b", "-v", &"v".repeat(64), "\u{0}"] {
            assert!(
                validate_metadata(&map(&[("k", bad)]), &BTreeMap::new()).is_err(),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn namespaces_are_labels() {
        assert!(validate_namespace("default").is_ok());
        assert!(validate_namespace("-bad").is_err());
        assert!(validate_namespace(&"n".repeat(64)).is_err());
    }
}
