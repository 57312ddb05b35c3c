//! The reference: a three-member etcd cluster (Debian's `etcd-server`) on loopback with its
//! default timings, started and stopped by the benchmark, and the equivalent workers over its
//! v3 JSON gateway: put, linearizable and serializable range, lease keep-alive.

use std::net::Ipv4Addr;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use anyhow::{anyhow, bail, Context, Result};
use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine;
use bytes::Bytes;
use drover_tests::process::free_ports;
use drover_tests::wait::eventually;
use reqwest::{Client, IntoUrl, StatusCode, Url};
use serde::de::IgnoredAny;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use tempfile::TempDir;

use crate::driver::{parsed_url, timed, StepFuture, Worker};

/// Size of the values written: about the size of a lease object as Drover stores it.
const VALUE_BYTES: usize = 256;

/// A running etcd cluster; dropping it kills the members and deletes their data.
pub struct EtcdCluster {
    /// Each member's process while it runs (`None` after [`Self::kill`]).
    children: Vec<Option<Child>>,
    /// Client URLs' host:port, member 1 first.
    pub nodes: Vec<String>,
    /// Peer ports, member 1 first.
    peer_ports: Vec<u16>,
    _dir: TempDir,
}

impl EtcdCluster {
    /// Starts three members on free loopback ports and waits until all are healthy.
    pub async fn start() -> Result<Self> {
        let dir = TempDir::new()?;
        // (client, peer) port pairs, one per member.
        let ports = free_ports(&[Ipv4Addr::LOCALHOST.into(); 3])?;
        let mut cluster = Self {
            children: Vec::new(),
            nodes: ports
                .iter()
                .map(|(client, _)| format!("127.0.0.1:{client}"))
                .collect(),
            peer_ports: ports.iter().map(|(_, peer)| *peer).collect(),
            _dir: dir,
        };
        for i in 0..3 {
            let child = cluster.spawn_member(i)?;
            cluster.children.push(Some(child));
        }
        cluster.wait_healthy().await?;
        Ok(cluster)
    }

    /// Starts member `i` (0-based) on its ports and data directory, appending to its log.
    fn spawn_member(&self, i: usize) -> Result<Child> {
        let peer = |i: usize| format!("http://127.0.0.1:{}", self.peer_ports[i]);
        let initial = (0..self.peer_ports.len())
            .map(|i| format!("m{}={}", i + 1, peer(i)))
            .collect::<Vec<_>>()
            .join(",");
        let client = format!("http://{}", self.nodes[i]);
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self._dir.path().join(format!("m{}.log", i + 1)))?;
        Command::new("etcd")
            .arg(format!("--name=m{}", i + 1))
            .arg(format!(
                "--data-dir={}",
                self._dir.path().join(format!("m{}", i + 1)).display()
            ))
            .arg(format!("--listen-client-urls={client}"))
            .arg(format!("--advertise-client-urls={client}"))
            .arg(format!("--listen-peer-urls={}", peer(i)))
            .arg(format!("--initial-advertise-peer-urls={}", peer(i)))
            .arg(format!("--initial-cluster={initial}"))
            .arg("--initial-cluster-token=drover-bench")
            .arg("--initial-cluster-state=new")
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            .spawn()
            .context("starting etcd (apt install etcd-server)")
    }

    /// SIGKILLs member `i` (0-based) and reaps it.
    pub fn kill(&mut self, i: usize) -> Result<()> {
        if let Some(mut child) = self.children.get_mut(i).and_then(Option::take) {
            child.kill()?;
            child.wait()?;
        }
        Ok(())
    }

    /// Starts a killed member `i` again on its data and waits until every member is healthy.
    pub async fn restart(&mut self, i: usize) -> Result<()> {
        let child = self.spawn_member(i)?;
        if let Some(slot) = self.children.get_mut(i) {
            *slot = Some(child);
        }
        self.wait_healthy().await
    }

    /// Process id of member `i` while it runs.
    pub fn pid_of(&self, i: usize) -> Option<u32> {
        self.children.get(i)?.as_ref().map(Child::id)
    }

    /// The member (0-based) that every running member names as its leader.
    pub async fn leader(&self, http: &Client) -> Result<usize> {
        let nodes = &self.nodes;
        let running: Vec<usize> = (0..nodes.len()).filter(|i| self.pid_of(*i).is_some()).collect();
        eventually(
            Duration::from_secs(30),
            "the etcd members to agree on a leader",
            || async {
                let mut leader_id = None;
                let mut leader_index = None;
                for i in &running {
                    let status = post_ok(
                        http,
                        &format!("http://{}/v3/maintenance/status", nodes[*i]),
                        &json!({}),
                    )
                    .await?;
                    let leader = status["leader"].as_str()?.to_string();
                    if leader_id.as_ref().is_some_and(|seen| *seen != leader) {
                        return None;
                    }
                    if status["header"]["member_id"].as_str() == Some(leader.as_str()) {
                        leader_index = Some(*i);
                    }
                    leader_id = Some(leader);
                }
                leader_index
            },
        )
        .await
    }

    async fn wait_healthy(&mut self) -> Result<()> {
        let http = Client::builder().timeout(Duration::from_secs(2)).build()?;
        let nodes = &self.nodes;
        let healthy = eventually(
            Duration::from_secs(30),
            "every etcd member to be healthy",
            || async {
                for node in nodes {
                    let response = http.get(format!("http://{node}/health")).send().await.ok()?;
                    let body: Value = response.json().await.ok()?;
                    if body["health"] != "true" {
                        return None;
                    }
                }
                Some(())
            },
        )
        .await;
        if let Some(status) = self
            .children
            .iter_mut()
            .flatten()
            .find_map(|c| c.try_wait().ok().flatten())
        {
            bail!("an etcd member exited at start: {status}");
        }
        healthy
    }

    /// The node client `i` talks to: clients are spread over every member.
    pub fn node_for(&self, i: usize) -> &str {
        &self.nodes[i % self.nodes.len()]
    }

    /// The members' process ids.
    pub fn pids(&self) -> Vec<u32> {
        self.children.iter().flatten().map(|c| c.id()).collect()
    }

    /// Resident memory of each member, in KiB.
    pub fn rss_kib(&self) -> Vec<u64> {
        self.children
            .iter()
            .flatten()
            .filter_map(|c| crate::proc::rss_kib(c.id()))
            .collect()
    }
}

