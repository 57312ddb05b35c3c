//! The kinds Drover serves in Krake's dialect, with the API group, the plural of its routes and
//! its scope, and the key of one object.

use std::fmt;

use serde::{Deserialize, Serialize};

/// A Krake kind Drover serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum KrakeKind {
    /// `core` `Role` (global).
    Role,
    /// `core` `RoleBinding` (global).
    RoleBinding,
    /// `core` `GlobalMetric`: a metric of the operator tenant.
    GlobalMetric,
    /// `core` `Metric`: a metric of the tenant its namespace names.
    Metric,
    /// `core` `GlobalMetricsProvider`: a provider of the operator tenant.
    GlobalMetricsProvider,
    /// `core` `MetricsProvider`: a provider of the tenant its namespace names.
    MetricsProvider,
    /// `kubernetes` `Cluster`: the tenant's cluster, run by a `drover agent`.
    Cluster,
    /// `kubernetes/applications` (namespaced): a Drover service.
    Application,
    /// `infrastructure/globalinfrastructureproviders`: the operator tenant's.
    GlobalInfrastructureProvider,
    /// `infrastructure/infrastructureproviders` (namespaced).
    InfrastructureProvider,
    /// `infrastructure/globalclouds`: the operator tenant's.
    GlobalCloud,
    /// `infrastructure/clouds` (namespaced).
    Cloud,
}

impl KrakeKind {
    /// Every kind, in route order.
    pub const ALL: [KrakeKind; 12] = [
        KrakeKind::Role,
        KrakeKind::RoleBinding,
        KrakeKind::GlobalMetric,
        KrakeKind::Metric,
        KrakeKind::GlobalMetricsProvider,
        KrakeKind::MetricsProvider,
        KrakeKind::Cluster,
        KrakeKind::Application,
        KrakeKind::GlobalInfrastructureProvider,
        KrakeKind::InfrastructureProvider,
        KrakeKind::GlobalCloud,
        KrakeKind::Cloud,
    ];

    /// The API group (`api` in the envelope and in RBAC rules).
    pub fn api(self) -> &'static str {
        match self {
            KrakeKind::Cluster | KrakeKind::Application => "kubernetes",
            KrakeKind::GlobalInfrastructureProvider
            | KrakeKind::InfrastructureProvider
            | KrakeKind::GlobalCloud
            | KrakeKind::Cloud => "infrastructure",
            _ => "core",
        }
    }

    /// The kind's name.
    pub fn name(self) -> &'static str {
        match self {
            KrakeKind::Role => "Role",
            KrakeKind::RoleBinding => "RoleBinding",
            KrakeKind::GlobalMetric => "GlobalMetric",
            KrakeKind::Metric => "Metric",
            KrakeKind::GlobalMetricsProvider => "GlobalMetricsProvider",
            KrakeKind::MetricsProvider => "MetricsProvider",
            KrakeKind::Cluster => "Cluster",
            KrakeKind::Application => "Application",
            KrakeKind::GlobalInfrastructureProvider => "GlobalInfrastructureProvider",
            KrakeKind::InfrastructureProvider => "InfrastructureProvider",
            KrakeKind::GlobalCloud => "GlobalCloud",
            KrakeKind::Cloud => "Cloud",
        }
    }

    /// The lower-case plural of its routes and RBAC rules.
    pub fn plural(self) -> &'static str {
        match self {
            KrakeKind::Role => "roles",
            KrakeKind::RoleBinding => "rolebindings",
            KrakeKind::GlobalMetric => "globalmetrics",
            KrakeKind::Metric => "metrics",
            KrakeKind::GlobalMetricsProvider => "globalmetricsproviders",
            KrakeKind::MetricsProvider => "metricsproviders",
            KrakeKind::Cluster => "clusters",
            KrakeKind::Application => "applications",
            KrakeKind::GlobalInfrastructureProvider => "globalinfrastructureproviders",
            KrakeKind::InfrastructureProvider => "infrastructureproviders",
            KrakeKind::GlobalCloud => "globalclouds",
            KrakeKind::Cloud => "clouds",
        }
    }

    /// Whether its objects live in a namespace.
    pub fn namespaced(self) -> bool {
        matches!(
            self,
            KrakeKind::Metric
                | KrakeKind::MetricsProvider
                | KrakeKind::Cluster
                | KrakeKind::Application
                | KrakeKind::InfrastructureProvider
                | KrakeKind::Cloud
        )
    }

    /// The kind whose plural is `plural` in group `api`.
    pub fn by_plural(api: &str, plural: &str) -> Option<KrakeKind> {
        KrakeKind::ALL
            .into_iter()
            .find(|kind| kind.api() == api && kind.plural() == plural)
    }
}

impl fmt::Display for KrakeKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One Krake object: its kind, namespace (for namespaced kinds) and name.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct KrakeKey {
    /// The kind.
    pub kind: KrakeKind,
    /// The namespace, for namespaced kinds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// The name.
    pub name: String,
}

impl KrakeKey {
    /// The key of `name` of `kind` in `namespace`.
    pub fn new(kind: KrakeKind, namespace: Option<&str>, name: &str) -> Self {
        Self {
            kind,
            namespace: namespace.map(str::to_string),
            name: name.to_string(),
        }
    }

    /// The tenant holding it, for metrics and providers: the namespace, or the operator tenant
    /// for the global kinds.
    pub fn tenant(&self) -> &str {
        self.namespace
            .as_deref()
            .unwrap_or(crate::platform::identity::OPERATOR_TENANT)
    }

    /// How Krake names it in an error (`'Metric' 'x' does not exist in namespace 'ns'`).
    pub fn described(&self) -> String {
        match &self.namespace {
            Some(ns) => format!("{} '{}' in namespace '{ns}'", self.kind.name(), self.name),
            None => format!("{} '{}'", self.kind.name(), self.name),
        }
    }

    /// This object as an owner reference.
    pub fn owner_ref(&self) -> super::meta::ResourceRef {
        super::meta::ResourceRef {
            api: self.kind.api().to_string(),
            namespace: self.namespace.clone(),
            kind: self.kind.name().to_string(),
            name: self.name.clone(),
        }
    }
}

impl fmt::Display for KrakeKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.namespace {
            Some(ns) => write!(f, "{}/{}/{ns}/{}", self.kind.api(), self.kind.plural(), self.name),
            None => write!(f, "{}/{}/{}", self.kind.api(), self.kind.plural(), self.name),
        }
    }
}
