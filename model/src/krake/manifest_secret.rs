//! Image pull credentials a manifest carries: each `v1` `Secret` of type
//! `kubernetes.io/dockerconfigjson` (its `.dockerconfigjson` key in `data`, base64, or in
//! `stringData`, as written), read as Docker's config file does — an `auths` map from registry to
//! `username` and `password`, or `auth` (base64 of `user:pass`). A pod's `imagePullSecrets`
//! names them; [`pull_auth`] keeps only the registries the pod's images name, so a credential
//! never goes where no image of the pod is pulled from. A Secret of another type is refused:
//! Drover has no volumes or environment references to hand one to.
//!
//! Pure. The credentials end in the role's exec spec ([`PullAuth`]), which the agent uses to
//! pull and no view of Drover's shows.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use super::error::KrakeError;
use crate::cluster::image::{ImageRef, DEFAULT_REGISTRY};
use crate::cluster::pod::PullAuth;

/// The only Secret type Drover takes.
pub const DOCKER_CONFIG_JSON: &str = "kubernetes.io/dockerconfigjson";

/// The key of a dockerconfigjson Secret's data.
const CONFIG_KEY: &str = ".dockerconfigjson";

/// The pull credentials of the manifest's Secrets, by Secret name.
pub type PullSecrets = BTreeMap<String, PullSecret>;

/// One Secret's credentials.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PullSecret {
    /// By registry (`host[:port]`, Docker Hub as `docker.io`).
    pub auths: BTreeMap<String, PullAuth>,
}

fn refuse(path: &str, message: impl Into<String>) -> KrakeError {
    KrakeError::invalid(path, message)
}

/// Reads the Secret at `path` (`spec.manifest.N`).
pub fn read_secret(item: &Value, path: &str) -> Result<PullSecret, KrakeError> {
    for key in item.as_object().into_iter().flat_map(Map::keys) {
        if !["apiVersion", "kind", "metadata", "type", "data", "stringData"].contains(&key.as_str()) {
            return Err(refuse(
                &format!("{path}.{key}"),
                "Drover does not honour this field of a Secret: leave it out",
            ));
        }
    }
    let kind = item.get("type").and_then(Value::as_str).unwrap_or("Opaque");
    if kind != DOCKER_CONFIG_JSON {
        return Err(refuse(
            &format!("{path}.type"),
            format!("Drover takes Secrets of type {DOCKER_CONFIG_JSON:?} only (image pull credentials named by imagePullSecrets); it has no volumes or env references to give a {kind:?} Secret to"),
        ));
    }
    let config = match (
        item.pointer("/stringData/.dockerconfigjson"),
        item.pointer("/data/.dockerconfigjson"),
    ) {
        (Some(Value::String(text)), _) => text.clone(),
        (None, Some(Value::String(encoded))) => {
            let bytes = base64_decode(encoded)
                .ok_or_else(|| refuse(&format!("{path}.data.{CONFIG_KEY}"), "not base64 text"))?;
            String::from_utf8(bytes)
                .map_err(|_| refuse(&format!("{path}.data.{CONFIG_KEY}"), "not UTF-8 JSON once decoded"))?
        }
        (Some(_), _) => return Err(refuse(&format!("{path}.stringData.{CONFIG_KEY}"), "a JSON text")),
        (None, _) => {
            return Err(refuse(
                &format!("{path}.data.{CONFIG_KEY}"),
                "Missing data for required field. (a dockerconfigjson Secret holds .dockerconfigjson in data, base64, or in stringData)",
            ))
        }
    };
    let field = if item.pointer("/stringData/.dockerconfigjson").is_some() {
        format!("{path}.stringData.{CONFIG_KEY}")
    } else {
        format!("{path}.data.{CONFIG_KEY}")
    };
    parse_config(&config, &field)
}

/// Docker's config JSON: `{"auths": {registry: {username, password} | {auth}}}`.
fn parse_config(text: &str, field: &str) -> Result<PullSecret, KrakeError> {
    let config: Value =
        serde_json::from_str(text).map_err(|e| refuse(field, format!("not Docker's config JSON: {e}")))?;
    let auths = config
        .get("auths")
        .and_then(Value::as_object)
        .ok_or_else(|| refuse(field, "Docker's config JSON holds an \"auths\" object"))?;
    let mut secret = PullSecret::default();
    for (server, entry) in auths {
        let at = format!("{field}.auths.{server}");
        let registry =
            registry_of(server).ok_or_else(|| refuse(&at, "a registry host[:port] (or its URL)"))?;
        let (username, password) = credentials(entry)
            .ok_or_else(|| refuse(&at, "username and password, or auth (base64 of user:password)"))?;
        secret.auths.insert(
            registry.clone(),
            PullAuth {
                registry,
                username,
                password,
            },
        );
    }
    Ok(secret)
}

