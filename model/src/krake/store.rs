//! What Drover keeps of Krake's objects that it had no object for: roles and role bindings,
//! each with its Krake metadata. Metrics and providers are the tenants' own (see the module
//! above); their metadata is in [`KrakeMetas`], held by each tenant.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::meta::KrakeMeta;
use super::rbac::{Access, KrakeRole, KrakeRoleBinding};

/// Most roles, and most role bindings.
pub const MAX_RBAC_OBJECTS: usize = 1000;

/// An object with its metadata.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stored<T> {
    /// Its Krake metadata.
    pub meta: KrakeMeta,
    /// The object.
    pub body: T,
}

/// Roles and role bindings by name.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct KrakeStore {
    /// Roles.
    #[serde(default)]
    pub roles: BTreeMap<String, Stored<KrakeRole>>,
    /// Role bindings.
    #[serde(default)]
    pub role_bindings: BTreeMap<String, Stored<KrakeRoleBinding>>,
}

/// The Krake metadata of a tenant's metrics and providers, by name.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct KrakeMetas {
    /// Of its metrics.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub metrics: BTreeMap<String, KrakeMeta>,
    /// Of its metrics providers.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub providers: BTreeMap<String, KrakeMeta>,
    /// Of its clusters made or changed through Krake: the metadata and the spec's extras.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub clusters: BTreeMap<String, super::cluster::KrakeClusterExtras>,
    /// Applications (each a service of the tenant), by name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub applications: BTreeMap<String, super::application::KrakeApplicationExtras>,
    /// Infrastructure providers (the operator tenant's are the global ones), by name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub infrastructure_providers: BTreeMap<String, Stored<super::infrastructure::ImProvider>>,
    /// Clouds (the operator tenant's are the global ones), by name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub clouds: BTreeMap<String, Stored<super::infrastructure::OpenstackCloud>>,
}

impl KrakeMetas {
    /// Whether there is nothing in it.
    pub fn is_empty(&self) -> bool {
        self.metrics.is_empty()
            && self.providers.is_empty()
            && self.clusters.is_empty()
            && self.applications.is_empty()
            && self.infrastructure_providers.is_empty()
            && self.clouds.is_empty()
    }
}

impl KrakeStore {
    /// The names of the roles bound to `user`, sorted, each once (what `GET /me` shows).
    pub fn roles_of(&self, user: &str) -> Vec<String> {
        let mut roles: Vec<String> = self
            .role_bindings
            .values()
            .filter(|binding| binding.body.users.iter().any(|u| u == user))
            .flat_map(|binding| binding.body.roles.iter().cloned())
            .collect();
        roles.sort();
        roles.dedup();
        roles
    }

    /// Whether a role bound to `user` allows `access`.
    pub fn allows(&self, user: &str, access: &Access<'_>) -> bool {
        self.roles_of(user)
            .iter()
            .filter_map(|name| self.roles.get(name))
            .any(|role| role.body.allows(access))
    }
}
