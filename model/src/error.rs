//! Domain errors: the outcomes of a command that the state machine refuses. They are part of the
//! replicated result, so they must be deterministic.

use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::object::ObjectKey;
use crate::platform::error::PlatformError;
use crate::pool::PoolError;

/// Why a command was refused.
#[derive(Debug, Clone, PartialEq, Eq, Error, Serialize, Deserialize)]
pub enum DomainError {
    /// The object does not exist.
    #[error("{key} not found")]
    NotFound {
        /// The missing object.
        key: ObjectKey,
    },
    /// An object of that name already exists.
    #[error("{key} already exists")]
    AlreadyExists {
        /// The existing object.
        key: ObjectKey,
    },
    /// A precondition (resource version or uid) does not hold.
    #[error("{key}: {message}")]
    Conflict {
        /// The object whose version moved on.
        key: ObjectKey,
        /// What did not match.
        message: String,
    },
    /// A pool command was refused.
    #[error(transparent)]
    Pool(#[from] PoolError),
    /// A platform command was refused.
    #[error(transparent)]
    Platform(#[from] PlatformError),
    /// A Krake command was refused.
    #[error(transparent)]
    Krake(#[from] crate::krake::KrakeError),
    /// The request is malformed; `field` names what to fix.
    #[error("{field}: {message}")]
    Invalid {
        /// JSON path of the offending field.
        field: String,
        /// What is wrong with it.
        message: String,
    },
}
