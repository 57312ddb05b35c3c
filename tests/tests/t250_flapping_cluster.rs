//! A flapping cluster (the scheduling issue's acceptance 4): three `drover serve` processes,
//! three `sim` clusters, 30 services of two instances. One cluster's agent goes unreachable and
//! back every 5 s for two minutes, long enough each time for the cluster to go `OFFLINE`
//! (`--cluster-offline-after=2s`). With a migration interval longer than the run, every service
//! moves at most once (followed through a watch on the services), and at the end every service
//! runs exactly its two instances on exactly one cluster, with nothing left behind on the
//! flapping one (read in the agents' inventories).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{ensure, Context, Result};
use drover_tests::agent::{AgentClient, AgentProcess};
use drover_tests::client::read_events;
use drover_tests::platform::{process_platform_args, token, PlatformClient, OPERATOR_SUBJECT};
use drover_tests::process::ProcessCluster;
use drover_tests::services::{cluster_state, expect_ok, placements, read_all, tenant_with_clusters};
use drover_tests::wait::eventually;
use reqwest::Method;
use serde_json::json;
use tempfile::TempDir;
use tokio::task::JoinHandle;

const ELECTION: Duration = Duration::from_secs(20);
const CONVERGE: Duration = Duration::from_secs(60);
const ZONES: [&str; 3] = ["a", "b", "c"];
const SERVICES: usize = 30;
const FLAPPING: Duration = Duration::from_secs(120);
const HALF_PERIOD: Duration = Duration::from_secs(5);

/// Each service's cluster name, as the platform says now (one list and one read each).
async fn clusters_of(client: &PlatformClient) -> Option<BTreeMap<String, String>> {
    let mut clusters = BTreeMap::new();
    for i in 0..SERVICES {
        let name = format!("f{i:02}");
        let answer = client.get(&format!("/tenant/acme/service/{name}")).await.ok()?;
        let cluster = answer.body["data"]["cluster"]["name"].as_str()?.to_string();
        clusters.insert(name, cluster);
    }
    Some(clusters)
}

