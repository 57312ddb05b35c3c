//! The Axebow platform API against a three-node cluster: rows A1–A17 and A29–A30 of
//! `docs/seeds-leasing-axebow.md` §4.3 (those that need services wait for part 2), with calls
//! spread over the three nodes.

use std::time::Duration;

use anyhow::{ensure, Context, Result};
use drover_api::axebow::rate::RateLimit;
use drover_tests::client::Answer;
use drover_tests::cluster::{ClusterOptions, TestCluster};
use drover_tests::platform::{token, PlatformClient, OPERATOR_SUBJECT};
use reqwest::StatusCode;
use serde_json::{json, Value};

const ELECTION: Duration = Duration::from_secs(15);

async fn cluster() -> Result<TestCluster> {
    let cluster = TestCluster::start_with_options(3, ClusterOptions::with_credentials()).await?;
    cluster.leader(ELECTION).await?;
    Ok(cluster)
}

/// A3: a 2xx body has `data` and/or `events` and nothing else; events have a known level.
fn envelope(answer: &Answer) -> Result<&Value> {
    ensure!(answer.status.is_success(), "expected success, got {answer:?}");
    let object = answer.body.as_object().context("the body is not an object")?;
    ensure!(
        object.keys().all(|k| k == "data" || k == "events"),
        "unexpected keys in {}",
        answer.body
    );
    for event in object
        .get("events")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        ensure!(
            matches!(event["level"].as_str(), Some("ERROR" | "WARNING" | "INFO")),
            "{event}"
        );
    }
    Ok(&answer.body["data"])
}

/// An error answer with the status, `{code, content}` and the code.
fn error(answer: &Answer, status: StatusCode, code: &str) -> Result<()> {
    ensure!(answer.status == status, "expected {status}, got {answer:?}");
    ensure!(
        answer.body["code"] == code,
        "expected code {code}: {}",
        answer.body
    );
    ensure!(
        answer.body["content"]["message"].is_string(),
        "no message: {}",
        answer.body
    );
    Ok(())
}

