//! Node configuration: command-line flags, then `DROVER_*` environment variables, then an
//! optional TOML file, then defaults — in that order of precedence. Everything is checked
//! before anything starts, and a bad setting is reported by name.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use clap::Args;
use drover_actors::clusters::ClusterActorsConfig;
use drover_actors::pools::PoolActorsConfig;
use drover_api::claimer::ClaimerOptions;
use drover_api::krake::KrakeOptions;
use drover_api::ApiOptions;
use drover_model::pool::{parse_duration_ms, PoolConfig};
use drover_raft::{NodeId, RaftConfig};
use serde::Deserialize;
use tokio_rustls::rustls::ServerConfig;

use crate::error::NodeError;
use crate::listen::ConnectionLimits;
use crate::platform_config::{platform_settings, PlatformArgs, PlatformFile, PlatformSettings};
pub use crate::setting::check_private;
pub(crate) use crate::setting::invalid;
use crate::tls::TlsArgs;

/// `drover serve` flags; each can also come from the environment variable it names.
#[derive(Debug, Clone, Default, Args)]
pub struct ServeArgs {
    /// TOML file with any of the settings below (flags and environment override it).
    #[arg(long, env = "DROVER_CONFIG")]
    pub config: Option<PathBuf>,
    /// This node's id, a positive integer unique in the cluster.
    #[arg(long, env = "DROVER_NODE_ID")]
    pub node_id: Option<u64>,
    /// Directory for the node's RocksDB data.
    #[arg(long, env = "DROVER_DATA_DIR")]
    pub data_dir: Option<PathBuf>,
    /// Listen address of the public API.
    #[arg(long, env = "DROVER_API_ADDR")]
    pub api_addr: Option<SocketAddr>,
    /// Listen address of the peer (Raft) listener.
    #[arg(long, env = "DROVER_PEER_ADDR")]
    pub peer_addr: Option<SocketAddr>,
    /// API address other nodes and clients should use for this node (default: --api-addr).
    #[arg(long, env = "DROVER_ADVERTISE_API_ADDR")]
    pub advertise_api_addr: Option<String>,
    /// The bootstrap members as id=peer-host:port, comma separated. Leave empty on a node that
    /// will be added at run time.
    #[arg(long, env = "DROVER_INITIAL_CLUSTER")]
    pub initial_cluster: Option<String>,
    /// Secret shared by all members, from the environment variable `DROVER_CLUSTER_SECRET` only:
    /// a secret on the command line is visible to every local user in `ps`.
    #[arg(skip = env_secret("DROVER_CLUSTER_SECRET"))]
    pub cluster_secret: Option<String>,
    /// File holding the cluster secret (readable by its owner only); peer requests without the
    /// secret are refused.
    #[arg(long, env = "DROVER_CLUSTER_SECRET_FILE")]
    pub cluster_secret_file: Option<PathBuf>,
    /// Leader heartbeat interval in milliseconds.
    #[arg(long, env = "DROVER_HEARTBEAT_MS")]
    pub heartbeat_ms: Option<u64>,
    /// Minimum election timeout in milliseconds.
    #[arg(long, env = "DROVER_ELECTION_TIMEOUT_MIN_MS")]
    pub election_timeout_min_ms: Option<u64>,
    /// Maximum election timeout in milliseconds.
    #[arg(long, env = "DROVER_ELECTION_TIMEOUT_MAX_MS")]
    pub election_timeout_max_ms: Option<u64>,
    /// Deadline of one peer RPC in milliseconds.
    #[arg(long, env = "DROVER_RPC_TIMEOUT_MS")]
    pub rpc_timeout_ms: Option<u64>,
    /// How long a client request may wait for a leader and a commit, in milliseconds.
    #[arg(long, env = "DROVER_REQUEST_TIMEOUT_MS")]
    pub request_timeout_ms: Option<u64>,
    /// Build a snapshot (and purge the log behind it) after this many entries.
    #[arg(long, env = "DROVER_SNAPSHOT_EVERY")]
    pub snapshot_every: Option<u64>,
    /// Log entries kept behind a snapshot for slow followers.
    #[arg(long, env = "DROVER_LOGS_KEPT")]
    pub logs_kept: Option<u64>,
    /// Log format: text or json.
    #[arg(long, env = "DROVER_LOG_FORMAT")]
    pub log_format: Option<String>,
    /// Boskos resources file (YAML); the leader commits it at start and whenever it changes.
    #[arg(long, env = "DROVER_POOLS")]
    pub pools: Option<PathBuf>,
    /// How often the leader's pool actors look at the pools (Go duration).
    #[arg(long, env = "DROVER_POOL_SYNC_INTERVAL")]
    pub pool_sync_interval: Option<String>,
    /// Owned resources not updated for this long are reclaimed to dirty (Go duration).
    #[arg(long, env = "DROVER_REAPER_EXPIRE")]
    pub reaper_expire: Option<String>,
    /// Shell command that cleans one dirty resource (gets DROVER_RESOURCE_NAME, _TYPE, _USERDATA).
    #[arg(long, env = "DROVER_JANITOR_COMMAND")]
    pub janitor_command: Option<String>,
    /// Most cleanups running at once per resource type.
    #[arg(long, env = "DROVER_JANITOR_CONCURRENCY")]
    pub janitor_concurrency: Option<usize>,
    /// A cleanup running longer than this is killed and counts as failed (Go duration).
    #[arg(long, env = "DROVER_JANITOR_TIMEOUT")]
    pub janitor_timeout: Option<String>,
    /// Pool type whose resources k8s-claimer clients lease.
    #[arg(long, env = "DROVER_CLAIMER_TYPE")]
    pub claimer_type: Option<String>,
    /// Token k8s-claimer clients send in Authorization, from the environment variable
    /// `DROVER_CLAIMER_AUTH_TOKEN` only (never the command line).
    #[arg(skip = env_secret("DROVER_CLAIMER_AUTH_TOKEN"))]
    pub claimer_auth_token: Option<String>,
    /// File holding the token k8s-claimer clients send in Authorization (readable by its owner
    /// only); the claimer endpoints are off without a token.
    #[arg(long, env = "DROVER_CLAIMER_AUTH_TOKEN_FILE")]
    pub claimer_auth_token_file: Option<PathBuf>,
    /// Krake's static authentication: requests to the Krake routes that carry no credential
    /// are this user (subject to Krake's RBAC). For development, as in Krake.
    #[arg(long, env = "DROVER_KRAKE_STATIC_USER")]
    pub krake_static_user: Option<String>,
    /// Requests to the Krake routes that carry no credential are `system:anonymous` (subject to
    /// Krake's RBAC) instead of `401`.
    #[arg(long, env = "DROVER_KRAKE_ALLOW_ANONYMOUS")]
    pub krake_allow_anonymous: bool,
    /// The base URL a Krake Application's instances call their `complete` and `shutdown` hooks
    /// at (Krake's `external_endpoint`); by default this node's advertised API address, with
    /// `https` when the API serves TLS.
    #[arg(long, env = "DROVER_KRAKE_HOOK_ENDPOINT")]
    pub krake_hook_endpoint: Option<String>,
    /// Origins (`https://console.example:8443`, or `*` for any) whose browser pages may call
    /// the Krake routes: CORS as Krake's server answers it. Repeat or separate with commas;
    /// none by default.
    #[arg(long, env = "DROVER_KRAKE_CORS_ORIGIN", value_delimiter = ',')]
    pub krake_cors_origin: Vec<String>,
    /// A request's headers must arrive within this (Go duration), and a keep-alive connection
    /// idle this long is closed; both listeners.
    #[arg(long, env = "DROVER_HEADER_TIMEOUT")]
    pub header_timeout: Option<String>,
    /// Most open connections per listener.
    #[arg(long, env = "DROVER_MAX_CONNECTIONS")]
    pub max_connections: Option<usize>,
    /// Most open connections from one client address, per listener.
    #[arg(long, env = "DROVER_MAX_CONNECTIONS_PER_ADDRESS")]
    pub max_connections_per_address: Option<usize>,
    /// Time between the end of one probe of a cluster's agent and the next (Go duration).
    #[arg(long, env = "DROVER_CLUSTER_PROBE_INTERVAL")]
    pub cluster_probe_interval: Option<String>,
    /// A cluster whose agent has not answered for this long, counted from its last answer, is
    /// OFFLINE as the time runs out: a probe in flight is cut short, a change being applied is
    /// awaited (up to 30s). DEGRADED before (Go duration).
    #[arg(long, env = "DROVER_CLUSTER_OFFLINE_AFTER")]
    pub cluster_offline_after: Option<String>,
    /// Least time between two moves of one service to another cluster (Go duration).
    #[arg(long, env = "DROVER_SERVICE_MIGRATION_INTERVAL")]
    pub service_migration_interval: Option<String>,
    /// How often a placed service is scored again and moved if another cluster wins, Krake's
    /// `reschedule_after` (Go duration; 0 turns it off).
    #[arg(long, env = "DROVER_SERVICE_RESCHEDULE_AFTER")]
    pub service_reschedule_after: Option<String>,
    /// How often the leader reads the metrics each cluster is scored on (Go duration).
    #[arg(long, env = "DROVER_CLUSTER_METRICS_INTERVAL")]
    pub cluster_metrics_interval: Option<String>,
    /// PEM certificate the control plane presents to agents that require client
    /// certificates (`drover agent --tls-client-ca-file`); with --agent-client-key-file.
    #[arg(long, env = "DROVER_AGENT_CLIENT_CERT_FILE")]
    pub agent_client_cert_file: Option<PathBuf>,
    /// PEM private key of that certificate (readable by its owner only).
    #[arg(long, env = "DROVER_AGENT_CLIENT_KEY_FILE")]
    pub agent_client_key_file: Option<PathBuf>,
    /// Networks (`10.1.0.0/16`), addresses or host names the control plane may call on a
    /// tenant's behalf (metrics providers' Prometheus, applications' hooks) although they are
    /// loopback, link-local, private or the nodes' own, which are refused otherwise; repeatable
    /// or comma-separated.
    #[arg(long, env = "DROVER_TENANT_EGRESS_ALLOW", value_delimiter = ',')]
    pub tenant_egress_allow: Vec<String>,
    /// Registries (`host[:port]`; `*` for any, the default) tenants' pods may pull their
    /// images from — Docker Hub's short names (`busybox`) are `docker.io`'s; the egress policy
    /// holds on registries too; repeatable or comma-separated.
    #[arg(long, env = "DROVER_IMAGE_REGISTRY_ALLOW", value_delimiter = ',')]
    pub image_registry_allow: Vec<String>,
    /// Platform API settings.
    #[command(flatten)]
    pub platform: PlatformArgs,
    /// TLS of the API listener.
    #[command(flatten)]
    pub tls: TlsArgs,
}

