//! The baseline checks, one table row per field and value: allowed values pass, each disallowed
//! value is refused at its path; container fields in every container list; and the levels.

use serde_json::{json, Value};

use super::*;

const AT: &str = "spec.manifest.0";

/// The paths of the violations of a pod found at [`AT`], with the prefix taken off.
fn refused(pod: &Value, policy: PodSecurity) -> Vec<String> {
    check(pod, AT, policy)
        .into_iter()
        .map(|v| {
            v.field
                .strip_prefix(&format!("{AT}."))
                .map(str::to_string)
                .unwrap_or(v.field)
        })
        .collect()
}

fn pod(spec: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": spec})
}

/// A pod whose second entry of `list` has `fields` besides its name and image (the first is a
/// plain container).
fn with_container(list: &str, fields: Value) -> Value {
    let mut second = json!({"name": "b", "image": "r/b"});
    if let (Some(second), Value::Object(fields)) = (second.as_object_mut(), fields) {
        second.extend(fields);
    }
    let first = json!({"name": "a", "image": "r/a"});
    let mut spec = json!({"containers": [first.clone()]});
    spec[list] = json!([first, second]);
    pod(spec)
}

#[test]
fn a_minimal_pod_passes_baseline() {
    let minimal =
        pod(json!({"containers": [{"name": "web", "image": "r/web", "ports": [{"containerPort": 80}]}]}));
    assert_eq!(refused(&minimal, PodSecurity::Baseline), Vec::<String>::new());
}

/// Pod-level fields: (spec, paths refused under baseline).
#[test]
fn pod_level_fields() {
    let cases: Vec<(Value, Vec<&str>)> = vec![
        // Host namespaces.
        (
            json!({"hostNetwork": false, "hostPID": false, "hostIPC": false}),
            vec![],
        ),
        (
            json!({"hostNetwork": null, "hostPID": null, "hostIPC": null}),
            vec![],
        ),
        (json!({"hostNetwork": true}), vec!["spec.hostNetwork"]),
        (json!({"hostPID": true}), vec!["spec.hostPID"]),
        (json!({"hostIPC": true}), vec!["spec.hostIPC"]),
        (json!({"hostPID": "true"}), vec!["spec.hostPID"]),
        (
            json!({"hostNetwork": true, "hostPID": true, "hostIPC": true}),
            vec!["spec.hostNetwork", "spec.hostPID", "spec.hostIPC"],
        ),
        // HostProcess.
        (
            json!({"securityContext": {"windowsOptions": {"hostProcess": false}}}),
            vec![],
        ),
        (
            json!({"securityContext": {"windowsOptions": {"hostProcess": true}}}),
            vec!["spec.securityContext.windowsOptions.hostProcess"],
        ),
        // hostPath volumes.
        (
            json!({"volumes": [{"name": "v", "emptyDir": {}}, {"name": "w", "hostPath": null}]}),
            vec![],
        ),
        (
            json!({"volumes": [{"name": "v", "emptyDir": {}}, {"name": "h", "hostPath": {"path": "/"}}]}),
            vec!["spec.volumes.1.hostPath"],
        ),
        // SELinux.
        (json!({"securityContext": {"seLinuxOptions": {}}}), vec![]),
        (
            json!({"securityContext": {"seLinuxOptions": {"type": ""}}}),
            vec![],
        ),
        (
            json!({"securityContext": {"seLinuxOptions": {"type": "container_t", "level": "s0:c1,c2"}}}),
            vec![],
        ),
        (
            json!({"securityContext": {"seLinuxOptions": {"type": "container_init_t"}}}),
            vec![],
        ),
        (
            json!({"securityContext": {"seLinuxOptions": {"type": "container_kvm_t"}}}),
            vec![],
        ),
        (
            json!({"securityContext": {"seLinuxOptions": {"type": "container_engine_t"}}}),
            vec![],
        ),
        (
            json!({"securityContext": {"seLinuxOptions": {"user": "", "role": ""}}}),
            vec![],
        ),
        (
            json!({"securityContext": {"seLinuxOptions": {"type": "spc_t"}}}),
            vec!["spec.securityContext.seLinuxOptions.type"],
        ),
        (
            json!({"securityContext": {"seLinuxOptions": {"user": "system_u", "role": "system_r"}}}),
            vec![
                "spec.securityContext.seLinuxOptions.user",
                "spec.securityContext.seLinuxOptions.role",
            ],
        ),
        // seccomp.
        (
            json!({"securityContext": {"seccompProfile": {"type": "RuntimeDefault"}}}),
            vec![],
        ),
        (
            json!({"securityContext": {"seccompProfile": {"type": "Localhost", "localhostProfile": "p.json"}}}),
            vec![],
        ),
        (
            json!({"securityContext": {"seccompProfile": {"type": "Unconfined"}}}),
            vec!["spec.securityContext.seccompProfile.type"],
        ),
        (
            json!({"securityContext": {"seccompProfile": {}}}),
            vec!["spec.securityContext.seccompProfile.type"],
        ),
        // AppArmor (the field).
        (
            json!({"securityContext": {"appArmorProfile": {"type": "RuntimeDefault"}}}),
            vec![],
        ),
        (
            json!({"securityContext": {"appArmorProfile": {"type": "Localhost", "localhostProfile": "k8s-x"}}}),
            vec![],
        ),
        (
            json!({"securityContext": {"appArmorProfile": {"type": "Unconfined"}}}),
            vec!["spec.securityContext.appArmorProfile.type"],
        ),
        // Sysctls: every safe one passes, anything else is refused by index.
        (
            json!({"securityContext": {"sysctls": SAFE_SYSCTLS.iter().map(|name| json!({"name": name, "value": "1"})).collect::<Vec<_>>()}}),
            vec![],
        ),
        (
            json!({"securityContext": {"sysctls": [
                {"name": "net.ipv4.tcp_syncookies", "value": "1"},
                {"name": "kernel.msgmax", "value": "65536"},
                {"name": "net.ipv4.ip_forward", "value": "1"}
            ]}}),
            vec![
                "spec.securityContext.sysctls.1.name",
                "spec.securityContext.sysctls.2.name",
            ],
        ),
        (
            json!({"securityContext": {"sysctls": [{"value": "1"}]}}),
            vec!["spec.securityContext.sysctls.0.name"],
        ),
    ];
    for (spec, expected) in cases {
        let mut spec = spec;
        spec["containers"] = json!([{"name": "a", "image": "r/a"}]);
        assert_eq!(
            refused(&pod(spec.clone()), PodSecurity::Baseline),
            expected,
            "{spec}"
        );
    }
}

