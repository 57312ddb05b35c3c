//! Migration when a cluster fails (the scheduling issue's acceptance 3): three `drover serve`
//! processes, three `sim` clusters labelled `zone=a|b|c`, and 60 services of two instances —
//! 50 free to move, 5 constrained to two zones, 5 pinned (`migration: false`). The cluster
//! running the most services is switched off: it goes `OFFLINE`, and within a bounded time every
//! movable service runs on a surviving cluster that satisfies its constraints (read in the
//! surviving agents' inventories) while the pinned ones say why they stay. When the cluster
//! returns, the replaced copies there are removed — never the pinned ones' — and every service
//! runs exactly its two instances on exactly one cluster. The leader is SIGKILLed while the
//! services move (acceptance 5): the next one carries the moves on from the store.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use anyhow::{ensure, Context, Result};
use drover_tests::agent::{AgentClient, AgentProcess};
use drover_tests::platform::{process_platform_args, token, PlatformClient, OPERATOR_SUBJECT};
use drover_tests::process::ProcessCluster;
use drover_tests::services::{
    cluster_state, expect_ok, label_cluster, placements, read_all, tenant_with_clusters,
};
use drover_tests::wait::eventually;
use reqwest::Method;
use serde_json::{json, Value};
use tempfile::TempDir;

const ELECTION: Duration = Duration::from_secs(20);
const CONVERGE: Duration = Duration::from_secs(90);
const ZONES: [&str; 3] = ["a", "b", "c"];

