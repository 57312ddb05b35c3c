//! The web console (#35) in a real headless browser (Debian's Chromium through ChromeDriver,
//! driven with fantoccini) against three `drover serve` processes and an `exec` agent. Alice
//! signs in on a follower; the services view shows her service live; what she types into the
//! scale field outlives the instances' redraw; the UI's scale action (confirmed in its dialog)
//! shows the rollout's progress until `RUNNING` — and the agent runs the new instances; an
//! instance's log tail shows its new lines; a value holding `<script>` and
//! `"><img onerror>` shows as text under a strict Content-Security-Policy; an operator sees the
//! cluster's badge turn `OFFLINE` with its reason when the agent is SIGSTOPped past the offline
//! threshold, without a reload; a user of another tenant sees none of alice's; and the views
//! keep updating after the leader is SIGKILLed, with no user action. Every view is screenshot
//! into `<target>/ui-screenshots/`.

use std::time::Duration;

use anyhow::{ensure, Result};
use drover_api::ui::CSP;
use drover_model::cluster::agent_api::InstanceState;
use drover_tests::agent::AgentProcess;
use drover_tests::browser::Browser;
use drover_tests::platform::{process_platform_args, token, PlatformClient, OPERATOR_SUBJECT};
use drover_tests::process::ProcessCluster;
use drover_tests::services::{expect_ok, tenant_with_clusters};
use drover_tests::wait::eventually;
use fantoccini::Locator;
use reqwest::Method;
use serde_json::{json, Value};
use tempfile::TempDir;

const ELECTION: Duration = Duration::from_secs(20);
const WAIT: Duration = Duration::from_secs(60);

/// What a hostile value looks like: a script and an attribute breaking out of its quotes.
const HOSTILE: &str = r#"<script>window.pwned = 1</script>"><img src=x onerror="window.pwned = 2">"#;

/// The state shown by the badge inside `selector`.
fn badge_is(selector: &str, state: &str) -> String {
    format!(
        "const b = document.querySelector('{selector} .badge'); return !!b && b.dataset.state === '{state}';"
    )
}

