//! Metric scoring against a real Prometheus (Debian's package, started here on 127.0.0.1),
//! which scrapes a target this test controls: four `sim` clusters are scored on a gauge each,
//! through one platform-wide Prometheus provider. Two services start on the clusters the
//! gauges favour. When the gauges turn, the service whose clusters weigh the metric heavily
//! moves (its stickiness is outweighed), the one whose clusters weigh it lightly stays, both
//! checked in the agents' inventories after the leader has rescored every service twice.
//! Stopping Prometheus makes every cluster `FAILING_METRICS` (nothing moves); starting it
//! again clears the state.

use std::time::Duration;

use anyhow::{ensure, Context, Result};
use drover_tests::agent::{AgentClient, AgentProcess};
use drover_tests::platform::{process_platform_args, token, PlatformClient, OPERATOR_SUBJECT};
use drover_tests::process::ProcessCluster;
use drover_tests::prometheus::{Prometheus, ScrapeTarget};
use drover_tests::services::{cluster_state, expect_ok, tenant_with_clusters};
use drover_tests::wait::eventually;
use reqwest::Method;
use serde_json::{json, Value};
use tempfile::TempDir;

const ELECTION: Duration = Duration::from_secs(20);
const CONVERGE: Duration = Duration::from_secs(45);
const GAUGE: &str = "drover_test_load";

/// (cluster, pair label, weight of its metric)
const CLUSTERS: [(&str, &str, f64); 4] = [
    ("a1", "1", 1.0),
    ("b1", "1", 1.0),
    ("a2", "2", 0.01),
    ("b2", "2", 0.01),
];

fn service(pair: &str) -> Value {
    json!({"deployment": {
        "roles": {"web": {"instances": 1, "exec": {"argv": ["web"]},
            "resources": {"cpu_millis": 100, "memory_mib": 16}}},
        "constraints": {"labels": [format!("pair = {pair}")]},
    }})
}

async fn runs_on(agents: &[(&str, AgentClient)], service: &str) -> Option<Vec<String>> {
    let prefix = format!("acme.{service}.");
    let mut on = Vec::new();
    for (name, agent) in agents {
        let inventory = agent.inventory().await.ok()?;
        for instance in &inventory.instances {
            if instance.id.as_str().starts_with(&prefix) {
                on.push(name.to_string());
            }
        }
    }
    Some(on)
}

/// The leader's count of services scored again by periodic rescheduling.
async fn rescores(nodes: &ProcessCluster) -> Result<u64> {
    let leader = nodes.leader(ELECTION).await?;
    drover_tests::process::scraped(&nodes.api_addr(leader), "drover_service_rescores_total").await
}

/// Waits until a cluster's committed reading of its metric is normalised to `expected`.
async fn reading_is(root: &PlatformClient, cluster: &str, expected: f64) -> Result<()> {
    eventually(
        CONVERGE,
        &format!("cluster {cluster}'s metric read as {expected}"),
        || async {
            let view = root
                .get(&format!("/tenant/operator/cluster/{cluster}"))
                .await
                .ok()?;
            let reading = &view.body["data"]["status"]["metrics"]["values"][format!("load-{cluster}")];
            ((reading["normalised"].as_f64()? - expected).abs() < 1e-9).then_some(())
        },
    )
    .await
}

