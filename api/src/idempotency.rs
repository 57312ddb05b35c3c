//! The `Idempotency-Key` header every dialect honours on writes.
//!
//! A key belongs to the caller who sent it and to the request it was first sent with, as
//! Stripe's API and the IETF idempotency-key draft have it. [`scope`], a layer in front of every
//! dialect, authenticates the caller first (an unauthenticated request is passed on untouched,
//! its body unread, for the dialect's guard to refuse), then rewrites the key as
//! `<digest of the caller>:<key>` and records the request (method, path and a digest of query and
//! body) in [`REQUEST_HEADER`]. The state machine answers a retry of the same request with the
//! first result and refuses the same key on another request with a `4xx`. Handlers read both
//! with [`idempotency_key`].

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use sha2::{Digest, Sha256};

use crate::auth::Verifier;
use crate::core::{read_body, Core};

/// The header's name.
pub const IDEMPOTENCY_HEADER: &str = "idempotency-key";
/// Internal header set by [`scope`] (a client's own is dropped): the request a key was sent with.
pub const REQUEST_HEADER: &str = "x-drover-idempotency-request";
/// Longest key a client may send.
pub const MAX_KEY_LEN: usize = 255;

fn check_key(value: &HeaderValue) -> Result<&str, &'static str> {
    let key = value
        .to_str()
        .map_err(|_| "Idempotency-Key must be visible ASCII")?;
    if key.is_empty() || key.len() > MAX_KEY_LEN {
        return Err("Idempotency-Key must be 1 to 255 characters");
    }
    Ok(key)
}

/// The scoped key of a request and the request it names, if it sent a key; an error message
/// when the header is unusable.
pub fn idempotency_key(headers: &HeaderMap) -> Result<Option<(String, String)>, &'static str> {
    let Some(value) = headers.get(IDEMPOTENCY_HEADER) else {
        return Ok(None);
    };
    let request = headers.get(REQUEST_HEADER).and_then(|v| v.to_str().ok());
    match request {
        Some(request) => {
            let key = value
                .to_str()
                .map_err(|_| "Idempotency-Key must be visible ASCII")?;
            Ok(Some((key.to_string(), request.to_string())))
        }
        None => {
            check_key(value)?;
            Err("Idempotency-Key needs a valid credential: a key belongs to the caller who sent it")
        }
    }
}

/// Who is calling, as a stable name; `None` when the credential does not verify.
fn principal(state: &Core, headers: &HeaderMap) -> Option<String> {
    let verifier = &state.verifier;
    if verifier.is_open() {
        return Some("anonymous".to_string());
    }
    let header = headers
        .get(axum::http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok());
    let token = Verifier::credential(header).ok()?;
    let verified = verifier.verify_with_groups(&token).ok()?;
    Some(format!(
        "{}\n{}",
        verified.identity.issuer, verified.identity.subject
    ))
}

fn hex_digest(parts: &[&[u8]], bytes: usize) -> String {
    let mut hasher = Sha256::new();
    for part in parts {
        hasher.update((part.len() as u64).to_be_bytes());
        hasher.update(part);
    }
    hasher
        .finalize()
        .iter()
        .take(bytes)
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Scopes an `Idempotency-Key` to its caller and request (see the module documentation).
pub async fn scope(State(state): State<Core>, mut request: Request, next: Next) -> Response {
    request.headers_mut().remove(REQUEST_HEADER);
    let key = match request.headers().get(IDEMPOTENCY_HEADER).map(check_key) {
        Some(Ok(key)) => key.to_string(),
        // No key, or a bad one the handler will refuse with its dialect's error.
        None | Some(Err(_)) => return next.run(request).await,
    };
    let Some(principal) = principal(&state, request.headers()) else {
        return next.run(request).await;
    };
    let (mut parts, body) = request.into_parts();
    let body = match read_body(body, state.max_body_bytes).await {
        Ok(body) => body,
        Err(refused) => return refused,
    };
    let method = parts.method.as_str().to_string();
    let path = parts.uri.path().to_string();
    let query = parts.uri.query().unwrap_or_default().to_string();
    let digest = hex_digest(&[method.as_bytes(), path.as_bytes(), query.as_bytes(), &body], 16);
    let scoped = format!("{}:{key}", hex_digest(&[principal.as_bytes()], 16));
    let described = format!("{method} {path} {digest}");
    match (HeaderValue::from_str(&scoped), HeaderValue::from_str(&described)) {
        (Ok(scoped), Ok(described)) => {
            parts.headers.insert(IDEMPOTENCY_HEADER, scoped);
            parts.headers.insert(REQUEST_HEADER, described);
        }
        // The path of a parsed URI is visible ASCII, so this does not happen; refuse rather
        // than apply the request unscoped.
        _ => {
            return (
                StatusCode::BAD_REQUEST,
                "the request path cannot carry an Idempotency-Key",
            )
                .into_response()
        }
    }
    next.run(Request::from_parts(parts, Body::from(body))).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_without_a_scope_is_refused_and_a_bad_one_is_named() {
        let mut headers = HeaderMap::new();
        assert_eq!(idempotency_key(&headers), Ok(None));
        headers.insert(IDEMPOTENCY_HEADER, HeaderValue::from_static("job-42"));
        assert!(idempotency_key(&headers).is_err_and(|e| e.contains("credential")));
        headers.insert(REQUEST_HEADER, HeaderValue::from_static("POST /x 00"));
        assert_eq!(
            idempotency_key(&headers),
            Ok(Some(("job-42".to_string(), "POST /x 00".to_string())))
        );
        headers.remove(REQUEST_HEADER);
        headers.insert(
            IDEMPOTENCY_HEADER,
            HeaderValue::from_str(&"k".repeat(256)).expect("ascii"),
        );
        assert!(idempotency_key(&headers).is_err_and(|e| e.contains("1 to 255")));
    }

    #[test]
    fn digests_separate_their_parts() {
        assert_ne!(hex_digest(&[b"ab", b"c"], 16), hex_digest(&[b"a", b"bc"], 16));
        assert_eq!(hex_digest(&[b"x"], 16).len(), 32);
    }
}
