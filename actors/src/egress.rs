//! The control plane's calls made on a tenant's behalf (a Prometheus provider, an application's
//! shutdown hook, a module registry) go only where the operator's [`EgressPolicy`] allows. The
//! decision is made on the address actually connected to: every connection the client opens is
//! checked on its peer address before a byte of the request is written, whatever the URL's
//! spelling, the name's resolution or the redirect that led there. Earlier checks only refuse
//! sooner and in plainer words: a URL is parsed once ([`CallUrl`], the parser the client uses)
//! and refused when it names a refused address, a name is refused when it resolves to one, and a
//! redirect is refused before it is followed.

use std::collections::HashSet;
use std::future::Future;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use drover_model::egress::{CallUrl, EgressPolicy};
use hyper_util::client::legacy::connect::{Connection, HttpInfo};
use reqwest::dns::{Addrs, Name, Resolve, Resolving};

/// Most redirects followed.
const MAX_REDIRECTS: usize = 5;

/// Why a call was not made.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EgressError {
    /// The URL cannot be called (not `http`/`https`, no host, not a URL).
    #[error("{0}")]
    NotCallable(String),
    /// The policy refuses the address the URL names.
    #[error("{0}: refused by the egress policy (--tenant-egress-allow)")]
    Refused(String),
}

/// Which redirects a client follows (always only to addresses the policy allows).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Redirects {
    /// Up to five, anywhere the policy allows (a Prometheus behind a proxy, a hook).
    WithinPolicy,
    /// Only within the first URL's origin (a registry's packages and tarballs come from the
    /// registry itself; a redirect elsewhere is an error, not a call made without credentials).
    SameOrigin,
}

/// Addresses that names the operator allows by name (`--tenant-egress-allow=prom.internal`)
/// resolved to: the connection check lets them through, as the resolver did.
type NamedAddresses = Arc<Mutex<HashSet<IpAddr>>>;

/// Resolves names and refuses those resolving to an address the policy refuses.
struct PolicyResolver {
    policy: Arc<EgressPolicy>,
    named: NamedAddresses,
}

impl Resolve for PolicyResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let policy = self.policy.clone();
        let named = self.named.clone();
        let host = name.as_str().to_string();
        Box::pin(async move {
            let found: Vec<SocketAddr> = tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            if policy.allows_host(&host) {
                if let Ok(mut named) = named.lock() {
                    named.extend(found.iter().map(SocketAddr::ip));
                }
            } else if let Some(why) = found.iter().find_map(|a| policy.refuses(a.ip())) {
                return Err(format!("{host} resolves to {why}: refused by the egress policy").into());
            }
            let addrs: Addrs = Box::new(found.into_iter());
            Ok(addrs)
        })
    }
}

/// Why the policy refuses a connection to `peer`, if it does.
fn peer_refused(policy: &EgressPolicy, named: &NamedAddresses, peer: Option<SocketAddr>) -> Option<String> {
    let Some(peer) = peer else {
        return Some("a connection whose peer address is unknown is not used".to_string());
    };
    let ip = peer.ip();
    let why = policy.refuses(ip)?;
    if named.lock().is_ok_and(|named| named.contains(&ip)) {
        return None;
    }
    Some(format!(
        "connected to {peer}, and {why}: refused by the egress policy (--tenant-egress-allow)"
    ))
}

/// The connector layer that checks every new connection's peer address.
#[derive(Clone)]
struct PeerCheckLayer {
    policy: Arc<EgressPolicy>,
    named: NamedAddresses,
}

impl<S> tower::Layer<S> for PeerCheckLayer {
    type Service = PeerCheck<S>;

    fn layer(&self, inner: S) -> PeerCheck<S> {
        PeerCheck {
            inner,
            policy: self.policy.clone(),
            named: self.named.clone(),
        }
    }
}

/// A connector that hands on a connection only when its peer address is allowed.
#[derive(Clone)]
struct PeerCheck<S> {
    inner: S,
    policy: Arc<EgressPolicy>,
    named: NamedAddresses,
}

type BoxError = Box<dyn std::error::Error + Send + Sync>;

