//! `drover cluster recover --data-dir DIR --out FILE [--through last|committed]`: for a
//! cluster that lost its quorum for good, the state of one stopped member, read from its data
//! directory alone (opened read-only, left as it was), written as a snapshot file that
//! `drover snapshot restore` loads into a new cluster — etcd's way (`etcdutl snapshot restore`
//! from a member's database) rather than forcing a one-member cluster out of the old data.
//! Pick the member whose log goes furthest (`drover cluster recover` prints each one's last
//! index; the highest keeps the most).

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::{Args, ValueEnum};
use drover_model::snapshot;
use drover_raft::Through;

/// How far into the member's log to go.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ThroughArg {
    /// Every entry the member holds (what etcd's --force-new-cluster keeps); its last ones may
    /// never have been acknowledged to their clients.
    Last,
    /// Only entries the member knew were committed (saved every 64 entries or 200 ms, so the
    /// newest committed ones may be left out).
    Committed,
}

/// `drover cluster recover`.
#[derive(Debug, Args)]
pub struct RecoverArgs {
    /// The stopped member's data directory (`--data-dir` of its `drover serve`).
    #[arg(long)]
    data_dir: PathBuf,
    /// The snapshot file to write (owner-only: it holds the state's secrets).
    #[arg(long)]
    out: PathBuf,
    /// How far into the member's log to go.
    #[arg(long, value_enum, default_value = "last")]
    through: ThroughArg,
}

/// Runs `drover cluster recover`; exit 1 with the reason when the directory cannot be read.
pub fn run(args: RecoverArgs) -> Result<ExitCode> {
    let through = match args.through {
        ThroughArg::Last => Through::Last,
        ThroughArg::Committed => Through::Committed,
    };
    let recovered = match drover_raft::recover(&args.data_dir, through) {
        Ok(recovered) => recovered,
        Err(error) => {
            eprintln!(
                "drover cluster recover: {}: {error} (is its node stopped?)",
                args.data_dir.display()
            );
            return Ok(ExitCode::from(1));
        }
    };
    let bytes = snapshot::write(&recovered.state).context("encoding the recovered state")?;
    let (info, _) = snapshot::check(&bytes).context("the recovered state does not check")?;
    super::snapshot::write_owner_only(&args.out, &bytes)?;
    println!(
        "recovered {} from {}: snapshot at entry {}, applied through entry {} (log ends at {}, last saved commit {}); revision {}, {} bytes, sha256 {}",
        args.out.display(),
        args.data_dir.display(),
        recovered.snapshot_index,
        recovered.applied_index,
        recovered.last_index,
        recovered.committed_index,
        info.revision,
        info.bytes,
        info.sha256,
    );
    println!(
        "next: start a new cluster (empty data directories) and run `drover snapshot restore {}`",
        args.out.display()
    );
    Ok(ExitCode::SUCCESS)
}
