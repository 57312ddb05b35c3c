//! Who is calling: bearer JWTs from configured issuers (algorithm pinned, keys read from files
//! at start, `exp`, `iss`, `aud` and `sub` required) and static API tokens for machines. The
//! verifier answers with the caller's [`Identity`]; what that identity may do is decided by
//! the platform's authorization rules. Every dialect authenticates through it (the platform
//! API, the Boskos and k8s-claimer routes, the idempotency layer), so it lives beside them
//! rather than inside one.

use std::collections::HashMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine;
use drover_model::platform::Identity;
pub use jsonwebtoken::Algorithm;
use jsonwebtoken::{DecodingKey, EncodingKey, Header, Validation};
use serde::{Deserialize, Serialize};
use thiserror::Error;

/// The group prefix that allows lease objects in a namespace (`namespace:*` allows all).
pub const NAMESPACE_GROUP_PREFIX: &str = "namespace:";

/// The issuer recorded for identities of static API tokens.
pub const STATIC_ISSUER: &str = "drover-static";
/// Seconds of clock skew tolerated on `exp` and `nbf`.
pub const LEEWAY_SECONDS: u64 = 30;

/// Why a credential was not accepted. Every variant answers `401`.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum AuthError {
    /// No `Authorization: Bearer …` header.
    #[error("authentication required: send Authorization: Bearer <token>")]
    Missing,
    /// The token is neither a static token nor a JWT.
    #[error("the bearer token is not a known API token nor a well-formed JWT")]
    Malformed,
    /// The JWT names an issuer this platform does not trust.
    #[error("tokens of issuer {0:?} are not accepted here")]
    UnknownIssuer(String),
    /// The JWT has expired.
    #[error("the token has expired")]
    Expired,
    /// The JWT failed verification.
    #[error("the token was refused: {0}")]
    Invalid(String),
}

/// A trusted token issuer.
#[derive(Clone)]
pub struct IssuerKey {
    /// Expected `iss`.
    pub issuer: String,
    /// Expected `aud`.
    pub audience: String,
    /// The one algorithm accepted.
    pub algorithm: Algorithm,
    /// The verification key.
    pub key: DecodingKey,
}

impl std::fmt::Debug for IssuerKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IssuerKey")
            .field("issuer", &self.issuer)
            .field("audience", &self.audience)
            .field("algorithm", &self.algorithm)
            .finish_non_exhaustive()
    }
}

/// Why an issuer's key could not be loaded.
#[derive(Debug, Error)]
#[error("issuer {issuer:?}: {message}")]
pub struct KeyError {
    /// The issuer.
    pub issuer: String,
    /// What went wrong.
    pub message: String,
}

impl IssuerKey {
    /// Builds an issuer from its key material: the HMAC secret for `HS*`, a PEM public key for
    /// `RS*`, `PS*`, `ES*` and `EdDSA`.
    pub fn new(issuer: &str, audience: &str, algorithm: Algorithm, key: &[u8]) -> Result<Self, KeyError> {
        let fail = |message: String| KeyError {
            issuer: issuer.to_string(),
            message,
        };
        let key = match algorithm {
            Algorithm::HS256 | Algorithm::HS384 | Algorithm::HS512 => {
                let secret = key.trim_ascii();
                if secret.len() < 32 {
                    return Err(fail("an HMAC secret must be at least 32 bytes".to_string()));
                }
                DecodingKey::from_secret(secret)
            }
            Algorithm::RS256
            | Algorithm::RS384
            | Algorithm::RS512
            | Algorithm::PS256
            | Algorithm::PS384
            | Algorithm::PS512 => {
                DecodingKey::from_rsa_pem(key).map_err(|e| fail(format!("RSA public key: {e}")))?
            }
            Algorithm::ES256 | Algorithm::ES384 => {
                DecodingKey::from_ec_pem(key).map_err(|e| fail(format!("EC public key: {e}")))?
            }
            Algorithm::EdDSA => {
                DecodingKey::from_ed_pem(key).map_err(|e| fail(format!("Ed25519 public key: {e}")))?
            }
        };
        Ok(Self {
            issuer: issuer.to_string(),
            audience: audience.to_string(),
            algorithm,
            key,
        })
    }
}

/// A static API token: the machine it names and the groups it belongs to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StaticToken {
    /// The machine's name (the subject of its identity).
    pub name: String,
    /// Groups: `operators` (cluster membership and pool configuration, every namespace),
    /// `namespace:<ns>` or `namespace:*` (Kubernetes-style lease objects there).
    pub groups: Vec<String>,
}

