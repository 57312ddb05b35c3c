//! A Kumori module as Drover reads it. Kumori writes modules in CUE and Drover has no CUE
//! evaluator, so it reads the data subset of CUE written as JSON or YAML: the module's
//! `kmodule.json` (or `.yaml`, `.yml`) — `{domain, module, version: [major, minor, patch],
//! artifacts: {name: "component" | "service"}}`, as `kmodule.cue` holds them — and, for each
//! artifact, an optional `<name>/artifact.json` (or `.yaml`, `.yml`) with `{schemas: [JSON
//! Schema…], roles: [name…]}` — and what it runs: a component `{exec, resources, env}` (its
//! files are those of its directory) or `{code, resources, env}` (container images, as
//! Kumori's `code` names them: [`super::code`]), a service `roles: {name: {component} | {exec,
//! resources, env}}` and `channels`. A `.cue` file anywhere in the module is refused, naming it: its
//! meaning would need the evaluator.

use std::collections::BTreeMap;

use drover_model::cluster::agent_api::{ExecSpec, Resources};
use drover_model::service::links::Channels;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

use super::code::{read_code, Code};

/// What an artifact is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum ArtifactKind {
    /// A component (one role's program).
    Component,
    /// A service (roles wired together).
    Service,
}

/// `kmodule.json`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
struct Kmodule {
    domain: String,
    module: String,
    version: [u64; 3],
    #[serde(default)]
    artifacts: BTreeMap<String, ArtifactKind>,
    /// Kept by Kumori's tooling; not read.
    #[serde(default, rename = "cue")]
    _cue: Option<Value>,
    #[serde(default, rename = "spec")]
    _spec: Option<Value>,
    #[serde(default, rename = "dependencies")]
    _dependencies: Option<Value>,
    #[serde(default, rename = "sums")]
    _sums: Option<Value>,
}

/// `<artifact>/artifact.json`: its configuration's schemas; for a component what it runs
/// (`exec`, `resources`, `env`); for a service its roles (names only, or what each runs) and
/// channels.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
struct ArtifactFile {
    #[serde(default)]
    schemas: Vec<Value>,
    #[serde(default)]
    roles: Roles,
    #[serde(default)]
    channels: Channels,
    #[serde(default)]
    exec: Option<ExecSpec>,
    /// Kumori's containers (read by [`read_code`]).
    #[serde(default)]
    code: Option<Value>,
    #[serde(default)]
    resources: Option<Resources>,
    #[serde(default)]
    env: BTreeMap<String, String>,
}

/// A service artifact's roles: their names, or what each runs.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(untagged)]
enum Roles {
    Names(Vec<String>),
    Runs(BTreeMap<String, RoleRun>),
}

impl Default for Roles {
    fn default() -> Self {
        Roles::Names(Vec::new())
    }
}

/// What one role of a service artifact runs: a component of the same module (`component`,
/// with `env` added to the component's and `resources` replacing its), or a program given
/// inline (`exec`, `resources`, `env`; no files).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RoleRun {
    /// The component it runs.
    #[serde(default)]
    pub component: Option<String>,
    /// Or the program it runs.
    #[serde(default)]
    pub exec: Option<ExecSpec>,
    /// What each instance needs.
    #[serde(default)]
    pub resources: Option<Resources>,
    /// Environment variables.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
}

/// What an artifact runs, as its `artifact.json` says (never published in the package's
/// metadata: a deployment reads it from the module's files).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ArtifactRun {
    /// A component's program.
    pub exec: Option<ExecSpec>,
    /// Or a component's container images.
    pub code: Option<Code>,
    /// A component's requests.
    pub resources: Option<Resources>,
    /// A component's environment.
    pub env: BTreeMap<String, String>,
    /// A service's roles.
    pub roles: BTreeMap<String, RoleRun>,
    /// A service's channels.
    pub channels: Channels,
}

/// One artifact of a module, as `GET …/marketplace/module/schema` shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct Artifact {
    /// `component` or `service`.
    pub kind: ArtifactKind,
    /// JSON Schemas of its configuration.
    #[schema(value_type = Vec<Object>)]
    pub schemas: Vec<Value>,
    /// Its roles (a service's).
    pub roles: Vec<String>,
    /// What it runs.
    #[serde(skip)]
    pub run: ArtifactRun,
}

/// A module read from a bundle directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Module {
    /// Its domain (the npm scope it is published under).
    pub domain: String,
    /// Its name.
    pub module: String,
    /// `major.minor.patch`.
    pub version: String,
    /// Its artifacts by name.
    pub artifacts: BTreeMap<String, Artifact>,
}

/// Why a module cannot be read (`422`, naming the file).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("module: {file}: {why}")]
pub struct ModuleError {
    /// The file at fault (relative to the bundle).
    pub file: String,
    /// What is wrong.
    pub why: String,
}

