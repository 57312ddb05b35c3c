//! The Kubernetes JSON shape of stored objects, and the parsing of incoming ones.

use std::collections::BTreeMap;

use drover_model::{AkkaLeaseSpec, CoordinationLeaseSpec, LeaseSpec, ObjectKind, StoredObject};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::Value;

use super::status::KubeError;

/// The object as Kubernetes clients expect it, serialized straight from the stored object (no
/// intermediate `serde_json::Value`: this is on the path of every read and write).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct KubeObject<'a> {
    api_version: &'static str,
    kind: &'static str,
    metadata: KubeMeta<'a>,
    spec: SpecRef<'a>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct KubeMeta<'a> {
    name: &'a str,
    namespace: &'a str,
    uid: &'a str,
    /// Kubernetes sends resource versions as strings.
    #[serde(serialize_with = "serialize_as_string")]
    resource_version: u64,
    creation_timestamp: &'a str,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    labels: &'a BTreeMap<String, String>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    annotations: &'a BTreeMap<String, String>,
}

/// The spec of either kind, without the enum's tag.
#[derive(Serialize)]
#[serde(untagged)]
enum SpecRef<'a> {
    Coordination(&'a CoordinationLeaseSpec),
    Akka(&'a AkkaLeaseSpec),
}

fn serialize_as_string<S: serde::Serializer>(value: &u64, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.collect_str(value)
}

/// The object as Kubernetes clients expect it.
pub fn kube_object(object: &StoredObject) -> KubeObject<'_> {
    let kind = object.key.kind;
    KubeObject {
        api_version: kind.api_version(),
        kind: kind.kind_name(),
        metadata: KubeMeta {
            name: &object.key.name,
            namespace: &object.key.namespace,
            uid: &object.meta.uid,
            resource_version: object.meta.resource_version,
            creation_timestamp: &object.meta.creation_timestamp,
            labels: &object.meta.labels,
            annotations: &object.meta.annotations,
        },
        spec: match &object.spec {
            LeaseSpec::Coordination(spec) => SpecRef::Coordination(spec),
            LeaseSpec::Akka(spec) => SpecRef::Akka(spec),
        },
    }
}

/// [`kube_object`] as a JSON document, for the merge patch to edit.
pub fn object_json(object: &StoredObject) -> Value {
    serde_json::to_value(kube_object(object)).unwrap_or(Value::Null)
}

/// A list as Kubernetes clients expect it.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct KubeList<'a> {
    api_version: &'static str,
    kind: String,
    metadata: ListMeta,
    items: Vec<KubeObject<'a>>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ListMeta {
    #[serde(serialize_with = "serialize_as_string")]
    resource_version: u64,
    #[serde(rename = "continue", skip_serializing_if = "Option::is_none")]
    continue_token: Option<String>,
}

/// A list as Kubernetes clients expect it.
pub fn kube_list(kind: ObjectKind, items: &[StoredObject], revision: u64) -> KubeList<'_> {
    kube_page(kind, items, revision, None)
}

