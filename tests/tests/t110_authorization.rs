//! The authorization matrix of the platform API: every endpoint of part 1 called by every kind of
//! caller — anonymous, expired token, token of an unknown issuer, the peer credential, another
//! tenant's owner, and the tenant's plain member, admin and owner, and an operator — answers
//! the status the rules give, and no cross-tenant read or write succeeds.

use std::time::Duration;

use anyhow::{ensure, Context, Result};
use drover_api::axebow::rate::RateLimit;
use drover_tests::cluster::{ClusterOptions, TestCluster};
use drover_tests::platform::{
    expired_token, foreign_token, second_token, token, PlatformClient, OPERATOR_SUBJECT, SECOND_ISSUER,
};
use drover_tests::TEST_SECRET;
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

const ELECTION: Duration = Duration::from_secs(15);

/// The caller kinds, in the order of the expectation columns.
const CALLERS: [&str; 9] = [
    "anonymous",
    "expired",
    "foreign",
    "peer",
    "other",
    "plain",
    "admin",
    "owner",
    "operator",
];

/// The first four columns: credentials that are missing or refused.
const U: u16 = 401;

struct Row {
    method: Method,
    /// `{n}` is replaced by the caller kind, so each caller acts on its own object.
    path: &'static str,
    body: Option<Value>,
    expected: [u16; 9],
}

fn row(method: Method, path: &'static str, body: Option<Value>, expected: [u16; 9]) -> Row {
    Row {
        method,
        path,
        body,
        expected,
    }
}

fn account() -> Value {
    json!({"spec": {"iaas": "sim", "iaasInfo": {"key": "secret-key"}}})
}

fn rows() -> Vec<Row> {
    use Method as M;
    // A registered user who is no member gets the 404 of a tenant that does not exist.
    let member_read = [U, U, U, U, 404, 200, 200, 200, 200];
    let admin_write = [U, U, U, U, 404, 403, 200, 200, 200];
    let member_write = member_read;
    let registered = [U, U, U, U, 200, 200, 200, 200, 200];
    let operator_only = [U, U, U, U, 403, 403, 403, 403, 200];
    vec![
        row(M::GET, "/platform", None, [200; 9]),
        row(
            M::POST,
            "/user",
            Some(json!({"name": "again", "surname": "x"})),
            [U, U, U, U, 409, 409, 409, 409, 409],
        ),
        row(M::GET, "/user/info", None, registered),
        row(M::GET, "/user", None, operator_only),
        row(M::GET, "/tenant", None, registered),
        row(M::GET, "/tenant?strict=false", None, operator_only),
        row(
            M::POST,
            "/user/provider",
            Some(json!({"jwt": token("extra")})),
            [U, U, U, U, 409, 409, 409, 409, 409],
        ),
        row(
            M::DELETE,
            "/user/provider/https%3A%2F%2Fissuer.drover.test",
            None,
            [U, U, U, U, 409, 409, 409, 409, 409],
        ),
        row(M::POST, "/tenant/t-{n}", Some(json!({})), registered),
        row(M::GET, "/tenant/acme", None, member_read),
        row(M::PATCH, "/tenant/acme", Some(json!({})), admin_write),
        // A tenant's own owner and admins may not relax its pod security: operators only.
        row(
            M::PUT,
            "/tenant/acme/podsecurity",
            Some(json!({"podSecurity": "privileged"})),
            operator_only,
        ),
        row(M::GET, "/tenant/acme/account", None, member_read),
        row(
            M::POST,
            "/tenant/acme/account/a-{n}",
            Some(account()),
            admin_write,
        ),
        row(M::GET, "/tenant/acme/account/main", None, member_read),
        row(
            M::PATCH,
            "/tenant/acme/account/main",
            Some(account()),
            admin_write,
        ),
        row(M::DELETE, "/tenant/acme/account/d-{n}", None, admin_write),
        row(M::GET, "/tenant/acme/account/main/environment", None, member_read),
        row(
            M::POST,
            "/tenant/acme/account/main/environment/e-{n}",
            Some(json!({})),
            admin_write,
        ),
        row(
            M::GET,
            "/tenant/acme/account/main/environment/prod",
            None,
            member_read,
        ),
        row(
            M::PATCH,
            "/tenant/acme/account/main/environment/prod",
            Some(json!({"labels": {}})),
            admin_write,
        ),
        row(
            M::DELETE,
            "/tenant/acme/account/main/environment/d-{n}",
            None,
            admin_write,
        ),
        row(M::GET, "/tenant/acme/secret", None, member_read),
        row(
            M::POST,
            "/tenant/acme/secret/r-{n}",
            Some(json!({"data": "x"})),
            member_write,
        ),
        row(M::GET, "/tenant/acme/secret/s", None, member_read),
        row(
            M::PUT,
            "/tenant/acme/secret/s",
            Some(json!({"data": "y"})),
            member_write,
        ),
        row(M::DELETE, "/tenant/acme/secret/d-{n}", None, member_write),
        row(
            M::POST,
            "/tenant/acme/user/{invitee}?role=plain",
            Some(json!({})),
            admin_write,
        ),
        row(
            M::PUT,
            "/tenant/acme/user/{member}?role=plain",
            Some(json!({})),
            admin_write,
        ),
        row(M::DELETE, "/tenant/acme/user/{leaver}", None, admin_write),
        // Confirming or declining needs an invitation: members have none left (409), strangers
        // never had one (404).
        row(
            M::PUT,
            "/tenant/acme/user?role=plain",
            Some(json!({})),
            [U, U, U, U, 404, 409, 409, 409, 404],
        ),
        row(
            M::DELETE,
            "/tenant/acme/user?role=plain",
            None,
            [U, U, U, U, 404, 409, 409, 409, 404],
        ),
    ]
}

