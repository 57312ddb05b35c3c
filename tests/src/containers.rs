//! Container runtimes for tests, built from Debian's files with no network: OCI images of
//! `busybox-static` made with `umoci` ([`Layout`], [`ImageSpec`]), a `docker-registry` on a free
//! loopback port, optionally with TLS and basic auth ([`Registry`]), and a containerd of the
//! test's own ([`Containerd`]): own root, state, sockets and runc root, the sandbox ("pause")
//! image in a plain registry started for it, a `certs.d` hosts file for each registry it is told
//! about, and a CNI bridge network with a name, bridge and 10.x subnet unique to it.
//!
//! What its CRI plugin needs on these machines (containerd 1.6, runc, cgroup v1, root):
//! `restrict_oom_score_adj` (root may not lower a sandbox's `oom_score_adj`), no AppArmor, the
//! cgroupfs driver, the bridge in hairpin mode only (not with promiscuous mode), a TLS registry's
//! CA both in its `[host]` section and at the top of `hosts.toml` (the plugin falls back to
//! `server` after a 404), and the sandbox image in a registry that needs no credentials.
//! Credentials are never in its configuration: the CRI passes them with each pull.
//!
//! Ground truth comes from containerd's own CLI, `ctr`, in the CRI's namespace `k8s.io`.
//! Dropping a [`Containerd`] leaves the machine as it found it: its containers, shims, mounts,
//! network namespaces, bridge, nat rules, CNI state and pod cgroups are removed, and only those
//! (everything is recognised by names, paths and a subnet unique to the instance). A fixture
//! whose test process died without dropping it is swept by the next one to start.
//!
//! Everything here is synchronous (it runs commands); calling it from an async test blocks that
//! test's runtime thread briefly, as the other process fixtures of this crate do. Needs root and
//! the Debian packages [`PACKAGES`] names; [`require`] panics naming what is missing.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::hash::{Hash, Hasher};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use anyhow::{bail, ensure, Context, Result};
use tempfile::TempDir;

use crate::agent::free_port;
use crate::tls::Authority;

/// The namespace containerd's CRI plugin keeps its containers, images and snapshots in.
pub const NAMESPACE: &str = "k8s.io";
/// The programs (and the Debian package of each) that the fixtures run.
pub const PACKAGES: &[(&str, &str)] = &[
    ("containerd", "containerd"),
    ("ctr", "containerd"),
    ("containerd-shim-runc-v2", "containerd"),
    ("runc", "runc"),
    ("docker-registry", "docker-registry"),
    ("skopeo", "skopeo"),
    ("umoci", "umoci"),
    ("htpasswd", "apache2-utils"),
    ("ip", "iproute2"),
    ("iptables", "iptables"),
    ("unshare", "util-linux"),
];
/// The static busybox every image is made of (Debian's `busybox-static`).
const BUSYBOX: &str = "/bin/busybox";
/// The CNI plugins the network uses (Debian's `containernetworking-plugins`).
const CNI_BIN: &str = "/usr/lib/cni";
const CNI_PLUGINS: &[&str] = &["bridge", "host-local", "portmap", "loopback"];
/// The name of the CNI configuration file.
const CONFLIST: &str = "10-drover-test.conflist";
/// The busybox applets linked in `/bin` of every image.
pub const APPLETS: &[&str] = &[
    "sh", "httpd", "sleep", "cat", "echo", "wget", "true", "false", "ls", "env", "ps", "kill", "mkdir", "rm",
    "head", "dd", "id", "pwd", "nc", "grep", "date", "touch", "test", "hostname", "ip", "ifconfig", "yes",
    "seq", "uname",
];
/// Where host-local keeps its leases and libcni its cached results.
const CNI_STATE: &str = "/var/lib/cni";
/// Where network namespaces named by `ip netns` live (containerd's default place too).
const NETNS_DIR: &str = "/var/run/netns";
/// Where containerd 1.6's shims make their sockets, whatever containerd's state dir.
const SHIM_SOCKETS: &str = "/run/containerd/s/";
/// The directory holding [`SHIM_SOCKETS`], made by the first shim when missing.
const SHIM_SOCKET_PARENT: &str = "/run/containerd";
/// The root of the cgroup hierarchies (v1 here: one directory per controller).
const CGROUP_ROOT: &str = "/sys/fs/cgroup";
/// How long a process (registry, containerd) may take to start answering.
const START_TIMEOUT: Duration = Duration::from_secs(30);
/// How long one `ctr`, `skopeo` or `umoci` command may take.
const COMMAND_TIMEOUT: Duration = Duration::from_secs(60);
/// How often conditions are polled.
const POLL: Duration = Duration::from_millis(50);

/// What is missing on this machine for the container fixtures: not root, a program or a CNI
/// plugin absent (each with its Debian package). Empty when everything is there.
pub fn missing_prerequisites() -> Vec<String> {
    let mut missing = Vec::new();
    if !is_root() {
        missing.push("root (containerd, runc, CNI and cgroups need it)".to_string());
    }
    for (program, package) in PACKAGES {
        if which(program).is_none() {
            missing.push(format!("`{program}` (Debian package {package})"));
        }
    }
    if !is_static_elf(Path::new(BUSYBOX)) {
        missing.push(format!("a static {BUSYBOX} (Debian package busybox-static)"));
    }
    for plugin in CNI_PLUGINS {
        if !Path::new(CNI_BIN).join(plugin).is_file() {
            missing.push(format!(
                "{CNI_BIN}/{plugin} (Debian package containernetworking-plugins)"
            ));
        }
    }
    missing
}

/// Panics, naming each missing piece, unless this machine can run the container fixtures: a
/// container test never passes silently without them.
pub fn require() {
    let missing = missing_prerequisites();
    assert!(
        missing.is_empty(),
        "this container test cannot run here, missing: {} — run `make setup` as root",
        missing.join(", ")
    );
}

/// True when `path` is a 64-bit ELF program with no interpreter (a static one, which runs in an
/// image that has no C library).
fn is_static_elf(path: &Path) -> bool {
    const PT_INTERP: u32 = 3;
    let Ok(bytes) = std::fs::read(path) else {
        return false;
    };
    let number = |at: usize, len: usize| -> Option<u64> {
        let field = bytes.get(at..at + len)?;
        Some(field.iter().rev().fold(0u64, |n, b| (n << 8) | u64::from(*b)))
    };
    if bytes.get(..5) != Some(b"\x7fELF\x02") {
        return false;
    }
    let (Some(offset), Some(size), Some(count)) = (number(0x20, 8), number(0x36, 2), number(0x38, 2)) else {
        return false;
    };
    (0..count).all(|i| {
        usize::try_from(offset + i * size)
            .ok()
            .and_then(|at| number(at, 4))
            .is_some_and(|kind| kind != u64::from(PT_INTERP))
    })
}

fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find_map(|line| line.strip_prefix("Uid:"))
                .and_then(|uids| uids.split_whitespace().nth(1).map(|uid| uid == "0"))
        })
        .unwrap_or(false)
}

/// The path of `program` in `PATH` (or the sbin directories, which a non-login root may lack).
fn which(program: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(["/usr/sbin", "/sbin", "/usr/bin", "/bin"].map(PathBuf::from))
        .map(|dir| dir.join(program))
        .find(|candidate| candidate.is_file())
}

/// Runs `command` to its end within `timeout` (killed after it), failing with its words when it
/// exits non-zero.
fn run(command: &mut Command, timeout: Duration) -> Result<String> {
    let output = output_within(command, timeout)?;
    if !output.status.success() {
        bail!(
            "{command:?} failed ({}): {}{}",
            output.status,
            String::from_utf8_lossy(&output.stderr).trim(),
            String::from_utf8_lossy(&output.stdout).trim()
        );
    }
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

/// Runs `command` within `timeout` and returns what it printed, whatever its exit status.
fn output_within(command: &mut Command, timeout: Duration) -> Result<Output> {
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .with_context(|| format!("starting {command:?}"))?;
    let readers = [
        child.stdout.take().map(|out| drain(Box::new(out))),
        child.stderr.take().map(|err| drain(Box::new(err))),
    ];
    let deadline = Instant::now() + timeout;
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break status;
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            bail!("{command:?} did not finish within {timeout:?}");
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let [stdout, stderr] =
        readers.map(|reader| reader.and_then(|handle| handle.join().ok()).unwrap_or_default());
    Ok(Output {
        status,
        stdout,
        stderr,
    })
}

/// Reads a pipe to its end on a thread of its own, so that a full pipe never blocks the child.
fn drain(mut pipe: Box<dyn Read + Send>) -> std::thread::JoinHandle<Vec<u8>> {
    std::thread::spawn(move || {
        let mut bytes = Vec::new();
        let _ = pipe.read_to_end(&mut bytes);
        bytes
    })
}

/// Polls `check` until it holds, or fails after `timeout` naming `what`.
fn wait_until(timeout: Duration, what: &str, mut check: impl FnMut() -> Result<bool>) -> Result<()> {
    let deadline = Instant::now() + timeout;
    loop {
        if check()? {
            return Ok(());
        }
        if Instant::now() >= deadline {
            bail!("timed out after {timeout:?} waiting for {what}");
        }
        std::thread::sleep(POLL);
    }
}

/// Sends `signal` (`KILL`, `TERM`) to process `pid`; a process already gone is not an error.
fn signal(pid: u32, signal: &str) {
    let _ = Command::new("kill")
        .args([format!("-{signal}"), pid.to_string()])
        .stderr(Stdio::null())
        .status();
}

/// Whether `path` exists; true when that cannot be told (so a cleanup tries, and a check of
/// leftovers reports it).
fn present(path: &Path) -> bool {
    path.try_exists().unwrap_or(true)
}

/// True while process `pid` exists and is not a zombie.
fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|stat| {
            // The state follows the command name, which is in parentheses and may hold spaces.
            stat.rsplit_once(')')
                .and_then(|(_, rest)| rest.split_whitespace().next())
                .is_some_and(|state| state != "Z" && state != "X")
        })
        .unwrap_or(false)
}

