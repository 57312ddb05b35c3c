//! Client certificates on the API listener (`--api-client-ca-file`): the listener asks every
//! client for a certificate and accepts those the CA signed, and clients without one (bearer
//! tokens) as before. A verified certificate names its caller the way Kubernetes reads one: the
//! subject's common name is the user, its organizations the groups, so `O=operators` makes an
//! operator (`x509` is the identity's issuer in the audit log). A token in `Authorization` wins
//! over the certificate of the connection it came on.

use std::path::Path;
use std::sync::Arc;

use drover_api::auth::ClientCertificate;
use tokio_rustls::rustls::crypto::CryptoProvider;
use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::CertificateDer;
use tokio_rustls::rustls::server::danger::ClientCertVerifier;
use tokio_rustls::rustls::server::WebPkiClientVerifier;
use tokio_rustls::rustls::RootCertStore;
use x509_parser::prelude::{FromDer, X509Certificate};

use crate::error::NodeError;

const FLAG: &str = "api-client-ca-file";

/// A verifier that accepts certificates `ca_file`'s CAs signed, and clients without any.
pub fn verifier(
    ca_file: &Path,
    provider: Arc<CryptoProvider>,
) -> Result<Arc<dyn ClientCertVerifier>, NodeError> {
    verifier_of(ca_file, provider, FLAG, true)
}

/// A verifier that accepts only clients presenting a certificate `ca_file`'s CAs signed (an
/// agent's `--tls-client-ca-file`).
pub fn required_verifier(
    ca_file: &Path,
    provider: Arc<CryptoProvider>,
    flag: &str,
) -> Result<Arc<dyn ClientCertVerifier>, NodeError> {
    verifier_of(ca_file, provider, flag, false)
}

fn verifier_of(
    ca_file: &Path,
    provider: Arc<CryptoProvider>,
    flag: &str,
    optional: bool,
) -> Result<Arc<dyn ClientCertVerifier>, NodeError> {
    let invalid =
        |message: String| crate::setting::invalid(flag, format!("{}: {message}", ca_file.display()));
    let authorities = CertificateDer::pem_file_iter(ca_file)
        .and_then(|certs| certs.collect::<Result<Vec<_>, _>>())
        .map_err(|e| invalid(e.to_string()))?;
    let mut roots = RootCertStore::empty();
    for authority in authorities {
        roots.add(authority).map_err(|e| invalid(e.to_string()))?;
    }
    if roots.is_empty() {
        return Err(invalid("no CA certificate found".to_string()));
    }
    let builder = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider);
    let builder = if optional {
        builder.allow_unauthenticated()
    } else {
        builder
    };
    builder.build().map_err(|e| invalid(e.to_string()))
}

/// Longest common name or organization taken from a certificate (a DNS name's length; the
/// name lands in every audit entry of its holder, which every replica keeps).
const MAX_NAME: usize = 253;
/// Most organizations (groups) taken from a certificate.
const MAX_GROUPS: usize = 16;

/// Who a verified client certificate names: `None` when it has no common name, or one (or an
/// organization, or more than 16 of them) too long to be a name (it then authenticates nothing,
/// and the request needs a token).
pub fn identity(certificate: &CertificateDer<'_>) -> Option<ClientCertificate> {
    let (_, parsed) = X509Certificate::from_der(certificate.as_ref()).ok()?;
    let subject = parsed.subject();
    let text = |attribute: &x509_parser::x509::AttributeTypeAndValue<'_>| {
        attribute.as_str().ok().map(str::to_string)
    };
    let name = subject.iter_common_name().find_map(text)?;
    let groups: Vec<String> = subject.iter_organization().filter_map(text).collect();
    let fits = |value: &String| !value.is_empty() && value.len() <= MAX_NAME;
    if !fits(&name) || groups.len() > MAX_GROUPS || !groups.iter().all(fits) {
        return None;
    }
    Some(ClientCertificate {
        subject: name,
        groups,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use rcgen::{CertificateParams, DnType, KeyPair};

    #[test]
    fn the_common_name_is_the_user_and_organizations_are_groups() {
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.distinguished_name.push(DnType::CommonName, "ada");
        params
            .distinguished_name
            .push(DnType::OrganizationName, "operators");
        let key = KeyPair::generate().unwrap();
        let cert = params.self_signed(&key).unwrap();
        let named = identity(cert.der()).unwrap();
        assert_eq!(named.subject, "ada");
        assert_eq!(named.groups, ["operators"]);

        let mut nameless = CertificateParams::new(Vec::<String>::new()).unwrap();
        nameless.distinguished_name = rcgen::DistinguishedName::new();
        nameless
            .distinguished_name
            .push(DnType::OrganizationName, "operators");
        let cert = nameless.self_signed(&key).unwrap();
        assert_eq!(identity(cert.der()), None);
        assert_eq!(identity(&CertificateDer::from(vec![1, 2, 3])), None);

        // A name too long to be one authenticates nothing.
        let mut long = CertificateParams::new(Vec::<String>::new()).unwrap();
        long.distinguished_name.push(DnType::CommonName, "a".repeat(300));
        let cert = long.self_signed(&key).unwrap();
        assert_eq!(identity(cert.der()), None);
    }
}
