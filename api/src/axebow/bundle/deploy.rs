//! A service deployed from Kumori modules, pure: the service bundle read into a
//! [`DeploymentSource`] (its `deployment` module's manifest and its other modules' text files),
//! a partial update bundle applied to the previous revision's source, where the manifest's
//! artifact comes from (described inline, a module of the bundle, or the marketplace), and the
//! roles an artifact runs — a component's program with the files of its directory, or its
//! container images as one pod (with the secrets its registries' credentials are in, resolved
//! by the caller), or a service's roles, each running a component of the module or a program
//! given inline.

use std::collections::BTreeMap;

use drover_model::cluster::agent_api::ExecSpec;
use drover_model::cluster::pod::{PodSpec, RestartPolicy};
use drover_model::service::simple::{SimpleArtifact, SimpleDeployment, SimpleRole};
use drover_model::service::source::{ArtifactRef, DeploymentSource};
use serde_json::Value;

use super::archive::Bundle;
use super::code::HubSecret;
use super::module::{read_module, Artifact, ArtifactKind, Module, ModuleError};

/// The directory of a bundle's deployment module.
pub const DEPLOYMENT_DIR: &str = "deployment";

/// A module's text files, by path relative to its directory.
pub type ModuleFiles = BTreeMap<String, String>;

/// A service bundle as read: the deployment manifest, when the bundle has one, and the other
/// modules.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ServiceBundle {
    /// `deployment/deployment.{json,yaml,yml}`, as JSON.
    pub manifest: Option<Value>,
    /// Every other top-level directory's files.
    pub modules: BTreeMap<String, ModuleFiles>,
}

fn error(file: impl Into<String>, why: impl Into<String>) -> ModuleError {
    ModuleError {
        file: file.into(),
        why: why.into(),
    }
}

/// Reads a service bundle: files must be text (UTF-8) and inside a top-level directory; the
/// `deployment` directory's manifest is `deployment.json` (or `.yaml`, `.yml`: the `deployment`
/// object of the simple form), its other files (a `kmodule.json`) are not read.
pub fn read_service_bundle(bundle: &Bundle) -> Result<ServiceBundle, ModuleError> {
    let mut read = ServiceBundle::default();
    let mut manifests = Vec::new();
    for (path, bytes) in &bundle.files {
        let Some((dir, rest)) = path.split_once('/') else {
            return Err(error(
                path.clone(),
                "is outside every module: a bundle holds one directory per module",
            ));
        };
        if let Some(cue) = path.strip_suffix(".cue") {
            return Err(error(
                format!("{cue}.cue"),
                "is CUE, which Drover does not evaluate: write the module's manifests as JSON or YAML data",
            ));
        }
        let text = std::str::from_utf8(bytes).map_err(|_| {
            error(
                path.clone(),
                "is not text (UTF-8): a service bundle's files are text",
            )
        })?;
        if dir == DEPLOYMENT_DIR {
            if let Some(ext) = rest.strip_prefix("deployment.") {
                manifests.push((path.clone(), ext.to_string(), text));
            }
            continue;
        }
        read.modules
            .entry(dir.to_string())
            .or_default()
            .insert(rest.to_string(), text.to_string());
    }
    match manifests.as_slice() {
        [] => {}
        [(path, ext, text)] => {
            let value: Value = match ext.as_str() {
                "json" => serde_json::from_str(text)
                    .map_err(|e| error(path.clone(), format!("not the JSON Drover expects: {e}")))?,
                "yaml" | "yml" => yaml_serde::from_str(text)
                    .map_err(|e| error(path.clone(), format!("not the YAML Drover expects: {e}")))?,
                _ => return Err(error(path.clone(), "is not .json, .yaml or .yml")),
            };
            if !value.is_object() {
                return Err(error(path.clone(), "must hold an object (the deployment)"));
            }
            read.manifest = Some(value);
        }
        _ => {
            return Err(error(
                "deployment/deployment",
                "is given in more than one of .json, .yaml and .yml",
            ))
        }
    }
    Ok(read)
}

