//! Drover's leader-only actor trees, on ractor.
//!
//! ```text
//!  LeaderGate (task, every node)
//!     │ becomes leader → barrier (applied everything committed before its term)
//!     ▼
//!  RootSupervisor (leader only) ── restart policy per child: backoff, cap per window
//!     ├── PoolsSupervisor (config file → committed config; one TypeActor per type)
//!     │     └── TypeActor: claim expiry, reaper, dynamic lifecycle, cleaner, janitor
//!     ├── ClustersSupervisor (one ClusterActor per registered cluster)
//!     │     └── ClusterActor: fence the agent, probe it, send pinned sets, publish what it saw
//!     └── ServicesSupervisor (placement pass)
//!           └── TenantSupervisor (one per tenant with services)
//!                 └── ServiceActor: plan, send the service's set fenced by term, report
//! ```
//!
//! The gate starts the root only on the leader, after the read barrier, and stops it as soon as
//! leadership is lost or the term changes. Children carry the term in their context, so effects
//! they have on the outside world can be fenced.

pub mod clusters;
pub mod egress;
mod gate;
mod keyed;
pub mod krake;
mod metrics;
pub mod pools;
mod root;
pub mod services;
pub mod supervision;

use thiserror::Error;

pub use gate::{GateState, LeaderGate};
pub use root::{ChildSpec, LeaderContext, RootMsg, RootSupervisor, StartFuture};
pub use supervision::{Decision, RestartPolicy, RestartPolicyConfig};

/// Errors of the actors crate.
#[derive(Debug, Error)]
pub enum ActorsError {
    /// An actor could not be spawned.
    #[error("cannot spawn actor {name}: {message}")]
    Spawn {
        /// The actor's name.
        name: String,
        /// Why.
        message: String,
    },
    /// Metrics could not be registered.
    #[error("metrics: {0}")]
    Metrics(#[from] prometheus::Error),
}