#[tokio::test]
async fn users_tenants_and_roles_follow_the_seed() -> Result<()> {
    let cluster = cluster().await?;
    let anonymous = cluster.platform(1, None);
    let alice = cluster.platform(1, Some(token("alice")));
    let bob = cluster.platform(2, Some(token("bob")));
    let carol = cluster.platform(3, Some(token("carol")));
    let root = cluster.platform(3, Some(token(OPERATOR_SUBJECT)));

    // A1: platform info without credentials, with and without the prefix.
    for path in ["/platform", "//platform"] {
        let info = anonymous.get(path).await?;
        let data = envelope(&info)?;
        ensure!(
            data["apiVersions"]
                .as_array()
                .is_some_and(|v| v.contains(&json!("1.0-beta"))),
            "{data}"
        );
        ensure!(data["portRange"] == json!([30000, 32767]), "{data}");
    }
    // A2: everything else needs credentials.
    error(
        &anonymous.get("/user/info").await?,
        StatusCode::UNAUTHORIZED,
        "UNAUTHENTICATED",
    )?;
    // A valid token of an identity that has not registered yet is told to register.
    error(
        &alice.get("/user/info").await?,
        StatusCode::FORBIDDEN,
        "FORBIDDEN",
    )?;

    // A4: registration, once.
    let alice_id = alice.register("Alice").await?;
    error(
        &alice
            .post("/user", &json!({"name": "Alice", "surname": "A"}))
            .await?,
        StatusCode::CONFLICT,
        "CONFLICT",
    )?;
    let info = alice.get("/user/info").await?;
    ensure!(envelope(&info)?["tenants"] == json!({}), "{}", info.body);
    ensure!(envelope(&info)?["uid"] == json!(alice_id), "{}", info.body);
    let bob_id = bob.register("Bob").await?;
    let carol_id = carol.register("Carol").await?;

    // A6: listing users is for operators.
    error(&alice.get("/user").await?, StatusCode::FORBIDDEN, "FORBIDDEN")?;
    root.register("Root").await?;
    let users = root.get("/user").await?;
    ensure!(
        envelope(&users)?
            .as_array()
            .is_some_and(|u| u.iter().any(|u| u["uid"] == json!(alice_id))),
        "{}",
        users.body
    );

    // A7: tenants.
    envelope(&alice.post("/tenant/acme", &json!({})).await?)?;
    error(
        &bob.post("/tenant/acme", &json!({})).await?,
        StatusCode::CONFLICT,
        "CONFLICT",
    )?;
    let acme = alice.get("/tenant/acme").await?;
    ensure!(
        envelope(&acme)?["users"][&alice_id] == json!({"role": "owner", "confirmed": true}),
        "{}",
        acme.body
    );
    error(
        &alice.patch("/tenant/nope", &json!({})).await?,
        StatusCode::NOT_FOUND,
        "NOT_FOUND",
    )?;
    // No member: the same answer as for a tenant that does not exist.
    error(
        &bob.get("/tenant/acme").await?,
        StatusCode::NOT_FOUND,
        "NOT_FOUND",
    )?;

    // A8: tenant lists.
    ensure!(envelope(&alice.get("/tenant").await?)? == &json!({"acme": "owner"}));
    error(
        &alice.get("/tenant?strict=false").await?,
        StatusCode::FORBIDDEN,
        "FORBIDDEN",
    )?;
    let all = root.get("/tenant?strict=false").await?;
    ensure!(envelope(&all)?["acme"] == json!("none"), "{}", all.body);

    // A10: invitation, pending until confirmed with the invited role.
    envelope(
        &alice
            .post(&format!("/tenant/acme/user/{bob_id}?role=plain"), &json!({}))
            .await?,
    )?;
    // No member: the same answer as for a tenant that does not exist.
    error(
        &bob.get("/tenant/acme").await?,
        StatusCode::NOT_FOUND,
        "NOT_FOUND",
    )?;
    ensure!(envelope(&bob.get("/user/info").await?)?["invitations"] == json!({"acme": "plain"}));
    error(
        &bob.put("/tenant/acme/user?role=admin", &json!({})).await?,
        StatusCode::CONFLICT,
        "CONFLICT",
    )?;
    envelope(&bob.put("/tenant/acme/user?role=plain", &json!({})).await?)?;
    envelope(&bob.get("/tenant/acme").await?)?;

    // A11: role rules.
    let invite_carol = |role: &str| format!("/tenant/acme/user/{carol_id}?role={role}");
    error(
        &bob.post(&invite_carol("plain"), &json!({})).await?,
        StatusCode::FORBIDDEN,
        "FORBIDDEN",
    )?;
    envelope(
        &alice
            .put(&format!("/tenant/acme/user/{bob_id}?role=admin"), &json!({}))
            .await?,
    )?;
    error(
        &bob.post(&invite_carol("owner"), &json!({})).await?,
        StatusCode::FORBIDDEN,
        "FORBIDDEN",
    )?;
    envelope(&bob.post(&invite_carol("plain"), &json!({})).await?)?;
    envelope(&carol.put("/tenant/acme/user?role=plain", &json!({})).await?)?;
    error(
        &bob.put(&invite_carol("owner"), &json!({})).await?,
        StatusCode::FORBIDDEN,
        "FORBIDDEN",
    )?;
    error(
        &alice
            .put(&format!("/tenant/acme/user/{alice_id}?role=admin"), &json!({}))
            .await?,
        StatusCode::CONFLICT,
        "CONFLICT",
    )?;
    error(
        &alice.delete(&format!("/tenant/acme/user/{alice_id}")).await?,
        StatusCode::CONFLICT,
        "CONFLICT",
    )?;
    error(
        &bob.delete(&format!("/tenant/acme/user/{alice_id}")).await?,
        StatusCode::FORBIDDEN,
        "FORBIDDEN",
    )?;
    // Invitee rejection.
    let dave = cluster.platform(2, Some(token("dave")));
    let dave_id = dave.register("Dave").await?;
    envelope(
        &alice
            .post(&format!("/tenant/acme/user/{dave_id}?role=admin"), &json!({}))
            .await?,
    )?;
    envelope(&dave.delete("/tenant/acme/user?role=admin").await?)?;
    error(
        &dave.put("/tenant/acme/user?role=admin", &json!({})).await?,
        StatusCode::NOT_FOUND,
        "NOT_FOUND",
    )?;

    // A5: the last owner cannot delete their user.
    error(&alice.delete("/user").await?, StatusCode::CONFLICT, "CONFLICT")?;

    // A9: a tenant with a second owner cannot be deleted by one of them; then it can, and the
    // name is free again.
    envelope(
        &alice
            .put(&format!("/tenant/acme/user/{bob_id}?role=owner"), &json!({}))
            .await?,
    )?;
    error(
        &alice.delete("/tenant/acme").await?,
        StatusCode::CONFLICT,
        "CONFLICT",
    )?;
    error(
        &carol.delete("/tenant/acme").await?,
        StatusCode::FORBIDDEN,
        "FORBIDDEN",
    )?;
    envelope(
        &alice
            .put(&format!("/tenant/acme/user/{bob_id}?role=admin"), &json!({}))
            .await?,
    )?;
    envelope(&alice.delete("/tenant/acme").await?)?;
    error(
        &alice.get("/tenant/acme").await?,
        StatusCode::NOT_FOUND,
        "NOT_FOUND",
    )?;
    envelope(&carol.post("/tenant/acme", &json!({})).await?)?;
    // Once alice owns nothing alone, she may leave the platform.
    envelope(&alice.delete("/user").await?)?;
    error(
        &alice.get("/user/info").await?,
        StatusCode::FORBIDDEN,
        "FORBIDDEN",
    )?;
    cluster.shutdown().await
}