fn set_gauges(target: &ScrapeTarget, a: f64, b: f64) {
    for (cluster, _, _) in CLUSTERS {
        let value = if cluster.starts_with('a') { a } else { b };
        target.set(GAUGE, &[("cluster", cluster)], value);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prometheus_metrics_move_a_service_whose_stickiness_they_outweigh() -> Result<()> {
    let target = ScrapeTarget::start().await?;
    set_gauges(&target, 80.0, 20.0);
    let mut prometheus = Prometheus::start(target.addr(), Duration::from_secs(1)).await?;
    prometheus
        .wait_for_value(&format!("{GAUGE}{{cluster=\"b2\"}}"), 20.0, CONVERGE)
        .await?;

    let dir = TempDir::new()?;
    let mut args = process_platform_args(dir.path())?;
    args.extend(
        [
            "--cluster-probe-interval=200ms",
            "--cluster-metrics-interval=300ms",
            "--service-reschedule-after=1s",
            "--service-migration-interval=1s",
        ]
        .map(String::from),
    );
    let nodes = ProcessCluster::start_with_args(3, &args)?;
    let mut agents_running = Vec::new();
    for _ in CLUSTERS {
        agents_running.push(AgentProcess::start(&["--executor=sim"])?);
    }
    let leader = nodes.leader(ELECTION).await?;
    let follower = (1..=3).find(|id| *id != leader).context("no follower")?;
    let root = PlatformClient::new(&nodes.api_addr(leader), Some(token(OPERATOR_SUBJECT)));
    let alice = PlatformClient::new(&nodes.api_addr(follower), Some(token("alice")));
    let named: Vec<(&AgentProcess, &str)> = agents_running
        .iter()
        .zip(CLUSTERS)
        .map(|(agent, (name, _, _))| (agent, name))
        .collect();
    tenant_with_clusters(&root, &alice, &named, 8000).await?;

    // One platform-wide Prometheus provider, one metric per cluster, each cluster scored on its
    // own with the weight of its pair.
    let provider =
        json!({"type": "prometheus", "prometheus": {"url": prometheus.url(), "timeout_seconds": 2}});
    expect_ok(
        &root,
        Method::PUT,
        "/tenant/operator/metricsprovider/prom",
        Some(&provider),
    )
    .await?;
    for (cluster, pair, weight) in CLUSTERS {
        let metric = json!({"min": 0, "max": 100,
            "provider": {"name": "prom", "metric": format!("{GAUGE}{{cluster=\"{cluster}\"}}")}});
        expect_ok(
            &root,
            Method::PUT,
            &format!("/tenant/operator/metric/load-{cluster}"),
            Some(&metric),
        )
        .await?;
        let patch = json!({"labels": {"pair": pair}, "metrics": [{"name": format!("load-{cluster}"), "weight": weight}]});
        expect_ok(
            &root,
            Method::PATCH,
            &format!("/tenant/operator/cluster/{cluster}"),
            Some(&patch),
        )
        .await?;
    }
    // A member of another tenant reads the platform-wide metrics (to name them), not writes.
    let listed = expect_ok(&alice, Method::GET, "/tenant/operator/metric", None).await?;
    ensure!(listed["data"].as_array().map(Vec::len) == Some(4), "{listed}");
    let refused = alice
        .call(
            Method::PUT,
            "/tenant/operator/metricsprovider/mine",
            Some(&provider),
        )
        .await?;
    // Not a member of the operator tenant: refused as for any tenant not hers (404, which does
    // not tell whether it exists), and nothing stored.
    ensure!(refused.status == 404, "{refused:?}");
    let missing = root.get("/tenant/operator/metricsprovider/mine").await?;
    ensure!(missing.status == 404, "{missing:?}");
    for (cluster, _, _) in CLUSTERS {
        cluster_state(&root, cluster, "ONLINE", CONVERGE).await?;
        reading_is(&root, cluster, if cluster.starts_with('a') { 0.8 } else { 0.2 }).await?;
    }

    // Both services start where the gauges are high.
    expect_ok(
        &alice,
        Method::POST,
        "/tenant/acme/service/movable?accept=true",
        Some(&service("1")),
    )
    .await?;
    expect_ok(
        &alice,
        Method::POST,
        "/tenant/acme/service/sticky?accept=true",
        Some(&service("2")),
    )
    .await?;
    let agents: Vec<(&str, AgentClient)> = agents_running
        .iter()
        .zip(CLUSTERS)
        .map(|(agent, (name, _, _))| (name, agent.client()))
        .collect();
    for (name, cluster) in [("movable", "a1"), ("sticky", "a2")] {
        eventually(CONVERGE, &format!("{name} on {cluster} only"), || async {
            (runs_on(&agents, name).await? == [cluster]).then_some(())
        })
        .await?;
    }
    let explained = expect_ok(
        &alice,
        Method::GET,
        "/tenant/acme/service/movable/placement",
        None,
    )
    .await?;
    let data = &explained["data"];
    ensure!(
        data["cluster"]["name"] == "a1" && data["now"]["chosen"]["cluster"]["name"] == "a1",
        "{explained}"
    );
    let chosen = data["now"]["chosen"]["score"].as_f64().context("no score")?;
    ensure!(
        (chosen - 0.9 / 1.1).abs() < 1e-9,
        "a1 scores (0.1·1 + 0.8·1) / 1.1: {explained}"
    );

    // The gauges turn: b is now favoured by 0.6 of normalised value.
    set_gauges(&target, 20.0, 80.0);
    prometheus
        .wait_for_value(&format!("{GAUGE}{{cluster=\"a2\"}}"), 20.0, CONVERGE)
        .await?;
    eventually(CONVERGE, "movable moved to b1 (and gone from a1)", || async {
        (runs_on(&agents, "movable").await? == ["b1"]).then_some(())
    })
    .await?;
    // Every cluster's new reading is committed; from then on, two full rounds of rescoring.
    for (cluster, _, _) in CLUSTERS {
        reading_is(&root, cluster, if cluster.starts_with('a') { 0.2 } else { 0.8 }).await?;
    }
    let before = rescores(&nodes).await?;
    eventually(CONVERGE, "two more rounds of rescoring", || async {
        (rescores(&nodes).await.ok()? >= before + 4).then_some(())
    })
    .await?;
    let sticky = runs_on(&agents, "sticky")
        .await
        .context("an agent does not answer")?;
    ensure!(
        sticky == ["a2"],
        "sticky stays: stickiness 0.1 outweighs 0.01 × 0.6; runs on {sticky:?}"
    );
    let explained = expect_ok(&alice, Method::GET, "/tenant/acme/service/sticky/placement", None).await?;
    ensure!(
        explained["data"]["now"]["chosen"]["cluster"]["name"] == "a2",
        "{explained}"
    );

    // Prometheus stops: every cluster fails its metric and is excluded; nothing moves.
    prometheus.stop().await?;
    for (cluster, _, _) in CLUSTERS {
        cluster_state(&root, cluster, "FAILING_METRICS", CONVERGE).await?;
    }
    let view = expect_ok(&root, Method::GET, "/tenant/operator/cluster/a1", None).await?;
    let failure = &view["data"]["status"]["metrics"]["failures"]["load-a1"];
    ensure!(failure["reason"] == "UNREACHABLE_METRICS_PROVIDER", "{view}");
    ensure!(
        runs_on(&agents, "movable").await.context("agents")? == ["b1"],
        "movable stays"
    );
    ensure!(
        runs_on(&agents, "sticky").await.context("agents")? == ["a2"],
        "sticky stays"
    );
    let dry = alice
        .call(
            Method::POST,
            "/tenant/acme/service/third?dryrun=true&accept=true",
            Some(&service("1")),
        )
        .await?;
    let reasons = dry.body.to_string();
    ensure!(
        reasons.contains("FAILING_METRICS"),
        "a dry run says why no cluster qualifies: {reasons}"
    );

    // Prometheus is back: the state clears (Krake 1.0.1 never clears it).
    prometheus.restart().await?;
    for (cluster, _, _) in CLUSTERS {
        cluster_state(&root, cluster, "ONLINE", CONVERGE).await?;
    }
    let events = expect_ok(&root, Method::GET, "/tenant/operator/cluster/b1", None).await?;
    let last = events["data"]["events"]
        .as_array()
        .and_then(|e| e.last())
        .cloned()
        .unwrap_or_default();
    ensure!(last["reason"] == "every metric is read again", "{events}");
    Ok(())
}
