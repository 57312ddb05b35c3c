//! `drover agent`: the worker-machine agent. One runs on every worker machine (like a Nomad
//! client or a kubelet); it serves the cluster API ([`http`]) that the control plane's leader
//! calls with whole desired sets, and runs those instances with an [`executor::Executor`]:
//! real child processes ([`exec`]) or simulated ones ([`sim`]).
//!
//! The agent keeps the highest leader fence it accepted, the desired sets and a run record per
//! instance under `<data-dir>/state/` ([`store`]), written before it acts, so it outlives
//! control-plane leader changes and its own restarts. It has an id of its own, kept there too,
//! and binds itself to the one cluster object that drives it ([`identity`]). Instances outlive
//! the agent: on SIGTERM it exits and leaves them running, and started again it adopts them
//! ([`exec`]).
//!
//! Embedding (tests): [`serve`] runs an agent on a listener until a shutdown future resolves.

pub mod config;
pub mod container;
pub mod core;
pub mod error;
pub mod exec;
pub mod executor;
pub mod fence;
pub mod http;
pub mod identity;
pub mod layout;
pub mod logs;
pub mod memory;
pub mod metrics;
pub mod secret;
pub mod shared;
pub mod sim;
pub mod store;
pub mod telemetry;
pub mod validate;

#[cfg(test)]
mod testutil;

use std::future::Future;
use std::sync::Arc;

use tokio_util::sync::CancellationToken;

pub use crate::config::{AgentArgs, AgentConfig, ExecutorKind, LogFormat, SimConfig};
pub use crate::core::Agent;
pub use crate::error::AgentError;
pub use crate::secret::JoinToken;

use crate::executor::Executor;
use crate::layout::Layout;
use crate::memory::Memory;
use crate::shared::Shared;

/// An agent with its state loaded and its instances handed to the executor, ready to serve.
pub struct Opened {
    agent: Arc<Agent>,
    router: axum::Router,
    tasks: CancellationToken,
    _lock: std::fs::File,
}

impl std::fmt::Debug for Opened {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Opened")
            .field("agent", &self.agent)
            .finish_non_exhaustive()
    }
}

/// Opens the data directory, loads the state files and starts (or adopts) every instance they
/// name. Must run inside a tokio runtime.
pub fn open(config: &AgentConfig) -> Result<Opened, AgentError> {
    let layout = Layout::new(&config.data_dir);
    let lock = layout.open()?;
    let mut memory = Memory::from_doc(store::load(&layout)?);
    let started = (config.wall_clock)()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |since| u64::try_from(since.as_nanos()).unwrap_or(u64::MAX));
    memory.start_generation(started);
    let identity = store::load_identity(&layout)?;
    let loaded = memory.instances.len();
    let metrics = metrics::Metrics::new()?;
    let shared = Arc::new(Shared::new(memory, layout.clone(), metrics));
    let tasks = CancellationToken::new();
    let executor: Arc<dyn Executor> = match config.executor {
        ExecutorKind::Exec => Arc::new(exec::ExecExecutor::new(
            config,
            shared.clone(),
            tasks.clone(),
            &identity.agent_id,
        )?),
        ExecutorKind::Sim => Arc::new(sim::SimExecutor::new(config, shared.clone(), tasks.clone())),
        ExecutorKind::Container => Arc::new(container::ContainerExecutor::new(
            config,
            shared.clone(),
            tasks.clone(),
            &identity.agent_id,
        )?),
    };
    let agent = Arc::new(Agent::new(config, shared, executor, identity));
    agent.launch_loaded();
    // The id is random: it is printed by `run` and in the facts, not in a log line a
    // deterministic simulation's replay compares.
    tracing::info!(
        agent = %config.name,
        executor = ?config.executor,
        instances = loaded,
        data_dir = %config.data_dir.display(),
        "agent opened"
    );
    let router = http::router(agent.clone(), config.join_token.clone(), layout);
    Ok(Opened {
        agent,
        router,
        tasks,
        _lock: lock,
    })
}

impl Opened {
    /// The agent's operations, without HTTP.
    pub fn agent(&self) -> &Arc<Agent> {
        &self.agent
    }

    /// Serves the cluster API on `listener` (plain TCP, or TLS the binary wraps it in) until
    /// `shutdown` resolves. Instances keep running.
    pub async fn serve<L>(
        self,
        listener: L,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> Result<(), AgentError>
    where
        L: axum::serve::Listener,
        L::Addr: std::fmt::Debug,
    {
        let address = listener.local_addr().ok();
        let served = axum::serve(listener, self.router)
            .with_graceful_shutdown(shutdown)
            .await;
        self.tasks.cancel();
        tracing::info!(?address, "agent stopped; its instances keep running");
        served.map_err(|e| AgentError::Internal(format!("serving the cluster API: {e}")))
    }
}

/// Runs an agent for `config` on `listener` until `shutdown` resolves.
pub async fn serve(
    config: AgentConfig,
    listener: tokio::net::TcpListener,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), AgentError> {
    open(&config)?.serve(listener, shutdown).await
}

/// `drover agent`, up to serving: checks the flags (TLS or `--plain-http`), opens the agent
/// and binds its listener. The binary serves it, over TLS when the flags ask for it.
pub async fn prepare(args: &AgentArgs) -> Result<Prepared, AgentError> {
    let config = AgentConfig::from_args(args)?;
    let tls = config::tls_files(args)?;
    telemetry::init(args.log_format);
    let listener = tokio::net::TcpListener::bind(args.listen)
        .await
        .map_err(|e| AgentError::config("--listen", format!("cannot listen on {}: {e}", args.listen)))?;
    let address = listener
        .local_addr()
        .map_err(|e| AgentError::config("--listen", e.to_string()))?;
    let opened = open(&config)?;
    let kind = config.executor.as_str();
    let scheme = if tls.is_some() { "https" } else { "http" };
    println!(
        "drover agent {} listening on {scheme}://{address} (executor {kind}, id {})",
        config.name,
        opened.agent.identity().agent_id
    );
    Ok(Prepared {
        opened,
        listener,
        tls,
    })
}

/// An agent ready to serve: opened, its listener bound, and its TLS files (none with
/// `--plain-http`).
#[derive(Debug)]
pub struct Prepared {
    /// The agent.
    pub opened: Opened,
    /// Its bound listener.
    pub listener: tokio::net::TcpListener,
    /// Its certificate, key and client CA.
    pub tls: Option<config::TlsFiles>,
}
