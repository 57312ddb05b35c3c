//! The seeded client workload: reads, creates and compare-and-sets of Kubernetes-style lease
//! objects used as registers (the value is `holderIdentity`, the version `resourceVersion`),
//! plus creates of unique objects whose acknowledgement must survive everything.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use reqwest::{Client, StatusCode};
use serde_json::{json, Value};

use crate::checker::linearizable::RegisterOp;
use crate::history::{Acknowledged, Recorder};
use crate::rng::Rng;

/// Namespace of the register keys.
pub const REGISTER_NAMESPACE: &str = "chaos";
/// Namespace of the unique objects.
pub const DURABLE_NAMESPACE: &str = "chaos-durable";
/// How long one request may take before its outcome counts as unknown.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(3);

/// How a write ended, as far as the client can tell.
pub(crate) enum Outcome {
    /// An answer with a status and a body.
    Answer(StatusCode, Value),
    /// Certainly not applied (refused before delivery, or no leader known).
    NotApplied,
    /// Maybe applied (timeout, lost connection, unconfirmed commit).
    Unknown,
}

pub(crate) async fn send(request: reqwest::RequestBuilder) -> Outcome {
    match request.timeout(REQUEST_TIMEOUT).send().await {
        Ok(response) => {
            let status = response.status();
            let body: Value = response.json().await.unwrap_or(Value::Null);
            if status == StatusCode::SERVICE_UNAVAILABLE {
                let message = body["message"].as_str().unwrap_or_default();
                // "no leader is available" is certain: nothing was handed to a leader.
                if message.contains("may or may not") {
                    return Outcome::Unknown;
                }
                return Outcome::NotApplied;
            }
            Outcome::Answer(status, body)
        }
        Err(e) if e.is_connect() => Outcome::NotApplied,
        Err(_) => Outcome::Unknown,
    }
}

fn version_of(body: &Value) -> Option<u64> {
    body["metadata"]["resourceVersion"].as_str()?.parse().ok()
}

fn holder_of(body: &Value) -> String {
    body["spec"]["holderIdentity"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

/// One client: its connection pool, the versions it last saw, and the recorder.
struct Worker {
    http: Client,
    recorder: Recorder,
    versions: HashMap<String, u64>,
}

impl Worker {
    /// Records a successful operation whose answer carries the object: remembers its version
    /// and records the operation `make` builds from it.
    fn observed(&mut self, key: &str, invoked: u64, body: &Value, make: impl FnOnce(u64) -> RegisterOp) {
        let returned = self.recorder.now();
        if let Some(version) = version_of(body) {
            self.versions.insert(key.to_string(), version);
            self.recorder
                .register(key, invoked, Some(returned), make(version));
        }
    }

    fn refused(&self, key: &str, invoked: u64, op: RegisterOp) {
        self.recorder
            .register(key, invoked, Some(self.recorder.now()), op);
    }

    fn failed(&self) {
        self.recorder.failed();
    }

    async fn read(&mut self, url: &str, key: &str) {
        let invoked = self.recorder.now();
        match send(self.http.get(format!("{url}/{key}"))).await {
            Outcome::Answer(StatusCode::OK, body) => {
                let holder = holder_of(&body);
                self.observed(key, invoked, &body, |version| {
                    RegisterOp::Read(Some((holder, version)))
                });
            }
            Outcome::Answer(StatusCode::NOT_FOUND, _) => self.refused(key, invoked, RegisterOp::Read(None)),
            // A failed read changed nothing: it needs no place in the history.
            _ => self.failed(),
        }
    }

    async fn create(&mut self, url: &str, key: &str, value: String) {
        let invoked = self.recorder.now();
        let body = json!({"metadata": {"name": key}, "spec": {"holderIdentity": value}});
        match send(self.http.post(url).json(&body)).await {
            Outcome::Answer(StatusCode::CREATED, body) => {
                self.observed(key, invoked, &body, |version| RegisterOp::Created {
                    value,
                    version,
                });
            }
            Outcome::Answer(StatusCode::CONFLICT, _) => self.refused(key, invoked, RegisterOp::CreateRefused),
            Outcome::Unknown => {
                self.recorder
                    .register(key, invoked, None, RegisterOp::CreateUnknown { value })
            }
            _ => self.failed(),
        }
    }

    async fn swap(&mut self, url: &str, key: &str, value: String) {
        let Some(expected) = self.versions.get(key).copied() else {
            return;
        };
        let invoked = self.recorder.now();
        let body = json!({
            "metadata": {"name": key, "resourceVersion": expected.to_string()},
            "spec": {"holderIdentity": value},
        });
        match send(self.http.put(format!("{url}/{key}")).json(&body)).await {
            Outcome::Answer(StatusCode::OK, body) => {
                self.observed(key, invoked, &body, |version| RegisterOp::Swapped {
                    expected,
                    value,
                    version,
                });
            }
            Outcome::Answer(StatusCode::CONFLICT | StatusCode::NOT_FOUND, _) => {
                self.refused(key, invoked, RegisterOp::SwapRefused { expected });
            }
            Outcome::Unknown => {
                self.recorder
                    .register(key, invoked, None, RegisterOp::SwapUnknown { expected, value });
            }
            _ => self.failed(),
        }
    }

    async fn create_durable(&self, node: &str, name: String) {
        let invoked = self.recorder.now();
        let url = format!("http://{node}/apis/coordination.k8s.io/v1/namespaces/{DURABLE_NAMESPACE}/leases");
        let body = json!({"metadata": {"name": name}, "spec": {"holderIdentity": "durable"}});
        match send(self.http.post(url).json(&body)).await {
            Outcome::Answer(StatusCode::CREATED, _) => {
                let at = self.recorder.now();
                self.recorder.with(|h| {
                    h.acknowledged.push(Acknowledged { name, invoked, at });
                    h.write_successes.push((invoked, at));
                });
            }
            Outcome::Unknown => self.recorder.with(|h| h.unknown += 1),
            _ => self.failed(),
        }
    }
}

/// One client's loop, until `stop`: reads 40 %, creates 10 %, durable creates 10 %,
/// compare-and-sets 40 %, each on a random node and key.
pub async fn client(
    id: usize,
    nodes: Vec<String>,
    keys: usize,
    mut rng: Rng,
    recorder: Recorder,
    stop: Arc<AtomicBool>,
) {
    let http = crate::credentials::client_builder()
        .pool_max_idle_per_host(2)
        .build()
        .unwrap_or_default();
    let mut worker = Worker {
        http,
        recorder,
        versions: HashMap::new(),
    };
    let mut serial = 0u64;
    while !stop.load(Ordering::Relaxed) {
        let node = &nodes[rng.below(nodes.len() as u64) as usize];
        let key = format!("reg-{}", rng.below(keys as u64));
        let url = format!("http://{node}/apis/coordination.k8s.io/v1/namespaces/{REGISTER_NAMESPACE}/leases");
        serial += 1;
        let value = format!("c{id}-{serial}");
        match rng.below(10) {
            0..=3 => worker.read(&url, &key).await,
            4 => worker.create(&url, &key, value).await,
            5 => worker.create_durable(node, format!("d-{id}-{serial}")).await,
            _ => worker.swap(&url, &key, value).await,
        }
    }
}
