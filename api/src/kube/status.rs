//! Kubernetes `Status` error bodies and the mapping from domain and store errors to them.

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use drover_model::{DomainError, ObjectKey, ObjectKind};
use drover_raft::{ReadError, WriteError};
use serde_json::{json, Value};

use crate::error::RETRY_AFTER_SECONDS;

/// A failed Kubernetes-dialect request, rendered as a `Status` object.
#[derive(Debug, Clone)]
pub struct KubeError {
    code: u16,
    reason: &'static str,
    message: String,
    details: Option<Value>,
}

fn details(kind: ObjectKind, name: &str) -> Value {
    json!({ "name": name, "group": kind.group(), "kind": kind.plural() })
}

impl KubeError {
    /// `400 BadRequest`.
    pub fn bad_request(message: impl Into<String>) -> Self {
        Self {
            code: 400,
            reason: "BadRequest",
            message: message.into(),
            details: None,
        }
    }

    /// `401 Unauthorized`.
    pub fn unauthorized(message: impl Into<String>) -> Self {
        Self {
            code: 401,
            reason: "Unauthorized",
            message: message.into(),
            details: None,
        }
    }

    /// `403 Forbidden`.
    pub fn forbidden(message: impl Into<String>) -> Self {
        Self {
            code: 403,
            reason: "Forbidden",
            message: message.into(),
            details: None,
        }
    }

    /// `404 NotFound` for an object.
    pub fn not_found(kind: ObjectKind, name: &str) -> Self {
        Self {
            code: 404,
            reason: "NotFound",
            message: format!("{kind} {name:?} not found"),
            details: Some(details(kind, name)),
        }
    }

    /// `404 NotFound` for a path this server does not serve.
    pub fn no_route(path: &str) -> Self {
        Self {
            code: 404,
            reason: "NotFound",
            message: format!("the server could not find the requested resource ({path})"),
            details: None,
        }
    }

    /// `422 Invalid`.
    pub fn invalid(kind: ObjectKind, name: &str, field: &str, message: &str) -> Self {
        Self {
            code: 422,
            reason: "Invalid",
            message: format!(
                "{}.{} {name:?} is invalid: {field}: Invalid value: {message}",
                kind.kind_name(),
                kind.group()
            ),
            details: Some(json!({
                "name": name, "group": kind.group(), "kind": kind.kind_name(),
                "causes": [{ "reason": "FieldValueInvalid", "message": message, "field": field }],
            })),
        }
    }

    /// `415 UnsupportedMediaType`.
    pub fn unsupported_media_type(message: impl Into<String>) -> Self {
        Self {
            code: 415,
            reason: "UnsupportedMediaType",
            message: message.into(),
            details: None,
        }
    }

    /// `504 Timeout` for a resource version this server has not reached, as the Kubernetes
    /// API server answers one (`Too large resource version`).
    pub fn too_large_resource_version(requested: u64, current: u64) -> Self {
        Self {
            code: 504,
            reason: "Timeout",
            message: format!("Too large resource version: {requested}, current: {current}"),
            details: Some(json!({
                "causes": [{ "reason": "ResourceVersionTooLarge", "message": "Too large resource version" }],
                "retryAfterSeconds": 1,
            })),
        }
    }

    /// `429 TooManyRequests`.
    pub fn too_many_requests(message: impl Into<String>) -> Self {
        Self {
            code: 429,
            reason: "TooManyRequests",
            message: message.into(),
            details: Some(json!({ "retryAfterSeconds": RETRY_AFTER_SECONDS })),
        }
    }

    /// `503 ServiceUnavailable` with `Retry-After`.
    pub fn unavailable(message: impl Into<String>) -> Self {
        Self {
            code: 503,
            reason: "ServiceUnavailable",
            message: message.into(),
            details: Some(json!({ "retryAfterSeconds": RETRY_AFTER_SECONDS })),
        }
    }

    /// `500 InternalError`: a bug, never an input problem.
    pub fn internal(message: impl Into<String>) -> Self {
        Self {
            code: 500,
            reason: "InternalError",
            message: message.into(),
            details: None,
        }
    }

    /// Maps a refused command.
    pub fn from_domain(error: DomainError) -> Self {
        match error {
            DomainError::NotFound { key } => Self::not_found(key.kind, &key.name),
            DomainError::AlreadyExists { key } => Self {
                code: 409,
                reason: "AlreadyExists",
                message: format!("{} {:?} already exists", key.kind, key.name),
                details: Some(details(key.kind, &key.name)),
            },
            DomainError::Conflict { key, message } => Self::conflict(&key, &message),
            DomainError::Pool(error) => {
                Self::internal(format!("a pool error reached the lease API: {error}"))
            }
            DomainError::Platform(error) => {
                Self::internal(format!("a platform error reached the lease API: {error}"))
            }
            DomainError::Krake(error) => {
                Self::internal(format!("a Krake error reached the lease API: {error}"))
            }
            DomainError::Invalid { field, message } => Self {
                code: 422,
                reason: "Invalid",
                message: format!("{field}: Invalid value: {message}"),
                details: Some(
                    json!({ "causes": [{ "reason": "FieldValueInvalid", "message": message, "field": field }] }),
                ),
            },
        }
    }

    fn conflict(key: &ObjectKey, message: &str) -> Self {
        Self {
            code: 409,
            reason: "Conflict",
            message: format!(
                "Operation cannot be fulfilled on {} {:?}: {message}",
                key.kind, key.name
            ),
            details: Some(details(key.kind, &key.name)),
        }
    }

    /// The HTTP status code.
    pub fn code(&self) -> u16 {
        self.code
    }

    /// The `Status` object.
    pub fn body(&self) -> Value {
        let mut body = json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        });
        if let Some(details) = &self.details {
            body["details"] = details.clone();
        }
        body
    }
}

impl From<WriteError> for KubeError {
    fn from(error: WriteError) -> Self {
        KubeError::unavailable(error.to_string())
    }
}

impl From<ReadError> for KubeError {
    fn from(error: ReadError) -> Self {
        KubeError::unavailable(error.to_string())
    }
}

impl IntoResponse for KubeError {
    fn into_response(self) -> Response {
        let status = StatusCode::from_u16(self.code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let mut response = (status, axum::Json(self.body())).into_response();
        if self.code == 503 {
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(RETRY_AFTER_SECONDS));
        }
        response
    }
}
