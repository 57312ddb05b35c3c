//! The leader's pool actors against a three-node cluster: dynamic resources (L13–L16), static
//! removal (L17), the cleaner (L18), the reaper (L19), the janitor (L20, with failing and
//! hanging cleanups) and Mason-style `needs`.

use std::time::Duration;

use anyhow::{ensure, Result};
use drover_actors::pools::PoolActorsConfig;
use drover_tests::boskos::BoskosClient;
use drover_tests::cluster::{ClusterOptions, TestCluster};
use drover_tests::wait::eventually;
use reqwest::StatusCode;

const ELECTION: Duration = Duration::from_secs(15);

async fn start(pools: PoolActorsConfig, yaml: &str) -> Result<TestCluster> {
    let options = ClusterOptions {
        pools,
        ..ClusterOptions::default()
    };
    let cluster = TestCluster::start_with_options(3, options).await?;
    cluster.leader(ELECTION).await?;
    let set = cluster.boskos(2).set_config(yaml).await?;
    ensure!(set.status == StatusCode::OK, "config: {set:?}");
    Ok(cluster)
}

fn fast() -> PoolActorsConfig {
    PoolActorsConfig {
        sync_interval: Duration::from_millis(200),
        ..PoolActorsConfig::default()
    }
}

async fn states_of(client: &BoskosClient, rtype: &str) -> Result<Vec<(String, String, String)>> {
    Ok(client
        .resources(rtype)
        .await?
        .iter()
        .map(|r| {
            let field = |k: &str| r[k].as_str().unwrap_or_default().to_string();
            (field("name"), field("state"), field("owner"))
        })
        .collect())
}

