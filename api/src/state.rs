//! The top floor: a node's API state — one room per dialect over one [`Core`] — built from
//! the node's configuration.

use std::sync::Arc;

use drover_raft::RaftHandle;
use prometheus::Registry;
use tokio_util::sync::CancellationToken;

use crate::agents::AgentReads;
use crate::auth::Verifier;
use crate::axebow::{AxebowState, PlatformOptions};
use crate::boskos::BoskosState;
use crate::claimer::{ClaimerOptions, ClaimerState};
use crate::core::{Core, Recount, MAX_BODY_BYTES};
use crate::error::ApiError;
use crate::http_metrics::HttpMetrics;
use crate::krake::{KrakeOptions, KrakeState};
use crate::ops::OpsState;

/// Settings of the API that come from the node's configuration.
#[derive(Debug, Clone)]
pub struct ApiOptions {
    /// The k8s-claimer endpoints, when enabled.
    pub claimer: Option<ClaimerOptions>,
    /// Checks the bearer tokens of the platform API.
    pub verifier: Verifier,
    /// Settings of the platform API.
    pub platform: PlatformOptions,
    /// Largest request body accepted.
    pub max_body_bytes: usize,
    /// Live reads of clusters' agents; the cluster inventory and log routes answer `503`
    /// without.
    pub agents: Option<Arc<dyn AgentReads>>,
    /// How the Krake dialect treats callers without a credential.
    pub krake: KrakeOptions,
}

impl std::fmt::Debug for dyn AgentReads {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("AgentReads")
    }
}

impl Default for ApiOptions {
    fn default() -> Self {
        Self {
            claimer: None,
            verifier: Verifier::default(),
            platform: PlatformOptions::default(),
            max_body_bytes: MAX_BODY_BYTES,
            agents: None,
            krake: KrakeOptions::default(),
        }
    }
}

/// The API of one node: each dialect's room and the layers around them. The Kubernetes-style
/// dialect needs nothing beyond the core, so the core is its state.
#[derive(Clone)]
pub struct ApiState {
    /// What every request shares.
    pub core: Core,
    /// Request counts and latencies.
    pub http: HttpMetrics,
    /// Boskos and the pool administration.
    pub boskos: BoskosState,
    /// k8s-claimer.
    pub claimer: ClaimerState,
    /// The Axebow platform API.
    pub axebow: AxebowState,
    /// Krake's API.
    pub krake: KrakeState,
    /// Health, membership, metrics, the audit log and snapshots.
    pub ops: OpsState,
}

impl ApiState {
    /// Builds every room and registers their metrics in `registry`.
    pub fn new(
        raft: RaftHandle,
        registry: Registry,
        shutdown: CancellationToken,
        options: ApiOptions,
    ) -> Result<Self, ApiError> {
        let ApiOptions {
            claimer,
            verifier,
            platform,
            max_body_bytes,
            agents,
            krake,
        } = options;
        let http = HttpMetrics::register(&registry, raft.id())?;
        let core = Core::new(raft, registry, shutdown, max_body_bytes, verifier);
        let boskos = BoskosState::new(core.clone())?;
        let krake = KrakeOptions {
            allow_plain_http_agents: platform.allow_plain_http_agents,
            egress: platform.egress.clone(),
            image_registries: platform.image_registries.clone(),
            ..krake
        };
        let krake = KrakeState::new(core.clone(), krake, agents.clone());
        let axebow = AxebowState::new(core.clone(), platform, agents)?;
        let recounts: Vec<Arc<dyn Recount>> = vec![
            Arc::new(boskos.pool_metrics.clone()),
            Arc::new(axebow.service_metrics.clone()),
        ];
        Ok(Self {
            http,
            claimer: ClaimerState::new(core.clone(), claimer),
            krake,
            ops: OpsState::new(core.clone(), recounts),
            boskos,
            axebow,
            core,
        })
    }
}