#[tokio::test]
async fn accounts_environments_and_resources_are_guarded_and_unique() -> Result<()> {
    let cluster = cluster().await?;
    let alice = cluster.platform(1, Some(token("alice")));
    let bob = cluster.platform(2, Some(token("bob")));
    let carol = cluster.platform(3, Some(token("carol")));
    alice.register("Alice").await?;
    let bob_id = bob.register("Bob").await?;
    carol.register("Carol").await?;
    envelope(&alice.post("/tenant/acme", &json!({})).await?)?;
    envelope(&carol.post("/tenant/other", &json!({})).await?)?;
    envelope(
        &alice
            .post(&format!("/tenant/acme/user/{bob_id}"), &json!({}))
            .await?,
    )?;
    envelope(&bob.put("/tenant/acme/user?role=plain", &json!({})).await?)?;

    // A12: accounts.
    let account = json!({
        "spec": {"iaas": "sim", "iaasInfo": {"apiKey": "k-123"}, "marks": {"vcpu": {"max": 8000}}},
        "meta": {"labels": {"team": "web"}},
    });
    envelope(&alice.post("/tenant/acme/account/main", &account).await?)?;
    error(
        &alice.post("/tenant/acme/account/main", &account).await?,
        StatusCode::CONFLICT,
        "CONFLICT",
    )?;
    let mut unknown = account.clone();
    unknown["spec"]["iaas"] = json!("aws");
    let refused = alice.post("/tenant/acme/account/other", &unknown).await?;
    error(&refused, StatusCode::BAD_REQUEST, "BAD_REQUEST")?;
    ensure!(
        refused.body["content"]["field"] == "spec.iaas",
        "{}",
        refused.body
    );
    let mut changed = account.clone();
    changed["meta"]["labels"]["team"] = json!("api");
    error(
        &bob.patch("/tenant/acme/account/main", &changed).await?,
        StatusCode::FORBIDDEN,
        "FORBIDDEN",
    )?;
    envelope(&alice.patch("/tenant/acme/account/main", &changed).await?)?;
    let got = alice.get("/tenant/acme/account/main").await?;
    ensure!(envelope(&got)?["meta"]["labels"]["team"] == "api", "{}", got.body);
    ensure!(
        envelope(&got)?["spec"]["iaasInfo"]["apiKey"] == "k-123",
        "{}",
        got.body
    );
    // Credentials are not shown to plain members.
    let plain_view = bob.get("/tenant/acme/account/main").await?;
    ensure!(
        envelope(&plain_view)?["spec"]["iaasInfo"].is_null(),
        "{}",
        plain_view.body
    );
    ensure!(envelope(&bob.get("/tenant/acme/account").await?)? == &json!(["main"]));
    error(
        &alice.patch("/tenant/acme/account/nope", &account).await?,
        StatusCode::NOT_FOUND,
        "NOT_FOUND",
    )?;

    // A13: environments.
    let env = json!({"marks": {"vcpu": {"max": 4000, "unit": "m"}, "memory": {"max": 2048}}, "labels": {"tier": "prod"}});
    envelope(
        &alice
            .post("/tenant/acme/account/main/environment/prod", &env)
            .await?,
    )?;
    let info = cluster
        .platform(3, Some(token("alice")))
        .get("/tenant/acme/account/main/environment/prod")
        .await?;
    let data = envelope(&info)?;
    ensure!(
        data["status"]["marks"]["vcpu"] == json!({"max": 4000, "current": 0, "unit": "m"}),
        "{data}"
    );
    ensure!(data["status"]["marks"]["cost"]["unit"] == "EUR", "{data}");
    ensure!(data["spec"]["labels"]["tier"] == "prod", "{data}");
    let bad_unit = alice
        .post(
            "/tenant/acme/account/main/environment/dev",
            &json!({"marks": {"vcpu": {"max": 1, "unit": "cores"}}}),
        )
        .await?;
    error(&bad_unit, StatusCode::BAD_REQUEST, "BAD_REQUEST")?;
    ensure!(
        bad_unit.body["content"]["field"] == "marks.vcpu.unit",
        "{}",
        bad_unit.body
    );
    envelope(
        &alice
            .patch(
                "/tenant/acme/account/main/environment/prod",
                &json!({"labels": {"tier": "gold"}}),
            )
            .await?,
    )?;
    ensure!(envelope(&alice.get("/tenant/acme/account/main/environment").await?)? == &json!(["prod"]));
    error(
        &alice.delete("/tenant/acme/account/main?delete=true").await?,
        StatusCode::CONFLICT,
        "CONFLICT",
    )?;
    envelope(&alice.delete("/tenant/acme/account/main?delete=false").await?)?;
    envelope(&alice.get("/tenant/acme/account/main").await?)?;
    envelope(&alice.delete("/tenant/acme/account/main/environment/prod").await?)?;
    envelope(&alice.delete("/tenant/acme/account/main").await?)?;
    error(
        &alice.get("/tenant/acme/account/main").await?,
        StatusCode::NOT_FOUND,
        "NOT_FOUND",
    )?;

    // A14: resources; plain members may register; secret values only for owners and admins.
    envelope(&bob.post("/tenant/acme/secret/s", &json!({"data": "x"})).await?)?;
    ensure!(envelope(&alice.get("/tenant/acme/secret/s").await?)?["spec"]["data"] == "x");
    ensure!(envelope(&bob.get("/tenant/acme/secret/s").await?)?["spec"]["data"].is_null());
    envelope(&alice.put("/tenant/acme/secret/s", &json!({"data": "y"})).await?)?;
    ensure!(envelope(&alice.get("/tenant/acme/secret/s").await?)?["spec"]["data"] == "y");
    error(
        &alice
            .put("/tenant/acme/secret/none", &json!({"data": "y"}))
            .await?,
        StatusCode::NOT_FOUND,
        "NOT_FOUND",
    )?;
    error(
        &alice.post("/tenant/acme/secret/s", &json!({"data": "z"})).await?,
        StatusCode::CONFLICT,
        "CONFLICT",
    )?;
    error(
        &alice.get("/tenant/acme/gadget/s").await?,
        StatusCode::NOT_FOUND,
        "NOT_FOUND",
    )?;
    error(
        &carol.get("/tenant/acme/secret/s").await?,
        StatusCode::NOT_FOUND,
        "NOT_FOUND",
    )?;

    // A15: ports and domains are unique across tenants; ports stay in the range.
    envelope(&alice.post("/tenant/acme/port/p", &json!({"data": 30001})).await?)?;
    error(
        &carol
            .post("/tenant/other/port/p", &json!({"data": 30001}))
            .await?,
        StatusCode::CONFLICT,
        "CONFLICT",
    )?;
    error(
        &carol.post("/tenant/other/port/q", &json!({"data": 80})).await?,
        StatusCode::BAD_REQUEST,
        "BAD_REQUEST",
    )?;
    envelope(
        &carol
            .post("/tenant/other/port/q", &json!({"data": 30002}))
            .await?,
    )?;
    envelope(
        &alice
            .post("/tenant/acme/domain/www", &json!({"data": "www.acme.example"}))
            .await?,
    )?;
    error(
        &carol
            .post("/tenant/other/domain/www", &json!({"data": "www.acme.example"}))
            .await?,
        StatusCode::CONFLICT,
        "CONFLICT",
    )?;

    // A16: listings.
    let tenant = alice.get("/tenant/acme").await?;
    ensure!(
        envelope(&tenant)?["resources"] == json!({"domain": ["www"], "port": ["p"], "secret": ["s"]}),
        "{}",
        tenant.body
    );
    let ports = alice.get("/tenant/acme/port").await?;
    ensure!(envelope(&ports)?["usedports"] == json!([30001]), "{}", ports.body);
    let secrets = alice.get("/tenant/acme/secret").await?;
    ensure!(
        envelope(&secrets)?[0]["id"]["parent"] == json!({"name": "acme", "kind": "tenant"}),
        "{}",
        secrets.body
    );

    envelope(&alice.delete("/tenant/acme/port/p").await?)?;
    error(
        &alice.get("/tenant/acme/port/p").await?,
        StatusCode::NOT_FOUND,
        "NOT_FOUND",
    )?;
    // The freed port can be registered by the other tenant.
    envelope(
        &carol
            .post("/tenant/other/port/p", &json!({"data": 30001}))
            .await?,
    )?;
    cluster.shutdown().await
}

