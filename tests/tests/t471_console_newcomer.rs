//! The web console as a newcomer meets it (#52), in a real headless Chromium against three
//! `drover serve` processes and two `exec` agents (a platform-wide cluster `edge`, and `lab` of
//! tenant `acme`): the pools view counts resources by state in words and numbers; a plain member
//! of `acme` sees her tenant's leases, her tenant's clusters with a legend, member names, the
//! service's cluster named `tenant/name` as everywhere else — and Chromium logs no error on any
//! view; a refusal shows the API's words, not its envelope; unknown view names (`#/constructor`,
//! `#/__proto__` …) say there is no such view; a member removed from her tenant is told and her
//! rows are cleared; a user who never registered is told so and registers from the page; every
//! answer under `/ui/` carries the security headers; and when the node the page is on is
//! SIGKILLed the page says so, since when, links the other members' consoles and greys what it
//! shows. Every view is screenshot into `<target>/ui-screenshots/console-*.png` (the pictures of
//! docs/CONSOLE.md).

use std::time::Duration;

use anyhow::{ensure, Context, Result};
use drover_api::ui::CSP;
use drover_tests::agent::{AgentProcess, AGENT_TOKEN};
use drover_tests::boskos::{static_pool_yaml, BoskosClient};
use drover_tests::browser::Browser;
use drover_tests::client::LeaseClient;
use drover_tests::platform::{process_platform_args, token, PlatformClient, OPERATOR_SUBJECT};
use drover_tests::process::ProcessCluster;
use drover_tests::services::{expect_ok, tenant_with_clusters};
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
use tempfile::TempDir;

const ELECTION: Duration = Duration::from_secs(20);

/// The state shown by the badge inside `selector`.
fn badge_is(selector: &str, state: &str) -> String {
    format!(
        "const b = document.querySelector('{selector} .badge'); return !!b && b.dataset.state === '{state}';"
    )
}

/// A script true once `css` matches an element.
fn shown(css: &str) -> String {
    format!("return !!document.querySelector('{css}');")
}

/// A script answering the text of `css` (empty while there is none).
fn text_of(css: &str) -> String {
    format!("const e = document.querySelector('{css}'); return e ? e.textContent : '';")
}

async fn text(browser: &Browser, css: &str) -> Result<String> {
    let value = browser.client.execute(&text_of(css), vec![]).await?;
    Ok(value.as_str().unwrap_or_default().to_string())
}

/// What a cluster of three nodes, two agents, a running service, a pool and two leases looks
/// like to the test: the platform's clients and the follower the browsers open.
struct World {
    nodes: ProcessCluster,
    _agents: [AgentProcess; 2],
    follower: u64,
    ui: String,
    alice: PlatformClient,
    carol: PlatformClient,
    carol_uid: String,
    _dir: TempDir,
}

async fn world() -> Result<World> {
    let dir = TempDir::new()?;
    let args = process_platform_args(dir.path())?;
    let nodes = ProcessCluster::start_with_args(3, &args)?;
    let edge = AgentProcess::exec(&[])?;
    let lab = AgentProcess::exec(&[])?;
    let leader = nodes.leader(ELECTION).await?;
    let follower = nodes
        .running_ids()
        .into_iter()
        .find(|id| *id != leader)
        .context("a follower")?;
    let addr = nodes.api_addr(follower);
    let root = PlatformClient::new(&addr, Some(token(OPERATOR_SUBJECT)));
    let alice = PlatformClient::new(&addr, Some(token("alice")));
    let carol = PlatformClient::new(&addr, Some(token("carol")));
    tenant_with_clusters(&root, &alice, &[(&edge, "edge")], 4000).await?;
    let deployment = json!({"deployment": {"roles": {"main": {
        "instances": 2,
        "resources": {"cpu_millis": 20, "memory_mib": 8},
        "exec": {"argv": ["sh", "-c", "i=0; while true; do echo line-$i; i=$((i+1)); sleep 0.5; done"]},
    }}}, "comment": "first deployment"});
    expect_ok(
        &alice,
        Method::POST,
        "/tenant/acme/service/web?accept=true&wait=60",
        Some(&deployment),
    )
    .await?;
    // acme's own cluster, which a plain member sees and may not drain.
    let registration = json!({"endpoint": format!("http://{}", lab.addr()), "join_token": AGENT_TOKEN});
    expect_ok(
        &alice,
        Method::POST,
        "/tenant/acme/cluster/lab",
        Some(&registration),
    )
    .await?;
    // Carol, a plain member of acme.
    let carol_uid = carol.register("carol").await?;
    expect_ok(
        &alice,
        Method::POST,
        &format!("/tenant/acme/user/{carol_uid}?role=plain"),
        None,
    )
    .await?;
    expect_ok(&carol, Method::PUT, "/tenant/acme/user?role=plain", None).await?;
    // A pool of three, one of them busy.
    let operator_auth = format!("Bearer {}", token(OPERATOR_SUBJECT));
    let pools = BoskosClient::authorized(&addr, Some(&operator_auth));
    let config = pools
        .set_config(&static_pool_yaml("gpu-box", &["box-1", "box-2", "box-3"]))
        .await?;
    ensure!(config.status.is_success(), "pool config: {config:?}");
    pools.wait_for_free("gpu-box", 3, Duration::from_secs(30)).await?;
    let acquired = pools.acquire("gpu-box", "free", "busy", "ci-job-7", None).await?;
    ensure!(acquired.status == StatusCode::OK, "acquire: {acquired:?}");
    // A lease in acme's namespace, and one in a namespace of no tenant.
    let alice_leases = LeaseClient::authorized(&addr, Some(&format!("Bearer {}", token("alice"))));
    let created = alice_leases.create("acme", "singleton", "web-0").await?;
    ensure!(created.status.is_success(), "acme lease: {created:?}");
    let root_leases = LeaseClient::authorized(&addr, Some(&operator_auth));
    let created = root_leases.create("shop", "elect", "shop-1").await?;
    ensure!(created.status.is_success(), "shop lease: {created:?}");
    Ok(World {
        ui: format!("http://{addr}/ui/"),
        nodes,
        _agents: [edge, lab],
        follower,
        alice,
        carol,
        carol_uid,
        _dir: dir,
    })
}

