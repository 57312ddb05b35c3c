//! Services and revisions through the platform API of a three-node cluster, calls spread over
//! the nodes: dry runs store nothing (A20), the acceptance flow and the rejection of a first
//! revision (A21), one pending revision and the `previous` check (A22), acceptance within the
//! marks (A23), history, scale and rollback (A24), the tenant's rules refusing a user (A19), and
//! the part-1 guards that waited for services (A9, A13, A14).

use std::time::Duration;

use anyhow::{ensure, Context, Result};
use drover_tests::client::read_events;
use drover_tests::cluster::{ClusterOptions, TestCluster};
use drover_tests::platform::{token, PlatformClient};
use reqwest::Method;
use serde_json::{json, Value};

const ELECTION: Duration = Duration::from_secs(15);

fn deployment(instances: u32, cpu: u64) -> Value {
    json!({"deployment": {
        "roles": {"frontend": {
            "instances": instances,
            "resources": {"cpu_millis": cpu, "memory_mib": 64},
            "exec": {"argv": ["sleep", "1000"]},
        }},
        "resources": [{"kind": "secret", "name": "db"}],
    }, "comment": "first"})
}

async fn expect(
    client: &PlatformClient,
    method: Method,
    path: &str,
    body: Option<&Value>,
    status: u16,
) -> Result<Value> {
    let answer = client.call(method.clone(), path, body).await?;
    ensure!(
        answer.status.as_u16() == status,
        "{method} {path}: wanted {status}, got {answer:?}"
    );
    Ok(answer.body)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn services_are_revised_accepted_scaled_and_rolled_back() -> Result<()> {
    let cluster = TestCluster::start_with_options(3, ClusterOptions::with_credentials()).await?;
    cluster.leader(ELECTION).await?;
    let [one, two, three] = [1, 2, 3].map(|id| cluster.platform(id, Some(token("alice"))));
    one.register("alice").await?;
    let bob = cluster.platform(2, Some(token("bob")));
    let bob_uid = bob.register("bob").await?;
    expect(&two, Method::POST, "/tenant/acme", Some(&json!({})), 200).await?;
    expect(
        &three,
        Method::POST,
        "/tenant/acme/account/main",
        Some(&json!({"spec": {"iaas": "sim"}})),
        200,
    )
    .await?;
    let env = json!({"marks": {"vcpu": {"max": 1000}}, "labels": {"tier": "prod"}});
    expect(
        &one,
        Method::POST,
        "/tenant/acme/account/main/environment/prod",
        Some(&env),
        200,
    )
    .await?;
    expect(
        &two,
        Method::POST,
        "/tenant/acme/secret/db",
        Some(&json!({"data": "pw"})),
        200,
    )
    .await?;

    // A20: a dry run answers the cost and stores nothing.
    let dry = expect(
        &one,
        Method::POST,
        "/tenant/acme/service/web?dryrun=true",
        Some(&deployment(2, 100)),
        200,
    )
    .await?;
    ensure!(dry["data"]["environment"] == "main/prod", "{dry}");
    let listed = expect(&two, Method::GET, "/tenant/acme/service", None, 200).await?;
    ensure!(
        listed["data"] == json!([]),
        "a dry run stored something: {listed}"
    );

    // A21: without accept the first revision waits; rejecting it removes the service.
    let created = expect(
        &three,
        Method::POST,
        "/tenant/acme/service/web",
        Some(&deployment(2, 100)),
        200,
    )
    .await?;
    ensure!(created["data"]["currentRevision"].is_null(), "{created}");
    ensure!(created["data"]["history"][0]["accepted"] == false, "{created}");
    expect(
        &one,
        Method::PUT,
        "/tenant/acme/service/web/revision/1?accept=false",
        None,
        200,
    )
    .await?;
    expect(&two, Method::GET, "/tenant/acme/service/web", None, 404).await?;

    // A23: accept=true within the marks deploys at once.
    let created = expect(
        &three,
        Method::POST,
        "/tenant/acme/service/web?accept=true",
        Some(&deployment(2, 100)),
        200,
    )
    .await?;
    ensure!(created["data"]["currentRevision"] == 1, "{created}");
    let info = expect(
        &one,
        Method::GET,
        "/tenant/acme/account/main/environment/prod",
        None,
        200,
    )
    .await?;
    ensure!(
        info["data"]["status"]["marks"]["vcpu"]["current"] == 200,
        "{info}"
    );
    // Beyond the marks it waits, and accepting it is refused.
    let scale = json!({"scale": {"frontend": 20}});
    let beyond = expect(
        &two,
        Method::PATCH,
        "/tenant/acme/service/web/revision/1/scale?accept=true",
        Some(&scale),
        200,
    )
    .await?;
    ensure!(beyond["data"]["status"]["accepted"] == false, "{beyond}");
    ensure!(
        beyond["data"]["status"]["usage"]["max"]["vcpu"] == 2000,
        "{beyond}"
    );
    expect(
        &three,
        Method::PUT,
        "/tenant/acme/service/web/revision/2?accept=true",
        None,
        409,
    )
    .await?;

    // A22: while revision 2 waits, updates are refused; then a stale previous is refused.
    let scale = json!({"scale": {"frontend": 3}});
    expect(
        &one,
        Method::PATCH,
        "/tenant/acme/service/web/revision/1/scale",
        Some(&scale),
        409,
    )
    .await?;
    expect(
        &two,
        Method::PUT,
        "/tenant/acme/service/web/revision?accept=false",
        None,
        200,
    )
    .await?;
    expect(
        &three,
        Method::PATCH,
        "/tenant/acme/service/web/revision/7/scale",
        Some(&scale),
        409,
    )
    .await?;

    // A24: PATCH, SCALE, ROLLBACK; history and config.
    let patch = json!({"parameters": {"greeting": "hi"}});
    let patched = expect(
        &one,
        Method::PATCH,
        "/tenant/acme/service/web/revision/1?accept=true",
        Some(&patch),
        200,
    )
    .await?;
    let patched_number = patched["data"]["revision"].as_u64().unwrap_or_default();
    let scaled = expect(
        &two,
        Method::PATCH,
        &format!("/tenant/acme/service/web/revision/{patched_number}/scale?accept=true"),
        Some(&scale),
        200,
    )
    .await?;
    let scaled_number = scaled["data"]["revision"].as_u64().unwrap_or_default();
    let rolled = expect(
        &three,
        Method::PUT,
        &format!("/tenant/acme/service/web/revision/{scaled_number}/rollback/1?accept=true"),
        None,
        200,
    )
    .await?;
    // Revision 1's deployment again: two instances, no greeting parameter.
    ensure!(
        rolled["data"]["spec"]["roles"]["frontend"]["instances"] == 2,
        "{rolled}"
    );
    ensure!(rolled["data"]["spec"]["parameters"] == json!({}), "{rolled}");
    let history = expect(&one, Method::GET, "/tenant/acme/service/web/history", None, 200).await?;
    let types: Vec<&str> = history["data"]
        .as_array()
        .map(|h| h.iter().filter_map(|e| e["type"].as_str()).collect())
        .unwrap_or_default();
    ensure!(types == ["PUT", "PATCH", "SCALE", "ROLLBACK"], "{history}");
    let last = &history["data"][3];
    ensure!(
        last["reinstates"] == 1 && last["previous"] == scaled_number,
        "{history}"
    );
    let current = expect(&two, Method::GET, "/tenant/acme/service/web/scale", None, 200).await?;
    ensure!(current["data"] == json!({"frontend": 2}), "{current}");
    let summary = expect(
        &three,
        Method::GET,
        "/tenant/acme/service/web?summary=true",
        None,
        200,
    )
    .await?;
    ensure!(
        summary["data"]["resources"] == json!({"secret": ["db"]}),
        "{summary}"
    );

    // A9, A13, A14: the tenant, its environment and the secret are in use.
    expect(&one, Method::DELETE, "/tenant/acme/secret/db", None, 409).await?;
    expect(
        &two,
        Method::DELETE,
        "/tenant/acme/account/main/environment/prod",
        None,
        409,
    )
    .await?;
    expect(&three, Method::DELETE, "/tenant/acme", None, 409).await?;

    // A19: a rule refusing plain members refuses bob, and nothing is created.
    expect(
        &one,
        Method::POST,
        &format!("/tenant/acme/user/{bob_uid}?role=plain"),
        None,
        200,
    )
    .await?;
    expect(&bob, Method::PUT, "/tenant/acme/user?role=plain", None, 200).await?;
    let rules = json!({"rules": {"validateEnvironmentUser": [
        {"reason": "only owners deploy", "sel": ["$.user.role", "owner", "::eq"]}
    ]}});
    expect(&two, Method::PATCH, "/tenant/acme", Some(&rules), 200).await?;
    let refused = expect(
        &bob,
        Method::POST,
        "/tenant/acme/service/api",
        Some(&deployment(1, 100)),
        403,
    )
    .await?;
    ensure!(refused.to_string().contains("only owners deploy"), "{refused}");
    expect(&bob, Method::GET, "/tenant/acme/service/api", None, 404).await?;

    // A wait that is no number of seconds is refused; bad bodies name the field.
    expect(
        &one,
        Method::POST,
        "/tenant/acme/service/api?wait=soon",
        Some(&deployment(1, 100)),
        400,
    )
    .await?;
    let bad = json!({"deployment": {"roles": {"frontend": {"instances": 1, "exec": {"argv": []}}}}});
    let error = expect(&two, Method::POST, "/tenant/acme/service/api", Some(&bad), 400).await?;
    ensure!(error["content"]["field"] == "roles.frontend.exec.argv", "{error}");

    // Deleting the service frees the guards.
    expect(&three, Method::DELETE, "/tenant/acme/service/web", None, 200).await?;
    expect(&one, Method::DELETE, "/tenant/acme/secret/db", None, 200).await?;
    cluster.shutdown().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_updates_of_one_previous_and_a_retried_create() -> Result<()> {
    let cluster = TestCluster::start_with_options(3, ClusterOptions::with_credentials()).await?;
    cluster.leader(ELECTION).await?;
    let clients = [1, 2, 3].map(|id| cluster.platform(id, Some(token("alice"))));
    clients[0].register("alice").await?;
    expect(&clients[1], Method::POST, "/tenant/acme", Some(&json!({})), 200).await?;
    expect(
        &clients[2],
        Method::POST,
        "/tenant/acme/account/main",
        Some(&json!({"spec": {"iaas": "sim"}})),
        200,
    )
    .await?;
    expect(
        &clients[0],
        Method::POST,
        "/tenant/acme/account/main/environment/prod",
        Some(&json!({})),
        200,
    )
    .await?;
    expect(
        &clients[1],
        Method::POST,
        "/tenant/acme/secret/db",
        Some(&json!({"data": "pw"})),
        200,
    )
    .await?;

    // A create retried with the same Idempotency-Key (as after a timeout): one service, one
    // revision.
    let http = reqwest::Client::new();
    let mut answers = Vec::new();
    for id in [1, 2] {
        let answer = http
            .post(format!(
                "http://{}/api/1.0-beta/tenant/acme/service/web?accept=true",
                cluster.api_addr(id)
            ))
            .bearer_auth(token("alice"))
            .header("Idempotency-Key", "create-web-1")
            .json(&deployment(1, 100))
            .send()
            .await?;
        answers.push(answer.status().as_u16());
    }
    ensure!(answers == [200, 200], "a retried create answered {answers:?}");
    let history = expect(
        &clients[2],
        Method::GET,
        "/tenant/acme/service/web/history",
        None,
        200,
    )
    .await?;
    ensure!(history["data"].as_array().map(Vec::len) == Some(1), "{history}");

    // Twenty PATCHes naming the same previous at once: exactly one makes revision 2.
    let patches = (0..20).map(|i| {
        let client = clients[i % 3].clone();
        async move {
            let patch = json!({"parameters": {"writer": i}});
            client
                .call(
                    Method::PATCH,
                    "/tenant/acme/service/web/revision/1?accept=true",
                    Some(&patch),
                )
                .await
                .map(|answer| answer.status.as_u16())
        }
    });
    let statuses: Vec<u16> = futures::future::join_all(patches)
        .await
        .into_iter()
        .collect::<Result<_>>()?;
    let won = statuses.iter().filter(|s| **s == 200).count();
    let lost = statuses.iter().filter(|s| **s == 409).count();
    ensure!(won == 1 && lost == 19, "statuses {statuses:?}");
    let history = expect(
        &clients[0],
        Method::GET,
        "/tenant/acme/service/web/history",
        None,
        200,
    )
    .await?;
    let chain: Vec<(u64, Option<u64>)> = history["data"]
        .as_array()
        .map(|h| {
            h.iter()
                .map(|e| (e["revision"].as_u64().unwrap_or(0), e["previous"].as_u64()))
                .collect()
        })
        .unwrap_or_default();
    ensure!(chain == [(1, None), (2, Some(1))], "{history}");
    cluster.shutdown().await
}

/// A three-node cluster where alice has tenant `acme` with account `main` and environment
/// `prod` allowing `vcpu` millicores; her clients on nodes 1, 2 and 3.
async fn acme_with_prod(vcpu: u64) -> Result<(TestCluster, [PlatformClient; 3])> {
    let cluster = TestCluster::start_with_options(3, ClusterOptions::with_credentials()).await?;
    cluster.leader(ELECTION).await?;
    let clients = [1, 2, 3].map(|id| cluster.platform(id, Some(token("alice"))));
    let [one, two, three] = &clients;
    one.register("alice").await?;
    expect(two, Method::POST, "/tenant/acme", Some(&json!({})), 200).await?;
    let account = json!({"spec": {"iaas": "sim"}});
    expect(
        three,
        Method::POST,
        "/tenant/acme/account/main",
        Some(&account),
        200,
    )
    .await?;
    let env = json!({"marks": {"vcpu": {"max": vcpu}}});
    expect(
        one,
        Method::POST,
        "/tenant/acme/account/main/environment/prod",
        Some(&env),
        200,
    )
    .await?;
    Ok((cluster, clients))
}

/// A service with `client` and `server` channels.
fn with_channels(client: &[&str], server: &[&str]) -> Value {
    let side = |names: &[&str]| -> Value { names.iter().map(|n| (n.to_string(), json!({}))).collect() };
    json!({"deployment": {
        "roles": {"main": {"instances": 1, "resources": {"cpu_millis": 10, "memory_mib": 8},
            "exec": {"argv": ["sleep", "1000"]}}},
        "channels": {"client": side(client), "server": side(server)},
    }})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn links_join_channels_of_services_in_one_environment() -> Result<()> {
    // A26, calls spread over the nodes.
    let (_cluster, [one, two, three]) = acme_with_prod(1000).await?;
    expect(
        &two,
        Method::POST,
        "/tenant/acme/service/front?accept=true",
        Some(&with_channels(&["api"], &[])),
        200,
    )
    .await?;
    expect(
        &three,
        Method::POST,
        "/tenant/acme/service/back?accept=true",
        Some(&with_channels(&[], &["api", "admin"])),
        200,
    )
    .await?;
    // A roomier environment: the next service lands there.
    let big = json!({"marks": {"vcpu": {"max": 100000}}});
    expect(
        &one,
        Method::POST,
        "/tenant/acme/account/main/environment/dev",
        Some(&big),
        200,
    )
    .await?;
    let other = expect(
        &two,
        Method::POST,
        "/tenant/acme/service/other?accept=true",
        Some(&with_channels(&[], &["api"])),
        200,
    )
    .await?;
    ensure!(other["data"]["environment"] == "main/dev", "{other}");

    let channels = expect(
        &three,
        Method::GET,
        "/tenant/acme/service/back/channels",
        None,
        200,
    )
    .await?;
    ensure!(channels["data"]["server"]["admin"].is_object(), "{channels}");

    // Different environments: 409; a channel that does not exist: 404.
    let link = |client: &str, cc: &str, server: &str, sc: &str| {
        format!("/tenant/acme/service/{client}/client/{cc}/tenant/acme/service/{server}/server/{sc}")
    };
    expect(
        &one,
        Method::POST,
        &link("front", "api", "other", "api"),
        None,
        409,
    )
    .await?;
    // Another tenant: the same 409 whether or not it has such a service (nothing is learnt).
    for tenant in ["operator", "no-such-tenant"] {
        let foreign = format!("/tenant/acme/service/front/client/api/tenant/{tenant}/service/x/server/y");
        expect(&two, Method::POST, &foreign, None, 409).await?;
    }
    expect(
        &one,
        Method::POST,
        &link("front", "nope", "back", "api"),
        None,
        404,
    )
    .await?;
    expect(
        &one,
        Method::POST,
        &link("front", "api", "back", "nope"),
        None,
        404,
    )
    .await?;
    // The same environment: 200, listed from both ends as linked, shown in the full view.
    expect(
        &two,
        Method::POST,
        &link("front", "api", "back", "api"),
        None,
        200,
    )
    .await?;
    expect(
        &three,
        Method::POST,
        &link("front", "api", "back", "api"),
        None,
        409,
    )
    .await?;
    for service in ["front", "back"] {
        let links = expect(
            &one,
            Method::GET,
            &format!("/tenant/acme/service/{service}/links"),
            None,
            200,
        )
        .await?;
        let spec = &links["data"][0]["spec"];
        ensure!(
            links["data"].as_array().map(Vec::len) == Some(1)
                && links["data"][0]["status"]["linked"] == true
                && spec["client_service"] == "front"
                && spec["server_channel"] == "api",
            "{service}: {links}"
        );
    }
    let full = expect(&two, Method::GET, "/tenant/acme/service/back", None, 200).await?;
    ensure!(
        full["data"]["links"][0]["source"]["deployment"] == "front",
        "{full}"
    );

    // An update dropping the linked channel: 409 without remove_links; the link stays.
    let dropped = with_channels(&[], &["admin"]);
    expect(
        &three,
        Method::POST,
        "/tenant/acme/service/back/revision/1?accept=true",
        Some(&dropped),
        409,
    )
    .await?;
    // Dropping an unlinked channel is fine.
    expect(
        &one,
        Method::POST,
        "/tenant/acme/service/back/revision/1?accept=true",
        Some(&with_channels(&[], &["api"])),
        200,
    )
    .await?;
    // With remove_links the update goes through and the link goes with it.
    expect(
        &two,
        Method::POST,
        "/tenant/acme/service/back/revision/2?accept=true&remove_links=true",
        Some(&dropped),
        200,
    )
    .await?;
    let links = expect(&three, Method::GET, "/tenant/acme/service/front/links", None, 200).await?;
    ensure!(links["data"].as_array().is_some_and(Vec::is_empty), "{links}");

    // Unlinking: 404 when there is no such link; deleting a service removes its links.
    expect(
        &one,
        Method::DELETE,
        &link("front", "api", "back", "api"),
        None,
        404,
    )
    .await?;
    expect(
        &one,
        Method::POST,
        &link("front", "api", "other", "api"),
        None,
        409,
    )
    .await?;
    expect(
        &two,
        Method::POST,
        "/tenant/acme/service/back/revision/3?accept=true",
        Some(&with_channels(&[], &["api"])),
        200,
    )
    .await?;
    expect(
        &three,
        Method::POST,
        &link("front", "api", "back", "api"),
        None,
        200,
    )
    .await?;
    expect(
        &one,
        Method::DELETE,
        &link("front", "api", "back", "api"),
        None,
        200,
    )
    .await?;
    expect(
        &two,
        Method::POST,
        &link("front", "api", "back", "api"),
        None,
        200,
    )
    .await?;
    expect(&three, Method::DELETE, "/tenant/acme/service/back", None, 200).await?;
    let links = expect(&one, Method::GET, "/tenant/acme/service/front/links", None, 200).await?;
    ensure!(links["data"].as_array().is_some_and(Vec::is_empty), "{links}");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_simple_form_creates_and_updates_a_service() -> Result<()> {
    let (_cluster, [one, two, three]) = acme_with_prod(1000).await?;
    let simple = |frontend: u32| {
        json!({"deployment": {"name": "web", "up": null, "meta": {},
            "config": {"parameter": {"greeting": "hi"}, "resilience": 0, "scale": {"frontend": frontend}},
            "artifact": {"roles": {
                "frontend": {"exec": {"argv": ["serve"]}, "resources": {"cpu_millis": 100, "memory_mib": 16}},
                "worker": {"exec": {"argv": ["work"]}}},
                "channels": {"server": {"http": {"port": 8080}}}}},
            "comment": "simple"})
    };
    let created = expect(
        &two,
        Method::POST,
        "/tenant/acme/service/web/simple?accept=true",
        Some(&simple(2)),
        200,
    )
    .await?;
    ensure!(created["data"]["currentRevision"] == 1, "{created}");
    let scale = expect(&three, Method::GET, "/tenant/acme/service/web/scale", None, 200).await?;
    ensure!(scale["data"] == json!({"frontend": 2, "worker": 1}), "{scale}");
    let channels = expect(&one, Method::GET, "/tenant/acme/service/web/channels", None, 200).await?;
    ensure!(channels["data"]["server"]["http"]["port"] == 8080, "{channels}");
    let updated = expect(
        &two,
        Method::POST,
        "/tenant/acme/service/web/revision/1/simple?accept=true",
        Some(&simple(4)),
        200,
    )
    .await?;
    ensure!(updated["data"]["revision"] == 2, "{updated}");
    let history = expect(&three, Method::GET, "/tenant/acme/service/web/history", None, 200).await?;
    ensure!(
        history["data"][1]["type"] == "PUT" && history["data"][1]["previous"] == 1,
        "{history}"
    );
    let full = expect(&one, Method::GET, "/tenant/acme/service/web", None, 200).await?;
    ensure!(full["data"]["configuration"]["scale"]["frontend"] == 4, "{full}");
    ensure!(
        full["data"]["configuration"]["parameters"]["greeting"] == "hi",
        "{full}"
    );
    // A marketplace reference cannot be resolved: 400 naming the field (with roles beside it too).
    let referenced = json!({"deployment": {"artifact": {"ref": {"name": "hello", "version": [1, 0, 0]}}}});
    let refused = expect(
        &two,
        Method::POST,
        "/tenant/acme/service/other/simple",
        Some(&referenced),
        400,
    )
    .await?;
    ensure!(
        refused.to_string().contains("deployment.artifact.ref"),
        "{refused}"
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn services_are_watched_from_a_resource_version_on_any_node() -> Result<()> {
    let (cluster, [one, two, three]) = acme_with_prod(100000).await?;
    let secret = json!({"data": "pw"});
    expect(&two, Method::POST, "/tenant/acme/secret/db", Some(&secret), 200).await?;
    expect(
        &two,
        Method::POST,
        "/tenant/acme/service/first?accept=true",
        Some(&deployment(1, 10)),
        200,
    )
    .await?;

    // Without a version: what there is now, as ADDED.
    let mut all = three.stream("/tenant/acme/service?watch=true").await?;
    ensure!(all.status() == 200, "{:?}", all.status());
    let opening = read_events(&mut all, 1, Duration::from_secs(10)).await?;
    ensure!(
        opening[0]["type"] == "ADDED" && opening[0]["object"]["name"] == "first",
        "{opening:?}"
    );
    let version = opening[0]["object"]["resourceVersion"]
        .as_u64()
        .context("resourceVersion")?;

    // Changes made on other nodes arrive: a new service, a new revision, a removal.
    expect(
        &one,
        Method::POST,
        "/tenant/acme/service/second?accept=true",
        Some(&deployment(1, 10)),
        200,
    )
    .await?;
    let scale = json!({"scale": {"frontend": 2}});
    expect(
        &two,
        Method::PATCH,
        "/tenant/acme/service/first/revision/1/scale?accept=true",
        Some(&scale),
        200,
    )
    .await?;
    expect(&one, Method::DELETE, "/tenant/acme/service/second", None, 200).await?;
    let seen = read_events(&mut all, 3, Duration::from_secs(10)).await?;
    let kinds: Vec<(String, String)> = seen
        .iter()
        .map(|e| {
            (
                e["type"].as_str().unwrap_or("").into(),
                e["object"]["name"].as_str().unwrap_or("").into(),
            )
        })
        .collect();
    // Changes within one poll come together, each service once: the order is by version.
    ensure!(kinds.contains(&("MODIFIED".into(), "first".into())), "{seen:?}");
    ensure!(
        kinds
            .iter()
            .any(|(k, n)| n == "second" && (k == "ADDED" || k == "DELETED")),
        "{seen:?}"
    );

    // Resuming from the first version on another node replays what came after it.
    let mut resumed = two
        .stream(&format!(
            "/tenant/acme/service?watch=true&resourceVersion={version}"
        ))
        .await?;
    let replay = read_events(&mut resumed, 2, Duration::from_secs(10)).await?;
    let mut replayed: Vec<(&str, &str)> = replay
        .iter()
        .map(|e| {
            (
                e["type"].as_str().unwrap_or(""),
                e["object"]["name"].as_str().unwrap_or(""),
            )
        })
        .collect();
    replayed.sort();
    // (The service actor's reports change `first` too, so the two may come in either order.)
    ensure!(
        replayed == [("DELETED", "second"), ("MODIFIED", "first")],
        "{replay:?}"
    );
    let first = replay
        .iter()
        .find(|e| e["object"]["name"] == "first")
        .context("first")?;
    ensure!(first["object"]["current"] == 2, "{replay:?}");

    // A version from the future, or not a number: 400.
    let future = one
        .get("/tenant/acme/service?watch=true&resourceVersion=99999999")
        .await?;
    ensure!(future.status == 400, "{future:?}");
    let garbage = one
        .get("/tenant/acme/service?watch=true&resourceVersion=x")
        .await?;
    ensure!(garbage.status == 400, "{garbage:?}");
    // A stranger may not watch.
    let carol = cluster.platform(1, Some(token("carol")));
    carol.register("carol").await?;
    let refused = carol.get("/tenant/acme/service?watch=true").await?;
    ensure!(refused.status.is_client_error(), "{refused:?}");

    // Events: none yet on this cluster without agents; the list answers, and a watch of a
    // removed service ends with an error line.
    let events = expect(
        &three,
        Method::GET,
        "/tenant/acme/service/first/events",
        None,
        200,
    )
    .await?;
    ensure!(events["data"].is_array(), "{events}");
    let mut watch = one.stream("/tenant/acme/service/first/events?watch=true").await?;
    expect(&two, Method::DELETE, "/tenant/acme/service/first", None, 200).await?;
    let end = read_events(&mut watch, 1, Duration::from_secs(10)).await?;
    ensure!(end[0]["type"] == "ERROR", "{end:?}");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_selection_algorithm_prefers_an_accepting_environment() -> Result<()> {
    // A18, calls spread over the nodes: prod (1000m) is selected through
    // `selectEnvironmentService`, staging (8000m) only through `selectAcceptEnvironmentService`.
    let (_cluster, [one, two, three]) = acme_with_prod(1000).await?;
    let env = |tier: &str, vcpu: u64| json!({"marks": {"vcpu": {"max": vcpu}}, "labels": {"tier": tier}});
    expect(
        &two,
        Method::PATCH,
        "/tenant/acme/account/main/environment/prod",
        Some(&env("prod", 1000)),
        200,
    )
    .await?;
    expect(
        &three,
        Method::POST,
        "/tenant/acme/account/main/environment/staging",
        Some(&env("staging", 8000)),
        200,
    )
    .await?;
    let rule = |reason: &str, tier: &str| json!({"reason": reason, "sel": ["$.environment.labels.tier", tier, "::eq"]});
    let rules = |select: &str| {
        json!({"rules": {
            "selectEnvironmentService": [rule("deploys at once", select)],
            "selectAcceptEnvironmentService": [rule("needs acceptance", "staging")],
        }})
    };
    expect(&one, Method::PATCH, "/tenant/acme", Some(&rules("prod")), 200).await?;
    // Both pass: the accepting one is chosen although it has fewer vCPUs, and accepted at once.
    // (The deployment uses the tenant's secret `db`.)
    expect(
        &two,
        Method::POST,
        "/tenant/acme/secret/db",
        Some(&json!({"data": "pw"})),
        200,
    )
    .await?;
    let web = expect(
        &two,
        Method::POST,
        "/tenant/acme/service/web?accept=true",
        Some(&deployment(1, 100)),
        200,
    )
    .await?;
    ensure!(
        web["data"]["environment"] == "main/prod" && web["data"]["currentRevision"] == 1,
        "{web}"
    );
    // Only the requiring environment passes: the revision waits for acceptance (S13).
    expect(&three, Method::PATCH, "/tenant/acme", Some(&rules("none")), 200).await?;
    let api = expect(
        &one,
        Method::POST,
        "/tenant/acme/service/api?accept=true",
        Some(&deployment(1, 100)),
        200,
    )
    .await?;
    ensure!(
        api["data"]["environment"] == "main/staging" && api["data"]["currentRevision"].is_null(),
        "{api}"
    );
    let history = expect(&two, Method::GET, "/tenant/acme/service/api/history", None, 200).await?;
    ensure!(history["data"][0]["accepted"] == false, "{history}");
    expect(
        &three,
        Method::PUT,
        "/tenant/acme/service/api/revision/1?accept=true",
        None,
        200,
    )
    .await?;
    let summary = expect(
        &one,
        Method::GET,
        "/tenant/acme/service/api?summary=true",
        None,
        200,
    )
    .await?;
    ensure!(
        summary["data"]["current"] == 1 && summary["data"]["deployed"] == true,
        "{summary}"
    );
    Ok(())
}