// ---------------------------------------------------------------------------------------------
// Images

/// What an image built by [`Layout::build`] holds and runs: `/bin/busybox` with links for
/// [`APPLETS`], `/etc/passwd` and `/etc/group` naming root, `/tmp`, and `PATH=/bin`, plus what is
/// set here.
#[derive(Clone, Debug, Default)]
pub struct ImageSpec {
    /// The image's `Entrypoint` (none when empty).
    pub entrypoint: Vec<String>,
    /// The image's `Cmd` (none when empty).
    pub cmd: Vec<String>,
    /// Variables set in the image's environment, after `PATH=/bin`.
    pub env: Vec<(String, String)>,
    /// The image's working directory (created in the image).
    pub workdir: Option<String>,
    /// Extra files: absolute path in the image, content, mode.
    pub files: Vec<(String, Vec<u8>, u32)>,
    /// MiB of random (incompressible) bytes in `/filler`, to make an image large.
    pub random_mib: u64,
}

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|item| item.to_string()).collect()
}

impl ImageSpec {
    /// A busybox image whose default command is `cmd` (e.g. `["sleep", "3600"]`).
    pub fn busybox(cmd: &[&str]) -> Self {
        Self {
            cmd: strings(cmd),
            ..Self::default()
        }
    }

    /// A web server: busybox `httpd` in the foreground on `port`, serving `/www`, whose
    /// `/index.html` is `index` (so two tags of it can be told apart by what they answer).
    pub fn httpd(port: u16, index: &str) -> Self {
        Self::busybox(&["httpd", "-f", "-p", &port.to_string(), "-h", "/www"]).file(
            "/www/index.html",
            index.as_bytes(),
            0o644,
        )
    }

    /// The sandbox ("pause") image: a shell as PID 1 that sleeps forever, reaps its children
    /// (a shell waits for them) and exits 0 at once on SIGTERM or SIGINT.
    pub fn pause() -> Self {
        Self {
            entrypoint: strings(&[
                "/bin/sh",
                "-c",
                "trap 'exit 0' TERM INT; while :; do sleep 3600 & wait $!; done",
            ]),
            ..Self::default()
        }
    }

    /// Sets the entrypoint.
    pub fn entrypoint(mut self, entrypoint: &[&str]) -> Self {
        self.entrypoint = strings(entrypoint);
        self
    }

    /// Adds an environment variable.
    pub fn env(mut self, name: &str, value: &str) -> Self {
        self.env.push((name.to_string(), value.to_string()));
        self
    }

    /// Sets the working directory.
    pub fn workdir(mut self, dir: &str) -> Self {
        self.workdir = Some(dir.to_string());
        self
    }

    /// Adds a file at absolute path `path` with `content` and `mode`.
    pub fn file(mut self, path: &str, content: &[u8], mode: u32) -> Self {
        self.files.push((path.to_string(), content.to_vec(), mode));
        self
    }

    /// Adds `mib` MiB of random bytes in `/filler` (for size limits; the layer does not compress).
    pub fn random_mib(mut self, mib: u64) -> Self {
        self.random_mib = mib;
        self
    }
}

/// An OCI image layout in a temporary directory, holding any number of tags built with
/// [`Layout::build`]; pushed with [`Registry::push`]. Removed when dropped.
pub struct Layout {
    dir: TempDir,
}

impl Layout {
    /// An empty layout (`umoci init`).
    pub fn new() -> Result<Self> {
        let dir = TempDir::new()?;
        let layout = Self { dir };
        run(
            Command::new("umoci")
                .args(["init", "--layout"])
                .arg(layout.path()),
            COMMAND_TIMEOUT,
        )?;
        Ok(layout)
    }

    /// The layout's directory.
    pub fn path(&self) -> PathBuf {
        self.dir.path().join("oci")
    }

    /// `oci:DIR:TAG`, the transport reference of `tag` for skopeo.
    pub fn source(&self, tag: &str) -> String {
        format!("oci:{}:{tag}", self.path().display())
    }

    /// The bytes a pull of `tag` downloads: its manifest's config and (compressed) layers.
    pub fn size(&self, tag: &str) -> Result<u64> {
        let read = |digest: &str| -> Result<serde_json::Value> {
            let hex = digest.strip_prefix("sha256:").context("a sha256 digest")?;
            let blob = self.path().join("blobs/sha256").join(hex);
            Ok(serde_json::from_slice(&std::fs::read(blob)?)?)
        };
        let index: serde_json::Value =
            serde_json::from_slice(&std::fs::read(self.path().join("index.json"))?)?;
        let entry = index["manifests"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|m| m["annotations"]["org.opencontainers.image.ref.name"] == tag)
            .with_context(|| format!("no tag {tag} in the layout"))?;
        let manifest = read(entry["digest"].as_str().unwrap_or_default())?;
        let layers = manifest["layers"].as_array().into_iter().flatten();
        Ok(layers
            .chain([&manifest["config"]])
            .filter_map(|d| d["size"].as_u64())
            .sum())
    }

    /// Builds `tag` from `spec` (replacing any earlier `tag`): a fresh image, its root
    /// filesystem written, repacked as one layer, then its configuration set.
    pub fn build(&self, tag: &str, spec: &ImageSpec) -> Result<()> {
        ensure!(
            !tag.is_empty()
                && tag
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "._-".contains(c)),
            "an image tag is letters, digits, '.', '_' and '-': {tag:?}"
        );
        let image = format!("{}:{tag}", self.path().display());
        let bundle = self.dir.path().join(format!("bundle-{tag}"));
        if bundle.try_exists()? {
            std::fs::remove_dir_all(&bundle)?;
        }
        run(
            Command::new("umoci").args(["new", "--image", &image]),
            COMMAND_TIMEOUT,
        )?;
        run(
            Command::new("umoci")
                .args(["unpack", "--image", &image])
                .arg(&bundle),
            COMMAND_TIMEOUT,
        )?;
        write_rootfs(&bundle.join("rootfs"), spec)?;
        run(
            Command::new("umoci")
                .args(["repack", "--image", &image])
                .arg(&bundle),
            COMMAND_TIMEOUT,
        )?;
        std::fs::remove_dir_all(&bundle)?;
        run(
            Command::new("umoci").args(config_args(&image, spec)),
            COMMAND_TIMEOUT,
        )?;
        Ok(())
    }
}

/// Writes busybox, its links, the base files and `spec`'s files into `rootfs`.
fn write_rootfs(rootfs: &Path, spec: &ImageSpec) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    for dir in ["bin", "etc", "tmp", "www"] {
        std::fs::create_dir_all(rootfs.join(dir))?;
    }
    std::fs::set_permissions(rootfs.join("tmp"), std::fs::Permissions::from_mode(0o1777))?;
    std::fs::copy(BUSYBOX, rootfs.join("bin/busybox")).context("copying busybox")?;
    for applet in APPLETS {
        std::os::unix::fs::symlink("busybox", rootfs.join("bin").join(applet))?;
    }
    std::fs::write(rootfs.join("etc/passwd"), "root:x:0:0:root:/root:/bin/sh\n")?;
    std::fs::write(rootfs.join("etc/group"), "root:x:0:\n")?;
    if let Some(workdir) = &spec.workdir {
        std::fs::create_dir_all(inside(rootfs, workdir)?)?;
    }
    for (path, content, mode) in &spec.files {
        let target = inside(rootfs, path)?;
        if let Some(parent) = target.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::write(&target, content)?;
        std::fs::set_permissions(&target, std::fs::Permissions::from_mode(*mode))?;
    }
    if spec.random_mib > 0 {
        write_random(&rootfs.join("filler"), spec.random_mib)?;
    }
    Ok(())
}

