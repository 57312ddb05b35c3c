//! The platform API in tests: the issuer, secret and static token every test cluster trusts,
//! tokens minted for any subject (valid, expired, from an unknown issuer), and a small client
//! that speaks the `/api/1.0-beta` envelope.

use std::collections::HashMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result};
use drover_api::auth::{encode_hs256, mint_hs256, Algorithm, IssuerKey, StaticToken, Verifier};
use drover_api::axebow::rate::RateLimit;
use drover_api::axebow::PlatformOptions;
use drover_model::platform::Identity;
use drover_node::platform_config::PlatformSettings;
use reqwest::{Client, Method, StatusCode};
use serde_json::Value;

use crate::client::Answer;

/// Issuer of the test tokens.
pub const TEST_ISSUER: &str = "https://issuer.drover.test";
/// Audience of the test tokens.
pub const TEST_AUDIENCE: &str = "drover";
/// HMAC secret of the test issuer.
pub const TEST_JWT_SECRET: &str = "drover-test-jwt-secret-of-at-least-32-bytes";
/// Subject the test clusters make an operator when it registers.
pub const OPERATOR_SUBJECT: &str = "root";
/// A static API token the test clusters accept, for the machine named `ci` in group `operators`.
pub const TEST_STATIC_TOKEN: &str = "drover-test-static-token-ci";
/// A static API token for the machine `shop-app`, allowed lease objects in namespace `shop`.
pub const TEST_SHOP_TOKEN: &str = "drover-test-static-token-shop";
/// A second trusted issuer, for users with two identity profiles.
pub const SECOND_ISSUER: &str = "https://second.drover.test";
/// The second issuer's HMAC secret.
pub const SECOND_JWT_SECRET: &str = "drover-test-second-issuer-secret-of-32-bytes";

/// A token of the second trusted issuer.
pub fn second_token(subject: &str) -> String {
    mint_hs256(
        SECOND_ISSUER,
        TEST_AUDIENCE,
        subject,
        SECOND_JWT_SECRET.as_bytes(),
        Duration::from_secs(3600),
    )
    .unwrap_or_default()
}

/// The platform settings of a test cluster: the test issuer, the static token, `root` as
/// operator, and the given rate limit.
pub fn test_platform_settings(rate_limit: RateLimit) -> PlatformSettings {
    let issuer = IssuerKey::new(
        TEST_ISSUER,
        TEST_AUDIENCE,
        Algorithm::HS256,
        TEST_JWT_SECRET.as_bytes(),
    );
    let second = IssuerKey::new(
        SECOND_ISSUER,
        TEST_AUDIENCE,
        Algorithm::HS256,
        SECOND_JWT_SECRET.as_bytes(),
    );
    let verifier = Verifier::new(
        issuer.into_iter().chain(second).collect(),
        HashMap::from([
            (
                TEST_STATIC_TOKEN.to_string(),
                StaticToken {
                    name: "ci".to_string(),
                    groups: vec!["operators".to_string()],
                },
            ),
            (
                TEST_SHOP_TOKEN.to_string(),
                StaticToken {
                    name: "shop-app".to_string(),
                    groups: vec!["namespace:shop".to_string()],
                },
            ),
        ]),
    );
    PlatformSettings {
        verifier,
        options: PlatformOptions {
            operators: vec![Identity {
                issuer: TEST_ISSUER.to_string(),
                subject: OPERATOR_SUBJECT.to_string(),
            }],
            rate_limit,
            // The harness's agents serve plain HTTP on loopback, and its Prometheus servers
            // listen there too.
            allow_plain_http_agents: true,
            egress: loopback_egress(),
            ..PlatformOptions::default()
        },
        max_body_bytes: 64 * 1024,
    }
}

/// The harness's egress policy: loopback allowed (its servers all listen there).
pub fn loopback_egress() -> std::sync::Arc<drover_model::egress::EgressPolicy> {
    std::sync::Arc::new(
        drover_model::egress::EgressPolicy::new(&["127.0.0.0/8".to_string()], Vec::new()).unwrap_or_default(),
    )
}

/// Settings with no credential source: the leasing dialects run open, the platform API refuses
/// everything but `/platform`.
pub fn open_platform_settings() -> PlatformSettings {
    PlatformSettings {
        verifier: Verifier::default(),
        ..test_platform_settings(RateLimit::default())
    }
}

