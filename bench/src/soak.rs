//! `drover-bench soak`: repeats the hardening issue's exhaustion findings against a three-node
//! cluster for a while and prints every node's resident memory each minute, so that a reader can
//! see it stay bounded. Not part of the test command; figures are printed, never asserted.
//!
//! At once, until the time is up:
//! - finding 5: a lease replaced with a 200 KB `holderIdentity` (and a 0.9 MB one, refused) under a
//!   fresh `Idempotency-Key` each time, while four watchers from `resourceVersion=1` never read;
//! - finding 6: unauthenticated 1 MiB `POST /lease` bodies, and sockets that send half a request's
//!   headers or nothing at all;
//! - finding 8: Boskos acquires from a new state name each time, and releases into a new
//!   destination each time.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Result;
use clap::Args;
use reqwest::Client;
use serde_json::json;
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;

use crate::drover::{DroverCluster, POOL_TYPE};

/// `drover-bench soak` flags.
#[derive(Debug, Args)]
pub struct SoakArgs {
    /// How long to run, in minutes.
    #[arg(long, default_value_t = 5)]
    minutes: u64,
    /// Sockets kept open with half-sent headers, and as many idle ones, per node.
    #[arg(long, default_value_t = 300)]
    sockets: usize,
}

#[derive(Default)]
struct Counts {
    replaced: AtomicU64,
    refused_large: AtomicU64,
    watches_opened: AtomicU64,
    watches_cut: AtomicU64,
    unauthenticated: AtomicU64,
    sockets_opened: AtomicU64,
    sockets_closed_by_server: AtomicU64,
    acquires: AtomicU64,
    releases: AtomicU64,
}

fn leases(node: &str) -> String {
    format!("http://{node}/apis/coordination.k8s.io/v1/namespaces/soak/leases")
}

async fn replacer(http: Client, node: String, counts: Arc<Counts>, until: Instant) {
    let mut turn = 0u64;
    while Instant::now() < until {
        turn += 1;
        // Every eighth write is over the object limit and must be refused.
        let holder = if turn.is_multiple_of(8) {
            "h".repeat(900_000)
        } else {
            format!("{turn}-{}", "h".repeat(200_000))
        };
        let body = json!({"metadata": {"name": "big"}, "spec": {"holderIdentity": holder}});
        let sent = http
            .put(format!("{}/big", leases(&node)))
            .header("Idempotency-Key", format!("soak-{turn}"))
            .json(&body)
            .send()
            .await;
        match sent.map(|r| r.status().as_u16()) {
            Ok(200) => counts.replaced.fetch_add(1, Ordering::Relaxed),
            Ok(422) => counts.refused_large.fetch_add(1, Ordering::Relaxed),
            _ => 0,
        };
    }
}

async fn silent_watcher(http: Client, node: String, counts: Arc<Counts>, until: Instant) {
    while Instant::now() < until {
        let url = format!("{}?watch=true&resourceVersion=1", leases(&node));
        let Ok(mut response) = http.get(url).send().await else {
            continue;
        };
        counts.watches_opened.fetch_add(1, Ordering::Relaxed);
        // Read nothing for a minute (or until time is up), then see whether the server cut the
        // stream: a silent watcher must not make the node buffer without bound.
        let hold = Duration::from_secs(60).min(until.saturating_duration_since(Instant::now()));
        tokio::time::sleep(hold).await;
        let cut = tokio::time::timeout(Duration::from_secs(5), async {
            loop {
                match response.chunk().await {
                    Ok(Some(_)) => continue,
                    _ => return true,
                }
            }
        })
        .await
        .unwrap_or(false);
        if cut {
            counts.watches_cut.fetch_add(1, Ordering::Relaxed);
        }
    }
}

async fn unauthenticated(http: Client, node: String, counts: Arc<Counts>, until: Instant) {
    let body = vec![b'x'; 1024 * 1024];
    while Instant::now() < until {
        let sent = http
            .post(format!("http://{node}/lease"))
            .header("Authorization", "wrong-token")
            .body(body.clone())
            .send()
            .await;
        if sent.is_ok() {
            counts.unauthenticated.fetch_add(1, Ordering::Relaxed);
        }
    }
}

async fn stale_sockets(node: String, half_sent: bool, sockets: usize, counts: Arc<Counts>, until: Instant) {
    let mut open: Vec<TcpStream> = Vec::new();
    while Instant::now() < until {
        // Replace the sockets the server closed (end of stream, or an error answer).
        let before = open.len();
        open.retain(|socket| matches!(socket.try_read(&mut [0u8; 64]), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock));
        counts
            .sockets_closed_by_server
            .fetch_add((before - open.len()) as u64, Ordering::Relaxed);
        while open.len() < sockets {
            let Ok(mut socket) = TcpStream::connect(&node).await else {
                break;
            };
            if half_sent {
                let _ = socket
                    .write_all(b"GET /healthz HTTP/1.1\r\nHost: soak\r\nX-Half: ")
                    .await;
            }
            counts.sockets_opened.fetch_add(1, Ordering::Relaxed);
            open.push(socket);
        }
        tokio::time::sleep(Duration::from_secs(5)).await;
    }
}

