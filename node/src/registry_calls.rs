//! The transport to tenants' module registries: reqwest through the operator's egress policy
//! (the client the cluster actors read metrics providers with, which judges every connection by
//! its peer address), following no redirect out of the registry's own origin, bounded in time
//! and in what it reads back.

use std::sync::Arc;
use std::time::Duration;

use drover_actors::egress::{EgressClient, Redirects};
use drover_api::registry::{RegistryAnswer, RegistryCalls, RegistryFuture, RegistryUnreachable};
use drover_model::egress::EgressPolicy;

/// How long one registry call may take (a publish carries the whole tarball).
const CALL_TIMEOUT: Duration = Duration::from_secs(30);

/// The most of an answer read (a package document lists every version).
const MAX_ANSWER: usize = 16 << 20;

/// Registry calls within `policy`.
pub struct EgressRegistry {
    http: EgressClient,
}

/// The transport, or why none could be built.
pub fn registry_calls(policy: Arc<EgressPolicy>) -> Result<Arc<dyn RegistryCalls>, String> {
    let http = EgressClient::new(policy, Redirects::SameOrigin)
        .map_err(|e| format!("no HTTP client for registries: {e}"))?;
    Ok(Arc::new(EgressRegistry { http }))
}

async fn answer(
    request: Result<reqwest::RequestBuilder, drover_actors::egress::EgressError>,
) -> Result<RegistryAnswer, RegistryUnreachable> {
    let request = request.map_err(|e| RegistryUnreachable(e.to_string()))?;
    let mut response = request
        .timeout(CALL_TIMEOUT)
        .send()
        .await
        .map_err(|e| RegistryUnreachable(crate::error::with_causes(&e)))?;
    let status = response.status().as_u16();
    let mut body = Vec::new();
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(|e| RegistryUnreachable(crate::error::with_causes(&e)))?
    {
        if body.len() + chunk.len() > MAX_ANSWER {
            return Err(RegistryUnreachable(format!(
                "the registry answered more than {MAX_ANSWER} bytes"
            )));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(RegistryAnswer { status, body })
}

impl RegistryCalls for EgressRegistry {
    fn get(&self, url: String, authorization: Option<String>) -> RegistryFuture {
        let request = self.http.request(reqwest::Method::GET, &url).map(|request| {
            let request = request.header("accept", "application/json");
            match authorization {
                Some(value) => request.header("authorization", value),
                None => request,
            }
        });
        Box::pin(answer(request))
    }

    fn put_json(&self, url: String, authorization: Option<String>, body: Vec<u8>) -> RegistryFuture {
        let request = self.http.request(reqwest::Method::PUT, &url).map(|request| {
            let request = request.header("content-type", "application/json").body(body);
            match authorization {
                Some(value) => request.header("authorization", value),
                None => request,
            }
        });
        Box::pin(answer(request))
    }
}
