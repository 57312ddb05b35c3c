//! Resolving a marketplace reference (`artifact.ref`) through the tenant's registry: the
//! package's document, the version asked for (else the one tagged `latest`), which the tenant
//! must be allowed to use (its own domain's, or published public), its tarball fetched from the
//! registry's own origin (the tenant's credentials go nowhere else) and checked against the
//! document's SHA-1, read under the bundle bounds, and the module in it. A module the tenant
//! may not use answers exactly as one that does not exist (same status, same words), and
//! names npm refuses are refused before the registry is asked.

use std::collections::BTreeMap;

use axum::http::StatusCode;
use drover_model::service::source::{plain_version, ArtifactRef};
use serde_json::Value;

use super::bundle::archive::BundleLimits;
use super::bundle::module::{check_npm_name, read_module, Module};
use super::bundle::package::package_name;
use super::bundle::tarball::read_tarball;
use super::context::{AxebowState, Caller};
use super::marketplace::{document, refused, target, unprocessable, unreachable, usable};
use super::reply::{codes, AxebowError};

/// A module found in the marketplace.
#[derive(Debug, Clone)]
pub struct Resolved {
    /// The module.
    pub module: Module,
    /// Its files, by path relative to the module (a component refuses any that is not text).
    pub files: BTreeMap<String, Vec<u8>>,
    /// The version resolved (`major.minor.patch`).
    pub version: String,
    /// The artifact its package names as its main one, if any.
    pub main: Option<String>,
}

fn bad_gateway(message: String) -> AxebowError {
    AxebowError::new(StatusCode::BAD_GATEWAY, codes::UNAVAILABLE, message)
}

/// `scheme://host[:port]` of `url`.
fn origin(url: &str) -> String {
    let (scheme, rest) = url.split_once("://").unwrap_or(("", url));
    let host = rest.split(['/', '?', '#']).next().unwrap_or_default();
    format!("{}://{}", scheme.to_ascii_lowercase(), host.to_ascii_lowercase())
}

/// Finds `reference` for `caller` acting in `tenant`.
pub async fn resolve(
    state: &AxebowState,
    caller: &Caller,
    tenant: &str,
    reference: &ArtifactRef,
) -> Result<Resolved, AxebowError> {
    let target = target(state, caller, tenant, false).await?;
    for (field, text) in [("domain", &reference.domain), ("module", &reference.module)] {
        check_npm_name(text)
            .map_err(|why| unprocessable(format!("deployment.artifact.ref.{field}: {why}")))?;
    }
    let name = package_name(&reference.domain, &reference.module);
    let wanted = reference.version()?;
    let found = document(&target, &name).await?;
    let chosen = match &found {
        Some(document) => chosen_version(document, &name, &target.domain, wanted),
        None => Err(Absent::Module),
    };
    let version = chosen.map_err(|absent| {
        AxebowError::not_found(format!(
            "deployment.artifact.ref: {} in tenant {tenant:?}'s marketplace",
            absent.said(&name)
        ))
    })?;
    // A version a reference cannot name (a pre-release published by other tools) could not be
    // pinned, so a later update or rollback would not find it again.
    if plain_version(&version).is_none() {
        return Err(unprocessable(format!(
            "deployment.artifact.ref: {name}@{version} is not a plain major.minor.patch version; name one that is"
        )));
    }
    let document = found.unwrap_or_default();
    let entry = &document["versions"][&version];
    let kumori = &entry["kumori"];
    let tarball = entry["dist"]["tarball"].as_str().ok_or_else(|| {
        bad_gateway(format!(
            "the registry {} names no tarball for {name}@{version}",
            target.endpoint
        ))
    })?;
    // The tenant's credentials go with the request: only to the registry's own origin.
    if origin(tarball) != origin(&target.endpoint) {
        return Err(bad_gateway(format!(
            "the registry {} puts the tarball of {name}@{version} elsewhere ({}); Drover fetches tarballs from the registry's own address only",
            target.endpoint,
            origin(tarball)
        )));
    }
    let answer = target
        .calls
        .get(tarball.to_string(), target.authorization.clone())
        .await
        .map_err(|e| unreachable(&target.endpoint, &e.0))?;
    if answer.status != 200 {
        return Err(refused(&target.endpoint, &answer));
    }
    let body = answer.body;
    if let Some(expected) = entry["dist"]["shasum"].as_str() {
        use sha1::Digest;
        let got: String = sha1::Sha1::digest(&body)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        if !got.eq_ignore_ascii_case(expected) {
            return Err(bad_gateway(format!(
                "the tarball of {name}@{version} from {} does not match its shasum",
                target.endpoint
            )));
        }
    }
    let files = tokio::task::spawn_blocking(move || read_tarball(&body, BundleLimits::default()))
        .await
        .map_err(|e| AxebowError::internal(format!("reading a tarball: {e}")))?
        .map_err(|e| bad_gateway(format!("the package {name}@{version}: {e}")))?;
    let mut files = files;
    // Drover's package.json describes the package, not the module.
    files.remove("package.json");
    let module = read_module(&reference.module, &borrowed(&files))
        .map_err(|e| unprocessable(format!("{name}@{version}: {e}")))?;
    if module.domain != reference.domain || module.module != reference.module {
        return Err(bad_gateway(format!(
            "the package {name}@{version} holds module {}/{}",
            module.domain, module.module
        )));
    }
    let main = kumori["targetDir"]
        .as_str()
        .and_then(|dir| dir.split_once('/'))
        .map(|(_, artifact)| artifact.rsplit('/').next().unwrap_or(artifact).to_string())
        .filter(|artifact| module.artifacts.contains_key(artifact));
    Ok(Resolved {
        module,
        files,
        version,
        main,
    })
}

