//! A component's container images, as Kumori's component manifests name them: a `code`
//! section holding, per container, `{name, image: {hub: {name, secret}, tag}, entrypoint, cmd,
//! mapping: {env: {NAME: {value}}}}` (Kumori's `#Artifact.description.code`). The image is
//! pulled from `hub.name` (a registry host) as `tag` (`repository:tag`); `hub.secret` names the
//! tenant secret holding that registry's credentials (resolved when the service is deployed,
//! [`pull_credentials`]). What Kumori's containers may carry and Drover does not honour (`user`,
//! `size`, files and volumes in `mapping.filesystem`, environment taken from a secret) is
//! refused naming the field, never ignored. Pure.

use std::collections::BTreeMap;

use drover_model::cluster::agent_api::Resources;
use drover_model::cluster::image::ImageRef;
use drover_model::cluster::pod::{ContainerSpec, PullAuth};
use serde_json::{Map, Value};

/// A component's `code`, read: its containers (in the order of their keys) and the secrets
/// their registries' credentials are in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Code {
    /// The pod's containers.
    pub containers: Vec<ContainerSpec>,
    /// The credentials each registry is pulled with.
    pub pulls: Vec<HubSecret>,
}

/// A registry and the secret named for it (`code.<key>.image.hub.secret`).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct HubSecret {
    /// The registry (`host[:port]`), as the image reference names it.
    pub registry: String,
    /// The name `hub.secret` gives.
    pub secret: String,
    /// Where it was named (`code.<key>.image.hub.secret`).
    pub field: String,
}

/// Why `code` cannot be read: the field at fault and what to fix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CodeError {
    /// The field (`code.web.image.tag`).
    pub field: String,
    /// What is wrong.
    pub why: String,
}

fn refuse(field: impl Into<String>, why: impl Into<String>) -> CodeError {
    CodeError {
        field: field.into(),
        why: why.into(),
    }
}

/// The keys of `value` (an object, at `field`), each one of `known`.
fn object<'a>(value: &'a Value, field: &str, known: &[&str]) -> Result<&'a Map<String, Value>, CodeError> {
    let map = value
        .as_object()
        .ok_or_else(|| refuse(field, format!("an object with {}", known.join(", "))))?;
    if let Some(unknown) = map.keys().find(|key| !known.contains(&key.as_str())) {
        return Err(refuse(
            format!("{field}.{unknown}"),
            format!("not a field Drover reads here (it reads {})", known.join(", ")),
        ));
    }
    Ok(map)
}

fn text<'a>(map: &'a Map<String, Value>, key: &str, field: &str) -> Result<&'a str, CodeError> {
    map.get(key)
        .and_then(Value::as_str)
        .ok_or_else(|| refuse(format!("{field}.{key}"), "a string is required"))
}

fn strings(map: &Map<String, Value>, key: &str, field: &str) -> Result<Vec<String>, CodeError> {
    let Some(value) = map.get(key) else {
        return Ok(Vec::new());
    };
    value
        .as_array()
        .and_then(|items| items.iter().map(|v| v.as_str().map(str::to_string)).collect())
        .ok_or_else(|| refuse(format!("{field}.{key}"), "a list of strings"))
}

/// Fields of a Kumori container Drover does not honour, and why.
const NOT_HONOURED: [(&str, &str); 2] = [
    (
        "user",
        "Drover runs a container as its image's user; leave user out",
    ),
    (
        "size",
        "a container's size is not read: give the component's requests in resources",
    ),
];