/// `path` (absolute, without `..`) under `rootfs`.
fn inside(rootfs: &Path, path: &str) -> Result<PathBuf> {
    ensure!(
        path.starts_with('/') && !path.split('/').any(|part| part == ".."),
        "a path in an image is absolute and has no '..': {path:?}"
    );
    Ok(rootfs.join(path.trim_start_matches('/')))
}

fn write_random(path: &Path, mib: u64) -> Result<()> {
    let mut source = std::fs::File::open("/dev/urandom")?;
    let mut target = std::fs::File::create(path)?;
    let mut chunk = vec![0u8; 1 << 20];
    for _ in 0..mib {
        source.read_exact(&mut chunk)?;
        target.write_all(&chunk)?;
    }
    Ok(())
}

/// `umoci config` arguments setting `spec`'s entrypoint, command, environment and workdir.
fn config_args(image: &str, spec: &ImageSpec) -> Vec<String> {
    let mut args = strings(&["config", "--image", image, "--config.env", "PATH=/bin"]);
    for (name, value) in &spec.env {
        args.extend(["--config.env".to_string(), format!("{name}={value}")]);
    }
    for part in &spec.entrypoint {
        args.extend(["--config.entrypoint".to_string(), part.clone()]);
    }
    for part in &spec.cmd {
        args.extend(["--config.cmd".to_string(), part.clone()]);
    }
    if let Some(workdir) = &spec.workdir {
        args.extend(["--config.workingdir".to_string(), workdir.clone()]);
    }
    args
}

// ---------------------------------------------------------------------------------------------
// Registry

/// How a [`Registry`] is reached.
#[derive(Clone, Debug, Default)]
pub struct RegistryOptions {
    /// Serve HTTPS with a certificate for 127.0.0.1 signed by a CA of the registry's own.
    pub tls: bool,
    /// Require basic auth with this user and password (bcrypt htpasswd file).
    pub auth: Option<(String, String)>,
}

/// What [`Registry::push`] pushed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pushed {
    /// `127.0.0.1:PORT/NAME:TAG`.
    pub reference: String,
    /// The manifest's digest, `sha256:…`.
    pub digest: String,
}

impl Pushed {
    /// `127.0.0.1:PORT/NAME@sha256:…`: the image pinned to what was pushed.
    pub fn pinned(&self) -> String {
        let repository = match self.reference.rsplit_once(':') {
            Some((repository, tag)) if !tag.contains('/') => repository,
            _ => &self.reference,
        };
        format!("{repository}@{}", self.digest)
    }
}

/// A `docker-registry` (distribution 2.8) on a free port of 127.0.0.1 with its own storage;
/// can be stopped and started again on the same port and storage; killed when dropped.
pub struct Registry {
    dir: TempDir,
    port: u16,
    child: Option<Child>,
    options: RegistryOptions,
}

impl Registry {
    /// A plain-HTTP registry that needs no credentials.
    pub fn start_plain() -> Result<Self> {
        Self::start(RegistryOptions::default())
    }

    /// An HTTPS registry that needs `user` and `password`.
    pub fn start_secure(user: &str, password: &str) -> Result<Self> {
        Self::start(RegistryOptions {
            tls: true,
            auth: Some((user.to_string(), password.to_string())),
        })
    }

    /// Starts one with `options` and waits until it accepts connections.
    pub fn start(options: RegistryOptions) -> Result<Self> {
        sweep_stale_fixtures();
        let dir = TempDir::new()?;
        std::fs::write(dir.path().join(OWNER_FILE), owner_record(None).to_string())?;
        let port = free_port()?;
        let mut registry = Self {
            dir,
            port,
            child: None,
            options,
        };
        registry.write_config()?;
        registry.spawn()?;
        Ok(registry)
    }

    fn write_config(&self) -> Result<()> {
        let dir = self.dir.path();
        let mut config = format!(
            "version: 0.1\nlog:\n  level: info\nstorage:\n  filesystem:\n    rootdirectory: {}\n  delete:\n    enabled: true\nhttp:\n  addr: 127.0.0.1:{}\n  secret: drover-test-registry\n",
            dir.join("storage").display(),
            self.port
        );
        if self.options.tls {
            let authority = Authority::new("drover test registry CA")?;
            authority.issue(
                dir,
                "registry",
                &["127.0.0.1"],
                &[],
                vec![rcgen::ExtendedKeyUsagePurpose::ServerAuth],
            )?;
            std::fs::write(dir.join("ca.pem"), authority.cert.pem())?;
            // skopeo's --cert-dir takes CAs as *.crt.
            std::fs::create_dir_all(dir.join("certs"))?;
            std::fs::write(dir.join("certs/ca.crt"), authority.cert.pem())?;
            let _ = writeln!(
                config,
                "  tls:\n    certificate: {}\n    key: {}",
                dir.join("registry.pem").display(),
                dir.join("registry-key.pem").display()
            );
        }
        if let Some((user, password)) = &self.options.auth {
            let entry = run(
                Command::new("htpasswd").args(["-nbB", user, password]),
                COMMAND_TIMEOUT,
            )?;
            std::fs::write(dir.join("htpasswd"), entry.trim())?;
            let _ = writeln!(
                config,
                "auth:\n  htpasswd:\n    realm: drover-test\n    path: {}",
                dir.join("htpasswd").display()
            );
        }
        std::fs::write(dir.join("config.yml"), config)?;
        Ok(())
    }

    fn spawn(&mut self) -> Result<()> {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.log_path())?;
        let child = Command::new("docker-registry")
            .arg("serve")
            .arg(self.dir.path().join("config.yml"))
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            .spawn()
            .context("starting docker-registry")?;
        self.child = Some(child);
        let port = self.port;
        let result = wait_until(START_TIMEOUT, "the registry to accept connections", || {
            if let Some(status) = self.child.as_mut().and_then(|c| c.try_wait().ok().flatten()) {
                bail!("docker-registry exited at start ({status}): {}", self.log());
            }
            Ok(std::net::TcpStream::connect(("127.0.0.1", port)).is_ok())
        });
        if result.is_err() {
            self.kill();
        }
        result
    }

    fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Kills it (the port stops answering); its storage stays for [`Registry::start_again`].
    pub fn stop(&mut self) {
        self.kill();
    }

    /// Starts it again on the same port and storage, after [`Registry::stop`].
    pub fn start_again(&mut self) -> Result<()> {
        ensure!(self.child.is_none(), "the registry is running already");
        self.spawn()
    }

    /// True while its process runs.
    pub fn running(&mut self) -> bool {
        self.child
            .as_mut()
            .is_some_and(|child| matches!(child.try_wait(), Ok(None)))
    }

    /// `127.0.0.1:PORT`, the host part of its image references.
    pub fn host(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// `https://127.0.0.1:PORT` or `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        let scheme = if self.options.tls { "https" } else { "http" };
        format!("{scheme}://{}", self.host())
    }

    /// The CA (PEM) that signed its certificate, when it serves TLS.
    pub fn ca_file(&self) -> Option<PathBuf> {
        self.options.tls.then(|| self.dir.path().join("ca.pem"))
    }

    /// Its user and password, when it requires them.
    pub fn credentials(&self) -> Option<(&str, &str)> {
        self.options
            .auth
            .as_ref()
            .map(|(user, password)| (user.as_str(), password.as_str()))
    }

    /// `127.0.0.1:PORT/NAME:TAG` for `name_tag` (`NAME:TAG`).
    pub fn reference(&self, name_tag: &str) -> String {
        format!("{}/{name_tag}", self.host())
    }

    /// What it logged.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.log_path()).unwrap_or_default()
    }

    fn log_path(&self) -> PathBuf {
        self.dir.path().join("registry.log")
    }

    /// Pushes `tag` of `layout` as `name_tag` (`NAME:TAG`) with the registry's own credentials.
    pub fn push(&self, layout: &Layout, tag: &str, name_tag: &str) -> Result<Pushed> {
        self.push_as(layout, tag, name_tag, self.credentials())
    }

    /// Pushes as [`Registry::push`] does, with `credentials` (or none).
    pub fn push_as(
        &self,
        layout: &Layout,
        tag: &str,
        name_tag: &str,
        credentials: Option<(&str, &str)>,
    ) -> Result<Pushed> {
        let digest_file = layout.dir.path().join(format!("digest-{tag}"));
        let mut command = Command::new("skopeo");
        command.args(["copy", "--retry-times", "0", "--digestfile"]);
        command.arg(&digest_file);
        command.args(self.skopeo_options("dest", credentials));
        command.arg(layout.source(tag));
        command.arg(format!("docker://{}", self.reference(name_tag)));
        run(&mut command, COMMAND_TIMEOUT)?;
        let digest = std::fs::read_to_string(&digest_file)?.trim().to_string();
        ensure!(
            digest.starts_with("sha256:"),
            "skopeo wrote no digest: {digest:?}"
        );
        Ok(Pushed {
            reference: self.reference(name_tag),
            digest,
        })
    }

    /// The manifest digest of `name_tag` as the registry serves it to a client holding
    /// `credentials` (`skopeo inspect`): fails when the registry refuses them or lacks the tag.
    pub fn inspect_as(&self, name_tag: &str, credentials: Option<(&str, &str)>) -> Result<String> {
        let mut command = Command::new("skopeo");
        command.args(["inspect", "--retry-times", "0", "--format", "{{.Digest}}"]);
        command.args(self.skopeo_options("", credentials));
        command.arg(format!("docker://{}", self.reference(name_tag)));
        Ok(run(&mut command, COMMAND_TIMEOUT)?.trim().to_string())
    }

    /// skopeo's TLS and credential flags for the side `side` (`dest`, `src`, or "" for inspect).
    fn skopeo_options(&self, side: &str, credentials: Option<(&str, &str)>) -> Vec<String> {
        let prefix = if side.is_empty() {
            "--".to_string()
        } else {
            format!("--{side}-")
        };
        let mut options = Vec::new();
        if self.options.tls {
            options.push(format!(
                "{prefix}cert-dir={}",
                self.dir.path().join("certs").display()
            ));
        } else {
            options.push(format!("{prefix}tls-verify=false"));
        }
        if let Some((user, password)) = credentials {
            options.push(format!("{prefix}creds={user}:{password}"));
        } else {
            options.push(format!("{prefix}no-creds"));
        }
        options
    }
}

