//! Why an instance's spec is refused: the field to fix (as a JSON path) and what is wrong with
//! it, shared by the checks of programs ([`super::validate`]) and of pods ([`super::pod`]).

use crate::platform::error::PlatformError;

/// Why a spec is refused: the field to fix and what is wrong with it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {reason}")]
pub struct SpecError {
    /// The offending field, as a JSON path (`exec.argv`, `instances[3].env`).
    pub field: String,
    /// What is wrong with it.
    pub reason: String,
}

impl SpecError {
    pub(crate) fn new(field: impl Into<String>, reason: impl Into<String>) -> Self {
        Self {
            field: field.into(),
            reason: reason.into(),
        }
    }

    /// The same error with its field under `prefix` (`roles.web.`, `instances[0].`).
    pub fn under(self, prefix: &str) -> Self {
        Self {
            field: format!("{prefix}{}", self.field),
            reason: self.reason,
        }
    }
}

impl From<SpecError> for PlatformError {
    fn from(error: SpecError) -> Self {
        PlatformError::invalid(error.field, error.reason)
    }
}