#[tokio::test]
async fn rule_selectors_are_checked_when_set() -> Result<()> {
    let cluster = cluster().await?;
    let alice = cluster.platform(2, Some(token("alice")));
    alice.register("Alice").await?;
    // A17 (the part without services): a rule with an unknown operation is refused naming it.
    let bad = json!({"rules": {"selectEnvironmentService": [
        {"reason": "prod only", "sel": ["$.environment.labels.tier", "prod", "::equals"]}
    ]}});
    let refused = alice.post("/tenant/acme", &bad).await?;
    error(&refused, StatusCode::BAD_REQUEST, "BAD_REQUEST")?;
    ensure!(
        refused.body["content"]["field"] == "rules.selectEnvironmentService[0].sel[2]",
        "{}",
        refused.body
    );
    let unknown_root = json!({"rules": {"validateEnvironmentUser": [
        {"reason": "r", "sel": ["$.service.name", "web", "::eq"]}
    ]}});
    error(
        &alice.post("/tenant/acme", &unknown_root).await?,
        StatusCode::BAD_REQUEST,
        "BAD_REQUEST",
    )?;
    let good = json!({"rules": {"selectEnvironmentService": [
        {"reason": "prod only", "sel": ["$.environment.labels.tier", "prod", "::eq"]}
    ]}});
    envelope(&alice.post("/tenant/acme", &good).await?)?;
    let rules = alice.get("/tenant/acme").await?;
    ensure!(
        envelope(&rules)?["rules"]["selectEnvironmentService"][0]["sel"][2] == "::eq",
        "{}",
        rules.body
    );
    // A PATCH with a bad program changes nothing.
    error(
        &alice.patch("/tenant/acme", &bad).await?,
        StatusCode::BAD_REQUEST,
        "BAD_REQUEST",
    )?;
    ensure!(alice.get("/tenant/acme").await?.body == rules.body);
    cluster.shutdown().await
}

