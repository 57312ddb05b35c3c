//! The state the API and the executors share: [`Memory`] behind one lock, the metrics, and the
//! state files' writer. Writes are ordered by one async lock, so an older snapshot of a set
//! never overwrites a newer one; a desired-set change is written to disk before memory holds it,
//! and only the set it changes is written.

use std::sync::{Mutex, MutexGuard};

use drover_model::cluster::agent_api::InstanceId;
use drover_model::cluster::identity::AgentIdentity;

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

    /// Writes the set that `id` belongs to (with its run records) to its file; nothing when
    /// `id` is no longer desired (its set's file was written without it).
    pub async fn persist(&self, id: &InstanceId) -> Result<(), AgentError> {
        let _writer = self.writer.lock().await;
        let written = {
            let memory = self.lock();
            let set = memory.instances.get(id).map(|e| e.set.clone());
            set.map(|set| {
                let instances = memory.set_instances(&set);
                (set, instances)
            })
        };
        let Some((set, instances)) = written else {
            return Ok(());
        };
        let layout = self.layout.clone();
        blocking(move || store::save_set(&layout, &set, instances)).await
    }

    /// Writes what `plan` changes to the state files — a newer fence first, then the plan's
    /// set — and applies `plan` to memory. When a write fails, memory keeps what is on disk: a
    /// written fence, never a set that was not written.
    pub async fn commit(&self, plan: &Plan) -> Result<(), AgentError> {
        let _writer = self.writer.lock().await;
        let (newer_fence, set) = {
            let memory = self.lock();
            let set = match &plan.set {
                Some(set) if !plan.changes_nothing() => {
                    let mut next = memory.only(set);
                    next.apply(plan);
                    Some((set.clone(), next.set_instances(set)))
                }
                _ => None,
            };
            (plan.fence != memory.fence, set)
        };
        if newer_fence {
            let (layout, fence) = (self.layout.clone(), plan.fence);
            blocking(move || store::save_fence(&layout, fence)).await?;
            self.lock().set_fence(fence);
            self.metrics.set_fence_term(fence.term);
        }
        if let Some((set, instances)) = set {
            let layout = self.layout.clone();
            blocking(move || store::save_set(&layout, &set, instances)).await?;
        }
        self.lock().apply(plan);
        Ok(())
    }

    /// Records the agent's identity on disk (written, synced, renamed), one write at a time with
    /// the state files.
    pub async fn save_identity(&self, identity: AgentIdentity) -> Result<(), AgentError> {
        let _writer = self.writer.lock().await;
        let layout = self.layout.clone();
        blocking(move || store::save_identity(&layout, &identity)).await
    }
}

/// Runs a file write off the async threads; in place on a single-threaded runtime (a test's, or
/// a simulated host's: a blocking thread would finish at a moment of its own, which a
/// deterministic simulation could not replay).
async fn blocking(write: impl FnOnce() -> Result<(), AgentError> + Send + 'static) -> Result<(), AgentError> {
    use tokio::runtime::{Handle, RuntimeFlavor};
    if Handle::current().runtime_flavor() == RuntimeFlavor::CurrentThread {
        return write();
    }
    tokio::task::spawn_blocking(write)
        .await
        .map_err(|e| AgentError::Internal(format!("state writer: {e}")))?
}