/// Every answer under `/ui/` carries the policy: the index by its file name too, a `404`, a
/// `405`.
async fn headers_on_every_answer(ui: &str) -> Result<()> {
    let http = reqwest::Client::new();
    for (method, path, status) in [
        (Method::GET, "", StatusCode::OK),
        (Method::GET, "index.html", StatusCode::OK),
        (Method::GET, "no-such-file", StatusCode::NOT_FOUND),
        (Method::POST, "", StatusCode::METHOD_NOT_ALLOWED),
    ] {
        let answer = http.request(method, format!("{ui}{path}")).send().await?;
        ensure!(answer.status() == status, "/ui/{path}: {}", answer.status());
        let headers = answer.headers();
        for (name, value) in [
            ("content-security-policy", CSP),
            ("x-content-type-options", "nosniff"),
            ("x-frame-options", "DENY"),
            ("referrer-policy", "no-referrer"),
        ] {
            let got = headers.get(name).and_then(|v| v.to_str().ok());
            ensure!(got == Some(value), "/ui/{path}: {name} is {got:?}");
        }
    }
    Ok(())
}

/// The operator's views: the control plane, every cluster with the timeline's legend, the
/// pools counted by state, every namespace's leases.
async fn operator_views(w: &World) -> Result<()> {
    let b = Browser::start().await?;
    b.sign_in(&w.ui, &token(OPERATOR_SUBJECT)).await?;
    b.wait_until(
        "three members",
        "return document.querySelectorAll('tr[data-member]').length === 3",
    )
    .await?;
    b.screenshot("console-control-plane").await?;
    b.show("#/clusters").await?;
    b.wait_until(
        "edge online",
        &badge_is(r#"tr[data-cluster="operator/edge"]"#, "ONLINE"),
    )
    .await?;
    b.wait_until(
        "lab online",
        &badge_is(r#"tr[data-cluster="acme/lab"]"#, "ONLINE"),
    )
    .await?;
    let legend = text(&b, "#timeline-legend").await?;
    ensure!(
        legend.contains("ONLINE") && legend.contains("OFFLINE"),
        "the timeline's legend: {legend:?}"
    );
    b.screenshot("console-clusters").await?;
    b.show("#/pools").await?;
    b.wait_for("#pool-counts").await?;
    b.screenshot("console-pools").await?;
    b.show("#/leases").await?;
    b.wait_until("both leases", &shown(r#"tr[data-lease="shop/elect"]"#))
        .await?;
    b.wait_for(r#"tr[data-lease="acme/singleton"]"#).await?;
    b.screenshot("console-leases").await?;
    Ok(())
}

/// Alice's views of her tenant (screenshots), left open on the services view.
async fn owner_views(w: &World) -> Result<Browser> {
    let b = Browser::start().await?;
    b.sign_in(&w.ui, &token("alice")).await?;
    b.show("#/tenants").await?;
    b.wait_for(r#"tr[data-tenant="acme"]"#).await?;
    b.screenshot("console-tenants").await?;
    b.show("#/environments").await?;
    b.wait_for(r#"section[data-environment="main/prod"]"#).await?;
    b.screenshot("console-environments").await?;
    b.show("#/service/web").await?;
    b.wait_until("web running", &badge_is("#summary", "RUNNING"))
        .await?;
    b.click("#roles tr[data-instance] a").await?;
    b.wait_until(
        "log lines",
        "const l = document.getElementById('log'); return !!l && (l.textContent.match(/line-/g) || []).length >= 3;",
    )
    .await?;
    b.screenshot("console-service").await?;
    b.show("#/services").await?;
    b.wait_until("web listed", &badge_is(r#"tr[data-service="web"]"#, "RUNNING"))
        .await?;
    b.wait_until(
        "live",
        "return document.getElementById('live').textContent === 'live'",
    )
    .await?;
    b.screenshot("console-services").await?;
    Ok(b)
}

/// Carol, a plain member, on every view: what she may read, and not one error in the log.
async fn member_sees_every_view_without_errors(b: &Browser) -> Result<()> {
    b.wait_until(
        "three members",
        "return document.querySelectorAll('tr[data-member]').length === 3",
    )
    .await?;
    b.show("#/tenants").await?;
    b.wait_for(r#"tr[data-tenant="acme"]"#).await?;
    let members = text(b, r#"tr[data-tenant="acme"]"#).await?;
    ensure!(
        members.contains("carol Tester") && members.contains("you"),
        "her own name among the members: {members:?}"
    );
    // The owner by name too, not a bare id (the tenant's view names its members).
    ensure!(
        members.contains("alice Tester"),
        "the owner's name among the members: {members:?}"
    );
    b.show("#/services").await?;
    b.wait_until("web running", &badge_is(r#"tr[data-service="web"]"#, "RUNNING"))
        .await?;
    let listed = b
        .client
        .execute(
            "return document.querySelector('tr[data-service=\"web\"]').children[2].textContent;",
            vec![],
        )
        .await?;
    b.show("#/service/web").await?;
    b.wait_until("web's summary", &badge_is("#summary", "RUNNING"))
        .await?;
    let cluster = text(b, "#service-cluster").await?;
    ensure!(
        cluster.contains('/') && Value::String(cluster.clone()) == listed,
        "the service page names its cluster {cluster:?}, the list {listed}"
    );
    b.wait_for("#roles tr[data-instance]").await?;
    b.show("#/clusters").await?;
    b.wait_for(r#"tr[data-cluster="acme/lab"]"#).await?;
    b.wait_for("#timeline-legend").await?;
    b.show("#/environments").await?;
    b.wait_for(r#"section[data-environment="main/prod"] table"#)
        .await?;
    b.show("#/pools").await?;
    b.wait_for("#pool-counts").await?;
    let counts = text(b, "#pool-counts").await?;
    ensure!(
        counts.contains("busy 1") && counts.contains("free 2") && !counts.contains("[object"),
        "the pools' count by state: {counts:?}"
    );
    b.show("#/leases").await?;
    b.wait_for(r#"tr[data-lease="acme/singleton"]"#).await?;
    ensure!(
        !b.page_text().await?.contains("shop"),
        "a member sees another namespace's lease"
    );
    b.screenshot("console-member-leases").await?;
    // A poll of each periodic view after the first: the clusters' view is back once more.
    b.show("#/clusters").await?;
    b.wait_for(r#"tr[data-cluster="acme/lab"]"#).await?;
    b.client
        .execute(
            "window.drawn = document.querySelector('main table'); return true;",
            vec![],
        )
        .await?;
    b.wait_until(
        "the clusters redrawn",
        "return document.querySelector('main table') !== window.drawn;",
    )
    .await?;
    let errors = b.console_errors().await?;
    ensure!(errors.is_empty(), "a member's console logged errors: {errors:#?}");
    Ok(())
}

/// A refusal shows the API's words: carol may not drain her tenant's cluster.
async fn refusal_in_words(b: &Browser) -> Result<()> {
    b.click(r#"tr[data-cluster="acme/lab"] button.drain"#).await?;
    b.confirm().await?;
    b.wait_for("#flash").await?;
    let said = text(b, "#flash").await?;
    ensure!(
        said.contains("this needs the admin role") && !said.contains('{'),
        "the refusal as shown: {said:?}"
    );
    b.screenshot("console-refusal").await?;
    // The refusal's own 403 is in the log: read and put aside.
    b.console_errors().await?;
    Ok(())
}

/// Names that are properties of every object are no views.
async fn unknown_views(b: &Browser) -> Result<()> {
    for name in ["nope", "constructor", "toString", "hasOwnProperty", "__proto__"] {
        b.show(&format!("#/{name}")).await?;
        b.wait_until(
            &format!("no view {name}"),
            &format!(
                "const e = document.getElementById('no-such-view'); return !!e && e.textContent.includes('\"{name}\"');"
            ),
        )
        .await?;
    }
    b.screenshot("console-no-such-view").await?;
    let errors = b.console_errors().await?;
    ensure!(errors.is_empty(), "unknown views threw: {errors:#?}");
    Ok(())
}

/// Carol removed from acme while her services view is open: told, and the rows cleared.
async fn removed_member(w: &World, b: &Browser) -> Result<()> {
    b.show("#/services").await?;
    b.wait_until("web listed", &badge_is(r#"tr[data-service="web"]"#, "RUNNING"))
        .await?;
    expect_ok(
        &w.alice,
        Method::DELETE,
        &format!("/tenant/acme/user/{}", w.carol_uid),
        None,
    )
    .await?;
    b.wait_until(
        "carol told",
        "const n = document.getElementById('lost-tenant'); return !!n && n.textContent.includes('no longer a member of tenant acme');",
    )
    .await?;
    b.wait_until(
        "the rows cleared",
        "return document.querySelectorAll('tr[data-service]').length === 0 && !!document.getElementById('no-tenant');",
    )
    .await?;
    b.screenshot("console-removed-member").await?;
    let answer = w.carol.get("/tenant/acme/service").await?;
    ensure!(answer.status == StatusCode::NOT_FOUND, "{answer:?}");
    Ok(())
}

/// Dave never registered: told so and how, and registers from the page.
async fn unregistered_user(w: &World) -> Result<()> {
    let b = Browser::start().await?;
    b.sign_in(&w.ui, &token("dave")).await?;
    b.wait_until(
        "dave told",
        "const n = document.getElementById('unregistered'); return !!n && n.textContent.includes('not registered') && n.textContent.includes('POST /api/1.0-beta/user');",
    )
    .await?;
    b.show("#/services").await?;
    b.wait_until(
        "the services view says register first",
        "const p = document.getElementById('no-tenant'); return !!p && p.textContent.includes('Register first');",
    )
    .await?;
    b.screenshot("console-unregistered").await?;
    b.wait_for("#register-name").await?.send_keys("Dave").await?;
    b.wait_for("#register-surname")
        .await?
        .send_keys("Newcomer")
        .await?;
    b.click("#register-button").await?;
    b.confirm().await?;
    b.wait_until(
        "dave registered",
        "return !document.getElementById('unregistered') && !!document.getElementById('no-tenant') && document.getElementById('no-tenant').textContent.includes('member of no tenant');",
    )
    .await?;
    let dave = PlatformClient::new(
        w.ui.trim_start_matches("http://").trim_end_matches("/ui/"),
        Some(token("dave")),
    );
    let info = dave.get("/user/info").await?;
    ensure!(
        info.status == StatusCode::OK && info.body["data"]["name"] == "Dave",
        "{info:?}"
    );
    Ok(())
}

/// The node alice's page is on is SIGKILLed: the page says so, since when, links the others'
/// consoles and greys the services it showed.
async fn dead_node(w: &mut World, b: &Browser) -> Result<()> {
    b.wait_until("web listed", &badge_is(r#"tr[data-service="web"]"#, "RUNNING"))
        .await?;
    w.nodes.kill(w.follower)?;
    b.wait_until(
        "the node's death said",
        "const n = document.getElementById('node-down'); return !!n && n.textContent.includes('does not answer') && n.textContent.includes('No answer since');",
    )
    .await?;
    let links = b
        .client
        .execute(
            "return [...document.querySelectorAll('#other-members a')].map((a) => a.getAttribute('href')).sort();",
            vec![],
        )
        .await?;
    let mut others: Vec<String> = w
        .nodes
        .running_ids()
        .into_iter()
        .map(|id| format!("http://{}/ui/", w.nodes.api_addr(id)))
        .collect();
    others.sort();
    ensure!(links == json!(others), "offered {links}, running {others:?}");
    let stale = b
        .client
        .execute(
            "return document.getElementById('main').classList.contains('stale') && !!document.querySelector('tr[data-service=\"web\"]');",
            vec![],
        )
        .await?;
    ensure!(stale == Value::Bool(true), "the rows shown are not marked stale");
    b.screenshot("console-node-down").await?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_newcomer_meets_every_view_true_and_every_refusal_in_words() -> Result<()> {
    let mut w = world().await?;
    headers_on_every_answer(&w.ui).await?;
    operator_views(&w).await?;
    let alice = owner_views(&w).await?;

    let carol = Browser::start().await?;
    carol.sign_in(&w.ui, &token("carol")).await?;
    member_sees_every_view_without_errors(&carol).await?;
    refusal_in_words(&carol).await?;
    unknown_views(&carol).await?;
    removed_member(&w, &carol).await?;
    drop(carol);

    unregistered_user(&w).await?;
    dead_node(&mut w, &alice).await?;
    Ok(())
}