struct Fixture {
    clients: Vec<PlatformClient>,
    /// Helper user ids per caller kind: (invitee, member, leaver).
    helpers: Vec<(String, String, String)>,
}

async fn ok(answer: Result<drover_tests::client::Answer>, what: &str) -> Result<()> {
    let answer = answer?;
    ensure!(answer.status == StatusCode::OK, "setup {what}: {answer:?}");
    Ok(())
}

async fn fixture(cluster: &TestCluster) -> Result<Fixture> {
    let node = |i: usize| (i % 3) as u64 + 1;
    let credential = |kind: &str| -> Option<String> {
        match kind {
            "anonymous" => None,
            "expired" => Some(expired_token("owner")),
            "foreign" => Some(foreign_token("owner")),
            "peer" => Some(TEST_SECRET.to_string()),
            "operator" => Some(token(OPERATOR_SUBJECT)),
            user => Some(token(user)),
        }
    };
    let clients: Vec<PlatformClient> = CALLERS
        .iter()
        .enumerate()
        .map(|(i, kind)| cluster.platform(node(i), credential(kind)))
        .collect();
    let by = |kind: &str| clients[CALLERS.iter().position(|k| *k == kind).unwrap_or(0)].clone();
    let (owner, other) = (by("owner"), by("other"));
    for kind in ["other", "plain", "admin", "owner", "operator"] {
        by(kind).register(kind).await?;
    }
    ok(owner.post("/tenant/acme", &json!({})).await, "acme").await?;
    ok(other.post("/tenant/other", &json!({})).await, "other").await?;
    for role in ["plain", "admin"] {
        let uid = by(role).get("/user/info").await?.body["data"]["uid"]
            .as_str()
            .context("uid")?
            .to_string();
        ok(
            owner
                .post(&format!("/tenant/acme/user/{uid}?role={role}"), &json!({}))
                .await,
            "invite",
        )
        .await?;
        ok(
            by(role)
                .put(&format!("/tenant/acme/user?role={role}"), &json!({}))
                .await,
            "confirm",
        )
        .await?;
    }
    ok(
        owner.post("/tenant/acme/account/main", &account()).await,
        "account",
    )
    .await?;
    ok(
        owner
            .post("/tenant/acme/account/main/environment/prod", &json!({}))
            .await,
        "env",
    )
    .await?;
    ok(
        owner.post("/tenant/acme/secret/s", &json!({"data": "x"})).await,
        "secret",
    )
    .await?;
    let mut helpers = Vec::new();
    for (i, kind) in CALLERS.iter().enumerate() {
        ok(
            owner
                .post(&format!("/tenant/acme/account/d-{kind}"), &account())
                .await,
            "account",
        )
        .await?;
        ok(
            owner
                .post(
                    &format!("/tenant/acme/account/main/environment/d-{kind}"),
                    &json!({}),
                )
                .await,
            "env",
        )
        .await?;
        ok(
            owner
                .post(&format!("/tenant/acme/secret/d-{kind}"), &json!({"data": "x"}))
                .await,
            "secret",
        )
        .await?;
        let mut ids = Vec::new();
        for prefix in ["i", "m", "r"] {
            let helper = cluster.platform(node(i), Some(token(&format!("{prefix}-{kind}"))));
            let uid = helper.register(&format!("{prefix}-{kind}")).await?;
            if prefix != "i" {
                ok(
                    owner
                        .post(&format!("/tenant/acme/user/{uid}?role=plain"), &json!({}))
                        .await,
                    "invite",
                )
                .await?;
                ok(
                    helper.put("/tenant/acme/user?role=plain", &json!({})).await,
                    "confirm",
                )
                .await?;
            }
            ids.push(uid);
        }
        helpers.push((ids[0].clone(), ids[1].clone(), ids[2].clone()));
    }
    Ok(Fixture { clients, helpers })
}

