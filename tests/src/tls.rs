//! A self-signed certificate for `127.0.0.1` and `localhost`, for clusters that serve their API
//! over TLS.

use std::path::Path;
use std::sync::Arc;

use anyhow::Result;
use drover_node::tls::{server_config, ServerConfig};

/// Writes a fresh self-signed certificate and key into `dir` and loads them the way a node
/// loads `--api-tls-cert-file` and `--api-tls-key-file`.
pub fn self_signed(dir: &Path) -> Result<Arc<ServerConfig>> {
    let names = vec!["127.0.0.1".to_string(), "localhost".to_string()];
    let certified = rcgen::generate_simple_self_signed(names)?;
    let cert = dir.join("api-cert.pem");
    let key = dir.join("api-key.pem");
    std::fs::write(&cert, certified.cert.pem())?;
    std::fs::write(&key, certified.key_pair.serialize_pem())?;
    // A node refuses a private key that other users may read.
    std::fs::set_permissions(&key, std::os::unix::fs::PermissionsExt::from_mode(0o600))?;
    Ok(server_config(&cert, &key, None)?)
}
