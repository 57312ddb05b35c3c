//! A Krake `Application` (`krake.md` §3.2) is a Drover service of the tenant its namespace
//! names: its manifest becomes the service's roles ([`super::manifest`]), its constraints the
//! service's, and it runs through Drover's scheduler, service actors and agents like any other
//! service. What Krake's shape holds beyond the service (the manifest as written, the observer
//! schema, the hooks, the backoff fields) is kept beside it in [`KrakeApplicationExtras`], with
//! the hook tokens the server issued and where a deletion waiting for the `shutdown` hook
//! stands ([`Cleaning`]).
//!
//! Pure: [`deployment_of`] is what an Application runs; [`phase_of`] is the Krake state a
//! service's committed status shows.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::cluster::Backoff;
use super::error::KrakeError;
use super::manifest::translate;
use super::meta::KrakeMeta;
use crate::limits::{json_depth, MAX_JSON_DEPTH};
use crate::service::reconcile::Phase;
use crate::service::{Constraints, Deployment, Service};

/// Most bytes of an Application's manifest and observer schema together.
pub const MAX_MANIFEST_BYTES: usize = 256 * 1024;

/// Most seconds of a shutdown grace time (a day).
pub const MAX_GRACE_SECONDS: u64 = 86_400;

/// The environment variables an instance finds its hooks in (Krake's defaults).
pub const COMPLETE_URL_ENV: &str = "KRAKE_COMPLETE_URL";
/// See [`COMPLETE_URL_ENV`].
pub const COMPLETE_TOKEN_ENV: &str = "KRAKE_COMPLETE_TOKEN";
/// See [`COMPLETE_URL_ENV`].
pub const SHUTDOWN_URL_ENV: &str = "KRAKE_SHUTDOWN_URL";
/// See [`COMPLETE_URL_ENV`].
pub const SHUTDOWN_TOKEN_ENV: &str = "KRAKE_SHUTDOWN_TOKEN";

/// The Service an application with the `shutdown` hook exposes, which the leader calls
/// (`PUT http://<its address>/shutdown`) before deleting it.
pub const SHUTDOWN_SERVICE: &str = "shutdown";

/// Krake's cluster constraints of an application.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ClusterConstraints {
    /// Label constraints (`location is DE`, `location in (DE, SK)`, …).
    #[serde(default)]
    pub labels: Vec<String>,
    /// Custom resources (`plural.group`) the cluster must advertise.
    #[serde(default)]
    pub custom_resources: Vec<String>,
    /// Metric constraints (`load < 0.8`, …).
    #[serde(default)]
    pub metrics: Vec<String>,
}

/// A Krake application's content as a write gives it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KrakeApplication {
    /// The Kubernetes manifest, as written.
    pub manifest: Vec<Value>,
    /// The custom observer schema, kept as written (Drover observes its instances itself).
    #[serde(default)]
    pub observer_schema: Vec<Value>,
    /// Where it may run.
    #[serde(default)]
    pub constraints: ClusterConstraints,
    /// May it move when its cluster fails (Krake's `constraints.migration`).
    pub migration: bool,
    /// `complete` and/or `shutdown`.
    #[serde(default)]
    pub hooks: Vec<String>,
    /// Seconds the `shutdown` hook has before the application is `DEGRADED`.
    pub shutdown_grace_time: u64,
    /// Krake's backoff fields, kept.
    #[serde(default)]
    pub backoff: Backoff,
    /// Tokens the node issued for this write; the apply keeps the stored ones and takes these
    /// only for a hook that has none yet (so every replica stores the same).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub issued: Option<IssuedHooks>,
}

/// What the node that took a write issued for an application's hooks.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IssuedHooks {
    /// The base URL of the API the hooks are called at (Krake's `external_endpoint`).
    pub endpoint: String,
    /// A new `complete` token.
    pub complete_token: String,
    /// A new `shutdown` token.
    pub shutdown_token: String,
}

/// The hooks' tokens and URL an application holds.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct HookTokens {
    /// The API base URL.
    #[serde(default)]
    pub endpoint: String,
    /// The `complete` token, while the hook is on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub complete: Option<String>,
    /// The `shutdown` token, while the hook is on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shutdown: Option<String>,
}

/// Where a deletion that waits for the `shutdown` hook stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum Cleaning {
    /// The application was asked to shut down and has until `until_ms` to call back.
    Waiting {
        /// Committed time the grace ends at.
        until_ms: u64,
    },
    /// It called back (or `complete` was called): the deletion goes on.
    Ready,
}

