//! Hosts of their own for tests: each host is a network namespace the test makes (`ip netns`)
//! with one interface, `eth0`, on a bridge that lives in the test process's own network
//! namespace — the test re-executes itself under `unshare --net`, as the chaos harness does —
//! and an address of a private network that exists only in those namespaces (`10.77.0.N`; the
//! test process is `10.77.0.254`). Nothing is added to the machine's own network.
//!
//! A host can be cut off (iptables drops everything on its `eth0`, both ways): it then answers
//! nothing, no reset, as a host that vanished. Dropping the [`Network`] kills what still runs in
//! its hosts and deletes their namespaces; the outer process deletes any that an inner run
//! killed before its guard ran left behind. Needs root, `ip` (iproute2), `unshare` and
//! `iptables`, which `make setup` installs.

use std::net::Ipv4Addr;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use anyhow::{bail, ensure, Context, Result};

/// Set (to the namespace prefix) in the environment of the re-executed test.
const INSIDE: &str = "DROVER_TEST_NETNS";
/// The address of the test process on the bridge.
pub const TEST_ADDR: Ipv4Addr = Ipv4Addr::new(10, 77, 0, 254);

/// True when this process runs in the network namespace its outer run made for it.
pub fn inside() -> bool {
    std::env::var_os(INSIDE).is_some()
}

/// Runs the test function `test` of the current test binary again in a new network namespace
/// and fails when it fails; afterwards deletes any host namespace the run left.
pub fn reexec_isolated(test: &str) -> Result<()> {
    ensure!(
        is_root()?,
        "{test} makes network namespaces and needs root (ip netns, iptables): run it as root, as CI does"
    );
    let prefix = format!("drt{}", std::process::id());
    let exe = std::env::current_exe().context("locating the test binary")?;
    let output = Command::new("unshare")
        .arg("--net")
        .arg("--")
        .arg(&exe)
        .args([test, "--exact", "--nocapture", "--test-threads=1"])
        .env(INSIDE, &prefix)
        .output()
        .context("running unshare (util-linux)")?;
    let leftovers = delete_namespaces(&prefix);
    // What the inner run printed, through this test's own output (captured unless it fails).
    print!("{}", String::from_utf8_lossy(&output.stdout));
    eprint!("{}", String::from_utf8_lossy(&output.stderr));
    ensure!(
        output.status.success(),
        "{test} failed in its network namespace ({})",
        output.status
    );
    leftovers
}

fn is_root() -> Result<bool> {
    let status = std::fs::read_to_string("/proc/self/status").context("reading /proc/self/status")?;
    Ok(status
        .lines()
        .find_map(|line| line.strip_prefix("Uid:"))
        .and_then(|uids| uids.split_whitespace().nth(1))
        == Some("0"))
}

