//! Configuration: the `drover agent` flags ([`AgentArgs`], each with a `DROVER_AGENT_*`
//! environment twin) and the checked settings they resolve to ([`AgentConfig`]). The join token
//! comes from `--join-token-file` (an owner-only file) or `$DROVER_JOIN_TOKEN`, never a flag.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use drover_model::cluster::agent_api::Resources;

use crate::error::AgentError;
use crate::secret::JoinToken;

/// The environment variable that may hold the join token.
pub const TOKEN_ENV: &str = "DROVER_JOIN_TOKEN";

/// Which executor runs instances.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ExecutorKind {
    /// Real child processes.
    Exec,
    /// Simulated machines and instances, for tests and benchmarks of the control plane.
    Sim,
    /// Pods of container images, run by a container runtime through the CRI
    /// (`--container-runtime-endpoint`).
    Container,
}

impl ExecutorKind {
    /// Its name, as the facts report it.
    pub fn as_str(self) -> &'static str {
        match self {
            ExecutorKind::Exec => "exec",
            ExecutorKind::Sim => "sim",
            ExecutorKind::Container => "container",
        }
    }
}

/// How the agent writes its own logs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// Human-readable lines.
    Text,
    /// One JSON object a line.
    Json,
}

/// `drover agent`: run the worker-machine agent. It serves the cluster API that the control
/// plane calls and runs the instances the control plane wants here. On SIGTERM or Ctrl-C the
/// agent exits and leaves its instances running; started again, it adopts them.
#[derive(Debug, Clone, clap::Args)]
pub struct AgentArgs {
    /// Address of the cluster API.
    #[arg(long, env = "DROVER_AGENT_LISTEN", default_value = "127.0.0.1:7700")]
    pub listen: SocketAddr,
    /// Directory for the agent's state, the instances' working directories and their logs
    /// (created with mode 0700).
    #[arg(long, env = "DROVER_AGENT_DATA_DIR")]
    pub data_dir: PathBuf,
    /// The agent's name (default: the host name).
    #[arg(long, env = "DROVER_AGENT_NAME")]
    pub name: Option<String>,
    /// What runs instances.
    #[arg(long, env = "DROVER_AGENT_EXECUTOR", value_enum, default_value = "exec")]
    pub executor: ExecutorKind,
    /// File holding the join token (readable by its owner only); otherwise the token is read
    /// from $DROVER_JOIN_TOKEN.
    #[arg(long, env = "DROVER_AGENT_JOIN_TOKEN_FILE")]
    pub join_token_file: Option<PathBuf>,
    /// A label reported in the facts, `key=value`; repeatable (comma-separated in the
    /// environment).
    #[arg(long = "label", env = "DROVER_AGENT_LABELS", value_delimiter = ',')]
    pub labels: Vec<String>,
    /// CPU capacity offered to instances, in thousandths of a CPU (default: the machine's).
    #[arg(long, env = "DROVER_AGENT_CAPACITY_CPU_MILLIS")]
    pub capacity_cpu_millis: Option<u64>,
    /// Memory capacity offered to instances, in MiB (default: the machine's).
    #[arg(long, env = "DROVER_AGENT_CAPACITY_MEMORY_MIB")]
    pub capacity_memory_mib: Option<u64>,
    /// How long a stopped instance may take to exit after SIGTERM before its process group is
    /// killed (`500ms`, `5s`, `1m`).
    #[arg(long, env = "DROVER_AGENT_STOP_GRACE", default_value = "5s", value_parser = parse_duration)]
    pub stop_grace: Duration,
    /// First delay before a failed instance is started again; it doubles up to 30s and resets
    /// after 10s of running.
    #[arg(long, env = "DROVER_AGENT_RESTART_BACKOFF", default_value = "500ms", value_parser = parse_duration)]
    pub restart_backoff: Duration,
    /// Size at which an instance's log is rotated (one rotated file is kept).
    #[arg(long, env = "DROVER_AGENT_LOG_MAX_BYTES", default_value_t = 10 * 1024 * 1024)]
    pub log_max_bytes: u64,
    /// Simulated machines (sim executor).
    #[arg(long, env = "DROVER_AGENT_SIM_NODES", default_value_t = 1)]
    pub sim_nodes: u32,
    /// CPU of each simulated machine, in thousandths of a CPU.
    #[arg(long, env = "DROVER_AGENT_SIM_NODE_CPU_MILLIS", default_value_t = 4000)]
    pub sim_node_cpu_millis: u64,
    /// Memory of each simulated machine, in MiB.
    #[arg(long, env = "DROVER_AGENT_SIM_NODE_MEMORY_MIB", default_value_t = 8192)]
    pub sim_node_memory_mib: u64,
    /// How long a simulated instance takes from `starting` to `running`, in milliseconds.
    #[arg(long, env = "DROVER_AGENT_SIM_START_LATENCY_MS", default_value_t = 50)]
    pub sim_start_latency_ms: u64,
    /// Format of the agent's own logs.
    #[arg(long, env = "DROVER_AGENT_LOG_FORMAT", value_enum, default_value = "text")]
    pub log_format: LogFormat,
    /// PEM certificate chain of the cluster API; with --tls-key-file the agent serves HTTPS
    /// (and reads both files again when they change).
    #[arg(long, env = "DROVER_AGENT_TLS_CERT_FILE")]
    pub tls_cert_file: Option<PathBuf>,
    /// PEM private key of that certificate (readable by its owner only).
    #[arg(long, env = "DROVER_AGENT_TLS_KEY_FILE")]
    pub tls_key_file: Option<PathBuf>,
    /// PEM certificate(s) of a CA: only callers presenting a client certificate it signed are
    /// served (the nodes' --agent-client-cert-file).
    #[arg(long, env = "DROVER_AGENT_TLS_CLIENT_CA_FILE")]
    pub tls_client_ca_file: Option<PathBuf>,
    /// Serve plain HTTP: the join token then crosses the network in the clear. An agent without
    /// a certificate starts only with this flag.
    #[arg(long, env = "DROVER_AGENT_PLAIN_HTTP")]
    pub plain_http: bool,
    /// Memory kept for the agent and the machine, in MiB: the default capacity is the machine's
    /// less this, and the instances' cgroups together can never take it (`exec`).
    #[arg(long, env = "DROVER_AGENT_RESERVE_MEMORY_MIB", default_value_t = DEFAULT_RESERVE.memory_mib)]
    pub reserve_memory_mib: u64,
    /// CPU kept for the agent and the machine, in thousandths of a CPU (as the memory reserve).
    #[arg(long, env = "DROVER_AGENT_RESERVE_CPU_MILLIS", default_value_t = DEFAULT_RESERVE.cpu_millis)]
    pub reserve_cpu_millis: u64,
    /// Most processes and threads of one instance (its cgroup's pids limit; `exec`).
    #[arg(long, env = "DROVER_AGENT_INSTANCE_PIDS_MAX", default_value_t = DEFAULT_PIDS_MAX)]
    pub instance_pids_max: u64,
    /// The cgroup, relative to the hierarchy's root, under which the agent makes
    /// `<agent id>/<instance id>` (`exec`).
    #[arg(long, env = "DROVER_AGENT_CGROUP_PARENT", default_value = DEFAULT_CGROUP_PARENT)]
    pub cgroup_parent: String,
    /// Run `exec` instances unconfined when no cgroup can be written (the facts say so);
    /// without it such an agent does not start.
    #[arg(long, env = "DROVER_AGENT_ALLOW_UNCONFINED")]
    pub allow_unconfined: bool,
    /// The container runtime's CRI socket (`container`): a path or `unix://` and a path, as
    /// the kubelet's flag of the same name.
    #[arg(long, env = "DROVER_AGENT_CONTAINER_RUNTIME_ENDPOINT", default_value = DEFAULT_RUNTIME_ENDPOINT)]
    pub container_runtime_endpoint: String,
    /// Largest image a pod may run, in MiB of the runtime's size of it (`container`; 0: no
    /// limit): a larger one is removed after its pull and the container waits as
    /// `ErrImagePull`.
    #[arg(long, env = "DROVER_AGENT_MAX_IMAGE_MIB", default_value_t = DEFAULT_MAX_IMAGE_MIB)]
    pub max_image_mib: u64,
}

