//! A workload whose containers name container images (not `exec`): ONE role named after the
//! workload, whose instances are pods ([`PodSpec`] in the role's exec spec) holding every
//! container of the template — image, pull policy, command, args, env, working directory,
//! ports, limits, readiness and liveness probes — with the pod's restart policy, termination
//! grace, host network and pull credentials ([`super::manifest_secret`]). The containers'
//! requests, summed, are the role's (what the scheduler places); a container's limits are the
//! runtime's cgroup limits (a request left out is its limit, as in Kubernetes).
//!
//! Everything Drover does not honour is refused by its manifest path, never dropped; so is what
//! a `container` agent would refuse ([`check_pod`], its fields named back in the manifest's
//! words). Pure.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use super::error::KrakeError;
use super::manifest_secret::{pull_auth, PullSecrets};
use super::manifest_values::{cpu_millis, env, memory_mib};
use crate::cluster::agent_api::{ExecSpec, Resources};
use crate::cluster::pod::{
    check_pod, ContainerPort, ContainerSpec, PodProbe, PodSpec, PortProtocol, ProbeAction, PullPolicy,
    RestartPolicy,
};
use crate::service::RoleSpec;
use crate::validation::is_label;

/// A pod's fields Drover reads (`hostPID` and `hostIPC` only as `false`, which is what runs).
const POD_FIELDS: [&str; 7] = [
    "containers",
    "restartPolicy",
    "terminationGracePeriodSeconds",
    "hostNetwork",
    "imagePullSecrets",
    "hostPID",
    "hostIPC",
];

/// An image container's fields Drover reads (the `terminationMessage*` pair without effect).
const CONTAINER_FIELDS: [&str; 14] = [
    "name",
    "image",
    "imagePullPolicy",
    "command",
    "args",
    "env",
    "workingDir",
    "ports",
    "resources",
    "readinessProbe",
    "livenessProbe",
    "securityContext",
    "terminationMessagePath",
    "terminationMessagePolicy",
];

/// Whether `image` says "run `command` as a process" rather than naming a container image.
pub fn is_exec_image(image: &str) -> bool {
    image == "exec" || image.starts_with("exec:")
}

/// One workload's pod template, where it is in the manifest.
pub struct Workload<'a> {
    /// The workload's name (the role's).
    pub name: &'a str,
    /// `Deployment`, `StatefulSet`, `Job` or `Pod`.
    pub kind: &'a str,
    /// Its replicas.
    pub replicas: u32,
    /// The pod spec.
    pub pod: &'a Map<String, Value>,
    /// The pod spec's path (`spec.manifest.0.spec.template.spec`).
    pub path: String,
    /// The workload's own path (`spec.manifest.0`).
    pub item: String,
}

fn refuse(path: &str, message: impl Into<String>) -> KrakeError {
    KrakeError::invalid(path, message)
}

fn strings(value: Option<&Value>, path: &str) -> Result<Vec<String>, KrakeError> {
    match value {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(items)) => items
            .iter()
            .map(|v| {
                v.as_str()
                    .map(str::to_string)
                    .ok_or_else(|| refuse(path, "a list of strings"))
            })
            .collect(),
        Some(_) => Err(refuse(path, "a list of strings")),
    }
}

fn small(value: Option<&Value>, path: &str) -> Result<Option<u32>, KrakeError> {
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(v) => v
            .as_u64()
            .and_then(|n| u32::try_from(n).ok())
            .map(Some)
            .ok_or_else(|| refuse(path, "a whole number from 0")),
    }
}

/// Only `false` (or nothing) is what Drover runs.
fn false_only(value: Option<&Value>, path: &str, what: &str) -> Result<(), KrakeError> {
    match value {
        None | Some(Value::Null) | Some(Value::Bool(false)) => Ok(()),
        _ => Err(refuse(
            path,
            format!("Drover never runs {what}: leave it out or false"),
        )),
    }
}