/// Runs a command and fails with its stderr (the chaos harness's partitions use it too).
pub fn run(program: &str, args: &[&str]) -> Result<String> {
    let output = Command::new(program)
        .args(args)
        .output()
        .with_context(|| format!("running {program}"))?;
    if !output.status.success() {
        bail!(
            "{program} {} failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&output.stderr).trim()
        );
    }
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

/// Kills every process in the namespaces named `prefix…` and deletes them.
fn delete_namespaces(prefix: &str) -> Result<()> {
    let list = run("ip", &["netns", "list"])?;
    let names = list
        .lines()
        .filter_map(|line| line.split_whitespace().next())
        .filter(|name| name.starts_with(prefix));
    for name in names {
        delete_namespace(name)?;
    }
    Ok(())
}

fn delete_namespace(name: &str) -> Result<()> {
    // Processes keep a namespace alive: only processes the test started run in it.
    if let Ok(pids) = run("ip", &["netns", "pids", name]) {
        for pid in pids.split_whitespace() {
            let _ = Command::new("kill").args(["-KILL", pid]).status();
        }
    }
    run("ip", &["netns", "del", name]).map(drop)
}

/// The hosts of one test, on one bridge.
pub struct Network {
    names: Vec<String>,
}

impl Network {
    /// Makes `hosts` hosts, host `n` (from 1) at `10.77.0.n`, each reachable from the test
    /// process and from each other. Must run inside the namespace [`reexec_isolated`] made.
    pub fn new(hosts: u8) -> Result<Self> {
        let prefix = std::env::var(INSIDE).context("hosts need the test's own network namespace")?;
        ensure!((1..=250).contains(&hosts), "between 1 and 250 hosts");
        run("ip", &["link", "set", "lo", "up"])?;
        run("ip", &["link", "add", "br0", "type", "bridge"])?;
        run("ip", &["addr", "add", &format!("{TEST_ADDR}/24"), "dev", "br0"])?;
        run("ip", &["link", "set", "br0", "up"])?;
        let mut network = Self { names: Vec::new() };
        for n in 1..=hosts {
            let name = format!("{prefix}-h{n}");
            run("ip", &["netns", "add", &name])?;
            // Recorded at once, so the guard deletes it if a later step fails.
            network.names.push(name.clone());
            network.wire(n, &name)?;
        }
        Ok(network)
    }

    /// A veth pair: `vhN` on the bridge here, `eth0` with the host's address there.
    fn wire(&self, n: u8, name: &str) -> Result<()> {
        let port = format!("vh{n}");
        run(
            "ip",
            &[
                "link", "add", &port, "type", "veth", "peer", "name", "eth0", "netns", name,
            ],
        )?;
        run("ip", &["link", "set", &port, "master", "br0", "up"])?;
        let addr = format!("{}/24", Self::ip(n));
        run("ip", &["-n", name, "addr", "add", &addr, "dev", "eth0"])?;
        run("ip", &["-n", name, "link", "set", "eth0", "up"])?;
        run("ip", &["-n", name, "link", "set", "lo", "up"])?;
        run("ip", &["netns", "exec", name, "iptables", "-F"])
            .context("iptables is needed to cut hosts off (apt install iptables)")
            .map(drop)
    }

    /// The address of host `n`.
    pub fn ip(n: u8) -> Ipv4Addr {
        Ipv4Addr::new(10, 77, 0, n)
    }

    fn name(&self, n: u8) -> Result<&str> {
        self.names
            .get(usize::from(n).wrapping_sub(1))
            .map(String::as_str)
            .with_context(|| format!("no host {n}"))
    }

    /// `program` to be run on host `n`.
    pub fn command(&self, n: u8, program: &std::path::Path) -> Result<Command> {
        let mut command = Command::new("ip");
        command.args(["netns", "exec", self.name(n)?]).arg(program);
        Ok(command)
    }

    /// Cuts host `n` off: every packet in or out of its `eth0` is dropped, so it answers
    /// nothing (no reset, no unreachable) and hears nothing.
    pub fn cut(&self, n: u8) -> Result<()> {
        let name = self.name(n)?;
        for rule in [["INPUT", "-i"], ["OUTPUT", "-o"]] {
            let [chain, side] = rule;
            run(
                "ip",
                &[
                    "netns", "exec", name, "iptables", "-A", chain, side, "eth0", "-j", "DROP",
                ],
            )?;
        }
        Ok(())
    }

    /// Brings host `n` back.
    pub fn heal(&self, n: u8) -> Result<()> {
        let name = self.name(n)?;
        for chain in ["INPUT", "OUTPUT"] {
            run("ip", &["netns", "exec", name, "iptables", "-F", chain])?;
        }
        Ok(())
    }
}

impl Drop for Network {
    fn drop(&mut self) {
        for name in &self.names {
            if let Err(error) = delete_namespace(name) {
                eprintln!("could not delete network namespace {name}: {error}");
            }
        }
    }
}

/// A process started on a host; killed (SIGKILL) and reaped when dropped.
pub struct HostProcess {
    child: Option<Child>,
    log: std::path::PathBuf,
}

impl HostProcess {
    /// Starts `command` with its output appended to `log`.
    pub fn spawn(mut command: Command, log: std::path::PathBuf) -> Result<Self> {
        let file = std::fs::File::options().create(true).append(true).open(&log)?;
        let child = command
            .stdin(Stdio::null())
            .stdout(file.try_clone()?)
            .stderr(file)
            .spawn()
            .context("starting a process on a host")?;
        Ok(Self {
            child: Some(child),
            log,
        })
    }

    /// What it wrote so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Fails, with its log, when it has exited.
    pub fn check_running(&mut self) -> Result<()> {
        if let Some(child) = self.child.as_mut() {
            if let Some(status) = child.try_wait()? {
                self.child = None;
                bail!("exited ({status}): {}", self.log());
            }
        }
        Ok(())
    }
}

impl Drop for HostProcess {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Whether a TCP connection to `addr` is refused or answered within `within`: `false` when the
/// attempt gets no answer at all, as with a host that vanished.
pub fn answers(addr: std::net::SocketAddr, within: Duration) -> bool {
    match std::net::TcpStream::connect_timeout(&addr, within) {
        Ok(_) => true,
        Err(error) => error.kind() != std::io::ErrorKind::TimedOut,
    }
}