/// The default largest image, MiB.
pub const DEFAULT_MAX_IMAGE_MIB: u64 = 4096;

/// containerd's CRI socket where Debian's package puts it.
pub const DEFAULT_RUNTIME_ENDPOINT: &str = "unix:///run/containerd/containerd.sock";

/// How `container` instances reach their runtime.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContainerConfig {
    /// The runtime's CRI socket.
    pub runtime_endpoint: PathBuf,
    /// Largest image, in bytes (none: no limit).
    pub max_image_bytes: Option<u64>,
}

impl Default for ContainerConfig {
    fn default() -> Self {
        Self {
            runtime_endpoint: PathBuf::from(DEFAULT_RUNTIME_ENDPOINT.trim_start_matches("unix://")),
            max_image_bytes: Some(DEFAULT_MAX_IMAGE_MIB * 1024 * 1024),
        }
    }
}

/// Reads `--container-runtime-endpoint`: an absolute path, with or without `unix://`.
fn runtime_endpoint(text: &str) -> Result<PathBuf, AgentError> {
    let path = text.strip_prefix("unix://").unwrap_or(text);
    if path.starts_with('/') && !path.contains('\0') {
        Ok(PathBuf::from(path))
    } else {
        Err(AgentError::config(
            "--container-runtime-endpoint",
            format!("{text:?} must be the runtime's Unix socket: unix:///run/containerd/containerd.sock or /path/to.sock"),
        ))
    }
}