/// Why a reference finds nothing (each `404`).
#[derive(Debug, Clone, PartialEq, Eq)]
enum Absent {
    /// No module of that name the tenant may use.
    Module,
    /// The module, but not the version asked for.
    Version(String),
    /// The module, but no version tagged `latest` the tenant may use.
    Latest,
}

impl Absent {
    /// What the caller is told about package `name`.
    fn said(&self, name: &str) -> String {
        match self {
            Absent::Module => format!("no module {name}"),
            Absent::Version(version) => format!("no version {version} of module {name}"),
            Absent::Latest => format!("module {name} has no version tagged latest"),
        }
    }
}

/// The version of package `name` (whose `document` the registry answered) that a reference
/// asking for `wanted` (else the one tagged `latest`) takes, for the tenant of `own_domain`. A
/// package none of whose versions the tenant may use is [`Absent::Module`], exactly as one the
/// registry does not hold: nothing of it — its versions, its `latest` — is told.
fn chosen_version(
    document: &Value,
    name: &str,
    own_domain: &str,
    wanted: Option<String>,
) -> Result<String, Absent> {
    let may_use = |version: &str| usable(name, &document["versions"][version]["kumori"], own_domain);
    let visible = document["versions"]
        .as_object()
        .is_some_and(|versions| versions.keys().any(|version| may_use(version)));
    if !visible {
        return Err(Absent::Module);
    }
    match wanted {
        Some(version) if may_use(&version) => Ok(version),
        Some(version) => Err(Absent::Version(version)),
        None => document["dist-tags"]["latest"]
            .as_str()
            .filter(|latest| may_use(latest))
            .map(str::to_string)
            .ok_or(Absent::Latest),
    }
}

/// `files` as [`read_module`] takes them.
pub fn borrowed(files: &BTreeMap<String, Vec<u8>>) -> BTreeMap<&str, &[u8]> {
    files
        .iter()
        .map(|(path, bytes)| (path.as_str(), bytes.as_slice()))
        .collect()
}