/// The Krake side of a stored application.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KrakeApplicationExtras {
    /// Krake metadata.
    pub meta: KrakeMeta,
    /// The spec as written (without `issued`).
    pub spec: KrakeApplication,
    /// Its hooks' tokens.
    #[serde(default)]
    pub tokens: HookTokens,
    /// A deletion waiting for the `shutdown` hook.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cleaning: Option<Cleaning>,
    /// Where each of the manifest's Services listens (its first port's target), read once when
    /// the manifest is written rather than at every read of the status.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub ports: BTreeMap<String, u16>,
}

impl KrakeApplication {
    /// Whether hook `name` is on.
    pub fn hook(&self, name: &str) -> bool {
        self.hooks.iter().any(|h| h == name)
    }

    /// Checks what the apply checks: the manifest runs, the hooks are known, the sizes bounded.
    pub fn validate(&self) -> Result<(), KrakeError> {
        for hook in &self.hooks {
            if hook != "complete" && hook != "shutdown" {
                return Err(KrakeError::invalid(
                    "spec.hooks",
                    format!("Unknown hook {hook:?}: complete or shutdown."),
                ));
            }
        }
        if self.shutdown_grace_time == 0 || self.shutdown_grace_time > MAX_GRACE_SECONDS {
            return Err(KrakeError::invalid(
                "spec.shutdown_grace_time",
                format!("1 to {MAX_GRACE_SECONDS} seconds"),
            ));
        }
        for (field, list) in [
            ("spec.constraints.cluster.labels", &self.constraints.labels),
            ("spec.constraints.cluster.metrics", &self.constraints.metrics),
            (
                "spec.constraints.cluster.custom_resources",
                &self.constraints.custom_resources,
            ),
        ] {
            if list.len() > super::validate::MAX_LIST || list.iter().any(|e| e.is_empty() || e.len() > 255) {
                return Err(KrakeError::invalid(
                    field,
                    format!(
                        "at most {} entries of 1 to 255 characters",
                        super::validate::MAX_LIST
                    ),
                ));
            }
        }
        for (field, values) in [
            ("spec.manifest", &self.manifest),
            ("spec.observer_schema", &self.observer_schema),
        ] {
            if values.iter().any(|v| json_depth(v) > MAX_JSON_DEPTH) {
                return Err(KrakeError::invalid(
                    field,
                    format!("nests at most {MAX_JSON_DEPTH} levels deep"),
                ));
            }
        }
        let size = serde_json::to_vec(&self.manifest).map_or(usize::MAX, |b| b.len())
            + serde_json::to_vec(&self.observer_schema).map_or(usize::MAX, |b| b.len());
        if size > MAX_MANIFEST_BYTES {
            return Err(KrakeError::invalid(
                "spec.manifest",
                format!("the manifest and observer schema take at most {MAX_MANIFEST_BYTES} bytes"),
            ));
        }
        Ok(())
    }
}

/// The owner reference of the cluster an application runs on (Krake's binding adds it; Drover
/// derives it from the placement, never stores it).
pub fn cluster_owner(cluster: &crate::cluster::ClusterRef) -> super::meta::ResourceRef {
    super::meta::ResourceRef {
        api: "kubernetes".to_string(),
        namespace: Some(cluster.tenant.clone()),
        kind: "Cluster".to_string(),
        name: cluster.name.clone(),
    }
}

/// The hook URL of `hook` for the application `name` in `namespace`.
pub fn hook_url(endpoint: &str, namespace: &str, name: &str, hook: &str) -> String {
    format!(
        "{}/kubernetes/namespaces/{namespace}/applications/{name}/{hook}",
        endpoint.trim_end_matches('/')
    )
}