/// What an agent keeps for itself unless told otherwise.
pub const DEFAULT_RESERVE: Resources = Resources {
    cpu_millis: 100,
    memory_mib: 256,
};

/// Default pids limit of an instance.
pub const DEFAULT_PIDS_MAX: u64 = 1024;

/// Default cgroup parent.
pub const DEFAULT_CGROUP_PARENT: &str = "drover";

/// Where cgroup hierarchies are mounted.
pub const CGROUP_ROOT: &str = "/sys/fs/cgroup";

/// How `exec` instances are confined.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfineConfig {
    /// Where the cgroup hierarchies are mounted.
    pub root: PathBuf,
    /// The cgroup under which the agent's is made.
    pub parent: String,
    /// Most processes of one instance.
    pub pids_max: u64,
    /// Whether instances may run unconfined where cgroups cannot be written.
    pub allow_unconfined: bool,
}

impl Default for ConfineConfig {
    fn default() -> Self {
        Self {
            root: PathBuf::from(CGROUP_ROOT),
            parent: DEFAULT_CGROUP_PARENT.to_string(),
            pids_max: DEFAULT_PIDS_MAX,
            allow_unconfined: false,
        }
    }
}

/// Checks `--cgroup-parent`: a relative path of plain names.
fn check_cgroup_parent(parent: &str) -> Result<(), AgentError> {
    let plain = |part: &str| {
        !part.is_empty()
            && part != "."
            && part != ".."
            && part
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
    };
    if parent.len() <= 200 && parent.split('/').all(plain) {
        Ok(())
    } else {
        Err(AgentError::config(
            "--cgroup-parent",
            format!("{parent:?} must be a relative path of names made of letters, digits, '-', '_' and '.'"),
        ))
    }
}

/// The files of the agent's TLS.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsFiles {
    /// Certificate chain (PEM).
    pub cert: PathBuf,
    /// Its private key (PEM).
    pub key: PathBuf,
    /// The CA whose client certificates are required, if any.
    pub client_ca: Option<PathBuf>,
}

