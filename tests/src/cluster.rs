//! In-process clusters: every node runs in the test's own runtime, on its own ports and data
//! directory.

use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{anyhow, Context, Result};
use drover_actors::pools::PoolActorsConfig;
use drover_api::axebow::rate::RateLimit;
use drover_api::claimer::ClaimerOptions;
use drover_node::config::{LogFormat, NodeConfig};
use drover_node::tls::ServerConfig;
use drover_node::{start, Listeners, RunningNode};
use drover_raft::RaftConfig;
use tempfile::TempDir;
use tokio::net::TcpListener;

use crate::client::LeaseClient;
use crate::platform::{open_platform_settings, test_platform_settings, PlatformClient};
use crate::wait::eventually;
use crate::TEST_SECRET;

/// Timings for tests: quick elections, still well above the heartbeat on a busy machine.
pub fn test_raft_config() -> RaftConfig {
    RaftConfig {
        heartbeat_interval: Duration::from_millis(100),
        election_timeout_min: Duration::from_millis(500),
        election_timeout_max: Duration::from_millis(1000),
        rpc_timeout: Duration::from_millis(1000),
        request_timeout: Duration::from_secs(5),
        ..RaftConfig::default()
    }
}

/// Everything a test can vary about its cluster.
#[derive(Clone, Default)]
pub struct ClusterOptions {
    /// Raft timings; [`test_raft_config`] when `None`.
    pub raft: Option<RaftConfig>,
    /// The leader's pool actors.
    pub pools: PoolActorsConfig,
    /// The k8s-claimer endpoints.
    pub claimer: Option<ClaimerOptions>,
    /// The platform API's rate limit (the default when `None`).
    pub rate_limit: Option<RateLimit>,
    /// Configure the test issuer and static tokens ([`crate::platform`]): the platform API
    /// works and the other dialects need credentials. Without, they run open.
    pub credentials: bool,
    /// Serve the API over TLS with this configuration ([`crate::tls::self_signed`]).
    pub api_tls: Option<Arc<ServerConfig>>,
    /// Largest request body (the test settings' 64 KiB when `None`).
    pub max_body_bytes: Option<usize>,
    /// Header deadline and connection caps (the defaults when `None`).
    pub connections: Option<drover_node::listen::ConnectionLimits>,
    /// The leader's cluster actors (the defaults when `None`).
    pub clusters: Option<drover_actors::clusters::ClusterActorsConfig>,
    /// Least time between two moves of one service (60 s when `None`).
    pub migration_interval: Option<std::time::Duration>,
    /// How often a placed service is scored again (60 s when `None`).
    pub reschedule_after: Option<std::time::Duration>,
    /// How the Krake dialect treats callers without a credential.
    pub krake: drover_api::krake::KrakeOptions,
    /// Bootstrap members left stopped at the start (start them with [`TestCluster::restart`]).
    pub absent: BTreeSet<u64>,
}

impl ClusterOptions {
    /// Default options with credentials configured.
    pub fn with_credentials() -> Self {
        Self {
            credentials: true,
            ..Self::default()
        }
    }
}

/// One member of a [`TestCluster`].
pub struct TestNode {
    /// Its config (kept to restart it the same way).
    pub config: NodeConfig,
    /// The running node, `None` while stopped.
    pub running: Option<RunningNode>,
}

/// A cluster of in-process nodes.
pub struct TestCluster {
    /// Members by id.
    pub nodes: BTreeMap<u64, TestNode>,
    options: ClusterOptions,
    raft: RaftConfig,
    dir: TempDir,
}

async fn bind_pair() -> Result<(TcpListener, TcpListener)> {
    Ok((
        TcpListener::bind("127.0.0.1:0").await?,
        TcpListener::bind("127.0.0.1:0").await?,
    ))
}

fn config_for(
    id: u64,
    dir: PathBuf,
    api: SocketAddr,
    peer: SocketAddr,
    initial: BTreeMap<u64, String>,
    raft: RaftConfig,
    options: &ClusterOptions,
) -> NodeConfig {
    NodeConfig {
        node_id: id,
        data_dir: dir,
        api_addr: api,
        peer_addr: peer,
        advertise_api_addr: api.to_string(),
        advertise_peer_addr: peer.to_string(),
        initial_cluster: initial,
        cluster_secret: TEST_SECRET.to_string(),
        raft,
        log_format: LogFormat::Text,
        pools: options.pools.clone(),
        clusters: drover_actors::clusters::ClusterActorsConfig {
            egress: crate::platform::loopback_egress(),
            ..options.clusters.clone().unwrap_or_default()
        },
        migration_interval: options
            .migration_interval
            .unwrap_or(std::time::Duration::from_secs(60)),
        reschedule_after: options
            .reschedule_after
            .unwrap_or(std::time::Duration::from_secs(60)),
        claimer: options.claimer.clone(),
        krake: options.krake.clone(),
        api_tls: options.api_tls.clone(),
        peer_tls: None,
        connections: options.connections.unwrap_or_default(),
        platform: {
            let mut settings = if options.credentials {
                test_platform_settings(options.rate_limit.unwrap_or_default())
            } else {
                open_platform_settings()
            };
            settings.max_body_bytes = options.max_body_bytes.unwrap_or(settings.max_body_bytes);
            settings
        },
    }
}

impl TestCluster {
    /// Starts `size` bootstrap members with the test timings.
    pub async fn start(size: u64) -> Result<Self> {
        Self::start_with(size, test_raft_config()).await
    }