/// Container-level fields, in each of the three container lists: (fields, paths refused under
/// baseline, relative to the container).
#[test]
fn container_level_fields() {
    let cases: Vec<(Value, Vec<&str>)> = vec![
        // Privileged.
        (json!({"securityContext": {"privileged": false}}), vec![]),
        (json!({"securityContext": {"privileged": null}}), vec![]),
        (
            json!({"securityContext": {"privileged": true}}),
            vec!["securityContext.privileged"],
        ),
        (
            json!({"securityContext": {"privileged": "yes"}}),
            vec!["securityContext.privileged"],
        ),
        // HostProcess.
        (
            json!({"securityContext": {"windowsOptions": {"hostProcess": false}}}),
            vec![],
        ),
        (
            json!({"securityContext": {"windowsOptions": {"hostProcess": true}}}),
            vec!["securityContext.windowsOptions.hostProcess"],
        ),
        // Capabilities: the whole baseline set may be added; drops are never refused.
        (
            json!({"securityContext": {"capabilities": {"add": BASELINE_CAPABILITIES}}}),
            vec![],
        ),
        (
            json!({"securityContext": {"capabilities": {"drop": ["ALL", "SYS_ADMIN"]}}}),
            vec![],
        ),
        (
            json!({"securityContext": {"capabilities": {"add": ["CHOWN", "NET_ADMIN", "SYS_ADMIN"]}}}),
            vec![
                "securityContext.capabilities.add.1",
                "securityContext.capabilities.add.2",
            ],
        ),
        (
            json!({"securityContext": {"capabilities": {"add": ["NET_RAW"]}}}),
            vec!["securityContext.capabilities.add.0"],
        ),
        (
            json!({"securityContext": {"capabilities": {"add": ["ALL"]}}}),
            vec!["securityContext.capabilities.add.0"],
        ),
        (
            json!({"securityContext": {"capabilities": {"add": ["CAP_CHOWN"]}}}),
            vec!["securityContext.capabilities.add.0"],
        ),
        // Host ports.
        (
            json!({"ports": [{"containerPort": 80}, {"containerPort": 81, "hostPort": 0}]}),
            vec![],
        ),
        (
            json!({"ports": [{"containerPort": 80}, {"containerPort": 81, "hostPort": 8081}]}),
            vec!["ports.1.hostPort"],
        ),
        // SELinux.
        (
            json!({"securityContext": {"seLinuxOptions": {"type": "container_t"}}}),
            vec![],
        ),
        (
            json!({"securityContext": {"seLinuxOptions": {"type": "unconfined_t"}}}),
            vec!["securityContext.seLinuxOptions.type"],
        ),
        (
            json!({"securityContext": {"seLinuxOptions": {"user": "root"}}}),
            vec!["securityContext.seLinuxOptions.user"],
        ),
        (
            json!({"securityContext": {"seLinuxOptions": {"role": "sysadm_r"}}}),
            vec!["securityContext.seLinuxOptions.role"],
        ),
        // /proc mount.
        (json!({"securityContext": {"procMount": "Default"}}), vec![]),
        (
            json!({"securityContext": {"procMount": "Unmasked"}}),
            vec!["securityContext.procMount"],
        ),
        // seccomp.
        (
            json!({"securityContext": {"seccompProfile": {"type": "RuntimeDefault"}}}),
            vec![],
        ),
        (
            json!({"securityContext": {"seccompProfile": {"type": "Unconfined"}}}),
            vec!["securityContext.seccompProfile.type"],
        ),
        // AppArmor.
        (
            json!({"securityContext": {"appArmorProfile": {"type": "Localhost", "localhostProfile": "p"}}}),
            vec![],
        ),
        (
            json!({"securityContext": {"appArmorProfile": {"type": "Unconfined"}}}),
            vec!["securityContext.appArmorProfile.type"],
        ),
        // Probe and lifecycle hosts.
        (
            json!({
                "livenessProbe": {"httpGet": {"port": 80, "host": ""}},
                "readinessProbe": {"tcpSocket": {"port": 80}},
                "lifecycle": {"preStop": {"httpGet": {"port": 80, "path": "/stop"}}}
            }),
            vec![],
        ),
        (
            json!({
                "livenessProbe": {"httpGet": {"port": 80, "host": "169.254.169.254"}},
                "readinessProbe": {"tcpSocket": {"port": 22, "host": "10.0.0.1"}},
                "startupProbe": {"httpGet": {"port": 80, "host": "example.com"}},
                "lifecycle": {
                    "postStart": {"tcpSocket": {"port": 80, "host": "h"}},
                    "preStop": {"httpGet": {"port": 80, "host": "h"}}
                }
            }),
            vec![
                "livenessProbe.httpGet.host",
                "readinessProbe.tcpSocket.host",
                "startupProbe.httpGet.host",
                "lifecycle.postStart.tcpSocket.host",
                "lifecycle.preStop.httpGet.host",
            ],
        ),
    ];
    for list in ["initContainers", "containers", "ephemeralContainers"] {
        for (fields, expected) in &cases {
            let pod = with_container(list, fields.clone());
            // The second entry of the list: `containers` has one entry before it, and so do
            // the other lists (a placeholder).
            let expected: Vec<String> = expected
                .iter()
                .map(|path| format!("spec.{list}.1.{path}"))
                .collect();
            assert_eq!(refused(&pod, PodSecurity::Baseline), expected, "{list}: {fields}");
        }
    }
}

