//! Why the platform refused a request: part of the replicated result, so deterministic.

use serde::{Deserialize, Serialize};
use thiserror::Error;

/// Why the platform refused a request. Part of the replicated result, so deterministic.
#[derive(Debug, Clone, PartialEq, Eq, Error, Serialize, Deserialize)]
pub enum PlatformError {
    /// The request is malformed; `field` names what to fix.
    #[error("{field}: {message}")]
    Invalid {
        /// JSON path of the offending field.
        field: String,
        /// What is wrong with it.
        message: String,
    },
    /// The caller's identity is not a registered user.
    #[error("register first: no user has the identity {subject:?} of {issuer:?} (POST /api/1.0-beta/user)")]
    Unregistered {
        /// Issuer of the caller's credential.
        issuer: String,
        /// Subject of the caller's credential.
        subject: String,
    },
    /// The caller may not do this.
    #[error("{0}")]
    Forbidden(String),
    /// The thing named does not exist.
    #[error("{0}")]
    NotFound(String),
    /// The request conflicts with the current state.
    #[error("{0}")]
    Conflict(String),
}

impl PlatformError {
    /// An invalid field.
    pub fn invalid(field: impl Into<String>, message: impl Into<String>) -> Self {
        PlatformError::Invalid {
            field: field.into(),
            message: message.into(),
        }
    }
}
