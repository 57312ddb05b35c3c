//! The crate's one error type. Refusals of API calls carry the HTTP status they answer with
//! ([`AgentError::status`]); the rest are start-up and I/O failures.

use std::path::PathBuf;

use drover_model::cluster::agent_api::Fence;

/// Everything that can go wrong in the agent.
#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    /// A malformed request: the message names the field or parameter to fix (400).
    #[error("{0}")]
    BadRequest(String),
    /// No or a wrong join token (401).
    #[error("{0}")]
    Unauthorized(String),
    /// An unknown instance, set or route (404).
    #[error("{0}")]
    NotFound(String),
    /// The request conflicts with what the agent holds, e.g. an id of another set (409).
    #[error("{0}")]
    Conflict(String),
    /// The call's fence is older than the highest this agent accepted (409).
    #[error("fenced: {offered} is older than {highest}, which this agent has already accepted")]
    Fenced {
        /// The fence the call carried.
        offered: Fence,
        /// The highest fence accepted so far.
        highest: Fence,
    },
    /// The change names a cluster object other than the one this agent is bound to (409).
    #[error("bound: this agent is driven by cluster object {bound}; cluster object {offered} may take it over only once {bound} is deregistered")]
    Bound {
        /// The cluster object the agent is bound to.
        bound: String,
        /// The cluster object the change named.
        offered: String,
    },
    /// The request body is larger than the agent accepts (413).
    #[error("{0}")]
    TooLarge(String),
    /// The desired instances do not fit the agent's capacity (422).
    #[error("{0}")]
    Unfit(String),
    /// The agent pretends to be unreachable (sim fault) (503).
    #[error("{0}")]
    Unavailable(String),
    /// A setting is invalid; the agent does not start.
    #[error("invalid setting {setting}: {reason}")]
    Config {
        /// The flag (or environment variable) to fix.
        setting: String,
        /// What is wrong with it.
        reason: String,
    },
    /// `exec` instances cannot be confined and the operator did not allow them unconfined; the
    /// agent does not start.
    #[error("{0}; run the agent where it may create cgroups (as root, or in a cgroup delegated to it), or pass --allow-unconfined to run instances without limits")]
    Unconfinable(String),
    /// The state file cannot be understood; the agent refuses to start rather than forget
    /// the instances it runs.
    #[error("state file {path} is corrupt ({reason}); repair or move it away to start with no instances")]
    Corrupt {
        /// The state file.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// Reading or writing a file failed.
    #[error("{what} {path}: {source}")]
    Io {
        /// What was being done.
        what: &'static str,
        /// The file or directory.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// Anything else that is the agent's fault (500).
    #[error("{0}")]
    Internal(String),
}

impl AgentError {
    /// A configuration error naming `setting`.
    pub fn config(setting: &str, reason: impl Into<String>) -> Self {
        Self::Config {
            setting: setting.to_string(),
            reason: reason.into(),
        }
    }

    /// An I/O error on `path` while doing `what`.
    pub fn io(what: &'static str, path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Self::Io {
            what,
            path: path.into(),
            source,
        }
    }

    /// The HTTP status this error answers with.
    pub fn status(&self) -> u16 {
        match self {
            Self::BadRequest(_) => 400,
            Self::Unauthorized(_) => 401,
            Self::NotFound(_) => 404,
            Self::Conflict(_) | Self::Fenced { .. } | Self::Bound { .. } => 409,
            Self::TooLarge(_) => 413,
            Self::Unfit(_) => 422,
            Self::Unavailable(_) => 503,
            Self::Config { .. }
            | Self::Unconfinable(_)
            | Self::Corrupt { .. }
            | Self::Io { .. }
            | Self::Internal(_) => 500,
        }
    }
}
