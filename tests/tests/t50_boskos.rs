//! The Boskos dialect against a three-node cluster, through followers as well as the leader
//! (rows L1–L12, L21 and L28 of the leasing inventory, plus fencing tokens).

use std::collections::BTreeSet;
use std::time::Duration;

use anyhow::{ensure, Result};
use drover_tests::boskos::static_pool_yaml;
use drover_tests::cluster::TestCluster;
use drover_tests::wait::eventually;
use reqwest::StatusCode;

const ELECTION: Duration = Duration::from_secs(15);

async fn cluster_with(yaml: &str) -> Result<(TestCluster, u64, u64)> {
    let cluster = TestCluster::start(3).await?;
    let leader = cluster.leader(ELECTION).await?;
    let follower = cluster
        .running_ids()
        .into_iter()
        .find(|id| *id != leader)
        .unwrap_or(leader);
    let set = cluster.boskos(follower).set_config(yaml).await?;
    ensure!(set.status == StatusCode::OK, "config: {set:?}");
    Ok((cluster, leader, follower))
}

const TWO: &str = "resources:\n  - type: t\n    state: free\n    names: [a, b]\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn acquire_release_and_errors_behave_like_boskos() -> Result<()> {
    let (cluster, leader, follower) = cluster_with(TWO).await?;
    let (via_leader, via_follower) = (cluster.boskos(leader), cluster.boskos(follower));

    let metric = via_follower.metric("t").await?;
    ensure!(metric.json["current"]["free"] == 2, "L1: {metric:?}");

    let first = via_follower.acquire("t", "free", "busy", "o", None).await?;
    ensure!(first.status == StatusCode::OK, "L3: {first:?}");
    ensure!(
        first.json["owner"] == "o" && first.json["state"] == "busy",
        "L3: {first:?}"
    );
    ensure!(
        first.json["fencing_token"].as_u64().unwrap_or(0) > 0,
        "grants carry a fencing token"
    );
    let second = via_leader.acquire("t", "free", "busy", "o", None).await?;
    ensure!(second.status == StatusCode::OK);
    let third = via_follower.acquire("t", "free", "busy", "o", None).await?;
    ensure!(
        third.status == StatusCode::NOT_FOUND && third.text.contains("try again later"),
        "L4: {third:?}"
    );
    let unknown = via_follower.acquire("nope", "free", "busy", "o", None).await?;
    ensure!(
        unknown.status == StatusCode::NOT_FOUND && unknown.text.contains("does not exist"),
        "L4: {unknown:?}"
    );

    let no_owner = via_follower
        .post(
            "/acquire",
            &[("type", "t"), ("state", "free"), ("dest", "busy")],
            None,
        )
        .await?;
    ensure!(no_owner.status == StatusCode::BAD_REQUEST, "L5: {no_owner:?}");
    let wrong_method = via_follower.get("/acquire", &[("type", "t")]).await?;
    ensure!(
        wrong_method.status == StatusCode::METHOD_NOT_ALLOWED,
        "L5: {wrong_method:?}"
    );

    let name = first.json["name"].as_str().unwrap_or_default().to_string();
    let intruder = via_leader.release(&name, "free", "intruder").await?;
    ensure!(intruder.status == StatusCode::UNAUTHORIZED, "L9: {intruder:?}");
    let released = via_follower.release(&name, "dirty", "o").await?;
    ensure!(released.status == StatusCode::OK, "L9: {released:?}");
    let metric = via_leader.metric("t").await?;
    ensure!(
        metric.json["current"]["dirty"] == 1 && metric.json["owner"]["o"] == 1,
        "L9/L21: {metric:?}"
    );
    let missing = via_leader.metric("nope").await?;
    ensure!(missing.status == StatusCode::NOT_FOUND, "{missing:?}");
    cluster.shutdown().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn acquire_picks_the_least_recently_updated() -> Result<()> {
    let (cluster, _, follower) = cluster_with(TWO).await?;
    let client = cluster.boskos(follower);
    ensure!(client.acquire("t", "free", "busy", "o", None).await?.status == StatusCode::OK);
    ensure!(client.acquire("t", "free", "busy", "o", None).await?.status == StatusCode::OK);
    ensure!(client.release("a", "free", "o").await?.status == StatusCode::OK);
    ensure!(client.release("b", "free", "o").await?.status == StatusCode::OK);
    let next = client.acquire("t", "free", "busy", "p", None).await?;
    ensure!(next.json["name"] == "a", "L7: a was released first: {next:?}");
    cluster.shutdown().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_acquires_never_share_a_resource() -> Result<()> {
    let names: Vec<String> = (0..10).map(|i| format!("r{i}")).collect();
    let (cluster, _, _) = cluster_with(&static_pool_yaml("t", &names)).await?;
    let mut calls = Vec::new();
    for i in 0..50u64 {
        let client = cluster.boskos(1 + i % 3);
        calls.push(tokio::spawn(async move {
            client.acquire("t", "free", "busy", &format!("o{i}"), None).await
        }));
    }
    let mut granted = BTreeSet::new();
    let (mut ok, mut exhausted) = (0, 0);
    for call in calls {
        let reply = call.await??;
        match reply.status {
            StatusCode::OK => {
                ok += 1;
                granted.insert(reply.json["name"].as_str().unwrap_or_default().to_string());
            }
            StatusCode::NOT_FOUND => exhausted += 1,
            other => anyhow::bail!("unexpected {other}: {}", reply.text),
        }
    }
    ensure!(
        ok == 10 && exhausted == 40 && granted.len() == 10,
        "L6: {ok} granted, {exhausted} refused, {granted:?}"
    );
    cluster.shutdown().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn acquire_by_state_takes_all_or_nothing() -> Result<()> {
    let yaml = "resources:\n  - type: t\n    state: free\n    names: [a, b, c]\n";
    let (cluster, leader, follower) = cluster_with(yaml).await?;
    let client = cluster.boskos(follower);
    let both = client
        .post(
            "/acquirebystate",
            &[
                ("state", "free"),
                ("dest", "busy"),
                ("owner", "o"),
                ("names", "a,b"),
            ],
            None,
        )
        .await?;
    ensure!(
        both.status == StatusCode::OK && both.json.as_array().map(Vec::len) == Some(2),
        "L8: {both:?}"
    );
    let partial = cluster
        .boskos(leader)
        .post(
            "/acquirebystate",
            &[
                ("state", "free"),
                ("dest", "busy"),
                ("owner", "p"),
                ("names", "b,c"),
            ],
            None,
        )
        .await?;
    ensure!(
        partial.status == StatusCode::NOT_FOUND,
        "L8: one name is busy, upstream answers 404: {partial:?}"
    );
    let metric = client.metric("t").await?;
    ensure!(
        metric.json["current"]["free"] == 1,
        "L8: c was not taken: {metric:?}"
    );
    cluster.shutdown().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn update_heartbeats_merges_user_data_and_checks_tokens() -> Result<()> {
    let (cluster, leader, follower) = cluster_with(TWO).await?;
    let client = cluster.boskos(follower);
    let grant = client.acquire("t", "free", "busy", "o", None).await?;
    let name = grant.json["name"].as_str().unwrap_or_default().to_string();
    let token = grant.json["fencing_token"]
        .as_u64()
        .unwrap_or_default()
        .to_string();
    let updated = client
        .update(&name, "o", "busy", Some(r#"{"k":"v","x":"y"}"#))
        .await?;
    ensure!(updated.status == StatusCode::OK, "L10: {updated:?}");
    ensure!(
        cluster
            .boskos(leader)
            .update(&name, "o", "busy", Some(r#"{"k":""}"#))
            .await?
            .status
            == StatusCode::OK
    );
    let wrong_state = client.update(&name, "o", "free", None).await?;
    ensure!(wrong_state.status == StatusCode::CONFLICT, "L10: {wrong_state:?}");
    let bad_json = client.update(&name, "o", "busy", Some("not json")).await?;
    ensure!(bad_json.status == StatusCode::BAD_REQUEST, "{bad_json:?}");
    let with_token = client
        .post(
            "/update",
            &[
                ("name", &name),
                ("owner", "o"),
                ("state", "busy"),
                ("fencing_token", &token),
            ],
            None,
        )
        .await?;
    ensure!(
        with_token.status == StatusCode::OK,
        "current token accepted: {with_token:?}"
    );
    ensure!(client.release(&name, "free", "o").await?.status == StatusCode::OK);
    let again = client
        .post(
            "/acquirebystate",
            &[
                ("state", "free"),
                ("dest", "busy"),
                ("owner", "o"),
                ("names", &name),
            ],
            None,
        )
        .await?;
    let new_token = again.json[0]["fencing_token"].as_u64().unwrap_or_default();
    ensure!(
        new_token > token.parse::<u64>()?,
        "a new grant has a greater token"
    );
    ensure!(
        again.json[0]["userdata"] == serde_json::json!({"x": "y"}),
        "L10: merged user data: {again:?}"
    );
    let stale = client
        .post(
            "/release",
            &[
                ("name", &name),
                ("dest", "free"),
                ("owner", "o"),
                ("fencing_token", &token),
            ],
            None,
        )
        .await?;
    ensure!(
        stale.status == StatusCode::UNAUTHORIZED && stale.text.contains("stale fencing token"),
        "{stale:?}"
    );
    cluster.shutdown().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn reset_reclaims_only_stale_owned_resources() -> Result<()> {
    let (cluster, _, follower) = cluster_with(TWO).await?;
    let client = cluster.boskos(follower);
    let grant = client.acquire("t", "free", "busy", "o", None).await?;
    let name = grant.json["name"].as_str().unwrap_or_default().to_string();
    let early = client
        .post(
            "/reset",
            &[
                ("type", "t"),
                ("state", "busy"),
                ("dest", "dirty"),
                ("expire", "1h"),
            ],
            None,
        )
        .await?;
    ensure!(
        early.json == serde_json::json!({}),
        "nothing is stale yet: {early:?}"
    );
    let reclaimed = eventually(Duration::from_secs(10), "the resource to go stale", || async {
        let reply = client
            .post(
                "/reset",
                &[
                    ("type", "t"),
                    ("state", "busy"),
                    ("dest", "dirty"),
                    ("expire", "1s"),
                ],
                None,
            )
            .await
            .ok()?;
        (reply.json.as_object().is_some_and(|o| !o.is_empty())).then_some(reply)
    })
    .await?;
    ensure!(reclaimed.json[&name] == "o", "L11: {reclaimed:?}");
    let metric = client.metric("t").await?;
    ensure!(
        metric.json["current"]["free"] == 1 && metric.json["current"]["dirty"] == 1,
        "unowned untouched: {metric:?}"
    );
    let bad = client
        .post(
            "/reset",
            &[
                ("type", "t"),
                ("state", "busy"),
                ("dest", "dirty"),
                ("expire", "soon"),
            ],
            None,
        )
        .await?;
    ensure!(bad.status == StatusCode::BAD_REQUEST, "{bad:?}");
    cluster.shutdown().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn request_ids_wait_in_fifo_order() -> Result<()> {
    let yaml = "resources:\n  - type: t\n    state: free\n    names: [a]\n";
    let (cluster, leader, follower) = cluster_with(yaml).await?;
    let (one, two) = (cluster.boskos(follower), cluster.boskos(leader));
    ensure!(one.acquire("t", "free", "busy", "holder", None).await?.status == StatusCode::OK);
    ensure!(one.acquire("t", "free", "busy", "A", Some("req-1")).await?.status == StatusCode::NOT_FOUND);
    ensure!(two.acquire("t", "free", "busy", "B", Some("req-2")).await?.status == StatusCode::NOT_FOUND);
    ensure!(one.release("a", "free", "holder").await?.status == StatusCode::OK);
    let b = two.acquire("t", "free", "busy", "B", Some("req-2")).await?;
    ensure!(b.status == StatusCode::NOT_FOUND, "L12: B waits behind A: {b:?}");
    let a = one.acquire("t", "free", "busy", "A", Some("req-1")).await?;
    ensure!(
        a.status == StatusCode::OK && a.json["owner"] == "A",
        "L12: A is first: {a:?}"
    );
    cluster.shutdown().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn prometheus_metrics_show_pools_and_acquire_latency() -> Result<()> {
    let (cluster, _, follower) = cluster_with(TWO).await?;
    let client = cluster.boskos(follower);
    ensure!(client.acquire("t", "free", "busy", "o", Some("r1")).await?.status == StatusCode::OK);
    // Each node's metrics read its own replica, which applies the acquire when it learns the
    // commit: a follower may show it a moment after the acquire was answered.
    for id in cluster.running_ids() {
        let node = cluster.client(id);
        eventually(Duration::from_secs(10), &format!("L21 on node {id}"), || async {
            let (_, text) = node.get_path("/metrics").await.ok()?;
            (text.contains(r#"boskos_resources{state="busy",type="t"} 1"#)
                && text.contains(r#"boskos_resources{state="free",type="t"} 1"#))
            .then_some(())
        })
        .await?;
    }
    let (_, text) = cluster.client(follower).get_path("/metrics").await?;
    ensure!(
        text.contains("boskos_acquire_duration_seconds_count"),
        "L21: acquire latency"
    );
    cluster.shutdown().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn pools_survive_a_full_restart() -> Result<()> {
    let (mut cluster, _, follower) = cluster_with(TWO).await?;
    let client = cluster.boskos(follower);
    let grant = client.acquire("t", "free", "busy", "o", None).await?;
    let name = grant.json["name"].as_str().unwrap_or_default().to_string();
    ensure!(
        client
            .update(&name, "o", "busy", Some(r#"{"k":"v"}"#))
            .await?
            .status
            == StatusCode::OK
    );
    for id in cluster.running_ids() {
        cluster.stop(id).await?;
    }
    for id in [1, 2, 3] {
        cluster.restart(id).await?;
    }
    cluster.leader(ELECTION).await?;
    let after = cluster.boskos(2).resources("t").await?;
    let held = after
        .iter()
        .find(|r| r["name"] == name.as_str())
        .cloned()
        .unwrap_or_default();
    ensure!(
        held["owner"] == "o" && held["state"] == "busy" && held["userdata"]["k"] == "v",
        "L28: {held}"
    );
    cluster.shutdown().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn invalid_configurations_are_refused_and_the_old_one_stays() -> Result<()> {
    let (cluster, _, follower) = cluster_with(TWO).await?;
    let client = cluster.boskos(follower);
    let duplicate = client
        .set_config("resources:\n  - type: t\n    names: [a]\n  - type: u\n    names: [a]\n")
        .await?;
    ensure!(
        duplicate.status == StatusCode::BAD_REQUEST && duplicate.text.contains("resources[1]"),
        "L2: {duplicate:?}"
    );
    let no_max = client
        .set_config("resources:\n  - type: d\n    min-count: 1\n")
        .await?;
    ensure!(
        no_max.status == StatusCode::BAD_REQUEST && no_max.text.contains("max-count"),
        "L2: {no_max:?}"
    );
    ensure!(
        client.metric("t").await?.json["current"]["free"] == 2,
        "the running config stays"
    );
    cluster.shutdown().await
}
