//! Where tenants' pods may pull their images from: the operator's list of registries
//! (`--image-registry-allow`, any registry by default) and the egress policy
//! ([`EgressPolicy`]), which judges a registry's host exactly as it judges any call made on a
//! tenant's behalf — an address (however the reference spells it) that is loopback, private,
//! link-local or a node's own is refused unless the operator allows it; a name is judged on
//! what it resolves to, which only the API can look up. Every pod a tenant sends (a Krake
//! manifest, a deployment or pinned set of the platform API, a Kumori component's code) is
//! checked before anything is committed; the images' fields are listed here, named as the
//! caller wrote them. Pure.

use serde_json::Value;

use crate::cluster::image::ImageRef;
use crate::cluster::SetSpec;
use crate::egress::{CallUrl, EgressPolicy};
use crate::krake::manifest_pod::is_exec_image;
use crate::service::Deployment;

/// The entry allowing every registry.
pub const ANY_REGISTRY: &str = "*";

/// The registries tenants' pods may pull from (`host[:port]`, or `*` for any).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RegistryAllow {
    any: bool,
    /// Hosts (lower case) with the port they are allowed on (any port when none).
    entries: Vec<(String, Option<u16>)>,
}

impl Default for RegistryAllow {
    /// Any registry (what a Kubernetes user expects); the egress policy still holds.
    fn default() -> Self {
        Self {
            any: true,
            entries: Vec::new(),
        }
    }
}

impl RegistryAllow {
    /// The list `entries` (`docker.io`, `registry.internal:5000`, `*`); none means any.
    pub fn new(entries: &[String]) -> Result<Self, String> {
        let entries: Vec<&str> = entries
            .iter()
            .map(|e| e.trim())
            .filter(|e| !e.is_empty())
            .collect();
        if entries.is_empty() || entries.contains(&ANY_REGISTRY) {
            return Ok(Self::default());
        }
        let parsed = entries.into_iter().map(parse_entry).collect::<Result<_, _>>()?;
        Ok(Self {
            any: false,
            entries: parsed,
        })
    }

    /// Whether `registry` (`host[:port]`, as [`ImageRef::registry`]) is on the list: an entry
    /// without a port allows its host on every port.
    pub fn allows(&self, registry: &str) -> bool {
        if self.any {
            return true;
        }
        let (host, port) = split_port(registry);
        let host = host.to_ascii_lowercase();
        self.entries
            .iter()
            .any(|(allowed, allowed_port)| *allowed == host && allowed_port.is_none_or(|p| Some(p) == port))
    }
}

/// `host` and its port, when `text` ends in `:digits`.
fn split_port(text: &str) -> (&str, Option<u16>) {
    match text.rsplit_once(':') {
        Some((host, port)) if !port.is_empty() && port.bytes().all(|b| b.is_ascii_digit()) => {
            (host, port.parse().ok())
        }
        _ => (text, None),
    }
}

fn parse_entry(entry: &str) -> Result<(String, Option<u16>), String> {
    let bad =
        || format!("{entry:?} is not a registry: give host[:port] (docker.io, registry.internal:5000) or *");
    let (host, port) = match entry.rsplit_once(':') {
        Some((host, port)) => (
            host,
            Some(port.parse::<u16>().ok().filter(|p| *p > 0).ok_or_else(bad)?),
        ),
        None => (entry, None),
    };
    let label_ok = |l: &str| {
        !l.is_empty()
            && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
            && !l.starts_with('-')
            && !l.ends_with('-')
    };
    if host.len() > 253 || !host.split('.').all(label_ok) {
        return Err(bad());
    }
    Ok((host.to_ascii_lowercase(), port))
}

/// Why an image may not be pulled for a tenant.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ImageRefused {
    /// Its registry is not on the operator's list.
    #[error("{image:?} is pulled from registry {registry}, which is not one tenants may pull from: use an allowed registry (the operator allows registries with --image-registry-allow)")]
    NotListed {
        /// The reference as given.
        image: String,
        /// Its registry (`host[:port]`).
        registry: String,
    },
    /// The egress policy refuses its registry's host.
    #[error("{image:?} is pulled from registry {registry}, and {why}: no image is pulled from there for a tenant (the operator allows networks and hosts with --tenant-egress-allow)")]
    Egress {
        /// The reference as given.
        image: String,
        /// Its registry (`host[:port]`).
        registry: String,
        /// The egress policy's reason.
        why: String,
    },
}

