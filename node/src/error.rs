//! Errors of starting and running a node.

use thiserror::Error;

/// Why a node could not start or stopped abnormally.
#[derive(Debug, Error)]
pub enum NodeError {
    /// A setting is missing or invalid; nothing was started.
    #[error("invalid setting {setting}: {message}")]
    Config {
        /// The setting's flag name.
        setting: String,
        /// What is wrong.
        message: String,
    },
    /// A listener could not be bound or served.
    #[error("listener {addr}: {source}")]
    Listen {
        /// The address.
        addr: String,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The replicated store failed.
    #[error(transparent)]
    Store(#[from] drover_raft::StoreError),
    /// The API could not be set up.
    #[error(transparent)]
    Api(#[from] drover_api::error::ApiError),
    /// The actor system could not be set up.
    #[error(transparent)]
    Actors(#[from] drover_actors::ActorsError),
}

/// An error with its causes, `: `-joined (reqwest's own message is often just "error sending
/// request", the cause being in its sources).
pub fn with_causes(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}