/// The same settings as a TOML file spells them.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileConfig {
    node_id: Option<u64>,
    data_dir: Option<PathBuf>,
    api_addr: Option<String>,
    peer_addr: Option<String>,
    advertise_api_addr: Option<String>,
    initial_cluster: Option<String>,
    cluster_secret: Option<String>,
    cluster_secret_file: Option<PathBuf>,
    heartbeat_ms: Option<u64>,
    election_timeout_min_ms: Option<u64>,
    election_timeout_max_ms: Option<u64>,
    rpc_timeout_ms: Option<u64>,
    request_timeout_ms: Option<u64>,
    snapshot_every: Option<u64>,
    logs_kept: Option<u64>,
    log_format: Option<String>,
    pools: Option<PathBuf>,
    pool_sync_interval: Option<String>,
    reaper_expire: Option<String>,
    janitor_command: Option<String>,
    janitor_concurrency: Option<usize>,
    janitor_timeout: Option<String>,
    claimer_type: Option<String>,
    claimer_auth_token: Option<String>,
    claimer_auth_token_file: Option<PathBuf>,
    krake_static_user: Option<String>,
    krake_allow_anonymous: Option<bool>,
    krake_hook_endpoint: Option<String>,
    krake_cors_origin: Option<Vec<String>>,
    header_timeout: Option<String>,
    max_connections: Option<usize>,
    max_connections_per_address: Option<usize>,
    cluster_probe_interval: Option<String>,
    cluster_offline_after: Option<String>,
    service_migration_interval: Option<String>,
    service_reschedule_after: Option<String>,
    cluster_metrics_interval: Option<String>,
    agent_client_cert_file: Option<PathBuf>,
    agent_client_key_file: Option<PathBuf>,
    tenant_egress_allow: Option<Vec<String>>,
    image_registry_allow: Option<Vec<String>>,
    platform: Option<PlatformFile>,
    api_tls_cert_file: Option<PathBuf>,
    api_tls_key_file: Option<PathBuf>,
    api_client_ca_file: Option<PathBuf>,
    peer_tls_cert_file: Option<PathBuf>,
    peer_tls_key_file: Option<PathBuf>,
    peer_tls_ca_file: Option<PathBuf>,
}

