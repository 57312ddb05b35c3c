//! What an Application's Kubernetes manifest runs on Drover (`krake.md` §3.2, §6.1): each
//! Deployment, StatefulSet, Job and Pod becomes roles; each Service records the ports its
//! instances listen on; each `kubernetes.io/dockerconfigjson` Secret holds pull credentials for
//! the pods that name it ([`super::manifest_secret`]). Anything Drover cannot honour (a volume,
//! an environment value taken from elsewhere, a kind it has no meaning for) is refused with the
//! manifest path that holds it, never dropped.
//!
//! A workload's containers are either all `exec` (or `exec:<tag>`) or all container images:
//! - `exec`: one role per container, whose instances run the container's `command` and `args`
//!   as a process on the agent's machine (`exec` agents; `sim` agents pretend), with the
//!   template's replicas, the container's `env`, its resource requests and readiness probe;
//! - images: ONE role named after the workload whose instances are pods of all its containers,
//!   run by `container` agents through the CRI ([`super::manifest_pod`]), after the pod passed
//!   the tenant's pod security level ([`crate::pod_security`]).
//!
//! Pure: the service this makes goes through Drover's own scheduler, service actors and agents.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use super::error::KrakeError;
use super::manifest_pod::{is_exec_image, pod_role, Workload};
use super::manifest_secret::{read_secret, PullSecrets};
use super::manifest_values::{cpu_millis, env, memory_mib, refuse, text};
use crate::cluster::agent_api::{ExecSpec, Probe, Resources};
use crate::pod_security::{self, PodSecurity};
use crate::service::{RoleSpec, MAX_ROLE_INSTANCES};
use crate::validation::is_label;

/// What a manifest runs.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Translated {
    /// Roles by name: `<workload>` for a workload of images or of one `exec` container,
    /// `<workload>-<container>` for each of several `exec` containers.
    pub roles: BTreeMap<String, RoleSpec>,
    /// Services: name and the ports they expose (`port`, and the container port it targets).
    pub services: BTreeMap<String, Vec<(u16, u16)>>,
}

/// The workload kinds Drover runs, with their `apiVersion`.
const WORKLOADS: [(&str, &str); 4] = [
    ("apps/v1", "Deployment"),
    ("apps/v1", "StatefulSet"),
    ("batch/v1", "Job"),
    ("v1", "Pod"),
];

/// Container fields Drover reads, and those it accepts without effect (documented: the agent
/// needs no image pulls, names no ports, probes on its own schedule).
const CONTAINER_FIELDS: [&str; 11] = [
    "name",
    "image",
    "command",
    "args",
    "env",
    "resources",
    "readinessProbe",
    "ports",
    "imagePullPolicy",
    "terminationMessagePath",
    "terminationMessagePolicy",
];