impl Drop for Registry {
    fn drop(&mut self) {
        self.kill();
    }
}

// ---------------------------------------------------------------------------------------------
// containerd

/// Names unique to one [`Containerd`] on this machine, by which its traces are found.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct Footprint {
    /// The temporary directory holding its root, state, sockets and runc root.
    pub dir: PathBuf,
    /// Its gRPC socket.
    pub socket: PathBuf,
    /// The CNI network's name (host-local keeps its leases under `/var/lib/cni/networks/NAME`).
    pub network: String,
    /// The CNI bridge (at most 15 characters).
    pub bridge: String,
    /// The pods' subnet, `10.A.B.0/24`.
    pub subnet: String,
    /// The cgroup parent its pods and `ctr` containers are put under (`/NAME`).
    pub cgroup_parent: String,
}

static INSTANCES: AtomicU32 = AtomicU32::new(0);
/// Whether /run/containerd was missing before this process started its first containerd: then
/// the shims of its containerds made it, and the last one removes it (when empty).
static SHIM_SOCKET_DIR_WAS_MISSING: std::sync::OnceLock<bool> = std::sync::OnceLock::new();

impl Footprint {
    fn new(dir: &Path) -> Result<Self> {
        let pid = std::process::id();
        let instance = INSTANCES.fetch_add(1, Ordering::Relaxed);
        let (a, b) = free_subnet(pid, instance)?;
        Ok(Self {
            dir: dir.to_path_buf(),
            socket: dir.join("containerd.sock"),
            network: format!("drover-test-{pid}-{instance}"),
            bridge: format!("drc{pid}x{instance}"),
            subnet: format!("10.{a}.{b}.0/24"),
            cgroup_parent: format!("/drover-test-{pid}-{instance}"),
        })
    }

    /// `10.A.B.`: the text every address of the subnet starts with.
    fn subnet_prefix(&self) -> &str {
        self.subnet.trim_end_matches("0/24")
    }

    /// What of this containerd is still on the machine, each named; empty when nothing is. Read
    /// from the machine itself (processes, mounts, links, namespaces, nat rules, CNI state,
    /// cgroups), independently of how the cleanup found them.
    pub fn leftovers(&self) -> Vec<String> {
        let mut found = Vec::new();
        let socket = self.socket.to_string_lossy().into_owned();
        for pid in processes_naming(&socket) {
            found.push(format!("process {pid} names {socket}"));
        }
        for mount in mounts_under(&self.dir) {
            found.push(format!("mount {}", mount.display()));
        }
        if present(&Path::new("/sys/class/net").join(&self.bridge)) {
            found.push(format!("bridge {}", self.bridge));
        }
        for name in netns_in_subnet(self.subnet_prefix()) {
            found.push(format!(
                "network namespace {name} with an address in {}",
                self.subnet
            ));
        }
        if let Ok(rules) = run(
            Command::new("iptables").args(["-w", "5", "-t", "nat", "-S"]),
            COMMAND_TIMEOUT,
        ) {
            for rule in rules.lines().filter(|rule| self.names_rule(rule)) {
                found.push(format!("nat rule {rule}"));
            }
        }
        let leases = Path::new(CNI_STATE).join("networks").join(&self.network);
        if present(&leases) {
            found.push(format!("IPAM state {}", leases.display()));
        }
        for result in cni_results(self) {
            found.push(format!("CNI result {}", result.display()));
        }
        for cgroup in cgroup_dirs(&self.cgroup_parent) {
            found.push(format!("cgroup {}", cgroup.display()));
        }
        found
    }

    /// True when an `iptables -S` rule names this network or an address of its subnet.
    fn names_rule(&self, rule: &str) -> bool {
        rule.contains(&format!("\\\"{}\\\"", self.network))
            || rule
                .split(|c: char| c.is_whitespace() || c == '"')
                .any(|word| word.starts_with(self.subnet_prefix()))
    }
}

/// The subnets this process has handed out (a bridge's route appears only with its first pod).
static SUBNETS: std::sync::Mutex<BTreeSet<(u8, u8)>> = std::sync::Mutex::new(BTreeSet::new());

/// A /24 in 10.200.0.0–10.249.255.0 derived from this process and instance, that no route of the
/// machine touches yet and no other containerd of this process has.
fn free_subnet(pid: u32, instance: u32) -> Result<(u8, u8)> {
    let routes = run(
        Command::new("ip").args(["-4", "route", "show", "table", "all"]),
        COMMAND_TIMEOUT,
    )?;
    let mut taken = SUBNETS.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    for attempt in 0u32..64 {
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        (pid, instance, attempt).hash(&mut hasher);
        let hash = hasher.finish();
        let (a, b) = (200 + (hash % 50) as u8, ((hash >> 8) % 256) as u8);
        if !routes.contains(&format!("10.{a}.{b}.")) && taken.insert((a, b)) {
            return Ok((a, b));
        }
    }
    bail!("no free 10.x subnet found for a test containerd")
}

/// A ground-truth container of `ctr containers`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CtrContainer {
    /// Its id.
    pub id: String,
    /// The image it was made from.
    pub image: String,
    /// Its labels (the CRI's own and those the client set).
    pub labels: BTreeMap<String, String>,
}

/// A ground-truth task (a container's running process) of `ctr tasks ls`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CtrTask {
    /// The container's id.
    pub id: String,
    /// Its init process (0 once stopped, for some).
    pub pid: u32,
    /// `RUNNING`, `STOPPED`, `CREATED`, `PAUSED`…
    pub status: String,
}

/// A ground-truth snapshot of `ctr snapshots ls`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CtrSnapshot {
    /// Its key (a container's id for a container's active snapshot).
    pub key: String,
    /// Its parent's key, empty for a base layer.
    pub parent: String,
    /// `Committed`, `Active` or `View`.
    pub kind: String,
}

/// A ground-truth image of `ctr images ls`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CtrImage {
    /// Its reference (a tag, a digest reference, or the bare config digest the CRI adds).
    pub reference: String,
    /// The manifest's digest.
    pub digest: String,
}

/// A containerd of the test's own, its CRI plugin set up for these machines (see the module's
/// documentation), run as a child process logging to `containerd.log` in its directory.
pub struct Containerd {
    dir: TempDir,
    footprint: Footprint,
    child: Option<Child>,
    sandbox_registry: Registry,
    sandbox_image: String,
    cleaned: bool,
}

impl Containerd {
    /// Starts one that knows `registries` (a `certs.d` hosts file each, TLS ones with their CA;
    /// never credentials: the CRI passes those per pull), with the sandbox image in a plain
    /// registry started for it; waits (at most 30 s) until it answers.
    pub fn start(registries: &[&Registry]) -> Result<Self> {
        let missing = missing_prerequisites();
        ensure!(
            missing.is_empty(),
            "a test containerd needs: {}",
            missing.join(", ")
        );
        SHIM_SOCKET_DIR_WAS_MISSING.get_or_init(|| !present(Path::new(SHIM_SOCKET_PARENT)));
        sweep_stale_fixtures();
        let dir = TempDir::new()?;
        let footprint = Footprint::new(dir.path())?;
        std::fs::write(
            dir.path().join(OWNER_FILE),
            owner_record(Some(&footprint)).to_string(),
        )?;
        let sandbox_registry = Registry::start_plain()?;
        let layout = Layout::new()?;
        layout.build("pause", &ImageSpec::pause())?;
        let sandbox_image = sandbox_registry.push(&layout, "pause", "pause:3.9")?.reference;
        let mut containerd = Self {
            dir,
            footprint,
            child: None,
            sandbox_registry,
            sandbox_image,
            cleaned: false,
        };
        for sub in ["root", "state", "runc", "cni", "certs.d", "opt", "fifo"] {
            std::fs::create_dir_all(containerd.dir.path().join(sub))?;
        }
        containerd.know(&containerd.sandbox_registry)?;
        for registry in registries {
            containerd.know(registry)?;
        }
        std::fs::write(containerd.cni_config(), containerd.conflist())?;
        std::fs::write(containerd.config_path(), containerd.config())?;
        containerd.spawn()?;
        Ok(containerd)
    }