/// The role a workload of image containers makes.
pub fn pod_role(workload: &Workload<'_>, secrets: &PullSecrets) -> Result<(String, RoleSpec), KrakeError> {
    let path = &workload.path;
    for key in workload.pod.keys() {
        if !POD_FIELDS.contains(&key.as_str()) {
            return Err(refuse(
                &format!("{path}.{key}"),
                "Drover does not honour this field of a pod (no volumes, init containers, security context, affinity …): leave it out",
            ));
        }
    }
    for key in ["hostPID", "hostIPC"] {
        false_only(
            workload.pod.get(key),
            &format!("{path}.{key}"),
            "a pod in the host's namespaces",
        )?;
    }
    let containers = workload
        .pod
        .get("containers")
        .and_then(Value::as_array)
        .ok_or_else(|| refuse(&format!("{path}.containers"), "a pod needs containers"))?;
    let mut specs = Vec::with_capacity(containers.len());
    let mut requests = Resources::default();
    for (index, container) in containers.iter().enumerate() {
        let (spec, request) = container_spec(container, &format!("{path}.containers.{index}"))?;
        requests = requests.plus(request);
        specs.push(spec);
    }
    let images: Vec<String> = specs.iter().map(|c| c.image.clone()).collect();
    let pod = PodSpec {
        containers: specs,
        restart_policy: restart_policy(workload)?,
        host_network: match workload.pod.get("hostNetwork") {
            None | Some(Value::Null) => false,
            Some(Value::Bool(on)) => *on,
            Some(_) => return Err(refuse(&format!("{path}.hostNetwork"), "true or false")),
        },
        termination_grace_secs: small(
            workload.pod.get("terminationGracePeriodSeconds"),
            &format!("{path}.terminationGracePeriodSeconds"),
        )?
        .unwrap_or(30),
        pull_auth: pull_auth(
            workload.pod.get("imagePullSecrets"),
            &format!("{path}.imagePullSecrets"),
            &images,
            secrets,
        )?,
    };
    check_pod(&pod).map_err(|error| refuse(&manifest_field(path, &error.field), error.reason))?;
    if pod.host_network {
        host_ports_are_container_ports(&pod, path)?;
    }
    if !is_label(workload.name) || workload.name.len() > 40 {
        return Err(refuse(
            &format!("{}.metadata.name", workload.item),
            format!(
                "the role {:?} (the workload's name) must be 1-40 lower-case letters, digits or '-'",
                workload.name
            ),
        ));
    }
    Ok((
        workload.name.to_string(),
        RoleSpec {
            instances: workload.replicas,
            resources: requests,
            exec: ExecSpec {
                argv: Vec::new(),
                probe: None,
                files: BTreeMap::new(),
                pod: Some(pod),
            },
            env: BTreeMap::new(),
        },
    ))
}

/// On the machine's network a container listens on the machine's ports: a host port other
/// than its container port is refused, as Kubernetes does.
fn host_ports_are_container_ports(pod: &PodSpec, path: &str) -> Result<(), KrakeError> {
    for (c, container) in pod.containers.iter().enumerate() {
        for (p, port) in container.ports.iter().enumerate() {
            if port.host_port.is_some_and(|host| host != port.container_port) {
                return Err(refuse(
                    &format!("{path}.containers.{c}.ports.{p}.hostPort"),
                    "with hostNetwork a host port is its container port (or left out)",
                ));
            }
        }
    }
    Ok(())
}

/// `check_pod`'s field (`exec.pod.containers[1].readiness`) in the manifest's words
/// (`<pod path>.containers.1.readinessProbe`).
fn manifest_field(pod_path: &str, field: &str) -> String {
    let inner = field.strip_prefix("exec.pod.").unwrap_or(field);
    let dotted = inner.replace('[', ".").replace(']', "");
    let renamed: Vec<&str> = dotted
        .split('.')
        .map(|part| match part {
            "readiness" => "readinessProbe",
            "liveness" => "livenessProbe",
            "terminationGraceSecs" => "terminationGracePeriodSeconds",
            "pullAuth" => "imagePullSecrets",
            other => other,
        })
        .collect();
    format!("{pod_path}.{}", renamed.join("."))
}

