//! Agents over TLS (#39, acceptance 1): three `drover serve` processes that do not allow
//! plain-HTTP agents, and `drover agent`s serving HTTPS with certificates of a test CA. The
//! control plane drives an agent registered with that CA (a pinned set runs, `/proc` shows it);
//! an agent presenting a certificate of another CA is never `ONLINE` and its cluster says why; a
//! plain-HTTP endpoint is refused at registration; a join token rotated (new token in the
//! agent's file, then on the cluster, then the old one removed) keeps every instance running
//! (the same pids) and the old token gets `401` afterwards.

use std::collections::BTreeSet;
use std::path::Path;
use std::time::Duration;

use anyhow::{ensure, Context, Result};
use drover_tests::agent::{processes_under, AgentProcess, AGENT_TOKEN};
use drover_tests::platform::{process_platform_args, token, PlatformClient, OPERATOR_SUBJECT};
use drover_tests::process::ProcessCluster;
use drover_tests::services::cluster_state;
use drover_tests::tls::Authority;
use drover_tests::wait::eventually;
use reqwest::StatusCode;
use serde_json::{json, Value};
use tempfile::TempDir;

const ELECTION: Duration = Duration::from_secs(20);
const CONVERGE: Duration = Duration::from_secs(60);
const NEW_TOKEN: &str = "rotated-join-token-0123456789";

fn agent_flags(certs: &Path, name: &str) -> Vec<String> {
    vec![
        format!("--tls-cert-file={}", certs.join(format!("{name}.pem")).display()),
        format!(
            "--tls-key-file={}",
            certs.join(format!("{name}-key.pem")).display()
        ),
    ]
}

/// A client that trusts only `ca` (PEM), for calling an agent directly.
fn client_trusting(ca: &str) -> Result<reqwest::Client> {
    Ok(reqwest::Client::builder()
        .tls_built_in_root_certs(false)
        .add_root_certificate(reqwest::Certificate::from_pem(ca.as_bytes())?)
        .timeout(Duration::from_secs(5))
        .build()?)
}

fn write_tokens(agent: &AgentProcess, tokens: &[&str]) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let path = agent.token_file();
    std::fs::write(&path, tokens.join("\n") + "\n")?;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600))?;
    Ok(())
}

