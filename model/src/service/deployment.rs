//! What a service deploys: roles, each with an instance count, resource requests, what its
//! instances run and their environment; configuration parameters the instances read; and the
//! tenant resources it uses. Its [`Usage`] is what it costs against the environment's marks.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

use super::channels::Channels;
use super::source::DeploymentSource;
use crate::cluster::agent_api::{ExecSpec, Resources, MAX_SET_INSTANCES};
use crate::cluster::validate::{check_program, check_set_bytes, instance_bytes, SpecError, MAX_SET_BYTES};
use crate::platform::error::PlatformError;
use crate::validation::is_label;

/// Most instances of one role.
pub const MAX_ROLE_INSTANCES: u32 = 1_000;

/// Most roles of one service.
const MAX_ROLES: usize = 64;

/// Most bytes of a deployment's parameters.
const MAX_PARAMETER_BYTES: usize = 64 * 1024;

/// One role of a deployment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RoleSpec {
    /// How many instances.
    pub instances: u32,
    /// What each instance needs.
    #[serde(default)]
    pub resources: Resources,
    /// What each instance runs (the agent's executor spec).
    pub exec: ExecSpec,
    /// Environment variables of each instance.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
}

/// A tenant resource a deployment uses.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ResourceUse {
    /// Resource kind (`secret`, `port`, `domain`, `volume`, `certificate`, `ca`).
    pub kind: String,
    /// Resource name in the tenant.
    pub name: String,
}

/// What a service deploys.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Deployment {
    /// Roles by name.
    pub roles: BTreeMap<String, RoleSpec>,
    /// Configuration parameters (any JSON object).
    #[serde(default = "empty_object")]
    #[schema(value_type = Object)]
    pub parameters: Value,
    /// Tenant resources it uses.
    #[serde(default)]
    pub resources: Vec<ResourceUse>,
    /// The channels its service serves and calls through (what links join).
    #[serde(default, skip_serializing_if = "Channels::is_empty")]
    pub channels: Channels,
    /// Which clusters it may run on (Krake's constraint languages).
    #[serde(default, skip_serializing_if = "Constraints::is_empty")]
    pub constraints: Constraints,
    /// The bundle or marketplace reference it was built from, if any (what a partial update
    /// bundle patches).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<DeploymentSource>,
}

/// Most constraints of each kind.
const MAX_CONSTRAINTS: usize = 32;

/// Where a service may run: label constraints on the cluster's labels (`location in (DE, SK)`)
/// and metric constraints on its metrics (`load < 0.8`), all of which must hold; and whether it
/// may move when its cluster fails (`migration`, Krake's name; on by default).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Constraints {
    /// Label constraints.
    #[serde(default)]
    pub labels: Vec<String>,
    /// Metric constraints.
    #[serde(default)]
    pub metrics: Vec<String>,
    /// Custom resources (`plural.group`) the cluster must advertise (Krake's constraint; a
    /// cluster advertises them through Krake's `spec.custom_resources`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub custom_resources: Vec<String>,
    /// May move to another cluster when its own goes `OFFLINE`, `UNHEALTHY` or `NOTREADY`.
    #[serde(default = "yes", skip_serializing_if = "is_true")]
    pub migration: bool,
}

fn yes() -> bool {
    true
}

fn is_true(value: &bool) -> bool {
    *value
}

impl Default for Constraints {
    fn default() -> Self {
        Self {
            labels: Vec::new(),
            metrics: Vec::new(),
            custom_resources: Vec::new(),
            migration: true,
        }
    }
}

impl Constraints {
    /// Whether there are none (and migration is allowed).
    pub fn is_empty(&self) -> bool {
        self.labels.is_empty()
            && self.metrics.is_empty()
            && self.custom_resources.is_empty()
            && self.migration
    }

