//! Separate `drover agent` processes for tests, and a typed client of their cluster API.
//!
//! [`AgentProcess`] starts `drover agent` on a free port of 127.0.0.1 with a temporary data
//! directory and the join token in an owner-only file, and waits for `/healthz`. It can be
//! killed with SIGKILL and started again on the same data directory, or frozen with SIGSTOP
//! (its listener still accepts connections, as a hung process's does, but nothing answers). Dropping it kills the
//! agent and every process group working under its `instances/` directory, so a test leaves
//! no instance behind.

use std::collections::BTreeMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};
use drover_model::cluster::agent_api::{
    DesiredSet, ExecSpec, Fence, Fenced, InstanceId, InstanceSpec, InstanceState, InstanceStatus, Inventory,
    NodeFacts, Resources, SimFaults,
};
use drover_model::cluster::identity::IdentifiedFacts;
use reqwest::{Client, Method};
use serde::de::DeserializeOwned;
use serde::Serialize;
use tempfile::TempDir;

use crate::process::drover_binary;

/// The join token every test agent uses.
pub const AGENT_TOKEN: &str = "drover-test-agent-join-token-0123456789";

/// How many times an agent start is tried on a fresh port.
const STARTUP_ATTEMPTS: usize = 3;
/// How long an agent may take to answer `/healthz`.
const STARTUP_TIMEOUT: Duration = Duration::from_secs(20);

/// A `drover agent` process.
pub struct AgentProcess {
    dir: TempDir,
    binary: PathBuf,
    args: Vec<String>,
    addr: String,
    child: Option<Child>,
    log: PathBuf,
    /// It serves HTTPS (its health is then a listening socket).
    tls: bool,
}

/// Whether `GET /healthz` at `addr` answers 200.
fn healthy(addr: &str) -> bool {
    use std::io::{Read, Write};
    let Ok(mut stream) = std::net::TcpStream::connect(addr) else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
    if stream
        .write_all(format!("GET /healthz HTTP/1.0\r\nHost: {addr}\r\n\r\n").as_bytes())
        .is_err()
    {
        return false;
    }
    let mut answer = String::new();
    let _ = stream.read_to_string(&mut answer);
    answer.starts_with("HTTP/1.1 200") || answer.starts_with("HTTP/1.0 200")
}

/// A port on 127.0.0.1 that was free a moment ago.
pub fn free_port() -> Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

/// Writes the join token into an owner-only file in `dir`.
pub fn write_token_file(dir: &Path, mode: u32) -> Result<PathBuf> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    use std::os::unix::fs::PermissionsExt;
    let path = dir.join("join-token");
    let mut file = File::options()
        .create(true)
        .truncate(true)
        .write(true)
        .mode(mode)
        .open(&path)?;
    writeln!(file, "{AGENT_TOKEN}")?;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode))?;
    Ok(path)
}

impl AgentProcess {
    /// Starts an agent with `--executor exec` and short stop grace and restart backoff.
    pub fn exec(extra: &[&str]) -> Result<Self> {
        let mut args = vec!["--executor=exec", "--stop-grace=2s", "--restart-backoff=100ms"];
        args.extend_from_slice(extra);
        Self::start(&args)
    }

    /// Starts an agent with `--executor sim` and a short restart backoff.
    pub fn sim(extra: &[&str]) -> Result<Self> {
        let mut args = vec![
            "--executor=sim",
            "--restart-backoff=100ms",
            "--sim-start-latency-ms=20",
        ];
        args.extend_from_slice(extra);
        Self::start(&args)
    }

