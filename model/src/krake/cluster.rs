//! A Krake `Cluster` (`krake.md` §3.2) is a Drover cluster: its kubeconfig names a
//! `drover agent` as the server and the agent's join token as the user's token. What Krake's
//! shape holds beyond Drover's cluster (the kubeconfig's other entries, custom resources, cloud
//! constraints, backoff fields) is kept beside it, in [`KrakeClusterExtras`]; its endpoint,
//! token, labels and metrics are the Drover cluster's own.

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::error::KrakeError;
use super::meta::KrakeMeta;
use crate::scheduling::metrics::MetricRef;

/// What a Krake reader sees in place of the join token.
pub const REDACTED_TOKEN: &str = "<redacted: the join token is never shown>";

/// A Krake cluster's content as a write gives it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KrakeCluster {
    /// The agent's endpoint (the kubeconfig's server).
    pub endpoint: String,
    /// The CA (PEM) of the agent's certificate (the kubeconfig cluster's
    /// `certificate-authority-data`, decoded): the Drover cluster's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ca: Option<String>,
    /// The join token (the kubeconfig user's token); `None` keeps the stored one (a reader
    /// sends back what it read, which never shows it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub join_token: Option<String>,
    /// The metrics it is scored on (the Drover cluster's).
    #[serde(default)]
    pub metrics: Vec<MetricRef>,
    /// The rest of Krake's shape.
    pub extras: KrakeClusterSpecExtras,
}

/// What a Krake cluster's spec holds that a Drover cluster has no field for.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct KrakeClusterSpecExtras {
    /// The kubeconfig without its server and token (names, other fields), as the writer gave it.
    pub kubeconfig: Value,
    /// Custom resources it advertises (`plural.group`), for applications' constraints.
    #[serde(default)]
    pub custom_resources: Vec<String>,
    /// Cloud constraints (used by Krake's infrastructure scheduling), kept as given.
    #[serde(default)]
    pub constraints: Value,
    /// Krake's backoff fields.
    #[serde(default)]
    pub backoff: Backoff,
}

/// Krake's `backoff`, `backoff_delay` (s) and `backoff_limit` (-1: no limit).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Backoff {
    /// Multiplier of the delay between attempts.
    pub backoff: i64,
    /// Seconds between attempts.
    pub backoff_delay: i64,
    /// Most attempts; -1 for no limit.
    pub backoff_limit: i64,
}

impl Default for Backoff {
    fn default() -> Self {
        Self {
            backoff: 1,
            backoff_delay: 1,
            backoff_limit: -1,
        }
    }
}

/// The Krake side of a stored cluster: its metadata and the spec's extras.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KrakeClusterExtras {
    /// Krake metadata (its labels are the Drover cluster's, not kept here).
    pub meta: KrakeMeta,
    /// The spec's extras.
    pub spec: KrakeClusterSpecExtras,
}

fn kubeconfig_error(message: impl Into<String>) -> KrakeError {
    KrakeError::invalid("spec.kubeconfig", message)
}

/// The one entry of a kubeconfig list (`clusters`, `users`, `contexts`), as Krake validates.
fn only<'a>(kubeconfig: &'a Value, list: &str, what: &str) -> Result<&'a Value, KrakeError> {
    match kubeconfig.get(list).and_then(Value::as_array).map(Vec::as_slice) {
        Some([one]) => Ok(one),
        Some([]) | None => Err(kubeconfig_error(format!(
            "Invalid kube-config file. Expected key {list} in kube-config"
        ))),
        Some(_) => Err(kubeconfig_error(format!("Only one {what} is allowed"))),
    }
}