/// How logs are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogFormat {
    /// Human-readable lines.
    Text,
    /// One JSON object per line.
    Json,
}

/// A complete, checked node configuration.
#[derive(Debug, Clone)]
pub struct NodeConfig {
    /// This node's id.
    pub node_id: NodeId,
    /// RocksDB directory.
    pub data_dir: PathBuf,
    /// Public API listen address.
    pub api_addr: SocketAddr,
    /// Peer listen address.
    pub peer_addr: SocketAddr,
    /// API address advertised to others.
    pub advertise_api_addr: String,
    /// Peer address advertised to others (from the initial cluster, or the listen address).
    pub advertise_peer_addr: String,
    /// Bootstrap members.
    pub initial_cluster: BTreeMap<NodeId, String>,
    /// The cluster secret.
    pub cluster_secret: String,
    /// Raft timings and retention.
    pub raft: RaftConfig,
    /// Log format.
    pub log_format: LogFormat,
    /// The leader's pool actors.
    pub pools: PoolActorsConfig,
    /// The leader's cluster actors.
    pub clusters: ClusterActorsConfig,
    /// Least time between two moves of one service.
    pub migration_interval: std::time::Duration,
    /// How often a placed service is scored again (zero: never).
    pub reschedule_after: std::time::Duration,
    /// The k8s-claimer endpoints, when enabled.
    pub claimer: Option<ClaimerOptions>,
    /// How the Krake dialect treats callers without a credential.
    pub krake: KrakeOptions,
    /// The platform API's verifier, options and limits.
    pub platform: PlatformSettings,
    /// TLS of the API listener, when configured.
    pub api_tls: Option<Arc<ServerConfig>>,
    /// Mutual TLS between peers, when configured.
    pub peer_tls: Option<crate::tls::PeerTls>,
    /// Header deadline and connection caps of both listeners.
    pub connections: ConnectionLimits,
}

const MIN_SECRET_LEN: usize = 16;

