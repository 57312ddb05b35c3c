//! etcd over its native gRPC API, for the comparison: runs `etcdgrpcload` (etcd's own Go client,
//! `bench/etcdgrpcload/main.go`, built by `scripts/setup-bench.sh`) against the same three
//! members, once unmeasured for the warm-up and once measured, and reads the figures it prints.

use std::path::Path;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use serde::Deserialize;

/// gRPC connections the Go client opens at most; its workers share them.
const MAX_CONNECTIONS: usize = 16;

/// What one measured run printed.
#[derive(Debug, Clone, Deserialize)]
pub struct GrpcCell {
    /// Successful operations per second.
    pub throughput: f64,
    /// Median latency.
    pub p50_ms: f64,
    /// 99th percentile latency.
    pub p99_ms: f64,
    /// Failed operations.
    pub errors: u64,
}

/// The Go client's name for a workload: `put`, `range-l` (linearizable) or `range-s`.
pub type Op = &'static str;

async fn run_once(
    load: &Path,
    endpoints: &[String],
    op: Op,
    clients: usize,
    duration: Duration,
) -> Result<GrpcCell> {
    let output = tokio::process::Command::new(load)
        .arg(format!("-endpoints={}", endpoints.join(",")))
        .arg(format!("-conns={}", clients.min(MAX_CONNECTIONS)))
        .arg(format!("-clients={clients}"))
        // Bounded by time; the count only has to be out of reach.
        .arg("-total=100000000")
        .arg(format!("-duration={}ms", duration.as_millis()))
        .arg(format!("-op={op}"))
        .arg("-val-size=256")
        .kill_on_drop(true)
        .output()
        .await
        .with_context(|| format!("running {}", load.display()))?;
    if !output.status.success() {
        bail!(
            "{} {op} with {clients} clients exited with {}: {}",
            load.display(),
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        );
    }
    let text = String::from_utf8_lossy(&output.stdout);
    let line = text.lines().last().unwrap_or_default();
    serde_json::from_str(line).with_context(|| format!("reading what {} printed: {line:?}", load.display()))
}

/// A warm-up of `warmup`, then `duration` measured.
pub async fn measure(
    load: &Path,
    endpoints: &[String],
    op: Op,
    clients: usize,
    warmup: Duration,
    duration: Duration,
) -> Result<GrpcCell> {
    if !warmup.is_zero() {
        run_once(load, endpoints, op, clients, warmup).await?;
    }
    run_once(load, endpoints, op, clients, duration).await
}
