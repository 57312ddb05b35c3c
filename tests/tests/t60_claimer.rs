//! The k8s-claimer dialect against a three-node cluster (rows L22–L27): token-protected cluster
//! leases with base64 kubeconfigs, exclusivity, server-side expiry, release and filters.

use std::time::Duration;

use anyhow::{ensure, Result};
use base64::Engine;
use drover_actors::pools::PoolActorsConfig;
use drover_api::claimer::ClaimerOptions;
use drover_tests::boskos::{static_pool_yaml, BoskosClient};
use drover_tests::cluster::{ClusterOptions, TestCluster};
use drover_tests::wait::eventually;
use reqwest::StatusCode;
use serde_json::{json, Value};

const ELECTION: Duration = Duration::from_secs(15);
const TOKEN: &str = "claimer-test-token";

async fn claimer_cluster(names: &[&str]) -> Result<TestCluster> {
    let options = ClusterOptions {
        pools: PoolActorsConfig {
            sync_interval: Duration::from_millis(200),
            ..PoolActorsConfig::default()
        },
        claimer: Some(ClaimerOptions {
            rtype: "k8s-cluster".into(),
            auth_token: TOKEN.into(),
        }),
        ..ClusterOptions::default()
    };
    let cluster = TestCluster::start_with_options(3, options).await?;
    cluster.leader(ELECTION).await?;
    let admin = cluster.boskos(1);
    let yaml = static_pool_yaml("k8s-cluster", names);
    ensure!(admin.set_config(&yaml).await?.status == StatusCode::OK);
    // Operators register each cluster's credentials: hold it, write its user data, free it.
    for name in names {
        let held = admin
            .post(
                "/acquirebystate",
                &[
                    ("state", "free"),
                    ("dest", "busy"),
                    ("owner", "admin"),
                    ("names", name),
                ],
                None,
            )
            .await?;
        ensure!(held.status == StatusCode::OK, "{held:?}");
        let data = json!({ "kubeconfig": format!("apiVersion: v1\nclusters: [{name}]\n"), "ip": format!("10.0.0.{}", name.len()) });
        ensure!(
            admin
                .update(name, "admin", "busy", Some(&data.to_string()))
                .await?
                .status
                == StatusCode::OK
        );
        ensure!(admin.release(name, "free", "admin").await?.status == StatusCode::OK);
    }
    Ok(cluster)
}

async fn lease(
    client: &BoskosClient,
    token: Option<&str>,
    body: Value,
) -> Result<(StatusCode, Value, String)> {
    let (http, base) = client.raw();
    let mut request = http.post(format!("{base}/lease")).json(&body);
    if let Some(token) = token {
        request = request.header("Authorization", token);
    }
    let response = request.send().await?;
    let status = response.status();
    let text = response.text().await?;
    Ok((status, serde_json::from_str(&text).unwrap_or(Value::Null), text))
}