/// Reads a component's `code`: an object of containers.
pub fn read_code(code: &Value) -> Result<Code, CodeError> {
    let entries = code.as_object().filter(|map| !map.is_empty()).ok_or_else(|| {
        refuse(
            "code",
            "an object of containers: {\"<key>\": {name, image: {hub: {name, secret}, tag}}}",
        )
    })?;
    let mut read = Code {
        containers: Vec::new(),
        pulls: Vec::new(),
    };
    for (key, entry) in entries {
        let field = format!("code.{key}");
        if let Some((name, why)) = NOT_HONOURED.iter().find(|(name, _)| entry.get(name).is_some()) {
            return Err(refuse(format!("{field}.{name}"), *why));
        }
        let map = object(entry, &field, &["name", "image", "entrypoint", "cmd", "mapping"])?;
        let (image, pull) = image(
            map.get("image").unwrap_or(&Value::Null),
            &format!("{field}.image"),
        )?;
        read.pulls.extend(pull);
        read.containers.push(ContainerSpec {
            name: container_name(text(map, "name", &field)?, &field)?,
            image,
            pull_policy: None,
            command: strings(map, "entrypoint", &field)?,
            args: strings(map, "cmd", &field)?,
            env: env(map.get("mapping"), &format!("{field}.mapping"))?,
            working_dir: None,
            ports: Vec::new(),
            limits: Resources::default(),
            readiness: None,
            liveness: None,
        });
    }
    Ok(read)
}

/// A container's name as a pod holds it: Kumori's names may have `_`, a pod's are DNS labels,
/// so `_` becomes `-`.
fn container_name(name: &str, field: &str) -> Result<String, CodeError> {
    let label = name.replace('_', "-");
    let ok = !label.is_empty()
        && label.len() <= 63
        && label
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !label.starts_with('-')
        && !label.ends_with('-');
    if ok {
        Ok(label)
    } else {
        Err(refuse(
            format!("{field}.name"),
            format!("{name:?}: 1 to 63 lower-case letters, digits, '-' or '_', starting and ending with a letter or digit"),
        ))
    }
}

/// `image: {hub: {name, secret}, tag}`: the reference `<hub.name>/<tag>` (the tag alone when
/// `hub.name` is empty) and the secret named for its registry, if any.
fn image(value: &Value, field: &str) -> Result<(String, Option<HubSecret>), CodeError> {
    let map = object(value, field, &["hub", "tag"])?;
    let tag = text(map, "tag", field)?;
    let hub_field = format!("{field}.hub");
    let hub = object(
        map.get("hub").unwrap_or(&Value::Null),
        &hub_field,
        &["name", "secret"],
    )?;
    let host = hub.get("name").and_then(Value::as_str).unwrap_or_default();
    if host.contains(['/', '@']) || host.contains("://") {
        return Err(refuse(
            format!("{hub_field}.name"),
            format!("{host:?}: a registry host[:port], without a scheme or a path"),
        ));
    }
    let reference = if host.is_empty() {
        tag.to_string()
    } else {
        format!("{host}/{tag}")
    };
    let parsed = ImageRef::parse(&reference).map_err(|e| refuse(format!("{field}.tag"), e.to_string()))?;
    if !host.is_empty() && !parsed.registry.eq_ignore_ascii_case(host) {
        return Err(refuse(
            format!("{hub_field}.name"),
            format!("{host:?} is not read as a registry host: a registry's name has a '.' or a ':port', or is localhost"),
        ));
    }
    let secret = match hub.get("secret") {
        None | Some(Value::Null) => None,
        Some(Value::String(name)) if name.is_empty() => None,
        Some(Value::String(name)) => Some(HubSecret {
            registry: parsed.registry.clone(),
            secret: name.clone(),
            field: format!("{hub_field}.secret"),
        }),
        Some(_) => {
            return Err(refuse(
                format!("{hub_field}.secret"),
                "the name of a secret (a string; \"\" for none)",
            ))
        }
    };
    Ok((reference, secret))
}