/// `drover serve` flags that trust the test issuer and make [`OPERATOR_SUBJECT`] an operator,
/// for clusters of separate processes; the HMAC secret is written to an owner-only file in
/// `dir`.
pub fn process_platform_args(dir: &std::path::Path) -> Result<Vec<String>> {
    use std::os::unix::fs::OpenOptionsExt;
    let key = dir.join("jwt-secret");
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&key)
        .context("writing the test issuer's key")?;
    std::io::Write::write_all(&mut file, TEST_JWT_SECRET.as_bytes())?;
    Ok(vec![
        format!("--jwt-issuer={TEST_ISSUER}"),
        format!("--jwt-audience={TEST_AUDIENCE}"),
        "--jwt-algorithm=HS256".to_string(),
        format!("--jwt-key-file={}", key.display()),
        format!("--operators={TEST_ISSUER}={OPERATOR_SUBJECT}"),
        // The harness's agents serve plain HTTP on loopback, and its Prometheus servers listen
        // there too.
        "--allow-plain-http-agents".to_string(),
        "--tenant-egress-allow=127.0.0.0/8".to_string(),
    ])
}

/// A valid token for `subject`.
pub fn token(subject: &str) -> String {
    mint_hs256(
        TEST_ISSUER,
        TEST_AUDIENCE,
        subject,
        TEST_JWT_SECRET.as_bytes(),
        Duration::from_secs(3600),
    )
    .unwrap_or_default()
}

/// A token of the right issuer and key that expired five minutes ago.
pub fn expired_token(subject: &str) -> String {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let claims = serde_json::json!({
        "iss": TEST_ISSUER, "aud": TEST_AUDIENCE, "sub": subject, "iat": now - 600, "exp": now - 300,
    });
    encode_hs256(&claims, TEST_JWT_SECRET.as_bytes()).unwrap_or_default()
}

/// A well-signed token from an issuer the cluster does not trust.
pub fn foreign_token(subject: &str) -> String {
    mint_hs256(
        "https://evil.test",
        TEST_AUDIENCE,
        subject,
        TEST_JWT_SECRET.as_bytes(),
        Duration::from_secs(3600),
    )
    .unwrap_or_default()
}

/// A platform API client bound to one node and one bearer token (or none).
#[derive(Clone)]
pub struct PlatformClient {
    http: Client,
    base: String,
    token: Option<String>,
}

impl PlatformClient {
    /// A client of the node at `addr` sending `token`.
    pub fn new(addr: &str, token: Option<String>) -> Self {
        Self {
            http: crate::client::http_client(None),
            base: format!("http://{addr}"),
            token,
        }
    }

    /// Sends a request; `path` is under `/api/1.0-beta` unless it starts with `//`, in which
    /// case it is used as is (minus one slash).
    pub async fn call(&self, method: Method, path: &str, body: Option<&Value>) -> Result<Answer> {
        let url = match path.strip_prefix("//") {
            Some(raw) => format!("{}/{raw}", self.base),
            None => format!("{}/api/1.0-beta{path}", self.base),
        };
        let mut request = self.http.request(method.clone(), &url);
        if let Some(token) = &self.token {
            request = request.bearer_auth(token);
        }
        if let Some(body) = body {
            request = request.json(body);
        }
        let response = request.send().await.with_context(|| format!("{method} {url}"))?;
        let status = response.status();
        let text = response.text().await.context("reading body")?;
        Ok(Answer {
            status,
            body: serde_json::from_str(&text).unwrap_or(Value::Null),
        })
    }

    /// `GET` whose answer is read as it streams (a watch).
    pub async fn stream(&self, path: &str) -> Result<reqwest::Response> {
        let url = format!("{}/api/1.0-beta{path}", self.base);
        let mut request = self.http.get(&url);
        if let Some(token) = &self.token {
            request = request.bearer_auth(token);
        }
        request.send().await.with_context(|| format!("GET {url}"))
    }

    /// `GET`.
    pub async fn get(&self, path: &str) -> Result<Answer> {
        self.call(Method::GET, path, None).await
    }

    /// `POST` with a JSON body.
    pub async fn post(&self, path: &str, body: &Value) -> Result<Answer> {
        self.call(Method::POST, path, Some(body)).await
    }

    /// `PUT` with a JSON body.
    pub async fn put(&self, path: &str, body: &Value) -> Result<Answer> {
        self.call(Method::PUT, path, Some(body)).await
    }

    /// `PATCH` with a JSON body.
    pub async fn patch(&self, path: &str, body: &Value) -> Result<Answer> {
        self.call(Method::PATCH, path, Some(body)).await
    }

    /// `DELETE`.
    pub async fn delete(&self, path: &str) -> Result<Answer> {
        self.call(Method::DELETE, path, None).await
    }

    /// Registers the token's subject and returns the new user id.
    pub async fn register(&self, name: &str) -> Result<String> {
        let answer = self
            .post("/user", &serde_json::json!({ "name": name, "surname": "Tester" }))
            .await?;
        anyhow::ensure!(answer.status == StatusCode::OK, "registering {name}: {answer:?}");
        answer.body["data"]["userid"]
            .as_str()
            .map(str::to_string)
            .context("no userid in the answer")
    }
}
