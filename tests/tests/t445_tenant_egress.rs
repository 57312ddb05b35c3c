//! Calls made on a tenant's behalf are fenced (#39, acceptance 5): three `drover serve`
//! processes whose egress policy allows only `127.0.0.2`. A Prometheus provider naming
//! `127.0.0.1`, a link-local address, a node's own peer port or a name that resolves to loopback
//! is refused when it is written; one on `127.0.0.2` is read (a cluster scored on it shows the
//! value); a provider there that redirects to `127.0.0.1` is not followed (the cluster's metric
//! fails, saying why). A tenant's module registry on `127.0.0.1` is refused the same way; one
//! allowed keeps its credentials unseen. Every spelling of loopback found from outside (#50,
//! point 1) is refused when written, in both dialects, and nothing reaches a listener there.

use std::time::Duration;

use anyhow::{ensure, Result};
use drover_tests::agent::AgentProcess;
use drover_tests::platform::{process_platform_args, token, PlatformClient, OPERATOR_SUBJECT};
use drover_tests::process::ProcessCluster;
use drover_tests::services::cluster_state;
use drover_tests::wait::eventually;
use reqwest::StatusCode;
use serde_json::json;
use tempfile::TempDir;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const ELECTION: Duration = Duration::from_secs(20);
const CONVERGE: Duration = Duration::from_secs(60);

/// A server on `127.0.0.2` answering every request with `answer` (status line and headers
/// included), until the test ends.
async fn serve_on_127_0_0_2(answer: String) -> Result<u16> {
    let listener = tokio::net::TcpListener::bind("127.0.0.2:0").await?;
    let port = listener.local_addr()?.port();
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            let answer = answer.clone();
            tokio::spawn(async move {
                let mut request = vec![0u8; 4096];
                let _ = stream.read(&mut request).await;
                let _ = stream.write_all(answer.as_bytes()).await;
                let _ = stream.shutdown().await;
            });
        }
    });
    Ok(port)
}