#[tokio::test]
async fn every_caller_gets_the_status_the_rules_give() -> Result<()> {
    let options = ClusterOptions {
        rate_limit: Some(RateLimit {
            per_second: 1000.0,
            burst: 1000,
        }),
        ..ClusterOptions::with_credentials()
    };
    let cluster = TestCluster::start_with_options(3, options).await?;
    cluster.leader(ELECTION).await?;
    let fixture = fixture(&cluster).await?;
    let mut mismatches = Vec::new();
    for row in rows() {
        for (i, kind) in CALLERS.iter().enumerate() {
            let (invitee, member, leaver) = &fixture.helpers[i];
            let path = row
                .path
                .replace("{n}", kind)
                .replace("{invitee}", invitee)
                .replace("{member}", member)
                .replace("{leaver}", leaver);
            let answer = fixture.clients[i]
                .call(row.method.clone(), &path, row.body.as_ref())
                .await?;
            if answer.status.as_u16() != row.expected[i] {
                mismatches.push(format!(
                    "{} {path} as {kind}: expected {}, got {} {}",
                    row.method, row.expected[i], answer.status, answer.body
                ));
            }
            if !answer.status.is_success() {
                ensure!(
                    answer.body["code"].is_string(),
                    "{} {path} as {kind}: no error code",
                    row.method
                );
            }
        }
    }
    ensure!(
        mismatches.is_empty(),
        "{} mismatches:\n{}",
        mismatches.len(),
        mismatches.join("\n")
    );

    // Nothing the refused callers asked for exists, and what they were refused to delete stays.
    let owner = &fixture.clients[7];
    let info = owner.get("/tenant/acme").await?.body;
    let accounts = info["data"]["accounts"].as_object().context("accounts")?;
    let secrets: Vec<&str> = info["data"]["resources"]["secret"]
        .as_array()
        .context("secrets")?
        .iter()
        .filter_map(Value::as_str)
        .collect();
    // Accounts need admin: refused up to the plain member. Resources need membership.
    for refused in &CALLERS[..6] {
        ensure!(
            !accounts.contains_key(&format!("a-{refused}")),
            "{refused} created an account"
        );
        ensure!(
            accounts.contains_key(&format!("d-{refused}")),
            "{refused} deleted an account"
        );
    }
    for refused in &CALLERS[..5] {
        ensure!(
            !secrets.contains(&format!("r-{refused}").as_str()),
            "{refused} created a secret"
        );
        ensure!(
            secrets.contains(&format!("d-{refused}").as_str()),
            "{refused} deleted a secret"
        );
    }
    ensure!(
        info["data"]["podSecurity"] == "privileged",
        "the operator relaxed acme's pod security: {info}"
    );
    let environments = info["data"]["accounts"]["main"]["environments"]
        .as_object()
        .context("envs")?;
    ensure!(!environments.contains_key("e-other") && environments.contains_key("d-other"));
    // The other tenant's owner reads nothing of acme, and acme's members nothing of "other".
    ensure!(fixture.clients[4].get("/tenant/acme/secret/s").await?.status == StatusCode::NOT_FOUND);
    ensure!(fixture.clients[7].get("/tenant/other").await?.status == StatusCode::NOT_FOUND);

    // Deleting the tenant: refused to all but its sole owner and operators.
    let expected = [U, U, U, U, 404, 403, 403];
    for (i, status) in expected.iter().enumerate() {
        let answer = fixture.clients[i].delete("/tenant/acme").await?;
        ensure!(
            answer.status.as_u16() == *status,
            "DELETE /tenant/acme as {}: {answer:?}",
            CALLERS[i]
        );
    }
    ensure!(
        fixture.clients[8].delete("/tenant/other").await?.status == StatusCode::OK,
        "operators delete any tenant"
    );
    ensure!(
        owner.delete("/tenant/acme").await?.status == StatusCode::OK,
        "the sole owner deletes its tenant"
    );
    // Removing a user: refused without credentials and while the user solely owns a tenant
    // (the plain member made "t-plain" above), done for the user itself after that.
    ensure!(fixture.clients[0].delete("/user").await?.status == StatusCode::UNAUTHORIZED);
    ensure!(fixture.clients[5].delete("/user").await?.status == StatusCode::CONFLICT);
    ensure!(fixture.clients[5].delete("/tenant/t-plain").await?.status == StatusCode::OK);
    ensure!(fixture.clients[5].delete("/user").await?.status == StatusCode::OK);
    ensure!(fixture.clients[5].get("/user/info").await?.status == StatusCode::FORBIDDEN);
    cluster.shutdown().await
}