impl Drop for EtcdCluster {
    fn drop(&mut self) {
        for child in self.children.iter_mut().flatten() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

fn b64(text: &str) -> String {
    BASE64.encode(text)
}

/// Posts `body` to `url`; the answer's body when the gateway answered `200`.
async fn post(http: &Client, url: impl IntoUrl, body: &impl Serialize) -> Option<Bytes> {
    let response = http.post(url).json(body).send().await.ok()?;
    if response.status() != StatusCode::OK {
        return None;
    }
    response.bytes().await.ok()
}

/// Posts `body` to `url`; the answer when it is a `200` that reports no error (the gateway
/// reports gRPC errors in the body).
async fn post_ok(http: &Client, url: &str, body: &Value) -> Option<Value> {
    let body: Value = serde_json::from_slice(&post(http, url, body).await?).ok()?;
    body.get("error").is_none().then_some(body)
}

/// What the load generator reads of a gateway answer: whether it reports an error.
#[derive(Deserialize)]
struct GatewayAnswer {
    #[serde(default)]
    error: Option<IgnoredAny>,
}

/// [`post_ok`] for the measured workers: true when it succeeds, the answer read only for its
/// error.
async fn post_succeeds(http: &Client, url: &Url, body: &impl Serialize) -> bool {
    post(http, url.clone(), body)
        .await
        .and_then(|bytes| serde_json::from_slice::<GatewayAnswer>(&bytes).ok())
        .is_some_and(|answer| answer.error.is_none())
}

/// The body of a put.
#[derive(Serialize)]
struct Put<'a> {
    key: &'a str,
    value: String,
}

/// The body of a range of one key.
#[derive(Serialize)]
struct Range {
    key: String,
    serializable: bool,
}

/// The body of a keep-alive.
#[derive(Serialize)]
struct LeaseId {
    #[serde(rename = "ID")]
    id: String,
}

/// Puts key `key` once, so reads find it.
pub async fn put_once(http: &Client, node: &str, key: &str) -> Result<()> {
    let body = json!({"key": b64(key), "value": b64(&"v".repeat(VALUE_BYTES))});
    post_ok(http, &format!("http://{node}/v3/kv/put"), &body)
        .await
        .map(|_| ())
        .ok_or_else(|| anyhow!("etcd put of {key} failed"))
}

/// One put of `key` at `url` (a member's `/v3/kv/put`), the failover probe's write; true when
/// it succeeded.
pub async fn put_succeeds(http: &Client, url: &Url, key: &str, seq: u64) -> bool {
    let body = Put {
        key: &b64(key),
        value: b64(&format!("{seq:0width$}", width = VALUE_BYTES)),
    };
    post_succeeds(http, url, &body).await
}

/// Writes: back-to-back puts of the worker's own key.
pub struct Putter {
    /// Connection pool.
    pub http: Client,
    /// The member's put URL.
    pub url: Url,
    /// The key, base64.
    pub key: String,
    /// Operations so far.
    pub seq: u64,
}

impl Putter {
    /// A writer of `key` through `node`.
    pub fn new(http: Client, node: &str, key: &str) -> Result<Self> {
        Ok(Self {
            http,
            url: parsed_url(&format!("http://{node}/v3/kv/put"))?,
            key: b64(key),
            seq: 0,
        })
    }
}

impl Worker for Putter {
    fn step(&mut self) -> StepFuture<'_> {
        self.seq += 1;
        let value = format!("{:0width$}", self.seq, width = VALUE_BYTES);
        Box::pin(timed(async move {
            let body = Put {
                key: &self.key,
                value: b64(&value),
            };
            post_succeeds(&self.http, &self.url, &body).await
        }))
    }
}

