//! Helpers for tests of services: an `OK` call, and a tenant whose environment runs on agents
//! registered as platform-wide clusters.

use std::collections::BTreeMap;

use anyhow::{ensure, Result};
use drover_model::cluster::agent_api::Inventory;
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

use crate::agent::{AgentClient, AgentProcess, AGENT_TOKEN};
use crate::platform::{PlatformClient, OPERATOR_SUBJECT};

/// Makes a call that must answer `200`; returns the body.
pub async fn expect_ok(
    client: &PlatformClient,
    method: Method,
    path: &str,
    body: Option<&Value>,
) -> Result<Value> {
    let answer = client.call(method.clone(), path, body).await?;
    ensure!(answer.status == StatusCode::OK, "{method} {path}: {answer:?}");
    Ok(answer.body)
}

/// Registers `root` (an operator) and each agent as the platform-wide cluster named beside it,
/// and lets alice make tenant `acme` with account `main` and environment `prod` allowing
/// `vcpu_max` millicores.
pub async fn tenant_with_clusters(
    root: &PlatformClient,
    alice: &PlatformClient,
    agents: &[(&AgentProcess, &str)],
    vcpu_max: u64,
) -> Result<()> {
    root.register(OPERATOR_SUBJECT).await?;
    for (agent, cluster) in agents {
        let registration = json!({"endpoint": format!("http://{}", agent.addr()), "join_token": AGENT_TOKEN});
        expect_ok(
            root,
            Method::POST,
            &format!("/tenant/operator/cluster/{cluster}"),
            Some(&registration),
        )
        .await?;
    }
    alice.register("alice").await?;
    expect_ok(alice, Method::POST, "/tenant/acme", Some(&json!({}))).await?;
    let account = json!({"spec": {"iaas": "sim"}});
    expect_ok(alice, Method::POST, "/tenant/acme/account/main", Some(&account)).await?;
    let env = json!({"marks": {"vcpu": {"max": vcpu_max}}});
    expect_ok(
        alice,
        Method::POST,
        "/tenant/acme/account/main/environment/prod",
        Some(&env),
    )
    .await?;
    Ok(())
}

/// Sets a platform-wide cluster's labels (as `root`, an operator).
pub async fn label_cluster(root: &PlatformClient, cluster: &str, labels: Value) -> Result<()> {
    let path = format!("/tenant/operator/cluster/{cluster}");
    expect_ok(root, Method::PATCH, &path, Some(&json!({"labels": labels}))).await?;
    Ok(())
}

/// Waits until a platform-wide cluster is in `state`.
pub async fn cluster_state(
    root: &PlatformClient,
    cluster: &str,
    state: &str,
    timeout: std::time::Duration,
) -> Result<()> {
    let path = format!("/tenant/operator/cluster/{cluster}");
    crate::wait::eventually(timeout, &format!("cluster {cluster} to be {state}"), || async {
        let answer = root.get(&path).await.ok()?;
        (answer.body["data"]["status"]["state"] == state).then_some(())
    })
    .await
}

/// A cluster's `data` as the platform answers `GET path` (`/tenant/{t}/cluster/{c}`), if it
/// answers `200`.
pub async fn cluster_at(client: &PlatformClient, path: &str) -> Option<Value> {
    let answer = client.get(path).await.ok()?;
    (answer.status == StatusCode::OK).then(|| answer.body["data"].clone())
}

/// Waits until the cluster at `path` is in `state`; its `data` then.
pub async fn cluster_state_at(
    client: &PlatformClient,
    path: &str,
    state: &str,
    timeout: std::time::Duration,
) -> Result<Value> {
    crate::wait::eventually(timeout, &format!("{path} to be {state}"), || async {
        cluster_at(client, path)
            .await
            .filter(|c| c["status"]["state"] == state)
    })
    .await
}

/// Which agents (by name) run instances of each service (the second part of an instance id),
/// and how many each.
pub fn placements(inventories: &[(&str, Inventory)]) -> BTreeMap<String, BTreeMap<String, usize>> {
    let mut by_service: BTreeMap<String, BTreeMap<String, usize>> = BTreeMap::new();
    for (zone, inventory) in inventories {
        for instance in &inventory.instances {
            let Some(service) = instance.id.as_str().split('.').nth(1) else {
                continue;
            };
            *by_service
                .entry(service.to_string())
                .or_default()
                .entry(zone.to_string())
                .or_default() += 1;
        }
    }
    by_service
}

/// Every agent's inventory, by the name given with it; `None` when one does not answer.
pub async fn read_all<'a>(agents: &'a [(&'a str, AgentClient)]) -> Option<Vec<(&'a str, Inventory)>> {
    let mut all = Vec::new();
    for (zone, agent) in agents {
        all.push((*zone, agent.inventory().await.ok()?));
    }
    Some(all)
}
