//! The `…/simple` form of a deployment (Axebow's S12 and S16): `{deployment: {name, up, meta,
//! config: {parameter, resource, resilience, scale}, artifact}, comment, meta}`, turned into
//! a [`Deployment`]. The artifact is either a module of the tenant's marketplace (`artifact.ref`,
//! resolved by the API through the tenant's registry) or described inline: `artifact.roles`
//! (what each role runs, its requests and environment) and `artifact.channels`; never both. `config.scale` sets each role's
//! instances (one when left out), `config.parameter` the parameters, `config.resource` the
//! tenant resources used (`{alias: {kind: name}}`); `resilience` is accepted and has no effect
//! (a role's instances restart on failure anyway).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

use super::channels::Channels;
use super::deployment::{ResourceUse, RoleSpec};
use super::source::{ArtifactRef, DeploymentSource};
use super::Deployment;
use crate::cluster::agent_api::{ExecSpec, Resources};
use crate::platform::error::PlatformError;

/// `POST …/service/{s}/simple` and `POST …/revision/{r}/simple`.
#[derive(Debug, Clone, Deserialize, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SimpleBody {
    /// The deployment.
    pub deployment: SimpleDeployment,
    /// The revision's comment.
    #[serde(default)]
    pub comment: String,
    /// Free-form metadata (kept nowhere).
    #[serde(default)]
    #[schema(value_type = Object)]
    pub meta: Value,
}

/// The deployment part of the simple form.
#[derive(Debug, Clone, Deserialize, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SimpleDeployment {
    /// A name for the deployment (informational).
    #[serde(default)]
    pub name: Option<String>,
    /// Must be `null` (Axebow reserves it).
    #[serde(default)]
    #[schema(value_type = Object)]
    pub up: Value,
    /// Free-form metadata (kept nowhere).
    #[serde(default)]
    #[schema(value_type = Object)]
    pub meta: Value,
    /// Configuration.
    #[serde(default)]
    pub config: SimpleConfig,
    /// What runs.
    pub artifact: SimpleArtifact,
}

/// `config` of the simple form.
#[derive(Debug, Clone, Default, Deserialize, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SimpleConfig {
    /// Configuration parameters (a JSON object).
    #[serde(default)]
    #[schema(value_type = Object)]
    pub parameter: Value,
    /// Tenant resources used: `{alias: {kind: name}}`.
    #[serde(default)]
    pub resource: BTreeMap<String, BTreeMap<String, String>>,
    /// Accepted, no effect.
    #[serde(default)]
    pub resilience: u32,
    /// Instances by role (one for a role left out).
    #[serde(default)]
    pub scale: BTreeMap<String, u32>,
}

/// `artifact` of the simple form, described inline.
#[derive(Debug, Clone, Default, Deserialize, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SimpleArtifact {
    /// A marketplace module (Kumori's `#ArtifactRef`: `{domain, module, name?, kind?,
    /// version?}`), instead of `roles`.
    #[serde(default, rename = "ref")]
    #[schema(value_type = Object)]
    pub reference: Option<Value>,
    /// What each role runs.
    #[serde(default)]
    pub roles: BTreeMap<String, SimpleRole>,
    /// The channels it serves and calls through.
    #[serde(default)]
    pub channels: Channels,
}

/// A role of an inline artifact.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SimpleRole {
    /// What each instance runs.
    pub exec: ExecSpec,
    /// What each instance needs.
    #[serde(default)]
    pub resources: Resources,
    /// Environment variables.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
}

impl SimpleDeployment {
    /// The marketplace reference its artifact names, if it names one instead of describing its
    /// roles inline; `up` must be `null`. The error names the field to fix.
    pub fn reference(&self) -> Result<Option<ArtifactRef>, PlatformError> {
        if !self.up.is_null() {
            return Err(PlatformError::invalid("deployment.up", "must be null"));
        }
        match (&self.artifact.reference, self.artifact.roles.is_empty()) {
            // Never one ignored for the other: which one runs would be a guess.
            (Some(_), false) => Err(PlatformError::invalid(
                "deployment.artifact.ref",
                "give either a reference (ref) or the roles inline (roles), not both",
            )),
            (Some(reference), true) => ArtifactRef::parse(reference).map(Some),
            (None, true) => Err(PlatformError::invalid(
                "deployment.artifact",
                "name a marketplace module in deployment.artifact.ref or describe at least one role in deployment.artifact.roles",
            )),
            (None, false) => Ok(None),
        }
    }

