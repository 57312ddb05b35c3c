//! The side-by-side table: its header (date, machine, versions, method), one line per row, and
//! the generated section of `docs/BENCHMARKS.md` it replaces.

use std::fmt::Write as _;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use anyhow::{Context, Result};

use crate::compare_args::CompareArgs;
use crate::driver::Cell;
use crate::grpc::GrpcCell;

/// One row of the table.
pub struct Row {
    /// What ran.
    pub workload: &'static str,
    /// Clients (or holders).
    pub clients: usize,
    /// Drover's figures.
    pub drover: Cell,
    /// etcd's figures through its JSON gateway, where it has the workload.
    pub etcd: Option<Cell>,
    /// etcd's figures through its Go client over gRPC, when measured.
    pub etcd_grpc: Option<GrpcCell>,
}

/// Marks the start of the generated section.
const START: &str = "<!-- drover-bench compare: start -->";
/// Marks its end.
const END: &str = "<!-- drover-bench compare: end -->";

fn output(program: &str, args: &[&str]) -> String {
    Command::new(program)
        .args(args)
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default()
}

fn cpu_model() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|info| {
            info.lines()
                .find_map(|l| l.strip_prefix("model name"))
                .map(|l| l.trim_start_matches([' ', '\t', ':']).to_string())
        })
        .unwrap_or_else(|| "unknown CPU".into())
}

/// Date, machine, versions and method.
pub fn header(args: &CompareArgs, duration: Duration, warmup: Duration) -> String {
    let mut text = String::new();
    let _ = writeln!(
        text,
        "Run {} on {} ({} cores, {}), kernel {}; Drover {} (release build), {}.",
        output("date", &["-u", "+%Y-%m-%d %H:%M UTC"]),
        output("hostname", &[]),
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        cpu_model(),
        output("uname", &["-r"]),
        output(
            "git",
            &["-C", env!("CARGO_MANIFEST_DIR"), "rev-parse", "--short", "HEAD"]
        ),
        output("etcd", &["--version"]).lines().next().unwrap_or("etcd"),
    );
    let flags: String = args
        .drover_flags
        .iter()
        .map(|f| format!(" --drover-flag={f}"))
        .collect();
    let grpc = if args.etcd_grpc_load.is_some() {
        " --etcd-grpc-load etcdgrpcload"
    } else {
        ""
    };
    let first = match args.first_node {
        Some(crate::compare_args::FirstNode::Leader) => " --first-node leader",
        Some(crate::compare_args::FirstNode::Follower) => " --first-node follower",
        None => "",
    };
    let _ = writeln!(
        text,
        "Command: `drover-bench compare --concurrency {} --holders {} --duration {} --warmup {}{grpc}{first}{flags}` \
         (`make bench`). Both clusters: three members on 127.0.0.1, default timings, every write \
         synced to disk before it is acknowledged; clients spread over all members, kept-alive \
         connections, one Rust HTTP/JSON client for both (etcd through its v3 JSON gateway); \
         {} s measured after {} s warm-up per row, Drover first, then etcd. Ratio = Drover / etcd. \
         gRPC: the same etcd cluster through etcd's own Go client (`bench/etcdgrpcload`, etcd 3.4's \
         clientv3 from Debian; at most 16 connections shared by the clients; puts of new keys, ranges \
         of one key), measured right after the gateway row.\n",
        join(&args.concurrency),
        join(&args.holders),
        args.duration,
        args.warmup,
        duration.as_secs(),
        warmup.as_secs(),
    );
    let _ = writeln!(
        text,
        "| workload | clients | Drover ops/s | etcd ops/s | ratio | Drover p50 / p99 ms | etcd p50 / p99 ms | p99 ratio | errors D / E | etcd gRPC ops/s | ratio vs gRPC | etcd gRPC p50 / p99 ms |"
    );
    let _ = writeln!(
        text,
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    );
    text
}

fn join(values: &[usize]) -> String {
    values.iter().map(usize::to_string).collect::<Vec<_>>().join(",")
}

fn latency(cell: &Cell) -> String {
    format!(
        "{:.2} / {:.2}",
        cell.samples.quantile_ms(0.5),
        cell.samples.quantile_ms(0.99)
    )
}

/// One table line.
pub fn row_line(row: &Row) -> String {
    let drover = &row.drover;
    let gateway = match &row.etcd {
        Some(etcd) => format!(
            "{:.0} | {:.2} | {} | {} | {:.2} | {} / {}",
            etcd.rate(),
            drover.rate() / etcd.rate().max(f64::MIN_POSITIVE),
            latency(drover),
            latency(etcd),
            drover.samples.quantile_ms(0.99) / etcd.samples.quantile_ms(0.99).max(f64::MIN_POSITIVE),
            drover.errors,
            etcd.errors,
        ),
        None => format!("— | — | {} | — | — | {} / —", latency(drover), drover.errors),
    };
    let grpc = match &row.etcd_grpc {
        Some(grpc) => format!(
            "{:.0} | {:.2} | {:.2} / {:.2}{}",
            grpc.throughput,
            drover.rate() / grpc.throughput.max(f64::MIN_POSITIVE),
            grpc.p50_ms,
            grpc.p99_ms,
            if grpc.errors > 0 {
                format!(" ({} errors)", grpc.errors)
            } else {
                String::new()
            },
        ),
        None => "— | — | —".to_string(),
    };
    format!(
        "| {} | {} | {:.0} | {gateway} | {grpc} |",
        row.workload,
        row.clients,
        drover.rate(),
    )
}

/// Replaces the generated section of `path` (between the markers) with `table`, or appends a
/// new section when the markers are missing.
pub fn write_section(path: &Path, table: &str) -> Result<()> {
    let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let section = format!("{START}\n{table}{END}");
    let updated = match (text.find(START), text.find(END)) {
        (Some(start), Some(end)) if end > start => {
            format!("{}{section}{}", &text[..start], &text[end + END.len()..])
        }
        _ => format!(
            "{}\n## Drover and etcd side by side\n\n{section}\n",
            text.trim_end()
        ),
    };
    std::fs::write(path, updated).with_context(|| format!("writing {}", path.display()))
}
