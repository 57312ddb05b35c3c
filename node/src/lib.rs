//! The composition root: builds a node from its configuration, serves the public API and the
//! peer listener, runs the leadership gate, and shuts everything down in order.
//!
//! Start-up: open storage → start Raft (initialising a pristine bootstrap member) → peer
//! listener → leadership gate → public API. Shutdown runs the other way: the API stops taking
//! requests and drains, the actor tree stops, Raft stops, the peer listener closes.

pub mod advertise;
pub mod agent_cmd;
pub mod agent_reads;
pub mod cli;
pub mod client_certs;
pub mod config;
pub mod error;
pub mod listen;
pub mod platform_config;
pub mod registry_calls;
pub mod setting;
pub mod systemd;
pub mod telemetry;
pub mod tls;

use std::sync::Arc;

use axum::serve::ListenerExt;
use drover_actors::clusters::{ClustersChild, Observations};
use drover_actors::krake::KrakeHooksChild;
use drover_actors::pools::PoolsChild;
use drover_actors::services::{ServiceActorsConfig, ServicesChild};
use drover_actors::{ChildSpec, GateState, LeaderGate, RestartPolicyConfig};
use drover_api::ApiState;
use drover_raft::{PeerNode, RaftHandle, StartOptions};
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

pub use config::{NodeConfig, ServeArgs};
pub use error::NodeError;

/// The two listeners of a node, bound before the node starts (tests bind port 0).
pub struct Listeners {
    /// Public API.
    pub api: TcpListener,
    /// Peer traffic.
    pub peer: TcpListener,
}

impl Listeners {
    /// Binds the configured addresses.
    pub async fn bind(config: &NodeConfig) -> Result<Self, NodeError> {
        let api = TcpListener::bind(config.api_addr)
            .await
            .map_err(|source| NodeError::Listen {
                addr: config.api_addr.to_string(),
                source,
            })?;
        let peer = TcpListener::bind(config.peer_addr)
            .await
            .map_err(|source| NodeError::Listen {
                addr: config.peer_addr.to_string(),
                source,
            })?;
        Ok(Self { api, peer })
    }
}

/// A running node.
pub struct RunningNode {
    /// The node's store handle.
    pub raft: RaftHandle,
    /// What the leadership gate reports.
    pub gate: watch::Receiver<GateState>,
    /// The node's metrics registry.
    pub registry: prometheus::Registry,
    shutdown: CancellationToken,
    task: JoinHandle<Result<(), NodeError>>,
}

impl RunningNode {
    /// Asks the node to stop and waits until it has.
    pub async fn stop(self) -> Result<(), NodeError> {
        self.shutdown.cancel();
        match self.task.await {
            Ok(result) => result,
            Err(e) => Err(NodeError::Listen {
                addr: "node task".into(),
                source: std::io::Error::other(e.to_string()),
            }),
        }
    }

    /// Waits until the node stops by itself or `signal` completes, then stops it.
    pub async fn run_until(self, signal: impl std::future::Future<Output = ()>) -> Result<(), NodeError> {
        signal.await;
        tracing::info!("shutting down");
        if let Err(error) = systemd::notify("STOPPING=1") {
            tracing::warn!(%error, "could not tell systemd the node is stopping");
        }
        self.stop().await
    }
}

