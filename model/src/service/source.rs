//! Where a deployment came from when it was built from Kumori modules rather than written as
//! JSON: the deployment manifest (the `deployment` object of Axebow's simple form, as the
//! bundle's `deployment` module or the `…/simple` body gave it, with a marketplace reference
//! pinned to the version it resolved to) and the modules the bundle carried, file by file. A
//! partial update bundle is applied to this (the manifest merge-patched, the modules it carries
//! replacing those of the same directory), and a rollback copies it with the rest of the
//! deployment, so the roles run exactly what they ran.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

use crate::platform::error::PlatformError;

/// Most bytes of a source's module files (paths and contents).
pub const MAX_SOURCE_BYTES: usize = 1024 * 1024;

/// Most bytes of a source's manifest (as JSON).
pub const MAX_MANIFEST_BYTES: usize = 64 * 1024;

/// The modules and manifest a deployment was built from.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct DeploymentSource {
    /// The deployment manifest (`{name, meta, config, artifact}`).
    #[schema(value_type = Object)]
    pub manifest: Value,
    /// The bundle's modules other than `deployment`: by top-level directory, their text files by
    /// path relative to it.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub modules: BTreeMap<String, BTreeMap<String, String>>,
}

/// A marketplace reference (Kumori's `#ArtifactRef`): a module by domain and name, the artifact
/// in it, and the version (the newest the registry tags `latest` when left out).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ArtifactRef {
    /// The module's domain (its npm scope).
    pub domain: String,
    /// The module's name.
    pub module: String,
    /// The artifact in the module (its main one when left out).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// `component` or `service`; checked when given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// `[major, minor, patch]` (or `"major.minor.patch"`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Object)]
    pub version: Option<Value>,
}

impl ArtifactRef {
    /// Reads `value` (`deployment.artifact.ref`); the error names the field.
    pub fn parse(value: &Value) -> Result<Self, PlatformError> {
        let reference: Self = serde_json::from_value(value.clone()).map_err(|e| {
            PlatformError::invalid(
                "deployment.artifact.ref",
                format!("{e}: a reference is {{\"domain\", \"module\", \"name\"?, \"kind\"?, \"version\"?: [major, minor, patch]}}"),
            )
        })?;
        reference.version()?;
        if reference.domain.is_empty() || reference.module.is_empty() {
            return Err(PlatformError::invalid(
                "deployment.artifact.ref",
                "domain and module must not be empty",
            ));
        }
        Ok(reference)
    }

    /// The version asked for as `major.minor.patch`, if any.
    pub fn version(&self) -> Result<Option<String>, PlatformError> {
        let bad = || {
            PlatformError::invalid(
                "deployment.artifact.ref.version",
                "must be [major, minor, patch] or \"major.minor.patch\"",
            )
        };
        match &self.version {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Array(parts)) => {
                let numbers: Vec<u64> = parts
                    .iter()
                    .map(Value::as_u64)
                    .collect::<Option<_>>()
                    .ok_or_else(bad)?;
                match numbers.as_slice() {
                    [major, minor, patch] => Ok(Some(format!("{major}.{minor}.{patch}"))),
                    _ => Err(bad()),
                }
            }
            Some(Value::String(text)) => plain_version(text)
                .map(|[major, minor, patch]| Some(format!("{major}.{minor}.{patch}")))
                .ok_or_else(bad),
            Some(_) => Err(bad()),
        }
    }

    /// `version` (`major.minor.patch`) as Kumori writes it: `[major, minor, patch]`; `None`
    /// for any other form (a pre-release, a number past `u64`), which no reference can name.
    pub fn pinned(version: &str) -> Option<Value> {
        plain_version(version).map(|parts| Value::from(parts.to_vec()))
    }
}

/// `major.minor.patch` as three numbers, if `text` is exactly that.
pub fn plain_version(text: &str) -> Option<[u64; 3]> {
    let mut parts = text.split('.').map(|part| {
        (!part.is_empty() && part.bytes().all(|b| b.is_ascii_digit()))
            .then(|| part.parse::<u64>().ok())
            .flatten()
    });
    match (parts.next(), parts.next(), parts.next(), parts.next()) {
        (Some(Some(major)), Some(Some(minor)), Some(Some(patch)), None) => Some([major, minor, patch]),
        _ => None,
    }
}

impl DeploymentSource {
    /// Checks its size; the error names the field.
    pub fn validate(&self) -> Result<(), PlatformError> {
        let manifest = serde_json::to_vec(&self.manifest).map_or(usize::MAX, |json| json.len());
        if manifest > MAX_MANIFEST_BYTES {
            return Err(PlatformError::invalid(
                "source.manifest",
                format!("{manifest} bytes; at most {MAX_MANIFEST_BYTES}"),
            ));
        }
        let bytes = self
            .modules
            .iter()
            .flat_map(|(dir, files)| {
                files
                    .iter()
                    .map(move |(path, text)| dir.len() + path.len() + text.len())
            })
            .fold(0usize, usize::saturating_add);
        if bytes > MAX_SOURCE_BYTES {
            return Err(PlatformError::invalid(
                "source.modules",
                format!("{bytes} bytes of module files; at most {MAX_SOURCE_BYTES}"),
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn references_read_their_version_either_way() {
        let read = |value: Value| ArtifactRef::parse(&value).and_then(|r| r.version());
        assert_eq!(
            read(json!({"domain": "acme", "module": "m", "version": [1, 2, 3]})).unwrap(),
            Some("1.2.3".into())
        );
        assert_eq!(
            read(json!({"domain": "acme", "module": "m", "version": "1.2.3"})).unwrap(),
            Some("1.2.3".into())
        );
        assert_eq!(read(json!({"domain": "acme", "module": "m"})).unwrap(), None);
        for bad in [
            json!({"domain": "acme", "module": "m", "version": [1, 2]}),
            json!({"domain": "acme", "module": "m", "version": "1.2"}),
            json!({"domain": "acme", "module": "m", "version": "1.2.x"}),
            json!({"domain": "acme", "module": "m", "version": "99999999999999999999.0.0"}),
            json!({"domain": "acme", "module": "m", "version": 3}),
            json!({"domain": "", "module": "m"}),
            json!({"domain": "acme"}),
            json!({"domain": "acme", "module": "m", "other": 1}),
        ] {
            assert!(read(bad.clone()).is_err(), "{bad}");
        }
        assert_eq!(ArtifactRef::pinned("1.2.3"), Some(json!([1, 2, 3])));
        for unnamable in ["1.0.0-beta", "99999999999999999999.0.0", "1.2", "1..2", "v1.2.3"] {
            assert_eq!(ArtifactRef::pinned(unnamable), None, "{unnamable}");
        }
    }

    #[test]
    fn a_source_is_bounded() {
        let mut source = DeploymentSource {
            manifest: json!({"artifact": {}}),
            modules: BTreeMap::new(),
        };
        assert!(source.validate().is_ok());
        source.modules.insert(
            "m".into(),
            BTreeMap::from([("f".into(), "x".repeat(MAX_SOURCE_BYTES))]),
        );
        assert!(source
            .validate()
            .unwrap_err()
            .to_string()
            .contains("source.modules"));
        source.modules.clear();
        source.manifest = json!({"meta": "x".repeat(MAX_MANIFEST_BYTES)});
        assert!(source
            .validate()
            .unwrap_err()
            .to_string()
            .contains("source.manifest"));
    }
}
