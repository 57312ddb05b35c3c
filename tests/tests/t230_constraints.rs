//! Label constraints choose among clusters (the scheduling issue's first slice), on three
//! `drover serve` processes and two `sim` agents labelled `location=DE` and `location=SK`: a
//! service constrained to SK runs there (checked in both agents' inventories) and says why the
//! DE cluster was not chosen; one whose constraint no cluster meets is not placed and says why
//! for every cluster; a malformed constraint is `400` naming the expression; a dry run says
//! where the service would go. Draining the SK
//! cluster moves an unconstrained service off it (started on DE first, then removed from SK,
//! which answers all along), after which nothing of it is left there. A service that fits two
//! clusters is placed on the one with room for its rollout's surge too, and rolls out there.

use std::time::Duration;

use anyhow::{ensure, Context, Result};
use drover_tests::agent::{AgentClient, AgentProcess};
use drover_tests::platform::{process_platform_args, token, PlatformClient, OPERATOR_SUBJECT};
use drover_tests::process::ProcessCluster;
use drover_tests::services::{cluster_state, expect_ok, label_cluster, tenant_with_clusters};
use drover_tests::wait::eventually;
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
use tempfile::TempDir;

const ELECTION: Duration = Duration::from_secs(20);
const CONVERGE: Duration = Duration::from_secs(30);

fn constrained(labels: &[&str]) -> Value {
    json!({"deployment": {
        "roles": {"web": {"instances": 2, "exec": {"argv": ["web"]},
            "resources": {"cpu_millis": 100, "memory_mib": 16}}},
        "constraints": {"labels": labels},
    }})
}

