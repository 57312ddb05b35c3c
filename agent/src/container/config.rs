//! What the `container` executor asks of the runtime for one instance, built from its spec
//! alone (pure): the pod sandbox's config — labelled with the instance, the agent and a digest
//! of the spec, so that a restarted agent finds its sandboxes and knows whether they still run
//! what is desired — and each container's config, with the image the agent pulled (by id, so a
//! tag moved in the registry never changes what a running pod restarts with).

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use drover_model::cluster::agent_api::{InstanceSpec, Resources};
use drover_model::cluster::pod::{ContainerSpec, PodSpec, PortProtocol};
use drover_model::cluster::validate::INSTANCE_ID_ENV;
use k8s_cri::v1 as cri;
use sha2::{Digest, Sha256};

use crate::layout::Layout;

/// The label naming the instance a sandbox or container runs.
pub const INSTANCE_LABEL: &str = "drover.instance";
/// The label naming the agent (its id) that made a sandbox.
pub const AGENT_LABEL: &str = "drover.agent";
/// The label holding a digest of the spec a sandbox was made for.
pub const SPEC_LABEL: &str = "drover.spec";
/// The label naming a container of the pod.
pub const CONTAINER_LABEL: &str = "drover.container";
/// The CRI namespace of every sandbox the agent makes.
pub const POD_NAMESPACE: &str = "drover";

/// CFS period the CPU limits are expressed in (the kubelet's).
const CPU_PERIOD_US: i64 = 100_000;

/// A digest of what the pod runs: its spec without the pull credentials (rotating them does not
/// restart a pod), its environment and its requests.
pub fn spec_digest(spec: &InstanceSpec, pod: &PodSpec) -> String {
    let mut hashed = pod.clone();
    hashed.pull_auth.clear();
    let json = serde_json::to_vec(&(&hashed, &spec.env, spec.resources)).unwrap_or_default();
    let digest = Sha256::digest(&json);
    digest.iter().take(12).map(|b| format!("{b:02x}")).collect()
}

/// The labels that find the sandboxes of instance `id` made by agent `agent`.
pub fn sandbox_selector(id: &str, agent: &str) -> HashMap<String, String> {
    HashMap::from([
        (INSTANCE_LABEL.to_string(), id.to_string()),
        (AGENT_LABEL.to_string(), agent.to_string()),
    ])
}

