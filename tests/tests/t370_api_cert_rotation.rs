//! Rotating the API certificate's files is picked up without a restart: a node serves the
//! certificate with serial 0x0a, the files are replaced (a new key, serial 0x0b), and new
//! connections get serial 0x0b, checked with `openssl s_client` — the running node was never
//! restarted. A replacement whose key does not match its certificate is not taken: the node
//! keeps serving the last good one. The CLI reaches the HTTPS API with `--cacert`.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use anyhow::{ensure, Context, Result};
use drover_tests::cluster::{ClusterOptions, TestCluster};
use drover_tests::wait::eventually;

/// Writes a self-signed certificate for 127.0.0.1 with `serial` (and a fresh key) atomically.
fn write_cert(dir: &Path, serial: u64, key_of: Option<&rcgen::KeyPair>) -> Result<rcgen::KeyPair> {
    let mut params = rcgen::CertificateParams::new(vec!["127.0.0.1".to_string(), "localhost".to_string()])?;
    params.serial_number = Some(rcgen::SerialNumber::from(serial));
    let key = rcgen::KeyPair::generate()?;
    let cert = params.self_signed(&key)?;
    // The key file written may be another certificate's, to make a bad pair.
    let key_pem = key_of.unwrap_or(&key).serialize_pem();
    for (name, text, mode) in [
        ("api-cert.pem", cert.pem(), 0o644),
        ("api-key.pem", key_pem, 0o600),
    ] {
        let part = dir.join(format!("{name}.part"));
        std::fs::write(&part, text)?;
        std::fs::set_permissions(&part, std::os::unix::fs::PermissionsExt::from_mode(mode))?;
        std::fs::rename(&part, dir.join(name))?;
    }
    Ok(key)
}

/// The serial of the certificate the server at `addr` serves now, by `openssl`.
fn served_serial(addr: &str) -> Result<String> {
    let shown = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "openssl s_client -connect {addr} -servername localhost </dev/null 2>/dev/null | openssl x509 -noout -serial"
        ))
        .output()
        .context("openssl")?;
    let text = String::from_utf8_lossy(&shown.stdout).trim().to_string();
    text.strip_prefix("serial=")
        .map(str::to_string)
        .context(format!("no serial in {text:?}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rotated_api_certificate_is_served_without_a_restart() -> Result<()> {
    let dir = tempfile::tempdir()?;
    let first_key = write_cert(dir.path(), 0x0a, None)?;
    let config = drover_node::tls::server_config(
        &dir.path().join("api-cert.pem"),
        &dir.path().join("api-key.pem"),
        None,
    )?;
    let options = ClusterOptions {
        api_tls: Some(config),
        ..ClusterOptions::with_credentials()
    };
    let cluster = TestCluster::start_with_options(1, options).await?;
    let addr = cluster.api_addr(1);
    ensure!(served_serial(&addr)? == "0A", "the first certificate");

    // Rotated: new connections get the new certificate, from the same running node.
    write_cert(dir.path(), 0x0b, None)?;
    eventually(
        Duration::from_secs(20),
        "the rotated certificate to be served",
        || async { (served_serial(&addr).ok()? == "0B").then_some(()) },
    )
    .await?;

    let served = dir.path().join("served.pem");
    std::fs::copy(dir.path().join("api-cert.pem"), &served)?;

    // A bad pair (the old key with a new certificate) is not taken; the last good one stays.
    // Watched over twice the node's one-second look at the files: every connection in that
    // window still gets 0x0b.
    write_cert(dir.path(), 0x0c, Some(&first_key))?;
    let window = std::time::Instant::now();
    let mut handshakes = 0;
    while window.elapsed() < Duration::from_secs(2) {
        ensure!(served_serial(&addr)? == "0B", "a mismatched pair is refused");
        handshakes += 1;
    }
    ensure!(handshakes > 1, "the window saw {handshakes} handshakes");

    // The CLI reaches an https:// API with --cacert (the serving certificate, self-signed), and
    // not without it.
    let cli = |extra: &[&str]| -> Result<std::process::Output> {
        Ok(Command::new(drover_tests::process::drover_binary()?)
            .args([
                "get",
                "members",
                "-o",
                "json",
                "--server",
                &format!(
                    "https://localhost:{}",
                    addr.rsplit(':').next().unwrap_or_default()
                ),
            ])
            .args(extra)
            .env_remove("DROVER_TOKEN")
            .output()?)
    };
    let trusted = cli(&["--cacert", &served.to_string_lossy()])?;
    ensure!(trusted.status.success(), "with --cacert: {trusted:?}");
    let untrusted = cli(&[])?;
    ensure!(
        untrusted.status.code() == Some(6),
        "without --cacert: {untrusted:?}"
    );
    Ok(())
}