/// Service `i`: 0-49 move freely, 50-54 are constrained to zones a and b, 55-59 are pinned.
fn service(i: usize) -> (String, Value) {
    let constraints = match i {
        50..=54 => json!({"labels": ["zone in (a, b)"]}),
        55..=59 => json!({"migration": false}),
        _ => json!({}),
    };
    let body = json!({"deployment": {
        "roles": {"web": {"instances": 2, "exec": {"argv": ["web"]},
            "resources": {"cpu_millis": 10, "memory_mib": 4}}},
        "constraints": constraints,
    }});
    (format!("s{i:02}"), body)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn services_leave_a_failed_cluster_and_its_copies_go_when_it_returns() -> Result<()> {
    let dir = TempDir::new()?;
    let mut args = process_platform_args(dir.path())?;
    args.extend([
        "--cluster-probe-interval=200ms".to_string(),
        "--cluster-offline-after=2s".to_string(),
        "--service-migration-interval=1s".to_string(),
    ]);
    let mut nodes = ProcessCluster::start_with_args(3, &args)?;
    let agents: Vec<AgentProcess> = ZONES
        .iter()
        .map(|_| AgentProcess::start(&["--executor=sim"]))
        .collect::<Result<_>>()?;
    let leader = nodes.leader(ELECTION).await?;
    let follower = (1..=3).find(|id| *id != leader).context("no follower")?;
    let root = PlatformClient::new(&nodes.api_addr(leader), Some(token(OPERATOR_SUBJECT)));
    let alice = PlatformClient::new(&nodes.api_addr(follower), Some(token("alice")));
    let named: Vec<(&AgentProcess, &str)> = agents.iter().zip(ZONES).collect();
    tenant_with_clusters(&root, &alice, &named, 1_000_000).await?;
    for zone in ZONES {
        label_cluster(&root, zone, json!({"zone": zone})).await?;
        cluster_state(&root, zone, "ONLINE", CONVERGE).await?;
    }
    let clients: Vec<(&str, AgentClient)> =
        ZONES.iter().zip(&agents).map(|(z, a)| (*z, a.client())).collect();
    for i in 0..60 {
        let (name, body) = service(i);
        let path = format!("/tenant/acme/service/{name}?accept=true");
        expect_ok(&alice, Method::POST, &path, Some(&body)).await?;
    }
    // Every service runs its two instances on one cluster.
    let before = eventually(CONVERGE, "all 60 services to run", || async {
        let all = read_all(&clients).await?;
        let by_service = placements(&all);
        let settled = by_service.len() == 60
            && by_service
                .values()
                .all(|zones| zones.len() == 1 && zones.values().all(|n| *n == 2));
        settled.then_some(by_service)
    })
    .await?;

    // The cluster running the most services fails for good.
    let mut load: BTreeMap<&str, usize> = BTreeMap::new();
    for zones in before.values() {
        for zone in zones.keys() {
            *load
                .entry(ZONES.iter().find(|z| *z == zone).context("zone")?)
                .or_default() += 1;
        }
    }
    let victim = *load.iter().max_by_key(|(_, n)| **n).context("no load")?.0;
    let index = ZONES.iter().position(|z| *z == victim).context("victim")?;
    let victim_agent = clients[index].1.clone();
    let on_victim: BTreeSet<String> = before
        .iter()
        .filter(|(_, zones)| zones.contains_key(victim))
        .map(|(name, _)| name.clone())
        .collect();
    let pinned: BTreeSet<String> = (55..60).map(|i| service(i).0).collect();
    // The busiest of three clusters runs at least a third of the services.
    ensure!(on_victim.len() >= 20, "{on_victim:?}");
    eprintln!(
        "t240: cluster {victim} fails with {} services, {} of them pinned",
        on_victim.len(),
        on_victim.intersection(&pinned).count()
    );
    victim_agent.set_unreachable(true).await?;
    cluster_state(&root, victim, "OFFLINE", CONVERGE).await?;
    // The leader dies while the services move; the clients go to a node that lives.
    let leader = nodes.leader(ELECTION).await?;
    nodes.kill(leader)?;
    let next = nodes.leader(ELECTION).await?;
    let alice = PlatformClient::new(&nodes.api_addr(next), Some(token("alice")));

    // Every movable service that ran there now runs on a surviving cluster that satisfies its
    // constraints; the pinned ones say why they stay.
    let survivors: Vec<(&str, AgentClient)> = clients
        .iter()
        .filter(|(z, _)| *z != victim)
        .map(|(z, c)| (*z, c.clone()))
        .collect();
    eventually(
        CONVERGE,
        "the movable services to run on surviving clusters",
        || async {
            let all = read_all(&survivors).await?;
            let by_service = placements(&all);
            let moved = on_victim.iter().filter(|s| !pinned.contains(*s)).all(|name| {
                by_service.get(name).is_some_and(|zones| {
                    let allowed = |zone: &str| {
                        let constrained = (50..55).any(|i| service(i).0 == *name);
                        !constrained || zone == "a" || zone == "b"
                    };
                    zones.len() == 1 && zones.iter().all(|(zone, n)| *n == 2 && allowed(zone))
                })
            });
            moved.then_some(())
        },
    )
    .await?;
    for name in on_victim.iter().filter(|s| pinned.contains(*s)) {
        let reason = eventually(CONVERGE, &format!("{name} to say why it stays"), || async {
            let answer = alice.get(&format!("/tenant/acme/service/{name}")).await.ok()?;
            let reason = answer.body["data"]["reconcile"]["reason"].as_str()?.to_string();
            reason.contains("migration: false").then_some(reason)
        })
        .await?;
        ensure!(reason.contains(&format!("operator/{victim}")), "{name}: {reason}");
    }

    // The cluster returns: the replaced copies go, the pinned ones stay, and every service runs
    // exactly two instances on exactly one cluster.
    victim_agent.set_unreachable(false).await?;
    eventually(
        CONVERGE,
        "the replaced copies to go and every service to run exactly once",
        || async {
            let all = read_all(&clients).await?;
            let by_service = placements(&all);
            let exact = by_service.len() == 60
                && by_service
                    .values()
                    .all(|zones| zones.len() == 1 && zones.values().all(|n| *n == 2));
            let pinned_stay = on_victim.iter().filter(|s| pinned.contains(*s)).all(|name| {
                by_service
                    .get(name)
                    .is_some_and(|zones| zones.contains_key(victim))
            });
            let others_left = on_victim.iter().filter(|s| !pinned.contains(*s)).all(|name| {
                by_service
                    .get(name)
                    .is_some_and(|zones| !zones.contains_key(victim))
            });
            (exact && pinned_stay && others_left).then_some(())
        },
    )
    .await?;
    Ok(())
}