/// The agent's TLS files, when it serves HTTPS; `None` with `--plain-http`.
pub fn tls_files(args: &AgentArgs) -> Result<Option<TlsFiles>, AgentError> {
    match (&args.tls_cert_file, &args.tls_key_file, args.plain_http) {
        (Some(_), Some(_), true) => Err(AgentError::config(
            "--plain-http",
            "the agent serves HTTPS with --tls-cert-file and --tls-key-file: leave out --plain-http",
        )),
        (Some(cert), Some(key), false) => {
            crate::secret::check_private(key, "--tls-key-file")?;
            Ok(Some(TlsFiles {
                cert: cert.clone(),
                key: key.clone(),
                client_ca: args.tls_client_ca_file.clone(),
            }))
        }
        (None, None, true) if args.tls_client_ca_file.is_some() => Err(AgentError::config(
            "--tls-client-ca-file",
            "client certificates need TLS: give --tls-cert-file and --tls-key-file",
        )),
        (None, None, true) => Ok(None),
        (None, None, false) => Err(AgentError::config(
            "--tls-cert-file",
            "the agent serves HTTPS: give --tls-cert-file and --tls-key-file (or --plain-http to serve plain HTTP, with the join token in the clear)",
        )),
        _ => Err(AgentError::config(
            "--tls-cert-file",
            "--tls-cert-file and --tls-key-file go together",
        )),
    }
}

/// Parses `250ms`, `5s` or `2m`.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let (number, unit) = text
        .find(|c: char| !c.is_ascii_digit())
        .map(|at| text.split_at(at))
        .ok_or_else(|| format!("{text:?} has no unit: write e.g. 500ms, 5s or 1m"))?;
    let value: u64 = number
        .parse()
        .map_err(|_| format!("{text:?} does not start with a whole number"))?;
    match unit {
        "ms" => Ok(Duration::from_millis(value)),
        "s" => Ok(Duration::from_secs(value)),
        "m" => value
            .checked_mul(60)
            .map(Duration::from_secs)
            .ok_or_else(|| format!("{text:?} is too long")),
        _ => Err(format!("{text:?}: the unit must be ms, s or m")),
    }
}

/// The simulated machines.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SimConfig {
    /// How many.
    pub nodes: u32,
    /// Each one's capacity.
    pub node: Resources,
    /// From `starting` to `running`.
    pub start_latency: Duration,
}

impl Default for SimConfig {
    fn default() -> Self {
        Self {
            nodes: 1,
            node: Resources {
                cpu_millis: 4000,
                memory_mib: 8192,
            },
            start_latency: Duration::from_millis(50),
        }
    }
}

/// The agent's checked settings.
#[derive(Debug, Clone)]
pub struct AgentConfig {
    /// The agent's name.
    pub name: String,
    /// The data directory.
    pub data_dir: PathBuf,
    /// `exec`, or `sim` with its machines.
    pub executor: ExecutorKind,
    /// The simulated machines (used by `sim` only).
    pub sim: SimConfig,
    /// The bearer token of every `/v1` call.
    pub join_token: JoinToken,
    /// Labels reported in the facts.
    pub labels: BTreeMap<String, String>,
    /// CPU capacity, if not the machine's.
    pub capacity_cpu_millis: Option<u64>,
    /// Memory capacity, if not the machine's.
    pub capacity_memory_mib: Option<u64>,
    /// SIGTERM to SIGKILL.
    pub stop_grace: Duration,
    /// First restart delay.
    pub restart_backoff: Duration,
    /// Log rotation size.
    pub log_max_bytes: u64,
    /// What the agent keeps for itself (`exec`).
    pub reserve: Resources,
    /// How `exec` instances are confined.
    pub confine: ConfineConfig,
    /// How `container` instances reach their runtime.
    pub container: ContainerConfig,
    /// The time of day the `sim` executor stamps on what it starts (a simulation's own clock in
    /// a deterministic simulation, which must replay).
    pub wall_clock: fn() -> std::time::SystemTime,
}

impl AgentConfig {
    /// Defaults for an agent on `data_dir` with `executor` (for tests and embedding).
    pub fn new(data_dir: impl Into<PathBuf>, executor: ExecutorKind, join_token: JoinToken) -> Self {
        Self {
            name: "agent".to_string(),
            data_dir: data_dir.into(),
            executor,
            sim: SimConfig::default(),
            join_token,
            labels: BTreeMap::new(),
            capacity_cpu_millis: None,
            capacity_memory_mib: None,
            stop_grace: Duration::from_secs(5),
            restart_backoff: Duration::from_millis(500),
            log_max_bytes: 10 * 1024 * 1024,
            reserve: DEFAULT_RESERVE,
            confine: ConfineConfig::default(),
            container: ContainerConfig::default(),
            wall_clock: std::time::SystemTime::now,
        }
    }