/// What an application runs: its manifest's roles (its pods held to `security`, the tenant's
/// pod security level), each instance told its hooks' URLs and tokens, under its constraints;
/// and where each of its Services listens (the first port's target, or the host port a pod's
/// container port of that number is forwarded from).
pub fn deployment_of(
    namespace: &str,
    name: &str,
    app: &KrakeApplication,
    tokens: &HookTokens,
    security: crate::pod_security::PodSecurity,
) -> Result<(Deployment, BTreeMap<String, u16>), KrakeError> {
    let translated = translate(&app.manifest, security)?;
    // A pod's container port forwarded from the machine is reached at the machine's port.
    let forwarded: BTreeMap<u16, u16> = translated
        .roles
        .values()
        .filter_map(|role| role.exec.pod.as_ref())
        .flat_map(|pod| pod.containers.iter().flat_map(|c| &c.ports))
        .filter_map(|port| Some((port.container_port, port.host_port?)))
        .collect();
    let ports = translated
        .services
        .iter()
        .filter_map(|(name, ports)| {
            let target = ports.first()?.1;
            Some((name.clone(), forwarded.get(&target).copied().unwrap_or(target)))
        })
        .collect();
    let mut hook_env = BTreeMap::new();
    if let Some(token) = &tokens.complete {
        hook_env.insert(
            COMPLETE_URL_ENV.to_string(),
            hook_url(&tokens.endpoint, namespace, name, "complete"),
        );
        hook_env.insert(COMPLETE_TOKEN_ENV.to_string(), token.clone());
    }
    if let Some(token) = &tokens.shutdown {
        hook_env.insert(
            SHUTDOWN_URL_ENV.to_string(),
            hook_url(&tokens.endpoint, namespace, name, "shutdown"),
        );
        hook_env.insert(SHUTDOWN_TOKEN_ENV.to_string(), token.clone());
    }
    let roles = translated
        .roles
        .into_iter()
        .map(|(role, mut spec)| {
            spec.env.extend(hook_env.clone());
            (role, spec)
        })
        .collect();
    let deployment = Deployment {
        roles,
        parameters: Value::Object(Default::default()),
        resources: Vec::new(),
        channels: Default::default(),
        constraints: Constraints {
            labels: app.constraints.labels.clone(),
            metrics: app.constraints.metrics.clone(),
            custom_resources: app.constraints.custom_resources.clone(),
            migration: app.migration,
        },
        source: None,
    };
    deployment.validate().map_err(|error| match error {
        crate::platform::error::PlatformError::Invalid { field, message } => {
            KrakeError::invalid(format!("spec.{field}"), message)
        }
        other => KrakeError::invalid("spec", other.to_string()),
    })?;
    Ok((deployment, ports))
}

/// Krake's application states (§4.1) Drover shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AppState {
    /// Not placed yet (or its revision waits for the tenant's acceptance).
    Pending,
    /// Its instances are starting on the cluster it was first placed on.
    Creating,
    /// Exactly its instances run, all ready.
    Running,
    /// A later revision is rolling out.
    Reconciling,
    /// It moves to another cluster (create-first).
    Migrating,
    /// Its cluster does not answer, or its cluster refuses it.
    Degraded,
    /// Deleted: waiting for the `shutdown` hook's call.
    WaitingForCleaning,
    /// The hook was called: the deletion goes on.
    ReadyForAction,
    /// Deleted: its instances are being removed.
    Deleting,
    /// The agent refuses what it runs.
    Failed,
}

impl AppState {
    /// The enum name Krake writes.
    pub fn as_str(self) -> &'static str {
        match self {
            AppState::Pending => "PENDING",
            AppState::Creating => "CREATING",
            AppState::Running => "RUNNING",
            AppState::Reconciling => "RECONCILING",
            AppState::Migrating => "MIGRATING",
            AppState::Degraded => "DEGRADED",
            AppState::WaitingForCleaning => "WAITING_FOR_CLEANING",
            AppState::ReadyForAction => "READY_FOR_ACTION",
            AppState::Deleting => "DELETING",
            AppState::Failed => "FAILED",
        }
    }
}

/// The Krake state of an application whose service is `service` (`None`: gone), at committed
/// time `now_ms` (a shutdown grace that has passed shows `DEGRADED`).
pub fn phase_of(extras: &KrakeApplicationExtras, service: Option<&Service>, now_ms: u64) -> AppState {
    match extras.cleaning {
        Some(Cleaning::Waiting { until_ms }) if now_ms > until_ms => return AppState::Degraded,
        Some(Cleaning::Waiting { .. }) => return AppState::WaitingForCleaning,
        Some(Cleaning::Ready) if service.is_some_and(|s| s.deleting_ms.is_none()) => {
            return AppState::ReadyForAction
        }
        _ => {}
    }
    let Some(service) = service else {
        return AppState::Deleting;
    };
    if service.deleting_ms.is_some() {
        return AppState::Deleting;
    }
    if service.current.is_none() || service.placement.is_none() {
        return AppState::Pending;
    }
    if service.migrating_to.is_some() {
        return AppState::Migrating;
    }
    match service.reconcile.phase {
        Phase::Running => AppState::Running,
        Phase::Waiting => AppState::Pending,
        Phase::Progressing if service.current == Some(1) => AppState::Creating,
        Phase::Progressing => AppState::Reconciling,
        Phase::Unreachable => AppState::Degraded,
        Phase::Deleting => AppState::Deleting,
        Phase::Failed => AppState::Failed,
    }
}

/// Where the application's Services listen on a cluster whose agent is at `host`
/// (`host:port`; Drover allocates no ports, an instance listens where its command says). A
/// Service whose target is the container port of a pod on a network of its own (no host
/// port, not the host's network) is reached at the address of one of its running pods (the
/// first of `service`'s endpoints), as a pod's port is in Kubernetes; it has none while no
/// pod of it runs.
pub fn service_addresses(
    extras: &KrakeApplicationExtras,
    host: &str,
    service: Option<&Service>,
) -> BTreeMap<String, String> {
    let deployment = service
        .and_then(|s| s.revisions.get(&s.current?))
        .map(|revision| &revision.deployment);
    let endpoints = service.map_or(&[][..], |s| &s.reconcile.endpoints[..]);
    addresses(&extras.ports, host, deployment, endpoints)
}

