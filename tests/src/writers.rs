//! Lease writers for the tests that must lose no acknowledged write (snapshots, recovery): each
//! creates uniquely named leases in one namespace through the nodes in turn until stopped, and
//! every name a node acknowledged (`201`) is kept.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use anyhow::Result;
use tokio::task::JoinHandle;

use crate::client::LeaseClient;

/// Writers running in the background.
pub struct LeaseWriters {
    acknowledged: Arc<Mutex<Vec<String>>>,
    stop: Arc<AtomicBool>,
    tasks: Vec<JoinHandle<Result<()>>>,
}

impl LeaseWriters {
    /// Starts `count` writers creating leases `w{writer}-{n}` in `namespace` through `clients`.
    pub fn start(clients: &[LeaseClient], namespace: &str, count: usize) -> Self {
        let acknowledged: Arc<Mutex<Vec<String>>> = Arc::default();
        let stop = Arc::new(AtomicBool::new(false));
        let tasks = (0..count)
            .map(|writer| {
                let (clients, acknowledged, stop) = (clients.to_vec(), acknowledged.clone(), stop.clone());
                let namespace = namespace.to_string();
                tokio::spawn(async move {
                    let mut sequence = 0usize;
                    while !stop.load(Ordering::Relaxed) {
                        let name = format!("w{writer}-{sequence}");
                        let client = &clients[(writer + sequence) % clients.len()];
                        if let Ok(answer) = client.create(&namespace, &name, "writer").await {
                            if answer.status == 201 {
                                acknowledged
                                    .lock()
                                    .map_err(|_| anyhow::anyhow!("poisoned"))?
                                    .push(name);
                            }
                        }
                        sequence += 1;
                    }
                    Ok(())
                })
            })
            .collect();
        Self {
            acknowledged,
            stop,
            tasks,
        }
    }

    /// The names acknowledged so far.
    pub fn acknowledged(&self) -> Vec<String> {
        self.acknowledged
            .lock()
            .map(|names| names.clone())
            .unwrap_or_default()
    }

    /// Stops every writer, waits for them, and returns every acknowledged name.
    pub async fn stop(self) -> Result<Vec<String>> {
        self.stop.store(true, Ordering::Relaxed);
        for task in self.tasks {
            task.await??;
        }
        let names = self
            .acknowledged
            .lock()
            .map_err(|_| anyhow::anyhow!("poisoned"))?
            .clone();
        Ok(names)
    }
}
