//! `drover cluster recover`: a three-node cluster under eight writers loses every node at once
//! (SIGKILL), as if two disks were gone for good and the third machine stopped. Each member's
//! data directory is read into a snapshot file without a running node; the one whose log goes
//! furthest restores into a new three-node cluster, where every write acknowledged before the
//! kill is found and new writes are accepted. The old directories are left as they were, and a
//! directory without a member's data is refused with exit 1.

use std::process::{Command, Output};
use std::time::Duration;

use anyhow::{ensure, Context, Result};
use drover_tests::client::LeaseClient;
use drover_tests::process::{drover_binary, ProcessCluster};
use drover_tests::wait::eventually;
use drover_tests::writers::LeaseWriters;

fn drover(args: &[&str]) -> Result<Output> {
    Ok(Command::new(drover_binary()?)
        .args(args)
        .env_remove("DROVER_TOKEN")
        .output()?)
}

/// The `applied through entry N` a recovery printed.
fn applied_through(out: &Output) -> Option<u64> {
    let text = String::from_utf8_lossy(&out.stdout);
    let rest = text.split("applied through entry ").nth(1)?;
    rest.split(|c: char| !c.is_ascii_digit()).next()?.parse().ok()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_cluster_that_lost_its_quorum_is_recovered_from_a_members_data() -> Result<()> {
    let dir = tempfile::tempdir()?;
    let mut old = ProcessCluster::start(3)?;
    old.leader(Duration::from_secs(20)).await?;
    let clients: Vec<LeaseClient> = (1..=3).map(|id| LeaseClient::new(&old.api_addr(id))).collect();
    let writers = LeaseWriters::start(&clients, "lost", 8);
    eventually(Duration::from_secs(20), "300 acknowledged writes", || async {
        (writers.acknowledged().len() >= 300).then_some(())
    })
    .await?;
    // Every node dies mid-write; only what was acknowledged before counts.
    for id in 1..=3 {
        old.kill(id)?;
    }
    let acknowledged = writers.stop().await?;

    // Each member's data, read without a node; the furthest one is restored.
    let mut best: Option<(u64, std::path::PathBuf)> = None;
    for id in 1..=3 {
        let data = old.data_dir(id);
        let listing_before = std::fs::read_dir(&data)?.count();
        let file = dir.path().join(format!("member-{id}.snapshot"));
        let out = drover(&[
            "cluster",
            "recover",
            "--data-dir",
            &data.to_string_lossy(),
            "--out",
            &file.to_string_lossy(),
        ])?;
        ensure!(out.status.success(), "recover member {id}: {out:?}");
        let through = applied_through(&out).with_context(|| format!("{out:?}"))?;
        let mode = std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(&file)?.permissions());
        ensure!(mode & 0o077 == 0, "the snapshot holds secrets: mode {mode:o}");
        ensure!(
            std::fs::read_dir(&data)?.count() == listing_before,
            "the member's directory was changed"
        );
        if best.as_ref().is_none_or(|(most, _)| through > *most) {
            best = Some((through, file));
        }
    }
    let (through, file) = best.context("no member recovered")?;
    let status = drover(&["snapshot", "status", &file.to_string_lossy()])?;
    ensure!(status.status.success(), "{status:?}");

    let new = ProcessCluster::start(3)?;
    new.leader(Duration::from_secs(20)).await?;
    let servers = (1..=3)
        .map(|id| format!("http://{}", new.api_addr(id)))
        .collect::<Vec<_>>()
        .join(",");
    let restored = drover(&[
        "snapshot",
        "restore",
        "--server",
        &servers,
        &file.to_string_lossy(),
    ])?;
    ensure!(restored.status.success(), "restore: {restored:?}");
    let reader = LeaseClient::new(&new.api_addr(2));
    for name in &acknowledged {
        let answer = reader.get("lost", name, "").await?;
        ensure!(
            answer.status == 200,
            "{name}, acknowledged before the quorum was lost, is missing: {answer:?}"
        );
    }
    let created = LeaseClient::new(&new.api_addr(3))
        .create("lost", "after-recovery", "me")
        .await?;
    ensure!(
        created.status == 201,
        "the new cluster accepts writes: {created:?}"
    );

    let empty = tempfile::tempdir()?;
    let refused = drover(&[
        "cluster",
        "recover",
        "--data-dir",
        &empty.path().to_string_lossy(),
        "--out",
        &dir.path().join("nothing").to_string_lossy(),
    ])?;
    ensure!(
        refused.status.code() == Some(1)
            && String::from_utf8_lossy(&refused.stderr).contains("no member's data"),
        "{refused:?}"
    );
    println!(
        "recover: {} acknowledged writes, all restored from the member applied through entry {through}",
        acknowledged.len()
    );
    Ok(())
}
