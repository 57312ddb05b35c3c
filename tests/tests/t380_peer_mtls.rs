//! Mutual TLS between peers: three `drover serve` processes with `--peer-tls-cert-file`,
//! `--peer-tls-key-file` and `--peer-tls-ca-file` elect a leader and replicate (a write through
//! a follower is forwarded to the leader over TLS and read from the third node). A caller of
//! the peer port without a certificate, with a certificate of another CA, or in plain HTTP is
//! refused before any handler runs; one with the cluster CA's certificate reaches the handler
//! (which still wants the cluster secret).

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{ensure, Result};
use drover_tests::client::LeaseClient;
use drover_tests::process::ProcessCluster;
use drover_tests::tls::Authority;
use rcgen::ExtendedKeyUsagePurpose;
use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::CertificateDer;
use tokio_rustls::rustls::{ClientConfig, RootCertStore};

/// A peer certificate the authority signs, for 127.0.0.1, written as `{name}.pem` and
/// `{name}-key.pem` (owner-only).
fn issue(ca: &Authority, dir: &Path, name: &str) -> Result<()> {
    let usages = vec![
        ExtendedKeyUsagePurpose::ServerAuth,
        ExtendedKeyUsagePurpose::ClientAuth,
    ];
    ca.issue(dir, name, &["127.0.0.1", "localhost"], &[], usages)
}

fn client(config: Option<ClientConfig>) -> Result<reqwest::Client> {
    let mut builder = reqwest::Client::builder()
        .no_proxy()
        .timeout(Duration::from_secs(5));
    if let Some(config) = config {
        builder = builder.use_preconfigured_tls(config);
    }
    Ok(builder.build()?)
}

fn without_certificate(ca_file: &Path) -> Result<ClientConfig> {
    let mut roots = RootCertStore::empty();
    for cert in CertificateDer::pem_file_iter(ca_file)? {
        roots.add(cert?)?;
    }
    let provider = Arc::new(tokio_rustls::rustls::crypto::ring::default_provider());
    Ok(ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_root_certificates(roots)
        .with_no_client_auth())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn peers_speak_mutual_tls_and_refuse_callers_without_a_valid_certificate() -> Result<()> {
    let dir = tempfile::tempdir()?;
    let ca = Authority::new("drover test CA")?;
    std::fs::write(dir.path().join("ca.pem"), ca.cert.pem())?;
    issue(&ca, dir.path(), "peer")?;
    let stranger = Authority::new("another CA")?;
    issue(&stranger, dir.path(), "stranger")?;
    let file = |name: &str| dir.path().join(name).display().to_string();
    let args = [
        format!("--peer-tls-cert-file={}", file("peer.pem")),
        format!("--peer-tls-key-file={}", file("peer-key.pem")),
        format!("--peer-tls-ca-file={}", file("ca.pem")),
    ];
    let nodes = ProcessCluster::start_with_args(3, &args)?;
    let leader = nodes.leader(Duration::from_secs(20)).await?;

    // Replication and forwarding work over TLS.
    let follower = (1..=3).find(|id| *id != leader).unwrap_or(1);
    let third = (1..=3).find(|id| *id != leader && *id != follower).unwrap_or(1);
    let created = LeaseClient::new(&nodes.api_addr(follower))
        .create("tls", "replicated", "me")
        .await?;
    ensure!(created.status == 201, "a write through a follower: {created:?}");
    let read = LeaseClient::new(&nodes.api_addr(third))
        .get("tls", "replicated", "")
        .await?;
    ensure!(read.status == 200, "read on the third node: {read:?}");

    // The peer port refuses callers without a certificate the cluster CA signed.
    let status = format!("https://{}/raft/status", nodes.peer_addr(leader));
    let bare = client(Some(without_certificate(&dir.path().join("ca.pem"))?))?;
    ensure!(bare.get(&status).send().await.is_err(), "no client certificate");
    let other = drover_node::tls::peer_tls(
        &dir.path().join("stranger.pem"),
        &dir.path().join("stranger-key.pem"),
        &dir.path().join("ca.pem"),
    )?;
    let foreign = client(Some((*other.client).clone()))?;
    ensure!(
        foreign.get(&status).send().await.is_err(),
        "a certificate of another CA"
    );
    let plain = client(None)?;
    let answer = plain
        .get(format!("http://{}/raft/status", nodes.peer_addr(leader)))
        .send()
        .await;
    ensure!(answer.map_or(true, |a| !a.status().is_success()), "plain HTTP");
    // A member's certificate gets through TLS to the handler, which wants the cluster secret.
    let member = drover_node::tls::peer_tls(
        &dir.path().join("peer.pem"),
        &dir.path().join("peer-key.pem"),
        &dir.path().join("ca.pem"),
    )?;
    let trusted = client(Some((*member.client).clone()))?;
    let answer = trusted.get(&status).send().await?;
    ensure!(
        answer.status() == 401,
        "TLS accepted, then the secret is asked for: {answer:?}"
    );
    Ok(())
}
