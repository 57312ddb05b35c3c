//! `drover snapshot save` from a running three-node cluster while eight writers create leases,
//! `restore` into a new three-node cluster: every write acknowledged before the save started is
//! there, and the new cluster accepts writes. A file with one byte altered is refused by
//! `status` and `restore` (checksum); a cluster that holds something refuses a restore (exit 4)
//! unless `--force`. A well-formed file whose revision leaves no room to grow is refused with a
//! `400`, and every write after it still gets a larger revision.

use std::process::{Command, Output};
use std::time::Duration;

use anyhow::{ensure, Context, Result};
use drover_tests::client::LeaseClient;
use drover_tests::process::{drover_binary, ProcessCluster};
use drover_tests::wait::eventually;
use drover_tests::writers::LeaseWriters;
use sha2::{Digest, Sha256};

fn servers(nodes: &ProcessCluster) -> String {
    (1..=3)
        .map(|id| format!("http://{}", nodes.api_addr(id)))
        .collect::<Vec<_>>()
        .join(",")
}

fn snapshot(args: &[&str], servers: &str) -> Result<Output> {
    Ok(Command::new(drover_binary()?)
        .arg("snapshot")
        .args(args)
        .env("DROVER_SERVER", servers)
        .env_remove("DROVER_TOKEN")
        .output()?)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_snapshot_saved_under_writes_restores_into_a_new_cluster() -> Result<()> {
    let dir = tempfile::tempdir()?;
    let file = dir.path().join("drover.snapshot");
    let old = ProcessCluster::start(3)?;
    old.leader(Duration::from_secs(20)).await?;
    let clients: Vec<LeaseClient> = (1..=3).map(|id| LeaseClient::new(&old.api_addr(id))).collect();
    let writers = LeaseWriters::start(&clients, "snap", 8);
    eventually(Duration::from_secs(10), "some acknowledged writes", || async {
        (writers.acknowledged().len() >= 50).then_some(())
    })
    .await?;
    // Everything acknowledged now must be in the snapshot; writes go on during the save.
    let before = writers.acknowledged();
    let saved = snapshot(&["save", &file.to_string_lossy()], &servers(&old))?;
    ensure!(saved.status.success(), "save: {saved:?}");
    writers.stop().await?;
    let mode = std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(&file)?.permissions());
    ensure!(mode & 0o077 == 0, "the snapshot holds secrets: mode {mode:o}");
    let status = snapshot(&["status", &file.to_string_lossy()], "")?;
    ensure!(status.status.success(), "status: {status:?}");
    ensure!(
        String::from_utf8_lossy(&status.stdout).contains("sha256"),
        "{status:?}"
    );

    // An altered copy is refused before anything is sent.
    let mut altered = std::fs::read(&file)?;
    let at = altered.len() - 3;
    altered[at] = if altered[at] == b'1' { b'2' } else { b'1' };
    let bad = dir.path().join("altered.snapshot");
    std::fs::write(&bad, &altered)?;
    let refused = snapshot(&["status", &bad.to_string_lossy()], "")?;
    ensure!(refused.status.code() == Some(1), "{refused:?}");
    ensure!(
        String::from_utf8_lossy(&refused.stderr).contains("checksum"),
        "{refused:?}"
    );

    // A new cluster takes the snapshot; every write acknowledged before the save is there.
    let new = ProcessCluster::start(3)?;
    new.leader(Duration::from_secs(20)).await?;
    let refused = snapshot(&["restore", &bad.to_string_lossy()], &servers(&new))?;
    ensure!(refused.status.code() == Some(1), "{refused:?}");
    let restored = snapshot(&["restore", &file.to_string_lossy()], &servers(&new))?;
    ensure!(restored.status.success(), "restore: {restored:?}");
    let reader = LeaseClient::new(&new.api_addr(2));
    for name in &before {
        let answer = reader.get("snap", name, "").await?;
        ensure!(
            answer.status == 200,
            "{name} acknowledged before the save is missing: {answer:?}"
        );
    }
    let created = LeaseClient::new(&new.api_addr(3))
        .create("snap", "after-restore", "me")
        .await?;
    ensure!(
        created.status == 201,
        "the new cluster accepts writes: {created:?}"
    );
    // Now it holds something: a second restore needs --force.
    let again = snapshot(&["restore", &file.to_string_lossy()], &servers(&new))?;
    ensure!(again.status.code() == Some(4), "{again:?}");
    let forced = snapshot(&["restore", "--force", &file.to_string_lossy()], &servers(&new))?;
    ensure!(forced.status.success(), "{forced:?}");
    let gone = reader.get("snap", "after-restore", "").await?;
    ensure!(
        gone.status == 404,
        "a forced restore replaces the state: {gone:?}"
    );
    // A well-formed file of a state at the top of the revisions is refused, even forced.
    let crafted = with_revision(&std::fs::read(&file)?, u64::MAX - 1)?;
    let answer = reqwest::Client::builder()
        .no_proxy()
        .build()?
        .put(format!("http://{}/snapshot?force=true", new.api_addr(1)))
        .body(crafted)
        .send()
        .await?;
    let status = answer.status();
    let text = answer.text().await?;
    ensure!(
        status == 400,
        "a state without room to grow answered {status}: {text}"
    );
    ensure!(
        text.contains("18446744073709551614"),
        "the refusal names the revision: {text}"
    );
    let mut versions = Vec::new();
    for name in ["top-1", "top-2", "top-3"] {
        let created = reader.create("snap", name, "me").await?;
        ensure!(created.status == 201, "{created:?}");
        let version: u64 = created.body["metadata"]["resourceVersion"]
            .as_str()
            .context("resourceVersion")?
            .parse()?;
        versions.push(version);
    }
    ensure!(
        versions.windows(2).all(|w| w[0] < w[1]) && versions[2] < 1 << 53,
        "every write gets its own, larger revision: {versions:?}"
    );
    println!(
        "snapshot: {} writes acknowledged before the save, all restored",
        before.len()
    );
    Ok(())
}

/// `file` with its state's revision (and its header's) set to `revision`, its length and digest
/// made to match: a well-formed file a tool could write.
fn with_revision(file: &[u8], revision: u64) -> Result<Vec<u8>> {
    let newline = file.iter().position(|b| *b == b'\n').context("header line")?;
    let mut header: serde_json::Value = serde_json::from_slice(&file[..newline])?;
    let mut state: serde_json::Value = serde_json::from_slice(&file[newline + 1..])?;
    state["revision"] = revision.into();
    let body = serde_json::to_vec(&state)?;
    header["revision"] = revision.into();
    header["bytes"] = body.len().into();
    header["sha256"] = Sha256::digest(&body)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect::<String>()
        .into();
    let mut crafted = serde_json::to_vec(&header)?;
    crafted.push(b'\n');
    crafted.extend_from_slice(&body);
    Ok(crafted)
}
