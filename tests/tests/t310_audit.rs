//! The audit log, on three `drover serve` processes with credentials: a change through each
//! dialect (the platform API, a Kubernetes lease, a Boskos acquire) appears once with its
//! principal, read from another node; a refused change appears as refused; a plain member cannot
//! read the log; operators set its retention and it keeps no more.

use std::time::Duration;

use anyhow::{ensure, Context, Result};
use drover_tests::boskos::{static_pool_yaml, BoskosClient};
use drover_tests::client::LeaseClient;
use drover_tests::platform::{process_platform_args, token, PlatformClient, OPERATOR_SUBJECT, TEST_ISSUER};
use drover_tests::process::ProcessCluster;
use drover_tests::wait::eventually;
use reqwest::Method;
use serde_json::{json, Value};

async fn audit(addr: &str, subject: &str) -> Result<(u16, Value)> {
    let answer = reqwest::Client::builder()
        .no_proxy()
        .build()?
        .get(format!("http://{addr}/audit"))
        .bearer_auth(token(subject))
        .send()
        .await?;
    let status = answer.status().as_u16();
    Ok((status, answer.json().await.unwrap_or_default()))
}

fn matching<'a>(entries: &'a [Value], dialect: &str, verb: &str, object: &str) -> Vec<&'a Value> {
    entries
        .iter()
        .filter(|e| e["dialect"] == dialect && e["verb"] == verb && e["object"] == object)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_dialects_changes_are_audited_with_their_principal() -> Result<()> {
    let dir = tempfile::tempdir()?;
    let pools = dir.path().join("pools.yaml");
    std::fs::write(&pools, static_pool_yaml("t", &["r0", "r1"]))?;
    let mut args = process_platform_args(dir.path())?;
    args.extend([
        format!("--pools={}", pools.display()),
        "--pool-sync-interval=200ms".into(),
    ]);
    let nodes = ProcessCluster::start_with_args(3, &args)?;
    let leader = nodes.leader(Duration::from_secs(20)).await?;
    let other = (1..=3).find(|id| *id != leader).context("another node")?;
    let root = PlatformClient::new(&nodes.api_addr(leader), Some(token(OPERATOR_SUBJECT)));
    let alice = PlatformClient::new(&nodes.api_addr(other), Some(token("alice")));
    let bob = PlatformClient::new(&nodes.api_addr(other), Some(token("bob")));
    root.register(OPERATOR_SUBJECT).await?;
    alice.register("alice").await?;
    bob.register("bob").await?;
    let alice_is = format!("alice@{TEST_ISSUER}");

    // The platform API: alice makes a tenant; bob, a stranger to it, may not change it.
    let made = alice.call(Method::POST, "/tenant/acme", Some(&json!({}))).await?;
    ensure!(made.status == 200, "{made:?}");
    let refused = bob.call(Method::DELETE, "/tenant/acme", None).await?;
    ensure!(refused.status.is_client_error(), "{refused:?}");
    // A Kubernetes lease in alice's tenant's namespace, and a Boskos acquire.
    let header = format!("Bearer {}", token("alice"));
    let kube = LeaseClient::authorized(&nodes.api_addr(other), Some(&header));
    let created = kube.create("acme", "l1", "alice").await?;
    ensure!(created.status == 201, "{created:?}");
    let boskos = BoskosClient::authorized(&nodes.api_addr(leader), Some(&header));
    let acquired = eventually(Duration::from_secs(20), "a Boskos acquire", || async {
        let reply = boskos.acquire("t", "free", "busy", "alice", None).await.ok()?;
        (reply.status == 200).then_some(reply)
    })
    .await?;
    let name = acquired.json["name"]
        .as_str()
        .context("a resource name")?
        .to_string();

    // A plain member may not read the log; an operator reads it from any node.
    // Every answer names its request: the caller's id, or a new one.
    let http = reqwest::Client::builder().no_proxy().build()?;
    let url = format!("http://{}/healthz", nodes.api_addr(other));
    let named = http.get(&url).header("x-request-id", "ci-run-42").send().await?;
    ensure!(
        named
            .headers()
            .get("x-request-id")
            .is_some_and(|v| v == "ci-run-42"),
        "{named:?}"
    );
    let fresh = http.get(&url).send().await?;
    ensure!(
        fresh.headers().get("x-request-id").is_some_and(|v| v.len() == 36),
        "{fresh:?}"
    );
    let (status, _) = audit(&nodes.api_addr(other), "alice").await?;
    ensure!(status == 403, "alice reads the audit log: {status}");
    let (status, page) = audit(&nodes.api_addr(other), OPERATOR_SUBJECT).await?;
    ensure!(status == 200, "{page}");
    let entries = page["entries"].as_array().context("entries")?.clone();
    let tenant = matching(&entries, "platform", "create_tenant", "tenant/acme");
    ensure!(
        tenant.len() == 1 && tenant[0]["principal"] == alice_is.as_str() && tenant[0]["result"] == "ok",
        "{page}"
    );
    let lease = matching(
        &entries,
        "kubernetes",
        "create",
        "leases.coordination.k8s.io acme/l1",
    );
    ensure!(
        lease.len() == 1 && lease[0]["principal"] == alice_is.as_str() && lease[0]["result"] == "ok",
        "{page}"
    );
    let acquire = matching(&entries, "boskos", "acquire", "pool/t");
    let ok: Vec<_> = acquire.iter().filter(|e| e["result"] == "ok").collect();
    ensure!(
        ok.len() == 1 && ok[0]["principal"] == alice_is.as_str(),
        "acquired {name}: {page}"
    );
    let bobs: Vec<_> = entries
        .iter()
        .filter(|e| e["principal"] == format!("bob@{TEST_ISSUER}").as_str() && e["object"] == "tenant/acme")
        .collect();
    ensure!(bobs.len() == 1, "{page}");
    ensure!(
        bobs[0]["result"]
            .as_str()
            .is_some_and(|r| r.starts_with("refused: ")),
        "{page}"
    );
    // Revisions rise; the leader's own changes (the pool's sync) are not users'.
    let revisions: Vec<u64> = entries.iter().filter_map(|e| e["revision"].as_u64()).collect();
    ensure!(revisions.windows(2).all(|w| w[0] < w[1]), "{revisions:?}");
    ensure!(entries.iter().all(|e| e["principal"].is_string()), "{page}");

    // Operators set the retention; the log keeps no more.
    let url = format!("http://{}/audit/retention", nodes.api_addr(leader));
    let denied = http
        .put(&url)
        .bearer_auth(token("alice"))
        .json(&json!({"entries": 2}))
        .send()
        .await?;
    ensure!(denied.status() == 403, "{denied:?}");
    let set = http
        .put(&url)
        .bearer_auth(token(OPERATOR_SUBJECT))
        .json(&json!({"entries": 2}))
        .send()
        .await?;
    ensure!(set.status() == 200, "{set:?}");
    let bad = http
        .put(&url)
        .bearer_auth(token(OPERATOR_SUBJECT))
        .json(&json!({"entries": 0}))
        .send()
        .await?;
    ensure!(bad.status() == 400, "{bad:?}");
    let (_, page) = audit(&nodes.api_addr(leader), OPERATOR_SUBJECT).await?;
    let kept = page["entries"].as_array().context("entries")?;
    ensure!(kept.len() == 2 && page["retention"] == 2, "{page}");
    ensure!(kept[1]["verb"] == "set_audit_retention", "{page}");
    Ok(())
}
