//! The load driver: a fixed number of workers, each running its operation in a loop over kept-alive
//! connections; a warm-up that is not counted, then a measured window. Workers time their own
//! operations, so a paced worker (a lease holder renewing every second) is not charged for its
//! idle time.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::histogram::Samples;

/// What one operation of a worker came to.
pub enum Step {
    /// It succeeded after this long.
    Ok(Duration),
    /// It failed (an error answer, a timeout, a refused connection).
    Failed,
}

/// The boxed future of one operation.
pub type StepFuture<'a> = Pin<Box<dyn Future<Output = Step> + Send + 'a>>;

/// One client of a workload: it owns its connection handle and whatever it must remember
/// between operations (a resource version, a lease id).
pub trait Worker: Send + 'static {
    /// Runs one operation (pacing itself if the workload is paced) and times it.
    fn step(&mut self) -> StepFuture<'_>;
}

/// Times `operation`, which reports success.
pub async fn timed(operation: impl Future<Output = bool>) -> Step {
    let started = Instant::now();
    if operation.await {
        Step::Ok(started.elapsed())
    } else {
        Step::Failed
    }
}

/// The figures of one measured window.
pub struct Cell {
    /// Latencies of the successful operations.
    pub samples: Samples,
    /// Failed operations.
    pub errors: u64,
    /// Length of the window.
    pub elapsed: Duration,
}

impl Cell {
    /// Successful operations per second.
    pub fn rate(&self) -> f64 {
        self.samples.len() as f64 / self.elapsed.as_secs_f64()
    }
}

/// A URL parsed once, for a worker that sends the same request over and over (parsing it per
/// request was 8 % of the load generator's CPU).
pub fn parsed_url(url: &str) -> anyhow::Result<reqwest::Url> {
    reqwest::Url::parse(url).map_err(|e| anyhow::anyhow!("bad benchmark URL {url}: {e}"))
}

/// Runs `workers` concurrently: `warmup` unmeasured, then `duration` measured.
pub async fn drive(workers: Vec<Box<dyn Worker>>, warmup: Duration, duration: Duration) -> Cell {
    drive_measuring_cpu(workers, warmup, duration, &[]).await.0
}

/// [`drive`], and the CPU seconds the processes `pids` used in the measured window.
pub async fn drive_measuring_cpu(
    workers: Vec<Box<dyn Worker>>,
    warmup: Duration,
    duration: Duration,
    pids: &[u32],
) -> (Cell, f64) {
    let measuring = Arc::new(AtomicBool::new(false));
    let stop = Arc::new(AtomicBool::new(false));
    let tasks: Vec<_> = workers
        .into_iter()
        .map(|mut worker| {
            let measuring = measuring.clone();
            let stop = stop.clone();
            tokio::spawn(async move {
                let mut samples = Samples::default();
                let mut errors = 0;
                while !stop.load(Ordering::Relaxed) {
                    let step = worker.step().await;
                    if !measuring.load(Ordering::Relaxed) {
                        continue;
                    }
                    match step {
                        Step::Ok(latency) => samples.record(latency),
                        Step::Failed => errors += 1,
                    }
                }
                (samples, errors)
            })
        })
        .collect();
    tokio::time::sleep(warmup).await;
    measuring.store(true, Ordering::Relaxed);
    let cpu_before = crate::proc::total_cpu_seconds(pids);
    let started = Instant::now();
    tokio::time::sleep(duration).await;
    measuring.store(false, Ordering::Relaxed);
    let elapsed = started.elapsed();
    let cpu = crate::proc::total_cpu_seconds(pids) - cpu_before;
    stop.store(true, Ordering::Relaxed);
    let mut cell = Cell {
        samples: Samples::default(),
        errors: 0,
        elapsed,
    };
    for task in tasks {
        if let Ok((samples, errors)) = task.await {
            cell.samples.merge(samples);
            cell.errors += errors;
        }
    }
    (cell, cpu)
}

/// A shared HTTP client sized for `clients` kept-alive connections. It neither follows
/// redirects nor retries (neither system sends redirects, and a retried request would be
/// counted once): those layers cost the client CPU that the nodes on the same cores need.
pub fn http_client(clients: usize) -> reqwest::Client {
    reqwest::Client::builder()
        .pool_max_idle_per_host(clients.max(1))
        .redirect(reqwest::redirect::Policy::none())
        .retry(reqwest::retry::never())
        .tcp_nodelay(true)
        .timeout(Duration::from_secs(10))
        .build()
        .unwrap_or_default()
}
