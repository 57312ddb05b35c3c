//! A Krake `Cluster` on the wire (`krake.md` §3.2): its spec from the Drover cluster (the
//! kubeconfig's server is the agent's endpoint, its token never shown, the metrics the
//! cluster's) and the extras kept beside it; its status from what the cluster's actor observed
//! (state, reason, the metrics it could not read). Reading a body: Krake's required fields, the
//! kubeconfig as Krake validates it, and a `422` for what Drover does not do (a TOSCA template:
//! Drover does not create clusters through an infrastructure provider).

use drover_model::cluster::{ClusterState, ClusterStatus};
use drover_model::krake::cluster::{
    read_kubeconfig, show_kubeconfig, Backoff, KrakeCluster, KrakeClusterSpecExtras,
};
use drover_model::krake::KrakeKey;
use drover_model::scheduling::metrics::MetricFailureReason;
use drover_model::State;
use serde_json::{json, Map, Value};

use super::fields::{field, metric_refs};
use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine as _;

use super::problem::Problem;

/// Krake's `ReasonCode`s Drover's cluster states map to.
const CLUSTER_NOT_REACHABLE: u32 = 20;
const INTERNAL_ERROR: u32 = 1;

/// Krake's `ReasonCode` of a metric that could not be read.
pub fn metric_reason_code(reason: MetricFailureReason) -> u32 {
    match reason {
        MetricFailureReason::InvalidMetric => 91,
        MetricFailureReason::UnreachableMetricsProvider => 92,
        MetricFailureReason::UnknownMetric => 93,
        MetricFailureReason::UnknownMetricsProvider => 94,
    }
}

/// The spec as Krake shows it.
pub fn spec(key: &KrakeKey, cluster: &KrakeCluster) -> Value {
    let extras = &cluster.extras;
    let constraints = if extras.constraints.is_object() {
        extras.constraints.clone()
    } else {
        json!({"cloud": {"labels": [], "metrics": []}})
    };
    json!({
        "kubeconfig": show_kubeconfig(
            &extras.kubeconfig,
            &key.name,
            &cluster.endpoint,
            cluster.ca.as_ref().map(|ca| BASE64.encode(ca)).as_deref(),
        ),
        "tosca": {},
        "custom_resources": extras.custom_resources,
        "constraints": constraints,
        "metrics": cluster.metrics,
        "backoff": extras.backoff.backoff,
        "backoff_delay": extras.backoff.backoff_delay,
        "backoff_limit": extras.backoff.backoff_limit,
    })
}

/// Krake's reason for a Drover cluster's state (`None` while it is well).
fn reason(status: &ClusterStatus) -> Value {
    let code = match status.state {
        ClusterState::Pending | ClusterState::Online => return Value::Null,
        ClusterState::Offline | ClusterState::Degraded | ClusterState::Connecting => CLUSTER_NOT_REACHABLE,
        ClusterState::FailingMetrics => status
            .metrics
            .failures
            .values()
            .next()
            .map_or(INTERNAL_ERROR, |f| metric_reason_code(f.reason)),
        ClusterState::Unhealthy | ClusterState::NotReady => INTERNAL_ERROR,
    };
    json!({"code": code, "message": status.reason})
}

/// The status as Krake shows it, from the cluster's committed observation (`DELETING` once the
/// cluster is gone).
pub fn status(state: &State, key: &KrakeKey) -> Value {
    let Some(cluster) = state
        .platform()
        .tenant(key.tenant())
        .and_then(|t| t.clusters.get(&key.name))
    else {
        // Gone in the write being answered (a delete whose collection removed it at once).
        return json!({
            "reason": null, "kube_controller_triggered": null, "state": "DELETING",
            "metrics_reasons": {}, "last_applied_tosca": {}, "nodes": [], "cluster_id": null,
            "scheduled": null, "scheduled_to": null, "running_on": null, "retries": 0,
        });
    };
    let observed = &cluster.status;
    let metrics_reasons: Map<String, Value> = observed
        .metrics
        .failures
        .iter()
        .map(|(name, failure)| {
            (
                name.clone(),
                json!({"code": metric_reason_code(failure.reason), "message": failure.message}),
            )
        })
        .collect();
    json!({
        "reason": reason(observed),
        "kube_controller_triggered": null,
        "state": observed.state.as_str(),
        "metrics_reasons": metrics_reasons,
        "last_applied_tosca": {},
        "nodes": [],
        "cluster_id": null,
        "scheduled": null,
        "scheduled_to": null,
        "running_on": null,
        "retries": 0,
    })
}

/// A digest of what a watcher of clusters must see change besides the metadata: the status.
pub fn status_digest(state: &State, key: &KrakeKey) -> u64 {
    super::digest::digest(&status(state, key))
}

/// The PEM a kubeconfig's `certificate-authority-data` holds.
fn decode_ca(data: &str) -> Result<String, Problem> {
    let path = "spec.kubeconfig.clusters.0.cluster.certificate-authority-data";
    let bytes = BASE64
        .decode(data.trim())
        .map_err(|_| Problem::invalid(path, "Not valid base64."))?;
    String::from_utf8(bytes).map_err(|_| Problem::invalid(path, "Not PEM text."))
}

/// Reads a Cluster's spec.
pub fn parse(spec: Option<&Value>) -> Result<KrakeCluster, Problem> {
    let spec = match spec {
        Some(Value::Object(spec)) => spec,
        Some(_) => return Err(Problem::invalid("spec._schema", "Invalid input type.")),
        None => return Err(Problem::invalid("spec", "Missing data for required field.")),
    };
    if spec.get("constraints").is_none_or(Value::is_null) {
        return Err(Problem::invalid(
            "spec.constraints",
            "Missing data for required field.",
        ));
    }
    if spec.get("tosca").is_some_and(|t| !t.is_null() && t != &json!({})) {
        return Err(Problem::invalid(
            "spec.tosca",
            "Drover does not create clusters through an infrastructure provider: register a drover agent by its kubeconfig.",
        ));
    }
    let kubeconfig = match spec.get("kubeconfig") {
        Some(value) if !value.is_null() && value != &json!({}) => value,
        _ => {
            return Err(Problem::invalid(
                "spec._schema",
                "At least one of the following fields must be defined: kubeconfig (Drover registers clusters by their drover agent's kubeconfig).",
            ))
        }
    };
    let read = read_kubeconfig(kubeconfig).map_err(Problem::from)?;
    let ca = match &read.ca_data {
        None => None,
        Some(data) => Some(decode_ca(data)?),
    };
    let metrics = metric_refs(spec, "spec")?;
    let defaults = Backoff::default();
    Ok(KrakeCluster {
        endpoint: read.server,
        ca,
        join_token: read.token,
        metrics,
        extras: KrakeClusterSpecExtras {
            kubeconfig: read.skeleton,
            custom_resources: field(spec, "custom_resources", "spec")?.unwrap_or_default(),
            constraints: spec.get("constraints").cloned().unwrap_or(Value::Null),
            backoff: Backoff {
                backoff: field(spec, "backoff", "spec")?.unwrap_or(defaults.backoff),
                backoff_delay: field(spec, "backoff_delay", "spec")?.unwrap_or(defaults.backoff_delay),
                backoff_limit: field(spec, "backoff_limit", "spec")?.unwrap_or(defaults.backoff_limit),
            },
        },
    })
}