impl<S, R> tower::Service<R> for PeerCheck<S>
where
    S: tower::Service<R>,
    S::Response: Connection + Send + 'static,
    S::Error: Into<BoxError>,
    S::Future: Send + 'static,
{
    type Response = S::Response;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<S::Response, BoxError>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, request: R) -> Self::Future {
        let connecting = self.inner.call(request);
        let policy = self.policy.clone();
        let named = self.named.clone();
        Box::pin(async move {
            let connection = connecting.await.map_err(Into::into)?;
            let mut extras = http::Extensions::new();
            connection.connected().get_extras(&mut extras);
            let peer = extras.get::<HttpInfo>().map(HttpInfo::remote_addr);
            match peer_refused(&policy, &named, peer) {
                // Dropped here: nothing of the request was written to it.
                Some(why) => Err(why.into()),
                None => Ok(connection),
            }
        })
    }
}

/// A client for calls made on a tenant's behalf, within an egress policy.
#[derive(Clone)]
pub struct EgressClient {
    http: reqwest::Client,
    policy: Arc<EgressPolicy>,
}

impl std::fmt::Debug for EgressClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EgressClient").finish_non_exhaustive()
    }
}

impl EgressClient {
    /// A client within `policy`: names resolved, redirects followed and every connection's peer
    /// checked within it; no proxy from the environment.
    pub fn new(policy: Arc<EgressPolicy>, redirects: Redirects) -> reqwest::Result<Self> {
        let named = NamedAddresses::default();
        let for_redirects = policy.clone();
        let redirect = reqwest::redirect::Policy::custom(move |attempt| {
            if attempt.previous().len() >= MAX_REDIRECTS {
                return attempt.error(format!("more than {MAX_REDIRECTS} redirects"));
            }
            let to = attempt.url().to_string();
            if redirects == Redirects::SameOrigin
                && attempt
                    .previous()
                    .first()
                    .is_some_and(|first| first.origin() != attempt.url().origin())
            {
                return attempt.error(format!(
                    "a redirect to {to} is not followed: only the registry's own origin is called"
                ));
            }
            match literal_refused(&for_redirects, &to) {
                Ok(()) => attempt.follow(),
                Err(why) => attempt.error(format!("a redirect to {to} is not followed: {why}")),
            }
        });
        let http = reqwest::Client::builder()
            .no_proxy()
            .dns_resolver(Arc::new(PolicyResolver {
                policy: policy.clone(),
                named: named.clone(),
            }))
            .connector_layer(PeerCheckLayer {
                policy: policy.clone(),
                named,
            })
            .redirect(redirect)
            .build()?;
        Ok(Self { http, policy })
    }

    /// A request of `method` to `url`, parsed once and handed to the client as parsed, or why
    /// it is not made.
    pub fn request(
        &self,
        method: reqwest::Method,
        url: &str,
    ) -> Result<reqwest::RequestBuilder, EgressError> {
        let target = CallUrl::parse(url).map_err(EgressError::NotCallable)?;
        if let Some(why) = self.policy.refuses_literal(&target) {
            return Err(EgressError::Refused(why));
        }
        Ok(self.http.request(method, target.url().clone()))
    }
}