/// The issuer of identities that client certificates name.
pub const CLIENT_CERT_ISSUER: &str = "x509";

/// The client certificate a TLS connection presented, verified against the node's client CA,
/// as the node puts it into each request's extensions: the subject's common name is the user
/// and its organizations are groups (`O=operators` makes an operator), as Kubernetes reads
/// client certificates.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientCertificate {
    /// The subject's common name (CN).
    pub subject: String,
    /// The subject's organizations (O).
    pub groups: Vec<String>,
}

impl ClientCertificate {
    /// The verified credential it stands for.
    pub fn verified(&self) -> Verified {
        Verified {
            identity: Identity {
                issuer: CLIENT_CERT_ISSUER.to_string(),
                subject: self.subject.clone(),
            },
            groups: self.groups.clone(),
        }
    }
}

/// A verified credential.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verified {
    /// Who it names.
    pub identity: Identity,
    /// The groups of a static token (none for a JWT).
    pub groups: Vec<String>,
}

/// Checks bearer tokens.
#[derive(Clone, Default)]
pub struct Verifier {
    issuers: Vec<IssuerKey>,
    /// Static token → what it stands for.
    tokens: HashMap<String, StaticToken>,
}

#[derive(Debug, Deserialize)]
struct Claims {
    sub: String,
}

#[derive(Debug, Deserialize)]
struct UnverifiedClaims {
    iss: Option<String>,
}

impl Verifier {
    /// A verifier trusting these issuers and static tokens.
    pub fn new(issuers: Vec<IssuerKey>, tokens: HashMap<String, StaticToken>) -> Self {
        Self { issuers, tokens }
    }

    /// Whether no credential source is configured: then the leasing dialects run open.
    pub fn is_open(&self) -> bool {
        self.issuers.is_empty() && self.tokens.is_empty()
    }

    /// Whether a static token is scoped to lease namespace `namespace` (group `namespace:<ns>`):
    /// such a namespace belongs to the machines holding that token, and no user may make it a
    /// tenant of their own.
    pub fn namespace_is_scoped(&self, namespace: &str) -> bool {
        let group = format!("{}{namespace}", NAMESPACE_GROUP_PREFIX);
        self.tokens.values().any(|token| token.groups.contains(&group))
    }

    /// The issuers trusted, for the platform info.
    pub fn issuer_names(&self) -> Vec<String> {
        self.issuers.iter().map(|i| i.issuer.clone()).collect()
    }

    /// Reads the bearer token of an `Authorization` header value.
    pub fn bearer(header: Option<&str>) -> Result<&str, AuthError> {
        let value = header.ok_or(AuthError::Missing)?;
        let (scheme, token) = value.trim().split_once(' ').ok_or(AuthError::Missing)?;
        if !scheme.eq_ignore_ascii_case("bearer") || token.trim().is_empty() {
            return Err(AuthError::Missing);
        }
        Ok(token.trim())
    }

    /// The token of an `Authorization` header as any dialect's clients send it: `Bearer <t>`
    /// (Kubernetes clients, REST), `Basic base64(user:<t>)` (the Boskos client's password), or
    /// the bare token (k8s-claimer clients).
    pub fn credential(header: Option<&str>) -> Result<String, AuthError> {
        let value = header
            .map(str::trim)
            .filter(|v| !v.is_empty())
            .ok_or(AuthError::Missing)?;
        match value.split_once(' ') {
            Some((scheme, rest)) if scheme.eq_ignore_ascii_case("bearer") => Ok(rest.trim().to_string()),
            Some((scheme, rest)) if scheme.eq_ignore_ascii_case("basic") => {
                let decoded = base64::engine::general_purpose::STANDARD
                    .decode(rest.trim())
                    .map_err(|_| AuthError::Malformed)?;
                let text = String::from_utf8(decoded).map_err(|_| AuthError::Malformed)?;
                let (_, password) = text.split_once(':').ok_or(AuthError::Malformed)?;
                Ok(password.to_string())
            }
            Some(_) => Err(AuthError::Malformed),
            None => Ok(value.to_string()),
        }
    }

    /// Verifies a static token or a JWT.
    pub fn verify(&self, token: &str) -> Result<Identity, AuthError> {
        self.verify_with_groups(token).map(|verified| verified.identity)
    }