/// The certificate and key the control plane presents to agents, when both are given.
fn client_identity(
    cert: Option<&std::path::Path>,
    key: Option<&std::path::Path>,
) -> Result<drover_actors::clusters::ClientIdentity, NodeError> {
    match (cert, key) {
        (None, None) => Ok(drover_actors::clusters::ClientIdentity::none()),
        (Some(cert), Some(key)) => {
            crate::setting::check_private(key, "agent-client-key-file")?;
            let read = |path: &std::path::Path, flag: &str| {
                std::fs::read(path).map_err(|e| invalid(flag, format!("cannot read {}: {e}", path.display())))
            };
            let mut pem = read(cert, "agent-client-cert-file")?;
            pem.push(b'\n');
            pem.extend(read(key, "agent-client-key-file")?);
            Ok(drover_actors::clusters::ClientIdentity::pem(pem))
        }
        _ => Err(invalid(
            "agent-client-cert-file",
            "--agent-client-cert-file and --agent-client-key-file go together",
        )),
    }
}

fn cluster_actors_config(args: &ServeArgs, file: &FileConfig) -> Result<ClusterActorsConfig, NodeError> {
    let defaults = ClusterActorsConfig::default();
    let probe_interval = duration(
        "cluster-probe-interval",
        args.cluster_probe_interval
            .as_deref()
            .or(file.cluster_probe_interval.as_deref()),
        defaults.probe_interval,
    )?;
    let offline_after = duration(
        "cluster-offline-after",
        args.cluster_offline_after
            .as_deref()
            .or(file.cluster_offline_after.as_deref()),
        defaults.offline_after,
    )?;
    let metrics_interval = duration(
        "cluster-metrics-interval",
        args.cluster_metrics_interval
            .as_deref()
            .or(file.cluster_metrics_interval.as_deref()),
        defaults.metrics_interval,
    )?;
    if metrics_interval.is_zero() {
        return Err(invalid("cluster-metrics-interval", "must be positive"));
    }
    if probe_interval.is_zero() || offline_after < probe_interval {
        return Err(invalid(
            "cluster-offline-after",
            "the probe interval must be positive and the offline budget at least one interval",
        ));
    }
    let client_identity = client_identity(
        args.agent_client_cert_file
            .as_deref()
            .or(file.agent_client_cert_file.as_deref()),
        args.agent_client_key_file
            .as_deref()
            .or(file.agent_client_key_file.as_deref()),
    )?;
    Ok(ClusterActorsConfig {
        probe_interval,
        client_identity,
        // A probe must give up before the next one is due, and never wait past the budget.
        probe_timeout: probe_interval
            .max(std::time::Duration::from_millis(500))
            .min(offline_after),
        offline_after,
        metrics_interval,
        ..defaults
    })
}

fn connection_limits(args: &ServeArgs, file: &FileConfig) -> Result<ConnectionLimits, NodeError> {
    let defaults = ConnectionLimits::default();
    let limits = ConnectionLimits {
        header_timeout: duration(
            "header-timeout",
            args.header_timeout.as_deref().or(file.header_timeout.as_deref()),
            defaults.header_timeout,
        )?,
        max_connections: args
            .max_connections
            .or(file.max_connections)
            .unwrap_or(defaults.max_connections),
        max_per_address: args
            .max_connections_per_address
            .or(file.max_connections_per_address)
            .unwrap_or(defaults.max_per_address),
    };
    if limits.max_connections == 0 || limits.max_per_address == 0 {
        return Err(invalid("max-connections", "connection limits must be at least 1"));
    }
    Ok(limits)
}

/// Parses `1=host:port,2=host:port`.
pub fn parse_initial_cluster(text: &str) -> Result<BTreeMap<NodeId, String>, NodeError> {
    let mut members = BTreeMap::new();
    for entry in text.split(',').map(str::trim).filter(|e| !e.is_empty()) {
        let (id, addr) = entry
            .split_once('=')
            .ok_or_else(|| invalid("initial-cluster", format!("entry {entry:?} must be id=host:port")))?;
        let id: NodeId = id.trim().parse().ok().filter(|id| *id > 0).ok_or_else(|| {
            invalid(
                "initial-cluster",
                format!("entry {entry:?}: id must be a positive integer"),
            )
        })?;
        let addr = addr.trim();
        let valid_addr = addr
            .rsplit_once(':')
            .is_some_and(|(host, port)| !host.is_empty() && port.parse::<u16>().is_ok_and(|p| p > 0));
        if !valid_addr {
            return Err(invalid(
                "initial-cluster",
                format!("entry {entry:?}: address must be host:port"),
            ));
        }
        if members.insert(id, addr.to_string()).is_some() {
            return Err(invalid("initial-cluster", format!("node id {id} appears twice")));
        }
    }
    Ok(members)
}

fn parse_addr(setting: &str, text: &str) -> Result<SocketAddr, NodeError> {
    text.parse()
        .map_err(|_| invalid(setting, format!("{text:?} is not an ip:port address")))
}

fn millis(setting: &str, value: Option<u64>, default: Duration) -> Result<Duration, NodeError> {
    match value {
        None => Ok(default),
        Some(0) => Err(invalid(setting, "must be greater than zero")),
        Some(ms) => Ok(Duration::from_millis(ms)),
    }
}

