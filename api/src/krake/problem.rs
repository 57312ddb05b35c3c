//! Krake's errors as it puts them on the wire (`krake.md` §2.6): RFC 7807 problem documents,
//! `Content-Type: application/problem+json; charset=utf-8`, every field present (null when
//! unset), `title` the name of Krake's `HttpProblemTitle` and its slug in `type`; errors without
//! a Krake title (401, 403, 404 of an unknown route, 415, 422) have `type` `about:blank`, a null
//! `title`, and for the HTTP ones the detail `"<status>: <reason>"`.

use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use drover_model::krake::KrakeError;
use drover_raft::{ReadError, WriteError};
use serde_json::json;

/// Where Krake's problem titles are explained (Krake's default `docs.problem_base_url`).
pub const PROBLEM_BASE_URL: &str =
    "https://rak-n-rok.readthedocs.io/projects/krake/en/latest/user/problem.html";

/// Krake's problem titles.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Title {
    /// `404`: no such object.
    NotFoundError,
    /// `409`: the object changed while it was written.
    TransactionError,
    /// `400`/`409`: the update is not allowed.
    UpdateError,
    /// `409`: the name is taken.
    ResourceAlreadyExists,
}

impl Title {
    /// The enum name, as `title` shows it.
    pub fn name(self) -> &'static str {
        match self {
            Title::NotFoundError => "NOT_FOUND_ERROR",
            Title::TransactionError => "TRANSACTION_ERROR",
            Title::UpdateError => "UPDATE_ERROR",
            Title::ResourceAlreadyExists => "RESOURCE_ALREADY_EXISTS",
        }
    }

    /// The slug, as `type` ends.
    pub fn slug(self) -> &'static str {
        match self {
            Title::NotFoundError => "not-found-error",
            Title::TransactionError => "transaction-error",
            Title::UpdateError => "update-error",
            Title::ResourceAlreadyExists => "resource-already-exists",
        }
    }
}

/// An error answer of the Krake dialect.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// The HTTP status.
    pub status: StatusCode,
    /// Krake's title, when the error has one.
    pub title: Option<Title>,
    /// What went wrong and what to do.
    pub detail: String,
}

impl Problem {
    /// An error with a Krake title.
    pub fn titled(status: StatusCode, title: Title, detail: impl Into<String>) -> Self {
        Self {
            status,
            title: Some(title),
            detail: detail.into(),
        }
    }

    /// An error without a title, with its own detail.
    pub fn plain(status: StatusCode, detail: impl Into<String>) -> Self {
        Self {
            status,
            title: None,
            detail: detail.into(),
        }
    }

    /// An HTTP error as aiohttp words it: `"<status>: <reason>"`.
    pub fn http(status: StatusCode) -> Self {
        let reason = status.canonical_reason().unwrap_or("Error");
        Self::plain(status, format!("{}: {reason}", status.as_u16()))
    }

    /// `422` with a detail in the shape of marshmallow's messages: `{'field': {'sub': ['why']}}`.
    pub fn invalid(field: &str, message: &str) -> Self {
        Self::plain(
            StatusCode::UNPROCESSABLE_ENTITY,
            marshmallow_messages(field, message),
        )
    }

    /// `404 NOT_FOUND_ERROR` for `name` of `kind` (Krake's words: `'Kind' 'name' does not exist
    /// in namespace 'ns'`, `None` for global kinds).
    pub fn not_found(kind: &str, name: &str, namespace: Option<&str>) -> Self {
        let namespace = namespace.map_or("None".to_string(), python_str);
        Self::titled(
            StatusCode::NOT_FOUND,
            Title::NotFoundError,
            format!(
                "{} {} does not exist in namespace {namespace}",
                python_str(kind),
                python_str(name)
            ),
        )
    }
}

/// A string as Python's `repr` shows it (single quotes unless the text has one).
pub fn python_str(text: &str) -> String {
    if text.contains('\'') && !text.contains('"') {
        format!("\"{text}\"")
    } else {
        format!("'{}'", text.replace('\\', "\\\\").replace('\'', "\\'"))
    }
}

/// `a.b` and a message as marshmallow nests them: `{'a': {'b': ['message']}}`.
fn marshmallow_messages(field: &str, message: &str) -> String {
    let mut text = format!("[{}]", python_str(message));
    for part in field.rsplit('.') {
        text = format!("{{{}: {text}}}", python_str(part));
    }
    text
}

impl IntoResponse for Problem {
    fn into_response(self) -> Response {
        let body = json!({
            "type": self.title.map_or("about:blank".to_string(), |t| format!("{PROBLEM_BASE_URL}#{}", t.slug())),
            "title": self.title.map(Title::name),
            "status": self.status.as_u16(),
            "detail": self.detail,
            "instance": null,
        });
        (
            self.status,
            [(header::CONTENT_TYPE, "application/problem+json; charset=utf-8")],
            body.to_string(),
        )
            .into_response()
    }
}

impl From<KrakeError> for Problem {
    fn from(error: KrakeError) -> Self {
        match error {
            KrakeError::Invalid { field, message } => Problem::invalid(&field, &message),
            KrakeError::NotFound(detail) => {
                Problem::titled(StatusCode::NOT_FOUND, Title::NotFoundError, detail)
            }
            KrakeError::AlreadyExists(detail) => {
                Problem::titled(StatusCode::CONFLICT, Title::ResourceAlreadyExists, detail)
            }
            KrakeError::Transaction(detail) => {
                Problem::titled(StatusCode::CONFLICT, Title::TransactionError, detail)
            }
            KrakeError::BadToken(detail) => {
                Problem::plain(StatusCode::UNAUTHORIZED, format!("401: {detail}"))
            }
            KrakeError::NothingToDo(detail) => {
                Problem::titled(StatusCode::BAD_REQUEST, Title::UpdateError, detail)
            }
            KrakeError::Finalizers(detail) | KrakeError::Busy(detail) => {
                Problem::titled(StatusCode::CONFLICT, Title::UpdateError, detail)
            }
        }
    }
}

impl From<WriteError> for Problem {
    fn from(error: WriteError) -> Self {
        Problem::plain(StatusCode::SERVICE_UNAVAILABLE, format!("503: {error}; retry"))
    }
}

impl From<ReadError> for Problem {
    fn from(error: ReadError) -> Self {
        Problem::plain(StatusCode::SERVICE_UNAVAILABLE, format!("503: {error}; retry"))
    }
}