fn restart_policy(workload: &Workload<'_>) -> Result<RestartPolicy, KrakeError> {
    let path = format!("{}.restartPolicy", workload.path);
    let given = match workload.pod.get("restartPolicy") {
        None | Some(Value::Null) => None,
        Some(Value::String(policy)) => Some(match policy.as_str() {
            "Always" => RestartPolicy::Always,
            "OnFailure" => RestartPolicy::OnFailure,
            "Never" => RestartPolicy::Never,
            _ => return Err(refuse(&path, "Always, OnFailure or Never")),
        }),
        Some(_) => return Err(refuse(&path, "Always, OnFailure or Never")),
    };
    match (workload.kind, given) {
        ("Job", Some(policy @ (RestartPolicy::OnFailure | RestartPolicy::Never))) => Ok(policy),
        ("Job", _) => Err(refuse(
            &path,
            "a Job's pod says OnFailure or Never, as Kubernetes requires",
        )),
        ("Pod", policy) => Ok(policy.unwrap_or_default()),
        (_, None | Some(RestartPolicy::Always)) => Ok(RestartPolicy::Always),
        (kind, Some(_)) => Err(refuse(
            &path,
            format!("a {kind}'s pod restarts Always, as Kubernetes requires"),
        )),
    }
}

/// One image container, and what it requests.
fn container_spec(container: &Value, path: &str) -> Result<(ContainerSpec, Resources), KrakeError> {
    let fields = container
        .as_object()
        .ok_or_else(|| refuse(path, "Not a valid mapping type."))?;
    for key in fields.keys() {
        if !CONTAINER_FIELDS.contains(&key.as_str()) {
            return Err(refuse(
                &format!("{path}.{key}"),
                "Drover does not honour this field of a container (no volumes, envFrom, lifecycle hooks, startup probes …): leave it out",
            ));
        }
    }
    security_context(
        container.get("securityContext"),
        &format!("{path}.securityContext"),
    )?;
    let text = |key: &str| container.get(key).and_then(Value::as_str);
    let name =
        text("name").ok_or_else(|| refuse(&format!("{path}.name"), "Missing data for required field."))?;
    let image =
        text("image").ok_or_else(|| refuse(&format!("{path}.image"), "Missing data for required field."))?;
    let pull_policy = match container.get("imagePullPolicy") {
        None | Some(Value::Null) => None,
        Some(value) => Some(match value.as_str() {
            Some("Always") => PullPolicy::Always,
            Some("IfNotPresent") => PullPolicy::IfNotPresent,
            Some("Never") => PullPolicy::Never,
            _ => {
                return Err(refuse(
                    &format!("{path}.imagePullPolicy"),
                    "Always, IfNotPresent or Never",
                ))
            }
        }),
    };
    let working_dir = match container.get("workingDir") {
        None | Some(Value::Null) => None,
        Some(Value::String(dir)) => Some(dir.clone()),
        Some(_) => return Err(refuse(&format!("{path}.workingDir"), "an absolute path")),
    };
    let (ports, named) = ports(container.get("ports"), path)?;
    let (requests, limits) = resources(container.get("resources"), path)?;
    let spec = ContainerSpec {
        name: name.to_string(),
        image: image.to_string(),
        pull_policy,
        command: strings(container.get("command"), &format!("{path}.command"))?,
        args: strings(container.get("args"), &format!("{path}.args"))?,
        env: env(container.get("env"), path)?,
        working_dir,
        ports,
        limits,
        readiness: probe(
            container.get("readinessProbe"),
            &named,
            &format!("{path}.readinessProbe"),
        )?,
        liveness: probe(
            container.get("livenessProbe"),
            &named,
            &format!("{path}.livenessProbe"),
        )?,
    };
    Ok((spec, requests))
}

/// A container's security context: only what is true of every container Drover runs anyway
/// (not privileged, `/proc` masked); the baseline check has named any violation before.
fn security_context(value: Option<&Value>, path: &str) -> Result<(), KrakeError> {
    let Some(context) = value else {
        return Ok(());
    };
    let context = context
        .as_object()
        .ok_or_else(|| refuse(path, "Not a valid mapping type."))?;
    for (key, value) in context {
        match key.as_str() {
            "privileged" => false_only(Some(value), &format!("{path}.privileged"), "a privileged container")?,
            "procMount" if value.as_str() == Some("Default") => {}
            "procMount" => {
                return Err(refuse(&format!("{path}.procMount"), "Drover masks /proc: \"Default\" or leave it out"))
            }
            _ => {
                return Err(refuse(
                    &format!("{path}.{key}"),
                    "Drover does not honour this field of a security context (it runs containers with the runtime's defaults): leave it out",
                ))
            }
        }
    }
    Ok(())
}

