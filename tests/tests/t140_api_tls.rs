//! The API over TLS: kubectl, which sends its token only over TLS, lists and creates lease
//! objects with a static token through any node, and plain HTTP to the TLS port gets no answer.

use std::process::Command;
use std::time::Duration;

use anyhow::{ensure, Context, Result};
use drover_tests::cluster::{ClusterOptions, TestCluster};
use drover_tests::platform::TEST_SHOP_TOKEN;
use drover_tests::tls::self_signed;

const ELECTION: Duration = Duration::from_secs(15);

fn kubectl(server: &str, token: &str, args: &[&str], stdin: Option<&str>) -> Result<std::process::Output> {
    let mut command = Command::new("kubectl");
    command
        .arg(format!("--server={server}"))
        .arg("--insecure-skip-tls-verify")
        .arg(format!("--token={token}"))
        .args(args)
        .env("KUBECONFIG", "/dev/null");
    if let Some(text) = stdin {
        let mut child = command
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .context("running kubectl")?;
        use std::io::Write;
        child.stdin.take().context("stdin")?.write_all(text.as_bytes())?;
        return Ok(child.wait_with_output()?);
    }
    command.output().context("running kubectl")
}

const MANIFEST: &str = "apiVersion: coordination.k8s.io/v1
kind: Lease
metadata:
  name: over-tls
  namespace: shop
spec:
  holderIdentity: tls-1
  leaseDurationSeconds: 15
";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_works_over_tls_with_its_token() -> Result<()> {
    let dir = tempfile::tempdir()?;
    let options = ClusterOptions {
        api_tls: Some(self_signed(dir.path())?),
        ..ClusterOptions::with_credentials()
    };
    let cluster = TestCluster::start_with_options(3, options).await?;
    let leader = cluster.leader(ELECTION).await?;
    let follower = cluster
        .running_ids()
        .into_iter()
        .find(|id| *id != leader)
        .context("a follower")?;
    let via_follower = format!("https://{}", cluster.api_addr(follower));
    let via_leader = format!("https://{}", cluster.api_addr(leader));

    let created = tokio::task::spawn_blocking(move || {
        kubectl(
            &via_follower,
            TEST_SHOP_TOKEN,
            &["create", "-f", "-"],
            Some(MANIFEST),
        )
    })
    .await??;
    let said = String::from_utf8_lossy(&created.stderr);
    ensure!(
        created.status.success(),
        "kubectl create over TLS (through a follower): {said}"
    );
    let listed = {
        let server = via_leader.clone();
        tokio::task::spawn_blocking(move || {
            kubectl(
                &server,
                TEST_SHOP_TOKEN,
                &["get", "leases", "-n", "shop", "-o", "name"],
                None,
            )
        })
        .await??
    };
    let names = String::from_utf8_lossy(&listed.stdout);
    ensure!(
        listed.status.success() && names.contains("over-tls"),
        "kubectl get over TLS: {names}"
    );
    let refused = tokio::task::spawn_blocking(move || {
        kubectl(
            &via_leader,
            "wrong-token-0123456789",
            &["get", "leases", "-n", "shop"],
            None,
        )
    })
    .await??;
    let said = String::from_utf8_lossy(&refused.stderr);
    ensure!(
        !refused.status.success()
            && (said.contains("Unauthorized")
                || said.contains("asked for the client to provide credentials")),
        "a wrong token over TLS was not refused as unauthorized: {said}"
    );

    // Plain HTTP to the TLS port is not served.
    let plain = reqwest::Client::builder()
        .timeout(Duration::from_secs(5))
        .build()?
        .get(format!("http://{}/healthz", cluster.api_addr(leader)))
        .send()
        .await;
    ensure!(
        plain.map(|r| !r.status().is_success()).unwrap_or(true),
        "plain HTTP was answered on the TLS port"
    );
    cluster.shutdown().await
}