/// The sandbox config of `spec`'s pod, attempt `attempt`, logging under `log_dir`, its cgroups
/// under `cgroup_parent`.
pub fn sandbox_config(
    spec: &InstanceSpec,
    pod: &PodSpec,
    agent: &str,
    attempt: u32,
    log_dir: &Path,
    cgroup_parent: &str,
) -> cri::PodSandboxConfig {
    let id = spec.id.as_str();
    let mut labels = sandbox_selector(id, agent);
    labels.insert(SPEC_LABEL.to_string(), spec_digest(spec, pod));
    let host_network = pod.host_network;
    let namespaces = cri::NamespaceOption {
        network: if host_network {
            cri::NamespaceMode::Node as i32
        } else {
            cri::NamespaceMode::Pod as i32
        },
        pid: cri::NamespaceMode::Container as i32,
        ipc: cri::NamespaceMode::Pod as i32,
        ..Default::default()
    };
    let port_mappings = pod
        .containers
        .iter()
        .flat_map(|c| &c.ports)
        .filter_map(|port| {
            let host_port = port.host_port?;
            Some(cri::PortMapping {
                protocol: protocol(port.protocol) as i32,
                container_port: i32::from(port.container_port),
                host_port: i32::from(host_port),
                host_ip: String::new(),
            })
        })
        .collect();
    cri::PodSandboxConfig {
        metadata: Some(cri::PodSandboxMetadata {
            name: id.to_string(),
            uid: id.to_string(),
            namespace: POD_NAMESPACE.to_string(),
            attempt,
        }),
        // A host-network pod has the machine's name (the runtime refuses to set one).
        hostname: if host_network { String::new() } else { hostname(id) },
        log_directory: log_dir.display().to_string(),
        port_mappings,
        labels,
        linux: Some(cri::LinuxPodSandboxConfig {
            cgroup_parent: cgroup_parent.to_string(),
            security_context: Some(cri::LinuxSandboxSecurityContext {
                namespace_options: Some(namespaces),
                ..Default::default()
            }),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// The config of container `index` (attempt `attempt`) of `spec`'s pod, running image `image`
/// (the id the pull answered).
pub fn container_config(
    spec: &InstanceSpec,
    (index, container): (usize, &ContainerSpec),
    attempt: u32,
    image: &str,
) -> cri::ContainerConfig {
    let mut env: BTreeMap<&str, &str> = spec.env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    env.extend(container.env.iter().map(|(k, v)| (k.as_str(), v.as_str())));
    env.insert(INSTANCE_ID_ENV, spec.id.as_str());
    let envs = env
        .into_iter()
        .map(|(key, value)| cri::KeyValue {
            key: key.to_string(),
            value: value.to_string(),
        })
        .collect();
    cri::ContainerConfig {
        metadata: Some(cri::ContainerMetadata {
            name: container.name.clone(),
            attempt,
        }),
        image: Some(cri::ImageSpec {
            image: image.to_string(),
            user_specified_image: container.image.clone(),
            ..Default::default()
        }),
        command: container.command.clone(),
        args: container.args.clone(),
        working_dir: container.working_dir.clone().unwrap_or_default(),
        envs,
        labels: HashMap::from([
            (INSTANCE_LABEL.to_string(), spec.id.to_string()),
            (CONTAINER_LABEL.to_string(), container.name.clone()),
        ]),
        log_path: log_path(index, &container.name),
        linux: Some(cri::LinuxContainerConfig {
            resources: Some(resources(container.limits)),
            security_context: Some(cri::LinuxContainerSecurityContext {
                namespace_options: Some(cri::NamespaceOption {
                    network: cri::NamespaceMode::Pod as i32,
                    pid: cri::NamespaceMode::Container as i32,
                    ipc: cri::NamespaceMode::Pod as i32,
                    ..Default::default()
                }),
                ..Default::default()
            }),
        }),
        ..Default::default()
    }
}

/// The log file of container `index` named `name`, relative to the sandbox's log directory (the
/// instance's directory; every run of it appends there): the first container's is the
/// instance's own log ([`Layout::LOG`]), which the log routes read; the others' are
/// `<name>.log` beside it.
pub fn log_path(index: usize, name: &str) -> String {
    if index == 0 {
        Layout::LOG.to_string()
    } else {
        format!("{name}.log")
    }
}

/// The runtime's cgroup limits for `limits` (0: none), as the kubelet sets them.
fn resources(limits: Resources) -> cri::LinuxContainerResources {
    let memory = i64::try_from(limits.memory_mib.saturating_mul(1024 * 1024)).unwrap_or(i64::MAX);
    let quota = i64::try_from(limits.cpu_millis.saturating_mul(100)).unwrap_or(i64::MAX);
    cri::LinuxContainerResources {
        cpu_period: if limits.cpu_millis > 0 { CPU_PERIOD_US } else { 0 },
        cpu_quota: quota,
        memory_limit_in_bytes: memory,
        ..Default::default()
    }
}

fn protocol(protocol: PortProtocol) -> cri::Protocol {
    match protocol {
        PortProtocol::Tcp => cri::Protocol::Tcp,
        PortProtocol::Udp => cri::Protocol::Udp,
    }
}

/// A host name from an instance id: dots become dashes, at most 63 characters.
fn hostname(id: &str) -> String {
    let name: String = id
        .chars()
        .map(|c| if c == '.' { '-' } else { c })
        .take(63)
        .collect();
    name.trim_end_matches('-').to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use drover_model::cluster::agent_api::{ExecSpec, InstanceId};
    use drover_model::cluster::pod::{ContainerPort, PullAuth, RestartPolicy};

    fn pod() -> PodSpec {
        PodSpec {
            containers: vec![ContainerSpec {
                name: "web".into(),
                image: "127.0.0.1:5000/web:v1".into(),
                pull_policy: None,
                command: vec!["httpd".into()],
                args: vec!["-f".into()],
                env: BTreeMap::from([("MODE".into(), "container".into())]),
                working_dir: Some("/srv".into()),
                ports: vec![ContainerPort {
                    container_port: 80,
                    host_port: Some(18080),
                    protocol: PortProtocol::Tcp,
                }],
                limits: Resources {
                    cpu_millis: 250,
                    memory_mib: 64,
                },
                readiness: None,
                liveness: None,
            }],
            restart_policy: RestartPolicy::Always,
            host_network: false,
            termination_grace_secs: 30,
            pull_auth: Vec::new(),
        }
    }

    fn spec(pod: &PodSpec) -> InstanceSpec {
        InstanceSpec {
            id: InstanceId::parse("acme.web.r1.0").unwrap(),
            exec: ExecSpec {
                pod: Some(pod.clone()),
                ..Default::default()
            },
            resources: Resources::default(),
            env: BTreeMap::from([("MODE".into(), "instance".into())]),
        }
    }

    #[test]
    fn a_sandbox_is_labelled_named_and_mapped_from_the_spec() {
        let pod = pod();
        let config = sandbox_config(
            &spec(&pod),
            &pod,
            "agent-1",
            2,
            Path::new("/logs"),
            "/drover/a/acme.web.r1.0",
        );
        let metadata = config.metadata.unwrap();
        assert_eq!((metadata.name.as_str(), metadata.attempt), ("acme.web.r1.0", 2));
        assert_eq!(config.hostname, "acme-web-r1-0");
        assert_eq!(config.labels[INSTANCE_LABEL], "acme.web.r1.0");
        assert_eq!(config.labels[AGENT_LABEL], "agent-1");
        assert_eq!(config.port_mappings.len(), 1);
        assert_eq!(config.port_mappings[0].host_port, 18080);
        let mut host = pod.clone();
        host.host_network = true;
        let config = sandbox_config(&spec(&host), &host, "agent-1", 0, Path::new("/logs"), "/p");
        assert_eq!(
            config.hostname, "",
            "the runtime refuses a host name for a host-network pod"
        );
        let namespaces = config
            .linux
            .unwrap()
            .security_context
            .unwrap()
            .namespace_options
            .unwrap();
        assert_eq!(namespaces.network, cri::NamespaceMode::Node as i32);
    }

    #[test]
    fn a_container_runs_the_pulled_image_with_its_limits_and_environment() {
        let pod = pod();
        let config = container_config(&spec(&pod), (0, &pod.containers[0]), 3, "sha256:abc");
        assert_eq!(config.image.as_ref().unwrap().image, "sha256:abc");
        assert_eq!(config.metadata.as_ref().unwrap().attempt, 3);
        let env: BTreeMap<_, _> = config
            .envs
            .iter()
            .map(|kv| (kv.key.as_str(), kv.value.as_str()))
            .collect();
        assert_eq!(env["MODE"], "container", "the container's own value wins");
        assert_eq!(env[INSTANCE_ID_ENV], "acme.web.r1.0");
        let limits = config.linux.unwrap().resources.unwrap();
        assert_eq!(limits.memory_limit_in_bytes, 64 * 1024 * 1024);
        assert_eq!((limits.cpu_quota, limits.cpu_period), (25_000, 100_000));
        assert_eq!(config.working_dir, "/srv");
        assert_eq!(
            config.log_path,
            Layout::LOG,
            "the first container logs where the log routes read"
        );
        assert_eq!(log_path(1, "side"), "side.log");
        let unlimited = resources(Resources::default());
        assert_eq!(
            (
                unlimited.cpu_quota,
                unlimited.cpu_period,
                unlimited.memory_limit_in_bytes
            ),
            (0, 0, 0)
        );
    }

    #[test]
    fn the_spec_digest_ignores_credentials_and_follows_what_runs() {
        let pod = pod();
        let base = spec_digest(&spec(&pod), &pod);
        let mut rotated = pod.clone();
        rotated.pull_auth.push(PullAuth {
            registry: "127.0.0.1:5000".into(),
            username: "u".into(),
            password: "p".into(),
        });
        assert_eq!(spec_digest(&spec(&rotated), &rotated), base);
        let mut retagged = pod.clone();
        retagged.containers[0].image = "127.0.0.1:5000/web:v2".into();
        assert_ne!(spec_digest(&spec(&retagged), &retagged), base);
    }
}