/// The container's ports, and their names (for probes that name a port).
fn ports(
    value: Option<&Value>,
    path: &str,
) -> Result<(Vec<ContainerPort>, BTreeMap<String, u16>), KrakeError> {
    let mut ports = Vec::new();
    let mut named = BTreeMap::new();
    let items = match value {
        None | Some(Value::Null) => return Ok((ports, named)),
        Some(Value::Array(items)) => items,
        Some(_) => return Err(refuse(&format!("{path}.ports"), "a list of ports")),
    };
    for (index, port) in items.iter().enumerate() {
        let at = format!("{path}.ports.{index}");
        for key in port.as_object().into_iter().flat_map(Map::keys) {
            if !["name", "containerPort", "hostPort", "protocol"].contains(&key.as_str()) {
                return Err(refuse(
                    &format!("{at}.{key}"),
                    "Drover does not honour this field of a port (a host port binds every address of the machine): leave it out",
                ));
            }
        }
        let number = |key: &str, zero_unset: bool| -> Result<Option<u16>, KrakeError> {
            match port.get(key) {
                None | Some(Value::Null) => Ok(None),
                Some(n) => match n.as_u64().and_then(|n| u16::try_from(n).ok()) {
                    Some(0) if zero_unset => Ok(None),
                    Some(n) if n > 0 => Ok(Some(n)),
                    _ => Err(refuse(&format!("{at}.{key}"), "a port from 1 to 65535")),
                },
            }
        };
        let container_port = number("containerPort", false)?
            .ok_or_else(|| refuse(&format!("{at}.containerPort"), "a port from 1 to 65535"))?;
        let protocol = match port.get("protocol") {
            None | Some(Value::Null) => PortProtocol::Tcp,
            Some(Value::String(p)) if p == "TCP" => PortProtocol::Tcp,
            Some(Value::String(p)) if p == "UDP" => PortProtocol::Udp,
            _ => {
                return Err(refuse(
                    &format!("{at}.protocol"),
                    "TCP or UDP (Drover's runtime network has no SCTP)",
                ))
            }
        };
        if let Some(name) = port.get("name").and_then(Value::as_str) {
            named.insert(name.to_string(), container_port);
        }
        ports.push(ContainerPort {
            container_port,
            host_port: number("hostPort", true)?,
            protocol,
        });
    }
    Ok((ports, named))
}

/// A container's requests (a resource left out of them is its limit, as in Kubernetes) and
/// limits.
fn resources(value: Option<&Value>, path: &str) -> Result<(Resources, Resources), KrakeError> {
    let path = format!("{path}.resources");
    let Some(resources) = value.filter(|v| !v.is_null()) else {
        return Ok(Default::default());
    };
    let resources = resources
        .as_object()
        .ok_or_else(|| refuse(&path, "Not a valid mapping type."))?;
    let mut read = BTreeMap::new();
    for (key, value) in resources {
        if key != "requests" && key != "limits" {
            return Err(refuse(
                &format!("{path}.{key}"),
                "Drover reads requests and limits: leave it out",
            ));
        }
        read.insert(key.as_str(), quantities(value, &format!("{path}.{key}"))?);
    }
    let limits = read.get("limits").copied().unwrap_or_default();
    let given = read.get("requests").copied().unwrap_or_default();
    let requests = Resources {
        cpu_millis: given.0.or(limits.0).unwrap_or(0),
        memory_mib: given.1.or(limits.1).unwrap_or(0),
    };
    let limits = Resources {
        cpu_millis: limits.0.unwrap_or(0),
        memory_mib: limits.1.unwrap_or(0),
    };
    Ok((requests, limits))
}

/// The CPU and memory of a `requests` or `limits` map, each when given.
fn quantities(value: &Value, path: &str) -> Result<(Option<u64>, Option<u64>), KrakeError> {
    let map = value
        .as_object()
        .ok_or_else(|| refuse(path, "Not a valid mapping type."))?;
    let mut out = (None, None);
    for (key, quantity) in map {
        let at = format!("{path}.{key}");
        match key.as_str() {
            "cpu" => {
                out.0 = Some(
                    cpu_millis(quantity)
                        .ok_or_else(|| refuse(&at, "a CPU quantity (\"250m\", \"0.5\", \"2\")"))?,
                )
            }
            "memory" => {
                out.1 =
                    Some(memory_mib(quantity).ok_or_else(|| {
                        refuse(&at, "a memory quantity (\"64Mi\", \"1Gi\", \"128M\", bytes)")
                    })?)
            }
            _ => {
                return Err(refuse(
                    &at,
                    "Drover places and limits cpu and memory only: leave it out",
                ))
            }
        }
    }
    Ok(out)
}