/// `mapping: {env: {NAME: {value: "..."}}, filesystem}`: the environment; a filesystem mapping
/// must be empty.
fn env(mapping: Option<&Value>, field: &str) -> Result<BTreeMap<String, String>, CodeError> {
    let Some(mapping) = mapping else {
        return Ok(BTreeMap::new());
    };
    let map = object(mapping, field, &["env", "filesystem"])?;
    let empty = |v: &Value| {
        v.is_null() || v.as_object().is_some_and(Map::is_empty) || v.as_array().is_some_and(Vec::is_empty)
    };
    if map.get("filesystem").is_some_and(|v| !empty(v)) {
        return Err(refuse(
            format!("{field}.filesystem"),
            "Drover mounts no files or volumes into a container: leave it empty",
        ));
    }
    let mut env = BTreeMap::new();
    let Some(vars) = map.get("env").filter(|v| !v.is_null()) else {
        return Ok(env);
    };
    let vars = vars.as_object().ok_or_else(|| {
        refuse(
            format!("{field}.env"),
            "an object {\"NAME\": {\"value\": \"...\"}}",
        )
    })?;
    for (name, var) in vars {
        let at = format!("{field}.env.{name}");
        if var.get("secret").is_some() {
            return Err(refuse(
                at,
                "an environment variable from a secret is not supported: give {\"value\": \"...\"}",
            ));
        }
        let value = object(var, &at, &["value"])?
            .get("value")
            .and_then(Value::as_str)
            .ok_or_else(|| refuse(format!("{at}.value"), "a string is required"))?;
        env.insert(name.clone(), value.to_string());
    }
    Ok(env)
}

/// Why a secret's value is not registry credentials (never repeating the value).
pub const NOT_CREDENTIALS: &str =
    "does not hold registry credentials: write its data as \"user:password\" or as the JSON text {\"username\": \"...\", \"password\": \"...\"}";

/// The user name and password a tenant secret's value holds: the JSON text `{"username",
/// "password"}`, or `user:password` (split at the first `:`). `None` for anything else; the
/// caller says so without repeating the value.
pub fn pull_credentials(value: &str) -> Option<(String, String)> {
    let trimmed = value.trim();
    let (user, password) = if trimmed.starts_with('{') {
        let json: Value = serde_json::from_str(trimmed).ok()?;
        let map = json.as_object()?;
        if map.keys().any(|k| k != "username" && k != "password") {
            return None;
        }
        (
            map.get("username")?.as_str()?.to_string(),
            map.get("password")?.as_str()?.to_string(),
        )
    } else {
        let (user, password) = value.split_once(':')?;
        (user.to_string(), password.to_string())
    };
    let clean = |s: &str| !s.is_empty() && !s.contains(['\0', '\n', '\r']);
    (clean(&user) && clean(&password)).then_some((user, password))
}

/// The tenant secret `hub.secret` means: the one the deployment binds to that name in its
/// `config.resource` (`{"<hub.secret>": {"secret": "<name>"}}`, Kumori's way: `hub.secret`
/// names one of the component's resources), else the tenant's secret of that name.
pub fn secret_name(
    hub: &HubSecret,
    bindings: &BTreeMap<String, BTreeMap<String, String>>,
) -> Result<String, String> {
    let Some(bound) = bindings.get(&hub.secret) else {
        return Ok(hub.secret.clone());
    };
    match bound.get("secret") {
        Some(name) if bound.len() == 1 => Ok(name.clone()),
        _ => Err(format!(
            "{}: {:?} is bound by deployment.config.resource.{} to something other than a secret; bind it as {{\"secret\": \"<name>\"}}",
            hub.field, hub.secret, hub.secret
        )),
    }
}