    /// Checks the flags and reads the join token.
    pub fn from_args(args: &AgentArgs) -> Result<Self, AgentError> {
        let join_token = match &args.join_token_file {
            Some(path) => JoinToken::from_file(path, "--join-token-file")?,
            None => match std::env::var(TOKEN_ENV).ok().filter(|t| !t.is_empty()) {
                Some(text) => JoinToken::new(&text, TOKEN_ENV)?,
                None => {
                    return Err(AgentError::config(
                        "--join-token-file",
                        format!("no join token: pass --join-token-file PATH or set ${TOKEN_ENV}"),
                    ))
                }
            },
        };
        let mut labels = BTreeMap::new();
        for label in &args.labels {
            let (key, value) = label
                .split_once('=')
                .filter(|(k, _)| !k.trim().is_empty())
                .ok_or_else(|| AgentError::config("--label", format!("{label:?} is not key=value")))?;
            labels.insert(key.trim().to_string(), value.trim().to_string());
        }
        let name = match &args.name {
            Some(name) if !name.trim().is_empty() => name.trim().to_string(),
            Some(_) => return Err(AgentError::config("--name", "must not be empty")),
            None => host_name().unwrap_or_else(|| "agent".to_string()),
        };
        if args.sim_nodes == 0 {
            return Err(AgentError::config("--sim-nodes", "must be at least 1"));
        }
        if args.stop_grace > Duration::from_secs(600) {
            return Err(AgentError::config("--stop-grace", "must be at most 10m"));
        }
        if args.restart_backoff.is_zero() {
            return Err(AgentError::config("--restart-backoff", "must be more than 0"));
        }
        if args.log_max_bytes < 1024 {
            return Err(AgentError::config("--log-max-bytes", "must be at least 1024"));
        }
        check_cgroup_parent(&args.cgroup_parent)?;
        if args.instance_pids_max < 8 {
            return Err(AgentError::config("--instance-pids-max", "must be at least 8"));
        }
        Ok(Self {
            name,
            data_dir: args.data_dir.clone(),
            executor: args.executor,
            sim: SimConfig {
                nodes: args.sim_nodes,
                node: Resources {
                    cpu_millis: args.sim_node_cpu_millis,
                    memory_mib: args.sim_node_memory_mib,
                },
                start_latency: Duration::from_millis(args.sim_start_latency_ms),
            },
            join_token,
            labels,
            capacity_cpu_millis: args.capacity_cpu_millis,
            capacity_memory_mib: args.capacity_memory_mib,
            stop_grace: args.stop_grace,
            restart_backoff: args.restart_backoff,
            log_max_bytes: args.log_max_bytes,
            reserve: Resources {
                cpu_millis: args.reserve_cpu_millis,
                memory_mib: args.reserve_memory_mib,
            },
            confine: ConfineConfig {
                root: PathBuf::from(CGROUP_ROOT),
                parent: args.cgroup_parent.clone(),
                pids_max: args.instance_pids_max,
                allow_unconfined: args.allow_unconfined,
            },
            container: ContainerConfig {
                runtime_endpoint: runtime_endpoint(&args.container_runtime_endpoint)?,
                max_image_bytes: (args.max_image_mib > 0)
                    .then(|| args.max_image_mib.saturating_mul(1024 * 1024)),
            },
            wall_clock: std::time::SystemTime::now,
        })
    }
}

/// The kernel's host name.
fn host_name() -> Option<String> {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|name| name.trim().to_string())
        .filter(|name| !name.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_need_a_unit() {
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("5s"), Ok(Duration::from_secs(5)));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        assert!(parse_duration("5").is_err());
        assert!(parse_duration("5h").is_err());
        assert!(parse_duration("ms").is_err());
    }

    #[test]
    fn the_cgroup_parent_is_a_relative_path_of_names() {
        for good in ["drover", "system.slice/drover", "a_b-c"] {
            assert!(check_cgroup_parent(good).is_ok(), "{good}");
        }
        for bad in ["", "/drover", "drover/", "a/../b", "..", "a b", "a//b"] {
            assert!(check_cgroup_parent(bad).is_err(), "{bad}");
        }
    }
}
