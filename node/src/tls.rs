//! TLS on the public API listener: `--api-tls-cert-file` and `--api-tls-key-file` (PEM), read
//! again when the files change (rotation without a restart). Clients that send bearer tokens
//! only over TLS, kubectl among them, need it once credentials are configured. Handshakes run on their own tasks, bounded in time, so a slow client cannot hold
//! up the others.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant, SystemTime};

use clap::Args;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_rustls::rustls::crypto::CryptoProvider;
use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio_rustls::rustls::server::WebPkiClientVerifier;
use tokio_rustls::rustls::server::{ClientHello, ResolvesServerCert};
use tokio_rustls::rustls::sign::CertifiedKey;
pub use tokio_rustls::rustls::ServerConfig;
use tokio_rustls::rustls::{ClientConfig, RootCertStore};
use tokio_rustls::server::TlsStream;
use tokio_rustls::TlsAcceptor;

use crate::error::NodeError;

/// How long a client may take to finish its handshake.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// Handshaken connections waiting to be served.
const BACKLOG: usize = 256;

/// TLS flags of `drover serve`.
#[derive(Debug, Clone, Default, Args)]
pub struct TlsArgs {
    /// PEM certificate chain of the API listener; with --api-tls-key-file the API serves HTTPS.
    #[arg(long, env = "DROVER_API_TLS_CERT_FILE")]
    pub api_tls_cert_file: Option<PathBuf>,
    /// PEM private key of that certificate.
    #[arg(long, env = "DROVER_API_TLS_KEY_FILE")]
    pub api_tls_key_file: Option<PathBuf>,
    /// PEM certificate(s) of a CA whose client certificates authenticate API callers (CN the
    /// user, O the groups: `O=operators` is an operator); callers without one still send tokens.
    #[arg(long, env = "DROVER_API_CLIENT_CA_FILE")]
    pub api_client_ca_file: Option<PathBuf>,
    /// PEM certificate of this node for its peers (server and client certificate: its SANs
    /// must name the address peers dial); with the key and the CA, peers speak mutual TLS.
    #[arg(long, env = "DROVER_PEER_TLS_CERT_FILE")]
    pub peer_tls_cert_file: Option<PathBuf>,
    /// PEM private key of the peer certificate.
    #[arg(long, env = "DROVER_PEER_TLS_KEY_FILE")]
    pub peer_tls_key_file: Option<PathBuf>,
    /// PEM certificate(s) of the CA that signs every member's peer certificate; a peer whose
    /// certificate it did not sign is refused.
    #[arg(long, env = "DROVER_PEER_TLS_CA_FILE")]
    pub peer_tls_ca_file: Option<PathBuf>,
}

/// Mutual TLS between peers: the listener asks every caller for a certificate the CA signed,
/// and this node calls its peers with its own and checks theirs against the same CA.
#[derive(Clone)]
pub struct PeerTls {
    /// The peer listener's configuration.
    pub server: Arc<ServerConfig>,
    /// The configuration this node calls its peers with.
    pub client: Arc<ClientConfig>,
}

impl std::fmt::Debug for PeerTls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PeerTls")
    }
}

fn peer_invalid(flag: &str, message: String) -> NodeError {
    crate::setting::invalid(flag, message)
}

