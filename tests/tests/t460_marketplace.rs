//! The marketplace (#34, acceptance 1, 4, 5): three `drover serve` processes and a Verdaccio
//! (a real npm registry) on loopback. A tenant's admin publishes two versions of a module
//! through Drover; the real npm client reads them back from the registry; Drover lists them
//! (filtered by name, tags, domain, paged) and answers their schema. Hostile bundles (traversal,
//! a symbolic link, a bomb, 10,000 entries, an oversized body, CUE) are refused with a `4xx` and
//! publish nothing. A tenant without a registry, a registry that is down and wrong credentials
//! each get their answer; another tenant sees none of a private module and cannot take its
//! domain.

use std::time::Duration;

use anyhow::{ensure, Result};
use drover_tests::bundles::{publish_module, renamed, zip_of};
use drover_tests::platform::{process_platform_args, token, PlatformClient, OPERATOR_SUBJECT};
use drover_tests::process::ProcessCluster;
use drover_tests::verdaccio::{Verdaccio, PASSWORD, USER};
use reqwest::StatusCode;
use serde_json::{json, Value};
use tempfile::TempDir;

const ELECTION: Duration = Duration::from_secs(20);

/// A bundle holding module `hello` of `acme.mods` at `version`: a service `web` with role
/// `frontend`, and a component `worker`.
fn hello(version: [u32; 3]) -> Vec<u8> {
    let kmodule = json!({"domain": "acme.mods", "module": "hello", "version": version,
                         "artifacts": {"web": "service", "worker": "component"}});
    zip_of(&[
        ("hello/kmodule.json", kmodule.to_string().into_bytes()),
        (
            "hello/web/artifact.yaml",
            b"roles: [frontend]\nschemas:\n  - {type: object, properties: {greeting: {type: string}}}\n"
                .to_vec(),
        ),
        ("hello/worker/run.sh", b"echo working\n".to_vec()),
        ("deployment/kmodule.json", b"{}".to_vec()),
    ])
}

/// A bundle holding, in directory `dir`, module `module` of `domain` at 3.0.0 with one service
/// artifact `web`.
fn module_in(dir: &str, domain: &str, module: &str) -> Vec<(String, Vec<u8>)> {
    let kmodule = json!({"domain": domain, "module": module, "version": [3, 0, 0],
                         "artifacts": {"web": "service"}});
    vec![
        (format!("{dir}/kmodule.json"), kmodule.to_string().into_bytes()),
        (
            format!("{dir}/web/artifact.yaml"),
            b"roles: [frontend]\n".to_vec(),
        ),
    ]
}

fn zip_owned(entries: &[(String, Vec<u8>)]) -> Vec<u8> {
    let refs: Vec<(&str, Vec<u8>)> = entries.iter().map(|(n, c)| (n.as_str(), c.clone())).collect();
    zip_of(&refs)
}