    /// Writes the `certs.d/HOST/hosts.toml` for `registry`: plain HTTP, or HTTPS with its CA
    /// both in the `[host]` section (where the CRI plugin reads it) and at the top (used when
    /// it falls back to `server`, e.g. after a 404). May be called while containerd runs.
    pub fn know(&self, registry: &Registry) -> Result<()> {
        let dir = self.hosts_dir().join(registry.host());
        std::fs::create_dir_all(&dir)?;
        let url = registry.url();
        let ca = registry
            .ca_file()
            .map(|ca| format!("ca = {:?}\n", ca.display().to_string()))
            .unwrap_or_default();
        let hosts = format!(
            "server = \"{url}\"\n{ca}\n[host.\"{url}\"]\n  capabilities = [\"pull\", \"resolve\"]\n  {ca}"
        );
        std::fs::write(dir.join("hosts.toml"), hosts)?;
        Ok(())
    }

    fn config_path(&self) -> PathBuf {
        self.dir.path().join("config.toml")
    }

    /// The CNI network: a bridge of its own with host-local IPAM on its subnet (hairpin only:
    /// hairpin and promiscuous mode together are refused), and portmap with SNAT so host ports
    /// answer on 127.0.0.1 too. containerd's CRI adds the loopback itself.
    fn conflist(&self) -> String {
        let f = &self.footprint;
        serde_json::json!({
            "cniVersion": "1.0.0",
            "name": f.network,
            "plugins": [
                {
                    "type": "bridge",
                    "bridge": f.bridge,
                    "isGateway": true,
                    "ipMasq": false,
                    "hairpinMode": true,
                    "ipam": {
                        "type": "host-local",
                        "ranges": [[{ "subnet": f.subnet }]],
                        "routes": [{ "dst": "0.0.0.0/0" }]
                    }
                },
                { "type": "portmap", "snat": true, "capabilities": { "portMappings": true } }
            ]
        })
        .to_string()
    }

    fn config(&self) -> String {
        let dir = self.dir.path();
        let path = |sub: &str| format!("{:?}", dir.join(sub).display().to_string());
        let cri = "[plugins.\"io.containerd.grpc.v1.cri\"";
        format!(
            r#"version = 2
root = {root}
state = {state}
# Snapshotters these machines cannot use (aufs would try modprobe at every start).
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.zfs"]

[grpc]
  address = {grpc}
[ttrpc]
  address = {ttrpc}
[metrics]
  address = ""

[plugins."io.containerd.internal.v1.opt"]
  path = {opt}

{cri}]
  sandbox_image = "{sandbox}"
  restrict_oom_score_adj = true
  disable_apparmor = true
  netns_mounts_under_state_dir = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
{cri}.containerd]
  snapshotter = "overlayfs"
  default_runtime_name = "runc"
{cri}.containerd.runtimes.runc]
  runtime_type = "io.containerd.runc.v2"
{cri}.containerd.runtimes.runc.options]
  SystemdCgroup = false
  Root = {runc}
{cri}.cni]
  bin_dir = "{CNI_BIN}"
  conf_dir = {cni}
{cri}.registry]
  config_path = {certs}
"#,
            root = path("root"),
            state = path("state"),
            grpc = path("containerd.sock"),
            ttrpc = path("containerd-ttrpc.sock"),
            opt = path("opt"),
            sandbox = self.sandbox_image,
            runc = path("runc"),
            cni = path("cni"),
            certs = path("certs.d"),
        )
    }

    fn spawn(&mut self) -> Result<()> {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.log_path())?;
        let child = Command::new("containerd")
            .arg("--config")
            .arg(self.config_path())
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            .spawn()
            .context("starting containerd")?;
        self.child = Some(child);
        let result = wait_until(START_TIMEOUT, "containerd to answer on its socket", || {
            if let Some(status) = self.child.as_mut().and_then(|c| c.try_wait().ok().flatten()) {
                bail!("containerd exited at start ({status}): {}", self.log_tail());
            }
            Ok(self.footprint.socket.try_exists()? && self.ctr(&["version"]).is_ok())
        });
        if result.is_err() {
            self.kill();
        }
        result
    }

    /// Its gRPC socket, for a CRI client (`unix://` + this path).
    pub fn socket(&self) -> &Path {
        &self.footprint.socket
    }

    /// `unix:///…/containerd.sock`.
    pub fn endpoint(&self) -> String {
        format!("unix://{}", self.footprint.socket.display())
    }

    /// The cgroup parent to give the pods (`LinuxPodSandboxConfig.cgroup_parent`), e.g.
    /// `/drover-test-123-0`; everything under it goes when this containerd is dropped.
    pub fn cgroup_parent(&self) -> &str {
        &self.footprint.cgroup_parent
    }

    /// The sandbox image its CRI plugin pulls for every pod.
    pub fn sandbox_image(&self) -> &str {
        &self.sandbox_image
    }

    /// The `certs.d` directory of hosts files (`ctr … --hosts-dir`).
    pub fn hosts_dir(&self) -> PathBuf {
        self.dir.path().join("certs.d")
    }

    /// The CNI network configuration (a conflist) its CRI plugin uses.
    pub fn cni_config(&self) -> PathBuf {
        self.dir.path().join("cni").join(CONFLIST)
    }

    /// Where its CRI plugin mounts the pods' network namespaces (under its state directory).
    pub fn netns_dir(&self) -> PathBuf {
        self.dir.path().join("state/io.containerd.grpc.v1.cri/netns")
    }

    /// The runc root of its containers' runtime (runc's state is in `ROOT/k8s.io`).
    pub fn runc_root(&self) -> PathBuf {
        self.dir.path().join("runc")
    }

    /// Its unique names and paths, to check after it is dropped that nothing is left.
    pub fn footprint(&self) -> Footprint {
        self.footprint.clone()
    }

    /// What containerd logged.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.log_path()).unwrap_or_default()
    }

    fn log_path(&self) -> PathBuf {
        self.dir.path().join("containerd.log")
    }

    fn log_tail(&self) -> String {
        let log = self.log();
        let lines: Vec<&str> = log.lines().collect();
        lines[lines.len().saturating_sub(20)..].join("\n")
    }

    /// `ctr -a SOCKET -n k8s.io ARGS…`: what it printed, or its words when it failed.
    pub fn ctr(&self, args: &[&str]) -> Result<String> {
        let mut command = Command::new("ctr");
        command
            .arg("-a")
            .arg(self.socket())
            .args(["-n", NAMESPACE])
            .args(args);
        run(&mut command, COMMAND_TIMEOUT)
    }

    /// Pulls `reference` with `ctr` through its hosts files, with `credentials` if given.
    pub fn pull(&self, reference: &str, credentials: Option<(&str, &str)>) -> Result<()> {
        let hosts = self.hosts_dir().display().to_string();
        let user = credentials.map(|(user, password)| format!("{user}:{password}"));
        let mut args = vec!["images", "pull", "--hosts-dir", &hosts];
        if let Some(user) = &user {
            args.extend(["--user", user]);
        }
        args.push(reference);
        self.ctr(&args).map(drop)
    }

    /// `ctr run -d` of `image` as container `id` running `args`, with no IO, in the cgroup
    /// parent and runc root of this containerd (so that dropping it removes it).
    pub fn run_detached(&self, image: &str, id: &str, args: &[&str]) -> Result<()> {
        let cgroup = format!("{}/{id}", self.cgroup_parent());
        let runc_root = self.runc_root().display().to_string();
        let fifo = self.dir.path().join("fifo").display().to_string();
        let mut all = vec![
            "run",
            "-d",
            "--null-io",
            "--fifo-dir",
            &fifo,
            "--runc-root",
            &runc_root,
            "--cgroup",
            &cgroup,
            image,
            id,
        ];
        all.extend(args);
        self.ctr(&all).map(drop)
    }

    /// Its containers, with their labels.
    pub fn containers(&self) -> Result<Vec<CtrContainer>> {
        let ids = self.ctr(&["containers", "ls", "-q"])?;
        let mut found = Vec::new();
        for id in ids.split_whitespace() {
            let info = match self.ctr(&["containers", "info", id]) {
                Ok(info) => info,
                // Removed between the listing and this call (a container the CRI replaced).
                Err(e) if e.to_string().contains("not found") => continue,
                Err(e) => return Err(e),
            };
            let info: serde_json::Value = serde_json::from_str(&info)?;
            let labels = info["Labels"]
                .as_object()
                .map(|labels| {
                    labels
                        .iter()
                        .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string()))
                        .collect()
                })
                .unwrap_or_default();
            found.push(CtrContainer {
                id: id.to_string(),
                image: info["Image"].as_str().unwrap_or_default().to_string(),
                labels,
            });
        }
        Ok(found)
    }

    /// Its tasks.
    pub fn tasks(&self) -> Result<Vec<CtrTask>> {
        parse_tasks(&self.ctr(&["tasks", "ls"])?)
    }

    /// Its snapshots (overlayfs).
    pub fn snapshots(&self) -> Result<Vec<CtrSnapshot>> {
        Ok(parse_snapshots(&self.ctr(&["snapshots", "ls"])?))
    }

    /// Its images.
    pub fn images(&self) -> Result<Vec<CtrImage>> {
        Ok(parse_images(&self.ctr(&["images", "ls"])?))
    }

    /// Stops containerd alone (SIGTERM, SIGKILL after 10 s); shims and containers keep running,
    /// root and state stay, for [`Containerd::start_again`].
    pub fn stop(&mut self) -> Result<()> {
        let Some(mut child) = self.child.take() else {
            return Ok(());
        };
        signal(child.id(), "TERM");
        let deadline = Instant::now() + Duration::from_secs(10);
        while child.try_wait()?.is_none() {
            if Instant::now() >= deadline {
                let _ = child.kill();
                break;
            }
            std::thread::sleep(POLL);
        }
        child.wait()?;
        Ok(())
    }

    /// Kills containerd alone with SIGKILL, as a crash would; shims and containers keep running.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts containerd again on the same config, root and state, after a stop or kill.
    pub fn start_again(&mut self) -> Result<()> {
        ensure!(self.child.is_none(), "containerd is running already");
        self.spawn()
    }

    /// Stops it and starts it again (see [`Containerd::stop`]).
    pub fn restart(&mut self) -> Result<()> {
        self.stop()?;
        self.start_again()
    }

    /// Removes everything it made, as dropping it does, but reports what could not be removed.
    pub fn shutdown(mut self) -> Result<()> {
        self.cleaned = true;
        let problems = self.clean();
        ensure!(
            problems.is_empty(),
            "cleaning up a test containerd: {}",
            problems.join("; ")
        );
        Ok(())
    }

    /// Kills containerd, then cleans up after it as [`clean_footprint`] does.
    fn clean(&mut self) -> Vec<String> {
        let mut problems = Vec::new();
        delete_runc_containers(&self.footprint.dir, &mut problems);
        self.kill();
        clean_footprint(&self.footprint, &mut problems);
        problems
    }
}