/// One page of a list, with the token that asks for the next (`metadata.continue`).
pub fn kube_page(
    kind: ObjectKind,
    items: &[StoredObject],
    revision: u64,
    continue_token: Option<String>,
) -> KubeList<'_> {
    KubeList {
        api_version: kind.api_version(),
        kind: format!("{}List", kind.kind_name()),
        metadata: ListMeta {
            resource_version: revision,
            continue_token,
        },
        items: items.iter().map(kube_object).collect(),
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct IncomingMeta {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    generate_name: Option<String>,
    #[serde(default)]
    namespace: Option<String>,
    #[serde(default)]
    resource_version: Option<String>,
    #[serde(default)]
    uid: Option<String>,
    #[serde(default)]
    labels: Option<BTreeMap<String, String>>,
    #[serde(default)]
    annotations: Option<BTreeMap<String, String>>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct IncomingObject<'a> {
    #[serde(default)]
    api_version: Option<String>,
    #[serde(default)]
    kind: Option<String>,
    #[serde(default)]
    metadata: IncomingMeta,
    /// Left as text until the kind is known, then decoded once into its spec type.
    #[serde(default, borrow)]
    spec: Option<&'a RawValue>,
}

/// An object a client sent, checked for shape but not yet for names.
#[derive(Debug, Clone)]
pub struct Incoming {
    /// `metadata.name`, possibly empty.
    pub name: String,
    /// `metadata.generateName`, possibly empty.
    pub generate_name: String,
    /// `metadata.namespace`, if given.
    pub namespace: Option<String>,
    /// `metadata.resourceVersion`, parsed.
    pub resource_version: Option<u64>,
    /// `metadata.uid`, if given.
    pub uid: Option<String>,
    /// Labels.
    pub labels: BTreeMap<String, String>,
    /// Annotations.
    pub annotations: BTreeMap<String, String>,
    /// The spec for the kind.
    pub spec: LeaseSpec,
}

/// What to do with fields this server does not know (`?fieldValidation=`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FieldValidation {
    /// Drop them silently.
    Ignore,
    /// Drop them (Kubernetes would also add a warning header).
    #[default]
    Warn,
    /// Refuse the request with `400`, naming the field.
    Strict,
}

impl FieldValidation {
    /// Reads `fieldValidation` from a query.
    pub fn from_query(query: &std::collections::HashMap<String, String>) -> Result<Self, KubeError> {
        match query.get("fieldValidation").map(String::as_str) {
            None | Some("") | Some("Warn") => Ok(Self::Warn),
            Some("Ignore") => Ok(Self::Ignore),
            Some("Strict") => Ok(Self::Strict),
            Some(other) => Err(KubeError::bad_request(format!(
                "fieldValidation must be Ignore, Warn or Strict, got {other:?}"
            ))),
        }
    }
}

const TOP_LEVEL_FIELDS: &[&str] = &["apiVersion", "kind", "metadata", "spec", "status"];
/// Metadata fields Kubernetes defines; the ones Drover does not keep are accepted and dropped.
const METADATA_FIELDS: &[&str] = &[
    "name",
    "generateName",
    "namespace",
    "resourceVersion",
    "uid",
    "labels",
    "annotations",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "generation",
    "managedFields",
    "ownerReferences",
    "finalizers",
    "selfLink",
];
const COORDINATION_SPEC_FIELDS: &[&str] = &[
    "holderIdentity",
    "leaseDurationSeconds",
    "acquireTime",
    "renewTime",
    "leaseTransitions",
    "preferredHolder",
    "strategy",
];
const AKKA_SPEC_FIELDS: &[&str] = &["owner", "version", "time"];

fn first_unknown(value: &Value, known: &[&str], prefix: &str) -> Option<String> {
    value
        .as_object()?
        .keys()
        .find(|key| !known.contains(&key.as_str()))
        .map(|key| format!("{prefix}{key}"))
}

fn check_unknown_fields(kind: ObjectKind, document: &Value) -> Result<(), KubeError> {
    let spec_fields = match kind {
        ObjectKind::CoordinationLease => COORDINATION_SPEC_FIELDS,
        ObjectKind::AkkaLease => AKKA_SPEC_FIELDS,
    };
    let unknown = first_unknown(document, TOP_LEVEL_FIELDS, "")
        .or_else(|| first_unknown(&document["metadata"], METADATA_FIELDS, "metadata."))
        .or_else(|| first_unknown(&document["spec"], spec_fields, "spec."));
    match unknown {
        Some(field) => Err(KubeError::bad_request(format!(
            "strict decoding error: unknown field {field:?}"
        ))),
        None => Ok(()),
    }
}