/// Starts a node with the given listeners and leader-only children.
pub async fn start(
    config: NodeConfig,
    listeners: Listeners,
    children: Vec<Arc<dyn ChildSpec>>,
) -> Result<RunningNode, NodeError> {
    let registry = prometheus::Registry::new();
    let api_listen = listeners.api.local_addr().map_err(|source| NodeError::Listen {
        addr: "api".into(),
        source,
    })?;
    tracing::info!(
        node = config.node_id,
        api = %api_listen,
        advertise_api = %config.advertise_api_addr,
        peer = %config.advertise_peer_addr,
        "starting raft"
    );
    if api_listen.ip().is_unspecified() {
        tracing::info!(
            "the api listens on every address; members and clients are told {}",
            config.advertise_api_addr
        );
    }
    if config.platform.verifier.is_open() {
        tracing::warn!(
            "no token issuer and no static API token configured: the lease, Boskos, pool and \
             membership endpoints accept anyone, and the platform API refuses everyone"
        );
    }
    let raft = RaftHandle::start(
        StartOptions {
            id: config.node_id,
            node: PeerNode {
                peer_addr: config.advertise_peer_addr.clone(),
                api_addr: config.advertise_api_addr.clone(),
            },
            data_dir: config.data_dir.clone(),
            config: config.raft.clone(),
            cluster_secret: config.cluster_secret.clone(),
            initial_members: config.initial_cluster.clone(),
            // Peer connections leave from the address the peer listener is bound to (when it
            // is a specific one), so a node's traffic is attributable to it.
            peer_source_ip: Some(config.peer_addr.ip()).filter(|ip| !ip.is_unspecified()),
            peer_tls: config.peer_tls.as_ref().map(|tls| tls.client.clone()),
        },
        &registry,
    )
    .await?;

    let shutdown = CancellationToken::new();
    let peer_shutdown = CancellationToken::new();
    let peer_router = drover_raft::peer_router(raft.clone(), &config.cluster_secret);
    let limits = config.connections;
    let peer_server = match config.peer_tls.as_ref() {
        None => tokio::spawn(serve(listeners.peer, peer_router, limits, peer_shutdown.clone())),
        Some(tls) => {
            let peer_listen = listeners.peer.local_addr().map_err(|source| NodeError::Listen {
                addr: "peer".into(),
                source,
            })?;
            let listener =
                tls::TlsListener::new(listeners.peer, tls.server.clone(), false).map_err(|source| {
                    NodeError::Listen {
                        addr: peer_listen.to_string(),
                        source,
                    }
                })?;
            tokio::spawn(serve_tls(listener, peer_router, limits, peer_shutdown.clone()))
        }
    };

    tracing::info!("starting leadership gate");
    let mut children = children;
    children.insert(0, Arc::new(PoolsChild::new(config.pools.clone(), &registry)?));
    children.push(Arc::new(KrakeHooksChild::new(config.clusters.egress.clone())));
    // What the cluster actors see of their agents, shared with the service actors.
    let observations = Observations::default();
    children.insert(
        1,
        Arc::new(ClustersChild::new(
            config.clusters.clone(),
            &registry,
            observations.clone(),
        )?),
    );
    let services = ServiceActorsConfig {
        interval: config.clusters.probe_interval,
        sync_interval: config.clusters.sync_interval,
        migration_interval: config.migration_interval,
        reschedule_after: config.reschedule_after,
        ..ServiceActorsConfig::default()
    };
    children.insert(
        2,
        Arc::new(ServicesChild::new(services, &registry, observations)?),
    );
    let actors_shutdown = CancellationToken::new();
    let gate = LeaderGate::start(
        raft.clone(),
        children,
        RestartPolicyConfig::default(),
        &registry,
        actors_shutdown.clone(),
    )?;
    let gate_state = gate.state();

    tracing::info!(addr = %api_listen, "serving the public api");
    let api_state = ApiState::new(
        raft.clone(),
        registry.clone(),
        shutdown.clone(),
        config.api_options(),
    )?;
    let router = drover_api::router(api_state);
    let api_server = match config.api_tls.clone() {
        None => tokio::spawn(serve(listeners.api, router, limits, shutdown.clone())),
        Some(tls) => {
            let listener =
                tls::TlsListener::new(listeners.api, tls, true).map_err(|source| NodeError::Listen {
                    addr: api_listen.to_string(),
                    source,
                })?;
            tokio::spawn(serve_tls(listener, router, limits, shutdown.clone()))
        }
    };

    let task = tokio::spawn({
        let raft = raft.clone();
        let shutdown = shutdown.clone();
        async move {
            shutdown.cancelled().await;
            let api_result = join_server(api_server).await;
            actors_shutdown.cancel();
            gate.join().await;
            raft.shutdown().await;
            peer_shutdown.cancel();
            let peer_result = join_server(peer_server).await;
            tracing::info!("stopped");
            api_result.and(peer_result)
        }
    });
    Ok(RunningNode {
        raft,
        gate: gate_state,
        registry,
        shutdown,
        task,
    })
}

async fn serve(
    listener: TcpListener,
    router: axum::Router,
    limits: listen::ConnectionLimits,
    shutdown: CancellationToken,
) -> Result<(), NodeError> {
    // Small answers go out at once instead of waiting on Nagle's algorithm for an ACK.
    let listener = listener.tap_io(|stream| {
        if let Err(e) = stream.set_nodelay(true) {
            tracing::debug!("cannot set TCP_NODELAY on a connection: {e}");
        }
    });
    listen::serve(listener, router, limits, shutdown).await;
    Ok(())
}

async fn serve_tls(
    listener: tls::TlsListener,
    router: axum::Router,
    limits: listen::ConnectionLimits,
    shutdown: CancellationToken,
) -> Result<(), NodeError> {
    listen::serve(listener, router, limits, shutdown).await;
    Ok(())
}

async fn join_server(task: JoinHandle<Result<(), NodeError>>) -> Result<(), NodeError> {
    match task.await {
        Ok(result) => result,
        Err(e) => Err(NodeError::Listen {
            addr: "server task".into(),
            source: std::io::Error::other(e.to_string()),
        }),
    }
}

/// Resolves when the process receives SIGINT or SIGTERM.
pub async fn shutdown_signal() {
    let interrupt = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut terminate) => {
                tokio::select! {
                    _ = interrupt => {},
                    _ = terminate.recv() => {},
                }
            }
            Err(_) => {
                let _ = interrupt.await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = interrupt.await;
    }
}
