//! What the platform API needs beyond the store: the credential verifier, the platform's
//! settings and the per-caller rate limiter; and the extractor that turns a request's bearer
//! token into the caller's identity.

use std::ops::RangeInclusive;

use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use axum::http::{header, StatusCode};
use drover_model::platform::Identity;

use super::rate::{RateLimit, RateLimiter};
use super::reply::{codes, AxebowError};
use crate::auth::Verifier;
use crate::state::ApiState;

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
        }
    }
}

/// The platform API's share of the node state.
#[derive(Debug)]
pub struct AxebowContext {
    /// Checks bearer tokens.
    pub verifier: Verifier,
    /// Platform settings.
    pub options: PlatformOptions,
    /// Per-caller buckets.
    pub limiter: RateLimiter,
}

impl AxebowContext {
    /// Builds the context.
    pub fn new(verifier: Verifier, options: PlatformOptions) -> Self {
        let limiter = RateLimiter::new(options.rate_limit);
        Self {
            verifier,
            options,
            limiter,
        }
    }
}

/// The verified caller of a request, within its rate.
#[derive(Debug, Clone)]
pub struct Caller(pub Identity);

impl FromRequestParts<ApiState> for Caller {
    type Rejection = AxebowError;

    async fn from_request_parts(parts: &mut Parts, state: &ApiState) -> Result<Self, Self::Rejection> {
        let header = parts
            .headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok());
        let context = &state.axebow;
        let token = Verifier::bearer(header)?;
        let identity = context.verifier.verify(token)?;
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