/// The source a bundle makes: a whole one (`previous` is `None`, or the update is complete)
/// replaces everything; a partial one merge-patches the previous manifest with its own (RFC
/// 7396; none leaves it as it was) and replaces only the modules it carries.
pub fn source_of(
    previous: Option<&DeploymentSource>,
    update: ServiceBundle,
) -> Result<DeploymentSource, ModuleError> {
    let missing = || {
        error(
            "deployment/deployment.json",
            "is missing: a bundle's deployment module holds the deployment manifest (a partial update may leave it out only when the revision it updates came from a bundle or a module)",
        )
    };
    let Some(previous) = previous else {
        return Ok(DeploymentSource {
            manifest: update.manifest.ok_or_else(missing)?,
            modules: update.modules,
        });
    };
    let mut manifest = previous.manifest.clone();
    if let Some(patch) = &update.manifest {
        drover_model::merge_patch::merge_patch(&mut manifest, patch);
    }
    let mut modules = previous.modules.clone();
    modules.extend(update.modules);
    Ok(DeploymentSource { manifest, modules })
}

/// Where a manifest's artifact comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// Described inline (`artifact.roles`).
    Inline,
    /// A module the source carries: its directory, and the reference that named it.
    Bundled(String, ArtifactRef),
    /// The tenant's marketplace.
    Marketplace(ArtifactRef),
}

/// The manifest of `source` as the simple form's deployment, and where its artifact comes
/// from: a reference names a module of the source when one has its domain and name (and the
/// version, when the reference gives one); otherwise the marketplace.
pub fn origin(source: &DeploymentSource) -> Result<(SimpleDeployment, Origin), ModuleError> {
    let manifest: SimpleDeployment = serde_json::from_value(source.manifest.clone())
        .map_err(|e| error("deployment/deployment.json", format!("not a deployment: {e}")))?;
    let reference = manifest
        .reference()
        .map_err(|e| error("deployment/deployment.json", e.to_string()))?;
    let Some(reference) = reference else {
        return Ok((manifest, Origin::Inline));
    };
    let wanted = reference
        .version()
        .map_err(|e| error("deployment/deployment.json", e.to_string()))?;
    for (dir, files) in &source.modules {
        let module = read_module(dir, &borrowed(files))?;
        if module.domain == reference.domain
            && module.module == reference.module
            && wanted.as_ref().is_none_or(|v| *v == module.version)
        {
            return Ok((manifest, Origin::Bundled(dir.clone(), reference)));
        }
    }
    Ok((manifest, Origin::Marketplace(reference)))
}

/// `files` as [`read_module`] takes them.
pub fn borrowed(files: &ModuleFiles) -> BTreeMap<&str, &[u8]> {
    files
        .iter()
        .map(|(path, text)| (path.as_str(), text.as_bytes()))
        .collect()
}

/// Which artifact of `module` a reference means: the one it names; else the main one its
/// package names (`main`); else its only service, else its only artifact.
pub fn chosen_artifact<'a>(
    module: &'a Module,
    reference: &ArtifactRef,
    main: Option<&str>,
) -> Result<(&'a str, &'a Artifact), ModuleError> {
    let file = format!("{}/kmodule.json", module.module);
    let name = match (&reference.name, main) {
        (Some(name), _) => name.clone(),
        (None, Some(main)) => main.to_string(),
        (None, None) => {
            let services: Vec<&String> = module
                .artifacts
                .iter()
                .filter(|(_, a)| a.kind == ArtifactKind::Service)
                .map(|(name, _)| name)
                .collect();
            match (services.as_slice(), module.artifacts.len()) {
                ([only], _) => (*only).clone(),
                ([], 1) => module.artifacts.keys().next().cloned().unwrap_or_default(),
                _ => {
                    return Err(error(
                        file,
                        "has more than one artifact to deploy: name one in deployment.artifact.ref.name",
                    ))
                }
            }
        }
    };
    let (name, artifact) = module
        .artifacts
        .get_key_value(&name)
        .ok_or_else(|| error(file.clone(), format!("has no artifact {name:?}")))?;
    if let Some(kind) = &reference.kind {
        let is = serde_json::to_value(artifact.kind).unwrap_or_default();
        if is.as_str() != Some(kind.as_str()) {
            return Err(error(
                file,
                format!("artifact {name:?} is a {is}, not a {kind:?}"),
            ));
        }
    }
    Ok((name.as_str(), artifact))
}

