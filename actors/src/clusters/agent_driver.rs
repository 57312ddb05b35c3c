//! The [`Driver`] of a `drover agent`: its cluster API over HTTPS (the agent's certificate
//! checked against the CA its cluster names, nothing else trusted; the control plane's own
//! certificate presented when it has one) or, where the operator allows it, plain HTTP; the join
//! token as a bearer token (marked sensitive, so it is never logged) and a timeout on every
//! call. A
//! cluster actor's driver names its cluster object in every change (`x-drover-cluster`), so an
//! agent bound to another cluster object refuses it (`409 bound: …`).

use std::time::Duration;

use async_trait::async_trait;
use std::sync::Arc;

use drover_model::cluster::agent_api::{
    AgentError, DesiredSet, Fence, Fenced, InstanceId, InstanceSpec, Inventory, LogChunk, LogQuery,
    NodeFacts, SetName, LOG_OFFSET_HEADER,
};
use drover_model::cluster::identity::{AgentIdentity, IdentifiedFacts, CLUSTER_HEADER, TAKE_OVER_HEADER};
use drover_model::cluster::AgentAccess;
use reqwest::{header, Client, RequestBuilder, StatusCode};
use serde::de::DeserializeOwned;

use super::driver::{Driver, DriverError};

/// Largest answer read from an agent (an inventory of 10,000 instances is about 3 MiB).
const MAX_ANSWER_BYTES: u64 = 64 * 1024 * 1024;

/// A client of one agent.
#[derive(Clone)]
pub struct AgentDriver {
    http: Client,
    endpoint: String,
    apply_timeout: Duration,
    /// The cluster object every change names, if any.
    cluster: Option<String>,
}

/// What the control plane presents to agents that ask for a client certificate: PEM of its
/// certificate and key, read once from the node's files.
#[derive(Clone, Default)]
pub struct ClientIdentity(Option<Arc<Vec<u8>>>);

impl std::fmt::Debug for ClientIdentity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() {
            "ClientIdentity(<pem>)"
        } else {
            "ClientIdentity(none)"
        })
    }
}

impl ClientIdentity {
    /// None: agents that require a client certificate refuse this control plane.
    pub fn none() -> Self {
        Self(None)
    }

    /// A certificate and its key (PEM, one after the other).
    pub fn pem(certificate_and_key: Vec<u8>) -> Self {
        Self(Some(Arc::new(certificate_and_key)))
    }
}

impl AgentDriver {
    /// The inventory with what each instance uses now (the platform's live reads).
    pub async fn measured_inventory(&self) -> Result<Inventory, DriverError> {
        self.json(self.http.get(self.url("/v1/inventory"))).await
    }

    /// A client of the agent `agent` that gives up on a call after `timeout`.
    pub fn new(
        agent: &AgentAccess,
        identity: &ClientIdentity,
        timeout: Duration,
    ) -> Result<Self, DriverError> {
        Self::with_apply_timeout(agent, identity, timeout, timeout)
    }

    /// As [`AgentDriver::new`], but calls that change what runs (sets, restarts, the fence) may
    /// take up to `apply_timeout`: an agent answers them only once the instances it removes
    /// have stopped, which takes up to its stop grace. Giving up earlier would send the same set
    /// again while the first is still being applied.
    pub fn with_apply_timeout(
        agent: &AgentAccess,
        identity: &ClientIdentity,
        timeout: Duration,
        apply_timeout: Duration,
    ) -> Result<Self, DriverError> {
        let mut value = header::HeaderValue::from_str(&format!("Bearer {}", agent.token))
            .map_err(|_| DriverError::Decode("the join token must be visible ASCII".into()))?;
        value.set_sensitive(true);
        let mut builder = Client::builder()
            .timeout(timeout)
            .connect_timeout(timeout)
            .redirect(reqwest::redirect::Policy::none())
            .default_headers(header::HeaderMap::from_iter([(header::AUTHORIZATION, value)]));
        if agent.endpoint.starts_with("https://") {
            // Only the cluster's CA: a certificate any other CA signed is refused.
            let ca = agent.ca.as_deref().ok_or_else(|| DriverError::Refused {
                status: 0,
                message: "an https:// agent needs its cluster's CA to be checked against".into(),
            })?;
            let roots = reqwest::Certificate::from_pem_bundle(ca.as_bytes())
                .map_err(|e| DriverError::Decode(format!("the cluster's CA is not PEM: {e}")))?;
            builder = builder.tls_built_in_root_certs(false).https_only(true);
            for root in roots {
                builder = builder.add_root_certificate(root);
            }
            if let Some(pem) = &identity.0 {
                let identity = reqwest::Identity::from_pem(pem).map_err(|e| {
                    DriverError::Decode(format!("the control plane's client certificate: {e}"))
                })?;
                builder = builder.identity(identity);
            }
        }
        let http = builder
            .build()
            .map_err(|e| DriverError::Unreachable(e.to_string()))?;
        Ok(Self {
            http,
            endpoint: agent.endpoint.trim_end_matches('/').to_string(),
            apply_timeout,
            cluster: None,
        })
    }

    /// The same client, naming cluster object `uid` in every change.
    pub fn naming(&self, uid: &str) -> Self {
        Self {
            cluster: Some(uid.to_string()),
            ..self.clone()
        }
    }