/// Reads the peer certificate, its key and the CA into both sides of mutual TLS.
pub fn peer_tls(cert_file: &Path, key_file: &Path, ca_file: &Path) -> Result<PeerTls, NodeError> {
    let certs = CertificateDer::pem_file_iter(cert_file)
        .and_then(|certs| certs.collect::<Result<Vec<_>, _>>())
        .map_err(|e| peer_invalid("peer-tls-cert-file", format!("{}: {e}", cert_file.display())))?;
    if certs.is_empty() {
        return Err(peer_invalid(
            "peer-tls-cert-file",
            format!("{}: no certificate found", cert_file.display()),
        ));
    }
    crate::setting::check_private(key_file, "peer-tls-key-file")?;
    let key = PrivateKeyDer::from_pem_file(key_file)
        .map_err(|e| peer_invalid("peer-tls-key-file", format!("{}: {e}", key_file.display())))?;
    let mut roots = RootCertStore::empty();
    let authorities = CertificateDer::pem_file_iter(ca_file)
        .and_then(|certs| certs.collect::<Result<Vec<_>, _>>())
        .map_err(|e| peer_invalid("peer-tls-ca-file", format!("{}: {e}", ca_file.display())))?;
    for authority in authorities {
        roots
            .add(authority)
            .map_err(|e| peer_invalid("peer-tls-ca-file", format!("{}: {e}", ca_file.display())))?;
    }
    if roots.is_empty() {
        return Err(peer_invalid(
            "peer-tls-ca-file",
            format!("{}: no certificate found", ca_file.display()),
        ));
    }
    let roots = Arc::new(roots);
    let verifier = WebPkiClientVerifier::builder_with_provider(roots.clone(), provider())
        .build()
        .map_err(|e| peer_invalid("peer-tls-ca-file", e.to_string()))?;
    let mut server = ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| peer_invalid("peer-tls-cert-file", e.to_string()))?
        .with_client_cert_verifier(verifier)
        .with_single_cert(certs.clone(), key.clone_key())
        .map_err(|e| {
            peer_invalid(
                "peer-tls-cert-file",
                format!("the certificate and key do not go together: {e}"),
            )
        })?;
    server.alpn_protocols = vec![b"http/1.1".to_vec()];
    let client = ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| peer_invalid("peer-tls-cert-file", e.to_string()))?
        .with_root_certificates(roots)
        .with_client_auth_cert(certs, key)
        .map_err(|e| {
            peer_invalid(
                "peer-tls-cert-file",
                format!("the certificate and key do not go together: {e}"),
            )
        })?;
    Ok(PeerTls {
        server: Arc::new(server),
        client: Arc::new(client),
    })
}

/// The peer TLS the flags ask for: all three files, or none.
pub fn load_peer(
    cert: Option<&Path>,
    key: Option<&Path>,
    ca: Option<&Path>,
) -> Result<Option<PeerTls>, NodeError> {
    match (cert, key, ca) {
        (Some(cert), Some(key), Some(ca)) => peer_tls(cert, key, ca).map(Some),
        (None, None, None) => Ok(None),
        _ => Err(peer_invalid(
            "peer-tls-cert-file",
            "--peer-tls-cert-file, --peer-tls-key-file and --peer-tls-ca-file go together".to_string(),
        )),
    }
}

fn invalid(message: String) -> NodeError {
    crate::setting::invalid("api-tls-cert-file", message)
}

/// Reads a certificate chain and its key into a signing identity.
fn certified_key(cert_file: &Path, key_file: &Path) -> Result<Arc<CertifiedKey>, NodeError> {
    let certs = CertificateDer::pem_file_iter(cert_file)
        .and_then(|certs| certs.collect::<Result<Vec<_>, _>>())
        .map_err(|e| invalid(format!("{}: {e}", cert_file.display())))?;
    if certs.is_empty() {
        return Err(invalid(format!("{}: no certificate found", cert_file.display())));
    }
    crate::setting::check_private(key_file, "api-tls-key-file")?;
    let key = PrivateKeyDer::from_pem_file(key_file)
        .map_err(|e| invalid(format!("{}: {e}", key_file.display())))?;
    let signing = provider()
        .key_provider
        .load_private_key(key)
        .map_err(|e| invalid(format!("{}: {e}", key_file.display())))?;
    let certified = CertifiedKey::new(certs, signing);
    certified
        .keys_match()
        .map_err(|e| invalid(format!("the certificate and key do not go together: {e}")))?;
    Ok(Arc::new(certified))
}

fn provider() -> Arc<CryptoProvider> {
    Arc::new(tokio_rustls::rustls::crypto::ring::default_provider())
}

/// How often, at most, the files are looked at for a new certificate.
const RELOAD_CHECK: Duration = Duration::from_secs(1);

