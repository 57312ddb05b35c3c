//! Label and field selectors of list and watch requests (the equality-based subset).

use drover_model::StoredObject;

use super::status::KubeError;

#[derive(Debug, Clone, PartialEq, Eq)]
enum Requirement {
    Equals(String, String),
    NotEquals(String, String),
    Exists(String),
    NotExists(String),
}

/// A parsed `labelSelector` plus `fieldSelector`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Selector {
    labels: Vec<Requirement>,
    name: Option<String>,
    namespace: Option<String>,
}

fn parse_requirement(term: &str) -> Option<Requirement> {
    let term = term.trim();
    if let Some((key, value)) = term.split_once("!=") {
        return Some(Requirement::NotEquals(key.trim().into(), value.trim().into()));
    }
    if let Some((key, value)) = term.split_once("==").or_else(|| term.split_once('=')) {
        return Some(Requirement::Equals(key.trim().into(), value.trim().into()));
    }
    if let Some(key) = term.strip_prefix('!') {
        return Some(Requirement::NotExists(key.trim().into()));
    }
    if term.is_empty() || term.contains(' ') || term.contains('(') {
        return None;
    }
    Some(Requirement::Exists(term.into()))
}

impl Selector {
    /// Parses the selectors of a request; unsupported syntax is a `400`.
    pub fn parse(label_selector: Option<&str>, field_selector: Option<&str>) -> Result<Self, KubeError> {
        let mut selector = Selector::default();
        for term in label_selector
            .unwrap_or_default()
            .split(',')
            .filter(|t| !t.trim().is_empty())
        {
            let requirement = parse_requirement(term).ok_or_else(|| {
                KubeError::bad_request(format!(
                    "labelSelector term {term:?} is not supported: use key=value, key!=value, key or !key"
                ))
            })?;
            selector.labels.push(requirement);
        }
        for term in field_selector
            .unwrap_or_default()
            .split(',')
            .filter(|t| !t.trim().is_empty())
        {
            match parse_requirement(term) {
                Some(Requirement::Equals(field, value)) if field == "metadata.name" => selector.name = Some(value),
                Some(Requirement::Equals(field, value)) if field == "metadata.namespace" => {
                    selector.namespace = Some(value)
                }
                _ => {
                    return Err(KubeError::bad_request(format!(
                        "fieldSelector term {term:?} is not supported: use metadata.name=<name> or metadata.namespace=<namespace>"
                    )))
                }
            }
        }
        Ok(selector)
    }

    /// Whether the object matches.
    pub fn matches(&self, object: &StoredObject) -> bool {
        if self.name.as_ref().is_some_and(|name| name != &object.key.name) {
            return false;
        }
        if self
            .namespace
            .as_ref()
            .is_some_and(|ns| ns != &object.key.namespace)
        {
            return false;
        }
        let labels = &object.meta.labels;
        self.labels.iter().all(|requirement| match requirement {
            Requirement::Equals(key, value) => labels.get(key) == Some(value),
            Requirement::NotEquals(key, value) => labels.get(key) != Some(value),
            Requirement::Exists(key) => labels.contains_key(key),
            Requirement::NotExists(key) => !labels.contains_key(key),
        })
    }
}

#[cfg(test)]
mod tests {
    use drover_model::{CoordinationLeaseSpec, LeaseSpec, ObjectKey, ObjectKind, ObjectMeta};

    use super::*;

    fn object(name: &str, labels: &[(&str, &str)]) -> StoredObject {
        StoredObject {
            key: ObjectKey::new(ObjectKind::CoordinationLease, "default", name),
            meta: ObjectMeta {
                uid: String::new(),
                resource_version: 1,
                created_index: 1,
                creation_timestamp: String::new(),
                labels: labels
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
                annotations: Default::default(),
            },
            spec: LeaseSpec::Coordination(CoordinationLeaseSpec::default()),
        }
    }

    #[test]
    fn equality_and_existence() {
        let selector = Selector::parse(Some("app=web,tier!=db,!legacy"), None).expect("parses");
        assert!(selector.matches(&object("a", &[("app", "web")])));
        assert!(!selector.matches(&object("a", &[("app", "web"), ("tier", "db")])));
        assert!(!selector.matches(&object("a", &[("app", "web"), ("legacy", "1")])));
        assert!(!selector.matches(&object("a", &[])));
    }

    #[test]
    fn field_selector_on_name_and_unsupported_syntax() {
        let selector = Selector::parse(None, Some("metadata.name=b")).expect("parses");
        assert!(selector.matches(&object("b", &[])));
        assert!(!selector.matches(&object("a", &[])));
        assert!(Selector::parse(None, Some("spec.holder=x")).is_err());
        assert!(Selector::parse(Some("env in (a,b)"), None).is_err());
    }
}