/// Publishes a service module of `tenant` as `subject`.
async fn publish(
    addr: &str,
    subject: &str,
    tenant: &str,
    bundle: Vec<u8>,
    dir: &str,
    tags: &str,
) -> Result<(StatusCode, Value)> {
    publish_module(addr, subject, tenant, bundle, ("service", dir, tags)).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn modules_are_published_listed_described_and_hostile_bundles_refused() -> Result<()> {
    let registry = Verdaccio::start()?;
    let dir = TempDir::new()?;
    let args = process_platform_args(dir.path())?;
    let nodes = ProcessCluster::start_with_args(3, &args)?;
    let leader = nodes.leader(ELECTION).await?;
    let addr = nodes.api_addr(leader);
    let other_node = nodes.api_addr(if leader == 1 { 2 } else { 1 });
    let alice = PlatformClient::new(&addr, Some(token("alice")));
    let bob = PlatformClient::new(&addr, Some(token("bob")));
    PlatformClient::new(&addr, Some(token(OPERATOR_SUBJECT)))
        .register(OPERATOR_SUBJECT)
        .await?;
    alice.register("alice").await?;
    bob.register("bob").await?;
    for (client, tenant) in [(&alice, "acme"), (&alice, "bare"), (&bob, "other")] {
        let made = client.post(&format!("/tenant/{tenant}"), &json!({})).await?;
        ensure!(made.status == StatusCode::OK, "{made:?}");
    }
    let credentials = format!("{USER}:{PASSWORD}");
    let acme_registry = json!({"registry": {"endpoint": registry.endpoint(), "domain": "acme.mods",
                                            "credentials": credentials, "public": false}});
    let set = alice.patch("/tenant/acme", &acme_registry).await?;
    ensure!(set.status == StatusCode::OK, "{set:?}");

    // Two versions published through Drover, read back by npm from the registry.
    for (version, tags) in [([1, 0, 0], r#"["web","demo"]"#), ([1, 1, 0], r#"["web"]"#)] {
        let (status, answer) = publish(&addr, "alice", "acme", hello(version), "hello/web", tags).await?;
        ensure!(status == StatusCode::OK, "{status}: {answer}");
        ensure!(answer["data"]["package"] == "@acme.mods/hello", "{answer}");
    }
    let versions = registry.npm_view(&["@acme.mods/hello", "versions"])?;
    ensure!(versions == json!(["1.0.0", "1.1.0"]), "npm view: {versions}");
    let keywords = registry.npm_view(&["@acme.mods/hello@1.0.0", "keywords"])?;
    ensure!(keywords == json!(["web", "demo"]), "npm view: {keywords}");
    // The same version again is the registry's conflict.
    let (status, answer) = publish(&addr, "alice", "acme", hello([1, 1, 0]), "hello/web", "[]").await?;
    ensure!(status == StatusCode::CONFLICT, "{status}: {answer}");

    // Listed (from any node), filtered and paged.
    let lister = PlatformClient::new(&other_node, Some(token("alice")));
    let list = |query: &'static str| {
        let lister = &lister;
        async move {
            let answer = lister
                .get(&format!("/tenant/acme/marketplace/module{query}"))
                .await?;
            ensure!(answer.status == StatusCode::OK, "{query}: {answer:?}");
            Ok::<Value, anyhow::Error>(answer.body["data"].clone())
        }
    };
    let all = list("").await?;
    ensure!(all["pagination"]["total"] == 2, "{all}");
    ensure!(
        all["items"][0]
            == json!({"name": "hello", "domain": "acme.mods", "version": "1.0.0",
                      "tags": ["web", "demo"], "artifactTypes": ["component", "service"]}),
        "{all}"
    );
    let demo = list("?tags=%5B%22demo%22%5D").await?;
    ensure!(
        demo["pagination"]["total"] == 1 && demo["items"][0]["version"] == "1.0.0",
        "{demo}"
    );
    ensure!(list("?name=ell").await?["pagination"]["total"] == 2);
    ensure!(list("?domain=else.where").await?["pagination"]["total"] == 0);
    let page = list("?limit=1&offset=1").await?;
    ensure!(
        page["pagination"] == json!({"total": 2, "offset": 1}) && page["items"][0]["version"] == "1.1.0",
        "{page}"
    );
    // Its schema.
    let schema = lister
        .get("/tenant/acme/marketplace/module/schema?domain=acme.mods&name=hello&version=1.1.0")
        .await?;
    ensure!(schema.status == StatusCode::OK, "{schema:?}");
    ensure!(
        schema.body["data"]["web"]["kind"] == "service"
            && schema.body["data"]["web"]["roles"] == json!(["frontend"])
            && schema.body["data"]["web"]["schemas"][0]["properties"]["greeting"]["type"] == "string"
            && schema.body["data"]["worker"]["kind"] == "component",
        "{schema:?}"
    );
    let missing = lister
        .get("/tenant/acme/marketplace/module/schema?domain=acme.mods&name=hello&version=9.0.0")
        .await?;
    ensure!(missing.status == StatusCode::NOT_FOUND, "{missing:?}");

    // Hostile bundles: a 4xx each, nothing published.
    let mut many: Vec<(String, Vec<u8>)> = (0..10_000).map(|i| (format!("hello/f{i}"), Vec::new())).collect();
    many.push(("hello/kmodule.json".into(), b"{}".to_vec()));
    let many_refs: Vec<(&str, Vec<u8>)> = many.iter().map(|(n, c)| (n.as_str(), c.clone())).collect();
    let cue = zip_of(&[
        ("hello/kmodule.cue", b"package kmodule\n".to_vec()),
        ("hello/kmodule.json", b"{}".to_vec()),
    ]);
    // The same name twice: the later entry (a good kmodule) would have won.
    let mut twice = module_in("hello", "acme.mods", "hello");
    twice.insert(0, ("hello/kmodule.jsoX".into(), b"{}".to_vec()));
    let twice = renamed(zip_owned(&twice), "hello/kmodule.jsoX", "hello/kmodule.json");
    let hostile: Vec<(&str, Vec<u8>, StatusCode, &str)> = vec![
        (
            "a name twice",
            twice,
            StatusCode::BAD_REQUEST,
            "hello/kmodule.json\\\" appears twice",
        ),
        (
            "module ..",
            zip_owned(&module_in("hello", "acme.mods", "..")),
            StatusCode::UNPROCESSABLE_ENTITY,
            "hello/kmodule.json: module",
        ),
        (
            "module .hidden",
            zip_owned(&module_in("hello", "acme.mods", ".hidden")),
            StatusCode::UNPROCESSABLE_ENTITY,
            "npm refuses other names",
        ),
        (
            "traversal",
            zip_of(&[("hello/../../etc/passwd", b"x".to_vec())]),
            StatusCode::BAD_REQUEST,
            "climbs out",
        ),
        (
            "symlink",
            zip_of(&[("hello/link@", b"/etc/passwd".to_vec())]),
            StatusCode::BAD_REQUEST,
            "symbolic link",
        ),
        (
            "bomb",
            zip_of(&[("hello/zeros", vec![0u8; 6 << 20])]),
            StatusCode::PAYLOAD_TOO_LARGE,
            "zip bomb",
        ),
        (
            "10,000 entries",
            zip_of(&many_refs),
            StatusCode::PAYLOAD_TOO_LARGE,
            "entries",
        ),
        (
            "CUE",
            cue,
            StatusCode::UNPROCESSABLE_ENTITY,
            "hello/kmodule.cue: is CUE",
        ),
    ];
    let rss = || -> Result<u64> {
        let pid = nodes
            .pid_of(leader)
            .ok_or_else(|| anyhow::anyhow!("no leader pid"))?;
        let statm = std::fs::read_to_string(format!("/proc/{pid}/statm"))?;
        let pages: u64 = statm.split_whitespace().nth(1).unwrap_or("0").parse()?;
        Ok(pages * 4096)
    };
    let before = rss()?;
    let mut after = Vec::new();
    // Twice: memory is bounded if the second round costs next to nothing more.
    for _ in 0..2 {
        for (case, bundle, expected, says) in &hostile {
            let (status, answer) = publish(&addr, "alice", "acme", bundle.clone(), "hello", "[]").await?;
            ensure!(status == *expected, "{case}: {status}: {answer}");
            ensure!(answer.to_string().contains(says), "{case}: {answer}");
        }
        after.push(rss()?);
    }
    // A field given twice: the later would have won.
    let form = reqwest::multipart::Form::new()
        .part(
            "bundle",
            reqwest::multipart::Part::bytes(hello([5, 0, 0])).file_name("b.zip"),
        )
        .text("bundle-target-kind", "service")
        .text("bundle-target-dir", "nowhere")
        .text("bundle-target-dir", "hello/web");
    let twice = reqwest::Client::new()
        .put(format!(
            "http://{addr}/api/1.0-beta/tenant/acme/marketplace/module"
        ))
        .bearer_auth(token("alice"))
        .multipart(form)
        .send()
        .await?;
    let (status, answer) = drover_tests::bundles::answer_of(twice).await?;
    ensure!(
        status == StatusCode::BAD_REQUEST && answer.to_string().contains("is given twice"),
        "a field twice: {status}: {answer}"
    );
    // An oversized upload, as curl sends it (`Expect: 100-continue`): refused before its body.
    let big = dir.path().join("big.zip");
    std::fs::write(&big, vec![7u8; 41 << 20])?;
    let output = std::process::Command::new("curl")
        .args(["-sS", "-o", "/dev/null", "-w", "%{http_code}", "-X", "PUT", "-H"])
        .arg(format!("Authorization: Bearer {}", token("alice")))
        .arg("-F")
        .arg(format!("bundle=@{}", big.display()))
        .args([
            "-F",
            "bundle-target-kind=service",
            "-F",
            "bundle-target-dir=hello",
        ])
        .arg(format!(
            "http://{addr}/api/1.0-beta/tenant/acme/marketplace/module"
        ))
        .output()?;
    let code = String::from_utf8_lossy(&output.stdout).to_string();
    ensure!(
        code == "413",
        "oversize: {code} {}",
        String::from_utf8_lossy(&output.stderr)
    );
    // An upload is buffered (at most 40 MiB) and a file inflated up to 8 MiB, and the allocator
    // keeps what it got; the bomb would be gigabytes inflated whole.
    println!(
        "leader RSS before the hostile bundles {} MiB, after one round {} MiB, after two {} MiB",
        before >> 20,
        after[0] >> 20,
        after[1] >> 20
    );
    ensure!(
        after[0].saturating_sub(before) < 256 << 20 && after[1].saturating_sub(after[0]) < 48 << 20,
        "the leader grew from {before} to {after:?} bytes"
    );
    let versions = registry.npm_view(&["@acme.mods/hello", "versions"])?;
    ensure!(
        versions == json!(["1.0.0", "1.1.0"]),
        "after hostile bundles: {versions}"
    );

    // Another tenant: no private module of acme's to list or describe, and not its domain.
    let taken = bob
        .patch(
            "/tenant/other",
            &json!({"registry": {"endpoint": registry.endpoint(), "domain": "acme.mods"}}),
        )
        .await?;
    ensure!(taken.status == StatusCode::CONFLICT, "{taken:?}");
    let own = json!({"registry": {"endpoint": registry.endpoint(), "domain": "other.mods",
                                  "credentials": format!("{USER}:{PASSWORD}")}});
    ensure!(bob.patch("/tenant/other", &own).await?.status == StatusCode::OK);
    let seen = bob.get("/tenant/other/marketplace/module").await?;
    ensure!(
        seen.status == StatusCode::OK && seen.body["data"]["pagination"]["total"] == 0,
        "{seen:?}"
    );
    let described = bob
        .get("/tenant/other/marketplace/module/schema?domain=acme.mods&name=hello&version=1.0.0")
        .await?;
    ensure!(described.status == StatusCode::NOT_FOUND, "{described:?}");
    let foreign = bob.get("/tenant/acme/marketplace/module").await?;
    // Not a member: the tenant is not even shown to exist.
    ensure!(foreign.status == StatusCode::NOT_FOUND, "{foreign:?}");

    // A registry written without `public` is private: bob's module is his alone.
    let (status, answer) = publish(
        &addr,
        "bob",
        "other",
        zip_owned(&module_in("greet", "other.mods", "greet")),
        "greet/web",
        "[]",
    )
    .await?;
    ensure!(status == StatusCode::OK, "{status}: {answer}");
    // A package published around Drover to bob's scope, claiming acme's domain in its
    // package.json: the scope decides, so it is no one's module.
    let forged = dir.path().join("forged");
    std::fs::create_dir_all(&forged)?;
    let manifest = json!({"name": "@other.mods/forged", "version": "1.0.0",
        "kumori": {"domain": "acme.mods", "module": "forged", "public": false, "targetKind": "service",
                   "targetDir": "forged/web",
                   "artifacts": {"web": {"kind": "service", "schemas": [], "roles": ["frontend"]}}}});
    std::fs::write(forged.join("package.json"), manifest.to_string())?;
    std::fs::write(
        forged.join("kmodule.json"),
        json!({"domain": "acme.mods", "module": "forged", "version": [1, 0, 0],
               "artifacts": {"web": "service"}})
        .to_string(),
    )?;
    registry.npm_publish(&forged)?;
    let view = registry.npm_view(&["@other.mods/forged@1.0.0", "kumori.domain"])?;
    ensure!(view == json!("acme.mods"), "npm view: {view}");
    let alices = list("").await?;
    ensure!(
        !alices.to_string().contains("greet"),
        "a registry written without public is private: {alices}"
    );
    ensure!(
        alices["pagination"]["total"] == 2 && !alices.to_string().contains("forged"),
        "a package claiming acme's domain from another scope is listed to acme: {alices}"
    );
    let bobs = bob.get("/tenant/other/marketplace/module").await?;
    ensure!(
        bobs.status == StatusCode::OK
            && bobs.body["data"]["pagination"]["total"] == 1
            && bobs.body["data"]["items"][0]["name"] == "greet",
        "{bobs:?}"
    );
    for (client, tenant) in [(&lister, "acme"), (&bob, "other")] {
        let described = client
            .get(&format!(
                "/tenant/{tenant}/marketplace/module/schema?domain=other.mods&name=forged&version=1.0.0"
            ))
            .await?;
        ensure!(
            described.status == StatusCode::NOT_FOUND,
            "{tenant}: {described:?}"
        );
    }

    // No registry, wrong credentials, a registry that is down.
    let (status, answer) = publish(&addr, "alice", "bare", hello([1, 0, 0]), "hello/web", "[]").await?;
    ensure!(
        status == StatusCode::CONFLICT && answer.to_string().contains("has no module registry"),
        "{status}: {answer}"
    );
    let wrong = json!({"registry": {"endpoint": registry.endpoint(), "domain": "acme.mods",
                                    "credentials": "ci:wrong", "public": false}});
    ensure!(alice.patch("/tenant/acme", &wrong).await?.status == StatusCode::OK);
    let (status, answer) = publish(&addr, "alice", "acme", hello([2, 0, 0]), "hello/web", "[]").await?;
    ensure!(
        status == StatusCode::BAD_GATEWAY && answer.to_string().contains("refused the tenant's credentials"),
        "{status}: {answer}"
    );
    let closed = drover_tests::agent::free_port()?;
    let down = json!({"registry": {"endpoint": format!("http://127.0.0.1:{closed}"), "domain": "acme.mods",
                                   "credentials": credentials}});
    ensure!(alice.patch("/tenant/acme", &down).await?.status == StatusCode::OK);
    let (status, answer) = publish(&addr, "alice", "acme", hello([2, 0, 0]), "hello/web", "[]").await?;
    ensure!(
        status == StatusCode::SERVICE_UNAVAILABLE
            && answer
                .to_string()
                .contains(&format!("127.0.0.1:{closed} does not answer")),
        "{status}: {answer}"
    );
    let versions = registry.npm_view(&["@acme.mods/hello", "versions"])?;
    ensure!(versions == json!(["1.0.0", "1.1.0"]), "at the end: {versions}");
    Ok(())
}
