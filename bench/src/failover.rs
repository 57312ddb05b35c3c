//! `drover-bench failover`: how long writes stop when the leader is SIGKILLed, measured the way
//! the outside probe does — `--writers` sequential writers, each request sent to the
//! next node in turn with a `--timeout-ms` deadline, 5 ms back-off after an error — for Drover
//! and for a three-member etcd in the same run. Per kill: the time from the SIGKILL to the
//! completion of the first successful write sent after it, and the longest gap between two
//! successful writes around it. With `--quiet SECONDS`, the writers first run that long with
//! no fault and the elections meanwhile are counted (Drover's term, etcd's leader changes).
//! Figures are printed, never asserted.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};
use clap::Args;
use drover_tests::process::ProcessCluster;
use reqwest::{Client, Url};

use crate::driver::{http_client, parsed_url};
use crate::etcd::EtcdCluster;
use crate::histogram::Samples;

/// `drover-bench failover` flags.
#[derive(Debug, Args)]
pub struct FailoverArgs {
    /// Leader SIGKILLs per system.
    #[arg(long, default_value_t = 30)]
    kills: usize,
    /// Sequential writers.
    #[arg(long, default_value_t = 8)]
    writers: usize,
    /// Each request's deadline, in milliseconds.
    #[arg(long, default_value_t = 200)]
    timeout_ms: u64,
    /// Before the kills: seconds of writes with no fault, counting elections.
    #[arg(long, default_value_t = 0)]
    quiet: u64,
    /// Measure Drover only.
    #[arg(long)]
    skip_etcd: bool,
    /// Measure etcd only.
    #[arg(long)]
    skip_drover: bool,
}

/// How long the writers run before each kill, and after the first write that succeeded.
const AROUND_KILL: Duration = Duration::from_secs(1);
/// A kill whose writes do not resume within this long is reported as such.
const RESUME_DEADLINE: Duration = Duration::from_secs(15);
/// Back-off after a failed write (the probe's).
const ERROR_BACKOFF: Duration = Duration::from_millis(5);

/// Which write a probe's writer sends.
#[derive(Debug, Clone, Copy)]
enum Dialect {
    /// An unconditional replace of the writer's own lease.
    Drover,
    /// A put of the writer's own key through the JSON gateway.
    Etcd,
}

/// One system under test.
enum System {
    Drover(ProcessCluster),
    Etcd(EtcdCluster),
}

impl System {
    fn name(&self) -> &'static str {
        match self {
            System::Drover(_) => "drover",
            System::Etcd(_) => "etcd",
        }
    }

    fn dialect(&self) -> Dialect {
        match self {
            System::Drover(_) => Dialect::Drover,
            System::Etcd(_) => Dialect::Etcd,
        }
    }

    /// Client addresses, member 1 first.
    fn nodes(&self) -> Vec<String> {
        match self {
            System::Drover(cluster) => (1..=3).map(|id| cluster.api_addr(id)).collect(),
            System::Etcd(cluster) => cluster.nodes.clone(),
        }
    }

    /// Each writer's write target: one URL per node.
    fn write_urls(&self, writer: usize) -> Result<Vec<Url>> {
        self.nodes()
            .iter()
            .map(|node| match self {
                System::Drover(_) => parsed_url(&crate::drover::lease_url(node, &format!("probe-{writer}"))),
                System::Etcd(_) => parsed_url(&format!("http://{node}/v3/kv/put")),
            })
            .collect()
    }

    /// The leader every running member agrees on (0-based).
    async fn leader(&self, http: &Client) -> Result<usize> {
        match self {
            System::Drover(cluster) => Ok(cluster.leader(Duration::from_secs(30)).await? as usize - 1),
            System::Etcd(cluster) => cluster.leader(http).await,
        }
    }

    fn kill(&mut self, member: usize) -> Result<()> {
        match self {
            System::Drover(cluster) => cluster.kill(member as u64 + 1),
            System::Etcd(cluster) => cluster.kill(member),
        }
    }

    /// Starts a killed member again and waits until every member agrees on a leader.
    async fn restart(&mut self, member: usize, http: &Client) -> Result<()> {
        match self {
            System::Drover(cluster) => {
                cluster.restart(member as u64 + 1)?;
                cluster.leader(Duration::from_secs(30)).await?;
            }
            System::Etcd(cluster) => {
                cluster.restart(member).await?;
                cluster.leader(http).await?;
            }
        }
        Ok(())
    }

    /// Elections so far, as the members count them: the highest Raft term (Drover's
    /// pre-vote keeps terms from moving without an election) or etcd's leader changes.
    async fn elections(&self) -> Result<u64> {
        let metric = match self {
            System::Drover(_) => "drover_raft_term",
            System::Etcd(_) => "etcd_server_leader_changes_seen_total",
        };
        crate::drover::highest_scraped(&self.nodes(), metric).await
    }
}