    /// Starts `size` bootstrap members with the given Raft settings.
    pub async fn start_with(size: u64, raft: RaftConfig) -> Result<Self> {
        Self::start_with_options(
            size,
            ClusterOptions {
                raft: Some(raft),
                ..ClusterOptions::default()
            },
        )
        .await
    }

    /// Starts `size` bootstrap members with the given options.
    pub async fn start_with_options(size: u64, options: ClusterOptions) -> Result<Self> {
        let raft = options.raft.clone().unwrap_or_else(test_raft_config);
        if std::env::var_os("DROVER_TEST_LOG").is_some() {
            drover_node::telemetry::init(LogFormat::Text, 0);
        }
        let dir = TempDir::new()?;
        let mut listeners = BTreeMap::new();
        for id in 1..=size {
            listeners.insert(id, bind_pair().await?);
        }
        let initial: BTreeMap<u64, String> = listeners
            .iter()
            .map(|(id, (_, peer))| Ok((*id, peer.local_addr()?.to_string())))
            .collect::<Result<_>>()?;
        let mut nodes = BTreeMap::new();
        for (id, (api, peer)) in listeners {
            let absent = options.absent.contains(&id);
            let config = config_for(
                id,
                dir.path().join(format!("node-{id}")),
                api.local_addr()?,
                peer.local_addr()?,
                initial.clone(),
                raft.clone(),
                &options,
            );
            let running = if absent {
                None
            } else {
                Some(start(config.clone(), Listeners { api, peer }, Vec::new()).await?)
            };
            nodes.insert(id, TestNode { config, running });
        }
        Ok(Self {
            nodes,
            options,
            raft,
            dir,
        })
    }

    /// The API address of a node.
    pub fn api_addr(&self, id: u64) -> String {
        self.nodes
            .get(&id)
            .map(|n| n.config.api_addr.to_string())
            .unwrap_or_default()
    }

    /// A lease client bound to a node.
    pub fn client(&self, id: u64) -> LeaseClient {
        LeaseClient::new(&self.api_addr(id))
    }

    /// A platform API client of node `id` sending `token`.
    pub fn platform(&self, id: u64, token: Option<String>) -> PlatformClient {
        PlatformClient::new(&self.api_addr(id), token)
    }

    /// A Boskos client of node `id`.
    pub fn boskos(&self, id: u64) -> crate::boskos::BoskosClient {
        crate::boskos::BoskosClient::new(&self.api_addr(id))
    }

    /// Ids of the running members.
    pub fn running_ids(&self) -> Vec<u64> {
        self.nodes
            .iter()
            .filter(|(_, n)| n.running.is_some())
            .map(|(id, _)| *id)
            .collect()
    }

    /// Waits until every running node agrees on one running leader, and returns it.
    pub async fn leader(&self, timeout: Duration) -> Result<u64> {
        eventually(timeout, "all running nodes to agree on a leader", || async {
            let mut leaders = self
                .nodes
                .values()
                .filter_map(|n| n.running.as_ref())
                .map(|n| n.raft.leadership().borrow().leader);
            let first = leaders.next()??;
            let running = self.nodes.get(&first).is_some_and(|n| n.running.is_some());
            (running && leaders.all(|l| l == Some(first))).then_some(first)
        })
        .await
    }

    /// The running node with `id`.
    pub fn node(&self, id: u64) -> Result<&RunningNode> {
        self.nodes
            .get(&id)
            .and_then(|n| n.running.as_ref())
            .ok_or_else(|| anyhow!("node {id} is not running"))
    }

    /// Stops a node gracefully.
    pub async fn stop(&mut self, id: u64) -> Result<()> {
        let node = self.nodes.get_mut(&id).ok_or_else(|| anyhow!("no node {id}"))?;
        if let Some(running) = node.running.take() {
            running.stop().await.context("stopping node")?;
        }
        Ok(())
    }

    /// Restarts a stopped node with the same configuration, ports and data.
    pub async fn restart(&mut self, id: u64) -> Result<()> {
        let node = self.nodes.get_mut(&id).ok_or_else(|| anyhow!("no node {id}"))?;
        let api = TcpListener::bind(node.config.api_addr).await?;
        let peer = TcpListener::bind(node.config.peer_addr).await?;
        node.running = Some(start(node.config.clone(), Listeners { api, peer }, Vec::new()).await?);
        Ok(())
    }

    /// Starts a new, empty node that is not yet a member, and returns its id.
    pub async fn start_joiner(&mut self) -> Result<u64> {
        let id = self.nodes.keys().max().copied().unwrap_or(0) + 1;
        let (api, peer) = bind_pair().await?;
        let config = config_for(
            id,
            self.dir.path().join(format!("node-{id}")),
            api.local_addr()?,
            peer.local_addr()?,
            BTreeMap::new(),
            self.raft.clone(),
            &self.options,
        );
        let running = start(config.clone(), Listeners { api, peer }, Vec::new()).await?;
        self.nodes.insert(
            id,
            TestNode {
                config,
                running: Some(running),
            },
        );
        Ok(id)
    }

    /// Stops every node.
    pub async fn shutdown(mut self) -> Result<()> {
        let ids: Vec<u64> = self.nodes.keys().copied().collect();
        for id in ids {
            self.stop(id).await?;
        }
        Ok(())
    }
}