/// The `version` of a manifest's `artifact.ref`, pinned to what it resolved to (a plain
/// `major.minor.patch`: [`resolve`] takes no other).
pub fn pin(manifest: &mut Value, version: &str) {
    let reference = manifest
        .get_mut("artifact")
        .and_then(|a| a.get_mut("ref"))
        .and_then(Value::as_object_mut);
    if let (Some(reference), Some(pinned)) = (reference, ArtifactRef::pinned(version)) {
        reference.insert("version".into(), pinned);
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// A package document of `name` whose versions carry `kumori` metadata `(version, domain,
    /// module, public)`, the last one tagged `latest`.
    fn document_of(name: &str, versions: &[(&str, &str, &str, bool)]) -> Value {
        let mut document = json!({"name": name, "versions": {}, "dist-tags": {}});
        for (version, domain, module, public) in versions {
            document["versions"][*version] =
                json!({"kumori": {"domain": domain, "module": module, "public": public}});
            document["dist-tags"]["latest"] = json!(version);
        }
        document
    }

    #[test]
    fn a_module_the_tenant_may_not_use_is_told_as_absent() {
        let private = document_of(
            "@other.mods/tool",
            &[
                ("1.0.0", "other.mods", "tool", false),
                ("1.1.0", "other.mods", "tool", false),
            ],
        );
        // Asked by acme: with a version, without one, with a version it does not have.
        for wanted in [Some("1.0.0"), None, Some("9.9.9")] {
            let chosen = chosen_version(
                &private,
                "@other.mods/tool",
                "acme.mods",
                wanted.map(str::to_string),
            );
            assert_eq!(chosen, Err(Absent::Module), "{wanted:?}");
        }
        assert_eq!(
            Absent::Module.said("@other.mods/tool"),
            "no module @other.mods/tool"
        );
        // Its own tenant finds it.
        assert_eq!(
            chosen_version(&private, "@other.mods/tool", "other.mods", None),
            Ok("1.1.0".to_string())
        );
        // A module the tenant may use in part tells the versions it may not use as missing,
        // and names no latest it may not use.
        let partly = document_of(
            "@other.mods/tool",
            &[
                ("1.0.0", "other.mods", "tool", true),
                ("2.0.0", "other.mods", "tool", false),
            ],
        );
        let chosen = |wanted: Option<&str>| {
            chosen_version(
                &partly,
                "@other.mods/tool",
                "acme.mods",
                wanted.map(str::to_string),
            )
        };
        assert_eq!(chosen(Some("1.0.0")), Ok("1.0.0".to_string()));
        assert_eq!(chosen(Some("2.0.0")), Err(Absent::Version("2.0.0".into())));
        assert_eq!(chosen(None), Err(Absent::Latest));
        assert!(!Absent::Latest.said("@other.mods/tool").contains("2.0.0"));
    }

    #[test]
    fn a_package_whose_metadata_names_another_module_is_none() {
        // Published to @other.mods, claiming acme's domain: neither tenant's module.
        let forged = document_of("@other.mods/x", &[("1.0.0", "acme.mods", "x", false)]);
        for own in ["acme.mods", "other.mods"] {
            assert_eq!(
                chosen_version(&forged, "@other.mods/x", own, None),
                Err(Absent::Module),
                "{own}"
            );
        }
        let renamed = document_of("@acme.mods/x", &[("1.0.0", "acme.mods", "y", false)]);
        assert_eq!(
            chosen_version(&renamed, "@acme.mods/x", "acme.mods", None),
            Err(Absent::Module)
        );
    }

    #[test]
    fn origins_and_pins() {
        assert_eq!(origin("http://R:4873/@a%2fb/-/b-1.0.0.tgz"), "http://r:4873");
        assert_eq!(origin("http://r:4873"), "http://r:4873");
        assert_ne!(origin("http://r:4873.evil/x"), origin("http://r:4873"));
        let mut manifest = json!({"artifact": {"ref": {"domain": "d", "module": "m"}}});
        pin(&mut manifest, "1.2.3");
        assert_eq!(manifest["artifact"]["ref"]["version"], json!([1, 2, 3]));
    }
}
