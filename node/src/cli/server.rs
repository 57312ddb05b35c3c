//! The nodes a CLI command talks to: it tries them in order and moves on when one is down.

use std::time::Duration;

use anyhow::{bail, Result};
use reqwest::{Client, Method, StatusCode};

/// The API endpoints of a cluster, any of which answers any request.
#[derive(Clone)]
pub struct Servers {
    http: Client,
    headers: reqwest::header::HeaderMap,
    urls: Vec<String>,
    timeout: Option<Duration>,
}

/// Why no node gave an answer.
#[derive(Debug, thiserror::Error)]
pub enum SendError {
    /// A node did not answer in time.
    #[error("no answer in time: {0}")]
    Timeout(String),
    /// No node could be reached (or each said it had no leader).
    #[error("no server answered: {0}")]
    Unavailable(String),
}

/// A status and a body.
pub struct Reply {
    /// HTTP status.
    pub status: StatusCode,
    /// Body text.
    pub text: String,
    /// Response headers.
    pub headers: reqwest::header::HeaderMap,
}

impl Reply {
    /// A header's value read as a number (Drover's offsets and queue positions).
    pub fn number(&self, header: &str) -> Option<u64> {
        self.headers.get(header)?.to_str().ok()?.parse().ok()
    }
}

impl Servers {
    /// Parses `http://a:7400,http://b:7400`; every request carries `token` as a bearer token
    /// when given.
    pub fn parse(list: &str, token: Option<&str>) -> Result<Self> {
        let urls: Vec<String> = list
            .split(',')
            .map(|u| u.trim().trim_end_matches('/').to_string())
            .filter(|u| !u.is_empty())
            .collect();
        if urls.is_empty() {
            bail!("--server needs at least one URL such as http://127.0.0.1:7401");
        }
        for url in &urls {
            if !url.starts_with("http://") && !url.starts_with("https://") {
                bail!("--server {url:?} must start with http:// or https://");
            }
        }
        let mut headers = reqwest::header::HeaderMap::new();
        if let Some(token) = token {
            let mut value = reqwest::header::HeaderValue::from_str(&format!("Bearer {token}"))
                .map_err(|_| anyhow::anyhow!("the token must be printable ASCII"))?;
            value.set_sensitive(true);
            headers.insert(reqwest::header::AUTHORIZATION, value);
        }
        let http = Client::builder()
            .timeout(Duration::from_secs(15))
            .default_headers(headers.clone())
            .build()?;
        Ok(Self {
            http,
            headers,
            urls,
            timeout: None,
        })
    }

    /// Sends one request, trying the next server when one cannot be reached or answers 503.
    pub async fn send(
        &self,
        method: Method,
        path: &str,
        query: &[(&str, &str)],
        body: Option<String>,
    ) -> Result<Reply> {
        Ok(self.try_send(method, path, query, body).await?)
    }

    /// Trusts the CA certificates in `roots` (besides none: the client has no built-in roots)
    /// and presents the client certificate and key in `identity` (PEM, both in one).
    pub fn with_tls(self, roots: Option<&[u8]>, identity: Option<&[u8]>) -> Result<Self> {
        let mut builder = Client::builder()
            .timeout(Duration::from_secs(15))
            .default_headers(self.headers.clone());
        if let Some(pem) = roots {
            let certificates = reqwest::Certificate::from_pem_bundle(pem)
                .map_err(|e| anyhow::anyhow!("--cacert is not PEM: {e}"))?;
            if certificates.is_empty() {
                bail!("--cacert holds no certificate");
            }
            for certificate in certificates {
                builder = builder.add_root_certificate(certificate);
            }
        }
        if let Some(pem) = identity {
            let identity = reqwest::Identity::from_pem(pem)
                .map_err(|e| anyhow::anyhow!("--cert and --key are not a PEM certificate and key: {e}"))?;
            builder = builder.identity(identity);
        }
        Ok(Self {
            http: builder.build()?,
            ..self
        })
    }

    /// Each request gives up after `timeout` instead of the default 15 s.
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// Opens a streaming GET (a watch) on the first node that answers it with success; the
    /// stream may last up to `timeout`.
    pub async fn stream(
        &self,
        path: &str,
        query: &[(&str, &str)],
        timeout: Duration,
    ) -> Result<reqwest::Response, SendError> {
        let mut last_error = String::new();
        for url in &self.urls {
            let request = self
                .http
                .get(format!("{url}{path}"))
                .query(query)
                .timeout(timeout);
            match request.send().await {
                Ok(response) if response.status().is_success() => return Ok(response),
                Ok(response) => {
                    let status = response.status();
                    let text = response.text().await.unwrap_or_default();
                    last_error = format!("{url}: {status}: {}", text.trim());
                    if status != StatusCode::SERVICE_UNAVAILABLE {
                        break;
                    }
                }
                Err(e) => last_error = format!("{url}: {e}"),
            }
        }
        Err(SendError::Unavailable(last_error))
    }

    /// Sends one request like [`Servers::send`], saying whether it timed out or found no node.
    pub async fn try_send(
        &self,
        method: Method,
        path: &str,
        query: &[(&str, &str)],
        body: Option<String>,
    ) -> Result<Reply, SendError> {
        let mut last_error = String::new();
        let mut timed_out = false;
        for url in &self.urls {
            let mut request = self
                .http
                .request(method.clone(), format!("{url}{path}"))
                .query(query);
            if let Some(timeout) = self.timeout {
                request = request.timeout(timeout);
            }
            if let Some(body) = &body {
                request = request
                    .header(reqwest::header::CONTENT_TYPE, "application/json")
                    .body(body.clone());
            }
            match request.send().await {
                Ok(response) => {
                    let status = response.status();
                    let headers = response.headers().clone();
                    let text = response.text().await.unwrap_or_default();
                    if status == StatusCode::SERVICE_UNAVAILABLE {
                        last_error = format!("{url}: {text}");
                        continue;
                    }
                    return Ok(Reply {
                        status,
                        text,
                        headers,
                    });
                }
                Err(e) => {
                    timed_out |= e.is_timeout();
                    last_error = format!("{url}: {e}");
                }
            }
        }
        if timed_out {
            Err(SendError::Timeout(last_error))
        } else {
            Err(SendError::Unavailable(last_error))
        }
    }
}
