//! `drover snapshot save|restore|status`, the way etcd's snapshots work from the outside: `save`
//! writes the running cluster's state (read linearizably from any node, so it holds every write
//! acknowledged before it) to an owner-only file (it holds the state's secrets) and checks it; `status` shows what a file holds and checks
//! its SHA-256; `restore` checks the file, then loads it into a running — normally new —
//! cluster, which refuses (exit 4) if it already holds anything unless `--force`.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::{Args, Subcommand};
use drover_model::snapshot;
use reqwest::{Method, StatusCode};

use super::lease::ServerArgs;
use super::resources::exit;

/// `drover snapshot` subcommands.
#[derive(Debug, Subcommand)]
pub enum SnapshotCommand {
    /// Save the cluster's state to FILE (operators).
    Save(SaveArgs),
    /// Load FILE into a running cluster, normally a new one (operators).
    Restore(RestoreArgs),
    /// What FILE holds, after checking its format, length and SHA-256.
    Status {
        /// The snapshot file.
        file: PathBuf,
    },
}

/// `drover snapshot save`.
#[derive(Debug, Args)]
pub struct SaveArgs {
    #[command(flatten)]
    server: ServerArgs,
    /// Where to write it (replaced only once the new file is complete and checked).
    file: PathBuf,
}

/// `drover snapshot restore`.
#[derive(Debug, Args)]
pub struct RestoreArgs {
    #[command(flatten)]
    server: ServerArgs,
    /// The snapshot file.
    file: PathBuf,
    /// Replace the state of a cluster that already holds leases, users or pool resources.
    #[arg(long)]
    force: bool,
}

fn describe(info: &snapshot::SnapshotInfo) -> String {
    format!(
        "revision {}, {} bytes of state, sha256 {}",
        info.revision, info.bytes, info.sha256
    )
}

fn code_of(status: StatusCode) -> u8 {
    match status {
        StatusCode::CONFLICT => exit::CONFLICT,
        StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN => exit::DENIED,
        StatusCode::SERVICE_UNAVAILABLE => exit::UNAVAILABLE,
        _ => exit::ERROR,
    }
}

async fn execute(command: SnapshotCommand) -> Result<u8> {
    match command {
        SnapshotCommand::Status { file } => {
            let bytes = std::fs::read(&file).with_context(|| format!("reading {}", file.display()))?;
            let (info, _) = snapshot::check(&bytes).with_context(|| file.display().to_string())?;
            println!("{}: {}", file.display(), describe(&info));
            Ok(0)
        }
        SnapshotCommand::Save(args) => {
            let servers = args.server.servers()?;
            let reply = match servers.try_send(Method::GET, "/snapshot", &[], None).await {
                Ok(reply) => reply,
                Err(error) => {
                    eprintln!("drover snapshot save: {error}");
                    return Ok(exit::UNAVAILABLE);
                }
            };
            if reply.status != StatusCode::OK {
                eprintln!("drover snapshot save: {}: {}", reply.status, reply.text.trim());
                return Ok(code_of(reply.status));
            }
            let bytes = reply.text.into_bytes();
            let (info, _) =
                snapshot::check(&bytes).context("the cluster sent a snapshot that does not check")?;
            write_owner_only(&args.file, &bytes)?;
            println!("saved {}: {}", args.file.display(), describe(&info));
            Ok(0)
        }
        SnapshotCommand::Restore(args) => {
            let bytes =
                std::fs::read(&args.file).with_context(|| format!("reading {}", args.file.display()))?;
            let (info, _) = snapshot::check(&bytes).with_context(|| args.file.display().to_string())?;
            let body = String::from_utf8(bytes).context("a snapshot is JSON text")?;
            let servers = args.server.servers()?;
            let query: &[(&str, &str)] = if args.force { &[("force", "true")] } else { &[] };
            let reply = match servers
                .try_send(Method::PUT, "/snapshot", query, Some(body))
                .await
            {
                Ok(reply) => reply,
                Err(error) => {
                    eprintln!("drover snapshot restore: {error}");
                    return Ok(exit::UNAVAILABLE);
                }
            };
            if reply.status != StatusCode::OK {
                eprintln!("drover snapshot restore: {}: {}", reply.status, reply.text.trim());
                return Ok(code_of(reply.status));
            }
            println!("restored {}: {}", args.file.display(), describe(&info));
            Ok(0)
        }
    }
}

/// Writes a snapshot file: owner-only, since the state holds secrets (join tokens, secret
/// resources), to `FILE.part`, synced, then renamed, so a crash leaves no half file.
pub(super) fn write_owner_only(file: &std::path::Path, bytes: &[u8]) -> Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    let partial = file.with_extension("part");
    let mut out = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&partial)
        .with_context(|| format!("writing {}", partial.display()))?;
    std::io::Write::write_all(&mut out, bytes).with_context(|| format!("writing {}", partial.display()))?;
    out.sync_all()?;
    std::fs::rename(&partial, file).with_context(|| format!("writing {}", file.display()))?;
    Ok(())
}

/// Runs `drover snapshot …`.
pub async fn run(command: SnapshotCommand) -> ExitCode {
    match execute(command).await {
        Ok(code) => ExitCode::from(code),
        Err(error) => {
            eprintln!("drover snapshot: {error:#}");
            ExitCode::from(exit::ERROR)
        }
    }
}