#[tokio::test]
async fn a_user_adds_and_removes_a_second_identity_profile() -> Result<()> {
    let cluster = TestCluster::start_with_options(3, ClusterOptions::with_credentials()).await?;
    cluster.leader(Duration::from_secs(15)).await?;
    let alice = PlatformClient::new(&cluster.api_addr(1), Some(token("alice")));
    let uid = alice.register("Alice").await?;
    let elsewhere = PlatformClient::new(&cluster.api_addr(2), Some(second_token("alice-at-second")));
    ensure!(
        elsewhere.get("/user/info").await?.status == StatusCode::FORBIDDEN,
        "not registered yet"
    );
    let added = alice
        .post("/user/provider", &json!({"jwt": second_token("alice-at-second")}))
        .await?;
    ensure!(added.status == StatusCode::OK, "{added:?}");
    let info = elsewhere.get("/user/info").await?;
    ensure!(
        info.status == StatusCode::OK && info.body["data"]["uid"] == uid.as_str(),
        "the second identity is alice: {info:?}"
    );
    // A token that does not verify is refused and adds nothing.
    let forged = alice
        .post("/user/provider", &json!({"jwt": foreign_token("x")}))
        .await?;
    ensure!(forged.status == StatusCode::BAD_REQUEST, "{forged:?}");
    let issuer = SECOND_ISSUER.replace(':', "%3A").replace('/', "%2F");
    let removed = alice.delete(&format!("/user/provider/{issuer}")).await?;
    ensure!(removed.status == StatusCode::OK, "{removed:?}");
    ensure!(
        elsewhere.get("/user/info").await?.status == StatusCode::FORBIDDEN,
        "the profile is gone"
    );
    cluster.shutdown().await
}