const EXTENSIONS: [&str; 3] = ["json", "yaml", "yml"];

/// Longest module name: with `@<domain>/` (a domain is at most 100) it stays within npm's 214.
const MAX_MODULE_NAME: usize = 100;

/// Names npm refuses whatever their characters (validate-npm-package-name's exclusion list).
const EXCLUDED_NAMES: [&str; 2] = ["node_modules", "favicon.ico"];

/// Checks a module name (or a domain) as npm's validate-npm-package-name checks a package name
/// or scope, so that no name a registry would refuse (`..`, `.hidden`, `_x`, `node_modules`)
/// is sent to one: 1 to 100 lowercase letters, digits, `-`, `_` or `.`, starting with a letter
/// or digit, and not a name npm excludes. The error starts with the name, quoted.
pub fn check_npm_name(name: &str) -> Result<(), String> {
    let ok = !name.is_empty()
        && name.len() <= MAX_MODULE_NAME
        && name.starts_with(|c: char| c.is_ascii_lowercase() || c.is_ascii_digit())
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || matches!(b, b'-' | b'_' | b'.'))
        && !EXCLUDED_NAMES.contains(&name);
    if ok {
        Ok(())
    } else {
        Err(format!(
            "{name:?} must be 1 to {MAX_MODULE_NAME} lowercase letters, digits, '-', '_' or '.', starting with a letter or digit, and not {} (it names the npm package, and npm refuses other names)",
            EXCLUDED_NAMES.join(" or ")
        ))
    }
}

/// Parses JSON or YAML data by the file's extension.
fn data<T: for<'de> Deserialize<'de>>(file: &str, bytes: &[u8]) -> Result<T, ModuleError> {
    let error = |why: String| ModuleError {
        file: file.to_string(),
        why,
    };
    if file.ends_with(".json") {
        serde_json::from_slice(bytes).map_err(|e| error(format!("not the JSON Drover expects: {e}")))
    } else {
        yaml_serde::from_slice(bytes).map_err(|e| error(format!("not the YAML Drover expects: {e}")))
    }
}

/// The one of `<dir>/<stem>.{json,yaml,yml}` present in `files`, if any.
fn find<'a>(
    files: &BTreeMap<&'a str, &'a [u8]>,
    stem: &str,
) -> Result<Option<(String, &'a [u8])>, ModuleError> {
    let found: Vec<(String, &[u8])> = EXTENSIONS
        .iter()
        .filter_map(|ext| {
            let name = format!("{stem}.{ext}");
            files.get(name.as_str()).map(|bytes| (name, *bytes))
        })
        .collect();
    if found.len() > 1 {
        return Err(ModuleError {
            file: stem.to_string(),
            why: "is given in more than one of .json, .yaml and .yml".into(),
        });
    }
    Ok(found.into_iter().next())
}

/// The containers an artifact's `code` names: a component's only, and never beside `exec`
/// (which one runs would be a guess). `file` is the artifact file, as errors name it.
fn code_of(kind: ArtifactKind, described: &ArtifactFile, file: &str) -> Result<Option<Code>, ModuleError> {
    let Some(code) = &described.code else {
        return Ok(None);
    };
    let bad = |why: String| ModuleError {
        file: file.to_string(),
        why,
    };
    if kind != ArtifactKind::Component {
        return Err(bad(
            "code: a service runs its roles' components; only a component names container images".into(),
        ));
    }
    if described.exec.is_some() {
        return Err(bad(
            "code: give either exec (a program) or code (container images), not both".into(),
        ));
    }
    read_code(code)
        .map(Some)
        .map_err(|e| bad(format!("{}: {}", e.field, e.why)))
}

