//! `drover-bench compare`: Drover and etcd side by side, each a three-member cluster on loopback
//! started by the benchmark, the same workloads through the same HTTP/JSON client, alternating
//! between the two for every row, and a table with the ratios.

use std::fmt::Write as _;
use std::time::Duration;

use anyhow::{bail, Result};

use crate::compare_args::{CompareArgs, FirstNode};
use crate::driver::{drive, drive_measuring_cpu, http_client, Worker};
use crate::drover::{self, BoskosPair, DroverCluster, LeaseHolder, LeaseReader, LeaseWriter};
use crate::etcd::{self, EtcdCluster, KeepAlive, Putter, Ranger};
use crate::goals::{self, Measured};
use crate::grpc;
use crate::report::{self, Row};

/// The workloads, in the lettering.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Workload {
    Write,
    LinearizableRead,
    StaleRead,
    LeasingPair,
    Heartbeat,
}

impl Workload {
    fn title(self) -> &'static str {
        match self {
            Workload::Write => "(a) write: lease CAS replace / etcd put",
            Workload::LinearizableRead => "(b) linearizable get / range",
            Workload::StaleRead => "(c) stale get / serializable range",
            Workload::LeasingPair => "(d) Boskos acquire+release pair",
            Workload::Heartbeat => "(e) lease renewal every 1 s / keep-alive",
        }
    }

    /// The same workload through etcd's Go client over gRPC, where it has one.
    fn grpc_op(self) -> Option<crate::grpc::Op> {
        match self {
            Workload::Write => Some("put"),
            Workload::LinearizableRead => Some("range-l"),
            Workload::StaleRead => Some("range-s"),
            Workload::LeasingPair | Workload::Heartbeat => None,
        }
    }
}

fn boxed<W: Worker>(workers: Vec<W>) -> Vec<Box<dyn Worker>> {
    workers
        .into_iter()
        .map(|w| Box::new(w) as Box<dyn Worker>)
        .collect()
}

async fn drover_workers(
    cluster: &DroverCluster,
    workload: Workload,
    clients: usize,
) -> Result<Vec<Box<dyn Worker>>> {
    let http = http_client(clients);
    let mut writers = Vec::new();
    if matches!(workload, Workload::Write | Workload::Heartbeat) {
        for i in 0..clients {
            let node = cluster.node_for(i);
            let name = format!("w-{i}");
            let version = drover::ensure_lease(&http, node, &name).await?;
            writers.push(LeaseWriter::new(http.clone(), node, name, version)?);
        }
    }
    // Paced holders start once everything is prepared, so none begins behind its schedule.
    let first = tokio::time::Instant::now() + Duration::from_millis(50);
    Ok(match workload {
        Workload::Write => boxed(writers),
        Workload::LinearizableRead | Workload::StaleRead => boxed(
            (0..clients)
                .map(|i| {
                    LeaseReader::new(
                        http.clone(),
                        cluster.node_for(i),
                        "w-0",
                        workload == Workload::StaleRead,
                    )
                })
                .collect::<Result<_>>()?,
        ),
        Workload::LeasingPair => boxed(
            (0..clients)
                .map(|i| BoskosPair {
                    http: http.clone(),
                    base: format!("http://{}", cluster.node_for(i)),
                    owner: format!("bench-{i}"),
                })
                .collect(),
        ),
        Workload::Heartbeat => boxed(
            writers
                .into_iter()
                .enumerate()
                .map(|(i, writer)| LeaseHolder {
                    writer,
                    period: Duration::from_secs(1),
                    // Holders are spread evenly over the second.
                    next: first + Duration::from_micros((i as u64 * 1_000_000) / clients as u64),
                })
                .collect(),
        ),
    })
}

