//! The join token: read from `$DROVER_JOIN_TOKEN` or from an owner-only file (never a flag, so
//! it never shows in `ps`), never printed (its `Debug` is redacted), compared in constant time.
//! The file may hold several tokens, one per line, and is read again when it changes (at most
//! once a second): a token is rotated without a restart — add the new line, give the cluster
//! the new token, remove the old line — and instances keep running throughout.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant, SystemTime};

use crate::error::AgentError;

/// Shortest join token accepted.
pub const MIN_TOKEN_LEN: usize = 16;

/// Most tokens a file may hold at once (one rotation needs two).
pub const MAX_TOKENS: usize = 8;

/// How often the token file's time is looked at.
const RELOAD_CHECK: Duration = Duration::from_secs(1);

/// The bearer tokens the control plane may present on a `/v1` call.
#[derive(Clone)]
pub struct JoinToken(Arc<Tokens>);

struct Tokens {
    current: RwLock<Vec<String>>,
    /// The file they came from, if any.
    file: Option<TokenFile>,
}

/// The token file: its path, the setting that named it, and (locked) its time when read and
/// when that was last looked at.
struct TokenFile {
    path: PathBuf,
    setting: String,
    stamp: Mutex<(Option<SystemTime>, Instant)>,
}

impl std::fmt::Debug for JoinToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("JoinToken(<redacted>)")
    }
}

impl PartialEq for JoinToken {
    fn eq(&self, other: &Self) -> bool {
        self.tokens() == other.tokens()
    }
}

impl Eq for JoinToken {}

/// The tokens of `text`, one per non-empty line; `setting` names where they came from.
fn parse(text: &str, setting: &str) -> Result<Vec<String>, AgentError> {
    let tokens: Vec<String> = text
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty())
        .map(str::to_string)
        .collect();
    if tokens.is_empty() || tokens.len() > MAX_TOKENS {
        return Err(AgentError::config(
            setting,
            format!("1 to {MAX_TOKENS} join tokens, one per line"),
        ));
    }
    for token in &tokens {
        if token.len() < MIN_TOKEN_LEN {
            return Err(AgentError::config(
                setting,
                format!("the join token must be at least {MIN_TOKEN_LEN} characters"),
            ));
        }
        if token.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return Err(AgentError::config(
                setting,
                "the join token must not hold spaces or control characters",
            ));
        }
    }
    Ok(tokens)
}

fn modified(path: &Path) -> Option<SystemTime> {
    std::fs::metadata(path).and_then(|m| m.modified()).ok()
}

impl JoinToken {
    /// A token from text; `setting` names where it came from for the error.
    pub fn new(text: &str, setting: &str) -> Result<Self, AgentError> {
        Ok(Self(Arc::new(Tokens {
            current: RwLock::new(parse(text, setting)?),
            file: None,
        })))
    }

    /// Reads the tokens from `path`, which must not be readable by group or others, and
    /// reads it again whenever it changes.
    pub fn from_file(path: &Path, setting: &str) -> Result<Self, AgentError> {
        let (tokens, stamp) = read_file(path, setting)?;
        Ok(Self(Arc::new(Tokens {
            current: RwLock::new(tokens),
            file: Some(TokenFile {
                path: path.to_path_buf(),
                setting: setting.to_string(),
                stamp: Mutex::new((stamp, Instant::now())),
            }),
        })))
    }

    fn tokens(&self) -> Vec<String> {
        self.0.current.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Reads the file again if it changed; a file that became unreadable, readable by others
    /// or empty is ignored (the tokens stay as they were), and said in the log.
    fn reload_if_changed(&self) {
        let Some(TokenFile { path, setting, stamp }) = &self.0.file else {
            return;
        };
        let mut stamp = stamp.lock().unwrap_or_else(|p| p.into_inner());
        if stamp.1.elapsed() < RELOAD_CHECK {
            return;
        }
        stamp.1 = Instant::now();
        let now = modified(path);
        if now == stamp.0 {
            return;
        }
        match read_file(path, setting) {
            Ok((tokens, read_at)) => {
                *self.0.current.write().unwrap_or_else(|p| p.into_inner()) = tokens;
                stamp.0 = read_at;
                tracing::info!(file = %path.display(), "join tokens read again");
            }
            Err(error) => {
                stamp.0 = now;
                tracing::warn!(file = %path.display(), %error, "the join token file changed but cannot be used; the tokens stay");
            }
        }
    }

    /// Whether `presented` is one of the tokens, in time independent of where they differ.
    pub fn matches(&self, presented: &str) -> bool {
        self.reload_if_changed();
        let tokens = self.0.current.read().unwrap_or_else(|p| p.into_inner());
        tokens.iter().fold(false, |found, token| {
            constant_time_eq(token.as_bytes(), presented.as_bytes()) | found
        })
    }
}

fn read_file(path: &Path, setting: &str) -> Result<(Vec<String>, Option<SystemTime>), AgentError> {
    check_private(path, setting)?;
    let stamp = modified(path);
    let text = std::fs::read_to_string(path)
        .map_err(|e| AgentError::config(setting, format!("cannot read {}: {e}", path.display())))?;
    Ok((parse(&text, setting)?, stamp))
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
    fn a_token_file_is_read_again_when_it_changes_and_may_hold_two_tokens() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("token");
        std::fs::write(&path, "old-token-0123456789\n").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        let token = JoinToken::from_file(&path, "--join-token-file").unwrap();
        assert!(token.matches("old-token-0123456789"));
        // A rotation: both for a while, then the new one only.
        let later = std::time::SystemTime::now() + Duration::from_secs(5);
        std::fs::write(&path, "old-token-0123456789\nnew-token-0123456789\n").unwrap();
        std::fs::File::options()
            .write(true)
            .open(&path)
            .unwrap()
            .set_modified(later)
            .unwrap();
        token.0.file.as_ref().unwrap().stamp.lock().unwrap().1 -= RELOAD_CHECK;
        assert!(token.matches("new-token-0123456789") && token.matches("old-token-0123456789"));
        std::fs::write(&path, "new-token-0123456789\n").unwrap();
        std::fs::File::options()
            .write(true)
            .open(&path)
            .unwrap()
            .set_modified(later + Duration::from_secs(5))
            .unwrap();
        token.0.file.as_ref().unwrap().stamp.lock().unwrap().1 -= RELOAD_CHECK;
        assert!(token.matches("new-token-0123456789"));
        assert!(
            !token.matches("old-token-0123456789"),
            "the old token is refused once removed"
        );
        // A file emptied by mistake is ignored: the tokens stay.
        std::fs::write(&path, "").unwrap();
        std::fs::File::options()
            .write(true)
            .open(&path)
            .unwrap()
            .set_modified(later + Duration::from_secs(10))
            .unwrap();
        token.0.file.as_ref().unwrap().stamp.lock().unwrap().1 -= RELOAD_CHECK;
        assert!(token.matches("new-token-0123456789"));
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
