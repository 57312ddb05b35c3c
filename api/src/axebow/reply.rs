//! The Axebow wire conventions: every 2xx body is `{data, events}`, every error is
//! `{code, content}` with a code from a small fixed set, and JSON bodies are read with answers
//! that say what to fix (`400`, `413`, `415`).

use axum::body::Bytes;
use axum::extract::{FromRequest, Request};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use drover_model::platform::PlatformError;
use drover_model::DomainError;
use drover_raft::{ReadError, WriteError};
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;
use utoipa::ToSchema;

use crate::auth::AuthError;
use crate::error::RETRY_AFTER_SECONDS;

/// A message attached to a successful answer.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Event {
    /// What happened.
    pub message: String,
    /// `ERROR`, `WARNING` or `INFO`.
    pub level: EventLevel,
}

/// Severity of an event.
#[derive(Debug, Clone, Copy, Serialize, ToSchema)]
#[serde(rename_all = "UPPERCASE")]
pub enum EventLevel {
    /// Something failed.
    Error,
    /// Something needs attention.
    Warning,
    /// For information.
    Info,
}

/// A successful answer.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Envelope<T> {
    /// The call-specific result.
    pub data: T,
    /// Messages about the call.
    pub events: Vec<Event>,
}

/// A successful answer without data.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct Empty {
    /// Messages about the call.
    pub events: Vec<Event>,
}

impl<T: Serialize> IntoResponse for Envelope<T> {
    fn into_response(self) -> Response {
        Json(self).into_response()
    }
}

impl IntoResponse for Empty {
    fn into_response(self) -> Response {
        Json(self).into_response()
    }
}

/// Wraps data in the envelope.
pub fn ok<T>(data: T) -> Envelope<T> {
    Envelope {
        data,
        events: Vec::new(),
    }
}

/// An answer with nothing but (possibly) events.
pub fn done() -> Empty {
    Empty { events: Vec::new() }
}

/// The error codes of the API (the `code` field of every error body).
pub mod codes {
    /// 400: the request is malformed; `content.field` names what to fix.
    pub const BAD_REQUEST: &str = "BAD_REQUEST";
    /// 401: no credential, or one that was refused.
    pub const UNAUTHENTICATED: &str = "UNAUTHENTICATED";
    /// 403: the caller may not do this.
    pub const FORBIDDEN: &str = "FORBIDDEN";
    /// 404: no such object or route.
    pub const NOT_FOUND: &str = "NOT_FOUND";
    /// 405: the path is served, but not with this method.
    pub const METHOD_NOT_ALLOWED: &str = "METHOD_NOT_ALLOWED";
    /// 409: the request conflicts with the current state.
    pub const CONFLICT: &str = "CONFLICT";
    /// 413: the body is larger than the limit.
    pub const PAYLOAD_TOO_LARGE: &str = "PAYLOAD_TOO_LARGE";
    /// 415: the body is not JSON.
    pub const UNSUPPORTED_MEDIA: &str = "UNSUPPORTED_MEDIA";
    /// 429: too many requests from this caller; retry after `Retry-After` seconds.
    pub const RATE_LIMITED: &str = "RATE_LIMITED";
    /// 500: a fault of the server; the request may be retried.
    pub const INTERNAL: &str = "INTERNAL";
    /// 503: no leader is available now; retry after `Retry-After` seconds.
    pub const UNAVAILABLE: &str = "UNAVAILABLE";
    /// 504: the write was not confirmed in time and may or may not have been applied.
    pub const TIMEOUT: &str = "TIMEOUT";
    /// 429 for a watch: the node serves as many watches as it may.
    pub const TOO_MANY_WATCHES: &str = "TOO_MANY_WATCHES";
    /// In a watch stream: the version it resumes from is too old; list again.
    pub const GONE: &str = "GONE";
}

/// The body of every error answer.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ErrorBody {
    /// One of the documented codes.
    pub code: String,
    /// `{message, field?}`.
    pub content: ErrorContent,
}

/// What an error says.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ErrorContent {
    /// What went wrong and what to do about it.
    pub message: String,
    /// The offending field, for `BAD_REQUEST`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
}

/// An error answer.
#[derive(Debug, Clone)]
pub struct AxebowError {
    status: StatusCode,
    code: &'static str,
    message: String,
    field: Option<String>,
}

impl AxebowError {
    /// An error with a status, code and message.
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        Self {
            status,
            code,
            message: message.into(),
            field: None,
        }
    }

    /// `400` naming a field.
    pub fn invalid(field: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            field: Some(field.into()),
            ..Self::new(StatusCode::BAD_REQUEST, codes::BAD_REQUEST, message)
        }
    }

    /// `422` naming a field: a well-formed request the operator's policy refuses.
    pub fn refused(field: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            field: Some(field.into()),
            ..Self::new(StatusCode::UNPROCESSABLE_ENTITY, codes::BAD_REQUEST, message)
        }
    }

    /// `500`: a fault of the server.
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(StatusCode::INTERNAL_SERVER_ERROR, codes::INTERNAL, message)
    }

    /// `404`.
    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(StatusCode::NOT_FOUND, codes::NOT_FOUND, message)
    }
}

