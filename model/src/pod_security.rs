//! The Kubernetes Pod Security Standards' *baseline* profile, checked on a pod as JSON before
//! anything is committed, so that a tenant's pod cannot own the machine it runs on.
//!
//! The checks, their fields and their allowed values are the baseline controls of the Pod
//! Security Standards as Kubernetes v1.36 enforces them (its pod-security admission at the
//! `latest` version): HostProcess, host namespaces, privileged containers, capabilities, hostPath
//! volumes, host ports, AppArmor, SELinux, `/proc` mount type, seccomp, sysctls, and the host of
//! probes and lifecycle handlers. Unlike Kubernetes, which decodes the pod first, a value of the
//! wrong type (`"privileged": "yes"`) is not an allowed value, so it is refused too. Every
//! violation names its field by the dotted path Krake's `422`s use (list items by index).
//!
//! [`PodSecurity`] is the level a tenant's pods are held to: baseline unless the operator relaxes
//! it for that tenant, to baseline with the host's network (host ports included) or to no
//! restriction at all.

use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

/// The level a tenant's pods are held to; the operator chooses it per tenant.
///
/// Kubernetes' levels `baseline` and `privileged`, and between them baseline with the host's
/// network and host ports allowed: one relaxation, because a pod on the host network binds its
/// container ports on the host anyway.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub enum PodSecurity {
    /// Every baseline check (the default).
    #[default]
    Baseline,
    /// Baseline, except that `hostNetwork: true` and non-zero `hostPort`s are allowed.
    BaselineWithHostNetwork,
    /// No check at all (Kubernetes' `privileged` level): for tenants the operator trusts with
    /// the machine.
    Privileged,
}

impl PodSecurity {
    /// Whether this is the default level (stored tenants leave it out).
    pub fn is_baseline(&self) -> bool {
        *self == PodSecurity::Baseline
    }

    /// The level's name as the API writes it.
    pub fn as_str(&self) -> &'static str {
        match self {
            PodSecurity::Baseline => "baseline",
            PodSecurity::BaselineWithHostNetwork => "baselineWithHostNetwork",
            PodSecurity::Privileged => "privileged",
        }
    }
}

impl fmt::Display for PodSecurity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One field that breaks the level.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// The field's dotted path (`spec.manifest.0.spec.containers.1.securityContext.privileged`).
    pub field: String,
    /// What the level refuses and what it allows instead.
    pub message: String,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.field, self.message)
    }
}

/// Capabilities a baseline container may add (the container runtimes' default set).
pub const BASELINE_CAPABILITIES: [&str; 13] = [
    "AUDIT_WRITE",
    "CHOWN",
    "DAC_OVERRIDE",
    "FOWNER",
    "FSETID",
    "KILL",
    "MKNOD",
    "NET_BIND_SERVICE",
    "SETFCAP",
    "SETGID",
    "SETPCAP",
    "SETUID",
    "SYS_CHROOT",
];

/// Sysctls a baseline pod may set: namespaced, and isolated from other pods on the machine.
pub const SAFE_SYSCTLS: [&str; 12] = [
    "kernel.shm_rmid_forced",
    "net.ipv4.ip_local_port_range",
    "net.ipv4.ip_local_reserved_ports",
    "net.ipv4.ip_unprivileged_port_start",
    "net.ipv4.ping_group_range",
    "net.ipv4.tcp_fin_timeout",
    "net.ipv4.tcp_keepalive_intvl",
    "net.ipv4.tcp_keepalive_probes",
    "net.ipv4.tcp_keepalive_time",
    "net.ipv4.tcp_rmem",
    "net.ipv4.tcp_syncookies",
    "net.ipv4.tcp_wmem",
];

/// SELinux types a baseline pod may ask for (the empty type is the runtime's choice).
pub const SELINUX_TYPES: [&str; 5] = [
    "",
    "container_t",
    "container_init_t",
    "container_kvm_t",
    "container_engine_t",
];

/// The annotation prefix of the (deprecated) per-container AppArmor profile.
pub const APPARMOR_ANNOTATION_PREFIX: &str = "container.apparmor.security.beta.kubernetes.io/";

/// The container lists of a pod spec, in the order Kubernetes visits them.
const CONTAINER_LISTS: [&str; 3] = ["initContainers", "containers", "ephemeralContainers"];

/// Checks one pod against `policy`: `pod` is an object with the pod's `metadata` and `spec`
/// (a Pod itself, or the `spec.template` of a Deployment, StatefulSet or Job), found at the
/// dotted path `at` (`spec.manifest.0` or `spec.manifest.0.spec.template`). Returns every
/// violation, in a stable order; none means the pod may run.
pub fn check(pod: &Value, at: &str, policy: PodSecurity) -> Vec<Violation> {
    if policy == PodSecurity::Privileged {
        return Vec::new();
    }
    let mut checker = Checker {
        policy,
        found: Vec::new(),
    };
    checker.annotations(
        pod.pointer("/metadata/annotations"),
        &format!("{at}.metadata.annotations"),
    );
    if let Some(spec) = pod.get("spec") {
        checker.pod_spec(spec, &format!("{at}.spec"));
    }
    checker.found
}

