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
enum Outcome {
    /// An answer with a status and a body.
    Answer(StatusCode, Value),
    /// Certainly not applied (refused before delivery, or no leader known).
    NotApplied,
    /// Maybe applied (timeout, lost connection, unconfirmed commit).
    Unknown,
}

async fn send(request: reqwest::RequestBuilder) -> Outcome {
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

/// One client's loop, until `stop`.
pub async fn client(
    id: usize,
    nodes: Vec<String>,
    keys: usize,
    mut rng: Rng,
    recorder: Recorder,
    stop: Arc<AtomicBool>,
) {
    let http = Client::builder()
        .pool_max_idle_per_host(2)
        .build()
        .unwrap_or_default();
    let mut versions: HashMap<String, u64> = HashMap::new();
    let mut serial = 0u64;
    while !stop.load(Ordering::Relaxed) {
        let node = &nodes[rng.below(nodes.len() as u64) as usize];
        let key = format!("reg-{}", rng.below(keys as u64));
        let url = format!("http://{node}/apis/coordination.k8s.io/v1/namespaces/{REGISTER_NAMESPACE}/leases");
        serial += 1;
        let value = format!("c{id}-{serial}");
        let invoked = recorder.now();
        match rng.below(10) {
            0..=3 => {
                let outcome = send(http.get(format!("{url}/{key}"))).await;
                let returned = recorder.now();
                match outcome {
                    Outcome::Answer(StatusCode::OK, body) => {
                        if let Some(version) = version_of(&body) {
                            versions.insert(key.clone(), version);
                            recorder.register(
                                &key,
                                invoked,
                                Some(returned),
                                RegisterOp::Read(Some((holder_of(&body), version))),
                            );
                        }
                    }
                    Outcome::Answer(StatusCode::NOT_FOUND, _) => {
                        recorder.register(&key, invoked, Some(returned), RegisterOp::Read(None));
                    }
                    // A failed read changed nothing: it needs no place in the history.
                    _ => recorder.with(|h| h.failed += 1),
                }
            }
            4 => {
                let body = json!({"metadata": {"name": key}, "spec": {"holderIdentity": value}});
                match send(http.post(&url).json(&body)).await {
                    Outcome::Answer(StatusCode::CREATED, body) => {
                        let returned = recorder.now();
                        if let Some(version) = version_of(&body) {
                            versions.insert(key.clone(), version);
                            recorder.register(
                                &key,
                                invoked,
                                Some(returned),
                                RegisterOp::Created { value, version },
                            );
                        }
                    }
                    Outcome::Answer(StatusCode::CONFLICT, _) => {
                        recorder.register(&key, invoked, Some(recorder.now()), RegisterOp::CreateRefused);
                    }
                    Outcome::Unknown => {
                        recorder.register(&key, invoked, None, RegisterOp::CreateUnknown { value })
                    }
                    _ => recorder.with(|h| h.failed += 1),
                }
            }
            5 => {
                let name = format!("d-{id}-{serial}");
                let body = json!({"metadata": {"name": name}, "spec": {"holderIdentity": "durable"}});
                let durable = format!(
                    "http://{node}/apis/coordination.k8s.io/v1/namespaces/{DURABLE_NAMESPACE}/leases"
                );
                match send(http.post(durable).json(&body)).await {
                    Outcome::Answer(StatusCode::CREATED, _) => {
                        let at = recorder.now();
                        recorder.with(|h| {
                            h.acknowledged.push(Acknowledged { name, invoked, at });
                            h.write_successes.push((invoked, at));
                        });
                    }
                    Outcome::Unknown => recorder.with(|h| h.unknown += 1),
                    _ => recorder.with(|h| h.failed += 1),
                }
            }
            _ => {
                let Some(expected) = versions.get(&key).copied() else {
                    continue;
                };
                let body = json!({
                    "metadata": {"name": key, "resourceVersion": expected.to_string()},
                    "spec": {"holderIdentity": value},
                });
                match send(http.put(format!("{url}/{key}")).json(&body)).await {
                    Outcome::Answer(StatusCode::OK, body) => {
                        let returned = recorder.now();
                        if let Some(version) = version_of(&body) {
                            versions.insert(key.clone(), version);
                            recorder.register(
                                &key,
                                invoked,
                                Some(returned),
                                RegisterOp::Swapped {
                                    expected,
                                    value,
                                    version,
                                },
                            );
                        }
                    }
                    Outcome::Answer(StatusCode::CONFLICT | StatusCode::NOT_FOUND, _) => {
                        recorder.register(
                            &key,
                            invoked,
                            Some(recorder.now()),
                            RegisterOp::SwapRefused { expected },
                        );
                    }
                    Outcome::Unknown => {
                        recorder.register(&key, invoked, None, RegisterOp::SwapUnknown { expected, value })
                    }
                    _ => recorder.with(|h| h.failed += 1),
                }
            }
        }
    }
}