/// Translates an Application's `spec.manifest`, holding every pod of container images to
/// `security` (the level of the namespace's tenant) before anything else is read of it.
pub fn translate(manifest: &[Value], security: PodSecurity) -> Result<Translated, KrakeError> {
    let secrets = pull_secrets(manifest)?;
    let mut out = Translated::default();
    for (index, item) in manifest.iter().enumerate() {
        let path = format!("spec.manifest.{index}");
        let api_version = text(item.get("apiVersion"), &format!("{path}.apiVersion"))?;
        let kind = text(item.get("kind"), &format!("{path}.kind"))?;
        let name = text(item.pointer("/metadata/name"), &format!("{path}.metadata.name"))?;
        match (api_version, kind) {
            ("v1", "Service") => {
                let ports = service_ports(item, &path)?;
                out.services.insert(name.to_string(), ports);
            }
            ("v1", "Secret") => {}
            (version, kind) if WORKLOADS.contains(&(version, kind)) => {
                let (replicas, pod) = workload(item, kind, &path)?;
                let containers = pod
                    .get("containers")
                    .and_then(Value::as_array)
                    .filter(|c| !c.is_empty())
                    .ok_or_else(|| refuse(&format!("{}.containers", pod_path(kind, &path)), "a pod needs containers"))?;
                if runs_images(containers, &pod_path(kind, &path))? {
                    let template = if kind == "Pod" {
                        (item, path.clone())
                    } else {
                        (&item["spec"]["template"], format!("{path}.spec.template"))
                    };
                    if let Some(violation) = pod_security::check(template.0, &template.1, security).into_iter().next() {
                        return Err(refuse(&violation.field, violation.message));
                    }
                    let workload = Workload {
                        name,
                        kind,
                        replicas,
                        pod,
                        path: pod_path(kind, &path),
                        item: path.clone(),
                    };
                    let (role, spec) = pod_role(&workload, &secrets)?;
                    if out.roles.insert(role.clone(), spec).is_some() {
                        return Err(refuse(&format!("{path}.metadata.name"), format!("two workloads make the role {role:?}")));
                    }
                    continue;
                }
                for key in pod.keys() {
                    if !["containers", "restartPolicy", "terminationGracePeriodSeconds"].contains(&key.as_str()) {
                        return Err(refuse(
                            &format!("{}.{key}", pod_path(kind, &path)),
                            "Drover does not honour this field of a pod: leave it out",
                        ));
                    }
                }
                for (c, container) in containers.iter().enumerate() {
                    let container_path = format!("{}.containers.{c}", pod_path(kind, &path));
                    let (role, spec) = role(name, containers.len(), container, replicas, &container_path)?;
                    if out.roles.insert(role.clone(), spec).is_some() {
                        return Err(refuse(&container_path, format!("two containers make the role {role:?}")));
                    }
                }
            }
            (version, kind) => {
                return Err(refuse(
                    &format!("{path}.kind"),
                    format!("Drover runs Deployment, StatefulSet, Job and Pod (and records Service ports and image pull Secrets); it cannot honour {version} {kind}"),
                ))
            }
        }
    }
    if out.roles.is_empty() {
        return Err(refuse(
            "spec.manifest",
            "the manifest runs nothing: give a Deployment, StatefulSet, Job or Pod",
        ));
    }
    Ok(out)
}

/// Whether the manifest names any container image (not `exec`): its translation then depends
/// on the tenant's pod security level, which only the apply reads.
pub fn names_images(manifest: &[Value]) -> bool {
    manifest.iter().any(|item| {
        let pod = item.pointer("/spec/template/spec").or_else(|| item.get("spec"));
        pod.and_then(|p| p.get("containers"))
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .any(|c| {
                c.get("image")
                    .and_then(Value::as_str)
                    .is_some_and(|i| !is_exec_image(i))
            })
    })
}

/// The manifest's pull Secrets by name.
fn pull_secrets(manifest: &[Value]) -> Result<PullSecrets, KrakeError> {
    let mut secrets = PullSecrets::new();
    for (index, item) in manifest.iter().enumerate() {
        if item.get("apiVersion").and_then(Value::as_str) == Some("v1")
            && item.get("kind").and_then(Value::as_str) == Some("Secret")
        {
            let path = format!("spec.manifest.{index}");
            let name = text(item.pointer("/metadata/name"), &format!("{path}.metadata.name"))?;
            secrets.insert(name.to_string(), read_secret(item, &path)?);
        }
    }
    Ok(secrets)
}

/// Whether a pod's containers name images (`true`) or are all `exec` (`false`); a pod mixing
/// both is refused at the first container unlike the first.
fn runs_images(containers: &[Value], pod_path: &str) -> Result<bool, KrakeError> {
    let mut first = None;
    for (index, container) in containers.iter().enumerate() {
        let at = format!("{pod_path}.containers.{index}.image");
        let image = text(container.get("image"), &at)?;
        let images = !is_exec_image(image);
        match first {
            None => first = Some(images),
            Some(kind) if kind != images => {
                return Err(refuse(
                    &at,
                    "a pod's containers are all exec (processes on the agent's machine) or all container images: split them into two workloads",
                ))
            }
            Some(_) => {}
        }
    }
    Ok(first.unwrap_or(false))
}

fn pod_path(kind: &str, path: &str) -> String {
    if kind == "Pod" {
        format!("{path}.spec")
    } else {
        format!("{path}.spec.template.spec")
    }
}

