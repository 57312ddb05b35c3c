//! Checks every configuration source shares (flags, the platform file, TLS material): a setting
//! that is wrong, named; a file holding a secret that others may read, refused.

use std::path::Path;

use crate::error::NodeError;

/// A setting that is wrong, named.
pub(crate) fn invalid(setting: &str, message: impl Into<String>) -> NodeError {
    NodeError::Config {
        setting: setting.to_string(),
        message: message.into(),
    }
}

/// Refuses a file that holds a secret and that users other than its owner may read, as ssh
/// refuses such a private key.
pub fn check_private(path: &Path, setting: &str) -> Result<(), NodeError> {
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(path)
        .map_err(|e| invalid(setting, format!("cannot read {}: {e}", path.display())))?
        .permissions()
        .mode();
    if mode & 0o077 != 0 {
        return Err(invalid(
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
