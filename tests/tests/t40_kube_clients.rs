//! Existing Kubernetes clients, unchanged, against a Drover cluster: the official Python client
//! and kubectl (create -f, get -o yaml, get -w, delete).

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use anyhow::{bail, ensure, Context, Result};
use drover_tests::cluster::TestCluster;
use reqwest::StatusCode;

const ELECTION: Duration = Duration::from_secs(15);

fn compat_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("compat")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_official_python_client_works_unchanged() -> Result<()> {
    let cluster = TestCluster::start(3).await?;
    cluster.leader(ELECTION).await?;
    let url = format!("http://{}", cluster.api_addr(2));
    let script = compat_dir().join("kube_python.py");
    let output = tokio::task::spawn_blocking(move || Command::new("python3").arg(script).arg(url).output())
        .await?
        .context(
            "running python3 (install the client with `pip install -r tests/compat/requirements.txt`)",
        )?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    ensure!(
        output.status.success(),
        "python client failed:\n{stdout}\n{stderr}"
    );
    ensure!(stdout.contains("kubernetes python client: ok"), "{stdout}");
    cluster.shutdown().await
}

fn kubectl(server: &str, args: &[&str]) -> Result<String> {
    let output = Command::new("kubectl")
        .arg(format!("--server={server}"))
        .args(args)
        .env("KUBECONFIG", "/dev/null")
        .output()
        .context("running kubectl")?;
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    if !output.status.success() {
        bail!(
            "kubectl {args:?} failed: {stdout}\n{}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
    Ok(stdout)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn kubectl_creates_gets_watches_and_deletes_leases() -> Result<()> {
    let cluster = TestCluster::start(3).await?;
    cluster.leader(ELECTION).await?;
    let server = format!("http://{}", cluster.api_addr(3));
    let manifest = compat_dir().join("lease.yaml");
    let manifest = manifest.to_string_lossy().into_owned();

    let out = {
        let server = server.clone();
        tokio::task::spawn_blocking(move || kubectl(&server, &["create", "-f", &manifest])).await??
    };
    ensure!(out.contains("kubectl-lease"), "create: {out}");

    let yaml = {
        let server = server.clone();
        tokio::task::spawn_blocking(move || kubectl(&server, &["get", "leases", "-o", "yaml"])).await??
    };
    ensure!(
        yaml.contains("holderIdentity: kubectl-1") && yaml.contains("resourceVersion:"),
        "get -o yaml: {yaml}"
    );

    let mut watch = Command::new("kubectl")
        .arg(format!("--server={server}"))
        .args([
            "get",
            "leases",
            "-w",
            "--output-watch-events",
            "-o",
            "jsonpath={.type} {.object.metadata.name} {.object.spec.holderIdentity}{\"\\n\"}",
        ])
        .env("KUBECONFIG", "/dev/null")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .context("running kubectl get -w")?;
    let stdout = watch.stdout.take().context("watch stdout")?;
    let (lines_tx, lines_rx) = mpsc::channel::<String>();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if lines_tx.send(line).is_err() {
                break;
            }
        }
    });
    let first = lines_rx
        .recv_timeout(Duration::from_secs(15))
        .context("kubectl get -w printed nothing")?;
    ensure!(
        first == "ADDED kubectl-lease kubectl-1",
        "initial watch line: {first}"
    );
    let changed = cluster
        .client(1)
        .replace("default", "kubectl-lease", "kubectl-2", None)
        .await?;
    ensure!(changed.status == StatusCode::OK, "{changed:?}");
    let next = lines_rx
        .recv_timeout(Duration::from_secs(15))
        .context("kubectl get -w missed the change")?;
    let _ = watch.kill();
    let _ = watch.wait();
    ensure!(next == "MODIFIED kubectl-lease kubectl-2", "watch event: {next}");

    let labeled = {
        let server = server.clone();
        tokio::task::spawn_blocking(move || {
            kubectl(&server, &["label", "lease", "kubectl-lease", "team=infra"])
        })
        .await??
    };
    ensure!(labeled.contains("labeled"), "label (a merge patch): {labeled}");
    let read = cluster.client(1).get("default", "kubectl-lease", "").await?;
    ensure!(read.body["metadata"]["labels"]["team"] == "infra", "{read:?}");

    let out = {
        let server = server.clone();
        tokio::task::spawn_blocking(move || kubectl(&server, &["delete", "lease", "kubectl-lease"])).await??
    };
    ensure!(out.contains("deleted"), "delete: {out}");
    let gone = cluster.client(2).get("default", "kubectl-lease", "").await?;
    ensure!(gone.status == StatusCode::NOT_FOUND, "{gone:?}");
    cluster.shutdown().await
}
