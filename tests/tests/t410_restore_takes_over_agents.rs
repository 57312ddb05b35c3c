//! A cluster restored from another one's snapshot takes over the agents, although its Raft terms
//! start again from 1: the old cluster runs a service on a `sim` agent through several leader
//! kills (so the agent's fence is at a higher term), its state is saved, every old node is
//! killed, and a new cluster restores the snapshot. The new cluster's leader fences the agent in
//! epoch 1 and carries out a scale-up there (checked in the agent's own inventory). Before the
//! epoch, the agent refused every call of the new cluster as coming from an older term.

use std::process::{Command, Output};
use std::time::Duration;

use anyhow::{ensure, Result};
use drover_model::cluster::agent_api::Inventory;
use drover_tests::agent::{AgentClient, AgentProcess};
use drover_tests::platform::{process_platform_args, token, PlatformClient, OPERATOR_SUBJECT};
use drover_tests::process::{drover_binary, ProcessCluster};
use drover_tests::services::{expect_ok, tenant_with_clusters};
use drover_tests::wait::eventually;
use reqwest::Method;
use serde_json::json;

const ELECTION: Duration = Duration::from_secs(20);
const CONVERGE: Duration = Duration::from_secs(30);

fn snapshot(args: &[&str], nodes: &ProcessCluster) -> Result<Output> {
    let servers = (1..=3)
        .map(|id| format!("http://{}", nodes.api_addr(id)))
        .collect::<Vec<_>>()
        .join(",");
    Ok(Command::new(drover_binary()?)
        .arg("snapshot")
        .args(args)
        .env("DROVER_SERVER", servers)
        .env("DROVER_TOKEN", token(OPERATOR_SUBJECT))
        .output()?)
}

/// The agent's inventory once it runs `count` instances of the service.
async fn runs(agent: &AgentClient, count: usize) -> Result<Inventory> {
    eventually(
        CONVERGE,
        &format!("the agent to run {count} instances"),
        || async {
            let inventory = agent.inventory().await.ok()?;
            let mine = inventory
                .instances
                .iter()
                .filter(|i| i.set.as_str() == "acme.t410")
                .count();
            (mine == count).then_some(inventory)
        },
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restored_cluster_fences_and_drives_the_old_clusters_agents() -> Result<()> {
    let dir = tempfile::tempdir()?;
    let mut args = process_platform_args(dir.path())?;
    args.push("--cluster-probe-interval=200ms".to_string());
    let mut old = ProcessCluster::start_with_args(3, &args)?;
    let agent = AgentProcess::sim(&[])?;
    let client = agent.client();
    let leader = old.leader(ELECTION).await?;
    let as_user = |nodes: &ProcessCluster, id: u64, subject: &str| {
        PlatformClient::new(&nodes.api_addr(id), Some(token(subject)))
    };
    let alice = as_user(&old, leader, "alice");
    tenant_with_clusters(
        &as_user(&old, leader, OPERATOR_SUBJECT),
        &alice,
        &[(&agent, "sim")],
        4000,
    )
    .await?;
    let body = json!({"deployment": {"roles": {"web": {"instances": 2, "exec": {"argv": ["web"]},
        "resources": {"cpu_millis": 10, "memory_mib": 4}}}}});
    expect_ok(
        &alice,
        Method::POST,
        "/tenant/acme/service/t410?accept=true",
        Some(&body),
    )
    .await?;
    runs(&client, 2).await?;

    // Two leader kills: the agent's fence moves to a later term of the old cluster.
    for _ in 0..2 {
        let leader = old.leader(ELECTION).await?;
        old.kill(leader)?;
        old.leader(ELECTION).await?;
        old.restart(leader)?;
    }
    let fenced = eventually(CONVERGE, "a later term's fence on the agent", || async {
        let inventory = client.inventory().await.ok()?;
        (inventory.fence.term >= 3).then_some(inventory.fence)
    })
    .await?;
    let file = dir.path().join("old.snapshot");
    let saved = snapshot(&["save", &file.to_string_lossy()], &old)?;
    ensure!(saved.status.success(), "save: {saved:?}");
    for id in 1..=3 {
        if old.pid_of(id).is_some() {
            old.kill(id)?;
        }
    }

    let new_dir = tempfile::tempdir()?;
    let new_args = process_platform_args(new_dir.path())?
        .into_iter()
        .chain(["--cluster-probe-interval=200ms".to_string()])
        .collect::<Vec<_>>();
    let new = ProcessCluster::start_with_args(3, &new_args)?;
    let leader = new.leader(ELECTION).await?;
    as_user(&new, leader, OPERATOR_SUBJECT)
        .register(OPERATOR_SUBJECT)
        .await?;
    let restored = snapshot(&["restore", "--force", &file.to_string_lossy()], &new)?;
    ensure!(restored.status.success(), "restore: {restored:?}");
    let alice = as_user(&new, leader, "alice");
    let scale = json!({"scale": {"web": 3}});
    expect_ok(
        &alice,
        Method::PATCH,
        "/tenant/acme/service/t410/revision/1/scale?accept=true",
        Some(&scale),
    )
    .await?;
    let inventory = match runs(&client, 3).await {
        Ok(inventory) => inventory,
        Err(e) => {
            let service = alice.get("/tenant/acme/service/t410").await?;
            let cluster = as_user(&new, leader, OPERATOR_SUBJECT)
                .get("/tenant/operator/cluster/sim")
                .await?;
            let now = client.inventory().await?;
            anyhow::bail!(
                "{e}: service {:?}\ncluster {:?}\nagent fence {} with {} instances\n{}",
                service.body,
                cluster.body,
                now.fence,
                now.instances.len(),
                new.log_of(leader)
                    .lines()
                    .rev()
                    .take(30)
                    .collect::<Vec<_>>()
                    .join("\n")
            );
        }
    };
    ensure!(
        inventory.fence.epoch == 1 && inventory.fence > fenced,
        "the new cluster's fence {} outranks the old {}",
        inventory.fence,
        fenced
    );
    Ok(())
}