/// The files of component `name` (those under its directory, but its `artifact` file), by
/// path relative to it.
fn component_files(
    files: &BTreeMap<&str, &[u8]>,
    module: &Module,
    name: &str,
) -> Result<BTreeMap<String, String>, ModuleError> {
    let prefix = format!("{name}/");
    let mut found = BTreeMap::new();
    for (path, bytes) in files {
        let Some(rest) = path.strip_prefix(&prefix) else {
            continue;
        };
        if ["artifact.json", "artifact.yaml", "artifact.yml"].contains(&rest) {
            continue;
        }
        let text = std::str::from_utf8(bytes).map_err(|_| {
            error(
                format!("{}/{path}", module.module),
                "is not text (UTF-8): a component's files are written as text",
            )
        })?;
        found.insert(rest.to_string(), text.to_string());
    }
    Ok(found)
}

/// What artifact `name` runs: its roles and channels, and by role the secrets its pod's
/// registries are pulled with (`hub.secret`), which the caller resolves in the tenant.
#[derive(Debug, Clone)]
pub struct ArtifactRoles {
    /// Roles and channels.
    pub artifact: SimpleArtifact,
    /// By role, the secrets named for its pod's registries.
    pub pulls: BTreeMap<String, Vec<HubSecret>>,
}

/// What component `name` runs: its program with its files, or its container images as one
/// pod (its directory holding nothing but its artifact file); and the secrets its registries
/// are pulled with.
fn component(
    module: &Module,
    files: &BTreeMap<&str, &[u8]>,
    name: &str,
) -> Result<(SimpleRole, Vec<HubSecret>), ModuleError> {
    let artifact = module
        .artifacts
        .get(name)
        .filter(|a| a.kind == ArtifactKind::Component)
        .ok_or_else(|| {
            error(
                format!("{}/kmodule.json", module.module),
                format!("has no component {name:?}"),
            )
        })?;
    let file = format!("{}/{name}/artifact.json", module.module);
    let own_files = component_files(files, module, name)?;
    let resources = artifact.run.resources.unwrap_or_default();
    let env = artifact.run.env.clone();
    if let Some(code) = &artifact.run.code {
        if let Some(path) = own_files.keys().next() {
            return Err(error(
                format!("{}/{name}/{path}", module.module),
                "is a file of a component that runs container images (code): its containers get no files; remove it",
            ));
        }
        let pod = PodSpec {
            containers: code.containers.clone(),
            restart_policy: RestartPolicy::Always,
            host_network: false,
            termination_grace_secs: 30,
            pull_auth: Vec::new(),
        };
        let exec = ExecSpec {
            pod: Some(pod),
            ..ExecSpec::default()
        };
        return Ok((SimpleRole { exec, resources, env }, code.pulls.clone()));
    }
    let exec = artifact.run.exec.clone().ok_or_else(|| {
        error(
            file.clone(),
            "says nothing to run: give exec {\"argv\": [...]} (and resources, env), or Kumori's code {\"<key>\": {name, image: {hub: {name, secret}, tag}}}",
        )
    })?;
    if !exec.files.is_empty() {
        return Err(error(
            file,
            "exec.files: a component's files are the files of its directory",
        ));
    }
    if exec.pod.is_some() {
        return Err(error(
            file,
            "exec.pod: a component names its container images in code",
        ));
    }
    let exec = ExecSpec {
        files: own_files,
        ..exec
    };
    Ok((SimpleRole { exec, resources, env }, Vec::new()))
}