impl Drop for Containerd {
    fn drop(&mut self) {
        if !self.cleaned {
            self.cleaned = true;
            for problem in self.clean() {
                eprintln!("test containerd cleanup: {problem}");
            }
        }
    }
}

/// Kills every container, the containerd and the shims of `f`, then removes the mounts,
/// network namespaces, bridge, nat rules, CNI state and cgroups it made, and its directory.
/// Pushes what could not be removed onto `problems`.
fn clean_footprint(f: &Footprint, problems: &mut Vec<String>) {
    delete_runc_containers(&f.dir, problems);
    let config = f.dir.join("config.toml").to_string_lossy().into_owned();
    for pid in processes_naming(&config) {
        signal(pid, "KILL");
    }
    kill_shims(&f.socket.to_string_lossy(), problems);
    if SHIM_SOCKET_DIR_WAS_MISSING.get() == Some(&true) && !other_containerd_runs() {
        // Only empty directories go: another runtime's sockets would keep them.
        let _ = std::fs::remove_dir(SHIM_SOCKETS);
        let _ = std::fs::remove_dir(SHIM_SOCKET_PARENT);
    }
    unmount_under(&f.dir, problems);
    delete_netns(f, problems);
    if present(&Path::new("/sys/class/net").join(&f.bridge)) {
        note(
            run(
                Command::new("ip").args(["link", "del", &f.bridge]),
                COMMAND_TIMEOUT,
            ),
            problems,
        );
    }
    note(delete_nat_rules(f), problems);
    let leases = Path::new(CNI_STATE).join("networks").join(&f.network);
    if present(&leases) {
        note(std::fs::remove_dir_all(&leases).map_err(Into::into), problems);
    }
    for result in cni_results(f) {
        note(std::fs::remove_file(&result).map_err(Into::into), problems);
    }
    note(remove_cgroups(&f.cgroup_parent), problems);
}

/// `runc delete --force` of every container in the runc root under `dir` (every namespace):
/// their processes are killed, their cgroups and runc state removed.
fn delete_runc_containers(dir: &Path, problems: &mut Vec<String>) {
    let Ok(namespaces) = std::fs::read_dir(dir.join("runc")) else {
        return;
    };
    for namespace in namespaces
        .flatten()
        .map(|entry| entry.path())
        .filter(|p| p.is_dir())
    {
        let root = namespace.display().to_string();
        let Ok(ids) = run(
            Command::new("runc").args(["--root", &root, "list", "-q"]),
            COMMAND_TIMEOUT,
        ) else {
            continue;
        };
        for id in ids.split_whitespace() {
            note(
                run(
                    Command::new("runc").args(["--root", &root, "delete", "--force", id]),
                    COMMAND_TIMEOUT,
                ),
                problems,
            );
        }
    }
}

/// The file in a fixture's directory naming the test process that owns it (and its footprint).
const OWNER_FILE: &str = "drover-test-owner.json";

/// This process, as an owner record: its pid and start time (so a reused pid is not taken
/// for it), and what its fixture left where.
fn owner_record(footprint: Option<&Footprint>) -> serde_json::Value {
    let pid = std::process::id();
    serde_json::json!({ "pid": pid, "start": start_time(pid), "footprint": footprint })
}

/// The start time (clock ticks after boot) of process `pid`.
fn start_time(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit_once(')')?.1.split_whitespace().nth(19)?.parse().ok()
}

/// True when the owner record names a process that no longer runs.
fn owner_gone(record: &serde_json::Value) -> bool {
    let pid = record["pid"].as_u64().and_then(|pid| u32::try_from(pid).ok());
    match pid {
        Some(pid) => !alive(pid) || start_time(pid) != record["start"].as_u64(),
        None => false,
    }
}

/// Cleans up after the fixtures of test processes that died without their `Drop` (SIGKILL,
/// ^C): in the temporary directory, every fixture directory whose owner is gone has its
/// processes killed and, for a containerd, everything of its footprint removed.
fn sweep_stale_fixtures() {
    let Ok(entries) = std::fs::read_dir(std::env::temp_dir()) else {
        return;
    };
    for dir in entries.flatten().map(|entry| entry.path()) {
        let Ok(text) = std::fs::read_to_string(dir.join(OWNER_FILE)) else {
            continue;
        };
        let Ok(record) = serde_json::from_str::<serde_json::Value>(&text) else {
            continue;
        };
        if !owner_gone(&record) {
            continue;
        }
        let mut problems = Vec::new();
        match serde_json::from_value::<Footprint>(record["footprint"].clone()) {
            Ok(footprint) if footprint.dir == dir => clean_footprint(&footprint, &mut problems),
            _ => {
                let config = dir.join("config.yml").to_string_lossy().into_owned();
                for pid in processes_naming(&config) {
                    signal(pid, "KILL");
                }
            }
        }
        if problems.is_empty() {
            let _ = std::fs::remove_dir_all(&dir);
        } else {
            eprintln!("stale test fixture {}: {}", dir.display(), problems.join("; "));
        }
    }
}

fn note<T>(result: Result<T>, problems: &mut Vec<String>) {
    if let Err(error) = result {
        problems.push(format!("{error:#}"));
    }
}

/// Rows of a `ctr … ls` table, header skipped, split on whitespace.
fn rows(table: &str) -> impl Iterator<Item = Vec<&str>> {
    table
        .lines()
        .skip(1)
        .map(|line| line.split_whitespace().collect::<Vec<_>>())
        .filter(|row| !row.is_empty())
}

fn parse_tasks(table: &str) -> Result<Vec<CtrTask>> {
    rows(table)
        .map(|row| {
            ensure!(row.len() == 3, "unexpected `ctr tasks ls` row: {row:?}");
            Ok(CtrTask {
                id: row[0].to_string(),
                pid: row[1].parse().with_context(|| format!("task pid in {row:?}"))?,
                status: row[2].to_string(),
            })
        })
        .collect()
}

/// `KEY PARENT KIND`, where PARENT is blank for a base layer.
fn parse_snapshots(table: &str) -> Vec<CtrSnapshot> {
    rows(table)
        .map(|row| CtrSnapshot {
            key: row[0].to_string(),
            parent: if row.len() >= 3 {
                row[1].to_string()
            } else {
                String::new()
            },
            kind: row.last().copied().unwrap_or_default().to_string(),
        })
        .collect()
}