impl IntoResponse for AxebowError {
    fn into_response(self) -> Response {
        let body = ErrorBody {
            code: self.code.to_string(),
            content: ErrorContent {
                message: self.message,
                field: self.field,
            },
        };
        let mut response = (self.status, Json(body)).into_response();
        if matches!(
            self.status,
            StatusCode::SERVICE_UNAVAILABLE | StatusCode::TOO_MANY_REQUESTS
        ) {
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(RETRY_AFTER_SECONDS));
        }
        response
    }
}

impl From<AuthError> for AxebowError {
    fn from(error: AuthError) -> Self {
        Self::new(
            StatusCode::UNAUTHORIZED,
            codes::UNAUTHENTICATED,
            error.to_string(),
        )
    }
}

impl From<PlatformError> for AxebowError {
    fn from(error: PlatformError) -> Self {
        let message = error.to_string();
        match error {
            PlatformError::Invalid { field, message } => Self::invalid(field, message),
            PlatformError::Unregistered { .. } | PlatformError::Forbidden(_) => {
                Self::new(StatusCode::FORBIDDEN, codes::FORBIDDEN, message)
            }
            PlatformError::NotFound(_) => Self::not_found(message),
            PlatformError::Conflict(_) => Self::new(StatusCode::CONFLICT, codes::CONFLICT, message),
        }
    }
}

impl From<DomainError> for AxebowError {
    fn from(error: DomainError) -> Self {
        match error {
            DomainError::Platform(error) => error.into(),
            DomainError::Invalid { field, message } => Self::invalid(field, message),
            other => Self::new(StatusCode::CONFLICT, codes::CONFLICT, other.to_string()),
        }
    }
}

impl From<WriteError> for AxebowError {
    fn from(error: WriteError) -> Self {
        match error {
            WriteError::MaybeCommitted(_) => {
                Self::new(StatusCode::GATEWAY_TIMEOUT, codes::TIMEOUT, error.to_string())
            }
            WriteError::Unavailable(_) | WriteError::ShuttingDown => Self::new(
                StatusCode::SERVICE_UNAVAILABLE,
                codes::UNAVAILABLE,
                error.to_string(),
            ),
        }
    }
}

impl From<ReadError> for AxebowError {
    fn from(error: ReadError) -> Self {
        Self::new(
            StatusCode::SERVICE_UNAVAILABLE,
            codes::UNAVAILABLE,
            error.to_string(),
        )
    }
}

/// A JSON request body. An empty body reads as `{}`; a body that is not JSON gets `415`, one
/// over the size limit `413`, one that does not fit the schema `400` naming the field.
#[derive(Debug)]
pub struct Body<T>(pub T);

impl<S, T> FromRequest<S> for Body<T>
where
    S: Send + Sync,
    T: DeserializeOwned,
{
    type Rejection = AxebowError;

    async fn from_request(request: Request, state: &S) -> Result<Self, Self::Rejection> {
        let content_type = request
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        let bytes = Bytes::from_request(request, state).await.map_err(|rejection| {
            if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
                AxebowError::new(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    codes::PAYLOAD_TOO_LARGE,
                    rejection.body_text(),
                )
            } else {
                AxebowError::invalid("body", rejection.body_text())
            }
        })?;
        let bytes: &[u8] = if bytes.iter().all(u8::is_ascii_whitespace) {
            b"{}"
        } else {
            &bytes
        };
        let is_json = content_type.as_deref().is_some_and(|ct| {
            let mime = ct
                .split(';')
                .next()
                .unwrap_or_default()
                .trim()
                .to_ascii_lowercase();
            mime == "application/json" || mime.ends_with("+json")
        });
        if bytes != b"{}" && !is_json {
            return Err(AxebowError::new(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                codes::UNSUPPORTED_MEDIA,
                "send the body as Content-Type: application/json",
            ));
        }
        let value: Value = serde_json::from_slice(bytes)
            .map_err(|e| AxebowError::invalid("body", format!("not valid JSON: {e}")))?;
        serde_json::from_value(value)
            .map(Body)
            .map_err(|e| AxebowError::invalid("body", e.to_string()))
    }
}

/// Query parameters; ones that do not parse get `400` naming the problem.
#[derive(Debug)]
pub struct Params<T>(pub T);

impl<S, T> axum::extract::FromRequestParts<S> for Params<T>
where
    S: Send + Sync,
    T: DeserializeOwned,
{
    type Rejection = AxebowError;

    async fn from_request_parts(
        parts: &mut axum::http::request::Parts,
        _state: &S,
    ) -> Result<Self, Self::Rejection> {
        axum::extract::Query::<T>::try_from_uri(&parts.uri)
            .map(|query| Params(query.0))
            .map_err(|e| AxebowError::invalid("query", e.body_text()))
    }
}

/// A `405` for a method a platform route does not serve.
pub async fn wrong_method(method: axum::http::Method, uri: axum::http::Uri) -> AxebowError {
    AxebowError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        codes::METHOD_NOT_ALLOWED,
        format!(
            "{method} is not served on {}; see /api/1.0-beta/openapi.json",
            uri.path()
        ),
    )
}

/// A `404` for a path no route matches (`/api/2.0/...` among them).
pub async fn no_route(uri: axum::http::Uri) -> AxebowError {
    let path = uri.path();
    let message = if path.starts_with("/api/") && !path.starts_with("/api/1.0-beta/") {
        format!("{path}: this platform serves API version 1.0-beta only (/api/1.0-beta/...)")
    } else {
        format!("{path}: no such endpoint")
    };
    AxebowError::not_found(message)
}
