//! Clusters of separate `drover serve` processes, for tests where a crash matters: a node is
//! killed with SIGKILL and restarted with the same flags. Dropping the cluster kills every
//! process it started.

use std::collections::BTreeMap;
use std::fs::File;
use std::net::{IpAddr, Ipv4Addr};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use anyhow::{anyhow, Context, Result};
use serde_json::Value;
use tempfile::TempDir;

use crate::client::LeaseClient;
use crate::wait::eventually;
use crate::TEST_SECRET;

/// Finds the `drover` binary: `$DROVER_BIN`, or next to the test executable's `deps/` folder.
pub fn drover_binary() -> Result<PathBuf> {
    if let Ok(path) = std::env::var("DROVER_BIN") {
        return Ok(PathBuf::from(path));
    }
    // Test executables live in `target/<profile>/deps/`, binaries in `target/<profile>/`.
    let exe = std::env::current_exe()?;
    let folder = exe
        .parent()
        .ok_or_else(|| anyhow!("cannot locate the folder of {}", exe.display()))?;
    let candidates = [
        Some(folder.join("drover")),
        folder.parent().map(|profile| profile.join("drover")),
    ];
    candidates
        .into_iter()
        .flatten()
        .find(|path| path.is_file())
        .ok_or_else(|| {
            anyhow!(
                "no drover binary near {}: build it with `cargo build -p drover-node` or set DROVER_BIN",
                exe.display()
            )
        })
}

/// How many times a cluster start is tried on fresh ports.
const STARTUP_ATTEMPTS: usize = 3;
/// How long a node may take to open its API listener.
const STARTUP_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(20);

/// The `/metrics` text of the node whose API listens at `addr`.
pub async fn metrics_text(addr: &str) -> Result<String> {
    Ok(reqwest::Client::builder()
        .no_proxy()
        .build()?
        .get(format!("http://{addr}/metrics"))
        .send()
        .await?
        .text()
        .await?)
}

/// The value of an unlabelled counter or gauge `name` in the `/metrics` of the node whose API
/// listens at `addr` (0 when the node does not report it yet).
pub async fn scraped(addr: &str, name: &str) -> Result<u64> {
    Ok(gauge_in(&metrics_text(addr).await?, name))
}

/// The value of an unlabelled counter or gauge `name` in a `/metrics` text (0 when absent).
pub fn gauge_in(text: &str, name: &str) -> u64 {
    let prefix = format!("{name} ");
    text.lines()
        .find_map(|line| line.strip_prefix(&prefix)?.parse::<f64>().ok())
        .map_or(0, |value| value as u64)
}

/// The sum of every series of counter or gauge `name` (all its labels) on a node's `/metrics`.
pub async fn scraped_sum(addr: &str, name: &str) -> Result<f64> {
    let text = metrics_text(addr).await?;
    Ok(text
        .lines()
        .filter(|line| {
            line.strip_prefix(name)
                .is_some_and(|rest| rest.starts_with(' ') || rest.starts_with('{'))
        })
        .filter_map(|line| line.rsplit(' ').next()?.parse::<f64>().ok())
        .sum())
}

/// Finds two free ports on each of `hosts`. Every listener stays bound until all are found, so
/// the kernel cannot hand the same port out twice; the children bind them a moment later.
pub fn free_ports(hosts: &[IpAddr]) -> Result<Vec<(u16, u16)>> {
    let listeners = hosts
        .iter()
        .map(|host| {
            let api = std::net::TcpListener::bind((*host, 0))?;
            let peer = std::net::TcpListener::bind((*host, 0))?;
            Ok((api, peer))
        })
        .collect::<std::io::Result<Vec<_>>>()?;
    listeners
        .iter()
        .map(|(api, peer)| Ok((api.local_addr()?.port(), peer.local_addr()?.port())))
        .collect()
}

/// Where the nodes of a cluster listen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hosts {
    /// Every node on 127.0.0.1.
    Shared,
    /// Node `n` on 127.0.0.(10 + n), so that its traffic can be told apart (and cut) by
    /// address; clients stay on 127.0.0.1.
    Separate,
}

impl Hosts {
    /// The address node `id` listens on.
    pub fn of(self, id: u64) -> IpAddr {
        match self {
            Hosts::Shared => Ipv4Addr::LOCALHOST.into(),
            Hosts::Separate => Ipv4Addr::new(127, 0, 0, 10 + id as u8).into(),
        }
    }
}