    /// A change: `request` with this driver's longer timeout, naming its cluster object.
    fn change(&self, request: RequestBuilder) -> RequestBuilder {
        let request = request.timeout(self.apply_timeout);
        match &self.cluster {
            Some(uid) => request.header(CLUSTER_HEADER, uid),
            None => request,
        }
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.endpoint)
    }

    async fn send(&self, request: RequestBuilder) -> Result<reqwest::Response, DriverError> {
        let response = request
            .send()
            .await
            .map_err(|e| DriverError::Unreachable(without_url(&e)))?;
        let status = response.status();
        if status.is_success() {
            return Ok(response);
        }
        let text = response.text().await.unwrap_or_default();
        let message = serde_json::from_str::<AgentError>(&text)
            .map(|e| e.error)
            .unwrap_or(text);
        Err(match status {
            StatusCode::SERVICE_UNAVAILABLE | StatusCode::BAD_GATEWAY | StatusCode::GATEWAY_TIMEOUT => {
                DriverError::Unreachable(message)
            }
            StatusCode::CONFLICT if message.starts_with("fenced") => DriverError::Fenced(message),
            StatusCode::CONFLICT if message.starts_with("bound") => DriverError::Bound(message),
            StatusCode::NOT_FOUND => DriverError::NotFound(message),
            _ => DriverError::Refused {
                status: status.as_u16(),
                message,
            },
        })
    }

    async fn json<T: DeserializeOwned>(&self, request: RequestBuilder) -> Result<T, DriverError> {
        let response = self.send(request).await?;
        if response
            .content_length()
            .is_some_and(|bytes| bytes > MAX_ANSWER_BYTES)
        {
            return Err(DriverError::Decode(format!(
                "the agent's answer is over {MAX_ANSWER_BYTES} bytes"
            )));
        }
        response
            .json::<T>()
            .await
            .map_err(|e| DriverError::Decode(without_url(&e)))
    }
}

/// reqwest's errors name the URL; ours name the cluster elsewhere and keep the text short.
/// A reqwest error's text without its URL, with its causes (a refused certificate, a name the
/// egress policy refuses).
pub(crate) fn without_url(error: &reqwest::Error) -> String {
    let mut text = error.to_string();
    if let Some(url) = error.url() {
        text = text.replace(&format!(" for url ({url})"), "");
    }
    // The cause (a refused certificate, a refused connection) is in the error's sources.
    let mut source = std::error::Error::source(error);
    while let Some(cause) = source {
        let said = cause.to_string();
        if !text.contains(&said) {
            text = format!("{text}: {said}");
        }
        source = cause.source();
    }
    if error.is_timeout() {
        format!("timed out: {text}")
    } else {
        text
    }
}

#[async_trait]
impl Driver for AgentDriver {
    async fn facts(&self) -> Result<NodeFacts, DriverError> {
        self.json(self.http.get(self.url("/v1/facts"))).await
    }

    async fn inventory(&self) -> Result<Inventory, DriverError> {
        // The leader decides nothing from usage: the agent need not measure it.
        self.json(self.http.get(self.url("/v1/inventory?usage=false")))
            .await
    }

    async fn apply_set(
        &self,
        fence: Fence,
        set: &SetName,
        instances: Vec<InstanceSpec>,
    ) -> Result<Inventory, DriverError> {
        let body = DesiredSet { fence, instances };
        let request = self
            .change(self.http.put(self.url(&format!("/v1/sets/{set}"))))
            .json(&body);
        self.json(request).await
    }

    async fn raise_fence(&self, fence: Fence) -> Result<Inventory, DriverError> {
        let request = self
            .change(self.http.put(self.url("/v1/fence")))
            .json(&Fenced { fence });
        self.json(request).await
    }

    async fn restart(&self, fence: Fence, id: &InstanceId) -> Result<(), DriverError> {
        let request = self
            .change(self.http.post(self.url(&format!("/v1/instances/{id}/restart"))))
            .json(&Fenced { fence });
        self.send(request).await.map(|_| ())
    }

    async fn identified_facts(&self) -> Result<(NodeFacts, Option<AgentIdentity>), DriverError> {
        let answer: IdentifiedFacts = self.json(self.http.get(self.url("/v1/facts"))).await?;
        let identity = answer.identity();
        Ok((answer.facts, identity))
    }

    fn for_cluster(&self, uid: &str) -> Option<Arc<dyn Driver>> {
        Some(Arc::new(self.naming(uid)))
    }

    async fn take_over(&self, fence: Fence, from: &str) -> Result<Inventory, DriverError> {
        let request = self
            .change(self.http.put(self.url("/v1/fence")))
            .header(TAKE_OVER_HEADER, from)
            .json(&Fenced { fence });
        self.json(request).await
    }

    async fn logs(&self, id: &InstanceId, query: &LogQuery) -> Result<LogChunk, DriverError> {
        let mut params: Vec<(&str, String)> = Vec::new();
        if let Some(tail) = query.tail {
            params.push(("tail", tail.to_string()));
        }
        if let Some(since) = &query.since {
            params.push(("since", since.clone()));
        }
        if let Some(from) = query.from {
            params.push(("from", from.to_string()));
        }
        let request = self
            .http
            .get(self.url(&format!("/v1/instances/{id}/logs")))
            .query(&params);
        let response = self.send(request).await?;
        let next = response
            .headers()
            .get(LOG_OFFSET_HEADER)
            .and_then(|value| value.to_str().ok())
            .and_then(|value| value.parse().ok());
        let text = response
            .text()
            .await
            .map_err(|e| DriverError::Decode(without_url(&e)))?;
        Ok(LogChunk { text, next })
    }
}