struct Checker {
    policy: PodSecurity,
    found: Vec<Violation>,
}

/// Absent, `null` or `false`.
fn unset_or_false(value: Option<&Value>) -> bool {
    matches!(value, None | Some(Value::Null) | Some(Value::Bool(false)))
}

/// Absent, `null` or `""`.
fn unset_or_empty(value: Option<&Value>) -> bool {
    match value {
        None | Some(Value::Null) => true,
        Some(Value::String(text)) => text.is_empty(),
        Some(_) => false,
    }
}

/// The object at `key`, when there is one (`null` and other types are no object).
fn object<'a>(parent: &'a Value, key: &str) -> Option<&'a Value> {
    parent.get(key).filter(|value| value.is_object())
}

/// The items of the list at `key` with their indexes (nothing unless it is a list).
fn items<'a>(parent: &'a Value, key: &str) -> impl Iterator<Item = (usize, &'a Value)> {
    parent
        .get(key)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
}

fn quoted(values: &[&str]) -> String {
    values
        .iter()
        .map(|value| format!("{value:?}"))
        .collect::<Vec<_>>()
        .join(", ")
}

impl Checker {
    fn refuse(&mut self, field: String, message: impl Into<String>) {
        self.found.push(Violation {
            field,
            message: message.into(),
        });
    }

    /// A field whose only allowed values are unset and `false`.
    fn must_not_be_true(&mut self, parent: &Value, key: &str, at: &str, what: &str) {
        if !unset_or_false(parent.get(key)) {
            self.refuse(
                format!("{at}.{key}"),
                format!("{what} is refused by the baseline pod security level: leave it out or false"),
            );
        }
    }

    fn annotations(&mut self, annotations: Option<&Value>, at: &str) {
        let Some(Value::Object(annotations)) = annotations else {
            return;
        };
        for (key, value) in annotations {
            if !key.starts_with(APPARMOR_ANNOTATION_PREFIX) {
                continue;
            }
            let allowed = match value {
                Value::String(profile) => {
                    profile.is_empty() || profile == "runtime/default" || profile.starts_with("localhost/")
                }
                _ => false,
            };
            if !allowed {
                self.refuse(
                    format!("{at}.{key}"),
                    "this AppArmor profile is refused by the baseline pod security level: \"runtime/default\", \"localhost/<profile>\" or empty",
                );
            }
        }
    }

    fn pod_spec(&mut self, spec: &Value, at: &str) {
        if self.policy != PodSecurity::BaselineWithHostNetwork {
            self.host_network(spec, at);
        }
        self.must_not_be_true(
            spec,
            "hostPID",
            at,
            "sharing the host's process namespace (hostPID)",
        );
        self.must_not_be_true(spec, "hostIPC", at, "sharing the host's IPC namespace (hostIPC)");
        if let Some(context) = object(spec, "securityContext") {
            let at = format!("{at}.securityContext");
            self.security_context(context, &at);
            self.sysctls(context, &at);
        }
        for (index, volume) in items(spec, "volumes") {
            if !matches!(volume.get("hostPath"), None | Some(Value::Null)) {
                self.refuse(
                    format!("{at}.volumes.{index}.hostPath"),
                    "hostPath volumes are refused by the baseline pod security level: use another volume type",
                );
            }
        }
        // A pod in a user namespace of its own (`hostUsers: false`) may unmask /proc.
        let own_user_namespace = spec.get("hostUsers") == Some(&Value::Bool(false));
        for list in CONTAINER_LISTS {
            for (index, container) in items(spec, list) {
                self.container(container, &format!("{at}.{list}.{index}"), own_user_namespace);
            }
        }
    }

    fn host_network(&mut self, spec: &Value, at: &str) {
        if !unset_or_false(spec.get("hostNetwork")) {
            self.refuse(
                format!("{at}.hostNetwork"),
                "sharing the host's network namespace (hostNetwork) is refused by the baseline pod security level: leave it out or false (an operator may allow host network for the tenant)",
            );
        }
    }

    /// The settings a pod's and a container's security contexts share.
    fn security_context(&mut self, context: &Value, at: &str) {
        if let Some(windows) = object(context, "windowsOptions") {
            self.must_not_be_true(
                windows,
                "hostProcess",
                &format!("{at}.windowsOptions"),
                "a Windows HostProcess container",
            );
        }
        if let Some(selinux) = object(context, "seLinuxOptions") {
            self.selinux(selinux, &format!("{at}.seLinuxOptions"));
        }
        if let Some(profile) = object(context, "seccompProfile") {
            self.profile_type(
                profile,
                &format!("{at}.seccompProfile.type"),
                "this seccomp profile",
            );
        }
        if let Some(profile) = object(context, "appArmorProfile") {
            self.profile_type(
                profile,
                &format!("{at}.appArmorProfile.type"),
                "this AppArmor profile",
            );
        }
    }