fn credentials(entry: &Value) -> Option<(String, String)> {
    let text = |key: &str| entry.get(key).and_then(Value::as_str).filter(|s| !s.is_empty());
    if let (Some(user), Some(password)) = (text("username"), text("password")) {
        return Some((user.to_string(), password.to_string()));
    }
    let decoded = String::from_utf8(base64_decode(text("auth")?)?).ok()?;
    let (user, password) = decoded.split_once(':')?;
    (!user.is_empty()).then(|| (user.to_string(), password.to_string()))
}

/// The registry an `auths` key names, as image references name it: `https://host:port/v1/`
/// is `host:port`; Docker Hub's names are `docker.io`.
pub fn registry_of(server: &str) -> Option<String> {
    let bare = server
        .strip_prefix("https://")
        .or_else(|| server.strip_prefix("http://"))
        .unwrap_or(server);
    let host = bare.split('/').next()?.to_ascii_lowercase();
    if host.is_empty() || host.contains(|c: char| c.is_whitespace() || c == '@') {
        return None;
    }
    Some(match host.as_str() {
        "index.docker.io" | "registry-1.docker.io" | "registry.hub.docker.com" => {
            DEFAULT_REGISTRY.to_string()
        }
        _ => host,
    })
}

/// The credentials a pod uses: for each registry one of its `images` names, the first of its
/// `imagePullSecrets` (at `path`) that holds one, as the kubelet tries them in order.
pub fn pull_auth(
    pull_secrets: Option<&Value>,
    path: &str,
    images: &[String],
    secrets: &PullSecrets,
) -> Result<Vec<PullAuth>, KrakeError> {
    let mut named = Vec::new();
    match pull_secrets {
        None | Some(Value::Null) => {}
        Some(Value::Array(items)) => {
            for (index, item) in items.iter().enumerate() {
                let at = format!("{path}.{index}.name");
                let name = item
                    .get("name")
                    .and_then(Value::as_str)
                    .ok_or_else(|| refuse(&at, "Missing data for required field."))?;
                let secret = secrets.get(name).ok_or_else(|| {
                    refuse(
                        &at,
                        format!("no Secret {name:?} of type {DOCKER_CONFIG_JSON:?} in the manifest: give it beside the workload"),
                    )
                })?;
                named.push(secret);
            }
        }
        Some(_) => return Err(refuse(path, "a list of {name: <Secret>}")),
    }
    let mut registries: Vec<String> = images
        .iter()
        .filter_map(|image| ImageRef::parse(image).ok().map(|i| i.registry))
        .collect();
    registries.sort();
    registries.dedup();
    Ok(registries
        .iter()
        .filter_map(|registry| named.iter().find_map(|s| s.auths.get(registry)).cloned())
        .collect())
}