/// Reads the module whose files (relative to its directory `dir`) are `files`.
pub fn read_module(dir: &str, files: &BTreeMap<&str, &[u8]>) -> Result<Module, ModuleError> {
    let path = |file: &str| {
        if dir.is_empty() {
            file.to_string()
        } else {
            format!("{dir}/{file}")
        }
    };
    if let Some(cue) = files.keys().find(|f| f.ends_with(".cue")) {
        return Err(ModuleError {
            file: path(cue),
            why: "is CUE, which Drover does not evaluate: write the module's manifests as JSON or YAML data (kmodule.json, <artifact>/artifact.json)".into(),
        });
    }
    let (name, bytes) = find(files, "kmodule")?.ok_or_else(|| ModuleError {
        file: path("kmodule.json"),
        why: "is missing: a module directory holds kmodule.json (or .yaml)".into(),
    })?;
    let kmodule: Kmodule = data(&path(&name), bytes)?;
    let bad = |why: String| ModuleError {
        file: path(&name),
        why,
    };
    if let Err(why) = check_npm_name(&kmodule.module) {
        return Err(bad(format!("module {why}")));
    }
    if kmodule.artifacts.is_empty() {
        return Err(bad("artifacts: the module names no artifact".into()));
    }
    let mut artifacts = BTreeMap::new();
    for (artifact, kind) in &kmodule.artifacts {
        let stem = format!("{artifact}/artifact");
        let (file, described) = match find(files, &stem)? {
            Some((file, bytes)) => (path(&file), data::<ArtifactFile>(&path(&file), bytes)?),
            None => (path(&format!("{stem}.json")), ArtifactFile::default()),
        };
        let code = code_of(*kind, &described, &file)?;
        let (roles, runs) = match described.roles {
            Roles::Names(names) => (names, BTreeMap::new()),
            Roles::Runs(runs) => (runs.keys().cloned().collect(), runs),
        };
        artifacts.insert(
            artifact.clone(),
            Artifact {
                kind: *kind,
                schemas: described.schemas,
                roles,
                run: ArtifactRun {
                    exec: described.exec,
                    code,
                    resources: described.resources,
                    env: described.env,
                    roles: runs,
                    channels: described.channels,
                },
            },
        );
    }
    let [major, minor, patch] = kmodule.version;
    Ok(Module {
        domain: kmodule.domain,
        module: kmodule.module,
        version: format!("{major}.{minor}.{patch}"),
        artifacts,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn files<'a>(entries: &[(&'a str, &'a str)]) -> BTreeMap<&'a str, &'a [u8]> {
        entries.iter().map(|(n, c)| (*n, c.as_bytes())).collect()
    }

    #[test]
    fn a_module_in_json_or_yaml_is_read_and_cue_is_named() {
        let module = read_module(
            "hello",
            &files(&[
                (
                    "kmodule.yaml",
                    "domain: acme.mods\nmodule: hello\nversion: [1, 2, 3]\nartifacts: {web: service, worker: component}\n",
                ),
                ("web/artifact.json", r#"{"roles": ["frontend", "worker"], "schemas": [{"type": "object"}]}"#),
                ("worker/main.sh", "echo hi"),
            ]),
        )
        .unwrap();
        assert_eq!(
            (
                module.domain.as_str(),
                module.module.as_str(),
                module.version.as_str()
            ),
            ("acme.mods", "hello", "1.2.3")
        );
        assert_eq!(module.artifacts["web"].roles, ["frontend", "worker"]);
        assert_eq!(module.artifacts["worker"].kind, ArtifactKind::Component);
        let cases = [
            (vec![("kmodule.cue", "x")], "hello/kmodule.cue: is CUE"),
            (vec![("readme", "x")], "hello/kmodule.json: is missing"),
            (vec![("kmodule.json", "{")], "not the JSON"),
            (
                vec![("kmodule.json", "{}"), ("kmodule.yaml", "{}")],
                "more than one",
            ),
            (
                vec![(
                    "kmodule.json",
                    r#"{"domain":"a","module":"Hello","version":[1,0,0],"artifacts":{"x":"service"}}"#,
                )],
                "must be 1 to 100 lowercase",
            ),
            (
                vec![(
                    "kmodule.json",
                    r#"{"domain":"a","module":"h","version":[1,0],"artifacts":{"x":"service"}}"#,
                )],
                "not the JSON",
            ),
            (
                vec![(
                    "kmodule.json",
                    r#"{"domain":"a","module":"hhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhhh","version":[1,0,0],"artifacts":{"x":"service"}}"#,
                )],
                "1 to 100 lowercase",
            ),
            (
                vec![(
                    "kmodule.json",
                    r#"{"domain":"a","module":"h","version":[1,0,0],"artifacts":{"x":"job"}}"#,
                )],
                "not the JSON",
            ),
        ];
        for (entries, says) in cases {
            let error = read_module("hello", &files(&entries)).unwrap_err().to_string();
            assert!(error.contains(says), "{entries:?}: {error}");
        }
    }

    #[test]
    fn module_names_npm_refuses_are_refused_naming_kmodule() {
        for name in [
            "..",
            ".",
            ".hidden",
            "_private",
            "-dash",
            "node_modules",
            "favicon.ico",
            "a b",
            "a/b",
            "a%2f",
            "é",
        ] {
            let kmodule = json_module(name);
            let error = read_module("hello", &files(&[("kmodule.json", &kmodule)]))
                .expect_err(name)
                .to_string();
            assert!(
                error.starts_with("module: hello/kmodule.json: module ") && error.contains("npm refuses"),
                "{name}: {error}"
            );
        }
        for name in ["hello", "0day", "a.b-c_d", "node_modules2", "http"] {
            let kmodule = json_module(name);
            let module = read_module("hello", &files(&[("kmodule.json", &kmodule)])).expect(name);
            assert_eq!(module.module, name);
        }
    }

    fn json_module(name: &str) -> String {
        serde_json::json!({"domain": "acme", "module": name, "version": [1, 0, 0], "artifacts": {"x": "service"}})
            .to_string()
    }
}