async fn etcd_workers(
    cluster: &EtcdCluster,
    workload: Workload,
    clients: usize,
) -> Result<Vec<Box<dyn Worker>>> {
    let http = http_client(clients);
    Ok(match workload {
        Workload::Write => boxed(
            (0..clients)
                .map(|i| Putter::new(http.clone(), cluster.node_for(i), &format!("w-{i}")))
                .collect::<Result<_>>()?,
        ),
        Workload::LinearizableRead | Workload::StaleRead => {
            etcd::put_once(&http, cluster.node_for(0), "w-0").await?;
            boxed(
                (0..clients)
                    .map(|i| {
                        Ranger::new(
                            http.clone(),
                            cluster.node_for(i),
                            "w-0",
                            workload == Workload::StaleRead,
                        )
                    })
                    .collect::<Result<_>>()?,
            )
        }
        Workload::LeasingPair => Vec::new(),
        Workload::Heartbeat => {
            let mut leases = Vec::new();
            for i in 0..clients {
                leases.push(etcd::grant_lease(&http, cluster.node_for(i), 10).await?);
            }
            // Paced holders start once every lease is granted, so none begins behind schedule.
            let first = tokio::time::Instant::now() + Duration::from_millis(50);
            let spacing = |i: usize| Duration::from_micros((i as u64 * 1_000_000) / clients as u64);
            boxed(
                leases
                    .iter()
                    .enumerate()
                    .map(|(i, id)| {
                        let node = cluster.node_for(i);
                        KeepAlive::new(http.clone(), node, id, Duration::from_secs(1), first + spacing(i))
                    })
                    .collect::<Result<_>>()?,
            )
        }
    })
}

/// A single client's write p50 through the leader and through a follower, and etcd's gRPC
/// client's single-client put p50 (from the rows when they have it, else measured now).
async fn single_client_p50s(
    drover_cluster: &mut DroverCluster,
    etcd_cluster: &EtcdCluster,
    rows: &[Row],
    args: &CompareArgs,
) -> Result<(f64, f64, Option<f64>)> {
    let warmup = Duration::from_secs(args.warmup);
    let duration = Duration::from_secs(args.duration);
    let mut p50 = Vec::new();
    for leader in [true, false] {
        drover_cluster.put_first(leader).await?;
        let cell = drive(
            drover_workers(drover_cluster, Workload::Write, 1).await?,
            warmup,
            duration,
        )
        .await;
        if cell.samples.len() == 0 {
            let through = if leader { "the leader" } else { "a follower" };
            bail!(
                "no single-client write through {through} succeeded ({} errors)",
                cell.errors
            );
        }
        p50.push(cell.samples.quantile_ms(0.5));
    }
    let from_rows = rows
        .iter()
        .find(|row| row.workload == Workload::Write.title() && row.clients == 1)
        .and_then(|row| row.etcd_grpc.as_ref())
        .map(|cell| cell.p50_ms);
    let etcd = match (from_rows, &args.etcd_grpc_load) {
        (Some(p50), _) => Some(p50),
        (None, Some(load)) => Some(
            grpc::measure(load, &etcd_cluster.nodes, "put", 1, warmup, duration)
                .await?
                .p50_ms,
        ),
        (None, None) => None,
    };
    Ok((p50[0], p50[1], etcd))
}

