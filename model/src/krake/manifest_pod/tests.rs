//! The translation of workloads of container images, table by table: what is read, what the
//! tenant's level refuses first, what Drover does not honour.

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
    let role =
        translated(&[deployment(pod), secret()], PodSecurity::BaselineWithHostNetwork).expect("translated");
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
            json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "Web_Site"},
                   "spec": {"template": {"spec": {"containers": [side()]}}}}),
            "spec.manifest.0.metadata.name".to_string(),
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