/// What the writers record: each successful write's (sent, completed) times, and failures.
#[derive(Default)]
struct Record {
    successes: Mutex<Vec<(Instant, Instant)>>,
    failures: AtomicU64,
    stop: AtomicBool,
}

impl Record {
    fn successes(&self) -> std::sync::MutexGuard<'_, Vec<(Instant, Instant)>> {
        self.successes.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// One writer: sends to the next node after every request, as the outside probe does.
async fn writer(dialect: Dialect, http: Client, urls: Vec<Url>, name: String, record: Arc<Record>) {
    let mut seq = 0u64;
    while !record.stop.load(Ordering::Relaxed) {
        let url = &urls[seq as usize % urls.len()];
        seq += 1;
        let sent = Instant::now();
        let ok = match dialect {
            Dialect::Drover => crate::drover::replace_lease(&http, url, &name, seq).await,
            Dialect::Etcd => crate::etcd::put_succeeds(&http, url, &name, seq).await,
        };
        if ok {
            record.successes().push((sent, Instant::now()));
        } else {
            record.failures.fetch_add(1, Ordering::Relaxed);
            tokio::time::sleep(ERROR_BACKOFF).await;
        }
    }
}

/// One kill's figures.
struct Kill {
    failover: Option<Duration>,
    max_gap: Duration,
}

/// Runs the quiet period and the kills against `system`; prints each kill and a summary.
async fn measure(mut system: System, args: &FailoverArgs) -> Result<Vec<Kill>> {
    let name = system.name();
    let http = Client::builder()
        .timeout(Duration::from_millis(args.timeout_ms))
        .pool_max_idle_per_host(args.writers)
        .tcp_nodelay(true)
        .build()?;
    let setup = http_client(args.writers);
    if let System::Drover(_) = system {
        // Each writer replaces its own lease; create them first.
        let node = system.nodes()[0].clone();
        for w in 0..args.writers {
            crate::drover::ensure_lease(&setup, &node, &format!("probe-{w}")).await?;
        }
    }
    let record = Arc::new(Record::default());
    let mut tasks = Vec::new();
    for w in 0..args.writers {
        let urls = system.write_urls(w)?;
        let key = match system {
            System::Drover(_) => format!("probe-{w}"),
            System::Etcd(_) => format!("failover/probe-{w}"),
        };
        tasks.push(tokio::spawn(writer(
            system.dialect(),
            http.clone(),
            urls,
            key,
            record.clone(),
        )));
    }
    if args.quiet > 0 {
        let before = system.elections().await?;
        let started = Instant::now();
        tokio::time::sleep(Duration::from_secs(args.quiet)).await;
        let writes = record.successes().len();
        let after = system.elections().await?;
        println!(
            "{name}: {} s with no fault, {writes} writes ({:.0}/s), {} failed, elections: {}",
            args.quiet,
            writes as f64 / started.elapsed().as_secs_f64(),
            record.failures.swap(0, Ordering::Relaxed),
            after.saturating_sub(before)
        );
        record.successes().clear();
    }
    let mut kills = Vec::new();
    for k in 1..=args.kills {
        tokio::time::sleep(AROUND_KILL).await;
        let leader = system.leader(&setup).await?;
        let window_start = Instant::now() - AROUND_KILL;
        let killed_at = Instant::now();
        system.kill(leader)?;
        let deadline = killed_at + RESUME_DEADLINE;
        let first = loop {
            let first = record
                .successes()
                .iter()
                .filter(|(sent, _)| *sent >= killed_at)
                .map(|(_, done)| *done)
                .min();
            if first.is_some() || Instant::now() >= deadline {
                break first;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        };
        tokio::time::sleep(AROUND_KILL).await;
        let mut done: Vec<Instant> = record
            .successes()
            .drain(..)
            .map(|(_, done)| done)
            .filter(|done| *done >= window_start)
            .collect();
        done.sort();
        let max_gap = done
            .windows(2)
            .map(|pair| pair[1] - pair[0])
            .max()
            .unwrap_or_default();
        let failover = first.map(|first| first - killed_at);
        println!(
            "{name} kill {k:>2}: member {} killed, writes again after {}, longest gap {:.0} ms, {} failed writes",
            leader + 1,
            failover.map_or_else(|| "never (15 s)".to_string(), |f| format!("{:.0} ms", ms(f))),
            ms(max_gap),
            record.failures.swap(0, Ordering::Relaxed)
        );
        kills.push(Kill { failover, max_gap });
        system
            .restart(leader, &setup)
            .await
            .with_context(|| format!("restarting {name} member {}", leader + 1))?;
    }
    record.stop.store(true, Ordering::Relaxed);
    for task in tasks {
        let _ = task.await;
    }
    Ok(kills)
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// The summary line of one system's kills.
fn summary(name: &str, kills: &[Kill]) -> String {
    let mut failovers = Samples::default();
    for failover in kills.iter().filter_map(|k| k.failover) {
        failovers.record(failover);
    }
    let mut gaps = Samples::default();
    for kill in kills {
        gaps.record(kill.max_gap);
    }
    format!(
        "{name:<7} {} kills ({} resumed): failover ms min {:.0} / median {:.0} / p90 {:.0} / max {:.0}; longest gap median {:.0} / max {:.0}",
        kills.len(),
        failovers.len(),
        failovers.quantile_ms(0.0),
        failovers.quantile_ms(0.5),
        failovers.quantile_ms(0.9),
        failovers.quantile_ms(1.0),
        gaps.quantile_ms(0.5),
        gaps.quantile_ms(1.0),
    )
}

/// Runs the probe against Drover, then etcd, and prints both summaries together.
pub async fn run(args: FailoverArgs) -> Result<()> {
    if args.kills == 0 || args.kills > 100 || args.writers == 0 || args.writers > 64 || args.quiet > 3600 {
        bail!("keep it bounded: 1-100 kills, 1-64 writers, --quiet at most 3600 s");
    }
    println!(
        "failover probe: {} writers, {} ms request timeout, round-robin over three members, {} leader SIGKILLs each",
        args.writers, args.timeout_ms, args.kills
    );
    let mut summaries = Vec::new();
    if !args.skip_drover {
        let cluster = ProcessCluster::start_with_exact_args(3, &[])?;
        cluster.leader(Duration::from_secs(30)).await?;
        let kills = measure(System::Drover(cluster), &args).await?;
        summaries.push(summary("drover", &kills));
    }
    if !args.skip_etcd {
        let cluster = EtcdCluster::start().await?;
        let kills = measure(System::Etcd(cluster), &args).await?;
        summaries.push(summary("etcd", &kills));
    }
    if summaries.is_empty() {
        return Err(anyhow!("--skip-drover and --skip-etcd leave nothing to measure"));
    }
    for line in summaries {
        println!("{line}");
    }
    Ok(())
}