/// What is known of `image` before its registry's name (if it has one) is resolved: refused,
/// or the registry's URL as a pull calls it (judge a name on what it resolves to with the
/// egress policy's rules for calls). `None` for a reference that does not parse: the pod's own
/// checks refuse it, naming what is wrong with it.
pub fn check_image(
    image: &str,
    allow: &RegistryAllow,
    egress: &EgressPolicy,
) -> Result<Option<CallUrl>, ImageRefused> {
    let Ok(reference) = ImageRef::parse(image) else {
        return Ok(None);
    };
    let registry = reference.registry;
    if !allow.allows(&registry) {
        return Err(ImageRefused::NotListed {
            image: image.to_string(),
            registry,
        });
    }
    let Ok(target) = CallUrl::parse(&format!("https://{registry}/")) else {
        return Ok(None);
    };
    match egress.refuses_literal(&target) {
        Some(why) => Err(ImageRefused::Egress {
            image: image.to_string(),
            registry,
            why,
        }),
        None => Ok(Some(target)),
    }
}

/// A field naming an image, and the image.
pub type ImageField = (String, String);

/// The images of a deployment's pods (`roles.web.exec.pod.containers[0].image`).
pub fn deployment_images(deployment: &Deployment) -> Vec<ImageField> {
    let mut out = Vec::new();
    for (role, spec) in &deployment.roles {
        for (c, container) in spec.exec.pod.iter().flat_map(|p| p.containers.iter().enumerate()) {
            out.push((
                format!("roles.{role}.exec.pod.containers[{c}].image"),
                container.image.clone(),
            ));
        }
    }
    out
}

/// The images a JSON merge patch of a deployment writes (a patch replaces a pod's containers
/// whole, so every image the patched pod has is either here or was checked before).
pub fn patch_images(patch: &Value) -> Vec<ImageField> {
    let mut out = Vec::new();
    let Some(roles) = patch.get("roles").and_then(Value::as_object) else {
        return out;
    };
    for (role, spec) in roles {
        let containers = spec.pointer("/exec/pod/containers").and_then(Value::as_array);
        for (c, container) in containers.into_iter().flatten().enumerate() {
            if let Some(image) = container.get("image").and_then(Value::as_str) {
                out.push((
                    format!("roles.{role}.exec.pod.containers[{c}].image"),
                    image.to_string(),
                ));
            }
        }
    }
    out
}

/// The images of a pinned set's pod (`exec.pod.containers[0].image`).
pub fn set_images(set: &SetSpec) -> Vec<ImageField> {
    set.exec
        .pod
        .iter()
        .flat_map(|p| p.containers.iter().enumerate())
        .map(|(c, container)| (format!("exec.pod.containers[{c}].image"), container.image.clone()))
        .collect()
}

