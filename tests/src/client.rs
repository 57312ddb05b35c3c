//! A small HTTP client for the Kubernetes-style lease API, used by tests.

use std::time::Duration;

use anyhow::{bail, Context, Result};
use reqwest::{Client, StatusCode};
use serde_json::{json, Value};

/// Lease API client bound to one node.
#[derive(Clone)]
pub struct LeaseClient {
    http: Client,
    base: String,
}

/// A status code and a JSON body.
#[derive(Debug, Clone)]
pub struct Answer {
    /// HTTP status.
    pub status: StatusCode,
    /// Parsed body (`Null` when empty or not JSON).
    pub body: Value,
}

impl Answer {
    /// `metadata.resourceVersion` of the returned object.
    pub fn resource_version(&self) -> Option<String> {
        self.body["metadata"]["resourceVersion"]
            .as_str()
            .map(str::to_string)
    }
}

/// An HTTP client with the harness's timeout, sending `authorization` when given.
pub fn http_client(authorization: Option<&str>) -> Client {
    let mut headers = reqwest::header::HeaderMap::new();
    if let Some(value) = authorization.and_then(|v| reqwest::header::HeaderValue::from_str(v).ok()) {
        headers.insert(reqwest::header::AUTHORIZATION, value);
    }
    Client::builder()
        .timeout(std::time::Duration::from_secs(20))
        .default_headers(headers)
        .build()
        .unwrap_or_default()
}

impl LeaseClient {
    /// A client for the node whose API listens at `addr` (`host:port`).
    pub fn new(addr: &str) -> Self {
        Self::authorized(addr, None)
    }

    /// A client that sends `authorization` (a whole `Authorization` header value) with every
    /// request.
    pub fn authorized(addr: &str, authorization: Option<&str>) -> Self {
        Self {
            http: http_client(authorization),
            base: format!("http://{addr}"),
        }
    }

    /// The base URL.
    pub fn base(&self) -> &str {
        &self.base
    }

    fn leases(&self, namespace: &str) -> String {
        format!(
            "{}/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases",
            self.base
        )
    }

    async fn answer(response: reqwest::Response) -> Result<Answer> {
        let status = response.status();
        let text = response.text().await.context("reading body")?;
        let body = serde_json::from_str(&text).unwrap_or(Value::Null);
        Ok(Answer { status, body })
    }

    /// Creates a coordination lease.
    pub async fn create(&self, namespace: &str, name: &str, holder: &str) -> Result<Answer> {
        let body = json!({
            "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
            "metadata": { "name": name },
            "spec": { "holderIdentity": holder, "leaseDurationSeconds": 15 },
        });
        let response = self.http.post(self.leases(namespace)).json(&body).send().await?;
        Self::answer(response).await
    }

    /// Replaces a coordination lease at `version` (None: unconditional).
    pub async fn replace(
        &self,
        namespace: &str,
        name: &str,
        holder: &str,
        version: Option<&str>,
    ) -> Result<Answer> {
        let mut metadata = json!({ "name": name });
        if let Some(version) = version {
            metadata["resourceVersion"] = json!(version);
        }
        let body = json!({
            "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
            "metadata": metadata,
            "spec": { "holderIdentity": holder, "leaseDurationSeconds": 15 },
        });
        let response = self
            .http
            .put(format!("{}/{name}", self.leases(namespace)))
            .json(&body)
            .send()
            .await?;
        Self::answer(response).await
    }

    /// Reads a lease with the given consistency query (`""` for the default).
    pub async fn get(&self, namespace: &str, name: &str, query: &str) -> Result<Answer> {
        let response = self
            .http
            .get(format!("{}/{name}{query}", self.leases(namespace)))
            .send()
            .await?;
        Self::answer(response).await
    }

    /// Lists leases in a namespace.
    pub async fn list(&self, namespace: &str) -> Result<Answer> {
        let response = self.http.get(self.leases(namespace)).send().await?;
        Self::answer(response).await
    }

    /// Deletes a lease.
    pub async fn delete(&self, namespace: &str, name: &str) -> Result<Answer> {
        let response = self
            .http
            .delete(format!("{}/{name}", self.leases(namespace)))
            .send()
            .await?;
        Self::answer(response).await
    }

    /// Any GET on this node, for operations endpoints.
    pub async fn get_path(&self, path: &str) -> Result<(StatusCode, String)> {
        let response = self.http.get(format!("{}{path}", self.base)).send().await?;
        let status = response.status();
        Ok((status, response.text().await?))
    }

    /// Opens a watch and returns the raw response to read events from.
    pub async fn watch(&self, namespace: &str, after: &str) -> Result<reqwest::Response> {
        let url = format!("{}?watch=true&resourceVersion={after}", self.leases(namespace));
        let response = Client::new().get(url).send().await?;
        Ok(response)
    }

    /// The underlying HTTP client.
    pub fn http(&self) -> &Client {
        &self.http
    }
}

/// Reads newline-delimited events until `count` arrived or the deadline passed.
pub async fn read_events(
    response: &mut reqwest::Response,
    count: usize,
    timeout: Duration,
) -> Result<Vec<Value>> {
    let deadline = tokio::time::Instant::now() + timeout;
    let mut buffer = Vec::new();
    let mut events = Vec::new();
    while events.len() < count {
        let chunk = tokio::time::timeout_at(deadline, response.chunk())
            .await
            .with_context(|| format!("only {} of {count} events arrived: {events:?}", events.len()))??;
        let Some(chunk) = chunk else {
            bail!("watch ended after {} events", events.len())
        };
        buffer.extend_from_slice(&chunk);
        while let Some(end) = buffer.iter().position(|b| *b == b'\n') {
            let line: Vec<u8> = buffer.drain(..=end).collect();
            events.push(serde_json::from_slice(&line)?);
        }
    }
    Ok(events)
}
