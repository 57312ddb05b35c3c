//! A real npm registry for the marketplace's tests: Verdaccio (installed by `make setup`,
//! scripts/setup-verdaccio.sh) on a free loopback port with its storage in a temporary
//! directory, one user (`ci`, password `pw`), no sign-up and no uplinks (it never reaches out),
//! every package readable and publishable by authenticated users only. Stopped when dropped.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use tempfile::TempDir;

use crate::agent::free_port;

/// The registry's one user.
pub const USER: &str = "ci";
/// Its password.
pub const PASSWORD: &str = "pw";

/// A running Verdaccio.
pub struct Verdaccio {
    dir: TempDir,
    child: Option<Child>,
    port: u16,
}

fn binary() -> PathBuf {
    let dir = std::env::var_os("DROVER_VERDACCIO_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(std::env::var_os("HOME").unwrap_or_default()).join(".cache/drover/verdaccio")
        });
    dir.join("node_modules/.bin/verdaccio")
}

impl Verdaccio {
    /// Starts one and waits (at most 30 s) until it answers.
    pub fn start() -> Result<Self> {
        let binary = binary();
        if std::fs::metadata(&binary).is_err() {
            bail!(
                "{} is missing: run `make setup` (scripts/setup-verdaccio.sh)",
                binary.display()
            );
        }
        let dir = TempDir::new()?;
        let port = free_port()?;
        std::fs::write(
            dir.path().join("htpasswd"),
            format!("{USER}:{{PLAIN}}{PASSWORD}\n"),
        )?;
        std::fs::write(
            dir.path().join("config.yaml"),
            format!(
                "storage: ./storage
auth:
  htpasswd:
    file: ./htpasswd
    max_users: -1
uplinks: {{}}
packages:
  '@*/*': {{ access: $authenticated, publish: $authenticated, unpublish: $authenticated }}
  '**': {{ access: $authenticated, publish: $authenticated, unpublish: $authenticated }}
web: {{ enable: false }}
middlewares: {{ audit: {{ enabled: false }} }}
log: {{ type: stdout, format: pretty, level: warn }}
listen: 127.0.0.1:{port}
"
            ),
        )?;
        let log = std::fs::File::create(dir.path().join("verdaccio.log"))?;
        let child = Command::new(&binary)
            .arg("--config")
            .arg(dir.path().join("config.yaml"))
            .current_dir(dir.path())
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            .spawn()
            .with_context(|| format!("starting {}", binary.display()))?;
        let mut registry = Self {
            dir,
            child: Some(child),
            port,
        };
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Ok(mut stream) = std::net::TcpStream::connect(("127.0.0.1", port)) {
                use std::io::{Read, Write};
                let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
                let _ = stream.write_all(b"GET /-/ping HTTP/1.0\r\n\r\n");
                let mut answer = String::new();
                let _ = stream.read_to_string(&mut answer);
                if answer.starts_with("HTTP/1.1 200") {
                    return Ok(registry);
                }
            }
            if let Some(status) = registry.child.as_mut().and_then(|c| c.try_wait().ok().flatten()) {
                bail!("verdaccio exited at start ({status}): {}", registry.log());
            }
            if Instant::now() >= deadline {
                bail!("verdaccio did not answer within 30 s: {}", registry.log());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// `http://127.0.0.1:<port>`.
    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// What it logged.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("verdaccio.log")).unwrap_or_default()
    }

    /// An npm user configuration file holding the user's credentials for this registry.
    pub fn npmrc(&self) -> Result<PathBuf> {
        use base64::Engine;
        let path = self.dir.path().join("npmrc");
        let auth = base64::engine::general_purpose::STANDARD.encode(format!("{USER}:{PASSWORD}"));
        std::fs::write(&path, format!("//127.0.0.1:{}/:_auth={auth}\n", self.port))?;
        Ok(path)
    }

    /// `npm publish <dir>` to this registry with the real npm client, as anyone holding
    /// credentials to it may publish, around Drover.
    pub fn npm_publish(&self, dir: &std::path::Path) -> Result<()> {
        self.npm(&[std::ffi::OsStr::new("publish"), dir.as_os_str()])
            .map(drop)
    }

    /// `npm view <args…> --json` against this registry, as the real npm client answers it.
    pub fn npm_view(&self, args: &[&str]) -> Result<serde_json::Value> {
        let mut all: Vec<&std::ffi::OsStr> = vec![std::ffi::OsStr::new("view")];
        all.extend(args.iter().map(std::ffi::OsStr::new));
        all.push(std::ffi::OsStr::new("--json"));
        Ok(serde_json::from_slice(&self.npm(&all)?)?)
    }

    /// The real npm client run with `args` against this registry and its credentials; what it
    /// printed, or its words when it failed.
    fn npm(&self, args: &[&std::ffi::OsStr]) -> Result<Vec<u8>> {
        let output = Command::new("npm")
            .args(args)
            .arg("--registry")
            .arg(format!("{}/", self.endpoint()))
            .arg("--userconfig")
            .arg(self.npmrc()?)
            .output()
            .context("running npm")?;
        if !output.status.success() {
            bail!(
                "npm {args:?} failed: {}{}",
                String::from_utf8_lossy(&output.stdout),
                String::from_utf8_lossy(&output.stderr)
            );
        }
        Ok(output.stdout)
    }
}

impl Drop for Verdaccio {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}
