//! Krake's objects on the wire (`krake.md` §2.1–2.2, §3.1): the envelope `{api, kind,
//! metadata, spec}` (`rules` for a Role, `users` and `roles` for a RoleBinding), the metadata
//! with every field present, times as Python writes them; and the reading of a request body
//! into what Drover stores, with Krake's `422`s.

use std::collections::BTreeMap;

use drover_model::krake::{KrakeBody, KrakeKey, KrakeKind, KrakeMeta, MetaInput, ResourceRef};
use drover_model::krake::{KrakeRole, KrakeRoleBinding};
use drover_model::scheduling::metrics::{
    MetricSpec, PrometheusSpec, ProviderMetric, ProviderSpec, StaticSpec, DEFAULT_PROMETHEUS_TIMEOUT_SECONDS,
};
use drover_model::time::{isoformat_us, parse_rfc3339_us};
use drover_model::State;
use serde::Deserialize;
use serde_json::{json, Map, Value};

use super::fields::{field, required};
use super::problem::Problem;

/// An object as Krake shows it; `state` gives what the object's status is observed from.
pub fn render(state: &State, key: &KrakeKey, meta: &KrakeMeta, body: &KrakeBody) -> Value {
    let mut object = Map::new();
    object.insert("api".into(), json!(key.kind.api()));
    object.insert("kind".into(), json!(key.kind.name()));
    object.insert("metadata".into(), render_meta(key, meta));
    match body {
        KrakeBody::Role(role) => {
            object.insert("rules".into(), json!(role.rules));
        }
        KrakeBody::RoleBinding(binding) => {
            object.insert("users".into(), json!(binding.users));
            object.insert("roles".into(), json!(binding.roles));
        }
        KrakeBody::Metric(spec) => {
            object.insert("spec".into(), json!(spec));
        }
        KrakeBody::MetricsProvider(spec) => {
            let spec = match spec {
                ProviderSpec::Prometheus { prometheus } => {
                    json!({"type": "prometheus", "prometheus": {"url": prometheus.url}})
                }
                ProviderSpec::Static { values } => {
                    json!({"type": "static", "static": {"metrics": values.metrics}})
                }
            };
            object.insert("spec".into(), spec);
        }
        KrakeBody::Cluster(cluster) => {
            object.insert("spec".into(), super::cluster_wire::spec(key, cluster));
            object.insert("status".into(), super::cluster_wire::status(state, key));
        }
        KrakeBody::Application(app) => {
            object.insert("spec".into(), super::app_wire::spec(app));
            object.insert("status".into(), super::app_wire::status(state, key, app));
        }
        KrakeBody::InfrastructureProvider(provider) => {
            object.insert("spec".into(), super::infra_wire::provider_spec(provider));
        }
        KrakeBody::Cloud(cloud) => {
            object.insert("spec".into(), super::infra_wire::cloud_spec(cloud));
            object.insert(
                "status".into(),
                super::infra_wire::cloud_status(state, key, cloud),
            );
        }
    }
    Value::Object(object)
}

fn render_meta(key: &KrakeKey, meta: &KrakeMeta) -> Value {
    json!({
        "name": key.name,
        "namespace": key.namespace,
        "labels": meta.input.labels,
        "finalizers": meta.input.finalizers,
        "uid": meta.uid,
        "created": isoformat_us(meta.created_us),
        "modified": isoformat_us(meta.modified_us),
        "deleted": meta.deleted_us.map(isoformat_us),
        "owners": meta.input.owners,
    })
}

/// A list as Krake shows it, with the version a watch may resume from in
/// `metadata.resourceVersion` (Drover's; Krake's list metadata is empty, and its client ignores
/// fields it does not know).
pub fn render_list(kind: KrakeKind, items: Vec<Value>, version: u64) -> Value {
    json!({
        "api": kind.api(),
        "kind": format!("{}List", kind.name()),
        "metadata": {"resourceVersion": version.to_string()},
        "items": items,
    })
}