/// Follows a services watch, recording each service's clusters in the order it was seen on
/// them, until the stream ends or the task is aborted.
fn follow_moves(
    mut watch: reqwest::Response,
    moves: Arc<Mutex<BTreeMap<String, Vec<String>>>>,
) -> JoinHandle<()> {
    tokio::spawn(async move {
        while let Ok(events) = read_events(&mut watch, 1, Duration::from_secs(600)).await {
            for event in events {
                let object = &event["object"];
                let (Some(name), Some(cluster)) =
                    (object["name"].as_str(), object["cluster"]["name"].as_str())
                else {
                    continue;
                };
                let mut moves = moves.lock().unwrap_or_else(|p| p.into_inner());
                let seen = moves.entry(name.to_string()).or_default();
                if seen.last().map(String::as_str) != Some(cluster) {
                    seen.push(cluster.to_string());
                }
            }
        }
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flapping_cluster_moves_each_service_at_most_once_and_leaks_nothing() -> Result<()> {
    let dir = TempDir::new()?;
    let mut args = process_platform_args(dir.path())?;
    args.extend([
        "--cluster-probe-interval=200ms".to_string(),
        "--cluster-offline-after=2s".to_string(),
        "--service-migration-interval=10m".to_string(),
    ]);
    let nodes = ProcessCluster::start_with_args(3, &args)?;
    let agents: Vec<AgentProcess> = ZONES
        .iter()
        .map(|_| AgentProcess::start(&["--executor=sim"]))
        .collect::<Result<_>>()?;
    let leader = nodes.leader(ELECTION).await?;
    let root = PlatformClient::new(&nodes.api_addr(leader), Some(token(OPERATOR_SUBJECT)));
    let alice = PlatformClient::new(&nodes.api_addr(leader), Some(token("alice")));
    let named: Vec<(&AgentProcess, &str)> = agents.iter().zip(ZONES).collect();
    tenant_with_clusters(&root, &alice, &named, 1_000_000).await?;
    for zone in ZONES {
        cluster_state(&root, zone, "ONLINE", CONVERGE).await?;
    }
    let clients: Vec<(&str, AgentClient)> =
        ZONES.iter().zip(&agents).map(|(z, a)| (*z, a.client())).collect();
    let body = json!({"deployment": {"roles": {"web": {"instances": 2, "exec": {"argv": ["web"]},
        "resources": {"cpu_millis": 10, "memory_mib": 4}}}}});
    for i in 0..SERVICES {
        let path = format!("/tenant/acme/service/f{i:02}?accept=true");
        expect_ok(&alice, Method::POST, &path, Some(&body)).await?;
    }
    let exactly_once = |all: &[(&str, drover_model::cluster::agent_api::Inventory)]| {
        let by_service = placements(all);
        by_service.len() == SERVICES
            && by_service
                .values()
                .all(|zones| zones.len() == 1 && zones.values().all(|n| *n == 2))
    };
    eventually(CONVERGE, "every service to run", || async {
        let all = read_all(&clients).await?;
        exactly_once(&all).then_some(())
    })
    .await?;
    let last = eventually(CONVERGE, "every service placed", || clusters_of(&alice)).await?;
    // The flapping one is the cluster with the most services.
    let mut load: BTreeMap<&str, usize> = BTreeMap::new();
    for cluster in last.values() {
        *load.entry(cluster.as_str()).or_default() += 1;
    }
    let flapping = load
        .iter()
        .max_by_key(|(_, n)| **n)
        .map(|(c, _)| c.to_string())
        .context("load")?;
    let on_flapping = load.get(flapping.as_str()).copied().unwrap_or(0);
    let agent = clients
        .iter()
        .find(|(z, _)| *z == flapping)
        .map(|(_, c)| c.clone())
        .context("agent")?;
    eprintln!("t250: cluster {flapping} flaps with {on_flapping} of {SERVICES} services");

    let watch = alice.stream("/tenant/acme/service?watch=true").await?;
    ensure!(watch.status() == 200, "{:?}", watch.status());
    let seen = Arc::new(Mutex::new(BTreeMap::new()));
    let follower = follow_moves(watch, seen.clone());
    let started = Instant::now();
    let mut unreachable = false;
    while started.elapsed() < FLAPPING {
        unreachable = !unreachable;
        agent.set_unreachable(unreachable).await?;
        // The nemesis's period, not a wait for a condition.
        tokio::time::sleep(HALF_PERIOD).await;
    }
    agent.set_unreachable(false).await?;
    // Let the watch catch up with the last moves before counting them.
    let settled = eventually(CONVERGE, "every service placed on an ONLINE cluster", || async {
        let now = clusters_of(&alice).await?;
        let caught_up = {
            let seen = seen.lock().unwrap_or_else(|p| p.into_inner());
            now.iter()
                .all(|(s, c)| seen.get(s).and_then(|v| v.last()) == Some(c))
        };
        caught_up.then_some(now)
    })
    .await?;
    follower.abort();
    let moves: BTreeMap<String, usize> = seen
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .iter()
        .map(|(s, clusters)| (s.clone(), clusters.len().saturating_sub(1)))
        .filter(|(_, n)| *n > 0)
        .collect();
    eprintln!("t250: moves {moves:?}; placements now {settled:?}");
    ensure!(
        moves.values().all(|n| *n <= 1),
        "a service moved more than once: {moves:?}"
    );
    ensure!(!moves.is_empty(), "nothing moved off the flapping cluster");

    // At the end: exactly once everywhere, nothing of a moved service left on the flapping one.
    eventually(CONVERGE, "every service to run exactly once", || async {
        let all = read_all(&clients).await?;
        let by_service = placements(&all);
        let moved_away = moves.keys().all(|s| {
            by_service
                .get(s)
                .is_some_and(|zones| !zones.contains_key(&flapping))
        });
        (exactly_once(&all) && moved_away).then_some(())
    })
    .await?;
    Ok(())
}
