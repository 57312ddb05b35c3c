//! Errors of the API crate and their one mapping to HTTP.

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use drover_raft::MembershipError;
use thiserror::Error;

/// Seconds a client should wait before retrying when no leader is available.
pub const RETRY_AFTER_SECONDS: u32 = 1;

/// An error of an operations endpoint.
#[derive(Debug, Error)]
pub enum ApiError {
    /// The request is malformed.
    #[error("{0}")]
    BadRequest(String),
    /// No valid credential.
    #[error("{0}")]
    Unauthorized(String),
    /// The caller may not do this.
    #[error("{0}")]
    Forbidden(String),
    /// The request conflicts with the current state.
    #[error("{0}")]
    Conflict(String),
    /// No leader is available now; retry later.
    #[error("{0}")]
    Unavailable(String),
    /// A metrics registry error (start-up only).
    #[error("metrics: {0}")]
    Metrics(#[from] prometheus::Error),
}

impl From<MembershipError> for ApiError {
    fn from(error: MembershipError) -> Self {
        match error {
            MembershipError::Unavailable(message) => ApiError::Unavailable(message),
            MembershipError::Refused(message) => ApiError::Conflict(message),
        }
    }
}

impl ApiError {
    /// The HTTP status this error maps to.
    pub fn status(&self) -> StatusCode {
        match self {
            ApiError::BadRequest(_) => StatusCode::BAD_REQUEST,
            ApiError::Unauthorized(_) => StatusCode::UNAUTHORIZED,
            ApiError::Forbidden(_) => StatusCode::FORBIDDEN,
            ApiError::Conflict(_) => StatusCode::CONFLICT,
            ApiError::Unavailable(_) => StatusCode::SERVICE_UNAVAILABLE,
            ApiError::Metrics(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status = self.status();
        let body = serde_json::json!({ "error": self.to_string(), "code": status.as_u16() });
        let mut response = (status, axum::Json(body)).into_response();
        if status == StatusCode::SERVICE_UNAVAILABLE {
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(RETRY_AFTER_SECONDS));
        }
        response
    }
}
