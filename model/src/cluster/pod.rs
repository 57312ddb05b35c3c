//! A pod: what a `container` agent runs for one instance — one CRI pod sandbox holding the
//! pod's containers, each from an image pulled from a registry — and what the agent reports of
//! it, in Kubernetes' words (`ContainerCreating`, `ErrImagePull`, `CrashLoopBackOff`, …).
//!
//! A pod travels inside the instance's [`ExecSpec`](super::agent_api::ExecSpec) (its `pod`
//! field), so that services, rollouts and desired sets carry it unchanged; only a `container`
//! agent runs it (an `exec` agent refuses it, a `sim` agent pretends). The pull credentials it
//! carries are resolved when the revision is made (from the Krake manifest's pull Secret, or
//! the Kumori component's `hub.secret`) and stored with it, so that the agent can pull; they are
//! never shown: their `Debug` is redacted, the views leave `pullAuth` out and no agent route
//! echoes a spec.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::image::ImageRef;
use super::resources::Resources;
use super::spec_error::SpecError;
use crate::validation::is_label;

/// Most containers a pod may hold.
pub const MAX_CONTAINERS: usize = 16;

/// Longest termination grace period, seconds (Kubernetes sets none; an hour bounds a stop).
pub const MAX_GRACE_SECS: u32 = 3600;

/// A pod to run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PodSpec {
    /// Its containers, started in this order, each named once.
    pub containers: Vec<ContainerSpec>,
    /// When a container that ended is started again.
    #[serde(default)]
    pub restart_policy: RestartPolicy,
    /// Whether the pod shares the machine's network (its ports are the machine's) instead of
    /// having an address of its own.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub host_network: bool,
    /// Seconds a container is given to end after SIGTERM before it is killed.
    #[serde(default = "default_grace")]
    pub termination_grace_secs: u32,
    /// Credentials for the registries its images are pulled from.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pull_auth: Vec<PullAuth>,
}

fn default_grace() -> u32 {
    30
}

/// One container of a pod.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ContainerSpec {
    /// Its name in the pod (a DNS label).
    pub name: String,
    /// The image reference, as given (see [`ImageRef`]).
    pub image: String,
    /// When the image is pulled; by default `Always` for `:latest` or no tag, else
    /// `IfNotPresent`, as Kubernetes decides.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pull_policy: Option<PullPolicy>,
    /// Replaces the image's entrypoint.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub command: Vec<String>,
    /// Replaces the image's command (the entrypoint's arguments).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
    /// Environment variables, added to the instance's own.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
    /// Working directory, replacing the image's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub working_dir: Option<String>,
    /// Ports it listens on.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ports: Vec<ContainerPort>,
    /// Its limits, enforced by the runtime's cgroup (0: none).
    #[serde(default)]
    pub limits: Resources,
    /// The container is ready once this answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub readiness: Option<PodProbe>,
    /// The container is restarted when this fails `failureThreshold` times in a row.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub liveness: Option<PodProbe>,
}

impl PodSpec {
    /// A pod of `containers` with Kubernetes' defaults: restarted always, its own network, 30 s
    /// to end, no pull credentials.
    pub fn of(containers: Vec<ContainerSpec>) -> Self {
        Self {
            containers,
            restart_policy: RestartPolicy::Always,
            host_network: false,
            termination_grace_secs: default_grace(),
            pull_auth: Vec::new(),
        }
    }
}

impl ContainerSpec {
    /// Container `name` running `image` as the image says (its entrypoint, command, directory),
    /// with no ports, limits or probes.
    pub fn new(name: impl Into<String>, image: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            image: image.into(),
            pull_policy: None,
            command: Vec::new(),
            args: Vec::new(),
            env: BTreeMap::new(),
            working_dir: None,
            ports: Vec::new(),
            limits: Resources::default(),
            readiness: None,
            liveness: None,
        }
    }

    /// The pull policy in force: the one given, else Kubernetes' default for the reference.
    pub fn effective_pull_policy(&self) -> PullPolicy {
        self.pull_policy
            .unwrap_or_else(|| match ImageRef::parse(&self.image) {
                Ok(image) if image.is_pinned() || image.tag.as_deref().is_some_and(|t| t != "latest") => {
                    PullPolicy::IfNotPresent
                }
                _ => PullPolicy::Always,
            })
    }
}