/// `REF TYPE DIGEST SIZE PLATFORMS LABELS`.
fn parse_images(table: &str) -> Vec<CtrImage> {
    rows(table)
        .filter(|row| row.len() >= 3)
        .map(|row| CtrImage {
            reference: row[0].to_string(),
            digest: row[2].to_string(),
        })
        .collect()
}

/// Processes (not zombies) whose command line has `word` as one argument.
fn processes_naming(word: &str) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|entry| entry.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| *pid != std::process::id())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .map(|cmdline| cmdline.split(|b| *b == 0).any(|arg| arg == word.as_bytes()))
                .unwrap_or(false)
        })
        .filter(|pid| alive(*pid))
        .collect()
}

/// Kills the `containerd-shim-runc-v2` processes started for `socket` and removes the sockets
/// they served under /run/containerd/s (a killed shim leaves its socket behind).
fn kill_shims(socket: &str, problems: &mut Vec<String>) {
    let shims: Vec<u32> = processes_naming(socket)
        .into_iter()
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .map(|cmdline| {
                    let argv0 = cmdline.split(|b| *b == 0).next().unwrap_or_default();
                    argv0.ends_with(b"containerd-shim-runc-v2")
                })
                .unwrap_or(false)
        })
        .collect();
    let sockets: Vec<PathBuf> = shims.iter().flat_map(|pid| unix_sockets_of(*pid)).collect();
    for pid in &shims {
        signal(*pid, "KILL");
    }
    note(
        wait_until(Duration::from_secs(10), "the shims to exit", || {
            Ok(!shims.iter().any(|pid| alive(*pid)))
        }),
        problems,
    );
    for socket in sockets.iter().filter(|path| path.starts_with(SHIM_SOCKETS)) {
        let _ = std::fs::remove_file(socket);
    }
}

/// The paths of the unix sockets process `pid` has open.
fn unix_sockets_of(pid: u32) -> Vec<PathBuf> {
    let inodes: BTreeSet<String> = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .map(|fds| {
            fds.flatten()
                .filter_map(|fd| std::fs::read_link(fd.path()).ok())
                .filter_map(|target| {
                    let target = target.to_string_lossy().into_owned();
                    Some(target.strip_prefix("socket:[")?.strip_suffix(']')?.to_string())
                })
                .collect()
        })
        .unwrap_or_default();
    let table = std::fs::read_to_string("/proc/net/unix").unwrap_or_default();
    table
        .lines()
        .skip(1)
        .filter_map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let (inode, path) = (fields.get(6)?, fields.get(7)?);
            inodes.contains(*inode).then(|| PathBuf::from(path))
        })
        .collect()
}

/// Mount points under `dir`, from /proc/self/mountinfo (octal escapes decoded).
fn mounts_under(dir: &Path) -> Vec<PathBuf> {
    let info = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    info.lines()
        .filter_map(|line| line.split(' ').nth(4))
        .map(|point| PathBuf::from(unescape_mount(point)))
        .filter(|point| point.starts_with(dir) && point != dir)
        .collect()
}

/// Decodes mountinfo's `\NNN` octal escapes (space, tab, newline, backslash).
fn unescape_mount(field: &str) -> String {
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let octal = bytes
            .get(i + 1..i + 4)
            .filter(|d| bytes[i] == b'\\' && d.iter().all(|c| (b'0'..=b'7').contains(c)));
        match octal {
            Some(digits) => {
                out.push(
                    digits
                        .iter()
                        .fold(0u8, |n, d| n.wrapping_mul(8).wrapping_add(d - b'0')),
                );
                i += 4;
            }
            None => {
                out.push(bytes[i]);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Lazily unmounts everything mounted under `dir`, deepest first, until nothing is.
fn unmount_under(dir: &Path, problems: &mut Vec<String>) {
    for _ in 0..5 {
        let mut mounts = mounts_under(dir);
        if mounts.is_empty() {
            return;
        }
        mounts.sort_by_key(|point| std::cmp::Reverse(point.components().count()));
        for point in mounts {
            let _ = run(Command::new("umount").arg("-l").arg(&point), COMMAND_TIMEOUT);
        }
    }
    let left = mounts_under(dir);
    if !left.is_empty() {
        problems.push(format!("still mounted: {left:?}"));
    }
}

/// The results libcni cached (`/var/lib/cni/results/NETWORK-ID-IFNAME`) for `f`'s network, or
/// for a namespace under its directory (the loopback network the CRI plugin adds to every pod).
fn cni_results(f: &Footprint) -> Vec<PathBuf> {
    let prefix = format!("{}-", f.network);
    let Ok(entries) = std::fs::read_dir(Path::new(CNI_STATE).join("results")) else {
        return Vec::new();
    };
    entries
        .flatten()
        .map(|entry| entry.path())
        .filter(|path| {
            let name = path.file_name().unwrap_or_default().to_string_lossy();
            name.starts_with(&prefix)
                || cached_sandboxes(path)
                    .iter()
                    .any(|netns| netns.starts_with(&f.dir))
        })
        .collect()
}

/// The network namespaces a cached CNI result names.
fn cached_sandboxes(result: &Path) -> Vec<PathBuf> {
    let Ok(text) = std::fs::read_to_string(result) else {
        return Vec::new();
    };
    let Ok(cached) = serde_json::from_str::<serde_json::Value>(&text) else {
        return Vec::new();
    };
    let interfaces = cached["result"]["interfaces"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    interfaces
        .iter()
        .filter_map(|i| i["sandbox"].as_str())
        .map(PathBuf::from)
        .collect()
}

/// The network namespaces `ip netns` lists (under /var/run/netns) holding an address of the
/// subnet starting with `prefix`.
fn netns_in_subnet(prefix: &str) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(NETNS_DIR) else {
        return Vec::new();
    };
    entries
        .flatten()
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .filter(|name| {
            run(
                Command::new("ip").args(["-n", name, "-4", "-o", "addr", "show"]),
                COMMAND_TIMEOUT,
            )
            .is_ok_and(|addrs| addrs.split_whitespace().any(|word| word.starts_with(prefix)))
        })
        .collect()
}

/// Deletes the network namespaces in /var/run/netns that this containerd's network made: named
/// as a sandbox in one of its cached CNI results, or holding an address of its subnet.
fn delete_netns(f: &Footprint, problems: &mut Vec<String>) {
    let mut names: BTreeSet<String> = netns_in_subnet(f.subnet_prefix()).into_iter().collect();
    for result in cni_results(f) {
        for netns in cached_sandboxes(&result) {
            if let Some(name) = netns.strip_prefix(NETNS_DIR).ok().and_then(|n| n.to_str()) {
                names.insert(name.to_string());
            }
        }
    }
    for name in names {
        if present(&Path::new(NETNS_DIR).join(&name)) {
            note(
                run(Command::new("ip").args(["netns", "del", &name]), COMMAND_TIMEOUT),
                problems,
            );
        }
    }
}

/// Splits an `iptables -S` rule into arguments: words, or double-quoted strings in which a
/// backslash escapes the next character.
fn split_rule(rule: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut quoted = false;
    let mut chars = rule.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' if quoted => word.extend(chars.next()),
            '"' => {
                quoted = !quoted;
                in_word = true;
            }
            c if c.is_whitespace() && !quoted => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            c => {
                word.push(c);
                in_word = true;
            }
        }
    }
    if in_word {
        words.push(word);
    }
    words
}

fn nat(args: &[&str]) -> Result<String> {
    let mut command = Command::new("iptables");
    command.args(["-w", "5", "-t", "nat"]).args(args);
    run(&mut command, COMMAND_TIMEOUT)
}

/// Deletes the nat rule `-A CHAIN …` (as `iptables -S` prints it).
fn delete_rule(rule: &str) -> Result<()> {
    let mut words = split_rule(rule);
    ensure!(
        words.first().map(String::as_str) == Some("-A"),
        "not a rule: {rule}"
    );
    words[0] = "-D".to_string();
    nat(&words.iter().map(String::as_str).collect::<Vec<_>>()).map(drop)
}

/// Removes the nat rules portmap made for this network (its per-pod `CNI-DN-…` chains and the
/// jumps to them, any rule naming the network or its subnet), then the shared
/// `CNI-HOSTPORT-*` chains if no pod of any network uses them and no other containerd runs.
fn delete_nat_rules(f: &Footprint) -> Result<()> {
    let rules = nat(&["-S"])?;
    let mut chains = BTreeSet::new();
    for rule in rules.lines().filter(|rule| f.names_rule(rule)) {
        let chain = rule.split_whitespace().nth(1).unwrap_or_default();
        if chain.starts_with("CNI-") && !chain.starts_with("CNI-HOSTPORT-") {
            chains.insert(chain.to_string());
        }
    }
    for rule in rules.lines().filter(|rule| rule.starts_with("-A ")) {
        let words = split_rule(rule);
        let jumps_to_ours = words
            .windows(2)
            .any(|pair| pair[0] == "-j" && chains.contains(&pair[1]));
        let ours = chains.contains(words.get(1).map(String::as_str).unwrap_or_default());
        if (jumps_to_ours || f.names_rule(rule)) && !ours {
            delete_rule(rule)?;
        }
    }
    for chain in &chains {
        nat(&["-F", chain])?;
        nat(&["-X", chain])?;
    }
    delete_unused_hostport_chains()
}

/// Deletes portmap's shared chains when `CNI-HOSTPORT-DNAT` leads to no pod and no other
/// containerd process runs (one might add a pod at any moment).
fn delete_unused_hostport_chains() -> Result<()> {
    let rules = nat(&["-S"])?;
    let shared: BTreeSet<&str> = rules
        .lines()
        .filter_map(|line| line.strip_prefix("-N "))
        .filter(|chain| chain.starts_with("CNI-HOSTPORT-"))
        .collect();
    let used = rules
        .lines()
        .any(|rule| rule.starts_with("-A CNI-HOSTPORT-DNAT "));
    if shared.is_empty() || used || other_containerd_runs() {
        return Ok(());
    }
    // Another test process's cleanup may be removing them at the same moment: what it removed
    // first is not an error here.
    for rule in rules.lines().filter(|rule| rule.starts_with("-A ")) {
        let words = split_rule(rule);
        let chain = words.get(1).map(String::as_str).unwrap_or_default();
        let target = words
            .windows(2)
            .find(|pair| pair[0] == "-j")
            .map(|pair| pair[1].as_str());
        if !shared.contains(chain) && target.is_some_and(|target| shared.contains(target)) {
            let _ = delete_rule(rule);
        }
    }
    for chain in &shared {
        let _ = nat(&["-F", chain]);
    }
    for chain in &shared {
        let _ = nat(&["-X", chain]);
    }
    Ok(())
}

/// True when a `containerd` process runs on this machine.
fn other_containerd_runs() -> bool {
    std::fs::read_dir("/proc")
        .map(|entries| {
            entries
                .flatten()
                .filter_map(|entry| entry.file_name().to_str()?.parse::<u32>().ok())
                .any(|pid| {
                    std::fs::read_to_string(format!("/proc/{pid}/comm"))
                        .is_ok_and(|comm| comm.trim() == "containerd")
                        && alive(pid)
                })
        })
        .unwrap_or(false)
}

/// The directories named `parent` (and below) in every cgroup hierarchy, deepest first.
fn cgroup_dirs(parent: &str) -> Vec<PathBuf> {
    let relative = parent.trim_start_matches('/');
    if relative.is_empty() {
        return Vec::new();
    }
    let mut found = Vec::new();
    let Ok(hierarchies) = std::fs::read_dir(CGROUP_ROOT) else {
        return found;
    };
    for hierarchy in hierarchies.flatten() {
        let top = hierarchy.path().join(relative);
        if top.is_dir() {
            collect_dirs(&top, &mut found);
        }
    }
    found.sort_by_key(|dir| std::cmp::Reverse(dir.components().count()));
    found
}

fn collect_dirs(dir: &Path, found: &mut Vec<PathBuf>) {
    found.push(dir.to_path_buf());
    if let Ok(entries) = std::fs::read_dir(dir) {
        for entry in entries.flatten() {
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                collect_dirs(&entry.path(), found);
            }
        }
    }
}

