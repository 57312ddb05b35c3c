//! Why a Krake command was refused; part of the replicated result, so deterministic. Each
//! variant is one of Krake's problem titles (or a `422`).

use serde::{Deserialize, Serialize};
use thiserror::Error;

/// Why a Krake command was refused.
#[derive(Debug, Clone, PartialEq, Eq, Error, Serialize, Deserialize)]
pub enum KrakeError {
    /// A field breaks Krake's rules (`422`).
    #[error("{field}: {message}")]
    Invalid {
        /// The offending field's path.
        field: String,
        /// What is wrong with it.
        message: String,
    },
    /// No such object (`404 NOT_FOUND_ERROR`).
    #[error("{0}")]
    NotFound(String),
    /// The name is taken (`409 RESOURCE_ALREADY_EXISTS`).
    #[error("{0}")]
    AlreadyExists(String),
    /// The object changed since it was read (`409 TRANSACTION_ERROR`).
    #[error("{0}")]
    Transaction(String),
    /// The change conflicts with what else the object is to Drover (a cluster that services run
    /// on, an agent endpoint another cluster has) (`409 UPDATE_ERROR`).
    #[error("{0}")]
    Busy(String),
    /// Finalizers were added to an object in deletion (`409 UPDATE_ERROR`).
    #[error("{0}")]
    Finalizers(String),
    /// A hook call without the application's token (`401`, as Krake's bare `HTTPUnauthorized`).
    #[error("{0}")]
    BadToken(String),
    /// A subresource call that has nothing to do (`400 UPDATE_ERROR`).
    #[error("{0}")]
    NothingToDo(String),
}

impl KrakeError {
    /// An invalid field.
    pub fn invalid(field: impl Into<String>, message: impl Into<String>) -> Self {
        KrakeError::Invalid {
            field: field.into(),
            message: message.into(),
        }
    }
}