/// A container port.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ContainerPort {
    /// The port inside the pod.
    pub container_port: u16,
    /// The machine's port forwarded to it, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_port: Option<u16>,
    /// `TCP` or `UDP`.
    #[serde(default)]
    pub protocol: PortProtocol,
}

/// A port's protocol.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub enum PortProtocol {
    /// TCP.
    #[default]
    #[serde(rename = "TCP")]
    Tcp,
    /// UDP.
    #[serde(rename = "UDP")]
    Udp,
}

/// When a container's image is pulled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub enum PullPolicy {
    /// Before every start of the pod, resolving the reference again.
    Always,
    /// Only when the machine does not have it.
    IfNotPresent,
    /// Never: the machine must have it.
    Never,
}

/// When a container that ended is started again (the pod's, as in Kubernetes).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub enum RestartPolicy {
    /// Whatever its exit code (a Deployment's).
    #[default]
    Always,
    /// Only when it failed (a Job's, by choice).
    OnFailure,
    /// Never.
    Never,
}

impl RestartPolicy {
    /// Whether a container that ended with `exit_code` is started again.
    pub fn restarts(self, exit_code: i32) -> bool {
        match self {
            RestartPolicy::Always => true,
            RestartPolicy::OnFailure => exit_code != 0,
            RestartPolicy::Never => false,
        }
    }
}

/// A container probe with Kubernetes' timing.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PodProbe {
    /// What is tried.
    pub action: ProbeAction,
    /// Seconds after the container starts before the first try.
    #[serde(default)]
    pub initial_delay_secs: u32,
    /// Seconds between tries (at least 1).
    #[serde(default = "default_period")]
    pub period_secs: u32,
    /// Seconds a try may take (at least 1).
    #[serde(default = "default_timeout")]
    pub timeout_secs: u32,
    /// Failures in a row that count as failed.
    #[serde(default = "default_failures")]
    pub failure_threshold: u32,
}

fn default_period() -> u32 {
    10
}

fn default_timeout() -> u32 {
    1
}

fn default_failures() -> u32 {
    3
}

/// What a probe tries.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub enum ProbeAction {
    /// An HTTP GET at the pod's address that answers 2xx or 3xx.
    HttpGet {
        /// Port.
        port: u16,
        /// Path, starting with `/`.
        path: String,
    },
    /// A TCP connection to the pod's address that is accepted.
    TcpSocket {
        /// Port.
        port: u16,
    },
    /// A command run in the container that exits 0.
    Exec {
        /// The command and its arguments.
        command: Vec<String>,
    },
}

/// Credentials for one registry.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PullAuth {
    /// The registry (`host[:port]`), as image references name it.
    pub registry: String,
    /// User name.
    pub username: String,
    /// Password or token.
    pub password: String,
}

impl fmt::Debug for PullAuth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PullAuth")
            .field("registry", &self.registry)
            .field("username", &"<redacted>")
            .field("password", &"<redacted>")
            .finish()
    }
}

/// What a pod's container is doing, as Kubernetes reports it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ContainerReport {
    /// Its name.
    pub name: String,
    /// The image asked for.
    pub image: String,
    /// The digest of the image that runs (`repository@sha256:…`), once pulled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image_id: Option<String>,
    /// `waiting`, `running` or `terminated`.
    pub state: ContainerPhase,
    /// Kubernetes' reason for that state (`ContainerCreating`, `ErrImagePull`,
    /// `ImagePullBackOff`, `InvalidImageName`, `CreateContainerError`, `CrashLoopBackOff`,
    /// `Completed`, `Error`, `OOMKilled`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The runtime's words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// Exit code of its last run that ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    /// Times it was started again.
    pub restart_count: u32,
    /// Whether its readiness probe answered (true without one, once running).
    pub ready: bool,
}