#[test]
fn an_unmasked_proc_is_allowed_in_a_user_namespace_of_the_pods_own() {
    let unmasked = json!({"securityContext": {"procMount": "Unmasked"}});
    let mut own = with_container("containers", unmasked.clone());
    own["spec"]["hostUsers"] = json!(false);
    assert_eq!(refused(&own, PodSecurity::Baseline), Vec::<String>::new());
    let mut shared = with_container("containers", unmasked);
    shared["spec"]["hostUsers"] = json!(true);
    assert_eq!(
        refused(&shared, PodSecurity::Baseline),
        vec!["spec.containers.1.securityContext.procMount"]
    );
}

#[test]
fn apparmor_annotations() {
    let cases: Vec<(&str, Value, bool)> = vec![
        (
            "container.apparmor.security.beta.kubernetes.io/web",
            json!("runtime/default"),
            true,
        ),
        (
            "container.apparmor.security.beta.kubernetes.io/web",
            json!("localhost/k8s-web"),
            true,
        ),
        (
            "container.apparmor.security.beta.kubernetes.io/web",
            json!(""),
            true,
        ),
        (
            "container.apparmor.security.beta.kubernetes.io/web",
            json!("unconfined"),
            false,
        ),
        (
            "container.apparmor.security.beta.kubernetes.io/web",
            json!(7),
            false,
        ),
        // Other annotations are no concern of the check.
        ("example.com/apparmor", json!("unconfined"), true),
    ];
    for (key, value, allowed) in cases {
        let mut pod = pod(json!({"containers": [{"name": "web", "image": "r/web"}]}));
        pod["metadata"]["annotations"] = json!({ key: value });
        let expected = if allowed {
            vec![]
        } else {
            vec![format!("metadata.annotations.{key}")]
        };
        assert_eq!(refused(&pod, PodSecurity::Baseline), expected, "{key}={value}");
    }
}