impl NodeConfig {
    /// Loads and checks the configuration from flags (already merged with the environment by
    /// clap) and the optional TOML file they name.
    pub fn load(args: &ServeArgs) -> Result<Self, NodeError> {
        let file = match &args.config {
            Some(path) => read_file_config(path)?,
            None => FileConfig::default(),
        };
        Self::merge(args, file)
    }

    fn merge(args: &ServeArgs, file: FileConfig) -> Result<Self, NodeError> {
        let connections = connection_limits(args, &file)?;
        let pools = pool_actors_config(args, &file)?;
        let mut clusters = cluster_actors_config(args, &file)?;
        let migration_interval = duration(
            "service-migration-interval",
            args.service_migration_interval
                .as_deref()
                .or(file.service_migration_interval.as_deref()),
            std::time::Duration::from_secs(60),
        )?;
        // Zero is allowed here: it turns periodic rescheduling off.
        let reschedule_after = match args
            .service_reschedule_after
            .as_deref()
            .or(file.service_reschedule_after.as_deref())
        {
            None => std::time::Duration::from_secs(60),
            Some(text) => parse_duration_ms(text)
                .map(std::time::Duration::from_millis)
                .map_err(|message| invalid("service-reschedule-after", message))?,
        };
        let claimer = claimer_options(args, &file)?;
        let mut krake = KrakeOptions {
            static_user: args.krake_static_user.clone().or(file.krake_static_user.clone()),
            allow_anonymous: args.krake_allow_anonymous || file.krake_allow_anonymous.unwrap_or(false),
            hook_endpoint: args
                .krake_hook_endpoint
                .clone()
                .or(file.krake_hook_endpoint.clone())
                .unwrap_or_default(),
            // Given the platform's settings by the API.
            allow_plain_http_agents: false,
            egress: Default::default(),
            image_registries: Default::default(),
            cors_origins: cors_origins(&args.krake_cors_origin, file.krake_cors_origin.as_deref())?,
        };
        let endpoint = &krake.hook_endpoint;
        if !(endpoint.is_empty() || endpoint.starts_with("http://") || endpoint.starts_with("https://")) {
            return Err(invalid("krake-hook-endpoint", "an http:// or https:// URL"));
        }
        if krake.static_user.as_deref().is_some_and(|u| u.trim().is_empty()) {
            return Err(invalid("krake-static-user", "must not be empty"));
        }
        let mut platform = platform_settings(&args.platform, file.platform.clone().unwrap_or_default())?;
        let api_tls = crate::tls::load(
            args.tls
                .api_tls_cert_file
                .as_deref()
                .or(file.api_tls_cert_file.as_deref()),
            args.tls
                .api_tls_key_file
                .as_deref()
                .or(file.api_tls_key_file.as_deref()),
            args.tls
                .api_client_ca_file
                .as_deref()
                .or(file.api_client_ca_file.as_deref()),
        )?;
        let peer_tls = crate::tls::load_peer(
            args.tls
                .peer_tls_cert_file
                .as_deref()
                .or(file.peer_tls_cert_file.as_deref()),
            args.tls
                .peer_tls_key_file
                .as_deref()
                .or(file.peer_tls_key_file.as_deref()),
            args.tls
                .peer_tls_ca_file
                .as_deref()
                .or(file.peer_tls_ca_file.as_deref()),
        )?;
        let node_id = args.node_id.or(file.node_id).ok_or_else(|| {
            invalid(
                "node-id",
                "is required (--node-id, DROVER_NODE_ID or node_id in the config file)",
            )
        })?;
        if node_id == 0 {
            return Err(invalid("node-id", "must be a positive integer"));
        }
        let data_dir = args.data_dir.clone().or(file.data_dir).ok_or_else(|| {
            invalid(
                "data-dir",
                "is required (--data-dir, DROVER_DATA_DIR or data_dir in the config file)",
            )
        })?;
        let api_addr = match (args.api_addr, file.api_addr) {
            (Some(addr), _) => addr,
            (None, Some(text)) => parse_addr("api-addr", &text)?,
            (None, None) => parse_addr("api-addr", "127.0.0.1:7400")?,
        };
        let peer_addr = match (args.peer_addr, file.peer_addr) {
            (Some(addr), _) => addr,
            (None, Some(text)) => parse_addr("peer-addr", &text)?,
            (None, None) => parse_addr("peer-addr", "127.0.0.1:7500")?,
        };
        let initial_cluster = parse_initial_cluster(
            args.initial_cluster
                .as_deref()
                .or(file.initial_cluster.as_deref())
                .unwrap_or(""),
        )?;
        if !initial_cluster.is_empty() && !initial_cluster.contains_key(&node_id) {
            return Err(invalid(
                "initial-cluster",
                format!(
                    "does not list this node's id {node_id}; list every bootstrap member, this one included"
                ),
            ));
        }
        let advertise_peer_addr = initial_cluster
            .get(&node_id)
            .cloned()
            .unwrap_or_else(|| peer_addr.to_string());
        let advertise_api_addr = crate::advertise::advertised_api_addr(
            args.advertise_api_addr.clone().or(file.advertise_api_addr),
            api_addr,
            initial_cluster.get(&node_id).map(String::as_str),
            peer_addr,
        )?;
        if krake.hook_endpoint.is_empty() {
            let scheme = if api_tls.is_some() { "https" } else { "http" };
            krake.hook_endpoint = format!("{scheme}://{advertise_api_addr}");
        }
        // The nodes' own addresses are refused to calls made on a tenant's behalf.
        let own: Vec<std::net::IpAddr> = initial_cluster
            .values()
            .chain([&advertise_api_addr, &advertise_peer_addr])
            .filter_map(|addr| addr.parse::<SocketAddr>().ok().map(|a| a.ip()))
            .chain([api_addr.ip(), peer_addr.ip()])
            .collect();
        let allowed = if args.tenant_egress_allow.is_empty() {
            file.tenant_egress_allow.clone().unwrap_or_default()
        } else {
            args.tenant_egress_allow.clone()
        };
        let egress = std::sync::Arc::new(
            drover_model::egress::EgressPolicy::new(&allowed, own)
                .map_err(|message| invalid("tenant-egress-allow", message))?,
        );
        clusters.egress = egress.clone();
        platform.options.registry = Some(
            crate::registry_calls::registry_calls(egress.clone())
                .map_err(|message| invalid("tenant-egress-allow", message))?,
        );
        platform.options.egress = egress;
        let registries = if args.image_registry_allow.is_empty() {
            file.image_registry_allow.clone().unwrap_or_default()
        } else {
            args.image_registry_allow.clone()
        };
        platform.options.image_registries = std::sync::Arc::new(
            drover_model::image_policy::RegistryAllow::new(&registries)
                .map_err(|message| invalid("image-registry-allow", message))?,
        );
        let cluster_secret = match (
            args.cluster_secret.clone(),
            args.cluster_secret_file.clone(),
            file.cluster_secret,
            file.cluster_secret_file,
        ) {
            (Some(secret), _, _, _) => secret,
            (None, Some(path), _, _) => read_secret(&path, "cluster-secret-file")?,
            (None, None, Some(secret), _) => secret,
            (None, None, None, Some(path)) => read_secret(&path, "cluster-secret-file")?,
            (None, None, None, None) => return Err(invalid(
                "cluster-secret",
                "is required (--cluster-secret-file, DROVER_CLUSTER_SECRET_FILE or DROVER_CLUSTER_SECRET)",
            )),
        };
        if cluster_secret.len() < MIN_SECRET_LEN {
            return Err(invalid(
                "cluster-secret",
                format!("must be at least {MIN_SECRET_LEN} characters"),
            ));
        }
        if !cluster_secret.chars().all(|c| c.is_ascii_graphic() || c == ' ') {
            return Err(invalid(
                "cluster-secret",
                "must be printable ASCII: peers send it in an HTTP header",
            ));
        }
        let defaults = RaftConfig::default();
        let raft = RaftConfig {
            heartbeat_interval: millis(
                "heartbeat-ms",
                args.heartbeat_ms.or(file.heartbeat_ms),
                defaults.heartbeat_interval,
            )?,
            election_timeout_min: millis(
                "election-timeout-min-ms",
                args.election_timeout_min_ms.or(file.election_timeout_min_ms),
                defaults.election_timeout_min,
            )?,
            election_timeout_max: millis(
                "election-timeout-max-ms",
                args.election_timeout_max_ms.or(file.election_timeout_max_ms),
                defaults.election_timeout_max,
            )?,
            rpc_timeout: millis(
                "rpc-timeout-ms",
                args.rpc_timeout_ms.or(file.rpc_timeout_ms),
                defaults.rpc_timeout,
            )?,
            request_timeout: millis(
                "request-timeout-ms",
                args.request_timeout_ms.or(file.request_timeout_ms),
                defaults.request_timeout,
            )?,
            snapshot_every_logs: args
                .snapshot_every
                .or(file.snapshot_every)
                .unwrap_or(defaults.snapshot_every_logs),
            logs_kept_after_snapshot: args
                .logs_kept
                .or(file.logs_kept)
                .unwrap_or(defaults.logs_kept_after_snapshot),
            watch_history: defaults.watch_history,
        };
        raft.validate().map_err(|e| invalid("timeouts", e.to_string()))?;
        let log_format = match args.log_format.clone().or(file.log_format.clone()).as_deref() {
            None | Some("text") => LogFormat::Text,
            Some("json") => LogFormat::Json,
            Some(other) => {
                return Err(invalid(
                    "log-format",
                    format!("must be text or json, got {other:?}"),
                ))
            }
        };
        Ok(Self {
            connections,
            pools,
            clusters,
            migration_interval,
            reschedule_after,
            claimer,
            krake,
            platform,
            api_tls,
            peer_tls,
            node_id,
            data_dir,
            api_addr,
            peer_addr,
            advertise_api_addr,
            advertise_peer_addr,
            initial_cluster,
            cluster_secret,
            raft,
            log_format,
        })
    }
}

