//! Writes through a follower (#36): a lease write sent to a follower is answered once the leader
//! has committed and applied it, without the follower waiting for its own apply; that follower's
//! reads still read it back — 200 writes through a follower, each followed at once by a
//! `?consistency=stale` read on the same follower, which must show that write and no earlier
//! one — and a linearizable read on the third node shows the last one.

use std::time::Duration;

use anyhow::{ensure, Result};
use drover_tests::process::ProcessCluster;
use reqwest::StatusCode;

const ELECTION: Duration = Duration::from_secs(20);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_follower_reads_back_the_writes_it_answered() -> Result<()> {
    let nodes = ProcessCluster::start(3)?;
    let leader = nodes.leader(ELECTION).await?;
    let followers: Vec<u64> = nodes
        .running_ids()
        .into_iter()
        .filter(|id| *id != leader)
        .collect();
    let (follower, other) = (followers[0], followers[1]);
    let client = nodes.client(follower);
    let created = client.create("ryw", "lease", "h-0").await?;
    ensure!(created.status == StatusCode::CREATED, "{created:?}");
    let mut version = created.resource_version();
    for i in 1..=200 {
        let holder = format!("h-{i}");
        let written = client
            .replace("ryw", "lease", &holder, version.as_deref())
            .await?;
        ensure!(written.status == StatusCode::OK, "write {i}: {written:?}");
        version = written.resource_version();
        let read = client.get("ryw", "lease", "?consistency=stale").await?;
        ensure!(
            read.status == StatusCode::OK
                && read.body["spec"]["holderIdentity"] == holder.as_str()
                && read.resource_version() == version,
            "the stale read after write {i} on the follower that answered it: {read:?}"
        );
    }
    let read = nodes.client(other).get("ryw", "lease", "").await?;
    ensure!(
        read.body["spec"]["holderIdentity"] == "h-200" && read.resource_version() == version,
        "a linearizable read on another node: {read:?}"
    );
    Ok(())
}
