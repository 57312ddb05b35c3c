//! Drover's side of the benchmarks: a three-node cluster of `drover` processes with the
//! binary's default timings, and one worker type per workload, all over HTTP/JSON.

use std::time::Duration;

use anyhow::{bail, Context, Result};
use drover_tests::boskos::static_pool_yaml;
use drover_tests::process::ProcessCluster;
use reqwest::{Client, StatusCode, Url};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::driver::{parsed_url, timed, StepFuture, Worker};

/// Namespace of the benchmark's lease objects.
const NAMESPACE: &str = "bench";
/// The Boskos pool type of the leasing workload.
pub const POOL_TYPE: &str = "bench";

/// A running cluster and its API addresses.
pub struct DroverCluster {
    /// The processes.
    pub processes: ProcessCluster,
    /// API addresses, node 1 first.
    pub nodes: Vec<String>,
    /// Held for its `Drop`: the pools file.
    _pools: tempfile::NamedTempFile,
}

impl DroverCluster {
    /// Starts three nodes whose pool holds `resources` free resources of [`POOL_TYPE`], with
    /// the binary's defaults plus `flags`.
    pub async fn start(resources: usize, flags: &[String]) -> Result<Self> {
        let pools = tempfile::NamedTempFile::new()?;
        let names: Vec<String> = (0..resources).map(|i| format!("r{i}")).collect();
        std::fs::write(pools.path(), static_pool_yaml(POOL_TYPE, &names))?;
        let mut args = vec![format!("--pools={}", pools.path().display())];
        args.extend(flags.iter().cloned());
        let cluster = ProcessCluster::start_with_exact_args(3, &args)?;
        cluster.leader(Duration::from_secs(30)).await?;
        cluster
            .boskos(1)
            .wait_for_free(POOL_TYPE, resources as u64, Duration::from_secs(30))
            .await?;
        let nodes = (1..=3).map(|id| cluster.api_addr(id)).collect();
        Ok(Self {
            processes: cluster,
            nodes,
            _pools: pools,
        })
    }

    /// Rotates the nodes so that the first is the leader (`leader`) or a follower (otherwise).
    pub async fn put_first(&mut self, leader: bool) -> Result<()> {
        let id = self.processes.leader(Duration::from_secs(30)).await?;
        let leader_addr = self.processes.api_addr(id);
        let at = self
            .nodes
            .iter()
            .position(|node| (*node == leader_addr) == leader)
            .with_context(|| format!("no node of that role among {:?}", self.nodes))?;
        self.nodes.rotate_left(at);
        Ok(())
    }

    /// The node client `i` talks to: clients are spread over every node.
    pub fn node_for(&self, i: usize) -> &str {
        &self.nodes[i % self.nodes.len()]
    }

    /// The highest Raft term any node reports: it moves only with an election (pre-vote keeps
    /// candidates that cannot win from starting terms).
    pub async fn highest_term(&self) -> Result<u64> {
        highest_scraped(&self.nodes, "drover_raft_term").await
    }

    /// The nodes' process ids.
    pub fn pids(&self) -> Vec<u32> {
        self.processes.running_pids()
    }

    /// Resident memory of each node, in KiB (from `/proc`).
    pub fn rss_kib(&self) -> Vec<u64> {
        self.processes
            .running_pids()
            .into_iter()
            .filter_map(crate::proc::rss_kib)
            .collect()
    }
}

/// The highest value of the unlabelled metric `name` on any of `nodes`' `/metrics` (Drover's
/// or etcd's).
pub async fn highest_scraped(nodes: &[String], name: &str) -> Result<u64> {
    let mut highest = 0;
    for node in nodes {
        highest = highest.max(drover_tests::process::scraped(node, name).await?);
    }
    Ok(highest)
}

/// The URL of lease `name` through `node`.
pub fn lease_url(node: &str, name: &str) -> String {
    format!("{}/{name}", leases_url(node))
}

fn leases_url(node: &str) -> String {
    format!("http://{node}/apis/coordination.k8s.io/v1/namespaces/{NAMESPACE}/leases")
}

/// Creates lease `name` (or finds it) and returns its resource version.
pub async fn ensure_lease(http: &Client, node: &str, name: &str) -> Result<String> {
    let body =
        json!({"metadata": {"name": name}, "spec": {"holderIdentity": "bench", "leaseDurationSeconds": 10}});
    let response = http.post(leases_url(node)).json(&body).send().await?;
    let response = match response.status() {
        StatusCode::CREATED => response,
        StatusCode::CONFLICT => http.get(format!("{}/{name}", leases_url(node))).send().await?,
        other => bail!("creating lease {name} answered {other}"),
    };
    let answered: Answered = response
        .json()
        .await
        .context("an answer without a resourceVersion")?;
    Ok(answered.metadata.resource_version)
}

/// The body of a renewal: a lease replace conditional on `resource_version`.
#[derive(Serialize)]
struct Renewal<'a> {
    metadata: RenewalMeta<'a>,
    spec: RenewalSpec,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct RenewalMeta<'a> {
    name: &'a str,
    /// `None`: an unconditional replace (Kubernetes allows one for leases).
    #[serde(skip_serializing_if = "Option::is_none")]
    resource_version: Option<&'a str>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct RenewalSpec {
    holder_identity: &'static str,
    lease_duration_seconds: u32,
    renew_time: String,
}

