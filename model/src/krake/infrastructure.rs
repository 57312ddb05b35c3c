//! Krake's `infrastructure` group (`krake.md` §3.3): infrastructure providers (an IM endpoint
//! and its credentials) and clouds (an OpenStack endpoint, its credentials, the metrics it is
//! scored on and the provider that creates clusters on it), global or of a namespace. Drover
//! keeps them as Krake writes them — it does not create clusters through an infrastructure
//! provider (a Cluster is registered by its agent's kubeconfig) — with their secrets (passwords,
//! tokens) never shown. A namespaced one is its tenant's, a global one the operator tenant's,
//! as for metrics.

use serde::{Deserialize, Serialize};

use super::error::KrakeError;
use super::validate::MAX_LIST;
use crate::scheduling::metrics::MetricRef;

/// What a reader sees in place of a password or token.
pub const REDACTED_SECRET: &str = "<redacted: secrets are never shown>";

/// Most infrastructure providers, and most clouds, per tenant.
pub const MAX_PER_TENANT: usize = 1000;

/// Longest URL, user name, project or domain.
pub const MAX_TEXT: usize = 2048;

/// An infrastructure provider of type `im` (Infrastructure Manager).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ImProvider {
    /// The IM endpoint.
    pub url: String,
    /// User name (with `password`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub username: Option<String>,
    /// Password (a secret).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub password: Option<String>,
    /// Token (a secret).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
}

/// Which infrastructure provider a cloud uses.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProviderRef {
    /// Its name.
    pub name: String,
    /// `true`: the cloud's namespace's; `false`: a global one.
    #[serde(default)]
    pub namespaced: bool,
}

/// A cloud of type `openstack`, authenticated by Keystone's `password` method.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OpenstackCloud {
    /// The Keystone endpoint.
    pub url: String,
    /// Keystone's API version (`3`).
    pub version: String,
    /// The user.
    pub username: String,
    /// The user's password (a secret).
    pub password: String,
    /// The user's domain (`Default`).
    pub domain_name: String,
    /// A comment on the user.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_comment: Option<String>,
    /// The project.
    pub project: String,
    /// The project's domain id (`default`).
    pub project_domain_id: String,
    /// A comment on the project.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project_comment: Option<String>,
    /// The metrics it is scored on.
    #[serde(default)]
    pub metrics: Vec<MetricRef>,
    /// The provider that creates clusters on it.
    pub infrastructure_provider: ProviderRef,
}

fn text(field: &str, value: &str) -> Result<(), KrakeError> {
    if value.is_empty() || value.len() > MAX_TEXT {
        return Err(KrakeError::invalid(field, format!("1 to {MAX_TEXT} characters")));
    }
    Ok(())
}

impl ImProvider {
    /// Krake's checks: a URL, and a token or a user name with a password.
    pub fn validate(&self) -> Result<(), KrakeError> {
        text("spec.im.url", &self.url)?;
        for (field, value) in [
            ("spec.im.username", &self.username),
            ("spec.im.password", &self.password),
            ("spec.im.token", &self.token),
        ] {
            if let Some(value) = value {
                text(field, value)?;
            }
        }
        if self.token.is_none() && (self.username.is_none() || self.password.is_none()) {
            return Err(KrakeError::invalid(
                "spec.im._schema",
                "At least one authentication should be defined in the IM infrastructure provider spec.",
            ));
        }
        Ok(())
    }
}

impl OpenstackCloud {
    /// Krake's checks, and a global cloud's: it may not reference a namespaced provider or
    /// metric.
    pub fn validate(&self, global: bool) -> Result<(), KrakeError> {
        let password = "spec.openstack.auth.password";
        text("spec.openstack.url", &self.url)?;
        text(&format!("{password}.version"), &self.version)?;
        text(&format!("{password}.user.username"), &self.username)?;
        text(&format!("{password}.user.password"), &self.password)?;
        text(&format!("{password}.user.domain_name"), &self.domain_name)?;
        text(&format!("{password}.project.name"), &self.project)?;
        text(&format!("{password}.project.domain_id"), &self.project_domain_id)?;
        for comment in [&self.user_comment, &self.project_comment].into_iter().flatten() {
            if comment.len() > MAX_TEXT {
                return Err(KrakeError::invalid(
                    password,
                    format!("a comment takes at most {MAX_TEXT} characters"),
                ));
            }
        }
        text(
            "spec.openstack.infrastructure_provider.name",
            &self.infrastructure_provider.name,
        )?;
        if self.metrics.len() > MAX_LIST {
            return Err(KrakeError::invalid(
                "spec.openstack.metrics",
                format!("at most {MAX_LIST}"),
            ));
        }
        crate::scheduling::metrics::validate_refs(&self.metrics).map_err(|e| match e {
            crate::platform::error::PlatformError::Invalid { message, .. } => {
                KrakeError::invalid("spec.openstack.metrics", message)
            }
            other => KrakeError::invalid("spec.openstack.metrics", other.to_string()),
        })?;
        if global && self.infrastructure_provider.namespaced {
            return Err(KrakeError::invalid(
                "_schema",
                "A non-namespaced global cloud resource cannot reference the namespaced infrastructure provider resource.",
            ));
        }
        if global && self.metrics.iter().any(|m| m.namespaced) {
            return Err(KrakeError::invalid(
                "_schema",
                "A non-namespaced global cloud resource cannot reference the namespaced metric resource.",
            ));
        }
        Ok(())
    }
}