/// The certificate of the API listener, read again from its files when they change (a rotated
/// certificate is served without a restart). Looked at, at most once a second, when a client
/// connects; a new pair that does not load (half written, or a key of another certificate) is
/// logged and the old one kept.
#[derive(Debug)]
struct ReloadingCert {
    cert_file: PathBuf,
    key_file: PathBuf,
    current: RwLock<(Arc<CertifiedKey>, Option<Stamps>)>,
    checked: Mutex<Instant>,
}

/// When the certificate and the key files were last modified.
type Stamps = (SystemTime, SystemTime);

fn modified(path: &Path) -> Option<SystemTime> {
    std::fs::metadata(path).and_then(|m| m.modified()).ok()
}

impl ReloadingCert {
    fn stamps(&self) -> Option<Stamps> {
        Some((modified(&self.cert_file)?, modified(&self.key_file)?))
    }

    fn reload_if_changed(&self) {
        {
            let mut checked = self.checked.lock().unwrap_or_else(|p| p.into_inner());
            if checked.elapsed() < RELOAD_CHECK {
                return;
            }
            *checked = Instant::now();
        }
        let stamps = self.stamps();
        let seen = self.current.read().unwrap_or_else(|p| p.into_inner()).1;
        if stamps.is_none() || stamps == seen {
            return;
        }
        match certified_key(&self.cert_file, &self.key_file) {
            Ok(key) => {
                *self.current.write().unwrap_or_else(|p| p.into_inner()) = (key, stamps);
                tracing::info!(cert = %self.cert_file.display(), "the API certificate was reloaded");
            }
            Err(error) => {
                // Keep serving the old one; look again when the files change again.
                self.current.write().unwrap_or_else(|p| p.into_inner()).1 = stamps;
                tracing::warn!(%error, "the API certificate's files changed but do not load; the old certificate stays");
            }
        }
    }
}

impl ResolvesServerCert for ReloadingCert {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        self.reload_if_changed();
        Some(self.current.read().unwrap_or_else(|p| p.into_inner()).0.clone())
    }
}

/// Reads a certificate chain and its key into a server configuration (HTTP/1.1) that serves
/// them, and their replacements when the files change.
pub fn server_config(
    cert_file: &Path,
    key_file: &Path,
    client_ca_file: Option<&Path>,
) -> Result<Arc<ServerConfig>, NodeError> {
    let verifier = client_ca_file
        .map(|ca_file| crate::client_certs::verifier(ca_file, provider()))
        .transpose()?;
    server_config_with(cert_file, key_file, verifier)
}

/// A `drover agent`'s HTTPS: its certificate (read again when the files change) and, when it
/// names a CA, only callers presenting a client certificate that CA signed.
pub fn agent_server_config(
    cert_file: &Path,
    key_file: &Path,
    client_ca_file: Option<&Path>,
) -> Result<Arc<ServerConfig>, NodeError> {
    let verifier = client_ca_file
        .map(|ca_file| crate::client_certs::required_verifier(ca_file, provider(), "tls-client-ca-file"))
        .transpose()?;
    server_config_with(cert_file, key_file, verifier)
}

fn server_config_with(
    cert_file: &Path,
    key_file: &Path,
    verifier: Option<Arc<dyn tokio_rustls::rustls::server::danger::ClientCertVerifier>>,
) -> Result<Arc<ServerConfig>, NodeError> {
    let key = certified_key(cert_file, key_file)?;
    let resolver = ReloadingCert {
        cert_file: cert_file.to_path_buf(),
        key_file: key_file.to_path_buf(),
        current: RwLock::new((key, None)),
        checked: Mutex::new(Instant::now()),
    };
    let stamps = resolver.stamps();
    resolver.current.write().unwrap_or_else(|p| p.into_inner()).1 = stamps;
    let builder = ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| invalid(e.to_string()))?;
    let builder = match verifier {
        Some(verifier) => builder.with_client_cert_verifier(verifier),
        None => builder.with_no_client_auth(),
    };
    let mut config = builder.with_cert_resolver(Arc::new(resolver));
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