/// [`service_addresses`] of Services listening at `ports`, for `deployment`, the revision that
/// runs, whose running pods are at `endpoints`.
fn addresses(
    ports: &BTreeMap<String, u16>,
    host: &str,
    deployment: Option<&Deployment>,
    endpoints: &[String],
) -> BTreeMap<String, String> {
    let pod_ports = deployment.map(own_network_ports).unwrap_or_default();
    ports
        .iter()
        .filter_map(|(name, port)| {
            let at = if pod_ports.contains(port) {
                endpoints.first()?.as_str()
            } else {
                host
            };
            Some((name.clone(), format!("{at}:{port}")))
        })
        .collect()
}

/// The container ports of `deployment`'s pods that have a network of their own and are not
/// forwarded from the machine (nor is any host port of that number).
fn own_network_ports(deployment: &Deployment) -> BTreeSet<u16> {
    let ports = || {
        deployment
            .roles
            .values()
            .filter_map(|role| role.exec.pod.as_ref())
            .filter(|pod| !pod.host_network)
            .flat_map(|pod| pod.containers.iter().flat_map(|c| &c.ports))
    };
    let forwarded: BTreeSet<u16> = ports().filter_map(|p| p.host_port).collect();
    ports()
        .filter(|p| p.host_port.is_none() && !forwarded.contains(&p.container_port))
        .map(|p| p.container_port)
        .collect()
}

/// The host of an agent endpoint (`http://host:port` → `host`).
pub fn agent_host(endpoint: &str) -> &str {
    let rest = endpoint.split_once("://").map_or(endpoint, |(_, rest)| rest);
    let authority = rest.split('/').next().unwrap_or(rest);
    authority.rsplit_once(':').map_or(authority, |(host, _)| host)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::pod_security::PodSecurity;

    /// The deployment and Service ports of an application of one Deployment whose pod spec is
    /// `pod`, with a Service targeting 8080.
    fn translated(pod: Value) -> (Deployment, BTreeMap<String, u16>) {
        let app = KrakeApplication {
            manifest: vec![
                json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
                       "spec": {"replicas": 2, "template": {"spec": pod}}}),
                json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "front"},
                       "spec": {"ports": [{"port": 80, "targetPort": 8080}]}}),
            ],
            observer_schema: Vec::new(),
            constraints: Default::default(),
            migration: true,
            hooks: Vec::new(),
            shutdown_grace_time: 30,
            backoff: Backoff::default(),
            issued: None,
        };
        deployment_of(
            "ns1",
            "site",
            &app,
            &HookTokens::default(),
            PodSecurity::Privileged,
        )
        .expect("a manifest Drover runs")
    }

    #[test]
    fn a_service_is_reported_where_it_answers() {
        let image = |ports: Value, host_network: bool| {
            json!({"hostNetwork": host_network,
                   "containers": [{"name": "web", "image": "127.0.0.1:5000/web:v1", "ports": ports}]})
        };
        let pods = ["10.88.0.4".to_string(), "10.88.0.9".to_string()];
        let cases: Vec<(&str, Value, &[String], Option<&str>)> = vec![
            (
                "a program listens on the agent's host",
                json!({"containers": [{"name": "web", "image": "exec", "command": ["sleep", "9"]}]}),
                &pods,
                Some("127.0.0.1:8080"),
            ),
            (
                "a pod's own port: at its first running pod",
                image(json!([{"containerPort": 8080}]), false),
                &pods,
                Some("10.88.0.4:8080"),
            ),
            (
                "a pod's own port while no pod runs: nowhere",
                image(json!([{"containerPort": 8080}]), false),
                &[],
                None,
            ),
            (
                "a port forwarded from the machine: the machine's port",
                image(json!([{"containerPort": 8080, "hostPort": 18080}]), false),
                &pods,
                Some("127.0.0.1:18080"),
            ),
            (
                "the machine's network: the machine's port",
                image(json!([{"containerPort": 8080}]), true),
                &pods,
                Some("127.0.0.1:8080"),
            ),
        ];
        for (case, pod, endpoints, expected) in cases {
            let (deployment, ports) = translated(pod);
            let shown = addresses(&ports, "127.0.0.1", Some(&deployment), endpoints);
            assert_eq!(shown.get("front").map(String::as_str), expected, "{case}");
        }
    }
}
