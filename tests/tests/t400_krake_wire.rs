//! Krake 1.0.1's own API server is the reference for the wire (#33): the same requests go to
//! it (over its own etcd) and to Drover's Krake dialect, and their answers are compared
//! (`tests/compat/krake/compare_wire.py`); every difference allowed there is one documented in
//! `docs/KRAKE.md`, with its reason.

use std::time::Duration;

use anyhow::{ensure, Result};
use drover_tests::cluster::{ClusterOptions, TestCluster};
use drover_tests::krake::KrakeServer;
use drover_tests::platform::{token, OPERATOR_SUBJECT, TEST_STATIC_TOKEN};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn drover_answers_as_krakes_own_server_does() -> Result<()> {
    let krake = KrakeServer::start().await?;
    let cluster = TestCluster::start_with_options(3, ClusterOptions::with_credentials()).await?;
    cluster.leader(Duration::from_secs(15)).await?;
    let root = cluster.platform(1, Some(token(OPERATOR_SUBJECT)));
    root.register(OPERATOR_SUBJECT).await?;
    // ns1 is a tenant with an environment (an Application is a service deployed there).
    drover_tests::krake_calls::namespace_with_environment(&root, "ns1").await?;
    let said = drover_tests::krake::run(
        "compare_wire.py",
        vec![
            krake.url.clone(),
            format!("http://{}", cluster.api_addr(2)),
            TEST_STATIC_TOKEN.to_string(),
        ],
    )
    .await?;
    eprintln!("{said}");
    ensure!(said.contains("no unexplained difference"), "{said}");
    // Every step was compared: the same answers outnumber the documented differences.
    let same = said.lines().filter(|l| l.starts_with("same: ")).count();
    let documented = said
        .lines()
        .filter(|l| l.starts_with("differs as documented: "))
        .count();
    ensure!(
        same >= 50 && documented <= 10,
        "{same} same, {documented} documented:\n{said}"
    );
    cluster.shutdown().await
}