async fn count_of(agent: &AgentClient, prefix: &str) -> Option<usize> {
    agent.instances_with_prefix(prefix).await.map(|found| found.len())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn label_constraints_choose_the_cluster_and_say_why() -> Result<()> {
    let dir = TempDir::new()?;
    let mut args = process_platform_args(dir.path())?;
    args.push("--cluster-probe-interval=200ms".to_string());
    let nodes = ProcessCluster::start_with_args(3, &args)?;
    let de = AgentProcess::start(&["--executor=sim"])?;
    let sk = AgentProcess::start(&["--executor=sim"])?;
    let leader = nodes.leader(ELECTION).await?;
    let follower = (1..=3).find(|id| *id != leader).context("no follower")?;
    let root = PlatformClient::new(&nodes.api_addr(leader), Some(token(OPERATOR_SUBJECT)));
    let alice = PlatformClient::new(&nodes.api_addr(follower), Some(token("alice")));
    tenant_with_clusters(&root, &alice, &[(&de, "de"), (&sk, "sk")], 8000).await?;
    for (cluster, location) in [("de", "DE"), ("sk", "SK")] {
        label_cluster(&root, cluster, json!({"location": location})).await?;
        cluster_state(&root, cluster, "ONLINE", CONVERGE).await?;
    }

    // Constrained to SK: it runs there and nowhere else, and says why DE was not chosen.
    let path = "/tenant/acme/service/south?accept=true";
    expect_ok(
        &alice,
        Method::POST,
        path,
        Some(&constrained(&["location in (SK, AT)"])),
    )
    .await?;
    let (de_client, sk_client) = (de.client(), sk.client());
    eventually(
        CONVERGE,
        "the service's two instances on the SK agent",
        || async {
            let on_sk = count_of(&sk_client, "acme.south.").await?;
            let on_de = count_of(&de_client, "acme.south.").await?;
            (on_sk == 2 && on_de == 0).then_some(())
        },
    )
    .await?;
    let shown = expect_ok(&alice, Method::GET, "/tenant/acme/service/south", None).await?;
    let scheduling = &shown["data"]["scheduling"];
    ensure!(scheduling["chosen"]["cluster"]["name"] == "sk", "{shown}");
    let excluded = scheduling["excluded"].as_array().context("excluded")?;
    ensure!(
        excluded.iter().any(|e| e["cluster"]["name"] == "de"
            && e["reason"]
                .as_str()
                .is_some_and(|r| r.contains("`location in (SK, AT)` is false"))),
        "{shown}"
    );

    // A dry run says where the scheduler would place a service, and stores nothing.
    let dry = expect_ok(
        &alice,
        Method::POST,
        "/tenant/acme/service/probe?dryrun=true&accept=true",
        Some(&constrained(&["location is DE"])),
    )
    .await?;
    let placement = &dry["data"]["placement"];
    ensure!(placement["chosen"]["cluster"]["name"] == "de", "{dry}");
    ensure!(placement["excluded"][0]["cluster"]["name"] == "sk", "{dry}");
    let stored = alice.get("/tenant/acme/service/probe").await?;
    ensure!(stored.status == StatusCode::NOT_FOUND, "{stored:?}");

    // No cluster meets it: not placed, nothing runs, and the status names every exclusion.
    let path = "/tenant/acme/service/nowhere?accept=true";
    expect_ok(
        &alice,
        Method::POST,
        path,
        Some(&constrained(&["location is FR"])),
    )
    .await?;
    let reason = eventually(CONVERGE, "the unplaced service to say why", || async {
        let answer = alice.get("/tenant/acme/service/nowhere").await.ok()?;
        let reconcile = &answer.body["data"]["reconcile"];
        let reason = reconcile["reason"].as_str()?.to_string();
        (reconcile["phase"] == "WAITING" && reason.contains("location is FR")).then_some(reason)
    })
    .await?;
    ensure!(
        reason.contains("operator/de") && reason.contains("operator/sk"),
        "{reason}"
    );
    ensure!(count_of(&de_client, "acme.nowhere.").await == Some(0));
    ensure!(count_of(&sk_client, "acme.nowhere.").await == Some(0));

    // A malformed constraint: 400 naming it, nothing created.
    let bad = alice
        .post(
            "/tenant/acme/service/bad?accept=true",
            &constrained(&["location was DE"]),
        )
        .await?;
    ensure!(bad.status == StatusCode::BAD_REQUEST, "{bad:?}");
    ensure!(bad.body.to_string().contains("location was DE"), "{bad:?}");
    let missing = alice.get("/tenant/acme/service/bad").await?;
    ensure!(missing.status == StatusCode::NOT_FOUND, "{missing:?}");

    // Draining SK moves an unconstrained service that runs there to DE, and only then are its
    // copies on SK removed; the SK-only service has nowhere to go and keeps running.
    let path = "/tenant/acme/service/free?accept=true";
    expect_ok(
        &alice,
        Method::POST,
        path,
        Some(&constrained(&["location is SK"])),
    )
    .await?;
    eventually(CONVERGE, "the service on SK", || async {
        (count_of(&sk_client, "acme.free.").await? == 2).then_some(())
    })
    .await?;
    // Let it go anywhere now: the constraint moves with the next revision, not the placement.
    let patch = json!({"constraints": {"labels": []}});
    expect_ok(
        &alice,
        Method::PATCH,
        "/tenant/acme/service/free/revision/1?accept=true",
        Some(&patch),
    )
    .await?;
    let drain = json!({"draining": true});
    expect_ok(
        &root,
        Method::PUT,
        "/tenant/operator/cluster/sk/drain",
        Some(&drain),
    )
    .await?;
    eventually(
        CONVERGE,
        "the drained cluster's service to move to DE",
        || async {
            let on_de = count_of(&de_client, "acme.free.").await?;
            let on_sk = count_of(&sk_client, "acme.free.").await?;
            (on_de == 2 && on_sk == 0).then_some(())
        },
    )
    .await?;
    let shown = expect_ok(&alice, Method::GET, "/tenant/acme/service/free", None).await?;
    ensure!(shown["data"]["cluster"]["name"] == "de", "{shown}");
    ensure!(
        count_of(&sk_client, "acme.south.").await == Some(2),
        "the SK-only service left"
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_service_is_placed_where_its_rollouts_surge_fits() -> Result<()> {
    let dir = TempDir::new()?;
    let mut args = process_platform_args(dir.path())?;
    args.push("--cluster-probe-interval=200ms".to_string());
    let nodes = ProcessCluster::start_with_args(3, &args)?;
    // `tight` holds the service's four instances of 100m, not the fifth a rollout starts
    // beside them; `roomy` holds both.
    let tight = AgentProcess::start(&[
        "--executor=sim",
        "--capacity-cpu-millis=400",
        "--capacity-memory-mib=1024",
    ])?;
    let roomy = AgentProcess::start(&[
        "--executor=sim",
        "--capacity-cpu-millis=8000",
        "--capacity-memory-mib=8192",
    ])?;
    let leader = nodes.leader(ELECTION).await?;
    let root = PlatformClient::new(&nodes.api_addr(leader), Some(token(OPERATOR_SUBJECT)));
    let alice = PlatformClient::new(&nodes.api_addr(leader), Some(token("alice")));
    tenant_with_clusters(&root, &alice, &[(&tight, "tight"), (&roomy, "roomy")], 8000).await?;
    for cluster in ["tight", "roomy"] {
        cluster_state(&root, cluster, "ONLINE", CONVERGE).await?;
    }
    let service = json!({"deployment": {"roles": {"web": {"instances": 4,
        "exec": {"argv": ["web"]}, "resources": {"cpu_millis": 100, "memory_mib": 16}}}}});
    expect_ok(
        &alice,
        Method::POST,
        "/tenant/acme/service/web?accept=true",
        Some(&service),
    )
    .await?;
    let (tight_client, roomy_client) = (tight.client(), roomy.client());
    eventually(CONVERGE, "the service's four instances on roomy", || async {
        let on_roomy = count_of(&roomy_client, "acme.web.").await?;
        let on_tight = count_of(&tight_client, "acme.web.").await?;
        (on_roomy == 4 && on_tight == 0).then_some(())
    })
    .await?;
    let shown = expect_ok(&alice, Method::GET, "/tenant/acme/service/web", None).await?;
    let scheduling = &shown["data"]["scheduling"];
    ensure!(scheduling["chosen"]["cluster"]["name"] == "roomy", "{shown}");
    ensure!(
        scheduling["excluded"]
            .as_array()
            .context("excluded")?
            .iter()
            .any(|e| e["cluster"]["name"] == "tight"
                && e["reason"]
                    .as_str()
                    .is_some_and(|r| r.starts_with("no room for a rollout's surge"))),
        "{shown}"
    );
    // A rollout there runs five at its peak, and ends RUNNING on the new revision.
    let patch = json!({"roles": {"web": {"env": {"VERSION": "2"}}}});
    expect_ok(
        &alice,
        Method::PATCH,
        "/tenant/acme/service/web/revision/1?accept=true",
        Some(&patch),
    )
    .await?;
    eventually(CONVERGE, "the rollout to end RUNNING", || async {
        let answer = alice.get("/tenant/acme/service/web").await.ok()?;
        let reconcile = &answer.body["data"]["reconcile"];
        (reconcile["phase"] == "RUNNING" && reconcile["revision"] == 2).then_some(())
    })
    .await?;
    Ok(())
}