/// The replicas and pod spec of a workload.
fn workload<'a>(
    item: &'a Value,
    kind: &str,
    path: &str,
) -> Result<(u32, &'a Map<String, Value>), KrakeError> {
    let spec = item
        .get("spec")
        .and_then(Value::as_object)
        .ok_or_else(|| refuse(&format!("{path}.spec"), "Missing data for required field."))?;
    let (replicas, pod) = match kind {
        "Pod" => (Some(1), Some(spec)),
        "Job" => (
            spec.get("parallelism").and_then(Value::as_u64).or(Some(1)),
            spec.get("template")
                .and_then(|t| t.get("spec"))
                .and_then(Value::as_object),
        ),
        _ => (
            spec.get("replicas").map_or(Some(1), Value::as_u64),
            spec.get("template")
                .and_then(|t| t.get("spec"))
                .and_then(Value::as_object),
        ),
    };
    let replicas = replicas
        .and_then(|r| u32::try_from(r).ok())
        .filter(|r| *r <= MAX_ROLE_INSTANCES)
        .ok_or_else(|| {
            refuse(
                &format!("{path}.spec.replicas"),
                format!("0 to {MAX_ROLE_INSTANCES}"),
            )
        })?;
    let pod = pod.ok_or_else(|| {
        refuse(
            &format!("{path}.spec.template.spec"),
            "Missing data for required field.",
        )
    })?;
    Ok((replicas, pod))
}

fn role(
    workload: &str,
    containers: usize,
    container: &Value,
    replicas: u32,
    path: &str,
) -> Result<(String, RoleSpec), KrakeError> {
    let fields = container
        .as_object()
        .ok_or_else(|| refuse(path, "Not a valid mapping type."))?;
    for key in fields.keys() {
        if !CONTAINER_FIELDS.contains(&key.as_str()) {
            return Err(refuse(
                &format!("{path}.{key}"),
                "Drover does not honour this field of a container (no volumes, no security context): leave it out",
            ));
        }
    }
    let name = text(container.get("name"), &format!("{path}.name"))?;
    let image = text(container.get("image"), &format!("{path}.image"))?;
    if !is_exec_image(image) {
        return Err(refuse(
            &format!("{path}.image"),
            "an exec container's image is \"exec\" (or \"exec:<tag>\")",
        ));
    }
    let strings = |key: &str| -> Result<Vec<String>, KrakeError> {
        match container.get(key) {
            None | Some(Value::Null) => Ok(Vec::new()),
            Some(Value::Array(items)) => items
                .iter()
                .map(|v| {
                    v.as_str()
                        .map(str::to_string)
                        .ok_or_else(|| refuse(&format!("{path}.{key}"), "a list of strings"))
                })
                .collect(),
            Some(_) => Err(refuse(&format!("{path}.{key}"), "a list of strings")),
        }
    };
    let mut argv = strings("command")?;
    if argv.is_empty() {
        return Err(refuse(
            &format!("{path}.command"),
            "an exec container names its program in command (there is no image entrypoint)",
        ));
    }
    argv.extend(strings("args")?);
    let role_name = if containers == 1 {
        workload.to_string()
    } else {
        format!("{workload}-{name}")
    };
    if !is_label(&role_name) || role_name.len() > 40 {
        return Err(refuse(
            &format!("{path}.name"),
            format!("the role {role_name:?} must be 1-40 lower-case letters, digits or '-' (the workload's name, and the container's when it has several)"),
        ));
    }
    let ports = container_ports(container, path)?;
    Ok((
        role_name,
        RoleSpec {
            instances: replicas,
            resources: requests(container.get("resources"), path)?,
            exec: ExecSpec {
                argv,
                probe: probe(container.get("readinessProbe"), &ports, path)?,
                files: Default::default(),
                pod: None,
            },
            env: env(container.get("env"), path)?,
        },
    ))
}

/// The container's named ports.
fn container_ports(container: &Value, path: &str) -> Result<BTreeMap<String, u16>, KrakeError> {
    let mut named = BTreeMap::new();
    for (p, port) in container
        .get("ports")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        let number = port
            .get("containerPort")
            .and_then(Value::as_u64)
            .and_then(|n| u16::try_from(n).ok())
            .filter(|n| *n > 0)
            .ok_or_else(|| {
                refuse(
                    &format!("{path}.ports.{p}.containerPort"),
                    "a port from 1 to 65535",
                )
            })?;
        if let Some(name) = port.get("name").and_then(Value::as_str) {
            named.insert(name.to_string(), number);
        }
    }
    Ok(named)
}