async fn wait_for<F>(
    client: &BoskosClient,
    rtype: &str,
    what: &str,
    check: F,
) -> Result<Vec<(String, String, String)>>
where
    F: Fn(&[(String, String, String)]) -> bool,
{
    eventually(Duration::from_secs(20), what, || async {
        let now = states_of(client, rtype).await.ok()?;
        check(&now).then_some(now)
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn dynamic_types_keep_min_count_create_on_demand_expire_and_drain() -> Result<()> {
    let yaml =
        "resources:\n  - type: d\n    state: free\n    min-count: 2\n    max-count: 3\n    lifespan: 1s\n";
    let cluster = start(fast(), yaml).await?;
    let client = cluster.boskos(3);
    wait_for(&client, "d", "L13: two resources at min-count", |r| {
        r.len() == 2 && r.iter().all(|x| x.1 == "free")
    })
    .await?;
    let first = client.acquire("d", "free", "busy", "o", None).await?;
    let second = client.acquire("d", "free", "busy", "o", None).await?;
    ensure!(first.status == StatusCode::OK && second.status == StatusCode::OK);
    let made = client
        .acquire("d", "free", "busy", "o", Some("new-request"))
        .await?;
    ensure!(
        made.status == StatusCode::OK,
        "L14: a new request id creates a resource: {made:?}"
    );
    let refused = client.acquire("d", "free", "busy", "p", Some("another")).await?;
    ensure!(
        refused.status == StatusCode::NOT_FOUND,
        "L14: max-count reached: {refused:?}"
    );
    ensure!(
        states_of(&client, "d").await?.len() == 3,
        "L14: count <= max-count"
    );

    let name = first.json["name"].as_str().unwrap_or_default().to_string();
    ensure!(client.release(&name, "free", "o").await?.status == StatusCode::OK);
    wait_for(&client, "d", "L15: the released resource to expire and go", |r| {
        r.iter().all(|x| x.0 != name)
    })
    .await?;

    let lower = "resources:\n  - type: d\n    state: free\n    min-count: 0\n    max-count: 1\n";
    ensure!(client.set_config(lower).await?.status == StatusCode::OK);
    let drained = wait_for(&client, "d", "L16: the surplus to drain", |r| {
        r.iter().filter(|x| x.2.is_empty()).count() == 0
    })
    .await?;
    ensure!(
        drained.iter().filter(|x| x.2 == "o").count() == 2,
        "L16: owned ones untouched: {drained:?}"
    );
    cluster.shutdown().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_removed_static_resource_goes_when_released() -> Result<()> {
    let cluster = start(
        fast(),
        "resources:\n  - type: t\n    state: free\n    names: [a, b]\n",
    )
    .await?;
    let client = cluster.boskos(1);
    let held = client
        .post(
            "/acquirebystate",
            &[
                ("state", "free"),
                ("dest", "busy"),
                ("owner", "o"),
                ("names", "a"),
            ],
            None,
        )
        .await?;
    ensure!(held.status == StatusCode::OK);
    ensure!(
        client
            .set_config("resources:\n  - type: t\n    state: free\n    names: [b]\n")
            .await?
            .status
            == StatusCode::OK
    );
    let now = states_of(&client, "t").await?;
    ensure!(now.iter().any(|x| x.0 == "a"), "L17: busy a stays: {now:?}");
    ensure!(client.release("a", "free", "o").await?.status == StatusCode::OK);
    let now = states_of(&client, "t").await?;
    ensure!(now.iter().all(|x| x.0 != "a"), "L17: a is gone: {now:?}");
    cluster.shutdown().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_cleaner_releases_children_and_tombstones_the_parent() -> Result<()> {
    let yaml = "resources:\n  - type: child\n    state: free\n    names: [c1]\n  - type: parent\n    state: free\n    min-count: 1\n    max-count: 1\n";
    let cluster = start(fast(), yaml).await?;
    let client = cluster.boskos(2);
    let parents = wait_for(&client, "parent", "the parent to exist", |r| r.len() == 1).await?;
    let parent = parents[0].0.clone();
    let held = client.acquire("parent", "free", "busy", "mason", None).await?;
    ensure!(held.status == StatusCode::OK);
    let child = client
        .post(
            "/acquirebystate",
            &[
                ("state", "free"),
                ("dest", &parent),
                ("owner", "mason"),
                ("names", "c1"),
            ],
            None,
        )
        .await?;
    ensure!(child.status == StatusCode::OK, "{child:?}");
    let data = serde_json::json!({ "leasedResources": "[\"c1\"]" }).to_string();
    ensure!(client.update(&parent, "mason", "busy", Some(&data)).await?.status == StatusCode::OK);
    ensure!(client.release(&parent, "toBeDeleted", "mason").await?.status == StatusCode::OK);
    wait_for(&client, "child", "L18: the child to be released dirty", |r| {
        r == [("c1".into(), "dirty".into(), String::new())]
    })
    .await?;
    wait_for(&client, "parent", "L18: the parent to be replaced", |r| {
        r.len() == 1 && r[0].0 != parent
    })
    .await?;
    cluster.shutdown().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_reaper_reclaims_silent_holders_and_spares_heartbeating_ones() -> Result<()> {
    let pools = PoolActorsConfig {
        reaper_expire: Duration::from_secs(2),
        ..fast()
    };
    let cluster = start(
        pools,
        "resources:\n  - type: t\n    state: free\n    names: [a, b]\n",
    )
    .await?;
    let client = cluster.boskos(3);
    // Before the grant, so that the grant (and so the reap's earliest moment) is after it.
    let before_grant = std::time::Instant::now();
    let silent = client
        .post(
            "/acquirebystate",
            &[
                ("state", "free"),
                ("dest", "busy"),
                ("owner", "quiet"),
                ("names", "a"),
            ],
            None,
        )
        .await?;
    let alive = client
        .post(
            "/acquirebystate",
            &[
                ("state", "free"),
                ("dest", "busy"),
                ("owner", "loud"),
                ("names", "b"),
            ],
            None,
        )
        .await?;
    ensure!(silent.status == StatusCode::OK && alive.status == StatusCode::OK);
    let reaped = eventually(
        Duration::from_secs(20),
        "L19: the silent holder to be reaped",
        || async {
            ensure_ok(client.update("b", "loud", "busy", None).await.ok()?.status)?;
            let now = states_of(&client, "t").await.ok()?;
            now.iter()
                .any(|x| x.0 == "a" && x.1 == "dirty" && x.2.is_empty())
                .then_some(now)
        },
    )
    .await?;
    // The reaper counts whole milliseconds of the leader's wall clock: at most a few early.
    ensure!(
        before_grant.elapsed() >= Duration::from_millis(1_990),
        "reaped before its 2 s expiry: {:?} after the grant",
        before_grant.elapsed()
    );
    ensure!(
        reaped.iter().any(|x| x.0 == "b" && x.2 == "loud"),
        "L19: the heartbeating one stays: {reaped:?}"
    );
    let (_, metrics) = cluster
        .client(cluster.leader(ELECTION).await?)
        .get_path("/metrics")
        .await?;
    ensure!(
        metrics.contains(r#"drover_reaper_reclaims_total{type="t"} 1"#),
        "reaper metric"
    );
    cluster.shutdown().await
}

fn ensure_ok(status: StatusCode) -> Option<()> {
    (status == StatusCode::OK).then_some(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_janitor_cleans_retries_failures_and_kills_hung_cleanups() -> Result<()> {
    let command = r#"case "$DROVER_RESOURCE_NAME" in bad*) exit 1;; hang*) sleep 30;; *) exit 0;; esac"#;
    let pools = PoolActorsConfig {
        janitor_command: Some(command.to_string()),
        janitor_timeout: Duration::from_millis(800),
        ..fast()
    };
    let cluster = start(
        pools,
        "resources:\n  - type: t\n    state: dirty\n    names: [good, bad, hang]\n",
    )
    .await?;
    let client = cluster.boskos(1);
    wait_for(&client, "t", "L20: good to be cleaned to free", |r| {
        r.iter().any(|x| x.0 == "good" && x.1 == "free")
    })
    .await?;
    let leader = cluster.leader(ELECTION).await?;
    let metrics_client = cluster.client(leader);
    let value = |text: &str, result: &str| -> f64 {
        let prefix = format!(r#"drover_janitor_runs_total{{result="{result}",type="t"}} "#);
        text.lines()
            .find_map(|l| l.strip_prefix(&prefix))
            .and_then(|v| v.parse().ok())
            .unwrap_or(0.0)
    };
    eventually(
        Duration::from_secs(20),
        "bad to be retried with backoff and hang to be killed",
        || async {
            let (_, text) = metrics_client.get_path("/metrics").await.ok()?;
            (value(&text, "failure") >= 2.0 && value(&text, "timeout") >= 1.0).then_some(())
        },
    )
    .await?;
    let now = states_of(&client, "t").await?;
    let state = |name: &str| {
        now.iter()
            .find(|x| x.0 == name)
            .map(|x| (x.1.clone(), x.2.clone()))
    };
    ensure!(
        matches!(state("bad"), Some((s, _)) if s == "dirty" || s == "cleaning"),
        "bad stays dirty: {now:?}"
    );
    ensure!(state("good") == Some(("free".into(), String::new())), "{now:?}");
    let (_, text) = metrics_client.get_path("/metrics").await?;
    ensure!(
        value(&text, "failure") < 10.0,
        "failures back off rather than spin: {}",
        value(&text, "failure")
    );
    cluster.shutdown().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn mason_needs_are_fulfilled_and_recycled() -> Result<()> {
    let yaml = "resources:\n  - type: acct\n    state: free\n    names: [a1, a2]\n  - type: cluster\n    state: dirty\n    min-count: 1\n    max-count: 1\n    needs: {acct: 1}\n";
    let cluster = start(fast(), yaml).await?;
    let client = cluster.boskos(2);
    let ready = |child: &'static str| {
        let client = client.clone();
        async move {
            eventually(
                Duration::from_secs(20),
                &format!("the cluster to be built with {child}"),
                || async {
                    let parents = client.resources("cluster").await.ok()?;
                    let parent = parents.first()?;
                    let children = parent["userdata"]["leasedResources"].as_str()?;
                    (parent["state"] == "free" && children == format!("[\"{child}\"]"))
                        .then(|| parent["name"].as_str().unwrap_or_default().to_string())
                },
            )
            .await
        }
    };
    let parent = ready("a1").await?;
    let accounts = states_of(&client, "acct").await?;
    ensure!(
        accounts.iter().any(|a| a.0 == "a1" && a.1 == parent),
        "the child waits in the parent's state: {accounts:?}"
    );
    let held = client.acquire("cluster", "free", "busy", "job", None).await?;
    ensure!(held.status == StatusCode::OK);
    let children = client
        .post(
            "/acquirebystate",
            &[
                ("state", &parent),
                ("dest", "busy"),
                ("owner", "job"),
                ("names", "a1"),
            ],
            None,
        )
        .await?;
    ensure!(
        children.status == StatusCode::OK,
        "the client takes the children by state: {children:?}"
    );
    ensure!(client.release("a1", &parent, "job").await?.status == StatusCode::OK);
    ensure!(client.release(&parent, "dirty", "job").await?.status == StatusCode::OK);
    ready("a2").await?;
    let accounts = states_of(&client, "acct").await?;
    ensure!(
        accounts.iter().any(|a| a.0 == "a1" && a.1 == "dirty"),
        "the old child was recycled dirty: {accounts:?}"
    );
    cluster.shutdown().await
}