/// A request body read: what the writer sets, and the read-only fields as it sent them.
#[derive(Debug, Clone)]
pub struct Incoming {
    /// `metadata.name`.
    pub name: String,
    /// `metadata.namespace`, when the body has one.
    pub namespace: Option<String>,
    /// Labels, finalizers and owners.
    pub input: MetaInput,
    /// The object.
    pub body: KrakeBody,
    /// `uid`, `created`, `modified` and `deleted` as sent (`None` when absent).
    pub readonly: [Option<Value>; 4],
}

impl Incoming {
    /// The `modified` time the writer read, when it sent a valid one.
    pub fn modified_us(&self) -> Option<u64> {
        self.readonly[2]
            .as_ref()
            .and_then(Value::as_str)
            .and_then(parse_rfc3339_us)
    }
}

/// The read-only metadata fields, in [`Incoming::readonly`]'s order.
pub const READONLY: [&str; 4] = ["uid", "created", "modified", "deleted"];

impl Incoming {
    /// What Krake's schema of a full object asks of its read-only fields (an update carries the
    /// object as it was read): `uid`, `created` and `modified` present and not null, the times
    /// valid, `deleted` null or a time.
    pub fn check_full_object(&self) -> Result<(), Problem> {
        for (name, value) in READONLY.iter().zip(&self.readonly) {
            let path = format!("metadata.{name}");
            match value {
                None | Some(Value::Null) if *name == "deleted" => {}
                None => return Err(Problem::invalid(&path, "Missing data for required field.")),
                Some(Value::Null) => return Err(Problem::invalid(&path, "Field may not be null.")),
                Some(Value::String(text)) if *name == "uid" || parse_rfc3339_us(text).is_some() => {}
                Some(_) if *name == "uid" => return Err(Problem::invalid(&path, "Not a valid string.")),
                Some(_) => return Err(Problem::invalid(&path, "Not a valid datetime.")),
            }
        }
        Ok(())
    }
}

/// Krake's Metric spec (unknown fields are ignored, as Krake's schemas do).
#[derive(Deserialize)]
struct MetricWire {
    min: f64,
    max: f64,
    provider: ProviderMetricWire,
}

#[derive(Deserialize)]
struct ProviderMetricWire {
    name: String,
    metric: String,
}

#[derive(Deserialize)]
struct PrometheusWire {
    url: String,
}

#[derive(Deserialize)]
struct StaticWire {
    metrics: BTreeMap<String, f64>,
}

#[derive(Deserialize)]
struct RoleRuleWire {
    api: String,
    resources: Vec<String>,
    namespaces: Vec<String>,
    verbs: Vec<drover_model::krake::Verb>,
}