    /// The deployment it stands for, its roles and channels as `artifact` says (inline, or
    /// resolved from a module), built from `source` when it came from one.
    pub fn build(
        self,
        artifact: SimpleArtifact,
        source: Option<DeploymentSource>,
    ) -> Result<Deployment, PlatformError> {
        let config = self.config;
        if artifact.roles.is_empty() {
            return Err(PlatformError::invalid(
                "deployment.artifact",
                "the artifact has no role to run",
            ));
        }
        if let Some(unknown) = config
            .scale
            .keys()
            .find(|role| !artifact.roles.contains_key(*role))
        {
            return Err(PlatformError::invalid(
                format!("deployment.config.scale.{unknown}"),
                "no such role in the artifact",
            ));
        }
        let mut resources = Vec::new();
        for (alias, target) in &config.resource {
            let mut entries = target.iter();
            let (Some((kind, name)), None) = (entries.next(), entries.next()) else {
                return Err(PlatformError::invalid(
                    format!("deployment.config.resource.{alias}"),
                    "must be one {\"kind\": \"name\"} pair, such as {\"secret\": \"db-password\"}",
                ));
            };
            resources.push(ResourceUse {
                kind: kind.clone(),
                name: name.clone(),
            });
        }
        let parameters = match config.parameter {
            Value::Null => Value::Object(serde_json::Map::new()),
            other => other,
        };
        let roles = artifact
            .roles
            .into_iter()
            .map(|(name, role)| {
                let instances = config.scale.get(&name).copied().unwrap_or(1);
                let spec = RoleSpec {
                    instances,
                    resources: role.resources,
                    exec: role.exec,
                    env: role.env,
                };
                (name, spec)
            })
            .collect();
        Ok(Deployment {
            roles,
            parameters,
            resources,
            channels: artifact.channels,
            constraints: Default::default(),
            source,
        })
    }
}

impl SimpleBody {
    /// The deployment and comment of a body whose artifact is described inline; one naming a
    /// marketplace module is resolved by the API first ([`SimpleDeployment::reference`],
    /// [`SimpleDeployment::build`]). The error names the field to fix.
    pub fn into_deployment(self) -> Result<(Deployment, String), PlatformError> {
        if self.deployment.reference()?.is_some() {
            return Err(PlatformError::invalid(
                "deployment.artifact.ref",
                "a reference is resolved through the tenant's marketplace",
            ));
        }
        let artifact = self.deployment.artifact.clone();
        let deployment = self.deployment.build(artifact, None)?;
        Ok((deployment, self.comment))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn body(value: Value) -> Result<(Deployment, String), PlatformError> {
        serde_json::from_value::<SimpleBody>(value)
            .map_err(|e| PlatformError::invalid("body", e.to_string()))?
            .into_deployment()
    }

    #[test]
    fn the_simple_form_becomes_a_deployment() {
        let (deployment, comment) = body(json!({
            "deployment": {"name": "web", "up": null, "meta": {},
                "config": {"parameter": {"greeting": "hi"}, "resource": {"db": {"secret": "pw"}},
                           "resilience": 1, "scale": {"frontend": 3}},
                "artifact": {"roles": {"frontend": {"exec": {"argv": ["serve"]}},
                                       "worker": {"exec": {"argv": ["work"]}, "env": {"A": "1"}}},
                             "channels": {"server": {"http": {}}}}},
            "comment": "simple"
        }))
        .unwrap();
        assert_eq!(comment, "simple");
        assert_eq!(deployment.roles["frontend"].instances, 3);
        assert_eq!(deployment.roles["worker"].instances, 1, "one when left out");
        assert_eq!(deployment.parameters, json!({"greeting": "hi"}));
        assert_eq!(
            deployment.resources,
            [ResourceUse {
                kind: "secret".into(),
                name: "pw".into()
            }]
        );
        assert!(deployment.channels.server.contains_key("http"));
        assert!(deployment.validate().is_ok());
    }

    #[test]
    fn what_cannot_be_turned_into_a_deployment_is_named() {
        let table = [
            (
                json!({"deployment": {"artifact": {"ref": {"name": "x"}}}}),
                "deployment.artifact.ref",
            ),
            (
                json!({"deployment": {"artifact": {"ref": {"domain": "d", "module": "m"}, "roles": {"a": {"exec": {"argv": ["x"]}}}}}}),
                "not both",
            ),
            (
                json!({"deployment": {"artifact": {"ref": {"domain": "d", "module": "m"}}}}),
                "resolved through the tenant's marketplace",
            ),
            (json!({"deployment": {"artifact": {}}}), "at least one role"),
            (
                json!({"deployment": {"up": 1, "artifact": {"roles": {"a": {"exec": {"argv": ["x"]}}}}}}),
                "deployment.up",
            ),
            (
                json!({"deployment": {"config": {"scale": {"b": 2}}, "artifact": {"roles": {"a": {"exec": {"argv": ["x"]}}}}}}),
                "config.scale.b",
            ),
            (
                json!({"deployment": {"config": {"resource": {"db": {"secret": "a", "port": "b"}}},
                    "artifact": {"roles": {"a": {"exec": {"argv": ["x"]}}}}}}),
                "config.resource.db",
            ),
            (
                json!({"deployment": {"artifact": {"roles": {}}}, "extra": 1}),
                "extra",
            ),
        ];
        for (value, needle) in table {
            let error = body(value.clone()).unwrap_err().to_string();
            assert!(error.contains(needle), "{value}: {error}");
        }
    }
}