async fn running_instances(agent: &AgentProcess, prefix: &str) -> usize {
    agent
        .client()
        .inventory()
        .await
        .map(|inventory| {
            inventory
                .instances
                .iter()
                .filter(|i| i.id.as_str().starts_with(prefix) && i.state == InstanceState::Running)
                .count()
        })
        .unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_console_shows_the_platform_live_and_acts_through_the_api() -> Result<()> {
    let dir = TempDir::new()?;
    let mut args = process_platform_args(dir.path())?;
    args.push("--cluster-offline-after=3s".to_string());
    let mut nodes = ProcessCluster::start_with_args(3, &args)?;
    let agent = AgentProcess::exec(&[])?;
    let leader = nodes.leader(ELECTION).await?;
    let follower = nodes
        .running_ids()
        .into_iter()
        .find(|id| *id != leader)
        .expect("a follower");
    let ui = format!("http://{}/ui/", nodes.api_addr(follower));
    let addr = nodes.api_addr(follower);
    let root = PlatformClient::new(&addr, Some(token(OPERATOR_SUBJECT)));
    let alice = PlatformClient::new(&addr, Some(token("alice")));
    let bob = PlatformClient::new(&addr, Some(token("bob")));
    tenant_with_clusters(&root, &alice, &[(&agent, "exec")], 4000).await?;
    bob.register("bob").await?;
    expect_ok(&bob, Method::POST, "/tenant/other", Some(&json!({}))).await?;
    let deployment = json!({"deployment": {"roles": {"main": {
        "instances": 1,
        "resources": {"cpu_millis": 20, "memory_mib": 8},
        "exec": {"argv": ["sh", "-c", "i=0; while true; do echo line-$i; i=$((i+1)); sleep 0.3; done"]},
    }}}, "comment": HOSTILE});
    expect_ok(
        &alice,
        Method::POST,
        "/tenant/acme/service/web?accept=true&wait=60",
        Some(&deployment),
    )
    .await?;

    // The page and its policy.
    let page = reqwest::get(&ui).await?;
    ensure!(page.status() == 200, "{page:?}");
    let policy = page
        .headers()
        .get("content-security-policy")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_string();
    ensure!(
        policy == CSP && policy.contains("script-src 'self'") && !policy.contains("unsafe"),
        "{policy}"
    );

    // Alice signs in on a follower: the control plane, then her services, live.
    let browser = Browser::start().await?;
    browser.sign_in(&ui, &token("alice")).await?;
    browser
        .wait_until(
            "three members",
            "return document.querySelectorAll('tr[data-member]').length === 3",
        )
        .await?;
    browser.screenshot("control-plane").await?;
    browser.show("#/services").await?;
    browser
        .wait_until("web running", &badge_is(r#"tr[data-service="web"]"#, "RUNNING"))
        .await?;
    browser.screenshot("services").await?;
    browser.show("#/tenants").await?;
    browser.wait_for(r#"tr[data-tenant="acme"]"#).await?;
    browser.screenshot("tenants").await?;
    browser.show("#/environments").await?;
    browser
        .wait_for(r#"section[data-environment="main/prod"]"#)
        .await?;
    browser.screenshot("environments").await?;

    // The hostile comment shows as text in the history, and ran nothing.
    browser.show("#/service/web").await?;
    browser.wait_for(r#"#history tr[data-revision="1"]"#).await?;
    let shown = browser.page_text().await?;
    ensure!(shown.contains(HOSTILE), "the comment is not shown as text");
    let pwned = browser.client.execute("return window.pwned === undefined && document.querySelectorAll('#history img, #history script').length === 0;", vec![]).await?;
    ensure!(pwned == Value::Bool(true), "the hostile value was parsed as HTML");

    // Scale through the UI: its progress is shown until RUNNING, and the agent runs three.
    browser
        .client
        .execute(
            "window.seen = []; new MutationObserver(() => { const b = document.querySelector('#summary .badge'); const p = document.querySelector('#summary .progress'); if (b) window.seen.push(b.dataset.state + ' ' + (p ? p.textContent : '')); }).observe(document.getElementById('summary'), {childList: true, subtree: true}); return true;",
            vec![],
        )
        .await?;
    let input = browser.wait_for(r#"input[data-scale="main"]"#).await?;
    input.clear().await?;
    input.send_keys("3").await?;
    // The instances are redrawn every few seconds; what the user typed stays, in focus.
    browser
        .client
        .execute(
            "window.drawn = document.querySelector('#roles table'); return true;",
            vec![],
        )
        .await?;
    browser
        .wait_until(
            "the instances redrawn",
            "return document.querySelector('#roles table') !== window.drawn;",
        )
        .await?;
    let kept = browser
        .client
        .execute(
            "const i = document.querySelector('input[data-scale=\"main\"]'); return i.value === '3' && document.activeElement === i;",
            vec![],
        )
        .await?;
    ensure!(kept == Value::Bool(true), "the redraw threw away what was typed");
    browser
        .client
        .find(Locator::Css(r#"button.scale[data-role="main"]"#))
        .await?
        .click()
        .await?;
    browser.confirm().await?;
    browser
        .wait_until(
            "RUNNING with three ready",
            "const b = document.querySelector('#summary .badge'); const p = document.querySelector('#summary .progress'); return !!b && b.dataset.state === 'RUNNING' && !!p && p.textContent.includes('3/3 ready');",
        )
        .await?;
    let seen = browser.client.execute("return window.seen;", vec![]).await?;
    let seen: Vec<String> = serde_json::from_value(seen)?;
    ensure!(
        seen.iter().any(|s| s.starts_with("PROGRESSING")),
        "no progress was shown on the way: {seen:?}"
    );
    eventually(WAIT, "three instances on the agent", || async {
        (running_instances(&agent, "acme.web.main.").await == 3).then_some(())
    })
    .await?;
    // An instance's log tail shows its new lines.
    browser.click("#roles tr[data-instance] a").await?;
    let lines = |n: u32| {
        format!("const l = document.getElementById('log'); return !!l && (l.textContent.match(/line-/g) || []).length >= {n};")
    };
    browser.wait_until("the first lines", &lines(1)).await?;
    let first = browser
        .client
        .execute(
            "return (document.getElementById('log').textContent.match(/line-/g) || []).length;",
            vec![],
        )
        .await?
        .as_u64()
        .unwrap_or_default() as u32;
    browser.wait_until("new lines", &lines(first + 3)).await?;
    browser.screenshot("service").await?;

    // Another tenant's user sees none of it.
    let stranger = Browser::start().await?;
    stranger.sign_in(&ui, &token("bob")).await?;
    stranger.show("#/services").await?;
    stranger.wait_for("#live").await?;
    stranger
        .wait_until(
            "bob's live list",
            "return document.getElementById('live').textContent === 'live'",
        )
        .await?;
    stranger.show("#/service/web").await?;
    stranger.wait_for("#summary .error").await?;
    stranger.show("#/clusters").await?;
    stranger.wait_for("main h1").await?;
    stranger
        .wait_until(
            "bob's clusters view",
            "return document.querySelectorAll('main table, main .error').length > 0",
        )
        .await?;
    let text = stranger.page_text().await?;
    ensure!(
        !text.contains("line-") && !text.contains("acme") && !text.contains("operator/exec"),
        "bob sees alice's: {text}"
    );
    stranger.screenshot("other-tenant").await?;
    drop(stranger);

    // An operator sees the cluster's badge turn OFFLINE, with its reason, without a reload.
    let operator = Browser::start().await?;
    operator.sign_in(&ui, &token(OPERATOR_SUBJECT)).await?;
    operator.show("#/clusters").await?;
    let row = r#"tr[data-cluster="operator/exec"]"#;
    operator
        .wait_until("the cluster online", &badge_is(row, "ONLINE"))
        .await?;
    operator.screenshot("clusters").await?;
    agent.freeze(true)?;
    let reason = operator
        .wait_until(
            "the cluster offline with its reason",
            r#"const r = document.querySelector('tr[data-cluster="operator/exec"]'); const b = r && r.querySelector('.badge'); return !!b && b.dataset.state === 'OFFLINE' && r.querySelector('.reason').textContent;"#,
        )
        .await?;
    ensure!(reason.as_str().is_some_and(|r| r.len() > 3), "{reason}");
    operator.screenshot("cluster-offline").await?;
    agent.freeze(false)?;
    operator
        .wait_until("the cluster back", &badge_is(row, "ONLINE"))
        .await?;
    for (view, name) in [("#/pools", "pools"), ("#/leases", "leases")] {
        operator.show(view).await?;
        operator
            .wait_until(
                name,
                "return document.querySelectorAll('main table, main .error').length > 0",
            )
            .await?;
        operator.screenshot(name).await?;
    }
    drop(operator);

    // The leader SIGKILLed while alice's services view is open on the follower: a scale made
    // after the failover shows without any action of hers.
    browser.show("#/services").await?;
    browser
        .wait_until("web running", &badge_is(r#"tr[data-service="web"]"#, "RUNNING"))
        .await?;
    nodes.kill(leader)?;
    nodes.leader(ELECTION).await?;
    let current = eventually(WAIT, "the service's current revision", || async {
        alice.get("/tenant/acme/service/web").await.ok()?.body["data"]["revision"].as_u64()
    })
    .await?;
    let path = format!("/tenant/acme/service/web/revision/{current}/scale?accept=true");
    eventually(WAIT, "the scale after the failover", || async {
        let answer = alice.patch(&path, &json!({"scale": {"main": 2}})).await.ok()?;
        answer.status.is_success().then_some(())
    })
    .await?;
    browser
        .wait_until(
            "the new revision running with two",
            &format!(
                r#"const r = document.querySelector('tr[data-service="web"]'); return !!r && r.querySelector('.badge').dataset.state === 'RUNNING' && r.children[3].textContent === '{}' && r.textContent.includes('2/2 ready');"#,
                current + 1
            ),
        )
        .await?;
    browser.screenshot("services-after-failover").await?;
    Ok(())
}