impl NodeConfig {
    /// The settings the API needs.
    pub fn api_options(&self) -> ApiOptions {
        ApiOptions {
            claimer: self.claimer.clone(),
            verifier: self.platform.verifier.clone(),
            platform: self.platform.options.clone(),
            max_body_bytes: self.platform.max_body_bytes,
            agents: Some(crate::agent_reads::agent_reads(
                self.clusters.client_identity.clone(),
            )),
            krake: self.krake.clone(),
        }
    }
}

fn duration(setting: &str, value: Option<&str>, default: Duration) -> Result<Duration, NodeError> {
    match value {
        None => Ok(default),
        Some(text) => match parse_duration_ms(text) {
            Ok(0) => Err(invalid(setting, "must be greater than zero")),
            Ok(ms) => Ok(Duration::from_millis(ms)),
            Err(message) => Err(invalid(setting, message)),
        },
    }
}

fn pool_actors_config(args: &ServeArgs, file: &FileConfig) -> Result<PoolActorsConfig, NodeError> {
    let defaults = PoolActorsConfig::default();
    let config_file = args.pools.clone().or(file.pools.clone());
    if let Some(path) = &config_file {
        // Refuse a bad file before anything starts; later changes are checked when read.
        let text = std::fs::read_to_string(path)
            .map_err(|e| invalid("pools", format!("cannot read {}: {e}", path.display())))?;
        PoolConfig::from_yaml(&text)
            .map_err(|message| invalid("pools", format!("{}: {message}", path.display())))?;
    }
    let janitor_concurrency = args
        .janitor_concurrency
        .or(file.janitor_concurrency)
        .unwrap_or(defaults.janitor_concurrency);
    if janitor_concurrency == 0 {
        return Err(invalid("janitor-concurrency", "must be at least 1"));
    }
    Ok(PoolActorsConfig {
        config_file,
        sync_interval: duration(
            "pool-sync-interval",
            args.pool_sync_interval
                .as_deref()
                .or(file.pool_sync_interval.as_deref()),
            defaults.sync_interval,
        )?,
        reaper_expire: duration(
            "reaper-expire",
            args.reaper_expire.as_deref().or(file.reaper_expire.as_deref()),
            defaults.reaper_expire,
        )?,
        janitor_command: args
            .janitor_command
            .clone()
            .or(file.janitor_command.clone())
            .filter(|c| !c.trim().is_empty()),
        janitor_concurrency,
        janitor_timeout: duration(
            "janitor-timeout",
            args.janitor_timeout
                .as_deref()
                .or(file.janitor_timeout.as_deref()),
            defaults.janitor_timeout,
        )?,
        ..defaults
    })
}