    /// Verifies a static token or a JWT, with the static token's groups.
    pub fn verify_with_groups(&self, token: &str) -> Result<Verified, AuthError> {
        let mut named = None;
        for (known, entry) in &self.tokens {
            if drover_raft::constant_time_eq(known.as_bytes(), token.as_bytes()) {
                named = Some(entry);
            }
        }
        if let Some(entry) = named {
            return Ok(Verified {
                identity: Identity {
                    issuer: STATIC_ISSUER.to_string(),
                    subject: entry.name.clone(),
                },
                groups: entry.groups.clone(),
            });
        }
        self.verify_jwt(token).map(|identity| Verified {
            identity,
            groups: Vec::new(),
        })
    }

    /// Verifies a JWT only (a profile added with `POST /user/provider`).
    pub fn verify_jwt(&self, token: &str) -> Result<Identity, AuthError> {
        let issuer = unverified_issuer(token)?;
        let trusted = self
            .issuers
            .iter()
            .find(|i| i.issuer == issuer)
            .ok_or_else(|| AuthError::UnknownIssuer(issuer.clone()))?;
        let mut validation = Validation::new(trusted.algorithm);
        validation.set_issuer(&[&trusted.issuer]);
        validation.set_audience(&[&trusted.audience]);
        validation.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
        validation.leeway = LEEWAY_SECONDS;
        // A token that is not valid yet is refused too (jsonwebtoken checks `nbf` only if asked).
        validation.validate_nbf = true;
        let data =
            jsonwebtoken::decode::<Claims>(token, &trusted.key, &validation).map_err(|e| match e.kind() {
                jsonwebtoken::errors::ErrorKind::ExpiredSignature => AuthError::Expired,
                _ => AuthError::Invalid(e.to_string()),
            })?;
        if data.claims.sub.is_empty() {
            return Err(AuthError::Invalid("the token's sub is empty".to_string()));
        }
        Ok(Identity {
            issuer: trusted.issuer.clone(),
            subject: data.claims.sub,
        })
    }
}

impl std::fmt::Debug for Verifier {
    /// Names the issuers and the machines, never the tokens themselves.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let machines: Vec<&StaticToken> = self.tokens.values().collect();
        f.debug_struct("Verifier")
            .field("issuers", &self.issuers)
            .field("static_tokens", &machines)
            .finish()
    }
}

/// The `iss` of a JWT before its signature is checked: only to choose the key to check it with.
fn unverified_issuer(token: &str) -> Result<String, AuthError> {
    let mut parts = token.split('.');
    let (Some(_), Some(payload), Some(_), None) = (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(AuthError::Malformed);
    };
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(payload.trim_end_matches('='))
        .map_err(|_| AuthError::Malformed)?;
    let claims: UnverifiedClaims = serde_json::from_slice(&bytes).map_err(|_| AuthError::Malformed)?;
    claims
        .iss
        .ok_or_else(|| AuthError::Invalid("the token has no iss".to_string()))
}

/// The claims of a token minted by [`mint_hs256`].
#[derive(Debug, Serialize)]
struct MintedClaims<'a> {
    iss: &'a str,
    aud: &'a str,
    sub: &'a str,
    iat: u64,
    exp: u64,
}

/// Why a token could not be minted.
#[derive(Debug, Error)]
#[error("cannot mint a token: {0}")]
pub struct MintError(String);

/// Mints an HS256 token (for development: `drover token`, tests).
pub fn mint_hs256(
    issuer: &str,
    audience: &str,
    subject: &str,
    secret: &[u8],
    ttl: Duration,
) -> Result<String, MintError> {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_err(|e| MintError(e.to_string()))?
        .as_secs();
    let claims = MintedClaims {
        iss: issuer,
        aud: audience,
        sub: subject,
        iat: now,
        exp: now.saturating_add(ttl.as_secs()),
    };
    encode_hs256(&claims, secret)
}

/// Signs any claims with HS256 (tests use it for expired tokens).
pub fn encode_hs256(claims: &impl Serialize, secret: &[u8]) -> Result<String, MintError> {
    let secret = secret.trim_ascii();
    if secret.len() < 32 {
        return Err(MintError("the HMAC secret must be at least 32 bytes".to_string()));
    }
    jsonwebtoken::encode(
        &Header::new(Algorithm::HS256),
        claims,
        &EncodingKey::from_secret(secret),
    )
    .map_err(|e| MintError(e.to_string()))
}

