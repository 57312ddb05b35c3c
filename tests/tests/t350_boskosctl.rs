//! A script written for boskosctl (`tests/compat/boskosctl-script.sh`: acquire with a wait,
//! heartbeat, metrics read with `jq`, release on exit) runs unchanged against three
//! `drover serve` processes through a `boskosctl` symlink to `drover`; afterwards the resource
//! is `dirty` (released) and the heartbeats reached the server. Also: `drover boskos` takes the
//! same flags, and a missing `--server-url` is boskosctl's error and exit 1.

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use anyhow::{ensure, Context, Result};
use drover_tests::boskos::{static_pool_yaml, BoskosClient};
use drover_tests::platform::{process_platform_args, token};
use drover_tests::process::{drover_binary, ProcessCluster};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_boskosctl_script_runs_unchanged() -> Result<()> {
    let dir = tempfile::tempdir()?;
    let pools = dir.path().join("pools.yaml");
    std::fs::write(&pools, static_pool_yaml("gce-project", &["p1", "p2"]))?;
    let mut args = process_platform_args(dir.path())?;
    args.extend([
        format!("--pools={}", pools.display()),
        "--pool-sync-interval=200ms".into(),
    ]);
    let nodes = ProcessCluster::start_with_args(3, &args)?;
    let leader = nodes.leader(Duration::from_secs(20)).await?;
    let header = format!("Bearer {}", token("ci"));
    let boskos = BoskosClient::authorized(&nodes.api_addr(leader), Some(&header));
    boskos
        .wait_for_free("gce-project", 2, Duration::from_secs(20))
        .await?;

    let bin = dir.path().join("bin");
    std::fs::create_dir(&bin)?;
    std::os::unix::fs::symlink(drover_binary()?, bin.join("boskosctl"))?;
    let password = dir.path().join("password");
    std::fs::write(&password, token("ci"))?;
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default());
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("compat/boskosctl-script.sh");
    let out = Command::new("bash")
        .arg(&script)
        .env("PATH", &path)
        .env("BOSKOS_URL", format!("http://{}", nodes.api_addr(leader)))
        .env("PASSWORD_FILE", &password)
        .output()?;
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    ensure!(out.status.success(), "the script failed:\n{said}");
    ensure!(said.matches("heartbeat sent for resource").count() >= 2, "{said}");
    ensure!(
        said.contains("reached timeout, stopping heartbeats") && said.contains("released resource"),
        "{said}"
    );
    let name = said
        .lines()
        .find_map(|l| l.strip_prefix("acquired "))
        .context("the script names what it acquired")?
        .to_string();
    let metric = boskos.metric("gce-project").await?;
    ensure!(
        metric.json["current"]["dirty"] == 1,
        "{name} released dirty: {}",
        metric.text
    );

    // The same commands under `drover boskos`; boskosctl's own error without --server-url.
    let drover = drover_binary()?;
    let metrics = Command::new(&drover)
        .args([
            "boskos",
            "--server-url",
            &format!("http://{}", nodes.api_addr(leader)),
        ])
        .args([
            "--owner-name",
            "ci",
            "--password-file",
            &password.to_string_lossy(),
            "metrics",
            "--type",
            "gce-project",
        ])
        .output()?;
    let json: serde_json::Value = serde_json::from_slice(&metrics.stdout).context("compact JSON")?;
    ensure!(
        json["current"]["dirty"] == 1 && json["current"]["free"] == 1,
        "{json}"
    );
    let missing = Command::new(bin.join("boskosctl"))
        .args(["--owner-name", "ci", "metrics", "--type", "gce-project"])
        .output()?;
    ensure!(missing.status.code() == Some(1), "{missing:?}");
    ensure!(
        String::from_utf8_lossy(&missing.stderr).contains("server-url"),
        "{missing:?}"
    );
    Ok(())
}