/// The roles and channels artifact `name` of `module` (whose files are `files`) runs: a
/// component as one role of its own name; a service's roles as its `artifact.json` says.
pub fn artifact_roles(
    module: &Module,
    files: &BTreeMap<&str, &[u8]>,
    name: &str,
) -> Result<ArtifactRoles, ModuleError> {
    let artifact = module.artifacts.get(name).ok_or_else(|| {
        error(
            format!("{}/kmodule.json", module.module),
            format!("has no artifact {name:?}"),
        )
    })?;
    let file = format!("{}/{name}/artifact.json", module.module);
    let mut roles = BTreeMap::new();
    let mut pulls = BTreeMap::new();
    match artifact.kind {
        ArtifactKind::Component => {
            let (role, needs) = component(module, files, name)?;
            roles.insert(name.to_string(), role);
            pulls.insert(name.to_string(), needs);
        }
        ArtifactKind::Service => {
            if artifact.run.roles.is_empty() {
                return Err(error(
                    file,
                    "says nothing its roles run: give roles as {\"name\": {\"component\": \"…\"}} or {\"name\": {\"exec\": …}}",
                ));
            }
            for (role, run) in &artifact.run.roles {
                let (spec, needs) = match (&run.component, &run.exec) {
                    (Some(component_name), None) => {
                        let (mut spec, needs) = component(module, files, component_name)?;
                        spec.env.extend(run.env.clone());
                        if let Some(resources) = run.resources {
                            spec.resources = resources;
                        }
                        (spec, needs)
                    }
                    (None, Some(exec)) => {
                        if exec.pod.is_some() {
                            return Err(error(
                                file,
                                format!("roles.{role}.exec.pod: a role runs container images through a component's code"),
                            ));
                        }
                        let spec = SimpleRole {
                            exec: exec.clone(),
                            resources: run.resources.unwrap_or_default(),
                            env: run.env.clone(),
                        };
                        (spec, Vec::new())
                    }
                    _ => {
                        return Err(error(
                            file,
                            format!("roles.{role}: give either component or exec"),
                        ))
                    }
                };
                roles.insert(role.clone(), spec);
                pulls.insert(role.clone(), needs);
            }
        }
    }
    pulls.retain(|_, needs: &mut Vec<HubSecret>| !needs.is_empty());
    Ok(ArtifactRoles {
        artifact: SimpleArtifact {
            reference: None,
            roles,
            channels: artifact.run.channels.clone(),
        },
        pulls,
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn bundle(entries: &[(&str, &str)]) -> Bundle {
        Bundle {
            files: entries
                .iter()
                .map(|(path, text)| (path.to_string(), text.as_bytes().to_vec()))
                .collect(),
        }
    }

    const KMODULE: &str = r#"{"domain": "acme.mods", "module": "hello", "version": [1, 0, 0],
        "artifacts": {"svc": "service", "web": "component", "worker": "component"}}"#;
    const SVC: &str = r#"{"roles": {"frontend": {"component": "web", "env": {"ROLE": "front"}},
        "backend": {"component": "worker", "resources": {"cpu_millis": 50, "memory_mib": 16}},
        "side": {"exec": {"argv": ["sleep", "100"]}}}, "channels": {"server": {"http": {}}}}"#;
    const WEB: &str = r#"{"exec": {"argv": ["sh", "main.sh"]}, "resources": {"cpu_millis": 100, "memory_mib": 32}, "env": {"A": "1"}}"#;

    fn full() -> Bundle {
        bundle(&[
            (
                "deployment/deployment.json",
                r#"{"config": {"scale": {"frontend": 2}}, "artifact": {"ref": {"domain": "acme.mods", "module": "hello"}}}"#,
            ),
            ("deployment/kmodule.json", "{}"),
            ("hello/kmodule.json", KMODULE),
            ("hello/svc/artifact.json", SVC),
            ("hello/web/artifact.json", WEB),
            ("hello/web/main.sh", "echo web"),
            ("hello/web/lib/util.sh", "true"),
            ("hello/worker/artifact.yaml", "exec: {argv: [sh, work.sh]}"),
            ("hello/worker/work.sh", "echo work"),
        ])
    }

    fn build(source: &DeploymentSource) -> SimpleArtifact {
        let (_, origin) = origin(source).unwrap();
        let Origin::Bundled(dir, _) = origin else {
            panic!("{origin:?}")
        };
        let files = borrowed(&source.modules[&dir]);
        let module = read_module(&dir, &files).unwrap();
        let reference = ArtifactRef::parse(&json!({"domain": "acme.mods", "module": "hello"})).unwrap();
        let (name, _) = chosen_artifact(&module, &reference, None).unwrap();
        artifact_roles(&module, &files, name).unwrap().artifact
    }

    #[test]
    fn a_bundled_service_runs_its_components_with_their_files() {
        let read = read_service_bundle(&full()).unwrap();
        assert!(
            !read.modules.contains_key("deployment"),
            "the deployment dir is the manifest"
        );
        let source = source_of(None, read).unwrap();
        let artifact = build(&source);
        let front = &artifact.roles["frontend"];
        assert_eq!(front.exec.argv, ["sh", "main.sh"]);
        assert_eq!(
            front.exec.files,
            BTreeMap::from([
                ("lib/util.sh".to_string(), "true".to_string()),
                ("main.sh".to_string(), "echo web".to_string())
            ]),
            "the component's directory but its artifact file"
        );
        assert_eq!(front.env["A"], "1");
        assert_eq!(front.env["ROLE"], "front", "the role's env is added");
        assert_eq!(front.resources.cpu_millis, 100);
        let back = &artifact.roles["backend"];
        assert_eq!(
            back.resources.memory_mib, 16,
            "the role's resources replace the component's"
        );
        assert_eq!(back.exec.files["work.sh"], "echo work");
        assert!(artifact.roles["side"].exec.files.is_empty());
        assert!(artifact.channels.server.contains_key("http"));
        // The manifest's scale and the roles make the deployment.
        let (manifest, _) = origin(&source).unwrap();
        let deployment = manifest.build(artifact, Some(source.clone())).unwrap();
        assert_eq!(deployment.roles["frontend"].instances, 2);
        assert_eq!(deployment.roles["backend"].instances, 1);
        assert!(deployment.validate().is_ok(), "{:?}", deployment.validate());
    }

    #[test]
    fn a_partial_bundle_patches_the_manifest_and_replaces_only_its_modules() {
        let base = source_of(None, read_service_bundle(&full()).unwrap()).unwrap();
        // Only the worker's script changes: the module comes whole, the manifest not at all.
        let mut module = full();
        module.files.retain(|path, _| path.starts_with("hello/"));
        module
            .files
            .insert("hello/worker/work.sh".into(), b"echo work v2".to_vec());
        let patched = source_of(Some(&base), read_service_bundle(&module).unwrap()).unwrap();
        assert_eq!(patched.manifest, base.manifest);
        let (before, after) = (build(&base), build(&patched));
        assert_eq!(before.roles["frontend"], after.roles["frontend"]);
        assert_ne!(before.roles["backend"], after.roles["backend"]);
        // A manifest alone is merged over the previous one.
        let scale = bundle(&[("deployment/deployment.yaml", "config: {scale: {frontend: 3}}")]);
        let scaled = source_of(Some(&base), read_service_bundle(&scale).unwrap()).unwrap();
        assert_eq!(scaled.modules, base.modules);
        assert_eq!(scaled.manifest["config"]["scale"]["frontend"], 3);
        assert_eq!(scaled.manifest["artifact"], base.manifest["artifact"]);
        // A whole bundle needs its manifest.
        assert!(source_of(None, read_service_bundle(&module).unwrap())
            .unwrap_err()
            .to_string()
            .contains("deployment/deployment.json: is missing"));
    }

    #[test]
    fn what_a_bundle_cannot_deploy_is_named() {
        let with = |path: &str, text: &str| {
            let mut b = full();
            b.files.insert(path.into(), text.as_bytes().to_vec());
            b
        };
        let refused = |b: Bundle| -> String {
            let read = match read_service_bundle(&b) {
                Ok(read) => read,
                Err(e) => return e.to_string(),
            };
            let source = match source_of(None, read) {
                Ok(source) => source,
                Err(e) => return e.to_string(),
            };
            let (_, origin) = match origin(&source) {
                Ok(found) => found,
                Err(e) => return e.to_string(),
            };
            let Origin::Bundled(dir, _) = origin else {
                return format!("{origin:?}");
            };
            let files = borrowed(&source.modules[&dir]);
            let module = read_module(&dir, &files).unwrap();
            match artifact_roles(&module, &files, "svc") {
                Ok(_) => "deployable".into(),
                Err(e) => e.to_string(),
            }
        };
        let mut binary = full();
        binary.files.insert("hello/web/x.bin".into(), vec![0xff, 0xfe]);
        let table = [
            (with("stray.txt", "x"), "stray.txt: is outside every module"),
            (with("hello/web/x.cue", "x"), "hello/web/x.cue: is CUE"),
            (binary, "hello/web/x.bin: is not text"),
            (with("deployment/deployment.yaml", "a: 1"), "more than one"),
            (with("deployment/deployment.json", "[1]"), "must hold an object"),
            (
                with("deployment/deployment.json", r#"{"artifact": {}, "x": 1}"#),
                "not a deployment",
            ),
            (
                with(
                    "deployment/deployment.json",
                    r#"{"artifact": {"ref": {"domain": "other", "module": "m"}}}"#,
                ),
                "Marketplace",
            ),
            (
                with("hello/web/artifact.json", r#"{"resources": {}}"#),
                "says nothing to run",
            ),
            (
                with(
                    "hello/web/artifact.json",
                    r#"{"exec": {"argv": ["x"], "files": {"a": "b"}}}"#,
                ),
                "exec.files",
            ),
            (
                with("hello/svc/artifact.json", r#"{"roles": ["frontend"]}"#),
                "says nothing its roles run",
            ),
            (
                with("hello/web/artifact.json", &format!(r#"{{"exec": {{"argv": ["x"]}}, "code": {IMAGE_CODE}}}"#)),
                "hello/web/artifact.json: code: give either exec (a program) or code",
            ),
            (
                with("hello/svc/artifact.json", &format!(r#"{{"roles": ["a"], "code": {IMAGE_CODE}}}"#)),
                "hello/svc/artifact.json: code: a service runs",
            ),
            (
                with("hello/web/artifact.json", &format!(r#"{{"code": {IMAGE_CODE}}}"#)),
                "hello/web/lib/util.sh: is a file of a component that runs container images",
            ),
            (
                with(
                    "hello/worker/artifact.yaml",
                    "code: {main: {name: main, image: {hub: {name: r.example, secret: ''}, tag: w:1}, user: {userid: 0}}}",
                ),
                "hello/worker/artifact.yaml: code.main.user: Drover runs a container as its image's user",
            ),
            (
                with(
                    "hello/svc/artifact.json",
                    r#"{"roles": {"a": {"exec": {"argv": [], "pod": {"containers": []}}}}}"#,
                ),
                "roles.a.exec.pod",
            ),
            (
                with(
                    "hello/svc/artifact.json",
                    r#"{"roles": {"a": {"component": "svc"}}}"#,
                ),
                "has no component \"svc\"",
            ),
            (
                with(
                    "hello/svc/artifact.json",
                    r#"{"roles": {"a": {"component": "web", "exec": {"argv": ["x"]}}}}"#,
                ),
                "roles.a: give either component or exec",
            ),
        ];
        for (b, says) in table {
            let got = refused(b);
            assert!(got.contains(says), "{says}: {got}");
        }
    }

    /// A `code` section: one container from a registry on loopback, its credentials in secret
    /// `hub`.
    const IMAGE_CODE: &str = r#"{"main": {"name": "main", "image": {"hub": {"name": "127.0.0.1:5000", "secret": "hub"}, "tag": "acme/web:v1"}, "cmd": ["httpd", "-f"], "mapping": {"env": {"PORT": {"value": "8080"}}}}}"#;

    #[test]
    fn a_component_naming_images_is_one_role_running_a_pod() {
        let mut b = full();
        b.files.retain(|path, _| !path.starts_with("hello/web/"));
        let web = format!(
            r#"{{"code": {IMAGE_CODE}, "resources": {{"cpu_millis": 100, "memory_mib": 32}}, "env": {{"A": "1"}}}}"#
        );
        b.files.insert("hello/web/artifact.json".into(), web.into_bytes());
        let source = source_of(None, read_service_bundle(&b).unwrap()).unwrap();
        let files = borrowed(&source.modules["hello"]);
        let module = read_module("hello", &files).unwrap();
        let built = artifact_roles(&module, &files, "svc").unwrap();
        let front = &built.artifact.roles["frontend"];
        assert!(front.exec.argv.is_empty() && front.exec.files.is_empty());
        let pod = front.exec.pod.as_ref().expect("a pod");
        assert_eq!(pod.containers[0].image, "127.0.0.1:5000/acme/web:v1");
        assert_eq!(pod.containers[0].args, ["httpd", "-f"]);
        assert_eq!(pod.containers[0].env["PORT"], "8080");
        assert!(pod.pull_auth.is_empty(), "credentials are resolved in the tenant");
        assert_eq!((front.resources.cpu_millis, front.env["A"].as_str()), (100, "1"));
        assert_eq!(
            front.env["ROLE"], "front",
            "the role's env is added as for a program"
        );
        assert_eq!(
            built.pulls["frontend"][0].secret, "hub",
            "the secret is named for the role that runs the component"
        );
        assert!(!built.pulls.contains_key("backend") && built.artifact.roles["backend"].exec.pod.is_none());
        let (manifest, _) = origin(&source).unwrap();
        let deployment = manifest.build(built.artifact, Some(source.clone())).unwrap();
        assert!(deployment.validate().is_ok(), "{:?}", deployment.validate());
    }

    #[test]
    fn a_reference_chooses_its_artifact() {
        let files = full();
        let module_files = files.under("hello");
        let module = read_module("hello", &module_files).unwrap();
        let reference = |value: Value| ArtifactRef::parse(&value).unwrap();
        let plain = reference(json!({"domain": "acme.mods", "module": "hello"}));
        assert_eq!(
            chosen_artifact(&module, &plain, None).unwrap().0,
            "svc",
            "the only service"
        );
        assert_eq!(
            chosen_artifact(&module, &plain, Some("web")).unwrap().0,
            "web",
            "the package's main"
        );
        let named = reference(
            json!({"domain": "acme.mods", "module": "hello", "name": "worker", "kind": "component"}),
        );
        assert_eq!(chosen_artifact(&module, &named, None).unwrap().0, "worker");
        let wrong =
            reference(json!({"domain": "acme.mods", "module": "hello", "name": "worker", "kind": "service"}));
        assert!(chosen_artifact(&module, &wrong, None)
            .unwrap_err()
            .to_string()
            .contains("not a \"service\""));
        let none = reference(json!({"domain": "acme.mods", "module": "hello", "name": "nope"}));
        assert!(chosen_artifact(&module, &none, None).is_err());
        let component = artifact_roles(&module, &module_files, "web").unwrap().artifact;
        assert_eq!(
            component.roles.keys().collect::<Vec<_>>(),
            ["web"],
            "a component is one role of its name"
        );
    }
}