    /// seccomp and AppArmor profiles: once given, of type `RuntimeDefault` or `Localhost`.
    fn profile_type(&mut self, profile: &Value, field: &str, what: &str) {
        let allowed = matches!(
            profile.get("type").and_then(Value::as_str),
            Some("RuntimeDefault" | "Localhost")
        );
        if !allowed {
            self.refuse(
                field.to_string(),
                format!("{what} is refused by the baseline pod security level: \"RuntimeDefault\" or \"Localhost\" (or no profile)"),
            );
        }
    }

    fn selinux(&mut self, options: &Value, at: &str) {
        let allowed = match options.get("type") {
            None | Some(Value::Null) => true,
            Some(Value::String(kind)) => SELINUX_TYPES.contains(&kind.as_str()),
            Some(_) => false,
        };
        if !allowed {
            self.refuse(
                format!("{at}.type"),
                format!(
                    "this SELinux type is refused by the baseline pod security level: one of {} (or none)",
                    quoted(&SELINUX_TYPES[1..])
                ),
            );
        }
        for key in ["user", "role"] {
            if !unset_or_empty(options.get(key)) {
                self.refuse(
                    format!("{at}.{key}"),
                    format!(
                        "a custom SELinux {key} is refused by the baseline pod security level: leave it out"
                    ),
                );
            }
        }
    }

    fn sysctls(&mut self, context: &Value, at: &str) {
        for (index, sysctl) in items(context, "sysctls") {
            let safe = sysctl
                .get("name")
                .and_then(Value::as_str)
                .is_some_and(|name| SAFE_SYSCTLS.contains(&name));
            if !safe {
                self.refuse(
                    format!("{at}.sysctls.{index}.name"),
                    format!(
                        "this sysctl is refused by the baseline pod security level: one of {}",
                        quoted(&SAFE_SYSCTLS)
                    ),
                );
            }
        }
    }

    fn container(&mut self, container: &Value, at: &str, own_user_namespace: bool) {
        if let Some(context) = object(container, "securityContext") {
            let at = format!("{at}.securityContext");
            self.must_not_be_true(context, "privileged", &at, "a privileged container");
            self.security_context(context, &at);
            self.capabilities(context, &at);
            if !own_user_namespace {
                self.proc_mount(context, &at);
            }
        }
        if self.policy != PodSecurity::BaselineWithHostNetwork {
            self.host_ports(container, at);
        }
        for probe in ["livenessProbe", "readinessProbe", "startupProbe"] {
            if let Some(handler) = object(container, probe) {
                self.handler_host(handler, &format!("{at}.{probe}"));
            }
        }
        if let Some(lifecycle) = object(container, "lifecycle") {
            for hook in ["postStart", "preStop"] {
                if let Some(handler) = object(lifecycle, hook) {
                    self.handler_host(handler, &format!("{at}.lifecycle.{hook}"));
                }
            }
        }
    }

    fn capabilities(&mut self, context: &Value, at: &str) {
        let Some(capabilities) = object(context, "capabilities") else {
            return;
        };
        for (index, capability) in items(capabilities, "add") {
            let allowed = capability
                .as_str()
                .is_some_and(|name| BASELINE_CAPABILITIES.contains(&name));
            if !allowed {
                self.refuse(
                    format!("{at}.capabilities.add.{index}"),
                    format!(
                        "adding this capability is refused by the baseline pod security level: only {}",
                        quoted(&BASELINE_CAPABILITIES)
                    ),
                );
            }
        }
    }

    fn proc_mount(&mut self, context: &Value, at: &str) {
        if !matches!(context.get("procMount"), None | Some(Value::Null))
            && context.get("procMount").and_then(Value::as_str) != Some("Default")
        {
            self.refuse(
                format!("{at}.procMount"),
                "an unmasked /proc is refused by the baseline pod security level: \"Default\" or left out (any value in a pod with hostUsers: false)",
            );
        }
    }

    fn host_ports(&mut self, container: &Value, at: &str) {
        for (index, port) in items(container, "ports") {
            let unset = match port.get("hostPort") {
                None | Some(Value::Null) => true,
                Some(number) => number.as_i64() == Some(0),
            };
            if !unset {
                self.refuse(
                    format!("{at}.ports.{index}.hostPort"),
                    "a host port is refused by the baseline pod security level: 0 or left out (an operator may allow host ports for the tenant)",
                );
            }
        }
    }

    /// A probe's or lifecycle hook's `httpGet.host` and `tcpSocket.host`: only the pod itself.
    fn handler_host(&mut self, handler: &Value, at: &str) {
        for action in ["httpGet", "tcpSocket"] {
            if let Some(action_spec) = object(handler, action) {
                if !unset_or_empty(action_spec.get("host")) {
                    self.refuse(
                        format!("{at}.{action}.host"),
                        "a probe or hook aimed at another host is refused by the baseline pod security level: leave host out (the pod's own address)",
                    );
                }
            }
        }
    }
}

#[cfg(test)]
mod tests;
