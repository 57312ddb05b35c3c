//! Client certificates for API callers (`--api-client-ca-file`): a node serving HTTPS takes a
//! certificate its client CA signed as the caller's identity, CN the user and O the groups, as
//! Kubernetes does. Through the real `drover` CLI (`--cacert --cert --key`): a certificate with
//! `O=operators` saves a snapshot (operators only) and its changes are audited as `ada@x509`;
//! one without that group is forbidden (exit 7); one from another CA does not get through the
//! handshake (exit 6); no certificate and no token is unauthenticated (exit 7), and the static
//! operator token still works without a certificate.

use std::path::Path;
use std::process::{Command, Output};

use anyhow::{ensure, Context, Result};
use drover_tests::cluster::{ClusterOptions, TestCluster};
use drover_tests::platform::TEST_STATIC_TOKEN;
use drover_tests::process::drover_binary;
use drover_tests::tls::Authority;
use rcgen::{DnType, ExtendedKeyUsagePurpose};

fn authority(dir: &Path, name: &str) -> Result<Authority> {
    let authority = Authority::new(name)?;
    std::fs::write(dir.join(format!("{name}.pem")), authority.cert.pem())?;
    Ok(authority)
}

/// A server (for 127.0.0.1) or client certificate the authority signs, with `subject`.
fn issue(ca: &Authority, dir: &Path, name: &str, subject: &[(DnType, &str)], server: bool) -> Result<()> {
    let (sans, usage): (&[&str], _) = if server {
        (&["127.0.0.1", "localhost"], ExtendedKeyUsagePurpose::ServerAuth)
    } else {
        (&[], ExtendedKeyUsagePurpose::ClientAuth)
    };
    ca.issue(dir, name, sans, subject, vec![usage])
}

/// `drover snapshot save` as the holder of certificate `who` (none: no certificate), with
/// `token` in the environment when given.
fn save(dir: &Path, server: &str, who: Option<&str>, token: Option<&str>) -> Result<Output> {
    let mut command = Command::new(drover_binary()?);
    command
        .args(["snapshot", "save"])
        .arg(dir.join("state.snapshot"))
        .args(["--server", server, "--cacert"])
        .arg(dir.join("server-ca.pem"))
        .env_remove("DROVER_TOKEN");
    if let Some(who) = who {
        command
            .arg("--cert")
            .arg(dir.join(format!("{who}.pem")))
            .arg("--key")
            .arg(dir.join(format!("{who}-key.pem")));
    }
    if let Some(token) = token {
        command.env("DROVER_TOKEN", token);
    }
    Ok(command.output()?)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_certificates_name_api_callers_and_their_groups() -> Result<()> {
    let dir = tempfile::tempdir()?;
    let path = dir.path();
    let server_ca = authority(path, "server-ca")?;
    let client_ca = authority(path, "client-ca")?;
    let rogue_ca = authority(path, "rogue-ca")?;
    issue(&server_ca, path, "api", &[(DnType::CommonName, "drover")], true)?;
    issue(
        &client_ca,
        path,
        "ada",
        &[
            (DnType::CommonName, "ada"),
            (DnType::OrganizationName, "operators"),
        ],
        false,
    )?;
    issue(&client_ca, path, "bob", &[(DnType::CommonName, "bob")], false)?;
    issue(
        &rogue_ca,
        path,
        "mallory",
        &[
            (DnType::CommonName, "mallory"),
            (DnType::OrganizationName, "operators"),
        ],
        false,
    )?;
    let config = drover_node::tls::server_config(
        &path.join("api.pem"),
        &path.join("api-key.pem"),
        Some(&path.join("client-ca.pem")),
    )?;
    let options = ClusterOptions {
        api_tls: Some(config),
        ..ClusterOptions::with_credentials()
    };
    let cluster = TestCluster::start_with_options(1, options).await?;
    let server = format!("https://{}", cluster.api_addr(1));

    let ada = save(path, &server, Some("ada"), None)?;
    ensure!(ada.status.success(), "an operator's certificate: {ada:?}");
    let bob = save(path, &server, Some("bob"), None)?;
    ensure!(bob.status.code() == Some(7), "no operators group: {bob:?}");
    ensure!(
        String::from_utf8_lossy(&bob.stderr).contains("bob of x509 is not an operator"),
        "{bob:?}"
    );
    let mallory = save(path, &server, Some("mallory"), None)?;
    ensure!(
        mallory.status.code() == Some(6),
        "another CA's certificate: {mallory:?}"
    );
    let nobody = save(path, &server, None, None)?;
    ensure!(nobody.status.code() == Some(7), "no credential: {nobody:?}");
    let token = save(path, &server, None, Some(TEST_STATIC_TOKEN))?;
    ensure!(token.status.success(), "a token without a certificate: {token:?}");

    // A change made with the certificate is audited under its identity.
    let identity = {
        let mut pem = std::fs::read(path.join("ada.pem"))?;
        pem.extend(std::fs::read(path.join("ada-key.pem"))?);
        reqwest::Identity::from_pem(&pem)?
    };
    let http = reqwest::Client::builder()
        .no_proxy()
        .add_root_certificate(reqwest::Certificate::from_pem(&std::fs::read(
            path.join("server-ca.pem"),
        )?)?)
        .identity(identity)
        .build()?;
    let lease = serde_json::json!({"metadata": {"name": "by-cert"}, "spec": {"holderIdentity": "ada"}});
    let created = http
        .post(format!(
            "{server}/apis/coordination.k8s.io/v1/namespaces/certs/leases"
        ))
        .json(&lease)
        .send()
        .await?;
    ensure!(created.status() == 201, "{}", created.text().await?);
    let audit: serde_json::Value = http.get(format!("{server}/audit")).send().await?.json().await?;
    let entry = audit["entries"]
        .as_array()
        .and_then(|entries| entries.iter().find(|e| e.to_string().contains("by-cert")))
        .with_context(|| format!("no audit entry for the lease: {audit}"))?;
    ensure!(entry["principal"] == "ada@x509", "{entry}");
    cluster.shutdown().await
}