/// Reads a body of `kind`, and checks it as the apply will.
pub fn parse(kind: KrakeKind, value: &Value) -> Result<Incoming, Problem> {
    let Value::Object(object) = value else {
        return Err(Problem::invalid("_schema", "Invalid input type."));
    };
    for (name, expected) in [("api", kind.api()), ("kind", kind.name())] {
        match object.get(name) {
            None => {}
            Some(Value::String(given)) if given == expected => {}
            Some(_) => return Err(Problem::invalid(name, &format!("Must be equal to {expected}."))),
        }
    }
    let metadata = match object.get("metadata") {
        Some(Value::Object(metadata)) => metadata,
        Some(_) => return Err(Problem::invalid("metadata._schema", "Invalid input type.")),
        None => return Err(Problem::invalid("metadata", "Missing data for required field.")),
    };
    let name: String = required(metadata, "name", "metadata")?;
    let namespace: Option<String> = field(metadata, "namespace", "metadata")?;
    let input = MetaInput {
        labels: field(metadata, "labels", "metadata")?.unwrap_or_default(),
        finalizers: field(metadata, "finalizers", "metadata")?.unwrap_or_default(),
        owners: field::<Vec<ResourceRef>>(metadata, "owners", "metadata")?.unwrap_or_default(),
    };
    let readonly = READONLY.map(|name| metadata.get(name).cloned());
    let body = match kind {
        KrakeKind::Role => {
            let rules: Vec<RoleRuleWire> = required(object, "rules", "")?;
            KrakeBody::Role(KrakeRole {
                rules: rules
                    .into_iter()
                    .map(|r| drover_model::krake::RoleRule {
                        api: r.api,
                        resources: r.resources,
                        namespaces: r.namespaces,
                        verbs: r.verbs,
                    })
                    .collect(),
            })
        }
        KrakeKind::RoleBinding => KrakeBody::RoleBinding(KrakeRoleBinding {
            users: required(object, "users", "")?,
            roles: required(object, "roles", "")?,
        }),
        KrakeKind::GlobalMetric | KrakeKind::Metric => {
            let spec: MetricWire = required(object, "spec", "")?;
            KrakeBody::Metric(MetricSpec {
                min: spec.min,
                max: spec.max,
                provider: ProviderMetric {
                    name: spec.provider.name,
                    metric: spec.provider.metric,
                },
            })
        }
        KrakeKind::GlobalMetricsProvider | KrakeKind::MetricsProvider => {
            KrakeBody::MetricsProvider(parse_provider(object.get("spec"))?)
        }
        KrakeKind::Cluster => KrakeBody::Cluster(super::cluster_wire::parse(object.get("spec"))?),
        KrakeKind::Application => KrakeBody::Application(super::app_wire::parse(object.get("spec"))?),
        KrakeKind::GlobalInfrastructureProvider | KrakeKind::InfrastructureProvider => {
            KrakeBody::InfrastructureProvider(super::infra_wire::parse_provider(object.get("spec"))?)
        }
        KrakeKind::GlobalCloud | KrakeKind::Cloud => {
            KrakeBody::Cloud(super::infra_wire::parse_cloud(object.get("spec"))?)
        }
    };
    // The checks the apply makes, made before anything is proposed (the apply makes them again).
    drover_model::krake::validate::name("metadata.name", &name)?;
    if kind == KrakeKind::Application {
        drover_model::krake::validate::application_name(&name)?;
    }
    drover_model::krake::validate::meta_input(&input)?;
    // An Application's images are held to its tenant's pod security level by the apply.
    drover_model::krake::apply::validate_body(kind, &body, None)?;
    Ok(Incoming {
        name,
        namespace,
        input,
        body,
        readonly,
    })
}

fn parse_provider(spec: Option<&Value>) -> Result<ProviderSpec, Problem> {
    let Some(Value::Object(spec)) = spec else {
        return Err(Problem::invalid("spec", "Missing data for required field."));
    };
    let kind: String = required(spec, "type", "spec")?;
    match kind.as_str() {
        "prometheus" => {
            let wire: PrometheusWire = required(spec, "prometheus", "spec")?;
            Ok(ProviderSpec::Prometheus {
                prometheus: PrometheusSpec {
                    url: wire.url,
                    timeout_seconds: DEFAULT_PROMETHEUS_TIMEOUT_SECONDS,
                },
            })
        }
        "static" => {
            let wire: StaticWire = required(spec, "static", "spec")?;
            Ok(ProviderSpec::Static {
                values: StaticSpec {
                    metrics: wire.metrics,
                },
            })
        }
        "kafka" => Err(Problem::invalid(
            "spec.type",
            "Drover reads metrics from prometheus and static providers; kafka providers are not supported.",
        )),
        other => Err(Problem::invalid(
            "spec.type",
            &format!("Unknown type {other:?}: prometheus or static."),
        )),
    }
}

/// Keeps in an updated body what Krake's shape has no field for, from the stored object: a
/// Prometheus provider's query timeout; and the secrets a reader was shown redacted (a
/// cluster's join token, an infrastructure object's passwords and tokens).
pub fn keep_unshown(body: &mut KrakeBody, stored: &KrakeBody) {
    super::infra_wire::keep_secrets(body, stored);
    if let (KrakeBody::Cluster(cluster), KrakeBody::Cluster(before)) = (&mut *body, stored) {
        // The join token sent back as shown (redacted) is the stored one: a body as read
        // changes nothing.
        if cluster.join_token.is_none() {
            cluster.join_token.clone_from(&before.join_token);
        }
    }
    if let (
        KrakeBody::MetricsProvider(ProviderSpec::Prometheus { prometheus }),
        KrakeBody::MetricsProvider(ProviderSpec::Prometheus { prometheus: before }),
    ) = (body, stored)
    {
        prometheus.timeout_seconds = before.timeout_seconds;
    }
}