/// Whether `url` can be called at all and names no refused address (a name is judged when it
/// resolves).
fn literal_refused(policy: &EgressPolicy, url: &str) -> Result<(), EgressError> {
    let target = CallUrl::parse(url).map_err(EgressError::NotCallable)?;
    match policy.refuses_literal(&target) {
        Some(why) => Err(EgressError::Refused(why)),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// A listener on `127.0.0.1` that answers `200` and records every byte it was sent.
    async fn recording_listener() -> (u16, Arc<Mutex<Vec<u8>>>) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let port = listener.local_addr().expect("addr").port();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let record = seen.clone();
        tokio::spawn(async move {
            while let Ok((mut stream, _)) = listener.accept().await {
                let record = record.clone();
                tokio::spawn(async move {
                    let mut buffer = vec![0u8; 4096];
                    while let Ok(Ok(read)) =
                        tokio::time::timeout(Duration::from_secs(5), stream.read(&mut buffer)).await
                    {
                        if read == 0 {
                            break;
                        }
                        record.lock().expect("lock").extend_from_slice(&buffer[..read]);
                        let _ = stream
                            .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
                            .await;
                    }
                });
            }
        });
        (port, seen)
    }

    fn policy(allowed: &[&str]) -> Arc<EgressPolicy> {
        let allowed: Vec<String> = allowed.iter().map(|a| a.to_string()).collect();
        Arc::new(EgressPolicy::new(&allowed, Vec::new()).expect("policy"))
    }

    /// The spellings that once reached loopback (#50): refused before anything is sent, and
    /// the listener never sees a request, let alone credentials.
    #[tokio::test]
    async fn no_spelling_of_loopback_is_called() {
        let (port, seen) = recording_listener().await;
        let client = EgressClient::new(policy(&[]), Redirects::WithinPolicy).expect("client");
        for url in [
            format!("http://127.0.0.1:{port}/"),
            format!("http://127.0.0.1.:{port}/"),
            format!("http://0x7f.1.:{port}/"),
            format!("http://127.0.0.%31:{port}/"),
            format!("http://\u{ff11}\u{ff12}\u{ff17}.\u{ff10}.\u{ff10}.\u{ff11}:{port}/"),
            format!("http://127.0.0.1:{port}\\@example.com/"),
            format!("http://[::ffff:127.0.0.1]:{port}/"),
            format!("http://2130706433:{port}/"),
        ] {
            let refused = client.request(reqwest::Method::GET, &url);
            assert!(
                matches!(refused, Err(EgressError::Refused(_))),
                "{url}: {refused:?}"
            );
        }
        assert!(seen.lock().expect("lock").is_empty());
    }

    /// A name resolving to loopback is refused by the resolver; a request that skips every
    /// check before the connection (the inner client given an address) is stopped by the
    /// connection check on its peer address, before anything is written.
    #[tokio::test]
    async fn the_peer_address_decides_whatever_led_there() {
        let (port, seen) = recording_listener().await;
        let client = EgressClient::new(policy(&[]), Redirects::WithinPolicy).expect("client");
        // `localhost` resolves to loopback: the resolver refuses it.
        let answer = client
            .request(reqwest::Method::GET, &format!("http://localhost:{port}/"))
            .expect("a name is judged when it resolves")
            .header("authorization", "Bearer secret")
            .send()
            .await;
        let error = answer.expect_err("refused");
        assert!(chain(&error).contains("egress policy"), "{}", chain(&error));
        // The reqwest client itself, given an address literal (no resolver involved), is stopped
        // by the connection check.
        let answer = client
            .http
            .get(format!("http://127.0.0.1:{port}/"))
            .header("authorization", "Bearer secret")
            .send()
            .await;
        let error = answer.expect_err("refused");
        assert!(
            chain(&error).contains("connected to 127.0.0.1"),
            "{}",
            chain(&error)
        );
        assert!(
            seen.lock().expect("lock").is_empty(),
            "the listener was sent a request"
        );
        // Allowed: the same listener is called.
        let allowed = EgressClient::new(policy(&["127.0.0.0/8"]), Redirects::WithinPolicy).expect("client");
        let answer = allowed
            .request(reqwest::Method::GET, &format!("http://127.0.0.1.:{port}/"))
            .expect("allowed")
            .send()
            .await
            .expect("answered");
        assert_eq!(answer.status(), 200);
        assert!(!seen.lock().expect("lock").is_empty());
    }

    /// A registry client follows no redirect to another origin, even an allowed one.
    #[tokio::test]
    async fn a_same_origin_client_follows_no_redirect_elsewhere() {
        let (target, seen) = recording_listener().await;
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let port = listener.local_addr().expect("addr").port();
        tokio::spawn(async move {
            while let Ok((mut stream, _)) = listener.accept().await {
                let mut buffer = vec![0u8; 4096];
                let _ = stream.read(&mut buffer).await;
                let answer = format!(
                    "HTTP/1.1 302 Found\r\nLocation: http://127.0.0.1:{target}/t.tgz\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                );
                let _ = stream.write_all(answer.as_bytes()).await;
            }
        });
        let client = EgressClient::new(policy(&["127.0.0.0/8"]), Redirects::SameOrigin).expect("client");
        let error = client
            .request(reqwest::Method::GET, &format!("http://127.0.0.1:{port}/t.tgz"))
            .expect("allowed")
            .send()
            .await
            .expect_err("not followed");
        assert!(chain(&error).contains("own origin"), "{}", chain(&error));
        assert!(seen.lock().expect("lock").is_empty());
    }

    fn chain(error: &dyn std::error::Error) -> String {
        let mut text = error.to_string();
        let mut source = error.source();
        while let Some(cause) = source {
            text.push_str(": ");
            text.push_str(&cause.to_string());
            source = cause.source();
        }
        text
    }
}