/// Reads a kubeconfig as Krake validates it (exactly one context, user and cluster) and as
/// Drover reads it: the cluster's `server` is the agent's endpoint (`http(s)://host:port`), the
/// user's `token` the join token, the cluster's `certificate-authority-data` (base64 PEM) the
/// CA of an `https://` agent. Returns them and the kubeconfig without them.
pub fn read_kubeconfig(kubeconfig: &Value) -> Result<ReadKubeconfig, KrakeError> {
    if !kubeconfig.is_object() {
        return Err(kubeconfig_error("Not a valid mapping type."));
    }
    let context = only(kubeconfig, "contexts", "context")?;
    let user = only(kubeconfig, "users", "user")?;
    let cluster = only(kubeconfig, "clusters", "cluster")?;
    let named = |entry: &Value, list: &str| -> Result<String, KrakeError> {
        entry
            .get("name")
            .and_then(Value::as_str)
            .map(str::to_string)
            .ok_or_else(|| kubeconfig_error(format!("the entry of {list} has no name")))
    };
    let (cluster_name, user_name) = (named(cluster, "clusters")?, named(user, "users")?);
    let context_of = context.get("context").unwrap_or(&Value::Null);
    if context_of.get("cluster").and_then(Value::as_str) != Some(cluster_name.as_str())
        || context_of.get("user").and_then(Value::as_str) != Some(user_name.as_str())
    {
        return Err(kubeconfig_error(
            "the context must name the kubeconfig's cluster and user",
        ));
    }
    let server = cluster
        .get("cluster")
        .and_then(|c| c.get("server"))
        .and_then(Value::as_str)
        .ok_or_else(|| {
            kubeconfig_error("the cluster has no server: name the drover agent's address (http://host:port)")
        })?
        .to_string();
    let token = user
        .get("user")
        .and_then(|u| u.get("token"))
        .and_then(Value::as_str);
    let token = match token {
        Some(REDACTED_TOKEN) => None,
        Some(token) => Some(token.to_string()),
        None => {
            return Err(kubeconfig_error(
                "the user has no token: Drover's agents authenticate the control plane by their join token (users[0].user.token)",
            ))
        }
    };
    let ca_data = match cluster.get("cluster").and_then(|c| c.get(CA_DATA)) {
        None | Some(Value::Null) => None,
        Some(Value::String(data)) => Some(data.clone()),
        Some(_) => {
            return Err(kubeconfig_error(format!(
                "the cluster's {CA_DATA} is base64 text"
            )))
        }
    };
    let mut skeleton = kubeconfig.clone();
    if let Some(entry) = skeleton.pointer_mut("/clusters/0/cluster") {
        if let Some(map) = entry.as_object_mut() {
            map.remove("server");
            map.remove(CA_DATA);
        }
    }
    if let Some(entry) = skeleton.pointer_mut("/users/0/user") {
        if let Some(map) = entry.as_object_mut() {
            map.remove("token");
        }
    }
    Ok(ReadKubeconfig {
        server,
        token,
        ca_data,
        skeleton,
    })
}

/// The kubeconfig cluster's field that holds the CA (base64 of PEM).
pub const CA_DATA: &str = "certificate-authority-data";

/// What Drover reads of a kubeconfig.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadKubeconfig {
    /// The cluster's server: the agent's endpoint.
    pub server: String,
    /// The user's token (`None`: shown redacted, the stored one is kept).
    pub token: Option<String>,
    /// The cluster's `certificate-authority-data`, as given (base64).
    pub ca_data: Option<String>,
    /// The kubeconfig without them.
    pub skeleton: Value,
}

/// The kubeconfig a reader sees: the skeleton with the endpoint as server, the CA (base64, as
/// `ca_data`) and the token redacted. A cluster registered through the platform API has no
/// skeleton: one is made with the cluster's name for every entry.
pub fn show_kubeconfig(skeleton: &Value, name: &str, endpoint: &str, ca_data: Option<&str>) -> Value {
    let mut kubeconfig = if skeleton.is_object() {
        skeleton.clone()
    } else {
        json!({
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": name, "cluster": {}}],
            "users": [{"name": name, "user": {}}],
            "contexts": [{"name": name, "context": {"cluster": name, "user": name}}],
            "current-context": name,
        })
    };
    if let Some(Value::Object(map)) = kubeconfig.pointer_mut("/clusters/0/cluster") {
        map.insert("server".into(), json!(endpoint));
        if let Some(data) = ca_data {
            map.insert(CA_DATA.into(), json!(data));
        }
    }
    if let Some(Value::Object(map)) = kubeconfig.pointer_mut("/users/0/user") {
        map.insert("token".into(), json!(REDACTED_TOKEN));
    }
    kubeconfig
}