/// The container images a Krake Application's manifest names
/// (`spec.manifest.0.spec.template.spec.containers.1.image`; a `Pod`'s at
/// `spec.manifest.0.spec.containers.1.image`), never an `exec` process.
pub fn manifest_images(manifest: &[Value]) -> Vec<ImageField> {
    let mut out = Vec::new();
    for (index, item) in manifest.iter().enumerate() {
        let (pod, path) = match item.pointer("/spec/template/spec") {
            Some(pod) => (pod, format!("spec.manifest.{index}.spec.template.spec")),
            None => match item.get("spec") {
                Some(pod) => (pod, format!("spec.manifest.{index}.spec")),
                None => continue,
            },
        };
        let containers = pod.get("containers").and_then(Value::as_array);
        for (c, container) in containers.into_iter().flatten().enumerate() {
            match container.get("image").and_then(Value::as_str) {
                Some(image) if !is_exec_image(image) => {
                    out.push((format!("{path}.containers.{c}.image"), image.to_string()))
                }
                _ => {}
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(allowed: &[&str]) -> EgressPolicy {
        let allowed: Vec<String> = allowed.iter().map(|s| s.to_string()).collect();
        EgressPolicy::new(&allowed, vec!["203.0.113.5".parse().expect("an address")]).expect("a policy")
    }

    fn list(entries: &[&str]) -> RegistryAllow {
        let entries: Vec<String> = entries.iter().map(|s| s.to_string()).collect();
        RegistryAllow::new(&entries).expect("a list")
    }

    /// Whether `image` may be pulled: `Ok(true)` allowed, `Err(listed)` refused by the list
    /// (`true`) or by the egress policy (`false`).
    fn decide(image: &str, allow: &RegistryAllow, egress: &EgressPolicy) -> Result<bool, bool> {
        match check_image(image, allow, egress) {
            Ok(target) => Ok(target.is_some()),
            Err(ImageRefused::NotListed { .. }) => Err(true),
            Err(ImageRefused::Egress { .. }) => Err(false),
        }
    }

    #[test]
    fn the_list_and_the_egress_policy_decide_each_image() {
        let any = RegistryAllow::default();
        let hub_only = list(&["docker.io", "Registry.Example:5000"]);
        let local = list(&["127.0.0.1:5000"]);
        let none = policy(&[]);
        let loopback_allowed = policy(&["127.0.0.1"]);
        for (image, allow, egress, want) in [
            // Docker Hub's short names are docker.io's.
            ("busybox", &any, &none, Ok(true)),
            ("busybox", &hub_only, &none, Ok(true)),
            ("library/busybox:1.36", &hub_only, &none, Ok(true)),
            ("docker.io/library/busybox", &hub_only, &none, Ok(true)),
            ("quay.io/team/web:v1", &hub_only, &none, Err(true)),
            ("registry.example:5000/web", &hub_only, &none, Ok(true)),
            ("REGISTRY.example:5000/web", &hub_only, &none, Ok(true)),
            ("registry.example:5001/web", &hub_only, &none, Err(true)),
            ("registry.example/web", &hub_only, &none, Err(true)),
            ("quay.io/team/web:v1", &any, &none, Ok(true)),
            // Loopback, private, link-local and the nodes' own are refused by the egress
            // policy, however spelt, even with `*` …
            ("127.0.0.1:5000/web", &any, &none, Err(false)),
            ("127.1:5000/web", &any, &none, Err(false)),
            ("2130706433:5000/web", &any, &none, Err(false)),
            ("10.0.0.7:5000/web", &any, &none, Err(false)),
            ("169.254.169.254/web", &any, &none, Err(false)),
            ("203.0.113.5:5000/web", &any, &none, Err(false)),
            ("127.0.0.1:5000/web", &local, &none, Err(false)),
            // … unless --tenant-egress-allow names them; the list still holds.
            ("127.0.0.1:5000/web", &any, &loopback_allowed, Ok(true)),
            ("127.0.0.1:5000/web", &local, &loopback_allowed, Ok(true)),
            ("127.0.0.1:5001/web", &local, &loopback_allowed, Err(true)),
            ("127.0.0.2:5000/web", &any, &loopback_allowed, Err(false)),
            ("198.51.100.9:5000/web", &any, &none, Ok(true)),
            // A name is judged on what it resolves to, by the caller.
            ("localhost:5000/web", &any, &none, Ok(true)),
            // What does not parse is left to the pod's own checks.
            ("UPPER/case", &hub_only, &none, Ok(false)),
        ] {
            assert_eq!(decide(image, allow, egress), want, "{image}");
        }
    }

    #[test]
    fn a_refusal_names_the_flag_that_allows_it() {
        let refused = check_image("quay.io/a/b", &list(&["docker.io"]), &policy(&[])).unwrap_err();
        assert!(
            refused.to_string().contains("--image-registry-allow"),
            "{refused}"
        );
        let refused = check_image("127.0.0.1:5000/a", &RegistryAllow::default(), &policy(&[])).unwrap_err();
        let text = refused.to_string();
        assert!(
            text.contains("--tenant-egress-allow") && text.contains("loopback"),
            "{text}"
        );
    }

    #[test]
    fn entries_are_hosts_with_an_optional_port_or_any() {
        assert_eq!(list(&[]), RegistryAllow::default());
        assert_eq!(list(&["docker.io", "*"]), RegistryAllow::default());
        assert!(!list(&["docker.io"]).allows("quay.io"));
        assert!(list(&["127.0.0.1"]).allows("127.0.0.1:5000"));
        for bad in [
            "https://r.example",
            "r.example:0",
            "r.example:port",
            "a b",
            "r.example/path",
            "-r.example",
            ":5000",
        ] {
            assert!(RegistryAllow::new(&[bad.to_string()]).is_err(), "{bad}");
        }
    }

    #[test]
    fn images_are_named_where_the_caller_wrote_them() {
        let manifest: Vec<Value> = serde_json::from_value(serde_json::json!([
            {"kind": "Deployment", "spec": {"template": {"spec": {"containers": [
                {"name": "a", "image": "exec"}, {"name": "b", "image": "busybox"}]}}}},
            {"kind": "Service", "spec": {"ports": []}},
            {"kind": "Pod", "spec": {"containers": [{"name": "c", "image": "quay.io/x/y"}]}},
        ]))
        .expect("a manifest");
        assert_eq!(
            manifest_images(&manifest),
            vec![
                (
                    "spec.manifest.0.spec.template.spec.containers.1.image".to_string(),
                    "busybox".to_string()
                ),
                (
                    "spec.manifest.2.spec.containers.0.image".to_string(),
                    "quay.io/x/y".to_string()
                ),
            ]
        );
        let patch = serde_json::json!({"roles": {"web": {"exec": {"pod": {"containers": [
            {"name": "web", "image": "127.0.0.1:5000/web"}]}}}, "other": {"instances": 2}}});
        assert_eq!(
            patch_images(&patch),
            vec![(
                "roles.web.exec.pod.containers[0].image".to_string(),
                "127.0.0.1:5000/web".to_string()
            )]
        );
        assert!(patch_images(&serde_json::json!({"roles": null})).is_empty());
    }
}