/// The configuration the flags (or the file's keys of the same names) ask for, if any.
pub fn load(
    cert: Option<&Path>,
    key: Option<&Path>,
    client_ca: Option<&Path>,
) -> Result<Option<Arc<ServerConfig>>, NodeError> {
    match (cert, key) {
        (Some(cert), Some(key)) => server_config(cert, key, client_ca).map(Some),
        (None, None) if client_ca.is_some() => Err(invalid(
            "--api-client-ca-file needs --api-tls-cert-file and --api-tls-key-file".to_string(),
        )),
        (None, None) => Ok(None),
        _ => Err(invalid(
            "--api-tls-cert-file and --api-tls-key-file go together".to_string(),
        )),
    }
}

/// A TLS client's address, and who its verified client certificate names (when the listener
/// identifies clients).
#[derive(Debug, Clone)]
pub struct TlsPeer {
    /// The client's address.
    pub addr: SocketAddr,
    /// Who its certificate names.
    pub certificate: Option<drover_api::auth::ClientCertificate>,
}

impl crate::listen::PeerAddress for TlsPeer {
    fn ip(&self) -> std::net::IpAddr {
        self.addr.ip()
    }

    fn client_certificate(&self) -> Option<drover_api::auth::ClientCertificate> {
        self.certificate.clone()
    }
}

/// A listener that hands out connections whose TLS handshake has completed.
pub struct TlsListener {
    incoming: mpsc::Receiver<(TlsStream<TcpStream>, TlsPeer)>,
    local: SocketAddr,
    acceptor: JoinHandle<()>,
}

impl TlsListener {
    /// Accepts on `listener` and handshakes with `config`; with `identify`, reads who each
    /// verified client certificate names.
    pub fn new(listener: TcpListener, config: Arc<ServerConfig>, identify: bool) -> std::io::Result<Self> {
        let local = listener.local_addr()?;
        let (sender, incoming) = mpsc::channel(BACKLOG);
        let tls = TlsAcceptor::from(config);
        let acceptor = tokio::spawn(async move {
            loop {
                let (stream, peer) = match listener.accept().await {
                    Ok(accepted) => accepted,
                    Err(e) => {
                        tracing::debug!("accepting a connection failed: {e}");
                        continue;
                    }
                };
                if let Err(e) = stream.set_nodelay(true) {
                    tracing::debug!("cannot set TCP_NODELAY on a connection: {e}");
                }
                let tls = tls.clone();
                let sender = sender.clone();
                tokio::spawn(async move {
                    match tokio::time::timeout(HANDSHAKE_TIMEOUT, tls.accept(stream)).await {
                        Ok(Ok(stream)) => {
                            let certificate = identify
                                .then(|| {
                                    stream
                                        .get_ref()
                                        .1
                                        .peer_certificates()?
                                        .first()
                                        .and_then(crate::client_certs::identity)
                                })
                                .flatten();
                            let peer = TlsPeer {
                                addr: peer,
                                certificate,
                            };
                            let _ = sender.send((stream, peer)).await;
                        }
                        Ok(Err(e)) => tracing::debug!(%peer, "TLS handshake failed: {e}"),
                        Err(_) => tracing::debug!(%peer, "TLS handshake timed out"),
                    }
                });
            }
        });
        Ok(Self {
            incoming,
            local,
            acceptor,
        })
    }
}

impl Drop for TlsListener {
    fn drop(&mut self) {
        self.acceptor.abort();
    }
}

impl axum::serve::Listener for TlsListener {
    type Io = TlsStream<TcpStream>;
    type Addr = TlsPeer;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        match self.incoming.recv().await {
            Some(connection) => connection,
            // The acceptor only stops when this listener is dropped.
            None => std::future::pending().await,
        }
    }

    fn local_addr(&self) -> std::io::Result<Self::Addr> {
        Ok(TlsPeer {
            addr: self.local,
            certificate: None,
        })
    }
}
