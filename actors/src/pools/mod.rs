//! The leader-only pool actors: one [`PoolsSupervisor`] under the root that follows the pool
//! configuration file and keeps one [`TypeActor`](type_actor::TypeActor) per resource type; each
//! type actor runs the reaper, claim expiry, the dynamic-resource lifecycle, the cleaner and the
//! janitor for its type. Every decision is a committed command; effects on resources carry the
//! grant's fencing token, so a deposed leader's late effect is refused.

mod child;
mod janitor;
mod supervisor;
mod type_actor;

use std::path::PathBuf;
use std::time::Duration;

use prometheus::{IntCounterVec, Opts, Registry};

pub use child::PoolsChild;
pub use supervisor::PoolsSupervisor;

use crate::ActorsError;

/// Settings of the pool actors.
#[derive(Debug, Clone)]
pub struct PoolActorsConfig {
    /// Boskos YAML file to follow; its changes are committed as the pool configuration.
    pub config_file: Option<PathBuf>,
    /// How often each actor looks at its pools.
    pub sync_interval: Duration,
    /// Owned resources not updated for this long are reclaimed by the reaper.
    pub reaper_expire: Duration,
    /// States the reaper reclaims from.
    pub reaper_states: Vec<String>,
    /// State the reaper moves reclaimed resources to.
    pub reaper_target: String,
    /// Shell command that cleans one dirty resource; no janitor runs without it.
    pub janitor_command: Option<String>,
    /// Most cleanups running at once per type.
    pub janitor_concurrency: usize,
    /// A cleanup still running after this long is killed and counts as failed.
    pub janitor_timeout: Duration,
}

impl Default for PoolActorsConfig {
    fn default() -> Self {
        Self {
            config_file: None,
            sync_interval: Duration::from_secs(1),
            reaper_expire: Duration::from_secs(30 * 60),
            reaper_states: vec!["busy".into(), "cleaning".into(), "leased".into()],
            reaper_target: "dirty".into(),
            janitor_command: None,
            janitor_concurrency: 4,
            janitor_timeout: Duration::from_secs(10 * 60),
        }
    }
}

/// Counters of the pool actors.
#[derive(Clone)]
pub struct PoolActorMetrics {
    pub(crate) reaper_reclaims: IntCounterVec,
    pub(crate) janitor_runs: IntCounterVec,
}

impl PoolActorMetrics {
    /// Creates and registers the counters.
    pub fn register(registry: &Registry) -> Result<Self, ActorsError> {
        let reaper_reclaims = IntCounterVec::new(
            Opts::new(
                "drover_reaper_reclaims_total",
                "Resources the reaper reclaimed, by type",
            ),
            &["type"],
        )?;
        let janitor_runs = IntCounterVec::new(
            Opts::new(
                "drover_janitor_runs_total",
                "Janitor cleanups by type and result (success, failure, timeout)",
            ),
            &["type", "result"],
        )?;
        registry.register(Box::new(reaper_reclaims.clone()))?;
        registry.register(Box::new(janitor_runs.clone()))?;
        Ok(Self {
            reaper_reclaims,
            janitor_runs,
        })
    }
}
