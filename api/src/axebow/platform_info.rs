//! `GET /platform`: what this platform offers; the one call that needs no credentials.

use std::collections::BTreeMap;

use axum::extract::State;
use serde::Serialize;
use utoipa::ToSchema;

use super::context::AxebowState;
use super::reply::{ok, Envelope};

/// The API version this platform serves.
pub const API_VERSION: &str = "1.0-beta";

/// An IaaS provider accounts may use.
#[derive(Debug, Serialize, ToSchema)]
pub struct IaasProvider {
    /// The provider's name.
    pub name: String,
}

/// The platform's description.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PlatformInfo {
    /// API versions served.
    pub api_versions: Vec<String>,
    /// This installation's name.
    pub instance_name: String,
    /// Drover's version.
    pub platform_version: String,
    /// Issuers whose tokens are accepted.
    pub oid_providers: Vec<String>,
    /// IaaS providers accounts may name.
    pub iaas_providers: BTreeMap<String, IaasProvider>,
    /// First and last port tenants may register.
    pub port_range: [u16; 2],
    /// Domain under which services get their default names.
    pub reference_domain: String,
}

/// What this platform offers.
#[utoipa::path(get, path = "/api/1.0-beta/platform", tag = "platform", security(()),
    responses((status = 200, description = "The platform", body = Envelope<PlatformInfo>)))]
pub async fn info(State(state): State<AxebowState>) -> Envelope<PlatformInfo> {
    let options = &state.axebow.options;
    ok(PlatformInfo {
        api_versions: vec![API_VERSION.to_string()],
        instance_name: options.instance_name.clone(),
        platform_version: env!("CARGO_PKG_VERSION").to_string(),
        oid_providers: state.verifier.issuer_names(),
        iaas_providers: options
            .iaas_providers
            .iter()
            .map(|name| (name.clone(), IaasProvider { name: name.clone() }))
            .collect(),
        port_range: [*options.port_range.start(), *options.port_range.end()],
        reference_domain: options.reference_domain.clone(),
    })
}