fn probe(
    value: Option<&Value>,
    named: &BTreeMap<String, u16>,
    path: &str,
) -> Result<Option<PodProbe>, KrakeError> {
    let Some(probe) = value.filter(|v| !v.is_null()) else {
        return Ok(None);
    };
    let fields = probe
        .as_object()
        .ok_or_else(|| refuse(path, "Not a valid mapping type."))?;
    let mut action = None;
    for (key, value) in fields {
        let at = format!("{path}.{key}");
        let this = match key.as_str() {
            "httpGet" => Some(http_get(value, named, &at)?),
            "tcpSocket" => Some(ProbeAction::TcpSocket {
                port: probe_port(value, named, &at)?,
            }),
            "exec" => Some(ProbeAction::Exec {
                command: strings(value.get("command"), &format!("{at}.command"))?,
            }),
            "successThreshold" if matches!(value.as_u64(), Some(1)) => None,
            "successThreshold" => return Err(refuse(&at, "1 (Drover counts one success)")),
            "initialDelaySeconds" | "periodSeconds" | "timeoutSeconds" | "failureThreshold" => None,
            _ => return Err(refuse(
                &at,
                "Drover probes by httpGet, tcpSocket or exec with Kubernetes' timing fields: leave it out",
            )),
        };
        if let Some(this) = this {
            if action.replace(this).is_some() {
                return Err(refuse(&at, "a probe has one of httpGet, tcpSocket and exec"));
            }
        }
    }
    let action = action.ok_or_else(|| refuse(path, "a probe has one of httpGet, tcpSocket and exec"))?;
    let timing = |key: &str, default: u32| -> Result<u32, KrakeError> {
        Ok(small(probe.get(key), &format!("{path}.{key}"))?.unwrap_or(default))
    };
    Ok(Some(PodProbe {
        action,
        initial_delay_secs: timing("initialDelaySeconds", 0)?,
        period_secs: timing("periodSeconds", 10)?,
        timeout_secs: timing("timeoutSeconds", 1)?,
        failure_threshold: timing("failureThreshold", 3)?,
    }))
}

fn http_get(value: &Value, named: &BTreeMap<String, u16>, path: &str) -> Result<ProbeAction, KrakeError> {
    for (key, field) in value.as_object().into_iter().flatten() {
        let fine = match key.as_str() {
            "path" | "port" | "host" => true,
            "scheme" => field.as_str() == Some("HTTP"),
            _ => false,
        };
        if !fine {
            return Err(refuse(
                &format!("{path}.{key}"),
                "Drover probes plain HTTP at the pod's address by path and port: leave it out",
            ));
        }
    }
    let probe_path = match value.get("path") {
        None | Some(Value::Null) => "/".to_string(),
        Some(Value::String(p)) => p.clone(),
        Some(_) => return Err(refuse(&format!("{path}.path"), "a path starting with '/'")),
    };
    Ok(ProbeAction::HttpGet {
        port: probe_port(value, named, path)?,
        path: probe_path,
    })
}

/// A probe's port (a number, or a container port's name); a `host` other than the pod's own
/// is refused (the baseline check names it first where it applies).
fn probe_port(action: &Value, named: &BTreeMap<String, u16>, path: &str) -> Result<u16, KrakeError> {
    if !matches!(action.get("host"), None | Some(Value::Null))
        && action.get("host").and_then(Value::as_str) != Some("")
    {
        return Err(refuse(
            &format!("{path}.host"),
            "Drover probes the pod's own address: leave host out",
        ));
    }
    match action.get("port") {
        Some(Value::Number(n)) => n.as_u64().and_then(|n| u16::try_from(n).ok()).filter(|n| *n > 0),
        Some(Value::String(name)) => named.get(name).copied(),
        _ => None,
    }
    .ok_or_else(|| {
        refuse(
            &format!("{path}.port"),
            "a port number, or the name of a container port",
        )
    })
}

#[cfg(test)]
mod tests;