    /// Starts an agent with `extra` flags besides its address, data directory and token file.
    pub fn start(extra: &[&str]) -> Result<Self> {
        let mut dir = TempDir::new()?;
        let token = write_token_file(dir.path(), 0o600)?;
        let binary = drover_binary()?;
        let log = dir.path().join("agent.log");
        let mut last_failure = String::new();
        for _ in 0..STARTUP_ATTEMPTS {
            let addr = format!("127.0.0.1:{}", free_port()?);
            let mut args = vec![
                "agent".to_string(),
                format!("--listen={addr}"),
                format!("--data-dir={}", dir.path().join("data").display()),
                format!("--join-token-file={}", token.display()),
                "--name=test-agent".to_string(),
            ];
            args.extend(extra.iter().map(|a| a.to_string()));
            // Plain HTTP on loopback unless the test gives the agent a certificate.
            if !extra.iter().any(|a| a.starts_with("--tls-cert-file")) {
                args.push("--plain-http".to_string());
            }
            let mut agent = Self {
                dir,
                binary: binary.clone(),
                args,
                addr,
                child: None,
                log: log.clone(),
                tls: extra.iter().any(|a| a.starts_with("--tls-cert-file")),
            };
            agent.spawn()?;
            match agent.wait_healthy() {
                Ok(()) => return Ok(agent),
                Err(e) => {
                    last_failure = e.to_string();
                    agent.kill()?;
                    // Keep the directory (and its token file) for the next attempt.
                    dir = std::mem::replace(&mut agent.dir, TempDir::new()?);
                }
            }
        }
        bail!("no agent started in {STARTUP_ATTEMPTS} attempts: {last_failure}")
    }

    fn spawn(&mut self) -> Result<()> {
        let log = File::options().create(true).append(true).open(&self.log)?;
        let child = Command::new(&self.binary)
            .args(&self.args)
            .env_remove("DROVER_JOIN_TOKEN")
            .env("RUST_LOG", "info")
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            .spawn()
            .with_context(|| format!("spawning {}", self.binary.display()))?;
        self.child = Some(child);
        Ok(())
    }

