//! The rolling restart of `deploy/README.md`, on three `drover serve` processes under a steady
//! write load: each node in turn gets SIGTERM, is started again, and the next waits until its
//! `/readyz` answers 200. Eight writers create Kubernetes leases round-robin over the nodes with
//! a 200 ms request timeout. Every acknowledged write is there at the end, and the longest time
//! without an acknowledged write is printed and stays within a bound of a few failovers (5 s;
//! an election here takes well under a second).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{ensure, Result};
use drover_tests::client::LeaseClient;
use drover_tests::process::ProcessCluster;
use drover_tests::wait::eventually;

const WRITERS: usize = 8;
const NAMESPACE: &str = "rolling";

async fn ready(nodes: &ProcessCluster, id: u64) -> Result<()> {
    let http = reqwest::Client::builder().no_proxy().build()?;
    let url = format!("http://{}/readyz", nodes.api_addr(id));
    eventually(
        Duration::from_secs(30),
        &format!("node {id}'s /readyz"),
        || async {
            let status = http.get(&url).send().await.ok()?.status();
            (status == 200).then_some(())
        },
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_rolling_restart_under_writes_loses_nothing_acknowledged() -> Result<()> {
    let mut nodes = ProcessCluster::start(3)?;
    nodes.leader(Duration::from_secs(20)).await?;
    let clients: Vec<LeaseClient> = (1..=3).map(|id| LeaseClient::new(&nodes.api_addr(id))).collect();
    let acknowledged: Arc<Mutex<Vec<(String, Instant)>>> = Arc::default();
    let stop = Arc::new(AtomicBool::new(false));
    let mut writers = Vec::new();
    for writer in 0..WRITERS {
        let (clients, acknowledged, stop) = (clients.clone(), acknowledged.clone(), stop.clone());
        writers.push(tokio::spawn(async move {
            let mut turn = writer;
            let mut sequence = 0u64;
            while !stop.load(Ordering::Relaxed) {
                let name = format!("w{writer}-{sequence}");
                turn += 1;
                let client = &clients[turn % clients.len()];
                let call = client.create(NAMESPACE, &name, "writer");
                match tokio::time::timeout(Duration::from_millis(200), call).await {
                    Ok(Ok(answer)) if answer.status == 201 => {
                        acknowledged
                            .lock()
                            .map_err(|_| anyhow::anyhow!("poisoned"))?
                            .push((name, Instant::now()));
                        sequence += 1;
                    }
                    // Already there: an earlier try whose answer was lost committed it.
                    Ok(Ok(answer)) if answer.status == 409 => sequence += 1,
                    _ => tokio::time::sleep(Duration::from_millis(20)).await,
                }
            }
            Ok::<_, anyhow::Error>(())
        }));
    }
    let started = Instant::now();
    eventually(
        Duration::from_secs(10),
        "the first acknowledged writes",
        || async { (acknowledged.lock().ok()?.len() >= 20).then_some(()) },
    )
    .await?;
    for id in 1..=3 {
        let before = nodes.pid_of(id);
        nodes.terminate(id)?;
        nodes.restart(id)?;
        ensure!(nodes.pid_of(id) != before, "node {id} is another process");
        ready(&nodes, id).await?;
    }
    // A little more load after the last restart, then stop.
    let count = acknowledged
        .lock()
        .map_err(|_| anyhow::anyhow!("poisoned"))?
        .len();
    eventually(
        Duration::from_secs(10),
        "writes after the last restart",
        || async { (acknowledged.lock().ok()?.len() >= count + 20).then_some(()) },
    )
    .await?;
    stop.store(true, Ordering::Relaxed);
    for writer in writers {
        writer.await??;
    }
    let mut acknowledged = acknowledged
        .lock()
        .map_err(|_| anyhow::anyhow!("poisoned"))?
        .clone();
    acknowledged.sort_by_key(|(_, at)| *at);
    let mut longest = Duration::ZERO;
    let mut previous = started;
    for (_, at) in &acknowledged {
        longest = longest.max(at.duration_since(previous));
        previous = *at;
    }
    println!(
        "rolling restart: {} writes acknowledged over {:.1} s; longest time without one {:.0} ms",
        acknowledged.len(),
        started.elapsed().as_secs_f64(),
        longest.as_secs_f64() * 1000.0
    );
    ensure!(longest < Duration::from_secs(5), "writes stopped for {longest:?}");

    // Every acknowledged write is there, read linearizably from a node.
    let leader = nodes.leader(Duration::from_secs(20)).await?;
    let client = LeaseClient::new(&nodes.api_addr(leader));
    for (name, _) in &acknowledged {
        let answer = client.get(NAMESPACE, name, "").await?;
        ensure!(
            answer.status == 200,
            "acknowledged write {name} is missing: {answer:?}"
        );
    }
    Ok(())
}