#[tokio::test]
async fn limits_versions_and_bodies_get_their_error_codes() -> Result<()> {
    let options = ClusterOptions {
        rate_limit: Some(RateLimit {
            per_second: 0.2,
            burst: 8,
        }),
        ..ClusterOptions::with_credentials()
    };
    let cluster = TestCluster::start_with_options(3, options).await?;
    cluster.leader(ELECTION).await?;
    let alice = cluster.platform(1, Some(token("alice")));
    alice.register("Alice").await?;
    envelope(&alice.post("/tenant/acme", &json!({})).await?)?;

    // 415 and 413, before any change.
    let raw = reqwest::Client::new()
        .post(format!(
            "http://{}/api/1.0-beta/tenant/acme/secret/s",
            cluster.api_addr(1)
        ))
        .bearer_auth(token("alice"))
        .header("content-type", "text/plain")
        .body("{\"data\": \"x\"}")
        .send()
        .await?;
    let status = raw.status();
    let body: Value = raw.json().await?;
    error(
        &Answer { status, body },
        StatusCode::UNSUPPORTED_MEDIA_TYPE,
        "UNSUPPORTED_MEDIA",
    )?;
    let huge = json!({"data": "x".repeat(100 * 1024)});
    error(
        &alice.post("/tenant/acme/secret/s", &huge).await?,
        StatusCode::PAYLOAD_TOO_LARGE,
        "PAYLOAD_TOO_LARGE",
    )?;
    let malformed = alice
        .post("/tenant/acme/secret/s", &json!({"data": "x", "colour": 1}))
        .await?;
    error(&malformed, StatusCode::BAD_REQUEST, "BAD_REQUEST")?;

    // A method a route does not serve.
    let wrong = alice.call(reqwest::Method::PUT, "/user/info", None).await?;
    error(&wrong, StatusCode::METHOD_NOT_ALLOWED, "METHOD_NOT_ALLOWED")?;

    // A30: another API version.
    let other = alice.get("//api/2.0/platform").await?;
    error(&other, StatusCode::NOT_FOUND, "NOT_FOUND")?;
    ensure!(
        other.body["content"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("1.0-beta")),
        "{}",
        other.body
    );

    // A29: a burst beyond the limit is refused with 429 and Retry-After; another caller is not.
    let mut limited = None;
    for _ in 0..20 {
        let answer = alice.get("/user/info").await?;
        if answer.status == StatusCode::TOO_MANY_REQUESTS {
            limited = Some(answer);
            break;
        }
    }
    let limited = limited.context("twenty requests in a burst of eight were all served")?;
    error(&limited, StatusCode::TOO_MANY_REQUESTS, "RATE_LIMITED")?;
    let bob = cluster.platform(1, Some(token("bob")));
    ensure!(
        bob.get("/user/info").await?.status == StatusCode::FORBIDDEN,
        "bob is not registered, but not limited either"
    );
    // Each node counts on its own.
    ensure!(
        cluster
            .platform(2, Some(token("alice")))
            .get("/user/info")
            .await?
            .status
            == StatusCode::OK
    );
    cluster.shutdown().await
}