/// Reads: ranges of one key, linearizable or serializable.
pub struct Ranger {
    /// Connection pool.
    pub http: Client,
    /// The member's range URL.
    pub url: Url,
    /// The request body.
    body: Range,
}

impl Ranger {
    /// A reader of `key` through `node`.
    pub fn new(http: Client, node: &str, key: &str, serializable: bool) -> Result<Self> {
        Ok(Self {
            http,
            url: parsed_url(&format!("http://{node}/v3/kv/range"))?,
            body: Range {
                key: b64(key),
                serializable,
            },
        })
    }
}

impl Worker for Ranger {
    fn step(&mut self) -> StepFuture<'_> {
        Box::pin(timed(post_succeeds(&self.http, &self.url, &self.body)))
    }
}

/// Grants a lease of `ttl` seconds and returns its id.
pub async fn grant_lease(http: &Client, node: &str, ttl: u64) -> Result<String> {
    let body = post_ok(
        http,
        &format!("http://{node}/v3/lease/grant"),
        &json!({"TTL": ttl.to_string()}),
    )
    .await
    .ok_or_else(|| anyhow!("etcd lease grant failed"))?;
    body["ID"]
        .as_str()
        .map(str::to_string)
        .ok_or_else(|| anyhow!("etcd lease grant answered without an ID: {body}"))
}

/// Heartbeats: a lease holder that keeps its lease alive once per `period`.
pub struct KeepAlive {
    /// Connection pool.
    pub http: Client,
    /// The member's keep-alive URL.
    pub url: Url,
    /// The request body.
    body: LeaseId,
    /// Time between keep-alives.
    pub period: Duration,
    /// When the next is due.
    pub next: tokio::time::Instant,
}

impl KeepAlive {
    /// A holder of lease `id` through `node`, first renewing at `first`.
    pub fn new(
        http: Client,
        node: &str,
        id: &str,
        period: Duration,
        first: tokio::time::Instant,
    ) -> Result<Self> {
        Ok(Self {
            http,
            url: parsed_url(&format!("http://{node}/v3/lease/keepalive"))?,
            body: LeaseId { id: id.to_string() },
            period,
            next: first,
        })
    }
}

impl Worker for KeepAlive {
    fn step(&mut self) -> StepFuture<'_> {
        Box::pin(async move {
            tokio::time::sleep_until(self.next).await;
            self.next += self.period;
            // The gateway streams keep-alive answers as {"result": {...}} lines.
            timed(async {
                let Ok(response) = self.http.post(self.url.clone()).json(&self.body).send().await else {
                    return false;
                };
                response.status() == StatusCode::OK
                    && response
                        .text()
                        .await
                        .is_ok_and(|text| text.contains("\"TTL\"") && !text.contains("\"error\""))
            })
            .await
        })
    }
}