/// `--krake-cors-origin` (else the file's): `*`, or origins as a browser sends them
/// (`scheme://host[:port]`, no path).
fn cors_origins(args: &[String], file: Option<&[String]>) -> Result<Vec<String>, NodeError> {
    let given = if args.is_empty() {
        file.unwrap_or_default()
    } else {
        args
    };
    let origins: Vec<String> = given
        .iter()
        .map(|o| o.trim().to_string())
        .filter(|o| !o.is_empty())
        .collect();
    for origin in &origins {
        let (scheme, rest) = origin.split_once("://").unwrap_or_default();
        if origin != "*" && (!matches!(scheme, "http" | "https") || rest.is_empty() || rest.contains('/')) {
            return Err(invalid(
                "krake-cors-origin",
                format!("{origin:?} is no origin: give *, or scheme://host[:port] as a browser sends it"),
            ));
        }
    }
    Ok(origins)
}

fn claimer_options(args: &ServeArgs, file: &FileConfig) -> Result<Option<ClaimerOptions>, NodeError> {
    let token = match (
        args.claimer_auth_token.clone(),
        args.claimer_auth_token_file.as_ref(),
        file.claimer_auth_token.clone(),
        file.claimer_auth_token_file.as_ref(),
    ) {
        (Some(token), _, _, _) => Some(token),
        (None, Some(path), _, _) => Some(read_secret(path, "claimer-auth-token-file")?),
        (None, None, Some(token), _) => Some(token),
        (None, None, None, Some(path)) => Some(read_secret(path, "claimer-auth-token-file")?),
        (None, None, None, None) => None,
    };
    let Some(auth_token) = token.filter(|t| !t.is_empty()) else {
        return Ok(None);
    };
    let rtype = args
        .claimer_type
        .clone()
        .or(file.claimer_type.clone())
        .unwrap_or_else(|| "k8s-cluster".into());
    Ok(Some(ClaimerOptions { rtype, auth_token }))
}

fn read_file_config(path: &Path) -> Result<FileConfig, NodeError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| invalid("config", format!("cannot read {}: {e}", path.display())))?;
    let config: FileConfig =
        toml::from_str(&text).map_err(|e| invalid("config", format!("{}: {e}", path.display())))?;
    if config.cluster_secret.is_some() || config.claimer_auth_token.is_some() {
        check_private(path, "config")?;
    }
    Ok(config)
}

/// A secret from the environment; an empty variable counts as unset.
pub fn env_secret(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|value| !value.is_empty())
}

