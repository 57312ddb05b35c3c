//! A real Prometheus server for tests, and a scrape target whose gauges the test sets.
//!
//! [`ScrapeTarget`] serves `/metrics` in the Prometheus text format on a free port of 127.0.0.1.
//! [`Prometheus`] runs Debian's `/usr/bin/prometheus` on another free port of 127.0.0.1 with a
//! temporary configuration and data directory, scraping one target; it can be killed with
//! SIGKILL and started again on the same port and data. Nothing here contacts any other host.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::fs::File;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use anyhow::{bail, ensure, Context, Result};
use serde_json::Value;
use tempfile::TempDir;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::process::{Child, Command};
use tokio::task::JoinHandle;
use tokio::time::Instant;

use crate::agent::free_port;

/// Where Debian's package installs the server.
const PROMETHEUS: &str = "/usr/bin/prometheus";
/// How many times a start is tried on a fresh port.
const STARTUP_ATTEMPTS: usize = 3;
/// How long Prometheus may take to answer `/-/ready`.
const STARTUP_TIMEOUT: Duration = Duration::from_secs(30);
/// How often Prometheus is polled.
const POLL: Duration = Duration::from_millis(100);
/// How far a queried value may be from the expected one.
const TOLERANCE: f64 = 1e-9;
/// The longest request head the scrape target reads.
const MAX_HEAD: usize = 64 * 1024;

/// Metric name to rendered label set (`k="v",...`) to value.
type Gauges = BTreeMap<String, BTreeMap<String, f64>>;

fn lock(gauges: &Mutex<Gauges>) -> std::sync::MutexGuard<'_, Gauges> {
    gauges.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A tiny HTTP server on 127.0.0.1 serving gauges at `/metrics`; its task stops on drop.
pub struct ScrapeTarget {
    addr: SocketAddr,
    gauges: Arc<Mutex<Gauges>>,
    task: JoinHandle<()>,
}

impl ScrapeTarget {
    /// Starts serving on a free port of 127.0.0.1, with no gauges yet.
    pub async fn start() -> Result<Self> {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
            .await
            .context("binding the scrape target")?;
        let addr = listener.local_addr()?;
        let gauges = Arc::new(Mutex::new(Gauges::new()));
        let task = tokio::spawn(serve(listener, gauges.clone()));
        Ok(Self { addr, gauges, task })
    }

    /// The address Prometheus scrapes.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Sets gauge `metric` with `labels` (in any order) to `value`.
    pub fn set(&self, metric: &str, labels: &[(&str, &str)], value: f64) {
        let mut labels = labels.to_vec();
        labels.sort_unstable();
        let rendered = labels
            .iter()
            .map(|(k, v)| format!("{k}=\"{}\"", escape(v)))
            .collect::<Vec<_>>()
            .join(",");
        lock(&self.gauges)
            .entry(metric.to_string())
            .or_default()
            .insert(rendered, value);
    }
}

impl Drop for ScrapeTarget {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Escapes a label value for the text format.
fn escape(value: &str) -> String {
    value
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// A sample value in the text format.
fn number(value: f64) -> String {
    match value {
        v if v.is_infinite() && v.is_sign_positive() => "+Inf".to_string(),
        v if v.is_infinite() => "-Inf".to_string(),
        v => v.to_string(),
    }
}

/// The gauges in the Prometheus text format (version 0.0.4).
fn render(gauges: &Gauges) -> String {
    let mut text = String::new();
    for (name, series) in gauges {
        let _ = writeln!(text, "# TYPE {name} gauge");
        for (labels, value) in series {
            if labels.is_empty() {
                let _ = writeln!(text, "{name} {}", number(*value));
            } else {
                let _ = writeln!(text, "{name}{{{labels}}} {}", number(*value));
            }
        }
    }
    text
}

/// The current gauges as text; the lock is held only here, never across an `await`.
fn metrics_text(gauges: &Mutex<Gauges>) -> String {
    render(&lock(gauges))
}

/// Accepts connections until the task is aborted, answering each in its own task.
async fn serve(listener: TcpListener, gauges: Arc<Mutex<Gauges>>) {
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            // Out of file descriptors, for instance: let some close.
            tokio::time::sleep(Duration::from_millis(10)).await;
            continue;
        };
        let gauges = gauges.clone();
        tokio::spawn(async move {
            let _ = tokio::time::timeout(Duration::from_secs(10), answer(stream, &gauges)).await;
        });
    }
}

