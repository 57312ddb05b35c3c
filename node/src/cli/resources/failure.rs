//! How a resource command fails and the exit code it ends with: the documented codes, and a
//! failure made from an HTTP status, from a request no node answered (in time), or from any
//! other error.

use std::process::ExitCode;

use reqwest::StatusCode;

use crate::cli::server::SendError;

/// Exit codes of the resource commands.
pub mod exit {
    /// Any other error.
    pub const ERROR: u8 = 1;
    /// The object does not exist.
    pub const NOT_FOUND: u8 = 3;
    /// The change conflicts with the current state.
    pub const CONFLICT: u8 = 4;
    /// No answer within `--timeout`.
    pub const TIMEOUT: u8 = 5;
    /// No node answered, or the cluster has no leader.
    pub const UNAVAILABLE: u8 = 6;
    /// No valid credential, or not allowed.
    pub const DENIED: u8 = 7;
}

/// A command that did not succeed, with its exit code.
#[derive(Debug)]
pub struct Failure {
    pub(in crate::cli) code: u8,
    pub(in crate::cli) message: String,
}

impl Failure {
    /// A command line that does not make sense (exit 2).
    pub(in crate::cli) fn usage(message: &str) -> Self {
        Self {
            code: 2,
            message: message.to_string(),
        }
    }

    /// The API's refusal, by its status; a caller not registered yet is told how to register.
    pub(in crate::cli) fn of_status(status: StatusCode, text: &str) -> Self {
        let code = match status {
            StatusCode::NOT_FOUND => exit::NOT_FOUND,
            StatusCode::CONFLICT => exit::CONFLICT,
            StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN => exit::DENIED,
            StatusCode::SERVICE_UNAVAILABLE => exit::UNAVAILABLE,
            StatusCode::REQUEST_TIMEOUT | StatusCode::GATEWAY_TIMEOUT => exit::TIMEOUT,
            _ => exit::ERROR,
        };
        let mut message = format!("{status}: {}", text.trim());
        if status == StatusCode::FORBIDDEN && text.contains("register first") {
            message.push_str(
                "; register with this same token (a static token in group operators, or an identity --operators lists, becomes an operator)",
            );
        }
        Self { code, message }
    }
}

impl From<SendError> for Failure {
    fn from(error: SendError) -> Self {
        let code = match error {
            SendError::Timeout(_) => exit::TIMEOUT,
            SendError::Unavailable(_) => exit::UNAVAILABLE,
        };
        Self {
            code,
            message: error.to_string(),
        }
    }
}

impl From<anyhow::Error> for Failure {
    fn from(error: anyhow::Error) -> Self {
        Self {
            code: exit::ERROR,
            message: format!("{error:#}"),
        }
    }
}

/// A command's exit code; a failure is said on stderr first.
pub(in crate::cli) fn finish(result: Result<(), Failure>) -> ExitCode {
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(failure) => {
            eprintln!("drover: {}", failure.message);
            ExitCode::from(failure.code)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unregistered_callers_are_told_how_to_register() {
        let failure = Failure::of_status(
            StatusCode::FORBIDDEN,
            r#"{"code":"forbidden","content":"register first: no user has the identity \"demo\" of \"drover-static\" (POST /api/1.0-beta/user)"}"#,
        );
        assert_eq!(failure.code, 7);
        assert!(
            failure.message.contains("register with this same token")
                && failure.message.contains("group operators"),
            "{}",
            failure.message
        );
    }

    #[test]
    fn statuses_map_to_the_documented_exit_codes() {
        for (status, code) in [
            (StatusCode::NOT_FOUND, 3),
            (StatusCode::CONFLICT, 4),
            (StatusCode::REQUEST_TIMEOUT, 5),
            (StatusCode::SERVICE_UNAVAILABLE, 6),
            (StatusCode::UNAUTHORIZED, 7),
            (StatusCode::FORBIDDEN, 7),
            (StatusCode::BAD_REQUEST, 1),
        ] {
            assert_eq!(Failure::of_status(status, "").code, code, "{status}");
        }
    }
}