    fn wait_healthy(&mut self) -> Result<()> {
        let deadline = Instant::now() + STARTUP_TIMEOUT;
        loop {
            if let Some(child) = self.child.as_mut() {
                if let Some(status) = child.try_wait()? {
                    self.child = None;
                    return Err(anyhow!("the agent exited at start ({status}): {}", self.log()));
                }
            }
            let up = if self.tls {
                std::net::TcpStream::connect(&self.addr).is_ok()
            } else {
                healthy(&self.addr)
            };
            if up {
                return Ok(());
            }
            if Instant::now() >= deadline {
                return Err(anyhow!(
                    "the agent did not answer on {} within {STARTUP_TIMEOUT:?}",
                    self.addr
                ));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// `host:port` of its API.
    pub fn addr(&self) -> &str {
        &self.addr
    }

    /// The file it reads its join tokens from (owner-only; one token per line).
    pub fn token_file(&self) -> PathBuf {
        self.dir.path().join("join-token")
    }

    /// Its data directory.
    pub fn data_dir(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    /// The agent's pid, while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// A client that sends the join token.
    pub fn client(&self) -> AgentClient {
        AgentClient::new(&self.addr, Some(AGENT_TOKEN))
    }

    /// What the agent wrote to stdout and stderr.
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Kills the agent with SIGKILL and reaps it; its instances keep running.
    pub fn kill(&mut self) -> Result<()> {
        if let Some(mut child) = self.child.take() {
            child.kill()?;
            child.wait()?;
        }
        Ok(())
    }

    /// Stops the agent with SIGTERM and waits (with a deadline) for it to exit; its instances
    /// keep running.
    pub fn terminate(&mut self) -> Result<()> {
        let Some(mut child) = self.child.take() else {
            return Ok(());
        };
        let status = Command::new("kill")
            .args(["-TERM", &child.id().to_string()])
            .status()?;
        anyhow::ensure!(status.success(), "kill -TERM failed");
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if let Some(status) = child.try_wait()? {
                anyhow::ensure!(status.success(), "the agent exited with {status} on SIGTERM");
                return Ok(());
            }
            if Instant::now() >= deadline {
                let _ = child.kill();
                let _ = child.wait();
                bail!("the agent did not exit within 20s of SIGTERM");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Freezes the agent with SIGSTOP (`true`) or lets it go on with SIGCONT (`false`). A frozen
    /// agent's instances keep running; its API accepts connections and answers nothing.
    pub fn freeze(&self, frozen: bool) -> Result<()> {
        let pid = self.pid().context("the agent is not running")?;
        let signal = if frozen { "-STOP" } else { "-CONT" };
        let status = Command::new("kill").args([signal, &pid.to_string()]).status()?;
        anyhow::ensure!(status.success(), "kill {signal} {pid} failed");
        Ok(())
    }

    /// Starts the agent again with the same flags and data directory, and waits for it.
    pub fn restart(&mut self) -> Result<()> {
        self.kill()?;
        self.spawn()?;
        self.wait_healthy()
    }

    /// The directory of its instances' directories (an `exec` instance works in
    /// `<instances>/<id>/work`).
    pub fn instances_dir(&self) -> PathBuf {
        self.data_dir().join("instances")
    }

    /// Process groups of every live process working under the agent's `instances/`.
    pub fn instance_groups(&self) -> Vec<u32> {
        let root = self.data_dir().join("instances");
        let mut groups: Vec<u32> = processes()
            .into_iter()
            .filter(|p| p.cwd.as_deref().is_some_and(|cwd| cwd.starts_with(&root)))
            .map(|p| p.pgid)
            .collect();
        groups.sort_unstable();
        groups.dedup();
        groups
    }
}

impl Drop for AgentProcess {
    fn drop(&mut self) {
        let _ = self.kill();
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            let groups = self.instance_groups();
            if groups.is_empty() || Instant::now() >= deadline {
                break;
            }
            for group in groups {
                let _ = Command::new("kill")
                    .args(["-KILL", "--", &format!("-{group}")])
                    .stderr(Stdio::null())
                    .status();
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        remove_cgroups(&self.data_dir());
    }
}

/// Removes the cgroups an `exec` agent on `data_dir` made (its instances' and its own) once
/// they are empty, so test runs leave none behind.
pub fn remove_cgroups(data_dir: &Path) {
    let Some(agent_id) = std::fs::read_to_string(data_dir.join("state/identity.json"))
        .ok()
        .and_then(|text| serde_json::from_str::<serde_json::Value>(&text).ok())
        .and_then(|identity| identity["agent_id"].as_str().map(str::to_string))
    else {
        return;
    };
    let root = Path::new("/sys/fs/cgroup");
    let deadline = Instant::now() + Duration::from_secs(5);
    for controller in ["memory", "cpu", "cpuacct", "pids", ""] {
        let agent = root.join(controller).join("drover").join(&agent_id);
        let Ok(children) = std::fs::read_dir(&agent) else {
            continue;
        };
        let children: Vec<PathBuf> = children
            .flatten()
            .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
            .map(|e| e.path())
            .collect();
        for child in children.iter().chain(std::iter::once(&agent)) {
            // Killed processes may take a moment to be reaped.
            while std::fs::remove_dir(child).is_err()
                && std::fs::metadata(child).is_ok()
                && Instant::now() < deadline
            {
                std::thread::sleep(Duration::from_millis(20));
            }
        }
    }
}

/// One process as `/proc` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcInfo {
    /// Its pid.
    pub pid: u32,
    /// Its process group.
    pub pgid: u32,
    /// One-letter state (`Z` for a zombie).
    pub state: char,
    /// Its working directory, when readable.
    pub cwd: Option<PathBuf>,
}

/// Every process on the machine (zombies included).
pub fn processes() -> Vec<ProcInfo> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(proc_info)
        .collect()
}

/// `/proc/<pid>` of one process.
pub fn proc_info(pid: u32) -> Option<ProcInfo> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = after.split_whitespace().collect();
    Some(ProcInfo {
        pid,
        state: fields.first()?.chars().next()?,
        pgid: fields.get(2)?.parse().ok()?,
        cwd: std::fs::read_link(format!("/proc/{pid}/cwd")).ok(),
    })
}

/// Whether `pid` is a live process (not gone, not a zombie).
pub fn alive(pid: u32) -> bool {
    proc_info(pid).is_some_and(|p| p.state != 'Z' && p.state != 'X')
}

/// The NUL-separated entries of `/proc/<pid>/<file>` (`cmdline`, `environ`).
pub fn proc_strings(pid: u32, file: &str) -> Vec<String> {
    std::fs::read(format!("/proc/{pid}/{file}"))
        .map(|bytes| {
            bytes
                .split(|b| *b == 0)
                .filter(|s| !s.is_empty())
                .map(|s| String::from_utf8_lossy(s).into_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// Live (not zombie) processes working under `instances` (an `exec` agent's
/// [`AgentProcess::instances_dir`]), by the instance id their working directory names.
pub fn processes_under(instances: &Path) -> BTreeMap<String, Vec<u32>> {
    let mut found: BTreeMap<String, Vec<u32>> = BTreeMap::new();
    for process in processes() {
        if process.state == 'Z' || process.state == 'X' {
            continue;
        }
        let Some(cwd) = &process.cwd else { continue };
        let Ok(rest) = cwd.strip_prefix(instances) else {
            continue;
        };
        if let Some(id) = rest.components().next() {
            let id = id.as_os_str().to_string_lossy().into_owned();
            found.entry(id).or_default().push(process.pid);
        }
    }
    found
}

/// Live processes whose environment holds `DROVER_INSTANCE_ID=<id>`.
pub fn processes_of_instance(id: &str) -> Vec<u32> {
    let wanted = format!("DROVER_INSTANCE_ID={id}");
    processes()
        .into_iter()
        .filter(|p| p.state != 'Z' && p.state != 'X')
        .filter(|p| proc_strings(p.pid, "environ").contains(&wanted))
        .map(|p| p.pid)
        .collect()
}

/// Sends SIGKILL to one process.
pub fn kill_pid(pid: u32) -> Result<()> {
    let status = Command::new("kill").args(["-KILL", &pid.to_string()]).status()?;
    anyhow::ensure!(status.success(), "kill -KILL {pid} failed");
    Ok(())
}

/// An instance that prints `started <id>` and sleeps: one process (the shell execs `sleep`).
pub fn sleeper(id: &str) -> InstanceSpec {
    instance(
        id,
        &["sh", "-c", "echo started $DROVER_INSTANCE_ID; exec sleep 1000"],
        Resources {
            cpu_millis: 10,
            memory_mib: 8,
        },
    )
}

/// An instance `id` running `argv` with `resources`.
pub fn instance(id: &str, argv: &[&str], resources: Resources) -> InstanceSpec {
    InstanceSpec {
        id: InstanceId::parse(id).unwrap_or_else(|e| panic!("test instance id: {e}")),
        exec: ExecSpec {
            argv: argv.iter().map(|a| a.to_string()).collect(),
            probe: None,
            files: Default::default(),
            pod: None,
        },
        resources,
        env: Default::default(),
    }
}

/// A desired set sent by leader `leader` in `term`.
pub fn desired(term: u64, leader: u64, instances: Vec<InstanceSpec>) -> DesiredSet {
    DesiredSet {
        fence: Fence::new(term, leader),
        instances,
    }
}

/// A status and a body.
#[derive(Debug, Clone)]
pub struct Reply {
    /// HTTP status.
    pub status: u16,
    /// The body as text.
    pub body: String,
}

impl Reply {
    /// The body as JSON of type `T`.
    pub fn json<T: DeserializeOwned>(&self) -> Result<T> {
        serde_json::from_str(&self.body).with_context(|| format!("status {}: {}", self.status, self.body))
    }

    /// The `error` of a refusal's JSON body.
    pub fn error(&self) -> String {
        serde_json::from_str::<serde_json::Value>(&self.body)
            .ok()
            .and_then(|v| v["error"].as_str().map(str::to_string))
            .unwrap_or_default()
    }

    /// The body as `T` when the status is 2xx; an error naming status and body otherwise.
    pub fn ok<T: DeserializeOwned>(&self) -> Result<T> {
        if !(200..300).contains(&self.status) {
            bail!("status {}: {}", self.status, self.body);
        }
        self.json()
    }
}

/// A client of one agent's cluster API.
#[derive(Clone)]
pub struct AgentClient {
    http: Client,
    base: String,
    token: Option<String>,
}

impl AgentClient {
    /// A client of the agent at `addr` sending `token` as its bearer token, if any.
    pub fn new(addr: &str, token: Option<&str>) -> Self {
        Self {
            http: Client::builder()
                .timeout(Duration::from_secs(30))
                .build()
                .unwrap_or_default(),
            base: format!("http://{addr}"),
            token: token.map(str::to_string),
        }
    }

    /// The same agent with another token (or none).
    pub fn with_token(&self, token: Option<&str>) -> Self {
        Self {
            token: token.map(str::to_string),
            ..self.clone()
        }
    }

    /// Any call: `method` on `path` with an optional JSON body.
    pub async fn call<B: Serialize>(&self, method: Method, path: &str, body: Option<&B>) -> Result<Reply> {
        let mut request = self.http.request(method, format!("{}{path}", self.base));
        if let Some(token) = &self.token {
            request = request.bearer_auth(token);
        }
        if let Some(body) = body {
            request = request.json(body);
        }
        let response = request.send().await.with_context(|| format!("calling {path}"))?;
        let status = response.status().as_u16();
        let body = response.text().await.context("reading the body")?;
        Ok(Reply { status, body })
    }

    /// `GET path`.
    pub async fn get(&self, path: &str) -> Result<Reply> {
        self.call::<()>(Method::GET, path, None).await
    }

    /// `PUT /v1/sets/{set}`.
    pub async fn put_set(&self, set: &str, desired: &DesiredSet) -> Result<Reply> {
        self.call(Method::PUT, &format!("/v1/sets/{set}"), Some(desired))
            .await
    }

    /// `GET /v1/inventory`, which must succeed.
    pub async fn inventory(&self) -> Result<Inventory> {
        self.get("/v1/inventory").await?.ok()
    }

    /// The instances whose id starts with `prefix` (a set's, a role's), or `None` when the
    /// agent does not answer.
    pub async fn instances_with_prefix(&self, prefix: &str) -> Option<Vec<InstanceStatus>> {
        let inventory = self.inventory().await.ok()?;
        Some(
            inventory
                .instances
                .into_iter()
                .filter(|i| i.id.as_str().starts_with(prefix))
                .collect(),
        )
    }

    /// Turns the `sim` agent's `unreachable` fault on or off (every other call then answers
    /// `503`, as a cut-off agent would not answer at all).
    pub async fn set_unreachable(&self, unreachable: bool) -> Result<()> {
        let body = serde_json::json!({ "unreachable": unreachable });
        let answer = self.call(Method::PUT, "/v1/sim/faults", Some(&body)).await?;
        if answer.status != 200 {
            bail!("setting unreachable={unreachable}: {answer:?}");
        }
        Ok(())
    }

    /// The inventory once the (`exec`) agent runs exactly `count` instances of `set`, each
    /// running with a pid, waiting up to `timeout`.
    pub async fn running_set(&self, set: &str, count: usize, timeout: Duration) -> Result<Inventory> {
        crate::wait::eventually(
            timeout,
            &format!("{count} running instances of {set}"),
            || async {
                let inventory = self.inventory().await.ok()?;
                let mine: Vec<_> = inventory
                    .instances
                    .iter()
                    .filter(|i| i.set.as_str() == set)
                    .collect();
                (mine.len() == count
                    && mine
                        .iter()
                        .all(|i| i.state == InstanceState::Running && i.pid.is_some()))
                .then_some(inventory)
            },
        )
        .await
    }

    /// One instance of the inventory, if there.
    pub async fn instance(&self, id: &str) -> Result<Option<InstanceStatus>> {
        Ok(self
            .inventory()
            .await?
            .instances
            .into_iter()
            .find(|i| i.id.as_str() == id))
    }

    /// `GET /v1/facts`, which must succeed.
    pub async fn facts(&self) -> Result<NodeFacts> {
        self.get("/v1/facts").await?.ok()
    }

    /// `GET /v1/facts` with the agent's id and the cluster object it is bound to, which must
    /// succeed.
    pub async fn identified_facts(&self) -> Result<IdentifiedFacts> {
        self.get("/v1/facts").await?.ok()
    }

    /// `POST /v1/instances/{id}/restart`.
    pub async fn restart(&self, id: &str, fence: Fence) -> Result<Reply> {
        self.call(
            Method::POST,
            &format!("/v1/instances/{id}/restart"),
            Some(&Fenced { fence }),
        )
        .await
    }

    /// `GET /v1/instances/{id}/logs?{query}`.
    pub async fn logs(&self, id: &str, query: &str) -> Result<Reply> {
        self.get(&format!("/v1/instances/{id}/logs?{query}")).await
    }

    /// `PUT /v1/sim/faults`.
    pub async fn faults(&self, faults: &SimFaults) -> Result<Reply> {
        self.call(Method::PUT, "/v1/sim/faults", Some(faults)).await
    }
}
