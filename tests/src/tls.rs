//! A self-signed certificate for `127.0.0.1` and `localhost`, for clusters that serve their API
//! over TLS; and test certificate authorities that sign peer, server and client certificates.

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

/// A test certificate authority.
pub struct Authority {
    /// Its certificate.
    pub cert: rcgen::Certificate,
    key: rcgen::KeyPair,
}

impl Authority {
    /// A new self-signed CA named `name`.
    pub fn new(name: &str) -> Result<Self> {
        let mut params = rcgen::CertificateParams::new(Vec::<String>::new())?;
        params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        params.distinguished_name.push(rcgen::DnType::CommonName, name);
        let key = rcgen::KeyPair::generate()?;
        let cert = params.self_signed(&key)?;
        Ok(Self { cert, key })
    }

    /// Signs a certificate for the names `sans`, with `subject` (rcgen's default when empty)
    /// and `usages`, written as `{name}.pem` and `{name}-key.pem` (owner-only) in `dir`.
    pub fn issue(
        &self,
        dir: &Path,
        name: &str,
        sans: &[&str],
        subject: &[(rcgen::DnType, &str)],
        usages: Vec<rcgen::ExtendedKeyUsagePurpose>,
    ) -> Result<()> {
        let mut params =
            rcgen::CertificateParams::new(sans.iter().map(|s| s.to_string()).collect::<Vec<_>>())?;
        if !subject.is_empty() {
            params.distinguished_name = rcgen::DistinguishedName::new();
            for (kind, value) in subject {
                params.distinguished_name.push(kind.clone(), *value);
            }
        }
        params.extended_key_usages = usages;
        let key = rcgen::KeyPair::generate()?;
        let cert = params.signed_by(&key, &self.cert, &self.key)?;
        std::fs::write(dir.join(format!("{name}.pem")), cert.pem())?;
        let key_file = dir.join(format!("{name}-key.pem"));
        std::fs::write(&key_file, key.serialize_pem())?;
        std::fs::set_permissions(&key_file, std::os::unix::fs::PermissionsExt::from_mode(0o600))?;
        Ok(())
    }
}