fn read_secret(path: &Path, setting: &str) -> Result<String, NodeError> {
    check_private(path, setting)?;
    let text = std::fs::read_to_string(path)
        .map_err(|e| invalid(setting, format!("cannot read {}: {e}", path.display())))?;
    Ok(text.trim().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args() -> ServeArgs {
        ServeArgs {
            node_id: Some(1),
            data_dir: Some(PathBuf::from("/tmp/x")),
            cluster_secret: Some("0123456789abcdef".into()),
            ..Default::default()
        }
    }

    #[test]
    fn krake_cors_origins_are_origins_or_any() {
        let mut settings = args();
        settings.krake_cors_origin = vec!["https://console.example:8443".into(), " * ".into()];
        let config = NodeConfig::merge(&settings, FileConfig::default()).expect("valid");
        assert_eq!(
            config.krake.cors_origins,
            vec!["https://console.example:8443", "*"]
        );
        let file = FileConfig {
            krake_cors_origin: Some(vec!["http://ui.example".into()]),
            ..Default::default()
        };
        let config = NodeConfig::merge(&args(), file).expect("valid");
        assert_eq!(config.krake.cors_origins, vec!["http://ui.example"]);
        for bad in [
            "console.example",
            "https://ui.example/path",
            "ftp://ui.example",
            "https://",
        ] {
            settings.krake_cors_origin = vec![bad.into()];
            let error = NodeConfig::merge(&settings, FileConfig::default()).unwrap_err();
            assert!(error.to_string().contains("krake-cors-origin"), "{bad}: {error}");
        }
    }

    #[test]
    fn flags_override_the_file_and_defaults_fill_the_rest() {
        let file = FileConfig {
            node_id: Some(7),
            heartbeat_ms: Some(50),
            ..Default::default()
        };
        let config = NodeConfig::merge(&args(), file).expect("valid");
        assert_eq!(config.node_id, 1);
        assert_eq!(config.raft.heartbeat_interval, Duration::from_millis(50));
        assert_eq!(config.api_addr.to_string(), "127.0.0.1:7400");
    }

    #[test]
    fn scheduling_intervals_parse_and_zero_turns_rescheduling_off() {
        let mut settings = args();
        settings.service_reschedule_after = Some("0".into());
        settings.cluster_metrics_interval = Some("2s".into());
        let config = NodeConfig::merge(&settings, FileConfig::default()).expect("valid");
        assert_eq!(config.reschedule_after, Duration::ZERO);
        assert_eq!(config.clusters.metrics_interval, Duration::from_secs(2));
        settings.cluster_metrics_interval = Some("0s".into());
        let error = NodeConfig::merge(&settings, FileConfig::default()).unwrap_err();
        assert!(error.to_string().contains("cluster-metrics-interval"), "{error}");
        settings.cluster_metrics_interval = None;
        settings.service_reschedule_after = Some("soon".into());
        let error = NodeConfig::merge(&settings, FileConfig::default()).unwrap_err();
        assert!(error.to_string().contains("service-reschedule-after"), "{error}");
    }

    #[test]
    fn initial_cluster_errors_name_the_bad_entry() {
        let error = parse_initial_cluster("1=a:1,two=b:2").unwrap_err().to_string();
        assert!(error.contains("two=b:2"), "{error}");
        let error = parse_initial_cluster("1=a:1,1=b:2").unwrap_err().to_string();
        assert!(error.contains("twice"), "{error}");
        assert!(parse_initial_cluster("1=nohost").is_err());
        assert_eq!(parse_initial_cluster("1=a:1, 2=b:2").expect("valid").len(), 2);
    }

    #[test]
    fn missing_and_bad_settings_are_reported_by_name() {
        let mut missing = args();
        missing.node_id = None;
        assert!(NodeConfig::merge(&missing, FileConfig::default())
            .unwrap_err()
            .to_string()
            .contains("node-id"));
        let mut short = args();
        short.cluster_secret = Some("short".into());
        assert!(NodeConfig::merge(&short, FileConfig::default())
            .unwrap_err()
            .to_string()
            .contains("cluster-secret"));
        let mut unprintable = args();
        unprintable.cluster_secret = Some("0123456789abcdef\n".into());
        assert!(NodeConfig::merge(&unprintable, FileConfig::default())
            .unwrap_err()
            .to_string()
            .contains("printable ASCII"));
        let mut not_member = args();
        not_member.initial_cluster = Some("2=a:1,3=b:2".into());
        assert!(NodeConfig::merge(&not_member, FileConfig::default())
            .unwrap_err()
            .to_string()
            .contains("initial-cluster"));
        let mut bad_timing = args();
        bad_timing.election_timeout_min_ms = Some(50);
        bad_timing.heartbeat_ms = Some(100);
        assert!(NodeConfig::merge(&bad_timing, FileConfig::default()).is_err());
    }

    #[test]
    fn toml_files_with_unknown_keys_are_refused() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("drover.toml");
        std::fs::write(&path, "node_id = 2\nnode_idd = 3\n").expect("write");
        let mut with_file = args();
        with_file.config = Some(path);
        assert!(NodeConfig::load(&with_file)
            .unwrap_err()
            .to_string()
            .contains("node_idd"));
    }
}