/// What the load generator reads of an answered lease: its new version.
#[derive(Deserialize)]
struct Answered {
    metadata: AnsweredMeta,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct AnsweredMeta {
    resource_version: String,
}

/// Replaces a lease, conditional on its version (the compare-and-set of a Kubernetes lease
/// renewal); returns the new version.
async fn renew(http: &Client, url: &Url, name: &str, version: &str, seq: u64) -> Option<String> {
    put_lease(http, url, name, Some(version), seq).await
}

/// Replaces lease `name` at `url` whatever its version (the failover probe's write); true when
/// the replace was answered `200`.
pub async fn replace_lease(http: &Client, url: &Url, name: &str, seq: u64) -> bool {
    put_lease(http, url, name, None, seq).await.is_some()
}

/// Replaces a lease, conditional on `version` when given; returns the new version.
async fn put_lease(http: &Client, url: &Url, name: &str, version: Option<&str>, seq: u64) -> Option<String> {
    let body = Renewal {
        metadata: RenewalMeta {
            name,
            resource_version: version,
        },
        spec: RenewalSpec {
            holder_identity: "bench",
            lease_duration_seconds: 10,
            renew_time: format!("2026-01-01T00:00:{:02}.{:06}Z", seq % 60, seq % 1_000_000),
        },
    };
    let response = http.put(url.clone()).json(&body).send().await.ok()?;
    if response.status() != StatusCode::OK {
        return None;
    }
    let answered: Answered = serde_json::from_slice(&response.bytes().await.ok()?).ok()?;
    Some(answered.metadata.resource_version)
}

/// Workload (a): compare-and-set replaces of the worker's own lease, back to back.
pub struct LeaseWriter {
    /// Connection pool.
    pub http: Client,
    /// The node it talks to.
    pub node: String,
    /// The lease's URL.
    pub url: Url,
    /// The worker's lease.
    pub name: String,
    /// Its current version.
    pub version: String,
    /// Operations so far.
    pub seq: u64,
}

impl LeaseWriter {
    /// A writer of lease `name` through `node`, which must exist with `version`.
    pub fn new(http: Client, node: &str, name: String, version: String) -> Result<Self> {
        Ok(Self {
            http,
            node: node.to_string(),
            url: parsed_url(&format!("{}/{name}", leases_url(node)))?,
            name,
            version,
            seq: 0,
        })
    }

    async fn write(&mut self) -> bool {
        self.seq += 1;
        match renew(&self.http, &self.url, &self.name, &self.version, self.seq).await {
            Some(version) => {
                self.version = version;
                true
            }
            None => {
                // Learn the current version again before the next attempt.
                if let Ok(version) = ensure_lease(&self.http, &self.node, &self.name).await {
                    self.version = version;
                }
                false
            }
        }
    }
}

impl Worker for LeaseWriter {
    fn step(&mut self) -> StepFuture<'_> {
        Box::pin(timed(self.write()))
    }
}

/// Workloads (b) and (c): gets of one lease, linearizable or stale.
pub struct LeaseReader {
    /// Connection pool.
    pub http: Client,
    /// The lease's URL, with the consistency parameter.
    pub url: Url,
}

impl LeaseReader {
    /// A reader of lease `name` through `node`.
    pub fn new(http: Client, node: &str, name: &str, stale: bool) -> Result<Self> {
        let consistency = if stale { "stale" } else { "linearizable" };
        Ok(Self {
            http,
            url: parsed_url(&format!("{}/{name}?consistency={consistency}", leases_url(node)))?,
        })
    }
}

impl Worker for LeaseReader {
    fn step(&mut self) -> StepFuture<'_> {
        Box::pin(timed(async {
            match self.http.get(self.url.clone()).send().await {
                Ok(response) => response.status() == StatusCode::OK && response.bytes().await.is_ok(),
                Err(_) => false,
            }
        }))
    }
}

/// Workload (e): a lease holder that renews its lease once per `period`, as a Kubernetes
/// leader-election client does.
pub struct LeaseHolder {
    /// The writer it renews with.
    pub writer: LeaseWriter,
    /// Time between renewals.
    pub period: Duration,
    /// When the next renewal is due.
    pub next: tokio::time::Instant,
}

impl Worker for LeaseHolder {
    fn step(&mut self) -> StepFuture<'_> {
        Box::pin(async move {
            tokio::time::sleep_until(self.next).await;
            self.next += self.period;
            self.writer.step().await
        })
    }
}

/// Workload (d): a Boskos acquire followed by the release of what it got.
pub struct BoskosPair {
    /// Connection pool.
    pub http: Client,
    /// `http://node`.
    pub base: String,
    /// The owner name.
    pub owner: String,
}

impl BoskosPair {
    async fn pair(&self) -> bool {
        let acquired = self
            .http
            .post(format!("{}/acquire", self.base))
            .query(&[
                ("type", POOL_TYPE),
                ("state", "free"),
                ("dest", "busy"),
                ("owner", &self.owner),
            ])
            .send()
            .await;
        let Ok(response) = acquired else { return false };
        if response.status() != StatusCode::OK {
            return false;
        }
        let Ok(body) = response.json::<Value>().await else {
            return false;
        };
        let Some(name) = body["name"].as_str() else {
            return false;
        };
        let released = self
            .http
            .post(format!("{}/release", self.base))
            .query(&[("name", name), ("dest", "free"), ("owner", &self.owner)])
            .send()
            .await;
        released.is_ok_and(|r| r.status() == StatusCode::OK)
    }
}

impl Worker for BoskosPair {
    fn step(&mut self) -> StepFuture<'_> {
        Box::pin(timed(self.pair()))
    }
}