/// Standard base64 (RFC 4648, `=` padding optional, no line breaks); `None` if it is not.
pub fn base64_decode(text: &str) -> Option<Vec<u8>> {
    let digits = text.trim_end_matches('=');
    if text.len() - digits.len() > 2 || digits.len() % 4 == 1 {
        return None;
    }
    let value = |b: u8| -> Option<u32> {
        Some(match b {
            b'A'..=b'Z' => b - b'A',
            b'a'..=b'z' => b - b'a' + 26,
            b'0'..=b'9' => b - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        } as u32)
    };
    let mut out = Vec::with_capacity(digits.len() * 3 / 4);
    for chunk in digits.as_bytes().chunks(4) {
        let mut group = 0u32;
        for (i, byte) in chunk.iter().enumerate() {
            group |= value(*byte)? << (18 - 6 * i);
        }
        let bytes = group.to_be_bytes();
        out.extend_from_slice(&bytes[1..chunk.len()]);
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn secret(config: &str) -> Value {
        json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "pull"},
               "type": DOCKER_CONFIG_JSON, "stringData": {".dockerconfigjson": config}})
    }

    #[test]
    fn base64_as_rfc_4648_writes_it() {
        for (text, plain) in [
            ("", ""),
            ("YQ==", "a"),
            ("YWI=", "ab"),
            ("YWJj", "abc"),
            ("YWxpY2U6czNjcmV0", "alice:s3cret"),
        ] {
            assert_eq!(base64_decode(text).as_deref(), Some(plain.as_bytes()), "{text}");
        }
        assert_eq!(base64_decode("YQ").as_deref(), Some(&b"a"[..]));
        for bad in ["Y", "YQ===", "Y!==", "YQ==YQ=="] {
            assert_eq!(base64_decode(bad), None, "{bad}");
        }
    }

    #[test]
    fn registries_as_image_references_name_them() {
        for (server, registry) in [
            ("127.0.0.1:5000", Some("127.0.0.1:5000")),
            ("https://127.0.0.1:5000/v2/", Some("127.0.0.1:5000")),
            ("https://index.docker.io/v1/", Some("docker.io")),
            ("Registry.Example.com", Some("registry.example.com")),
            ("https://", None),
        ] {
            assert_eq!(registry_of(server).as_deref(), registry, "{server}");
        }
    }

    #[test]
    fn a_config_gives_credentials_by_registry_in_either_form() {
        let config = r#"{"auths": {"127.0.0.1:5000": {"username": "alice", "password": "s3cret"},
                                   "https://reg.example:443/v1/": {"auth": "Ym9iOnB3"}}}"#;
        let read = read_secret(&secret(config), "spec.manifest.1").expect("read");
        assert_eq!(read.auths["127.0.0.1:5000"].password, "s3cret");
        assert_eq!(read.auths["reg.example:443"].username, "bob");
        assert_eq!(read.auths["reg.example:443"].password, "pw");
        let encoded = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "p"}, "type": DOCKER_CONFIG_JSON,
                             "data": {".dockerconfigjson": "eyJhdXRocyI6IHsiYTo1IjogeyJhdXRoIjogIllUcGkifX19"}});
        assert_eq!(
            read_secret(&encoded, "x").expect("read").auths["a:5"].password,
            "b"
        );
    }

    #[test]
    fn bad_secrets_are_refused_by_their_path() {
        let table = [
            (json!({"kind": "Secret", "type": "Opaque", "data": {}}), "m.type"),
            (json!({"kind": "Secret", "data": {}}), "m.type"),
            (secret("not json"), "m.stringData..dockerconfigjson"),
            (
                secret(r#"{"auths": {"a:5": {"username": "x"}}}"#),
                "m.stringData..dockerconfigjson.auths.a:5",
            ),
            (secret(r#"{"credsStore": "x"}"#), "m.stringData..dockerconfigjson"),
            (
                json!({"kind": "Secret", "type": DOCKER_CONFIG_JSON, "data": {".dockerconfigjson": "%%%"}}),
                "m.data..dockerconfigjson",
            ),
            (
                json!({"kind": "Secret", "type": DOCKER_CONFIG_JSON}),
                "m.data..dockerconfigjson",
            ),
            (
                json!({"kind": "Secret", "type": DOCKER_CONFIG_JSON, "immutable": true}),
                "m.immutable",
            ),
        ];
        for (item, field) in table {
            match read_secret(&item, "m") {
                Err(KrakeError::Invalid { field: got, .. }) => assert_eq!(got, field, "{item}"),
                other => panic!("{item}: {other:?}"),
            }
        }
    }

    #[test]
    fn a_pod_gets_credentials_only_for_its_images_registries() {
        let config = r#"{"auths": {"127.0.0.1:5000": {"username": "a", "password": "1"},
                                   "other:5000": {"username": "b", "password": "2"}}}"#;
        let mut secrets = PullSecrets::new();
        secrets.insert("pull".into(), read_secret(&secret(config), "m").expect("read"));
        let images = vec!["127.0.0.1:5000/web:v1".to_string(), "busybox".to_string()];
        let got = pull_auth(Some(&json!([{"name": "pull"}])), "p", &images, &secrets).expect("auth");
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].registry, "127.0.0.1:5000");
        match pull_auth(Some(&json!([{"name": "gone"}])), "p", &images, &secrets) {
            Err(KrakeError::Invalid { field, .. }) => assert_eq!(field, "p.0.name"),
            other => panic!("{other:?}"),
        }
        assert_eq!(pull_auth(None, "p", &images, &secrets), Ok(Vec::new()));
    }
}
