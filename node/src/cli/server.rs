//! The nodes a CLI command talks to: it tries them in order and moves on when one is down.
//!
//! A node whose host vanished answers nothing (no reset), so each connection attempt is bounded
//! by the dial timeout (etcdctl's `--dial-timeout`) rather than the request's. The node that
//! answered is remembered for the rest of the command's run: later requests start there, and a
//! vanished first node costs one dial timeout per command, not one per request.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
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
    dial_timeout: Duration,
    /// Index in `urls` of the node that answered last (shared by clones of one command's run).
    answered: Arc<AtomicUsize>,
}

/// How long a whole request may take when the command does not say.
const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(15);

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
    /// when given, and a connection to a node is given up after `dial_timeout`.
    pub fn parse(list: &str, token: Option<&str>, dial_timeout: Duration) -> Result<Self> {
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
        if dial_timeout.is_zero() {
            bail!("--dial-timeout must be greater than zero");
        }
        let http = builder(&headers, dial_timeout).build()?;
        Ok(Self {
            http,
            headers,
            urls,
            timeout: None,
            dial_timeout,
            answered: Arc::new(AtomicUsize::new(0)),
        })
    }

    /// The nodes in the order to try them: the one that answered last first, then the ones
    /// after it in the list, wrapping round.
    fn in_turn(&self) -> impl Iterator<Item = (usize, &String)> {
        let first = self.answered.load(Ordering::Relaxed);
        let count = self.urls.len();
        (0..count).map(move |k| {
            let index = (first + k) % count;
            (index, &self.urls[index])
        })
    }

    fn remember(&self, index: usize) {
        self.answered.store(index, Ordering::Relaxed);
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
        let mut builder = builder(&self.headers, self.dial_timeout);
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
        for (index, url) in self.in_turn() {
            let request = self
                .http
                .get(format!("{url}{path}"))
                .query(query)
                .timeout(timeout);
            match request.send().await {
                Ok(response) if response.status().is_success() => {
                    self.remember(index);
                    return Ok(response);
                }
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
        for (index, url) in self.in_turn() {
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
                    self.remember(index);
                    return Ok(Reply {
                        status,
                        text,
                        headers,
                    });
                }
                Err(e) => {
                    // A connection not made within the dial timeout is a node that is not
                    // there; only a node that took the request and then said nothing timed out.
                    timed_out |= e.is_timeout() && !e.is_connect();
                    last_error = format!("{url}: {}", crate::error::with_causes(&e));
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

/// A client builder with the command's headers, connection bound and default request timeout.
fn builder(headers: &reqwest::header::HeaderMap, dial_timeout: Duration) -> reqwest::ClientBuilder {
    Client::builder()
        .timeout(DEFAULT_REQUEST_TIMEOUT)
        .connect_timeout(dial_timeout)
        .default_headers(headers.clone())
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    use reqwest::{Method, StatusCode};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::{TcpListener, TcpSocket};

    use super::Servers;

    /// A node on loopback that answers every request with `status`; counts the requests.
    async fn node(status: u16) -> (String, Arc<AtomicUsize>) {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let url = format!("http://{}", listener.local_addr().expect("address"));
        let requests = Arc::new(AtomicUsize::new(0));
        let counter = requests.clone();
        tokio::spawn(async move {
            while let Ok((mut stream, _)) = listener.accept().await {
                counter.fetch_add(1, Ordering::SeqCst);
                let mut buffer = [0u8; 4096];
                let _ = stream.read(&mut buffer).await;
                let answer =
                    format!("HTTP/1.1 {status} X\r\ncontent-length: 2\r\nconnection: close\r\n\r\n{{}}");
                let _ = stream.write_all(answer.as_bytes()).await;
            }
        });
        (url, requests)
    }

    #[tokio::test]
    async fn the_node_that_answered_is_asked_first_for_the_rest_of_the_run() {
        let (unavailable, unavailable_requests) = node(503).await;
        let (serving, serving_requests) = node(200).await;
        let servers = Servers::parse(&format!("{unavailable},{serving}"), None, Duration::from_secs(2))
            .expect("servers");
        for _ in 0..3 {
            let reply = servers
                .try_send(Method::GET, "/cluster", &[], None)
                .await
                .expect("answer");
            assert_eq!(reply.status, StatusCode::OK);
        }
        // A clone (as a command's helpers take) shares what was learnt.
        let reply = servers
            .clone()
            .try_send(Method::GET, "/x", &[], None)
            .await
            .expect("answer");
        assert_eq!(reply.status, StatusCode::OK);
        assert_eq!(
            unavailable_requests.load(Ordering::SeqCst),
            1,
            "asked again after it failed"
        );
        assert_eq!(serving_requests.load(Ordering::SeqCst), 4);
    }

    /// A listener whose accept queue is full drops further connection attempts (SYNs) without
    /// an answer, as a vanished host does.
    fn silent_node() -> (String, std::net::TcpStream, tokio::net::TcpListener) {
        let socket = TcpSocket::new_v4().expect("socket");
        socket
            .bind("127.0.0.1:0".parse().expect("address"))
            .expect("bind");
        let listener = socket.listen(0).expect("listen");
        let addr = listener.local_addr().expect("address");
        let filler = std::net::TcpStream::connect(addr).expect("fill the queue");
        (format!("http://{addr}"), filler, listener)
    }

    #[tokio::test]
    async fn a_node_that_answers_nothing_costs_the_dial_timeout_not_the_request_timeout() {
        let (silent, _filler, _listener) = silent_node();
        let (serving, _) = node(200).await;
        let servers = Servers::parse(&format!("{silent},{serving}"), None, Duration::from_millis(300))
            .expect("servers");
        let started = Instant::now();
        let reply = servers
            .try_send(Method::GET, "/cluster", &[], None)
            .await
            .expect("answer");
        assert_eq!(reply.status, StatusCode::OK);
        let took = started.elapsed();
        assert!(
            took >= Duration::from_millis(300),
            "the silent node was not tried first: {took:?}"
        );
        assert!(
            took < Duration::from_secs(5),
            "waited {took:?} for a node that answers nothing"
        );
        let alone = Servers::parse(&silent, None, Duration::from_millis(300)).expect("servers");
        let error = alone
            .try_send(Method::GET, "/cluster", &[], None)
            .await
            .err()
            .expect("nothing answers");
        assert!(matches!(error, super::SendError::Unavailable(_)), "{error}");
    }
}
