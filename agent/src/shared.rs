//! The state the API and the executors share: [`Memory`] behind one lock, the metrics, and the
//! state file's writer. Writes are ordered by one async lock, so an older snapshot never
//! overwrites a newer one; a desired-set change is written to disk before memory holds it.

use std::sync::{Mutex, MutexGuard};

use drover_model::cluster::agent_api::InstanceId;

use crate::error::AgentError;
use crate::layout::Layout;
use crate::memory::{Memory, Plan, Run};
use crate::metrics::Metrics;
use crate::store;

/// What the API and the executors share.
#[derive(Debug)]
pub struct Shared {
    memory: Mutex<Memory>,
    writer: tokio::sync::Mutex<()>,
    /// The data directory.
    pub layout: Layout,
    /// The metrics.
    pub metrics: Metrics,
}

impl Shared {
    /// Shares `memory`.
    pub fn new(memory: Memory, layout: Layout, metrics: Metrics) -> Self {
        metrics.set_fence_term(memory.fence.term);
        Self {
            memory: Mutex::new(memory),
            writer: tokio::sync::Mutex::new(()),
            layout,
            metrics,
        }
    }

    /// Locks memory. Hold it briefly and never across an `.await`.
    pub fn lock(&self) -> MutexGuard<'_, Memory> {
        self.memory
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Changes the run record of `id` if it still belongs to `epoch`; false when it does not.
    pub fn update(&self, id: &InstanceId, epoch: u64, change: impl FnOnce(&mut Run)) -> bool {
        match self.lock().run_mut(id, epoch) {
            Some(run) => {
                change(run);
                true
            }
            None => false,
        }
    }

    /// Writes memory to the state file.
    pub async fn persist(&self) -> Result<(), AgentError> {
        let _writer = self.writer.lock().await;
        let doc = self.lock().doc();
        let path = self.layout.state_file();
        tokio::task::spawn_blocking(move || store::save(&path, &doc))
            .await
            .map_err(|e| AgentError::Internal(format!("state writer: {e}")))?
    }

    /// Writes memory with `plan` applied to the state file, then applies `plan` to memory. When
    /// the write fails, memory is unchanged.
    pub async fn commit(&self, plan: &Plan) -> Result<(), AgentError> {
        let _writer = self.writer.lock().await;
        let doc = {
            let mut next = self.lock().clone();
            next.apply(plan);
            next.doc()
        };
        let path = self.layout.state_file();
        tokio::task::spawn_blocking(move || store::save(&path, &doc))
            .await
            .map_err(|e| AgentError::Internal(format!("state writer: {e}")))??;
        self.lock().apply(plan);
        self.metrics.set_fence_term(plan.fence.term);
        Ok(())
    }
}