/// True when the server at `api` says, through `GET /cluster`, that it is node `id`.
fn answers_as(api: &str, id: u64) -> bool {
    use std::io::{Read, Write};
    let Ok(mut stream) = std::net::TcpStream::connect(api) else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
    if stream
        .write_all(format!("GET /cluster HTTP/1.0\r\nHost: {api}\r\n\r\n").as_bytes())
        .is_err()
    {
        return false;
    }
    let mut answer = String::new();
    if stream.read_to_string(&mut answer).is_err() {
        return false;
    }
    answer
        .split_once("\r\n\r\n")
        .and_then(|(_, body)| serde_json::from_str::<Value>(body).ok())
        .is_some_and(|body| body["self"].as_u64() == Some(id))
}

struct ProcessNode {
    api: String,
    peer: String,
    args: Vec<String>,
    /// Extra environment for the next start (for example a faked clock).
    env: Vec<(String, String)>,
    child: Option<Child>,
    log: PathBuf,
}

/// A cluster of `drover` processes on loopback.
pub struct ProcessCluster {
    /// The nodes' data and logs, deleted with the cluster.
    dir: TempDir,
    binary: PathBuf,
    nodes: BTreeMap<u64, ProcessNode>,
    hosts: Hosts,
    /// Flags every node gets beyond its addresses.
    extra: Vec<String>,
}

impl ProcessCluster {
    /// Starts `size` bootstrap members.
    pub fn start(size: u64) -> Result<Self> {
        Self::start_with_args(size, &[])
    }

    /// Starts `size` bootstrap members with the harness's timings plus extra `drover serve` flags.
    pub fn start_with_args(size: u64, extra: &[String]) -> Result<Self> {
        let mut args: Vec<String> = [
            "--heartbeat-ms=100",
            "--election-timeout-min-ms=500",
            "--election-timeout-max-ms=1000",
            "--request-timeout-ms=5000",
        ]
        .into_iter()
        .map(str::to_string)
        .collect();
        args.extend(extra.iter().cloned());
        Self::start_with_exact_args(size, &args)
    }

    /// Starts `size` bootstrap members with only the flags a cluster needs plus `extra`: every
    /// timing is the binary's default unless `extra` sets it.
    ///
    /// Ports are found free and then bound by the children a moment later, so another test can
    /// take one in between; a cluster whose node could not start is discarded and started again
    /// on fresh ports.
    pub fn start_with_exact_args(size: u64, extra: &[String]) -> Result<Self> {
        Self::start_on(size, extra, Hosts::Shared)
    }

    /// Like [`ProcessCluster::start_with_exact_args`], with the nodes on `hosts`.
    pub fn start_on(size: u64, extra: &[String], hosts: Hosts) -> Result<Self> {
        let mut last_failure = String::new();
        for _ in 0..STARTUP_ATTEMPTS {
            let mut cluster = Self::spawn_all(size, extra, hosts)?;
            match cluster.wait_listening() {
                Ok(()) => return Ok(cluster),
                Err(e) => last_failure = e.to_string(),
            }
        }
        Err(anyhow!(
            "no cluster started in {STARTUP_ATTEMPTS} attempts: {last_failure}"
        ))
    }