/// A container's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub enum ContainerPhase {
    /// Not running yet, or waiting to run again.
    Waiting,
    /// Running.
    Running,
    /// Ended and not started again.
    Terminated,
}

/// What the agent reports of a pod.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PodReport {
    /// The pod's address (the machine's for a host-network pod), once its sandbox runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ip: Option<String>,
    /// Its containers, in the spec's order.
    pub containers: Vec<ContainerReport>,
}

/// Checks a pod's spec (fields named from the instance: `exec.pod.containers[0].image`).
pub fn check_pod(pod: &PodSpec) -> Result<(), SpecError> {
    let at = |field: String| format!("exec.pod.{field}");
    if pod.containers.is_empty() || pod.containers.len() > MAX_CONTAINERS {
        return Err(SpecError::new(
            at("containers".into()),
            format!("a pod holds 1 to {MAX_CONTAINERS} containers"),
        ));
    }
    if pod.termination_grace_secs > MAX_GRACE_SECS {
        return Err(SpecError::new(
            at("terminationGraceSecs".into()),
            format!("at most {MAX_GRACE_SECS}"),
        ));
    }
    let mut names = std::collections::BTreeSet::new();
    let mut host_ports = std::collections::BTreeSet::new();
    for (index, container) in pod.containers.iter().enumerate() {
        let field = |name: &str| at(format!("containers[{index}].{name}"));
        if !is_label(&container.name) || container.name.len() > 63 {
            return Err(SpecError::new(
                field("name"),
                "1-63 lower-case letters, digits or '-'",
            ));
        }
        if !names.insert(container.name.as_str()) {
            return Err(SpecError::new(field("name"), "each container is named once"));
        }
        if let Err(error) = ImageRef::parse(&container.image) {
            return Err(SpecError::new(field("image"), error.to_string()));
        }
        let strings = container.command.iter().chain(&container.args);
        if strings.clone().any(|s| s.contains('\0')) {
            return Err(SpecError::new(field("command"), "must not hold a NUL byte"));
        }
        for (key, value) in &container.env {
            if key.is_empty() || key.contains(['=', '\0']) || value.contains('\0') {
                return Err(SpecError::new(
                    field("env"),
                    format!("{key:?}: a name is non-empty, without '=' or NUL; a value without NUL"),
                ));
            }
        }
        if let Some(dir) = &container.working_dir {
            if !dir.starts_with('/') || dir.contains('\0') {
                return Err(SpecError::new(field("workingDir"), "an absolute path"));
            }
        }
        for (p, port) in container.ports.iter().enumerate() {
            if port.container_port == 0 {
                return Err(SpecError::new(
                    field(&format!("ports[{p}].containerPort")),
                    "1 to 65535",
                ));
            }
            if let Some(host) = port.host_port {
                if host == 0 || !host_ports.insert((host, port.protocol as u8)) {
                    return Err(SpecError::new(
                        field(&format!("ports[{p}].hostPort")),
                        "1 to 65535, each once in a pod",
                    ));
                }
            }
        }
        for (name, probe) in [
            ("readiness", &container.readiness),
            ("liveness", &container.liveness),
        ] {
            if let Some(probe) = probe {
                check_probe(probe).map_err(|reason| SpecError::new(field(name), reason))?;
            }
        }
    }
    for (index, auth) in pod.pull_auth.iter().enumerate() {
        if auth.registry.is_empty() || auth.registry.contains(['/', '\0']) {
            return Err(SpecError::new(
                at(format!("pullAuth[{index}].registry")),
                "a registry host[:port]",
            ));
        }
    }
    Ok(())
}