async fn facts_status(http: &reqwest::Client, agent: &AgentProcess, token: &str) -> Option<StatusCode> {
    let answer = http
        .get(format!("https://{}/v1/facts", agent.addr()))
        .bearer_auth(token)
        .send()
        .await
        .ok()?;
    Some(answer.status())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn agents_are_reached_over_tls_and_their_tokens_rotate_without_stopping_instances() -> Result<()> {
    let dir = TempDir::new()?;
    let certs = dir.path();
    let ca = Authority::new("drover agents")?;
    let server = vec![rcgen::ExtendedKeyUsagePurpose::ServerAuth];
    ca.issue(certs, "agent", &["127.0.0.1"], &[], server.clone())?;
    let another = Authority::new("someone else")?;
    another.issue(certs, "impostor", &["127.0.0.1"], &[], server)?;
    let ca_pem = ca.cert.pem();

    // Nodes that do not allow plain-HTTP agents.
    let mut args = process_platform_args(dir.path())?;
    args.retain(|a| a != "--allow-plain-http-agents");
    args.extend([
        "--cluster-probe-interval=200ms".to_string(),
        "--cluster-offline-after=2s".to_string(),
    ]);
    let nodes = ProcessCluster::start_with_args(3, &args)?;
    nodes.leader(ELECTION).await?;
    let root = PlatformClient::new(&nodes.api_addr(1), Some(token(OPERATOR_SUBJECT)));
    root.register(OPERATOR_SUBJECT).await?;

    // Registered with its CA, the agent is driven over TLS.
    let agent_args = agent_flags(certs, "agent");
    let agent = AgentProcess::exec(&agent_args.iter().map(String::as_str).collect::<Vec<_>>())?;
    let registration =
        json!({"endpoint": format!("https://{}", agent.addr()), "join_token": AGENT_TOKEN, "ca": ca_pem});
    let made = root
        .post("/tenant/operator/cluster/secure", &registration)
        .await?;
    ensure!(made.status == StatusCode::OK, "{made:?}");
    cluster_state(&root, "secure", "ONLINE", CONVERGE).await?;
    let view = root.get("/tenant/operator/cluster/secure").await?;
    ensure!(view.body["data"]["transport"] == "tls", "{view:?}");
    let since = view.body["data"]["status"]["since_ms"]
        .as_u64()
        .context("since_ms")?;
    let set = json!({"count": 2, "exec": {"argv": ["sleep", "600"]}, "resources": {"cpu_millis": 10, "memory_mib": 8}});
    let pinned = root
        .put("/tenant/operator/cluster/secure/set/sleepers", &set)
        .await?;
    ensure!(pinned.status == StatusCode::OK, "{pinned:?}");
    let running = |agent: &AgentProcess| -> BTreeSet<u32> {
        processes_under(&agent.instances_dir())
            .into_values()
            .flatten()
            .collect()
    };
    let before = eventually(CONVERGE, "two instances over TLS", || async {
        let pids = running(&agent);
        (pids.len() == 2).then_some(pids)
    })
    .await?;

    // An agent whose certificate another CA signed is refused: never ONLINE, and its status
    // says why.
    let impostor_args = agent_flags(certs, "impostor");
    let impostor = AgentProcess::sim(&impostor_args.iter().map(String::as_str).collect::<Vec<_>>())?;
    let registration =
        json!({"endpoint": format!("https://{}", impostor.addr()), "join_token": AGENT_TOKEN, "ca": ca_pem});
    let made = root
        .post("/tenant/operator/cluster/impostor", &registration)
        .await?;
    ensure!(made.status == StatusCode::OK, "{made:?}");
    let reason = eventually(CONVERGE, "the impostor's cluster to say why", || async {
        let view = root.get("/tenant/operator/cluster/impostor").await.ok()?;
        let status = &view.body["data"]["status"];
        let state = status["state"].as_str()?;
        let reason = status["reason"].as_str()?.to_string();
        (["OFFLINE", "DEGRADED", "UNHEALTHY"].contains(&state)
            && reason.to_lowercase().contains("certificate"))
        .then_some(reason)
    })
    .await?;
    eprintln!("t435: the impostor's cluster says: {reason}");

    // Plain HTTP is refused unless the nodes allow it.
    let plain = AgentProcess::sim(&[])?;
    let registration = json!({"endpoint": format!("http://{}", plain.addr()), "join_token": AGENT_TOKEN});
    let refused = root.post("/tenant/operator/cluster/plain", &registration).await?;
    ensure!(
        refused.status == StatusCode::BAD_REQUEST || refused.status == StatusCode::UNPROCESSABLE_ENTITY,
        "{refused:?}"
    );
    ensure!(
        refused.body.to_string().contains("--allow-plain-http-agents"),
        "{refused:?}"
    );
    // An https endpoint without its CA is refused too.
    let registration = json!({"endpoint": format!("https://{}", plain.addr()), "join_token": AGENT_TOKEN});
    let refused = root.post("/tenant/operator/cluster/no-ca", &registration).await?;
    ensure!(refused.status.is_client_error(), "{refused:?}");

    // Token rotation: the new token in the agent's file (beside the old), on the cluster, then
    // the old one removed. Nothing restarts; the old token is refused after.
    let http = client_trusting(&ca_pem)?;
    write_tokens(&agent, &[AGENT_TOKEN, NEW_TOKEN])?;
    eventually(CONVERGE, "the agent to take the new token", || async {
        (facts_status(&http, &agent, NEW_TOKEN).await == Some(StatusCode::OK)).then_some(())
    })
    .await?;
    let patched = root
        .patch(
            "/tenant/operator/cluster/secure",
            &json!({"join_token": NEW_TOKEN}),
        )
        .await?;
    ensure!(patched.status == StatusCode::OK, "{patched:?}");
    write_tokens(&agent, &[NEW_TOKEN])?;
    eventually(CONVERGE, "the old token to be refused", || async {
        (facts_status(&http, &agent, AGENT_TOKEN).await == Some(StatusCode::UNAUTHORIZED)).then_some(())
    })
    .await?;
    // The control plane still drives it (a probe after the rotation succeeds) and the
    // instances are the same processes.
    let scaled = json!({"count": 3, "exec": {"argv": ["sleep", "600"]}, "resources": {"cpu_millis": 10, "memory_mib": 8}});
    let pinned = root
        .put("/tenant/operator/cluster/secure/set/sleepers", &scaled)
        .await?;
    ensure!(pinned.status == StatusCode::OK, "{pinned:?}");
    let after = eventually(CONVERGE, "a third instance, sent with the new token", || async {
        let pids = running(&agent);
        (pids.len() == 3).then_some(pids)
    })
    .await?;
    ensure!(
        before.is_subset(&after),
        "an instance restarted: {before:?} then {after:?}"
    );
    let view: Value = root.get("/tenant/operator/cluster/secure").await?.body;
    ensure!(view["data"]["status"]["state"] == "ONLINE", "{view}");
    ensure!(
        view["data"]["status"]["since_ms"].as_u64() == Some(since),
        "it left ONLINE during the rotation: {view}"
    );
    Ok(())
}