/// Parses a request body as an object of `kind`.
pub fn parse_incoming(
    kind: ObjectKind,
    body: &[u8],
    validation: FieldValidation,
) -> Result<Incoming, KubeError> {
    if validation == FieldValidation::Strict {
        let document: Value = serde_json::from_slice(body)
            .map_err(|e| KubeError::bad_request(format!("the request body is not valid JSON: {e}")))?;
        check_unknown_fields(kind, &document)?;
    }
    let object: IncomingObject = serde_json::from_slice(body).map_err(|e| {
        KubeError::bad_request(format!(
            "the request body is not a valid {} object: {e}",
            kind.kind_name()
        ))
    })?;
    if let Some(api_version) = &object.api_version {
        if api_version != kind.api_version() {
            return Err(KubeError::bad_request(format!(
                "apiVersion {api_version:?} does not match the request path, which serves {:?}",
                kind.api_version()
            )));
        }
    }
    if let Some(object_kind) = &object.kind {
        if object_kind != kind.kind_name() {
            return Err(KubeError::bad_request(format!(
                "kind {object_kind:?} does not match the request path, which serves {:?}",
                kind.kind_name()
            )));
        }
    }
    let spec_text = object.spec.map_or("{}", RawValue::get);
    let spec = match kind {
        ObjectKind::CoordinationLease => {
            serde_json::from_str::<CoordinationLeaseSpec>(spec_text).map(LeaseSpec::Coordination)
        }
        ObjectKind::AkkaLease => serde_json::from_str::<AkkaLeaseSpec>(spec_text).map(LeaseSpec::Akka),
    }
    .map_err(|e| KubeError::bad_request(format!("spec: {e}")))?;
    let resource_version = match object.metadata.resource_version.as_deref() {
        None | Some("") => None,
        Some(text) => Some(text.parse::<u64>().map_err(|_| {
            KubeError::bad_request(format!(
                "metadata.resourceVersion: Invalid value: {text:?}: must be a number this server returned"
            ))
        })?),
    };
    Ok(Incoming {
        name: object.metadata.name.unwrap_or_default(),
        generate_name: object.metadata.generate_name.unwrap_or_default(),
        namespace: object.metadata.namespace.filter(|ns| !ns.is_empty()),
        resource_version,
        uid: object.metadata.uid.filter(|uid| !uid.is_empty()),
        labels: object.metadata.labels.unwrap_or_default(),
        annotations: object.metadata.annotations.unwrap_or_default(),
        spec,
    })
}

#[cfg(test)]
mod tests {
    use drover_model::{ObjectKey, ObjectMeta};
    use serde_json::json;

    use super::*;

    fn stored(spec: LeaseSpec, labels: &[(&str, &str)]) -> StoredObject {
        StoredObject {
            key: ObjectKey::new(spec.kind(), "ns", "a"),
            meta: ObjectMeta {
                uid: "u-1".into(),
                resource_version: 42,
                created_index: 7,
                creation_timestamp: "2026-11-22T18:00:00Z".into(),
                labels: labels
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
                annotations: BTreeMap::new(),
            },
            spec,
        }
    }

    #[test]
    fn objects_have_the_kubernetes_shape() {
        let spec = CoordinationLeaseSpec {
            holder_identity: Some("n1".into()),
            lease_duration_seconds: Some(15),
            ..Default::default()
        };
        let json = object_json(&stored(LeaseSpec::Coordination(spec), &[("app", "x")]));
        assert_eq!(
            json,
            json!({
                "apiVersion": "coordination.k8s.io/v1",
                "kind": "Lease",
                "metadata": {
                    "name": "a",
                    "namespace": "ns",
                    "uid": "u-1",
                    "resourceVersion": "42",
                    "creationTimestamp": "2026-11-22T18:00:00Z",
                    "labels": {"app": "x"},
                },
                "spec": {"holderIdentity": "n1", "leaseDurationSeconds": 15},
            })
        );
        let akka = object_json(&stored(LeaseSpec::Akka(AkkaLeaseSpec::default()), &[]));
        assert_eq!(akka["apiVersion"], "akka.io/v1");
        assert_eq!(akka["spec"]["owner"], "");
        assert!(akka["metadata"].get("labels").is_none());
        assert!(akka["metadata"].get("annotations").is_none());
    }

