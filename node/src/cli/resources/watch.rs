//! `drover watch KIND [-- CMD]`: follows the API's watch stream of leases or services, printing
//! each event as a line of JSON or running a command for it.

use std::process::ExitCode;
use std::time::Duration;

use clap::Args;
use serde_json::Value;

use super::common::Common;
use super::failure::{exit, finish, Failure};
use super::kind::Kind;
use super::paths::path;

/// `drover watch KIND [-- CMD]`.
#[derive(Debug, Args)]
pub struct WatchArgs {
    /// What to watch: `leases` (of `-n`, or `-A`) or `services` (of `--tenant`).
    #[arg(value_enum)]
    kind: Kind,
    /// Run this for every event, the event's JSON on its stdin and its type in
    /// `DROVER_EVENT_TYPE`; without it, each event is printed as a line of JSON.
    #[arg(last = true)]
    command: Vec<String>,
    #[command(flatten)]
    common: Common,
}

/// Runs the watch's command for one event.
async fn run_for_event(command: &[String], event: &Value) -> Result<(), Failure> {
    let kind = event["type"].as_str().unwrap_or_default().to_string();
    let mut child = tokio::process::Command::new(&command[0])
        .args(&command[1..])
        .env("DROVER_EVENT_TYPE", kind)
        .stdin(std::process::Stdio::piped())
        .spawn()
        .map_err(|e| Failure {
            code: exit::ERROR,
            message: format!("cannot run {:?}: {e}", command[0]),
        })?;
    if let Some(mut stdin) = child.stdin.take() {
        use tokio::io::AsyncWriteExt;
        let _ = stdin.write_all(event.to_string().as_bytes()).await;
    }
    match child.wait().await {
        Ok(status) if !status.success() => eprintln!("drover watch: {:?} exited with {status}", command[0]),
        Err(e) => eprintln!("drover watch: {:?}: {e}", command[0]),
        Ok(_) => {}
    }
    Ok(())
}

/// `drover watch`: prints (or runs the command for) every event until the stream ends —
/// after `--timeout` seconds, the server's `timeoutSeconds` — or Ctrl-C; exit 0 then.
pub async fn watch(args: WatchArgs) -> ExitCode {
    let run = async {
        if !matches!(args.kind, Kind::Leases | Kind::Services) {
            return Err(Failure::usage("watch takes leases or services"));
        }
        if args.kind == Kind::Services && args.common.all_namespaces {
            return Err(Failure::usage(
                "services are watched in one tenant: give --tenant instead of -A",
            ));
        }
        let path = path(args.kind, None, &args.common)?;
        let seconds = args.common.timeout.max(1.0).ceil() as u64;
        let query = [
            ("watch", "true".to_string()),
            ("timeoutSeconds", seconds.to_string()),
        ];
        let query: Vec<(&str, &str)> = query.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let servers = args.common.server.servers()?;
        let mut response = servers
            .stream(&path, &query, Duration::from_secs(seconds + 30))
            .await?;
        let mut pending = Vec::new();
        loop {
            let chunk = tokio::select! {
                chunk = response.chunk() => chunk,
                _ = tokio::signal::ctrl_c() => return Ok(()),
            };
            let Some(chunk) = chunk.map_err(|e| Failure {
                code: exit::UNAVAILABLE,
                message: format!("the watch broke off: {e}"),
            })?
            else {
                return Ok(());
            };
            pending.extend_from_slice(&chunk);
            while let Some(end) = pending.iter().position(|b| *b == b'\n') {
                let line: Vec<u8> = pending.drain(..=end).collect();
                let Ok(event) = serde_json::from_slice::<Value>(&line) else {
                    continue;
                };
                if args.command.is_empty() {
                    println!("{event}");
                } else {
                    run_for_event(&args.command, &event).await?;
                }
            }
        }
    };
    finish(run.await)
}
