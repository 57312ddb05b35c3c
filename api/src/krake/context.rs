//! The Krake room's state: the core every dialect shares, how this dialect treats callers
//! that send no credential, and the journal its watches are told from.

use std::sync::Arc;

use super::journal::KrakeJournal;
use crate::agents::AgentReads;
use crate::core::Core;

/// How the Krake dialect authenticates callers without a credential.
#[derive(Debug, Clone, Default)]
pub struct KrakeOptions {
    /// Krake's static strategy: every request without a credential is this user.
    pub static_user: Option<String>,
    /// Requests without a credential are `system:anonymous` (subject to RBAC) instead of `401`.
    pub allow_anonymous: bool,
    /// The base URL applications call their hooks at (Krake's `external_endpoint`): this
    /// node's advertised API address unless set.
    pub hook_endpoint: String,
    /// Clusters whose agent is reached over plain HTTP may be registered (the platform's
    /// setting, `--allow-plain-http-agents`, given to this room too).
    pub allow_plain_http_agents: bool,
    /// Where a metrics provider may point (the platform's egress policy, given to this room).
    pub egress: std::sync::Arc<drover_model::egress::EgressPolicy>,
    /// The registries tenants' pods may pull from (the platform's `--image-registry-allow`).
    pub image_registries: std::sync::Arc<drover_model::image_policy::RegistryAllow>,
    /// Origins whose browser pages may call the Krake routes (`*` for any): CORS as Krake's
    /// server answers it ([`super::cors`]); none by default.
    pub cors_origins: Vec<String>,
}

/// The Krake room's state: the core, its options, and live reads of agents (a Cluster's
/// kubeconfig is checked to name one).
#[derive(Clone)]
pub struct KrakeState {
    pub(super) core: Core,
    pub(super) options: Arc<KrakeOptions>,
    pub(super) agents: Option<Arc<dyn AgentReads>>,
    /// Every change of a Krake object, for watches.
    pub(super) journal: Arc<KrakeJournal>,
}

impl KrakeState {
    /// The room over `core`.
    pub fn new(core: Core, options: KrakeOptions, agents: Option<Arc<dyn AgentReads>>) -> Self {
        let journal = Arc::new(KrakeJournal::default());
        core.raft.observe_applied(journal.clone());
        refresh_journal(&core, &journal);
        Self {
            core,
            options: Arc::new(options),
            agents,
            journal,
        }
    }
}

impl std::ops::Deref for KrakeState {
    type Target = Core;

    fn deref(&self) -> &Core {
        &self.core
    }
}

/// Refreshes the journal every [`REFRESH`](super::journal::REFRESH) until the node shuts down
/// (when built inside a runtime, as a node's API is).
fn refresh_journal(core: &Core, journal: &Arc<KrakeJournal>) {
    let Ok(runtime) = tokio::runtime::Handle::try_current() else {
        return;
    };
    let (raft, shutdown, journal) = (core.raft.clone(), core.shutdown.clone(), Arc::downgrade(journal));
    runtime.spawn(async move {
        let mut ticks = tokio::time::interval(super::journal::REFRESH);
        loop {
            tokio::select! {
                _ = shutdown.cancelled() => return,
                _ = ticks.tick() => {}
            }
            let Some(journal) = journal.upgrade() else {
                return;
            };
            raft.local_read(|state| journal.refresh(state));
        }
    });
}
