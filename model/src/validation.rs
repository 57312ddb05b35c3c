//! Name rules shared by the API (to answer early) and the state machine (to stay safe).

use crate::error::DomainError;
use crate::object::ObjectKind;

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

pub(crate) fn is_label(value: &str) -> bool {
    let bytes = value.as_bytes();
    !bytes.is_empty()
        && bytes.len() <= MAX_LABEL_LEN
        && bytes
            .iter()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'-')
        && bytes.first().is_some_and(u8::is_ascii_alphanumeric)
        && bytes.last().is_some_and(u8::is_ascii_alphanumeric)
}

pub(crate) fn is_subdomain(value: &str) -> bool {
    value.len() <= MAX_SUBDOMAIN_LEN && value.split('.').all(is_label)
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
    }

    #[test]
    fn namespaces_are_labels() {
        assert!(validate_namespace("default").is_ok());
        assert!(validate_namespace("-bad").is_err());
        assert!(validate_namespace(&"n".repeat(64)).is_err());
    }
}