fn requests(value: Option<&Value>, path: &str) -> Result<Resources, KrakeError> {
    let Some(resources) = value.and_then(Value::as_object) else {
        return Ok(Resources::default());
    };
    if resources.contains_key("limits") {
        return Err(refuse(
            &format!("{path}.resources.limits"),
            "Drover's agents do not confine instances to limits yet: give requests only",
        ));
    }
    let requests = resources.get("requests");
    let cpu = match requests.and_then(|r| r.get("cpu")) {
        None => 0,
        Some(q) => cpu_millis(q).ok_or_else(|| {
            refuse(
                &format!("{path}.resources.requests.cpu"),
                "a CPU quantity (\"250m\", \"0.5\", \"2\")",
            )
        })?,
    };
    let memory = match requests.and_then(|r| r.get("memory")) {
        None => 0,
        Some(q) => memory_mib(q).ok_or_else(|| {
            refuse(
                &format!("{path}.resources.requests.memory"),
                "a memory quantity (\"64Mi\", \"1Gi\", \"128M\", bytes)",
            )
        })?,
    };
    Ok(Resources {
        cpu_millis: cpu,
        memory_mib: memory,
    })
}

fn probe(
    value: Option<&Value>,
    named: &BTreeMap<String, u16>,
    path: &str,
) -> Result<Option<Probe>, KrakeError> {
    let Some(probe) = value else {
        return Ok(None);
    };
    let path = format!("{path}.readinessProbe");
    let port = |value: Option<&Value>, at: &str| -> Result<u16, KrakeError> {
        match value {
            Some(Value::Number(n)) => n.as_u64().and_then(|n| u16::try_from(n).ok()).filter(|n| *n > 0),
            Some(Value::String(name)) => named.get(name).copied(),
            _ => None,
        }
        .ok_or_else(|| {
            refuse(
                &format!("{path}.{at}.port"),
                "a port number, or the name of a container port",
            )
        })
    };
    if let Some(http) = probe.get("httpGet") {
        let path_of = http
            .get("path")
            .and_then(Value::as_str)
            .unwrap_or("/")
            .to_string();
        return Ok(Some(Probe::Http {
            port: port(http.get("port"), "httpGet")?,
            path: path_of,
        }));
    }
    if let Some(tcp) = probe.get("tcpSocket") {
        return Ok(Some(Probe::Tcp {
            port: port(tcp.get("port"), "tcpSocket")?,
        }));
    }
    Err(refuse(
        &path,
        "Drover's agents probe readiness by httpGet or tcpSocket on 127.0.0.1",
    ))
}