    /// Waits until every node answers on its API address as itself, or one has exited. Asking
    /// for its id (not just connecting) catches a port another process took first.
    fn wait_listening(&mut self) -> Result<()> {
        let deadline = std::time::Instant::now() + STARTUP_TIMEOUT;
        for (id, node) in self.nodes.iter_mut() {
            loop {
                if let Some(child) = node.child.as_mut() {
                    if let Some(status) = child.try_wait()? {
                        let log = std::fs::read_to_string(&node.log).unwrap_or_default();
                        return Err(anyhow!("node {id} exited at start ({status}): {log}"));
                    }
                }
                if answers_as(&node.api, *id) {
                    break;
                }
                if std::time::Instant::now() >= deadline {
                    return Err(anyhow!(
                        "node {id} did not listen on {} within {STARTUP_TIMEOUT:?}",
                        node.api
                    ));
                }
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
        }
        Ok(())
    }

    fn spawn_all(size: u64, extra: &[String], hosts: Hosts) -> Result<Self> {
        let dir = TempDir::new()?;
        let binary = drover_binary()?;
        let ids: Vec<u64> = (1..=size).collect();
        let addresses: Vec<IpAddr> = ids.iter().map(|id| hosts.of(*id)).collect();
        let free = free_ports(&addresses)?;
        let listen: BTreeMap<u64, (String, String)> = ids
            .iter()
            .zip(addresses.iter().zip(free))
            .map(|(id, (host, (api, peer)))| (*id, (format!("{host}:{api}"), format!("{host}:{peer}"))))
            .collect();
        let initial = listen
            .iter()
            .map(|(id, (_, peer))| format!("{id}={peer}"))
            .collect::<Vec<_>>()
            .join(",");
        let mut cluster = Self {
            dir,
            binary,
            nodes: BTreeMap::new(),
            hosts,
            extra: extra.to_vec(),
        };
        for (id, (api, peer)) in listen {
            cluster.define(id, api, peer, Some(&initial));
        }
        let ids: Vec<u64> = cluster.nodes.keys().copied().collect();
        for id in ids {
            cluster.spawn(id)?;
        }
        Ok(cluster)
    }

    /// Records node `id`'s flags; `initial` is the bootstrap membership, `None` for a node that
    /// waits to be added.
    fn define(&mut self, id: u64, api: String, peer: String, initial: Option<&str>) {
        let mut args = vec![
            "serve".to_string(),
            format!("--node-id={id}"),
            format!("--data-dir={}", self.data_dir(id).display()),
            format!("--api-addr={api}"),
            format!("--peer-addr={peer}"),
        ];
        if let Some(initial) = initial {
            args.push(format!("--initial-cluster={initial}"));
        }
        args.extend(self.extra.iter().cloned());
        let log = self.dir.path().join(format!("node-{id}.log"));
        self.nodes.insert(
            id,
            ProcessNode {
                api,
                peer,
                args,
                env: Vec::new(),
                child: None,
                log,
            },
        );
    }

    /// Where node `id` keeps its data.
    pub fn data_dir(&self, id: u64) -> PathBuf {
        self.dir.path().join(format!("node-{id}"))
    }

    /// Starts a new node that is no member yet (add it through `/cluster/members`); returns
    /// its id.
    pub fn spawn_joiner(&mut self) -> Result<u64> {
        let id = self.nodes.keys().max().copied().unwrap_or(0) + 1;
        let host = self.hosts.of(id);
        let (api, peer) = free_ports(&[host])?[0];
        self.define(id, format!("{host}:{api}"), format!("{host}:{peer}"), None);
        self.spawn(id)?;
        Ok(id)
    }

    fn spawn(&mut self, id: u64) -> Result<()> {
        let node = self.nodes.get_mut(&id).ok_or_else(|| anyhow!("no node {id}"))?;
        let log = File::options().create(true).append(true).open(&node.log)?;
        let child = Command::new(&self.binary)
            .args(&node.args)
            // The secret travels in the environment, never on the command line (`ps` shows it).
            .env("DROVER_CLUSTER_SECRET", TEST_SECRET)
            .envs(node.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            .spawn()
            .with_context(|| format!("spawning {}", self.binary.display()))?;
        node.child = Some(child);
        Ok(())
    }

    /// API address of a node.
    pub fn api_addr(&self, id: u64) -> String {
        self.nodes.get(&id).map(|n| n.api.clone()).unwrap_or_default()
    }

    /// Peer address of a node.
    pub fn peer_addr(&self, id: u64) -> String {
        self.nodes.get(&id).map(|n| n.peer.clone()).unwrap_or_default()
    }

    /// A Boskos client bound to a node.
    pub fn boskos(&self, id: u64) -> crate::boskos::BoskosClient {
        crate::boskos::BoskosClient::new(&self.api_addr(id))
    }

    /// A lease client bound to a node.
    pub fn client(&self, id: u64) -> LeaseClient {
        LeaseClient::new(&self.api_addr(id))
    }

    /// Ids of the nodes that are running.
    pub fn running_ids(&self) -> Vec<u64> {
        self.nodes
            .iter()
            .filter(|(_, n)| n.child.is_some())
            .map(|(id, _)| *id)
            .collect()
    }

    /// Process ids of the running nodes.
    pub fn running_pids(&self) -> Vec<u32> {
        self.nodes
            .values()
            .filter_map(|n| n.child.as_ref().map(Child::id))
            .collect()
    }

    /// Process id of node `id`, while it runs.
    pub fn pid_of(&self, id: u64) -> Option<u32> {
        self.nodes.get(&id)?.child.as_ref().map(Child::id)
    }

    /// Kills a node with SIGKILL and reaps it.
    pub fn kill(&mut self, id: u64) -> Result<()> {
        let node = self.nodes.get_mut(&id).ok_or_else(|| anyhow!("no node {id}"))?;
        if let Some(mut child) = node.child.take() {
            child.kill()?;
            child.wait()?;
        }
        Ok(())
    }

    /// Stops a node the way a rolling restart does: SIGTERM, then waits (up to 20 s) for it to
    /// exit cleanly; SIGKILL and an error if it does not.
    pub fn terminate(&mut self, id: u64) -> Result<()> {
        let node = self.nodes.get_mut(&id).ok_or_else(|| anyhow!("no node {id}"))?;
        let Some(mut child) = node.child.take() else {
            return Ok(());
        };
        let status = Command::new("kill")
            .args(["-TERM", &child.id().to_string()])
            .status()?;
        anyhow::ensure!(status.success(), "kill -TERM of node {id} failed");
        let deadline = std::time::Instant::now() + Duration::from_secs(20);
        loop {
            if let Some(status) = child.try_wait()? {
                anyhow::ensure!(status.success(), "node {id} exited with {status} on SIGTERM");
                return Ok(());
            }
            if std::time::Instant::now() >= deadline {
                let _ = child.kill();
                let _ = child.wait();
                anyhow::bail!("node {id} did not exit within 20 s of SIGTERM");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Sends SIGSTOP (`pause = true`) or SIGCONT to a running node.
    pub fn pause(&mut self, id: u64, pause: bool) -> Result<()> {
        let node = self.nodes.get(&id).ok_or_else(|| anyhow!("no node {id}"))?;
        let Some(pid) = node.child.as_ref().map(Child::id) else {
            return Ok(());
        };
        let signal = if pause { "-STOP" } else { "-CONT" };
        let status = Command::new("kill").arg(signal).arg(pid.to_string()).status()?;
        anyhow::ensure!(status.success(), "kill {signal} {pid} failed");
        Ok(())
    }

    /// Restarts a killed node with exactly the same flags (and no extra environment).
    pub fn restart(&mut self, id: u64) -> Result<()> {
        self.restart_with_env(id, &[])
    }

    /// Restarts a killed node with the same flags and `env` added to its environment.
    pub fn restart_with_env(&mut self, id: u64, env: &[(&str, &str)]) -> Result<()> {
        let node = self.nodes.get_mut(&id).ok_or_else(|| anyhow!("no node {id}"))?;
        node.env = env.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        self.spawn(id)
    }

    /// The log a node wrote, for failure messages.
    pub fn log_of(&self, id: u64) -> String {
        self.nodes
            .get(&id)
            .and_then(|n| std::fs::read_to_string(&n.log).ok())
            .unwrap_or_default()
    }

    /// Waits until every running node reports the same leader through `/cluster`, and returns it.
    pub async fn leader(&self, timeout: Duration) -> Result<u64> {
        let ids = self.running_ids();
        eventually(timeout, "the running nodes to agree on a leader", || async {
            let mut seen = None;
            for id in &ids {
                let (status, body) = self.client(*id).get_path("/cluster").await.ok()?;
                if !status.is_success() {
                    return None;
                }
                let body: Value = serde_json::from_str(&body).ok()?;
                let leader = body["leader"].as_u64()?;
                if !ids.contains(&leader) || seen.is_some_and(|s| s != leader) {
                    return None;
                }
                seen = Some(leader);
            }
            seen
        })
        .await
    }
}

impl Drop for ProcessCluster {
    fn drop(&mut self) {
        for node in self.nodes.values_mut() {
            if let Some(mut child) = node.child.take() {
                // A paused process must be resumed to die promptly after SIGKILL is reaped.
                let _ = Command::new("kill")
                    .arg("-CONT")
                    .arg(child.id().to_string())
                    .status();
                let _ = child.kill();
                let _ = child.wait();
            }
        }
    }
}
