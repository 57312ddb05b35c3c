//! The join token: read from `$DROVER_JOIN_TOKEN` or from an owner-only file (never a flag, so
//! it never shows in `ps`), never printed (its `Debug` is redacted), compared in constant time.

use std::path::Path;

use crate::error::AgentError;

/// Shortest join token accepted.
pub const MIN_TOKEN_LEN: usize = 16;

/// The bearer token the control plane presents on every `/v1` call.
#[derive(Clone, PartialEq, Eq)]
pub struct JoinToken(String);

impl std::fmt::Debug for JoinToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("JoinToken(<redacted>)")
    }
}

impl JoinToken {
    /// A token from text; `setting` names where it came from for the error.
    pub fn new(text: &str, setting: &str) -> Result<Self, AgentError> {
        let text = text.trim();
        if text.len() < MIN_TOKEN_LEN {
            return Err(AgentError::config(
                setting,
                format!("the join token must be at least {MIN_TOKEN_LEN} characters"),
            ));
        }
        if text.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return Err(AgentError::config(
                setting,
                "the join token must not hold spaces or control characters",
            ));
        }
        Ok(Self(text.to_string()))
    }

    /// Reads the token from `path`, which must not be readable by group or others.
    pub fn from_file(path: &Path, setting: &str) -> Result<Self, AgentError> {
        check_private(path, setting)?;
        let text = std::fs::read_to_string(path)
            .map_err(|e| AgentError::config(setting, format!("cannot read {}: {e}", path.display())))?;
        Self::new(&text, setting)
    }

    /// Whether `presented` is this token, in time independent of where they differ.
    pub fn matches(&self, presented: &str) -> bool {
        constant_time_eq(self.0.as_bytes(), presented.as_bytes())
    }
}

/// Compares without an early exit, so the time taken says nothing about the common prefix.
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    let mut diff = a.len() ^ b.len();
    for i in 0..a.len().max(b.len()) {
        let x = a.get(i).copied().unwrap_or(0);
        let y = b.get(i).copied().unwrap_or(0xff);
        diff |= usize::from(x ^ y);
    }
    std::hint::black_box(diff) == 0
}

/// Refuses a file that holds a secret and that users other than its owner may read, as ssh
/// refuses such a private key.
pub fn check_private(path: &Path, setting: &str) -> Result<(), AgentError> {
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(path)
        .map_err(|e| AgentError::config(setting, format!("cannot read {}: {e}", path.display())))?
        .permissions()
        .mode();
    if mode & 0o077 != 0 {
        return Err(AgentError::config(
            setting,
            format!(
                "{} holds a secret but its permissions are {:o}: other users may read it; run chmod 600 on it",
                path.display(),
                mode & 0o777
            ),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_compare_whole() {
        let token = JoinToken::new("0123456789abcdef", "t").unwrap();
        assert!(token.matches("0123456789abcdef"));
        assert!(!token.matches("0123456789abcde"));
        assert!(!token.matches("0123456789abcdeg"));
        assert!(!token.matches("0123456789abcdef0"));
        assert!(!token.matches(""));
        assert_eq!(format!("{token:?}"), "JoinToken(<redacted>)");
        assert!(JoinToken::new("short", "t").is_err());
    }

    #[test]
    fn a_token_file_others_may_read_is_refused() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("token");
        std::fs::write(&path, "0123456789abcdef\n").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        let e = JoinToken::from_file(&path, "--join-token-file").unwrap_err();
        assert!(e.to_string().contains("chmod 600"), "{e}");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert!(JoinToken::from_file(&path, "--join-token-file")
            .unwrap()
            .matches("0123456789abcdef"));
    }
}