async fn release(client: &BoskosClient, path: &str) -> Result<StatusCode> {
    let (http, base) = client.raw();
    Ok(http
        .delete(format!("{base}{path}"))
        .header("Authorization", TOKEN)
        .send()
        .await?
        .status())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_cluster_lease_is_exclusive_expires_and_releases_by_token() -> Result<()> {
    let cluster = claimer_cluster(&["c1"]).await?;
    let client = cluster.boskos(2);
    let (status, body, text) = lease(&client, Some(TOKEN), json!({ "max_time": 1 })).await?;
    ensure!(status == StatusCode::OK, "L22: {status} {text}");
    ensure!(
        body["cluster_name"] == "c1" && body["ip"] == "10.0.0.2",
        "L22: {body}"
    );
    let decoded =
        base64::engine::general_purpose::STANDARD.decode(body["kubeconfig"].as_str().unwrap_or_default())?;
    let decoded = String::from_utf8(decoded)?;
    ensure!(
        decoded.contains("clusters: [c1]"),
        "L22: kubeconfig is base64: {decoded:?}"
    );
    ensure!(
        body["token"] == body["uuid"] && body["token"].as_str().is_some_and(|t| t.len() == 36),
        "{body}"
    );

    let (busy, _, _) = lease(&client, Some(TOKEN), json!({ "max_time": 30 })).await?;
    ensure!(busy == StatusCode::CONFLICT, "L24: only one cluster: {busy}");
    let renewed = eventually(
        Duration::from_secs(15),
        "the one-second lease to expire server-side",
        || async {
            let (status, body, _) = lease(&client, Some(TOKEN), json!({ "max_time": 30 }))
                .await
                .ok()?;
            (status == StatusCode::OK).then_some(body)
        },
    )
    .await?;
    ensure!(renewed["token"] != body["token"], "L24: a new token");

    let token = renewed["token"].as_str().unwrap_or_default().to_string();
    ensure!(
        release(&cluster.boskos(3), &format!("/lease/{token}")).await? == StatusCode::OK,
        "L25"
    );
    ensure!(
        release(&client, &format!("/lease/{token}")).await? == StatusCode::CONFLICT,
        "L25: again"
    );
    ensure!(
        release(&client, "/lease/not-a-token").await? == StatusCode::BAD_REQUEST,
        "L25: malformed"
    );
    let (again, body, _) = lease(&client, Some(TOKEN), json!({ "max_time": 30 })).await?;
    ensure!(again == StatusCode::OK, "free after release");
    let token = body["token"].as_str().unwrap_or_default();
    ensure!(
        release(&client, &format!("/lease/google/{token}")).await? == StatusCode::OK,
        "provider path"
    );
    cluster.shutdown().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_token_guards_every_lease_call_but_not_health() -> Result<()> {
    let cluster = claimer_cluster(&["c1"]).await?;
    let client = cluster.boskos(1);
    let (missing, _, _) = lease(&client, None, json!({ "max_time": 30 })).await?;
    ensure!(missing == StatusCode::UNAUTHORIZED, "L23: {missing}");
    let (wrong, _, _) = lease(&client, Some("nope"), json!({ "max_time": 30 })).await?;
    ensure!(wrong == StatusCode::UNAUTHORIZED, "L23: {wrong}");
    let (http, base) = client.raw();
    let delete = http
        .delete(format!("{base}/lease/3f1c2a7e-9a44-4f5c-8f7e-2b1d5f8a9c10"))
        .send()
        .await?;
    ensure!(
        delete.status() == StatusCode::UNAUTHORIZED,
        "L23: {}",
        delete.status()
    );
    let (bad, _, _) = lease(&client, Some(TOKEN), json!({ "max_time": "soon" })).await?;
    ensure!(bad == StatusCode::BAD_REQUEST, "malformed body: {bad}");
    for path in ["/healthz", "/"] {
        let status = http.get(format!("{base}{path}")).send().await?.status();
        ensure!(status == StatusCode::OK, "L27: {path} {status}");
    }
    cluster.shutdown().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn cluster_regex_picks_the_matching_cluster() -> Result<()> {
    let cluster = claimer_cluster(&["c1", "c2", "c3"]).await?;
    let client = cluster.boskos(3);
    let (status, body, text) = lease(
        &client,
        Some(TOKEN),
        json!({ "max_time": 30, "cluster_regex": "^c2$" }),
    )
    .await?;
    ensure!(
        status == StatusCode::OK && body["cluster_name"] == "c2",
        "L26: {status} {text}"
    );
    let (none, _, _) = lease(
        &client,
        Some(TOKEN),
        json!({ "max_time": 30, "cluster_regex": "^c2$" }),
    )
    .await?;
    ensure!(none == StatusCode::CONFLICT, "L26: c2 is taken: {none}");
    let (invalid, _, _) = lease(
        &client,
        Some(TOKEN),
        json!({ "max_time": 30, "cluster_regex": "(" }),
    )
    .await?;
    ensure!(invalid == StatusCode::BAD_REQUEST, "bad regex: {invalid}");
    cluster.shutdown().await
}
