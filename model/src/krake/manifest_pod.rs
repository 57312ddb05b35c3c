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
use super::manifest::{cpu_millis, env, memory_mib};
use super::manifest_secret::{pull_auth, PullSecrets};
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
            &format!("{path}.containers"),
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
mod tests {
    use serde_json::json;

    use super::*;
    use crate::cluster::pod::PullAuth;
    use crate::krake::manifest::translate;
    use crate::pod_security::PodSecurity;

    const POD: &str = "spec.manifest.0.spec.template.spec";

    fn deployment(pod: Value) -> Value {
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
               "spec": {"replicas": 2, "template": {"metadata": {"labels": {"app": "web"}}, "spec": pod}}})
    }

    fn web() -> Value {
        json!({"name": "web", "image": "127.0.0.1:5000/web:v1", "imagePullPolicy": "Always",
               "command": ["/bin/httpd"], "args": ["-f", "-p", "8080"], "workingDir": "/srv",
               "env": [{"name": "MODE", "value": "test"}],
               "ports": [{"name": "http", "containerPort": 8080, "hostPort": 8080, "protocol": "TCP"}],
               "resources": {"requests": {"cpu": "250m"}, "limits": {"cpu": "1", "memory": "64Mi"}},
               "readinessProbe": {"httpGet": {"path": "/ready", "port": "http", "scheme": "HTTP"},
                                  "periodSeconds": 2, "successThreshold": 1},
               "livenessProbe": {"tcpSocket": {"port": 8080}, "initialDelaySeconds": 5,
                                 "timeoutSeconds": 3, "failureThreshold": 4},
               "securityContext": {"privileged": false},
               "terminationMessagePolicy": "File"})
    }

    fn side() -> Value {
        json!({"name": "side", "image": "busybox", "command": ["sleep", "3600"],
               "resources": {"requests": {"cpu": "100m", "memory": "16Mi"}},
               "livenessProbe": {"exec": {"command": ["true"]}}})
    }

    fn secret() -> Value {
        let config = r#"{"auths": {"127.0.0.1:5000": {"username": "alice", "password": "s3cret"},
                                   "elsewhere:5000": {"username": "eve", "password": "x"}}}"#;
        json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "pull"},
               "type": "kubernetes.io/dockerconfigjson", "stringData": {".dockerconfigjson": config}})
    }

    fn translated(manifest: &[Value], level: PodSecurity) -> Result<RoleSpec, KrakeError> {
        translate(manifest, level).map(|t| t.roles["web"].clone())
    }

    #[test]
    fn a_workload_of_images_is_one_role_of_one_pod() {
        let pod = json!({"containers": [web(), side()], "hostNetwork": true, "imagePullSecrets": [{"name": "pull"}],
                         "terminationGracePeriodSeconds": 5, "hostPID": false});
        let role = translated(&[deployment(pod), secret()], PodSecurity::BaselineWithHostNetwork)
            .expect("translated");
        assert_eq!(role.instances, 2);
        assert_eq!(
            role.resources,
            Resources {
                cpu_millis: 350,
                memory_mib: 80
            },
            "requests summed; a missing one is the limit"
        );
        assert!(role.exec.argv.is_empty() && role.env.is_empty());
        let pod = role.exec.pod.expect("a pod");
        assert_eq!(pod.restart_policy, RestartPolicy::Always);
        assert!(pod.host_network);
        assert_eq!(pod.termination_grace_secs, 5);
        assert_eq!(
            pod.pull_auth,
            vec![PullAuth {
                registry: "127.0.0.1:5000".into(),
                username: "alice".into(),
                password: "s3cret".into()
            }],
            "only the registries its images name"
        );
        let web = &pod.containers[0];
        assert_eq!(
            *web,
            ContainerSpec {
                name: "web".into(),
                image: "127.0.0.1:5000/web:v1".into(),
                pull_policy: Some(PullPolicy::Always),
                command: vec!["/bin/httpd".into()],
                args: vec!["-f".into(), "-p".into(), "8080".into()],
                env: [("MODE".to_string(), "test".to_string())].into(),
                working_dir: Some("/srv".into()),
                ports: vec![ContainerPort {
                    container_port: 8080,
                    host_port: Some(8080),
                    protocol: PortProtocol::Tcp
                }],
                limits: Resources {
                    cpu_millis: 1000,
                    memory_mib: 64
                },
                readiness: Some(PodProbe {
                    action: ProbeAction::HttpGet {
                        port: 8080,
                        path: "/ready".into()
                    },
                    initial_delay_secs: 0,
                    period_secs: 2,
                    timeout_secs: 1,
                    failure_threshold: 3,
                }),
                liveness: Some(PodProbe {
                    action: ProbeAction::TcpSocket { port: 8080 },
                    initial_delay_secs: 5,
                    period_secs: 10,
                    timeout_secs: 3,
                    failure_threshold: 4,
                }),
            }
        );
        assert_eq!(
            pod.containers[1].liveness.as_ref().map(|p| &p.action),
            Some(&ProbeAction::Exec {
                command: vec!["true".into()]
            })
        );
        assert_eq!(pod.containers[1].pull_policy, None);
    }

    #[test]
    fn restart_policies_as_kubernetes_requires_them() {
        let item = |kind: &str, policy: Option<&str>| {
            let mut pod = json!({"containers": [side()]});
            if let Some(policy) = policy {
                pod["restartPolicy"] = json!(policy);
            }
            match kind {
                "Pod" => json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web"}, "spec": pod}),
                "Job" => {
                    json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "web"}, "spec": {"template": {"spec": pod}}})
                }
                _ => {
                    json!({"apiVersion": "apps/v1", "kind": kind, "metadata": {"name": "web"}, "spec": {"template": {"spec": pod}}})
                }
            }
        };
        let table = [
            ("Deployment", None, Some(RestartPolicy::Always)),
            ("StatefulSet", Some("Always"), Some(RestartPolicy::Always)),
            ("Deployment", Some("Never"), None),
            ("Job", Some("OnFailure"), Some(RestartPolicy::OnFailure)),
            ("Job", Some("Never"), Some(RestartPolicy::Never)),
            ("Job", None, None),
            ("Job", Some("Always"), None),
            ("Pod", None, Some(RestartPolicy::Always)),
            ("Pod", Some("OnFailure"), Some(RestartPolicy::OnFailure)),
            ("Pod", Some("Sometimes"), None),
        ];
        for (kind, given, want) in table {
            let got = translated(&[item(kind, given)], PodSecurity::Baseline);
            match (got, want) {
                (Ok(role), Some(want)) => assert_eq!(
                    role.exec.pod.map(|p| p.restart_policy),
                    Some(want),
                    "{kind} {given:?}"
                ),
                (Err(KrakeError::Invalid { field, .. }), None) => assert!(
                    field.ends_with(".spec.restartPolicy"),
                    "{kind} {given:?}: {field}"
                ),
                (got, want) => panic!("{kind} {given:?}: {got:?}, wanted {want:?}"),
            }
        }
    }

    #[test]
    fn what_drover_does_not_honour_or_the_level_refuses_is_named() {
        let with = |key: &str, value: Value| {
            let mut c = side();
            c[key] = value;
            deployment(json!({"containers": [c]}))
        };
        let pod_with = |key: &str, value: Value| {
            let mut pod = json!({"containers": [side()]});
            pod[key] = value;
            deployment(pod)
        };
        let table = [
            (
                pod_with("volumes", json!([{"name": "v", "emptyDir": {}}])),
                format!("{POD}.volumes"),
            ),
            (
                pod_with("volumes", json!([{"name": "v", "hostPath": {"path": "/"}}])),
                format!("{POD}.volumes.0.hostPath"),
            ),
            (pod_with("hostPID", json!(true)), format!("{POD}.hostPID")),
            (pod_with("hostNetwork", json!(true)), format!("{POD}.hostNetwork")),
            (
                pod_with("securityContext", json!({"runAsUser": 1000})),
                format!("{POD}.securityContext"),
            ),
            (
                pod_with("initContainers", json!([side()])),
                format!("{POD}.initContainers"),
            ),
            (
                pod_with("imagePullSecrets", json!([{"name": "absent"}])),
                format!("{POD}.imagePullSecrets.0.name"),
            ),
            (
                with("securityContext", json!({"privileged": true})),
                format!("{POD}.containers.0.securityContext.privileged"),
            ),
            (
                with("securityContext", json!({"capabilities": {"add": ["SYS_ADMIN"]}})),
                format!("{POD}.containers.0.securityContext.capabilities.add.0"),
            ),
            (
                with("securityContext", json!({"runAsNonRoot": true})),
                format!("{POD}.containers.0.securityContext.runAsNonRoot"),
            ),
            (
                with("ports", json!([{"containerPort": 80, "hostPort": 8080}])),
                format!("{POD}.containers.0.ports.0.hostPort"),
            ),
            (
                with("ports", json!([{"containerPort": 80, "hostIP": "127.0.0.1"}])),
                format!("{POD}.containers.0.ports.0.hostIP"),
            ),
            (
                with("ports", json!([{"containerPort": 80, "protocol": "SCTP"}])),
                format!("{POD}.containers.0.ports.0.protocol"),
            ),
            (with("envFrom", json!([])), format!("{POD}.containers.0.envFrom")),
            (
                with("volumeMounts", json!([])),
                format!("{POD}.containers.0.volumeMounts"),
            ),
            (
                with("startupProbe", json!({"exec": {"command": ["true"]}})),
                format!("{POD}.containers.0.startupProbe"),
            ),
            (
                with("env", json!([{"name": "X", "valueFrom": {}}])),
                format!("{POD}.containers.0.env.0.valueFrom"),
            ),
            (
                with("resources", json!({"limits": {"nvidia.com/gpu": 1}})),
                format!("{POD}.containers.0.resources.limits.nvidia.com/gpu"),
            ),
            (
                with("resources", json!({"requests": {"memory": "lots"}})),
                format!("{POD}.containers.0.resources.requests.memory"),
            ),
            (
                with("livenessProbe", json!({"grpc": {"port": 1}})),
                format!("{POD}.containers.0.livenessProbe.grpc"),
            ),
            (
                with(
                    "livenessProbe",
                    json!({"httpGet": {"port": 1, "host": "10.0.0.1"}}),
                ),
                format!("{POD}.containers.0.livenessProbe.httpGet.host"),
            ),
            (
                with("livenessProbe", json!({"httpGet": {"port": "nameless"}})),
                format!("{POD}.containers.0.livenessProbe.httpGet.port"),
            ),
            (
                with("livenessProbe", json!({"periodSeconds": 1})),
                format!("{POD}.containers.0.livenessProbe"),
            ),
            (
                with("livenessProbe", json!({"exec": {"command": []}})),
                format!("{POD}.containers.0.livenessProbe"),
            ),
            (
                with("imagePullPolicy", json!("Sometimes")),
                format!("{POD}.containers.0.imagePullPolicy"),
            ),
            (
                with("image", json!("Web:latest")),
                format!("{POD}.containers.0.image"),
            ),
            (
                with("workingDir", json!("srv")),
                format!("{POD}.containers.0.workingDir"),
            ),
            (
                deployment(json!({"containers": [side(), side()]})),
                format!("{POD}.containers.1.name"),
            ),
            (
                deployment(
                    json!({"containers": [side(), {"name": "run", "image": "exec", "command": ["true"]}]}),
                ),
                format!("{POD}.containers.1.image"),
            ),
            (
                json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}, "type": "Opaque", "data": {}}),
                "spec.manifest.0.type".to_string(),
            ),
        ];
        for (item, field) in table {
            match translate(std::slice::from_ref(&item), PodSecurity::Baseline) {
                Err(KrakeError::Invalid { field: got, .. }) => assert_eq!(got, field, "{item}"),
                other => panic!("{item}: {other:?}"),
            }
        }
    }

    #[test]
    fn the_tenants_level_decides_before_drover_reads_the_pod() {
        let privileged = deployment(json!({"containers": [{"name": "root", "image": "busybox",
                                                            "securityContext": {"privileged": true}}]}));
        let message = |level| match translate(std::slice::from_ref(&privileged), level) {
            Err(KrakeError::Invalid { field, message }) => {
                assert_eq!(field, format!("{POD}.containers.0.securityContext.privileged"));
                message
            }
            other => panic!("{other:?}"),
        };
        assert!(message(PodSecurity::Baseline).contains("baseline pod security level"));
        assert!(message(PodSecurity::Privileged).contains("Drover never runs a privileged container"));
        let host = deployment(json!({"containers": [{"name": "h", "image": "busybox",
                                                      "ports": [{"containerPort": 8080, "hostPort": 8080}]}], "hostNetwork": true}));
        assert!(translate(std::slice::from_ref(&host), PodSecurity::Baseline).is_err());
        let mut other_port = host.clone();
        other_port["spec"]["template"]["spec"]["containers"][0]["ports"][0]["containerPort"] = json!(8081);
        let role = translated(&[host], PodSecurity::BaselineWithHostNetwork).expect("allowed for the tenant");
        assert!(role.exec.pod.is_some_and(|p| p.host_network));
        match translate(&[other_port], PodSecurity::BaselineWithHostNetwork) {
            Err(KrakeError::Invalid { field, .. }) => {
                assert_eq!(field, format!("{POD}.containers.0.ports.0.hostPort"))
            }
            other => panic!("a host port unlike its container port on the host's network: {other:?}"),
        }
    }

    #[test]
    fn the_agents_field_names_are_told_in_the_manifests_words() {
        for (field, manifest) in [
            (
                "exec.pod.containers[1].readiness",
                "p.containers.1.readinessProbe",
            ),
            (
                "exec.pod.containers[0].ports[2].hostPort",
                "p.containers.0.ports.2.hostPort",
            ),
            ("exec.pod.terminationGraceSecs", "p.terminationGracePeriodSeconds"),
            ("exec.pod.pullAuth[0].registry", "p.imagePullSecrets.0.registry"),
        ] {
            assert_eq!(manifest_field("p", field), manifest);
        }
    }
}