#[test]
fn the_path_prefix_is_where_the_pod_sits() {
    let deployment = json!({
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
        "spec": {"template": {
            "metadata": {"annotations": {"container.apparmor.security.beta.kubernetes.io/a": "unconfined"}},
            "spec": {"containers": [{"name": "a", "image": "r/a", "securityContext": {"privileged": true}}]}
        }}
    });
    let at = "spec.manifest.2.spec.template";
    let found = check(&deployment["spec"]["template"], at, PodSecurity::Baseline);
    let fields: Vec<&str> = found.iter().map(|v| v.field.as_str()).collect();
    assert_eq!(
        fields,
        vec![
            "spec.manifest.2.spec.template.metadata.annotations.container.apparmor.security.beta.kubernetes.io/a",
            "spec.manifest.2.spec.template.spec.containers.0.securityContext.privileged",
        ]
    );
}

/// One pod breaking every control once.
fn everything_refused() -> Value {
    json!({
        "metadata": {"annotations": {"container.apparmor.security.beta.kubernetes.io/a": "unconfined"}},
        "spec": {
            "hostNetwork": true, "hostPID": true, "hostIPC": true,
            "securityContext": {"sysctls": [{"name": "kernel.sem", "value": "1"}]},
            "volumes": [{"name": "root", "hostPath": {"path": "/"}}],
            "containers": [{
                "name": "a", "image": "r/a",
                "ports": [{"containerPort": 80, "hostPort": 80}],
                "securityContext": {"privileged": true, "capabilities": {"add": ["SYS_ADMIN"]}}
            }]
        }
    })
}

#[test]
fn levels() {
    let all = refused(&everything_refused(), PodSecurity::Baseline);
    assert_eq!(
        all,
        vec![
            "metadata.annotations.container.apparmor.security.beta.kubernetes.io/a",
            "spec.hostNetwork",
            "spec.hostPID",
            "spec.hostIPC",
            "spec.securityContext.sysctls.0.name",
            "spec.volumes.0.hostPath",
            "spec.containers.0.securityContext.privileged",
            "spec.containers.0.securityContext.capabilities.add.0",
            "spec.containers.0.ports.0.hostPort",
        ]
    );
    // Host network and host ports are what the middle level allows; nothing else.
    let host_network = refused(&everything_refused(), PodSecurity::BaselineWithHostNetwork);
    let expected: Vec<String> = all
        .iter()
        .filter(|path| *path != "spec.hostNetwork" && !path.ends_with("hostPort"))
        .cloned()
        .collect();
    assert_eq!(host_network, expected);
    assert_eq!(
        refused(&everything_refused(), PodSecurity::Privileged),
        Vec::<String>::new()
    );
}

#[test]
fn a_violation_says_what_is_allowed() {
    let found = check(&everything_refused(), AT, PodSecurity::Baseline);
    let capability = found
        .iter()
        .find(|v| v.field.ends_with("capabilities.add.0"))
        .map(ToString::to_string);
    assert_eq!(
        capability.as_deref(),
        Some(
            "spec.manifest.0.spec.containers.0.securityContext.capabilities.add.0: adding this capability is refused by the baseline pod security level: only \"AUDIT_WRITE\", \"CHOWN\", \"DAC_OVERRIDE\", \"FOWNER\", \"FSETID\", \"KILL\", \"MKNOD\", \"NET_BIND_SERVICE\", \"SETFCAP\", \"SETGID\", \"SETPCAP\", \"SETUID\", \"SYS_CHROOT\""
        )
    );
    let host_network = found.iter().find(|v| v.field.ends_with("hostNetwork"));
    assert!(
        host_network.is_some_and(|v| v.message.contains("an operator may allow host network")),
        "{host_network:?}"
    );
}

#[test]
fn the_setting_is_written_in_camel_case_and_defaults_to_baseline() {
    for (level, text) in [
        (PodSecurity::Baseline, "baseline"),
        (PodSecurity::BaselineWithHostNetwork, "baselineWithHostNetwork"),
        (PodSecurity::Privileged, "privileged"),
    ] {
        assert_eq!(serde_json::to_value(level).ok(), Some(json!(text)));
        assert_eq!(
            serde_json::from_value::<PodSecurity>(json!(text)).ok(),
            Some(level)
        );
        assert_eq!(level.to_string(), text);
    }
    assert_eq!(PodSecurity::default(), PodSecurity::Baseline);
    assert!(serde_json::from_value::<PodSecurity>(json!("restricted")).is_err());
}
