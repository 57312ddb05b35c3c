//! The `Idempotency-Key` header every dialect honours on writes.

use axum::http::HeaderMap;

/// The header's name.
pub const IDEMPOTENCY_HEADER: &str = "idempotency-key";

/// The key of a request, if it sent one; an error message when the header is unusable.
pub fn idempotency_key(headers: &HeaderMap) -> Result<Option<String>, &'static str> {
    match headers.get(IDEMPOTENCY_HEADER) {
        None => Ok(None),
        Some(value) => {
            let key = value
                .to_str()
                .map_err(|_| "Idempotency-Key must be visible ASCII")?;
            if key.is_empty() || key.len() > 255 {
                return Err("Idempotency-Key must be 1 to 255 characters");
            }
            Ok(Some(key.to_string()))
        }
    }
}
