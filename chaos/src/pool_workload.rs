//! The seeded Boskos workload: clients acquire a resource of a small pool, heartbeat it with
//! `/update` a few times and release it, always with their fencing token, through random nodes.
//! Grants and accepted token uses are recorded for the mutual-exclusion checker.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use drover_tests::boskos::static_pool_yaml;
use reqwest::{Client, StatusCode};

use crate::checker::mutex::{Accepted, Grant};
use crate::history::Recorder;
use crate::rng::Rng;
use crate::workload::{send, Outcome};

/// The pool's resource type.
pub const POOL_TYPE: &str = "chaos";
/// How many resources the pool holds: fewer than the clients, so they contend.
pub const POOL_SIZE: usize = 2;
/// How long a holder may stay silent before the reaper takes its resource back, as `dirty` (it
/// also reclaims what acquires with a lost answer granted).
pub const REAPER_EXPIRE: &str = "4s";
/// The pause between a holder's heartbeats, and before retrying an empty pool.
const PACE: Duration = Duration::from_millis(150);

/// The `--pools` file the nodes start with.
pub fn pools_yaml() -> String {
    let names: Vec<String> = (0..POOL_SIZE).map(|i| format!("m-{i}")).collect();
    static_pool_yaml(POOL_TYPE, &names)
}

struct Holder<'a> {
    http: &'a Client,
    recorder: &'a Recorder,
    owner: String,
}

impl Holder<'_> {
    /// Sends one Boskos call; `Some(true)` when accepted, `Some(false)` when refused, `None`
    /// when nothing is known (or it certainly failed for lack of a leader).
    async fn call(
        &self,
        node: &str,
        path: &str,
        query: &[(&str, String)],
    ) -> Option<(bool, serde_json::Value)> {
        let request = self.http.post(format!("http://{node}{path}")).query(query);
        match send(request).await {
            Outcome::Answer(StatusCode::OK, body) => Some((true, body)),
            Outcome::Answer(_, body) => Some((false, body)),
            Outcome::NotApplied => {
                self.recorder.failed();
                None
            }
            Outcome::Unknown => {
                self.recorder.with(|h| h.unknown += 1);
                None
            }
        }
    }

    /// Acquires a resource in state `from`.
    async fn acquire(&self, node: &str, from: &str) -> Option<(String, u64)> {
        let invoked = self.recorder.now();
        let query = [
            ("type", POOL_TYPE.to_string()),
            ("state", from.to_string()),
            ("dest", "busy".to_string()),
            ("owner", self.owner.clone()),
        ];
        let (true, body) = self.call(node, "/acquire", &query).await? else {
            return None;
        };
        let returned = self.recorder.now();
        let resource = body["name"].as_str()?.to_string();
        let token = body["fencing_token"].as_u64()?;
        self.recorder.with(|h| {
            h.grants.push(Grant {
                resource: resource.clone(),
                owner: self.owner.clone(),
                token,
                invoked,
                returned,
            });
            h.write_successes.push((invoked, returned));
        });
        Some((resource, token))
    }

    /// An update (`release = false`) or a release: `Some(accepted)` when the server answered,
    /// `None` when nothing is known.
    async fn use_token(&self, node: &str, resource: &str, token: u64, release: bool) -> Option<bool> {
        let invoked = self.recorder.now();
        let mut query = vec![
            ("name", resource.to_string()),
            ("owner", self.owner.clone()),
            ("fencing_token", token.to_string()),
        ];
        let path = if release {
            query.push(("dest", "free".to_string()));
            "/release"
        } else {
            query.push(("state", "busy".to_string()));
            "/update"
        };
        let (accepted, _) = self.call(node, path, &query).await?;
        if accepted {
            let returned = self.recorder.now();
            self.recorder.with(|h| {
                h.accepted.push(Accepted {
                    resource: resource.to_string(),
                    token,
                    invoked,
                    returned,
                });
                h.write_successes.push((invoked, returned));
            });
        }
        Some(accepted)
    }
}

/// One pool client's loop, until `stop`: acquire, one to three heartbeats, release.
pub async fn client(id: usize, nodes: Vec<String>, mut rng: Rng, recorder: Recorder, stop: Arc<AtomicBool>) {
    let http = crate::credentials::client_builder()
        .pool_max_idle_per_host(2)
        .build()
        .unwrap_or_default();
    let holder = Holder {
        http: &http,
        recorder: &recorder,
        owner: format!("p{id}"),
    };
    let mut node = || nodes[rng.below(nodes.len() as u64) as usize].clone();
    while !stop.load(Ordering::Relaxed) {
        // The reaper hands silent holders' resources back as `dirty` (there is no janitor
        // here), so a client takes a dirty one when none is free, as a Boskos user would.
        let acquired = match holder.acquire(&node(), "free").await {
            Some(grant) => Some(grant),
            None => holder.acquire(&node(), "dirty").await,
        };
        let Some((resource, token)) = acquired else {
            tokio::time::sleep(PACE).await;
            continue;
        };
        // A heartbeat without an answer is retried; a refusal means the resource is gone.
        let heartbeats = 1 + (token % 3);
        let mut lost = false;
        for _ in 0..heartbeats {
            tokio::time::sleep(PACE).await;
            if stop.load(Ordering::Relaxed) {
                break;
            }
            if holder.use_token(&node(), &resource, token, false).await == Some(false) {
                lost = true;
                break;
            }
        }
        if !lost {
            holder.use_token(&node(), &resource, token, true).await;
        }
    }
}