fn service_ports(item: &Value, path: &str) -> Result<Vec<(u16, u16)>, KrakeError> {
    let ports = item
        .pointer("/spec/ports")
        .and_then(Value::as_array)
        .filter(|p| !p.is_empty())
        .ok_or_else(|| refuse(&format!("{path}.spec.ports"), "a Service lists its ports"))?;
    ports
        .iter()
        .enumerate()
        .map(|(i, port)| {
            let number = |key: &str| {
                port.get(key)
                    .and_then(Value::as_u64)
                    .and_then(|n| u16::try_from(n).ok())
                    .filter(|n| *n > 0)
            };
            let exposed = number("port")
                .ok_or_else(|| refuse(&format!("{path}.spec.ports.{i}.port"), "a port from 1 to 65535"))?;
            Ok((exposed, number("targetPort").unwrap_or(exposed)))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn deployment(replicas: u64, container: Value) -> Value {
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
               "spec": {"replicas": replicas, "template": {"spec": {"containers": [container]}}}})
    }

    fn container() -> Value {
        json!({"name": "main", "image": "exec", "command": ["python3", "-m", "http.server"], "args": ["8080"],
               "env": [{"name": "MODE", "value": "test"}],
               "resources": {"requests": {"cpu": "250m", "memory": "64Mi"}},
               "ports": [{"name": "http", "containerPort": 8080}],
               "readinessProbe": {"httpGet": {"path": "/", "port": "http"}, "periodSeconds": 1}})
    }

    #[test]
    fn a_deployment_becomes_a_role_of_its_replicas() {
        let service = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"},
                             "spec": {"ports": [{"port": 80, "targetPort": 8080}]}});
        let out =
            translate(&[deployment(3, container()), service], PodSecurity::Baseline).expect("translated");
        let role = &out.roles["web"];
        assert_eq!(role.instances, 3);
        assert_eq!(role.exec.argv, vec!["python3", "-m", "http.server", "8080"]);
        assert_eq!(
            role.exec.probe,
            Some(Probe::Http {
                port: 8080,
                path: "/".into()
            })
        );
        assert_eq!(
            role.resources,
            Resources {
                cpu_millis: 250,
                memory_mib: 64
            }
        );
        assert_eq!(role.env["MODE"], "test");
        assert_eq!(out.services["web"], vec![(80, 8080)]);
    }

    #[test]
    fn every_workload_kind_and_several_containers() {
        let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "one"},
                         "spec": {"containers": [{"name": "a", "image": "exec", "command": ["sleep", "60"]},
                                                 {"name": "b", "image": "exec:1", "command": ["sleep", "61"]}]}});
        let job = json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "batch"},
                         "spec": {"parallelism": 2, "template": {"spec": {"restartPolicy": "Never",
                                  "containers": [{"name": "c", "image": "exec", "command": ["true"]}]}}}});
        let set = json!({"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "db"},
                         "spec": {"template": {"spec": {"containers": [{"name": "c", "image": "exec", "command": ["sleep", "1"]}]}}}});
        let out = translate(&[pod, job, set], PodSecurity::Baseline).expect("translated");
        let got: Vec<(&str, u32)> = out.roles.iter().map(|(n, r)| (n.as_str(), r.instances)).collect();
        assert_eq!(got, vec![("batch", 2), ("db", 1), ("one-a", 1), ("one-b", 1)]);
    }

    #[test]
    fn what_drover_cannot_honour_is_refused_with_its_path() {
        let with = |key: &str, value: Value| {
            let mut c = container();
            c[key] = value;
            deployment(1, c)
        };
        let table = [
            (
                json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "mixed"},
                    "spec": {"containers": [container(), {"name": "img", "image": "nginx:1.25"}]}}),
                "spec.manifest.0.spec.containers.1.image",
            ),
            (
                with("volumeMounts", json!([])),
                "spec.manifest.0.spec.template.spec.containers.0.volumeMounts",
            ),
            (
                with("command", json!([])),
                "spec.manifest.0.spec.template.spec.containers.0.command",
            ),
            (
                with("env", json!([{"name": "X", "valueFrom": {"secretKeyRef": {}}}])),
                "spec.manifest.0.spec.template.spec.containers.0.env.0.valueFrom",
            ),
            (
                with("resources", json!({"limits": {"cpu": "1"}})),
                "spec.manifest.0.spec.template.spec.containers.0.resources.limits",
            ),
            (
                with("resources", json!({"requests": {"cpu": "lots"}})),
                "spec.manifest.0.spec.template.spec.containers.0.resources.requests.cpu",
            ),
            (
                with("readinessProbe", json!({"exec": {"command": ["true"]}})),
                "spec.manifest.0.spec.template.spec.containers.0.readinessProbe",
            ),
            (
                json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}),
                "spec.manifest.0.kind",
            ),
            (
                json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "w"},
                    "spec": {"template": {"spec": {"volumes": [], "containers": [container()]}}}}),
                "spec.manifest.0.spec.template.spec.volumes",
            ),
            (
                json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {}}),
                "spec.manifest.0.metadata.name",
            ),
        ];
        for (item, path) in table {
            match translate(std::slice::from_ref(&item), PodSecurity::Baseline) {
                Err(KrakeError::Invalid { field, .. }) => assert_eq!(field, path, "{item}"),
                other => panic!("{item}: {other:?}"),
            }
        }
        assert!(matches!(
            translate(&[], PodSecurity::Baseline),
            Err(KrakeError::Invalid { .. })
        ));
    }

    #[test]
    fn quantities_as_kubernetes_writes_them() {
        for (text, millis) in [
            ("250m", 250),
            ("0.5", 500),
            ("2", 2000),
            ("0.0001", 1),
            (".5", 500),
        ] {
            assert_eq!(cpu_millis(&json!(text)), Some(millis), "{text}");
        }
        assert_eq!(cpu_millis(&json!(1)), Some(1000));
        assert_eq!(cpu_millis(&json!("1x")), None);
        for (text, mib) in [
            ("64Mi", 64),
            ("1Gi", 1024),
            ("128M", 123),
            ("1024Ki", 1),
            ("1", 1),
            ("1.5Gi", 1536),
        ] {
            assert_eq!(memory_mib(&json!(text)), Some(mib), "{text}");
        }
        assert_eq!(memory_mib(&json!("Mi")), None);
        assert_eq!(memory_mib(&json!("-1Mi")), None);
    }
}