/// Parses an algorithm name (`HS256`, `RS256`, `ES256`, `EdDSA`, …).
pub fn parse_algorithm(text: &str) -> Option<Algorithm> {
    text.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECRET: &[u8] = b"0123456789abcdef0123456789abcdef";

    fn verifier() -> Verifier {
        let issuer = IssuerKey::new("https://idp.test", "drover", Algorithm::HS256, SECRET).expect("issuer");
        let ci = StaticToken {
            name: "ci".to_string(),
            groups: vec!["operators".to_string()],
        };
        Verifier::new(vec![issuer], HashMap::from([("s3cret-token".to_string(), ci)]))
    }

    #[test]
    fn good_tokens_name_their_identity() {
        let token = mint_hs256(
            "https://idp.test",
            "drover",
            "alice",
            SECRET,
            Duration::from_secs(60),
        )
        .expect("mint");
        let identity = verifier().verify(&token).expect("valid");
        assert_eq!(identity.subject, "alice");
        assert_eq!(identity.issuer, "https://idp.test");
        let machine = verifier().verify("s3cret-token").expect("static");
        assert_eq!(machine.issuer, STATIC_ISSUER);
        assert_eq!(machine.subject, "ci");
    }

    #[test]
    fn bad_tokens_are_refused_for_the_right_reason() {
        let v = verifier();
        let other_key = mint_hs256(
            "https://idp.test",
            "drover",
            "a",
            b"another secret of thirty-two bytes!",
            Duration::from_secs(60),
        )
        .expect("mint");
        assert!(matches!(v.verify(&other_key), Err(AuthError::Invalid(_))));
        let unknown = mint_hs256(
            "https://evil.test",
            "drover",
            "a",
            SECRET,
            Duration::from_secs(60),
        )
        .expect("mint");
        assert_eq!(
            v.verify(&unknown),
            Err(AuthError::UnknownIssuer("https://evil.test".to_string()))
        );
        let audience =
            mint_hs256("https://idp.test", "other", "a", SECRET, Duration::from_secs(60)).expect("mint");
        assert!(matches!(v.verify(&audience), Err(AuthError::Invalid(_))));
        assert_eq!(v.verify("nonsense"), Err(AuthError::Malformed));
        assert_eq!(v.verify("s3cret-tokeN"), Err(AuthError::Malformed));
        assert_eq!(Verifier::bearer(None), Err(AuthError::Missing));
        assert_eq!(Verifier::bearer(Some("Basic abc")), Err(AuthError::Missing));
        assert_eq!(Verifier::bearer(Some("Bearer abc")), Ok("abc"));
        let basic = base64::engine::general_purpose::STANDARD.encode("boskos:s3cret-token");
        assert_eq!(
            Verifier::credential(Some(&format!("Basic {basic}"))),
            Ok("s3cret-token".to_string())
        );
        assert_eq!(
            Verifier::credential(Some("s3cret-token")),
            Ok("s3cret-token".to_string())
        );
        assert_eq!(Verifier::credential(Some("Digest x")), Err(AuthError::Malformed));
        let groups = v.verify_with_groups("s3cret-token").expect("static").groups;
        assert_eq!(groups, vec!["operators".to_string()]);
    }

    #[test]
    fn an_expired_token_is_refused() {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .expect("clock")
            .as_secs();
        let claims = MintedClaims {
            iss: "https://idp.test",
            aud: "drover",
            sub: "alice",
            iat: now - 600,
            exp: now - 300,
        };
        let token = jsonwebtoken::encode(
            &Header::new(Algorithm::HS256),
            &claims,
            &EncodingKey::from_secret(SECRET),
        )
        .expect("encode");
        assert_eq!(verifier().verify(&token), Err(AuthError::Expired));
        // An algorithm other than the pinned one is refused even with the right secret.
        let hs512 = jsonwebtoken::encode(
            &Header::new(Algorithm::HS512),
            &MintedClaims {
                exp: now + 60,
                ..claims
            },
            &EncodingKey::from_secret(SECRET),
        )
        .expect("encode");
        assert!(matches!(verifier().verify(&hs512), Err(AuthError::Invalid(_))));
    }

    #[test]
    fn debug_output_names_machines_but_not_their_tokens() {
        let shown = format!("{:?}", verifier());
        assert!(shown.contains("ci"), "{shown}");
        assert!(!shown.contains("s3cret-token"), "{shown}");
    }
}