async fn boskos_words(http: Client, node: String, counts: Arc<Counts>, until: Instant) {
    let owner = format!("soak-{node}");
    let mut turn = 0u64;
    while Instant::now() < until {
        turn += 1;
        let post = |path: String| http.post(format!("http://{node}{path}")).send();
        // A state nobody has: 404, and no queue may stay behind.
        let _ = post(format!(
            "/acquire?type={POOL_TYPE}&state=nowhere-{turn}&dest=busy&owner={owner}"
        ))
        .await;
        counts.acquires.fetch_add(1, Ordering::Relaxed);
        let Ok(held) = post(format!(
            "/acquire?type={POOL_TYPE}&state=free&dest=busy&owner={owner}"
        ))
        .await
        else {
            continue;
        };
        let Ok(resource) = held.json::<serde_json::Value>().await else {
            continue;
        };
        let Some(name) = resource["name"].as_str().map(str::to_string) else {
            continue;
        };
        // Into a new destination each time, then back to free.
        let _ = post(format!("/release?name={name}&dest=place-{turn}&owner={owner}")).await;
        let _ = post(format!(
            "/acquirebystate?state=place-{turn}&dest=busy&owner={owner}&names={name}"
        ))
        .await;
        let _ = post(format!("/release?name={name}&dest=free&owner={owner}")).await;
        counts.releases.fetch_add(2, Ordering::Relaxed);
    }
}

/// Runs the soak and prints the figures.
pub async fn run(args: SoakArgs) -> Result<()> {
    let cluster = DroverCluster::start(8, &[]).await?;
    let http = Client::builder().timeout(Duration::from_secs(30)).build()?;
    let node = cluster.nodes[0].clone();
    let created = http
        .post(leases(&node))
        .json(&json!({"metadata": {"name": "big"}, "spec": {"holderIdentity": "start"}}))
        .send()
        .await?;
    anyhow::ensure!(
        created.status().is_success(),
        "creating the soak lease: {}",
        created.status()
    );
    let started = Instant::now();
    let until = started + Duration::from_secs(args.minutes * 60);
    let counts = Arc::new(Counts::default());
    let mut tasks = Vec::new();
    for (i, node) in cluster.nodes.iter().enumerate() {
        tasks.push(tokio::spawn(replacer(
            http.clone(),
            node.clone(),
            counts.clone(),
            until,
        )));
        tasks.push(tokio::spawn(unauthenticated(
            http.clone(),
            node.clone(),
            counts.clone(),
            until,
        )));
        tasks.push(tokio::spawn(boskos_words(
            http.clone(),
            node.clone(),
            counts.clone(),
            until,
        )));
        for half_sent in [true, false] {
            tasks.push(tokio::spawn(stale_sockets(
                node.clone(),
                half_sent,
                args.sockets,
                counts.clone(),
                until,
            )));
        }
        if i == 0 {
            for _ in 0..4 {
                let watcher = Client::builder().build()?;
                tasks.push(tokio::spawn(silent_watcher(
                    watcher,
                    node.clone(),
                    counts.clone(),
                    until,
                )));
            }
        }
    }
    let print = |minute: u64| {
        let rss: Vec<String> = cluster
            .rss_kib()
            .iter()
            .map(|kib| format!("{} MiB", kib / 1024))
            .collect();
        println!(
            "minute {minute}: RSS per node [{}]; replaced {} (refused as too large {}), silent watches opened {} (cut by the server {}), unauthenticated 1 MiB posts {}, stale sockets opened {} (closed by the server {}), acquires from new states {}, releases {}",
            rss.join(", "),
            counts.replaced.load(Ordering::Relaxed),
            counts.refused_large.load(Ordering::Relaxed),
            counts.watches_opened.load(Ordering::Relaxed),
            counts.watches_cut.load(Ordering::Relaxed),
            counts.unauthenticated.load(Ordering::Relaxed),
            counts.sockets_opened.load(Ordering::Relaxed),
            counts.sockets_closed_by_server.load(Ordering::Relaxed),
            counts.acquires.load(Ordering::Relaxed),
            counts.releases.load(Ordering::Relaxed),
        );
    };
    print(0);
    for minute in 1..=args.minutes {
        tokio::time::sleep_until((started + Duration::from_secs(minute * 60)).into()).await;
        print(minute);
    }
    for task in tasks {
        task.abort();
    }
    let metrics = http
        .get(format!("http://{node}/metrics"))
        .send()
        .await?
        .text()
        .await?;
    println!("/metrics of node 1 after the soak: {} bytes", metrics.len());
    Ok(())
}