/// Runs every row, alternating Drover and etcd, prints the table and, if asked, writes it.
pub async fn run(args: CompareArgs) -> Result<()> {
    if args.concurrency.contains(&0) || args.holders.contains(&0) {
        bail!("--concurrency and --holders values must be at least 1");
    }
    let max_clients = args.concurrency.iter().copied().max().unwrap_or(1);
    let warmup = Duration::from_secs(args.warmup);
    let duration = Duration::from_secs(args.duration);
    println!("starting a three-node Drover cluster and a three-member etcd cluster on 127.0.0.1");
    let mut drover_cluster = DroverCluster::start(max_clients * 2, &args.drover_flags).await?;
    if let Some(first) = args.first_node {
        drover_cluster.put_first(first == FirstNode::Leader).await?;
        println!("client 0 talks to {} ({first:?})", drover_cluster.node_for(0));
    }
    let etcd_cluster = EtcdCluster::start().await?;

    let mut plan: Vec<(Workload, usize)> = Vec::new();
    for workload in [
        Workload::Write,
        Workload::LinearizableRead,
        Workload::StaleRead,
        Workload::LeasingPair,
    ] {
        plan.extend(args.concurrency.iter().map(|c| (workload, *c)));
    }
    plan.extend(args.holders.iter().map(|h| (Workload::Heartbeat, *h)));

    let terms_before = drover_cluster.highest_term().await?;
    let mut rows = Vec::new();
    let mut measured = Measured::default();
    for (workload, clients) in plan {
        let (drover, drover_cpu) = drive_measuring_cpu(
            drover_workers(&drover_cluster, workload, clients).await?,
            warmup,
            duration,
            &drover_cluster.pids(),
        )
        .await;
        let etcd_workers = etcd_workers(&etcd_cluster, workload, clients).await?;
        let etcd = if etcd_workers.is_empty() {
            None
        } else {
            let (cell, etcd_cpu) =
                drive_measuring_cpu(etcd_workers, warmup, duration, &etcd_cluster.pids()).await;
            if workload == Workload::Write && clients == 64 {
                let per_write = |cpu: f64, writes: usize| cpu * 1e6 / writes.max(1) as f64;
                measured.cpu_per_write_64 = Some((
                    per_write(drover_cpu, drover.samples.len()),
                    per_write(etcd_cpu, cell.samples.len()),
                ));
            }
            Some(cell)
        };
        let etcd_grpc = match (&args.etcd_grpc_load, workload.grpc_op()) {
            (Some(load), Some(op)) => {
                Some(grpc::measure(load, &etcd_cluster.nodes, op, clients, warmup, duration).await?)
            }
            _ => None,
        };
        let row = Row {
            workload: workload.title(),
            clients,
            drover,
            etcd,
            etcd_grpc,
        };
        println!("{}", report::row_line(&row));
        if row.clients == 64 {
            let grpc = row.etcd_grpc.as_ref().map(|cell| cell.throughput);
            match (workload, &row.etcd) {
                (Workload::Write, Some(etcd)) => {
                    measured.writes_64 = Some((row.drover.rate(), etcd.rate(), grpc));
                }
                (Workload::LinearizableRead, _) => measured.reads_64 = Some((row.drover.rate(), grpc)),
                _ => {}
            }
        }
        rows.push(row);
    }
    measured.single_p50 = Some(single_client_p50s(&mut drover_cluster, &etcd_cluster, &rows, &args).await?);
    let elections = drover_cluster.highest_term().await?.saturating_sub(terms_before);
    let memory = format!(
        "Elections in Drover during the run: {elections}. \
         Resident memory after the run: Drover nodes {:?} MiB, etcd members {:?} MiB.",
        drover_cluster
            .rss_kib()
            .iter()
            .map(|k| k / 1024)
            .collect::<Vec<_>>(),
        etcd_cluster
            .rss_kib()
            .iter()
            .map(|k| k / 1024)
            .collect::<Vec<_>>(),
    );
    drop(drover_cluster);
    drop(etcd_cluster);

    let mut table = report::header(&args, duration, warmup);
    for row in &mut rows {
        let _ = writeln!(table, "{}", report::row_line(row));
    }
    let _ = writeln!(table, "\n{memory}");
    let _ = writeln!(
        table,
        "\nGoals of the write path (docs/BENCHMARKS.md), from this run; single-client writes \
         measured again through the leader and through a follower after the rows above:\n\n{}",
        goals::render(&measured)
    );
    println!("\n{table}");
    if let Some(path) = &args.write {
        report::write_section(path, &table)?;
        println!("written to {}", path.display());
    }
    Ok(())
}