#[tokio::test]
async fn the_openapi_document_describes_every_route_and_docs_are_served() -> Result<()> {
    let cluster = cluster().await?;
    let anonymous = PlatformClient::new(&cluster.api_addr(1), None);
    let spec = anonymous.get("/openapi.json").await?;
    ensure!(spec.status == StatusCode::OK, "{spec:?}");
    let paths = spec.body["paths"].as_object().context("no paths")?;
    for path in [
        "/api/1.0-beta/platform",
        "/api/1.0-beta/user",
        "/api/1.0-beta/user/info",
        "/api/1.0-beta/tenant",
        "/api/1.0-beta/tenant/{tenant}",
        "/api/1.0-beta/tenant/{tenant}/user/{user}",
        "/api/1.0-beta/tenant/{tenant}/account/{account}/environment/{environment}",
        "/api/1.0-beta/tenant/{tenant}/{kind}/{name}",
    ] {
        ensure!(paths.contains_key(path), "{path} is missing from the spec");
    }
    // Every documented operation is routed: an anonymous call gets the envelope's 401 (or 200
    // for the platform info), never a 404 or 405 from the router.
    let alice = cluster.platform(1, None);
    for (path, item) in paths {
        let concrete = path
            .replace("{tenant}", "acme")
            .replace("{account}", "main")
            .replace("{environment}", "prod")
            .replace("{kind}", "secret")
            .replace("{name}", "s")
            .replace("{user}", "u")
            .replace("{oidp}", "idp");
        let concrete = concrete.trim_start_matches("/api/1.0-beta");
        let methods = item.as_object().context("path item")?.keys();
        for method in methods.filter(|m| ["get", "post", "put", "patch", "delete"].contains(&m.as_str())) {
            let method: reqwest::Method = method.to_uppercase().parse()?;
            let answer = alice.call(method.clone(), concrete, None).await?;
            let expected = if concrete == "/platform" {
                StatusCode::OK
            } else {
                StatusCode::UNAUTHORIZED
            };
            ensure!(answer.status == expected, "{method} {concrete}: {answer:?}");
        }
    }
    let docs = reqwest::get(format!("http://{}/docs/", cluster.api_addr(2))).await?;
    ensure!(
        docs.status() == StatusCode::OK,
        "/docs/ answered {}",
        docs.status()
    );
    ensure!(
        docs.text().await?.contains("swagger"),
        "/docs/ is not the Swagger UI"
    );
    cluster.shutdown().await
}