    /// Parsed; the error names the expression.
    pub fn parsed(
        &self,
    ) -> Result<
        (
            Vec<crate::scheduling::LabelConstraint>,
            Vec<crate::scheduling::MetricConstraint>,
        ),
        PlatformError,
    > {
        for (field, list) in [
            ("constraints.labels", &self.labels),
            ("constraints.metrics", &self.metrics),
            ("constraints.custom_resources", &self.custom_resources),
        ] {
            if list.len() > MAX_CONSTRAINTS {
                return Err(PlatformError::invalid(
                    field,
                    format!("at most {MAX_CONSTRAINTS}"),
                ));
            }
        }
        let labels = self
            .labels
            .iter()
            .enumerate()
            .map(|(i, text)| {
                crate::scheduling::LabelConstraint::parse(text)
                    .map_err(|e| PlatformError::invalid(format!("constraints.labels[{i}]"), e.to_string()))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let metrics = self
            .metrics
            .iter()
            .enumerate()
            .map(|(i, text)| {
                crate::scheduling::MetricConstraint::parse(text)
                    .map_err(|e| PlatformError::invalid(format!("constraints.metrics[{i}]"), e.to_string()))
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok((labels, metrics))
    }
}

/// Instances of a role of `count` a desired set may hold during a rollout: the count and the
/// rollout's surge ([`super::rollout::surge`]).
fn rolling_count(count: u32) -> u64 {
    let count = count as usize;
    let surge = if count == 0 {
        0
    } else {
        super::rollout::surge(count)
    };
    (count + surge) as u64
}

fn empty_object() -> Value {
    Value::Object(serde_json::Map::new())
}

/// What a deployment costs: every instance's requests, summed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct Usage {
    /// Thousandths of a CPU (the `vcpu` mark, unit `m`).
    pub vcpu_millis: u64,
    /// Memory in MiB (the `memory` mark, unit `MB`).
    pub memory_mib: u64,
}

impl Deployment {
    /// What a rollout of it runs at most beside the old instances: each role's surge
    /// ([`super::rollout::surge`]) of instances with the role's requests. The scheduler prefers
    /// clusters with this much room beside the deployment's own usage.
    pub fn surge_usage(&self) -> Usage {
        self.roles.values().fold(Usage::default(), |sum, role| {
            let extra = rolling_count(role.instances).saturating_sub(u64::from(role.instances));
            let each = role.resources.times(u32::try_from(extra).unwrap_or(u32::MAX));
            Usage {
                vcpu_millis: sum.vcpu_millis.saturating_add(each.cpu_millis),
                memory_mib: sum.memory_mib.saturating_add(each.memory_mib),
            }
        })
    }

    /// Its cost.
    pub fn usage(&self) -> Usage {
        self.roles.values().fold(Usage::default(), |sum, role| {
            let each = role.resources.times(role.instances);
            Usage {
                vcpu_millis: sum.vcpu_millis.saturating_add(each.cpu_millis),
                memory_mib: sum.memory_mib.saturating_add(each.memory_mib),
            }
        })
    }

    /// Checks names, counts, programs and the environment; the error names the field.
    pub fn validate(&self) -> Result<(), PlatformError> {
        if self.roles.is_empty() {
            return Err(PlatformError::invalid(
                "roles",
                "a deployment needs at least one role",
            ));
        }
        if self.roles.len() > MAX_ROLES {
            return Err(PlatformError::invalid(
                "roles",
                format!("at most {MAX_ROLES} roles"),
            ));
        }
        for (name, role) in &self.roles {
            let field = |rest: &str| format!("roles.{name}{rest}");
            if !is_label(name) || name.len() > 40 {
                return Err(PlatformError::invalid(
                    field(""),
                    "role names are 1-40 lower-case letters, digits or '-', starting and ending with a letter or digit",
                ));
            }
            if role.instances > MAX_ROLE_INSTANCES {
                return Err(PlatformError::invalid(
                    field(".instances"),
                    format!("at most {MAX_ROLE_INSTANCES}"),
                ));
            }
            // The rules the agent checks again: what it would refuse is refused here.
            check_program(&role.exec, &role.env).map_err(|e| e.under(&format!("roles.{name}.")))?;
        }
        // A rollout keeps old instances beside the new ones: the desired set holds up to a
        // surge more of each role than the revision asks for, and the agent refuses a set
        // beyond its bounds.
        let instances: u64 = self.roles.values().map(|role| u64::from(role.instances)).sum();
        let rolling: u64 = self
            .roles
            .values()
            .map(|role| rolling_count(role.instances))
            .sum();
        if rolling > MAX_SET_INSTANCES as u64 {
            return Err(PlatformError::invalid(
                "roles",
                format!(
                    "{instances} instances in all, {rolling} while a rollout starts new ones beside the old; at most {MAX_SET_INSTANCES} (one agent's desired set)"
                ),
            ));
        }
        let bytes = self.roles.iter().try_fold(0u64, |sum, (name, role)| {
            let each = instance_bytes(&role.exec, &role.env, role.resources);
            let copies = rolling_count(role.instances);
            check_set_bytes(&format!("roles.{name}.instances"), copies, each)?;
            Ok::<u64, SpecError>(
                sum.saturating_add(copies.saturating_mul(u64::try_from(each).unwrap_or(u64::MAX))),
            )
        })?;
        if bytes > MAX_SET_BYTES as u64 {
            return Err(PlatformError::invalid(
                "roles",
                format!(
                    "the instances' argv and env make a desired set of {bytes} bytes (counting a rollout's surge); at most {MAX_SET_BYTES}"
                ),
            ));
        }
        let parameters = serde_json::to_vec(&self.parameters).map_or(usize::MAX, |bytes| bytes.len());
        if parameters > MAX_PARAMETER_BYTES {
            return Err(PlatformError::invalid(
                "parameters",
                format!("{parameters} bytes; at most {MAX_PARAMETER_BYTES}"),
            ));
        }
        if !self.parameters.is_object() {
            return Err(PlatformError::invalid("parameters", "must be a JSON object"));
        }
        self.channels.validate()?;
        if let Some(source) = &self.source {
            source.validate()?;
        }
        self.constraints.parsed().map(|_| ())
    }
}