fn prometheus_answer() -> String {
    let body = r#"{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1700000000.0,"0.25"]}]}}"#;
    format!(
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tenant_calls_go_only_where_the_egress_policy_allows() -> Result<()> {
    let dir = TempDir::new()?;
    let mut args = process_platform_args(dir.path())?;
    args.retain(|a| !a.starts_with("--tenant-egress-allow"));
    args.extend([
        "--tenant-egress-allow=127.0.0.2/32".to_string(),
        "--cluster-probe-interval=200ms".to_string(),
        "--cluster-offline-after=2s".to_string(),
        "--cluster-metrics-interval=500ms".to_string(),
    ]);
    let nodes = ProcessCluster::start_with_args(3, &args)?;
    nodes.leader(ELECTION).await?;
    let root = PlatformClient::new(&nodes.api_addr(1), Some(token(OPERATOR_SUBJECT)));
    root.register(OPERATOR_SUBJECT).await?;
    let made = root.post("/tenant/acme", &json!({})).await?;
    ensure!(made.status == StatusCode::OK, "{made:?}");

    // Refused when written, each with the reason.
    let peer = nodes.peer_addr(2);
    for (url, says) in [
        ("http://127.0.0.1:9090".to_string(), "loopback"),
        (
            "http://169.254.169.254/latest/meta-data".to_string(),
            "link-local",
        ),
        (format!("http://{peer}"), "127.0.0.1"),
        ("http://localhost:9090".to_string(), "localhost resolves to"),
    ] {
        let provider = json!({"type": "prometheus", "prometheus": {"url": url}});
        let refused = root.put("/tenant/acme/metricsprovider/probe", &provider).await?;
        ensure!(refused.status.is_client_error(), "{url}: {refused:?}");
        ensure!(refused.body.to_string().contains(says), "{url}: {refused:?}");
    }
    // A module registry (the marketplace's) too; its credentials are written, never shown, and
    // kept by a PATCH without them only while the endpoint stays.
    let loopback = json!({"registry": {"endpoint": "http://127.0.0.1:4873", "domain": "acme"}});
    let refused = root.patch("/tenant/acme", &loopback).await?;
    ensure!(
        refused.status == StatusCode::BAD_REQUEST && refused.body.to_string().contains("loopback"),
        "{refused:?}"
    );
    let registry = |port: u16, credentials: Option<&str>, domain: &str| {
        let mut registry = json!({"endpoint": format!("http://127.0.0.2:{port}"), "domain": domain});
        if let Some(credentials) = credentials {
            registry["credentials"] = json!(credentials);
        }
        json!({ "registry": registry })
    };
    let shown = || async {
        let answer = root.get("/tenant/acme").await?;
        ensure!(
            !answer.body.to_string().contains("s3cret"),
            "credentials shown: {answer:?}"
        );
        Ok::<_, anyhow::Error>(answer.body["data"]["registry"].clone())
    };
    let written = root
        .patch("/tenant/acme", &registry(4873, Some("ci:s3cret"), "acme"))
        .await?;
    ensure!(written.status == StatusCode::OK, "{written:?}");
    ensure!(shown().await?["hasCredentials"] == true, "{:?}", shown().await?);
    root.patch("/tenant/acme", &registry(4873, None, "acme.mods"))
        .await?;
    let kept = shown().await?;
    ensure!(
        kept["hasCredentials"] == true && kept["domain"] == "acme.mods",
        "{kept}"
    );
    root.patch("/tenant/acme", &registry(4874, None, "acme")).await?;
    ensure!(
        shown().await?.get("hasCredentials").is_none(),
        "{:?}",
        shown().await?
    );
    let bad = root
        .patch("/tenant/acme", &registry(4873, None, "Not A Scope"))
        .await?;
    ensure!(
        bad.status == StatusCode::BAD_REQUEST && bad.body.to_string().contains("registry.domain"),
        "{bad:?}"
    );

    // However the address is spelled (#50, point 1): the URL is read as the client reads it.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let port = listener.local_addr()?.port();
    let spellings = [
        format!("http://127.0.0.1.:{port}/"),
        format!("http://0x7f.1.:{port}/"),
        "http://127.0.0.1:/".to_string(),
        "http://[::1]:/".to_string(),
        format!("http://127.0.0.%31:{port}/"),
        format!("http://\u{ff11}\u{ff12}\u{ff17}.\u{ff10}.\u{ff10}.\u{ff11}:{port}/"),
        format!("http://127.0.0.1:{port}\\@example.com/"),
        format!("http://2130706433:{port}/"),
        format!("http://[::ffff:127.0.0.1]:{port}/"),
        "http://0/".to_string(),
    ];
    for url in &spellings {
        let provider = json!({"type": "prometheus", "prometheus": {"url": url}});
        let refused = root.put("/tenant/acme/metricsprovider/probe", &provider).await?;
        ensure!(
            refused.status == StatusCode::BAD_REQUEST && refused.body.to_string().contains("prometheus.url"),
            "provider {url}: {refused:?}"
        );
        let registry = json!({"registry": {"endpoint": url, "domain": "acme", "credentials": "ci:s3cret"}});
        let refused = root.patch("/tenant/acme", &registry).await?;
        ensure!(
            refused.status == StatusCode::BAD_REQUEST
                && refused.body.to_string().contains("registry.endpoint"),
            "registry {url}: {refused:?}"
        );
        let krake = json!({"api": "core", "kind": "MetricsProvider", "metadata": {"name": "spelled"},
                           "spec": {"type": "prometheus", "prometheus": {"url": url}}});
        let (status, answer) = drover_tests::krake_calls::call(
            &nodes.api_addr(3),
            OPERATOR_SUBJECT,
            reqwest::Method::POST,
            "/core/namespaces/acme/metricsproviders",
            Some(&krake),
        )
        .await?;
        ensure!(
            status == StatusCode::UNPROCESSABLE_ENTITY,
            "Krake provider {url}: {status}: {answer}"
        );
    }
    // Nothing was called there while they were written.
    let called = tokio::time::timeout(Duration::from_millis(200), listener.accept()).await;
    ensure!(called.is_err(), "a refused spelling was called: {called:?}");

    // Through Krake's dialect too.
    let krake = json!({"api": "core", "kind": "MetricsProvider", "metadata": {"name": "probe"},
                       "spec": {"type": "prometheus", "prometheus": {"url": "http://127.0.0.1:9090"}}});
    let (status, answer) = drover_tests::krake_calls::call(
        &nodes.api_addr(2),
        OPERATOR_SUBJECT,
        reqwest::Method::POST,
        "/core/namespaces/acme/metricsproviders",
        Some(&krake),
    )
    .await?;
    ensure!(status == StatusCode::UNPROCESSABLE_ENTITY, "{status}: {answer}");

    // Allowed by the policy: read, and the cluster scored on it shows the value.
    let good = serve_on_127_0_0_2(prometheus_answer()).await?;
    let redirect = serve_on_127_0_0_2(format!(
        "HTTP/1.1 302 Found\r\nLocation: http://127.0.0.1:{good}/api/v1/query?query=up\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    ))
    .await?;
    for (name, port) in [("good", good), ("redirecting", redirect)] {
        let provider =
            json!({"type": "prometheus", "prometheus": {"url": format!("http://127.0.0.2:{port}")}});
        let stored = root
            .put(&format!("/tenant/operator/metricsprovider/{name}"), &provider)
            .await?;
        ensure!(stored.status == StatusCode::OK, "{name}: {stored:?}");
        let metric = json!({"min": 0, "max": 1, "provider": {"name": name, "metric": "up"}});
        let stored = root
            .put(&format!("/tenant/operator/metric/{name}"), &metric)
            .await?;
        ensure!(stored.status == StatusCode::OK, "{name}: {stored:?}");
    }
    let agent = AgentProcess::sim(&[])?;
    let registration = json!({"endpoint": format!("http://{}", agent.addr()), "join_token": drover_tests::agent::AGENT_TOKEN,
                              "metrics": [{"name": "good", "weight": 1.0}, {"name": "redirecting", "weight": 1.0}]});
    let made = root
        .post("/tenant/operator/cluster/scored", &registration)
        .await?;
    ensure!(made.status == StatusCode::OK, "{made:?}");
    cluster_state(&root, "scored", "FAILING_METRICS", CONVERGE).await?;
    let (value, failure) = eventually(
        CONVERGE,
        "the allowed metric read, the redirected one refused",
        || async {
            let view = root.get("/tenant/operator/cluster/scored").await.ok()?;
            let metrics = &view.body["data"]["status"]["metrics"];
            let value = metrics["values"]["good"]["value"].as_f64()?;
            let failure = metrics["failures"]["redirecting"]["message"]
                .as_str()?
                .to_string();
            Some((value, failure))
        },
    )
    .await?;
    ensure!((value - 0.25).abs() < 1e-9, "{value}");
    ensure!(
        failure.contains("redirect") && failure.contains("egress policy"),
        "{failure}"
    );
    eprintln!("t445: the redirected provider fails with: {failure}");
    Ok(())
}