/// Reads one request head and answers it, then closes the connection.
async fn answer(mut stream: TcpStream, gauges: &Mutex<Gauges>) -> std::io::Result<()> {
    let mut head = Vec::new();
    let mut buffer = [0u8; 4096];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        let read = stream.read(&mut buffer).await?;
        if read == 0 || head.len() > MAX_HEAD {
            return Ok(());
        }
        head.extend_from_slice(&buffer[..read]);
    }
    let head = String::from_utf8_lossy(&head);
    let path = head.split_whitespace().nth(1).unwrap_or_default();
    let (status, body) = if path == "/metrics" || path.starts_with("/metrics?") {
        ("200 OK", metrics_text(gauges))
    } else {
        ("404 Not Found", "not found\n".to_string())
    };
    let response = format!(
        "HTTP/1.1 {status}\r\nContent-Type: text/plain; version=0.0.4\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(response.as_bytes()).await?;
    stream.shutdown().await
}

/// A duration as Prometheus's configuration writes it (`1s`, `250ms`).
fn prometheus_duration(duration: Duration) -> String {
    if duration.subsec_millis() == 0 {
        format!("{}s", duration.as_secs())
    } else {
        format!("{}ms", duration.as_millis())
    }
}

/// A `prometheus` process on 127.0.0.1 scraping one target; dropping it kills the process.
pub struct Prometheus {
    dir: TempDir,
    port: u16,
    child: Option<Child>,
    http: reqwest::Client,
}

impl Prometheus {
    /// Starts Prometheus scraping `target` (on 127.0.0.1) every `scrape_interval`, evaluating
    /// rules as often, and waits until it is ready.
    pub async fn start(target: SocketAddr, scrape_interval: Duration) -> Result<Self> {
        Self::start_jobs(&[("drover-test", vec![target])], scrape_interval).await
    }

    /// Starts Prometheus scraping each job's targets (loopback addresses only) every
    /// `scrape_interval`, evaluating rules as often, and waits until it is ready.
    pub async fn start_jobs(jobs: &[(&str, Vec<SocketAddr>)], scrape_interval: Duration) -> Result<Self> {
        if !Path::new(PROMETHEUS).is_file() {
            bail!("prometheus is not installed: run `make setup` (Debian package prometheus)");
        }
        for target in jobs.iter().flat_map(|(_, targets)| targets) {
            ensure!(
                target.ip().is_loopback(),
                "the scrape target {target} is not a loopback address"
            );
        }
        ensure!(
            scrape_interval.as_millis() > 0,
            "the scrape interval must be at least 1ms"
        );
        let dir = TempDir::new().context("creating prometheus's directory")?;
        let interval = prometheus_duration(scrape_interval);
        let mut config = format!(
            "global:\n  scrape_interval: {interval}\n  scrape_timeout: {interval}\n  evaluation_interval: {interval}\nscrape_configs:\n"
        );
        for (job, targets) in jobs {
            let list: Vec<String> = targets.iter().map(|t| format!("\"{t}\"")).collect();
            config.push_str(&format!(
                "  - job_name: {job}\n    static_configs:\n      - targets: [{}]\n",
                list.join(", ")
            ));
        }
        std::fs::write(dir.path().join("prometheus.yml"), config).context("writing prometheus.yml")?;
        let http = reqwest::Client::builder()
            .no_proxy()
            .timeout(Duration::from_secs(10))
            .build()
            .context("building an HTTP client")?;
        let mut prometheus = Self {
            dir,
            port: 0,
            child: None,
            http,
        };
        let mut last_failure = String::new();
        for _ in 0..STARTUP_ATTEMPTS {
            prometheus.port = free_port()?;
            prometheus.spawn()?;
            match prometheus.wait_ready().await {
                Ok(()) => return Ok(prometheus),
                Err(e) => {
                    last_failure = format!("{e:#}");
                    prometheus.stop().await?;
                }
            }
        }
        bail!("prometheus did not start in {STARTUP_ATTEMPTS} attempts: {last_failure}")
    }