/// Kills any process left in the cgroups under `parent` and removes them, deepest first.
fn remove_cgroups(parent: &str) -> Result<()> {
    let dirs = cgroup_dirs(parent);
    for dir in &dirs {
        let procs = std::fs::read_to_string(dir.join("cgroup.procs")).unwrap_or_default();
        for pid in procs.split_whitespace().filter_map(|pid| pid.parse().ok()) {
            signal(pid, "KILL");
        }
    }
    for dir in &dirs {
        wait_until(
            Duration::from_secs(10),
            &format!("removing cgroup {}", dir.display()),
            || Ok(std::fs::remove_dir(dir).is_ok() || !present(dir)),
        )?;
    }
    Ok(())
}

/// The page `http://ADDRESS/index.html` answers with (2xx), if it answers within 2 s: what the
/// test images' `httpd` serves, read from the pod's address as another process would.
pub async fn index_page(address: &str) -> Option<String> {
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(2))
        .build()
        .ok()?;
    let answer = client
        .get(format!("http://{address}/index.html"))
        .send()
        .await
        .ok()?;
    answer.status().is_success().then_some(())?;
    answer.text().await.ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iptables_rules_split_as_iptables_reads_them() {
        let cases: &[(&str, &[&str])] = &[
            ("-A OUTPUT -j X", &["-A", "OUTPUT", "-j", "X"]),
            (
                r#"-A CNI-HOSTPORT-DNAT -p tcp -m comment --comment "dnat name: \"net\" id: \"abc\"" -j CNI-DN-1"#,
                &[
                    "-A",
                    "CNI-HOSTPORT-DNAT",
                    "-p",
                    "tcp",
                    "-m",
                    "comment",
                    "--comment",
                    r#"dnat name: "net" id: "abc""#,
                    "-j",
                    "CNI-DN-1",
                ],
            ),
            (
                r#"-A P -m comment --comment "" -j Y"#,
                &["-A", "P", "-m", "comment", "--comment", "", "-j", "Y"],
            ),
            ("  -A   P  ", &["-A", "P"]),
        ];
        for (rule, words) in cases {
            assert_eq!(split_rule(rule), *words, "{rule}");
        }
    }

    #[test]
    fn mountinfo_escapes_are_decoded() {
        let cases = [
            ("/a/b", "/a/b"),
            (r"/a\040b", "/a b"),
            (r"/a\134b", r"/a\b"),
            (r"/a\0", r"/a\0"),
        ];
        for (field, path) in cases {
            assert_eq!(unescape_mount(field), path, "{field}");
        }
    }

    #[test]
    fn ctr_tables_are_read_by_column() {
        let tasks = "TASK    PID      STATUS    \nweb     29994    RUNNING\nold 0 STOPPED\n";
        assert_eq!(
            parse_tasks(tasks).unwrap(),
            vec![
                CtrTask {
                    id: "web".into(),
                    pid: 29994,
                    status: "RUNNING".into()
                },
                CtrTask {
                    id: "old".into(),
                    pid: 0,
                    status: "STOPPED".into()
                },
            ]
        );
        let snapshots = "KEY PARENT KIND\nsha256:c2        Committed \nweb sha256:c2 Active\n";
        assert_eq!(
            parse_snapshots(snapshots),
            vec![
                CtrSnapshot {
                    key: "sha256:c2".into(),
                    parent: String::new(),
                    kind: "Committed".into()
                },
                CtrSnapshot {
                    key: "web".into(),
                    parent: "sha256:c2".into(),
                    kind: "Active".into()
                },
            ]
        );
        let images = "REF TYPE DIGEST SIZE PLATFORMS LABELS\n127.0.0.1:5/b:v1 application/vnd.oci.image.manifest.v1+json sha256:db 1.0 MiB linux/amd64 x=y\n";
        assert_eq!(
            parse_images(images),
            vec![CtrImage {
                reference: "127.0.0.1:5/b:v1".into(),
                digest: "sha256:db".into()
            }]
        );
        assert!(parse_tasks("TASK PID STATUS\nweb notapid RUNNING\n").is_err());
    }

    #[test]
    fn a_pinned_reference_replaces_the_tag_with_the_digest() {
        let cases = [
            ("127.0.0.1:5000/web:v1", "127.0.0.1:5000/web@sha256:ab"),
            ("127.0.0.1:5000/team/web:v2", "127.0.0.1:5000/team/web@sha256:ab"),
        ];
        for (reference, pinned) in cases {
            let pushed = Pushed {
                reference: reference.to_string(),
                digest: "sha256:ab".to_string(),
            };
            assert_eq!(pushed.pinned(), pinned);
        }
    }

    #[test]
    fn only_a_static_program_is_taken_for_the_images() {
        assert!(is_static_elf(Path::new(BUSYBOX)), "{BUSYBOX} from busybox-static");
        assert!(!is_static_elf(Path::new("/bin/ls")), "a dynamic program");
        assert!(!is_static_elf(Path::new("/etc/passwd")), "not a program");
        assert!(!is_static_elf(Path::new("/nonexistent")), "nothing");
    }

    #[test]
    fn image_paths_stay_inside_the_root() {
        let root = Path::new("/r");
        assert_eq!(
            inside(root, "/www/index.html").unwrap(),
            Path::new("/r/www/index.html")
        );
        assert!(inside(root, "relative").is_err());
        assert!(inside(root, "/../etc/passwd").is_err());
    }
}