fn check_probe(probe: &PodProbe) -> Result<(), String> {
    if probe.period_secs == 0 || probe.timeout_secs == 0 || probe.failure_threshold == 0 {
        return Err("periodSecs, timeoutSecs and failureThreshold are at least 1".into());
    }
    match &probe.action {
        ProbeAction::HttpGet { port, path } => {
            if *port == 0 || !path.starts_with('/') || !path.bytes().all(|b| b.is_ascii_graphic()) {
                return Err("httpGet: a port from 1 and a path starting with '/' in visible ASCII".into());
            }
        }
        ProbeAction::TcpSocket { port } if *port == 0 => return Err("tcpSocket: a port from 1".into()),
        ProbeAction::TcpSocket { .. } => {}
        ProbeAction::Exec { command } => {
            if command.is_empty() || command.iter().any(|c| c.contains('\0')) {
                return Err("exec: a command without NUL bytes".into());
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn container(name: &str, image: &str) -> ContainerSpec {
        ContainerSpec::new(name, image)
    }

    fn pod(containers: Vec<ContainerSpec>) -> PodSpec {
        PodSpec::of(containers)
    }

    #[test]
    fn a_pod_is_checked_field_by_field() {
        assert_eq!(
            check_pod(&pod(vec![container("web", "127.0.0.1:5000/web:v1")])),
            Ok(())
        );
        let mut twice = pod(vec![container("web", "a"), container("web", "b")]);
        assert_eq!(
            check_pod(&twice).unwrap_err().field,
            "exec.pod.containers[1].name"
        );
        twice.containers[1].name = "Side".into();
        assert_eq!(
            check_pod(&twice).unwrap_err().field,
            "exec.pod.containers[1].name"
        );
        assert_eq!(
            check_pod(&pod(Vec::new())).unwrap_err().field,
            "exec.pod.containers"
        );
        let bad_image = pod(vec![container("web", "Web:latest")]);
        assert_eq!(
            check_pod(&bad_image).unwrap_err().field,
            "exec.pod.containers[0].image"
        );
        let mut ports = pod(vec![container("a", "a"), container("b", "b")]);
        let port = ContainerPort {
            container_port: 80,
            host_port: Some(8080),
            protocol: PortProtocol::Tcp,
        };
        ports.containers[0].ports.push(port);
        ports.containers[1].ports.push(port);
        assert_eq!(
            check_pod(&ports).unwrap_err().field,
            "exec.pod.containers[1].ports[0].hostPort"
        );
        let mut probe = pod(vec![container("a", "a")]);
        probe.containers[0].liveness = Some(PodProbe {
            action: ProbeAction::Exec { command: Vec::new() },
            initial_delay_secs: 0,
            period_secs: 1,
            timeout_secs: 1,
            failure_threshold: 1,
        });
        assert_eq!(
            check_pod(&probe).unwrap_err().field,
            "exec.pod.containers[0].liveness"
        );
        let mut dir = pod(vec![container("a", "a")]);
        dir.containers[0].working_dir = Some("tmp".into());
        assert_eq!(
            check_pod(&dir).unwrap_err().field,
            "exec.pod.containers[0].workingDir"
        );
    }

    #[test]
    fn the_pull_policy_defaults_as_kubernetes_decides() {
        let cases = [
            ("web", PullPolicy::Always),
            ("web:latest", PullPolicy::Always),
            ("web:v1", PullPolicy::IfNotPresent),
            (
                "web@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
                PullPolicy::IfNotPresent,
            ),
        ];
        for (image, policy) in cases {
            assert_eq!(container("a", image).effective_pull_policy(), policy, "{image}");
        }
        let mut given = container("a", "web");
        given.pull_policy = Some(PullPolicy::Never);
        assert_eq!(given.effective_pull_policy(), PullPolicy::Never);
    }

    #[test]
    fn credentials_never_show_in_debug_output() {
        let mut spec = pod(vec![container("a", "a")]);
        spec.pull_auth.push(PullAuth {
            registry: "127.0.0.1:5000".into(),
            username: "alice".into(),
            password: "hunter2-secret".into(),
        });
        let shown = format!("{spec:?}");
        assert!(!shown.contains("hunter2") && !shown.contains("alice"), "{shown}");
        assert!(shown.contains("127.0.0.1:5000"));
    }

    #[test]
    fn restart_policies_decide_by_exit_code() {
        assert!(RestartPolicy::Always.restarts(0));
        assert!(!RestartPolicy::OnFailure.restarts(0));
        assert!(RestartPolicy::OnFailure.restarts(1));
        assert!(!RestartPolicy::Never.restarts(1));
    }
}