    /// Its base URL, `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// What Prometheus wrote to stdout and stderr.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.log_path()).unwrap_or_default()
    }

    fn log_path(&self) -> PathBuf {
        self.dir.path().join("prometheus.log")
    }

    fn spawn(&mut self) -> Result<()> {
        let log = File::options()
            .create(true)
            .append(true)
            .open(self.log_path())
            .context("opening prometheus.log")?;
        let child = Command::new(PROMETHEUS)
            .arg(format!(
                "--config.file={}",
                self.dir.path().join("prometheus.yml").display()
            ))
            .arg(format!(
                "--storage.tsdb.path={}",
                self.dir.path().join("data").display()
            ))
            .arg(format!("--web.listen-address=127.0.0.1:{}", self.port))
            .arg("--log.level=warn")
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            .kill_on_drop(true)
            .spawn()
            .with_context(|| format!("spawning {PROMETHEUS}"))?;
        self.child = Some(child);
        Ok(())
    }

    /// Waits until `GET /-/ready` answers 200, or fails when the process exits or time is up.
    async fn wait_ready(&mut self) -> Result<()> {
        let deadline = Instant::now() + STARTUP_TIMEOUT;
        let ready = format!("{}/-/ready", self.url());
        loop {
            if let Some(child) = self.child.as_mut() {
                if let Some(status) = child.try_wait()? {
                    self.child = None;
                    bail!("prometheus exited at start ({status}): {}", self.log());
                }
            }
            let answered = self.http.get(&ready).send().await;
            if answered.is_ok_and(|r| r.status() == reqwest::StatusCode::OK) {
                return Ok(());
            }
            if Instant::now() >= deadline {
                bail!(
                    "prometheus was not ready on {} within {STARTUP_TIMEOUT:?}: {}",
                    self.url(),
                    self.log()
                );
            }
            tokio::time::sleep(POLL).await;
        }
    }

    /// Kills Prometheus with SIGKILL and reaps it; its configuration and data stay.
    pub async fn stop(&mut self) -> Result<()> {
        if let Some(mut child) = self.child.take() {
            child.kill().await.context("killing prometheus")?;
        }
        Ok(())
    }

    /// Starts Prometheus again on the same port with the same configuration and data, and
    /// waits until it is ready.
    pub async fn restart(&mut self) -> Result<()> {
        self.stop().await?;
        self.spawn()?;
        self.wait_ready().await
    }

    /// The `data.result` of an instant query (an error when Prometheus refuses the query).
    pub async fn query(&self, query: &str) -> Result<serde_json::Value> {
        let answer: serde_json::Value = self
            .http
            .get(format!("{}/api/v1/query", self.url()))
            .query(&[("query", query)])
            .send()
            .await?
            .json()
            .await?;
        ensure!(answer["status"] == "success", "{query}: {answer}");
        Ok(answer["data"]["result"].clone())
    }

    /// Polls the instant query `query` until its result vector holds a sample equal to `value`,
    /// or fails after `deadline` with Prometheus's last answer.
    pub async fn wait_for_value(&self, query: &str, value: f64, deadline: Duration) -> Result<()> {
        let until = Instant::now() + deadline;
        let endpoint = format!("{}/api/v1/query", self.url());
        loop {
            let answer = async {
                let response = self.http.get(&endpoint).query(&[("query", query)]).send().await?;
                let status = response.status();
                Ok::<_, reqwest::Error>((status, response.text().await?))
            }
            .await;
            let last = match answer {
                Ok((_, body)) if has_value(&body, value) => return Ok(()),
                Ok((status, body)) => format!("{status}: {body}"),
                Err(e) => format!("{:#}", anyhow::Error::from(e)),
            };
            if Instant::now() >= until {
                bail!(
                    "`{query}` did not equal {value} within {deadline:?} at {}; last answer: {last}",
                    self.url()
                );
            }
            tokio::time::sleep(POLL).await;
        }
    }
}

/// Whether a query answer's result vector holds a sample equal to `value`.
fn has_value(body: &str, value: f64) -> bool {
    let Ok(answer) = serde_json::from_str::<Value>(body) else {
        return false;
    };
    answer["data"]["result"].as_array().is_some_and(|samples| {
        samples.iter().any(|sample| {
            sample["value"][1]
                .as_str()
                .and_then(|v| v.parse::<f64>().ok())
                .is_some_and(|got| (got - value).abs() <= TOLERANCE)
        })
    })
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        // Reap the process before the directory goes, so that it writes nothing there afterwards.
        if let Some(mut child) = self.child.take() {
            let _ = child.start_kill();
            let deadline = std::time::Instant::now() + Duration::from_secs(5);
            while matches!(child.try_wait(), Ok(None)) && std::time::Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(10));
            }
        }
    }
}
