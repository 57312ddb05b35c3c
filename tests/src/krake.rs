//! Krake 1.0.1's own code beside the tests: the Python of the environment `make setup` builds
//! (scripts/setup-krake.sh), the scripts in `tests/compat/krake` that drive Drover through
//! `krake.client`, and Krake's own API server (with etcd) as the reference for the wire.

use std::path::PathBuf;
use std::process::Output;

use anyhow::{ensure, Context, Result};

use crate::agent::free_port;

/// The Python of Krake's environment: `$DROVER_KRAKE_VENV/bin/python`, by default under
/// `~/.cache/drover/krake-venv`.
pub fn python() -> Result<PathBuf> {
    let venv = match std::env::var_os("DROVER_KRAKE_VENV") {
        Some(venv) => PathBuf::from(venv),
        None => PathBuf::from(std::env::var_os("HOME").context("HOME is not set")?)
            .join(".cache/drover/krake-venv"),
    };
    let python = venv.join("bin/python");
    ensure!(
        python.try_exists().unwrap_or(false),
        "Krake's environment is missing at {}: run `make setup` (scripts/setup-krake.sh)",
        venv.display()
    );
    Ok(python)
}

/// A script of `tests/compat/krake`.
pub fn script(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("compat/krake")
        .join(name)
}

/// Runs a script of `tests/compat/krake` with Krake's Python, off the async runtime, and fails
/// with everything it printed unless it succeeded.
pub async fn run(name: &str, args: Vec<String>) -> Result<String> {
    let python = python()?;
    let script = script(name);
    let output: Output = tokio::task::spawn_blocking(move || {
        std::process::Command::new(python)
            .arg(script)
            .args(args)
            .env("PYTHONWARNINGS", "ignore")
            .output()
    })
    .await??;
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    ensure!(output.status.success(), "{name} failed:\n{said}");
    Ok(said)
}

/// Krake 1.0.1's own API server on loopback (`tests/compat/krake/krake_server.py`: its static
/// user `system:admin`, always-allow), over an etcd of its own (Debian's etcd 3.4), both in a
/// temporary directory and killed when this is dropped.
pub struct KrakeServer {
    /// `http://127.0.0.1:PORT`.
    pub url: String,
    children: Vec<tokio::process::Child>,
    _dir: tempfile::TempDir,
}

impl KrakeServer {
    /// Starts etcd and Krake's server, and waits until the server answers `GET /`.
    pub async fn start() -> Result<Self> {
        let dir = tempfile::tempdir()?;
        let (client, peer, api) = (free_port()?, free_port()?, free_port()?);
        let quiet = || std::process::Stdio::null();
        let etcd = tokio::process::Command::new("etcd")
            .arg("--data-dir")
            .arg(dir.path().join("etcd"))
            .arg(format!("--listen-client-urls=http://127.0.0.1:{client}"))
            .arg(format!("--advertise-client-urls=http://127.0.0.1:{client}"))
            .arg(format!("--listen-peer-urls=http://127.0.0.1:{peer}"))
            .arg(format!("--initial-advertise-peer-urls=http://127.0.0.1:{peer}"))
            .arg(format!("--initial-cluster=default=http://127.0.0.1:{peer}"))
            .stdout(quiet())
            .stderr(quiet())
            .kill_on_drop(true)
            .spawn()
            .context("starting etcd (make setup installs it)")?;
        let mut server = Self {
            url: format!("http://127.0.0.1:{api}"),
            children: vec![etcd],
            _dir: dir,
        };
        let krake = tokio::process::Command::new(python()?)
            .arg(script("krake_server.py"))
            .arg(api.to_string())
            .arg(client.to_string())
            .env("PYTHONWARNINGS", "ignore")
            .stdout(quiet())
            .stderr(quiet())
            .kill_on_drop(true)
            .spawn()
            .context("starting Krake's API server")?;
        server.children.push(krake);
        let http = reqwest::Client::new();
        // A list answered proves the server and its etcd are both up.
        crate::wait::eventually(
            std::time::Duration::from_secs(30),
            "Krake's API server answers a list",
            || {
                let http = http.clone();
                let url = format!("{}/core/roles", server.url);
                async move {
                    http.get(&url)
                        .send()
                        .await
                        .ok()?
                        .status()
                        .is_success()
                        .then_some(())
                }
            },
        )
        .await?;
        Ok(server)
    }
}

impl Drop for KrakeServer {
    fn drop(&mut self) {
        for child in &mut self.children {
            let _ = child.start_kill();
        }
    }
}
