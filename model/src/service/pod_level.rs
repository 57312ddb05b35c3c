//! The tenant's pod security level held on a deployment's typed pods, whichever way they came
//! (the platform API's JSON, a Kumori bundle, a Krake manifest): of everything the Pod Security
//! Standards' baseline checks, a [`PodSpec`](crate::cluster::pod::PodSpec) can only carry the
//! host's network and host ports — the rest (privileged, host namespaces, `hostPath`, added
//! capabilities, …) it has no field for, so no pod Drover runs has it. A Krake manifest is
//! checked on its JSON first ([`crate::pod_security::check`]), naming its manifest path; this
//! is the check every other way passes. Pure.

use super::Deployment;
use crate::platform::error::PlatformError;
use crate::pod_security::PodSecurity;

/// Refuses the first pod of `deployment` that `level` does not allow, naming its field
/// (`roles.web.exec.pod.hostNetwork`).
pub fn pods_within(level: PodSecurity, deployment: &Deployment) -> Result<(), PlatformError> {
    if level != PodSecurity::Baseline {
        return Ok(());
    }
    for (role, spec) in &deployment.roles {
        let Some(pod) = &spec.exec.pod else {
            continue;
        };
        let at = format!("roles.{role}.exec.pod");
        if pod.host_network {
            return Err(PlatformError::invalid(
                format!("{at}.hostNetwork"),
                "sharing the host's network namespace (hostNetwork) is refused by the baseline pod security level: leave it out or false (an operator may allow host network for the tenant)",
            ));
        }
        for (c, container) in pod.containers.iter().enumerate() {
            if let Some(p) = container.ports.iter().position(|port| port.host_port.is_some()) {
                return Err(PlatformError::invalid(
                    format!("{at}.containers[{c}].ports[{p}].hostPort"),
                    "a host port is refused by the baseline pod security level: leave it out (an operator may allow host ports for the tenant)",
                ));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::agent_api::ExecSpec;
    use crate::cluster::pod::{ContainerPort, PodSpec, PortProtocol};
    use crate::service::RoleSpec;

    fn deployment(host_network: bool, host_port: Option<u16>) -> Deployment {
        let pod: PodSpec = serde_json::from_value(serde_json::json!({
            "containers": [{"name": "web", "image": "busybox"}], "hostNetwork": host_network}))
        .expect("a pod");
        let mut pod = pod;
        pod.containers[0].ports.push(ContainerPort {
            container_port: 80,
            host_port,
            protocol: PortProtocol::Tcp,
        });
        let role = RoleSpec {
            instances: 1,
            resources: Default::default(),
            exec: ExecSpec {
                pod: Some(pod),
                ..ExecSpec::default()
            },
            env: Default::default(),
        };
        let mut deployment: Deployment =
            serde_json::from_value(serde_json::json!({"roles": {}})).expect("a deployment");
        deployment.roles.insert("web".into(), role);
        deployment
    }

    #[test]
    fn host_network_and_host_ports_only_where_the_level_allows() {
        use PodSecurity::*;
        let table = [
            (deployment(false, None), Baseline, None),
            (
                deployment(true, None),
                Baseline,
                Some("roles.web.exec.pod.hostNetwork"),
            ),
            (
                deployment(false, Some(8080)),
                Baseline,
                Some("roles.web.exec.pod.containers[0].ports[0].hostPort"),
            ),
            (deployment(true, Some(80)), BaselineWithHostNetwork, None),
            (deployment(true, Some(80)), Privileged, None),
        ];
        for (deployment, level, refused) in table {
            let got = pods_within(level, &deployment).err().map(|e| match e {
                PlatformError::Invalid { field, .. } => field,
                other => other.to_string(),
            });
            assert_eq!(got.as_deref(), refused, "{level}");
        }
    }
}