/// The pull credentials of each role's pod: every secret named for a registry, by its tenant
/// secret's name ([`secret_name`]) looked up in `secrets` — the deploying tenant's own secrets,
/// by name, their values as stored — and read by [`pull_credentials`]. Errors name the role and
/// field, never a value.
pub fn resolve_pulls(
    pulls: &BTreeMap<String, Vec<HubSecret>>,
    bindings: &BTreeMap<String, BTreeMap<String, String>>,
    secrets: &BTreeMap<String, String>,
    tenant: &str,
) -> Result<BTreeMap<String, Vec<PullAuth>>, String> {
    let mut resolved = BTreeMap::new();
    for (role, needs) in pulls {
        let mut auths: BTreeMap<String, (String, PullAuth)> = BTreeMap::new();
        for hub in needs {
            let at = format!("roles.{role}: {}", hub.field);
            let name = secret_name(hub, bindings).map_err(|why| format!("roles.{role}: {why}"))?;
            let value = secrets
                .get(&name)
                .ok_or_else(|| format!("{at}: tenant {tenant:?} has no secret {name:?}"))?;
            let (username, password) = pull_credentials(value)
                .ok_or_else(|| format!("{at}: the secret {name:?} {NOT_CREDENTIALS}"))?;
            if let Some((other, _)) = auths.get(&hub.registry) {
                if *other != name {
                    return Err(format!(
                        "{at}: registry {} is given two secrets in one component ({other:?} and {name:?}); name one",
                        hub.registry
                    ));
                }
                continue;
            }
            let auth = PullAuth {
                registry: hub.registry.clone(),
                username,
                password,
            };
            auths.insert(hub.registry.clone(), (name, auth));
        }
        resolved.insert(role.clone(), auths.into_values().map(|(_, auth)| auth).collect());
    }
    Ok(resolved)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn kumori_code_becomes_containers_and_the_secrets_of_their_registries() {
        let code = json!({
            "main": {"name": "main",
                "image": {"hub": {"name": "127.0.0.1:5000", "secret": "hub"}, "tag": "acme/web:v1"},
                "entrypoint": ["/bin/busybox"], "cmd": ["httpd", "-f"],
                "mapping": {"filesystem": {}, "env": {"PORT": {"value": "8080"}}}},
            "side_car": {"name": "side_car",
                "image": {"hub": {"name": "", "secret": ""}, "tag": "busybox"}}
        });
        let read = read_code(&code).unwrap();
        let main = &read.containers[0];
        assert_eq!(main.name, "main");
        assert_eq!(main.image, "127.0.0.1:5000/acme/web:v1");
        assert_eq!(main.command, ["/bin/busybox"]);
        assert_eq!(main.args, ["httpd", "-f"]);
        assert_eq!(main.env["PORT"], "8080");
        let side = &read.containers[1];
        assert_eq!((side.name.as_str(), side.image.as_str()), ("side-car", "busybox"));
        assert_eq!(
            read.pulls,
            [HubSecret {
                registry: "127.0.0.1:5000".into(),
                secret: "hub".into(),
                field: "code.main.image.hub.secret".into()
            }],
            "an empty secret names none"
        );
    }

    #[test]
    fn what_drover_does_not_honour_is_named() {
        let with = |entry: Value| json!({"web": entry});
        let base =
            || json!({"name": "web", "image": {"hub": {"name": "r.example", "secret": ""}, "tag": "a/b:1"}});
        let set = |path: &str, value: Value| {
            let mut entry = base();
            entry
                .pointer_mut(path)
                .map(|v| *v = value.clone())
                .unwrap_or_else(|| {
                    let (parent, key) = path.rsplit_once('/').unwrap();
                    entry.pointer_mut(parent).unwrap()[key] = value;
                });
            with(entry)
        };
        let table = [
            (json!({}), "code"),
            (json!([]), "code"),
            (set("/user", json!({"userid": 0})), "code.web.user"),
            (set("/size", json!({"memory": {"size": 1}})), "code.web.size"),
            (set("/probe", json!({})), "code.web.probe"),
            (set("/name", json!("Web")), "code.web.name"),
            (set("/name", json!(1)), "code.web.name"),
            (set("/image/tag", json!("UPPER")), "code.web.image.tag"),
            (set("/image/hub/name", json!("myhost")), "code.web.image.hub.name"),
            (
                set("/image/hub/name", json!("https://r.example")),
                "code.web.image.hub.name",
            ),
            (set("/image/hub/secret", json!(3)), "code.web.image.hub.secret"),
            (set("/image/hub/token", json!("x")), "code.web.image.hub.token"),
            (set("/entrypoint", json!("sh")), "code.web.entrypoint"),
            (set("/cmd", json!([1])), "code.web.cmd"),
            (
                set("/mapping", json!({"filesystem": {"/x": {"volume": "v"}}})),
                "code.web.mapping.filesystem",
            ),
            (
                set("/mapping", json!({"env": {"A": {"secret": "pw"}}})),
                "code.web.mapping.env.A",
            ),
            (
                set("/mapping", json!({"env": {"A": {"value": 1}}})),
                "code.web.mapping.env.A.value",
            ),
            (
                set("/mapping", json!({"env": {"A": "x"}})),
                "code.web.mapping.env.A",
            ),
        ];
        for (code, field) in table {
            let error = read_code(&code).expect_err(&code.to_string());
            assert_eq!(error.field, field, "{code}: {}", error.why);
        }
    }

    fn hub(registry: &str, secret: &str) -> HubSecret {
        HubSecret {
            registry: registry.into(),
            secret: secret.into(),
            field: "code.main.image.hub.secret".into(),
        }
    }

    #[test]
    fn secrets_resolve_in_the_deploying_tenants_own_secrets_only() {
        let secrets: BTreeMap<String, String> = [
            ("hub", "alice:pw-1"),
            ("bound", r#"{"username": "carol", "password": "pw-2"}"#),
            ("opaque", "no credentials here"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        let bindings: BTreeMap<String, BTreeMap<String, String>> = [
            ("registrySecret", ("secret", "bound")),
            ("aDomain", ("domain", "hub")),
        ]
        .into_iter()
        .map(|(alias, (kind, name))| {
            (
                alias.to_string(),
                BTreeMap::from([(kind.to_string(), name.to_string())]),
            )
        })
        .collect();
        let pulls = |needs: Vec<HubSecret>| BTreeMap::from([("web".to_string(), needs)]);
        let resolve = |needs| resolve_pulls(&pulls(needs), &bindings, &secrets, "acme");
        // By name, and through the deployment's binding (Kumori's alias).
        let got = resolve(vec![hub("r:5000", "hub"), hub("q.io", "registrySecret")]).unwrap();
        let auths = &got["web"];
        assert_eq!(auths.len(), 2);
        assert_eq!(
            (
                auths[0].registry.as_str(),
                auths[0].username.as_str(),
                auths[0].password.as_str()
            ),
            ("q.io", "carol", "pw-2")
        );
        assert_eq!(
            (auths[1].username.as_str(), auths[1].password.as_str()),
            ("alice", "pw-1")
        );
        // The same secret twice for one registry is one credential.
        assert_eq!(
            resolve(vec![hub("r:5000", "hub"), hub("r:5000", "hub")]).unwrap()["web"].len(),
            1
        );
        let refusals = [
            (
                vec![hub("r:5000", "missing")],
                "tenant \"acme\" has no secret \"missing\"",
            ),
            // Another tenant's secret, however spelled, is not one of these.
            (vec![hub("r:5000", "bob/hub")], "has no secret \"bob/hub\""),
            (
                vec![hub("r:5000", "opaque")],
                "does not hold registry credentials",
            ),
            (vec![hub("r:5000", "aDomain")], "other than a secret"),
            (
                vec![hub("r:5000", "hub"), hub("r:5000", "registrySecret")],
                "two secrets",
            ),
        ];
        for (needs, says) in refusals {
            let error = resolve(needs).unwrap_err();
            assert!(
                error.starts_with("roles.web: ") && error.contains(says),
                "{says}: {error}"
            );
            assert!(
                !error.contains("pw-") && !error.contains("no credentials here"),
                "{error}"
            );
        }
    }

    #[test]
    fn registry_credentials_are_read_from_a_secrets_value() {
        let table = [
            ("alice:s3cret", Some(("alice", "s3cret"))),
            ("alice:pass:with:colons", Some(("alice", "pass:with:colons"))),
            (r#"{"username": "bob", "password": "p w"}"#, Some(("bob", "p w"))),
            (r#"{"username": "bob"}"#, None),
            (r#"{"username": "bob", "password": "x", "auth": "y"}"#, None),
            ("no-colon", None),
            (":nouser", None),
            ("user:", None),
            ("user:pa\nss", None),
        ];
        for (value, expected) in table {
            let got = pull_credentials(value);
            let expected = expected.map(|(u, p)| (u.to_string(), p.to_string()));
            assert_eq!(got, expected, "{value}");
        }
    }
}