    #[test]
    fn lists_have_the_kubernetes_shape() {
        let item = stored(LeaseSpec::Akka(AkkaLeaseSpec::default()), &[]);
        let list = serde_json::to_value(kube_list(ObjectKind::AkkaLease, std::slice::from_ref(&item), 9))
            .expect("encode");
        assert_eq!(
            list,
            json!({
                "apiVersion": "akka.io/v1",
                "kind": "LeaseList",
                "metadata": {"resourceVersion": "9"},
                "items": [object_json(&item)],
            })
        );
    }

    #[test]
    fn a_missing_or_null_spec_is_the_empty_spec() {
        for body in [
            &br#"{"metadata":{"name":"a"}}"#[..],
            br#"{"metadata":{"name":"a"},"spec":null}"#,
        ] {
            let incoming =
                parse_incoming(ObjectKind::CoordinationLease, body, FieldValidation::Warn).expect("parses");
            assert_eq!(
                incoming.spec,
                LeaseSpec::Coordination(CoordinationLeaseSpec::default())
            );
        }
    }

    #[test]
    fn parses_a_kubectl_style_lease() {
        let body = br#"{"apiVersion":"coordination.k8s.io/v1","kind":"Lease",
            "metadata":{"name":"a","labels":{"app":"x"}},
            "spec":{"holderIdentity":"n1","leaseDurationSeconds":15}}"#;
        let incoming =
            parse_incoming(ObjectKind::CoordinationLease, body, FieldValidation::Strict).expect("parses");
        assert_eq!(incoming.name, "a");
        assert_eq!(incoming.labels.get("app").map(String::as_str), Some("x"));
        match incoming.spec {
            LeaseSpec::Coordination(spec) => {
                assert_eq!(spec.holder_identity.as_deref(), Some("n1"));
                assert_eq!(spec.lease_duration_seconds, Some(15));
            }
            other => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn strict_validation_names_unknown_fields() {
        let body = br#"{"metadata":{"name":"a","ownerReferences":[]},"spec":{"owner":"x","ownr":"y"}}"#;
        let error = parse_incoming(ObjectKind::AkkaLease, body, FieldValidation::Strict)
            .map(|_| ())
            .unwrap_err();
        assert_eq!(error.code(), 400);
        assert!(error.body()["message"]
            .as_str()
            .unwrap_or("")
            .contains("spec.ownr"));
        assert!(parse_incoming(ObjectKind::AkkaLease, body, FieldValidation::Ignore).is_ok());
    }

    #[test]
    fn refuses_a_wrong_group_and_bad_versions() {
        let wrong = br#"{"apiVersion":"akka.io/v1","kind":"Lease","metadata":{"name":"a"}}"#;
        assert_eq!(
            parse_incoming(ObjectKind::CoordinationLease, wrong, FieldValidation::Warn)
                .map(|_| ())
                .unwrap_err()
                .code(),
            400
        );
        let bad_version = br#"{"metadata":{"name":"a","resourceVersion":"abc"}}"#;
        assert_eq!(
            parse_incoming(ObjectKind::AkkaLease, bad_version, FieldValidation::Warn)
                .map(|_| ())
                .unwrap_err()
                .code(),
            400
        );
        let bad_spec = br#"{"metadata":{"name":"a"},"spec":{"time":"soon"}}"#;
        assert_eq!(
            parse_incoming(ObjectKind::AkkaLease, bad_spec, FieldValidation::Warn)
                .map(|_| ())
                .unwrap_err()
                .code(),
            400
        );
        assert_eq!(
            parse_incoming(ObjectKind::AkkaLease, b"not json", FieldValidation::Warn)
                .map(|_| ())
                .unwrap_err()
                .code(),
            400
        );
    }
}
