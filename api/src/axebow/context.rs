//! What the platform API needs beyond the store: the credential verifier, the platform's
//! settings and the per-caller rate limiter; and the extractor that turns a request's bearer
//! token into the caller's identity.

use std::ops::RangeInclusive;

use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use axum::http::{header, StatusCode};
use drover_model::platform::Identity;

use std::sync::Arc;

use super::rate::{RateLimit, RateLimiter};
use super::reply::{codes, AxebowError};
use super::service_metrics::ServiceMetrics;
use crate::agents::AgentReads;
use crate::auth::Verifier;
use crate::core::Core;
use crate::error::ApiError;

/// Settings of the platform, the same on every node.
#[derive(Debug, Clone)]
pub struct PlatformOptions {
    /// Name shown in the platform info.
    pub instance_name: String,
    /// Domain under which services get their default names.
    pub reference_domain: String,
    /// Ports tenants may register.
    pub port_range: RangeInclusive<u16>,
    /// IaaS providers accounts may name.
    pub iaas_providers: Vec<String>,
    /// Identities that become operators when they register.
    pub operators: Vec<Identity>,
    /// Per-caller request rate.
    pub rate_limit: RateLimit,
    /// Clusters whose agent is reached over plain HTTP may be registered
    /// (`--allow-plain-http-agents`; off: an agent is reached over TLS only).
    pub allow_plain_http_agents: bool,
    /// Where a metrics provider may point (the operator's egress policy).
    pub egress: std::sync::Arc<drover_model::egress::EgressPolicy>,
    /// The registries tenants' pods may pull from (`--image-registry-allow`; any by default).
    pub image_registries: std::sync::Arc<drover_model::image_policy::RegistryAllow>,
    /// The transport to tenants' module registries; the marketplace answers `503` without.
    pub registry: Option<std::sync::Arc<dyn crate::registry::RegistryCalls>>,
}

impl Default for PlatformOptions {
    fn default() -> Self {
        Self {
            instance_name: "drover".to_string(),
            reference_domain: "drover.localhost".to_string(),
            port_range: 30000..=32767,
            iaas_providers: vec!["sim".to_string()],
            operators: Vec::new(),
            rate_limit: RateLimit::default(),
            allow_plain_http_agents: false,
            egress: Default::default(),
            image_registries: Default::default(),
            registry: None,
        }
    }
}

/// The platform API's settings and rate limiter.
#[derive(Debug)]
pub struct AxebowContext {
    /// Platform settings.
    pub options: PlatformOptions,
    /// Per-caller buckets.
    pub limiter: RateLimiter,
}

impl AxebowContext {
    /// Builds the context.
    pub fn new(options: PlatformOptions) -> Self {
        let limiter = RateLimiter::new(options.rate_limit);
        Self { options, limiter }
    }
}

/// The platform room's state: the core, the platform's settings and rate limiter, the live
/// reads of clusters' agents, and the services' gauges.
#[derive(Clone)]
pub struct AxebowState {
    core: Core,
    /// Settings and the per-caller rate limiter.
    pub axebow: Arc<AxebowContext>,
    /// Live reads of clusters' agents; the cluster inventory and log routes answer `503`
    /// without.
    pub agents: Option<Arc<dyn AgentReads>>,
    /// The services' gauges.
    pub service_metrics: ServiceMetrics,
}

impl AxebowState {
    /// The room over `core`; registers the services' gauges in the core's registry.
    pub fn new(
        core: Core,
        options: PlatformOptions,
        agents: Option<Arc<dyn AgentReads>>,
    ) -> Result<Self, ApiError> {
        Ok(Self {
            axebow: Arc::new(AxebowContext::new(options)),
            agents,
            service_metrics: ServiceMetrics::register(&core.registry)?,
            core,
        })
    }
}

impl std::ops::Deref for AxebowState {
    type Target = Core;

    fn deref(&self) -> &Core {
        &self.core
    }
}

/// The verified caller of a request, within its rate.
#[derive(Debug, Clone)]
pub struct Caller(pub Identity);

impl FromRequestParts<AxebowState> for Caller {
    type Rejection = AxebowError;

    async fn from_request_parts(parts: &mut Parts, state: &AxebowState) -> Result<Self, Self::Rejection> {
        let header = parts
            .headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok());
        let context = &state.axebow;
        let token = Verifier::bearer(header)?;
        let identity = state.verifier.verify(token)?;
        let key = format!("{}\n{}", identity.issuer, identity.subject);
        if !context.limiter.allow(&key) {
            return Err(AxebowError::new(
                StatusCode::TOO_MANY_REQUESTS,
                codes::RATE_LIMITED,
                format!(
                    "more than {} requests in a burst ({} per second); retry later",
                    context.options.rate_limit.burst, context.options.rate_limit.per_second
                ),
            ));
        }
        Ok(Caller(identity))
    }
}
