//! `drover cluster recover` is in [`super::recover`].
//!
//! `drover cluster status`: every member of the control plane as the node that answers sees it
//! (role, term, commit and applied index, how far it lags the leader, version, whether it
//! answers), from `GET /cluster` of the first node of `--server` that answers — the way
//! `etcdctl endpoint status --cluster` shows it.
//!
//! Exit codes: 0 when healthy; 1 when degraded (no leader, a member that does not answer, or one
//! whose applied index is more than `--max-lag` entries behind the leader's commit index), each
//! reason on stderr; 6 when no node answered.

use std::io::IsTerminal;
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::{Args, Subcommand, ValueEnum};
use reqwest::{Method, StatusCode};
use serde_json::Value;

use super::lease::ServerArgs;

/// Exit code when degraded.
const DEGRADED: u8 = 1;
/// Exit code when no node answered.
const UNAVAILABLE: u8 = 6;

/// `drover cluster` subcommands.
#[derive(Debug, Subcommand)]
pub enum ClusterCommand {
    /// Every member's role, term, indexes, lag, version and reachability; non-zero when degraded.
    Status(StatusArgs),
    /// For a cluster that lost its quorum for good: read a stopped member's data directory into
    /// a snapshot file, to `drover snapshot restore` into a new cluster.
    Recover(super::recover::RecoverArgs),
}

/// How to print.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Output {
    /// Aligned columns (the default on a terminal).
    Table,
    /// The API's `GET /cluster` answer itself (the default when piped).
    Json,
}

/// `drover cluster status`.
#[derive(Debug, Args)]
pub struct StatusArgs {
    #[command(flatten)]
    server: ServerArgs,
    /// Output format: `table` on a terminal, `json` otherwise.
    #[arg(short, long, value_enum)]
    output: Option<Output>,
    /// Most entries a member's applied index may trail the leader's commit index and still count
    /// as healthy.
    #[arg(long, default_value_t = 1000)]
    max_lag: u64,
}

/// One member, as the table shows it.
struct Row {
    id: u64,
    role: String,
    term: String,
    commit: String,
    applied: String,
    lag: String,
    version: String,
    reachable: bool,
    api: String,
}

fn text(value: &Value) -> String {
    match value {
        Value::Null => "-".to_string(),
        Value::String(s) if s.is_empty() => "-".to_string(),
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn rows(view: &Value) -> Vec<Row> {
    let leader_commit = leader_commit(view);
    view["members"]
        .as_array()
        .map(|members| {
            members
                .iter()
                .map(|m| {
                    let applied = m["appliedIndex"].as_u64();
                    let lag = match (leader_commit, applied) {
                        (Some(commit), Some(applied)) => commit.saturating_sub(applied).to_string(),
                        _ => "-".to_string(),
                    };
                    Row {
                        id: m["id"].as_u64().unwrap_or_default(),
                        role: text(&m["role"]),
                        term: text(&m["term"]),
                        commit: text(&m["commitIndex"]),
                        applied: text(&m["appliedIndex"]),
                        lag,
                        version: text(&m["version"]),
                        reachable: m["reachable"] == true,
                        api: text(&m["apiAddr"]),
                    }
                })
                .collect()
        })
        .unwrap_or_default()
}

/// The leader's commit index, from its own member entry.
fn leader_commit(view: &Value) -> Option<u64> {
    let leader = view["leader"].as_u64()?;
    view["members"]
        .as_array()?
        .iter()
        .find(|m| m["id"].as_u64() == Some(leader))?["commitIndex"]
        .as_u64()
}

/// Why the cluster is degraded (empty when it is not).
pub fn degraded(view: &Value, max_lag: u64) -> Vec<String> {
    let mut why = Vec::new();
    if view["leader"].as_u64().is_none() {
        why.push("no leader".to_string());
    }
    let commit = leader_commit(view);
    for member in view["members"].as_array().into_iter().flatten() {
        let id = member["id"].as_u64().unwrap_or_default();
        if member["reachable"] != true {
            why.push(format!("member {id} does not answer: {}", text(&member["error"])));
            continue;
        }
        if let (Some(commit), Some(applied)) = (commit, member["appliedIndex"].as_u64()) {
            let lag = commit.saturating_sub(applied);
            if lag > max_lag {
                why.push(format!(
                    "member {id} is {lag} entries behind the leader (more than {max_lag})"
                ));
            }
        }
    }
    why
}

fn table(view: &Value) -> String {
    let header = [
        "ID",
        "ROLE",
        "TERM",
        "COMMIT",
        "APPLIED",
        "LAG",
        "VERSION",
        "REACHABLE",
        "API",
    ];
    let mut lines: Vec<[String; 9]> = vec![header.map(str::to_string)];
    for row in rows(view) {
        lines.push([
            row.id.to_string(),
            row.role,
            row.term,
            row.commit,
            row.applied,
            row.lag,
            row.version,
            if row.reachable { "yes" } else { "no" }.to_string(),
            row.api,
        ]);
    }
    let widths: Vec<usize> = (0..header.len())
        .map(|c| lines.iter().map(|l| l[c].chars().count()).max().unwrap_or(0))
        .collect();
    lines
        .iter()
        .map(|line| {
            let cells: Vec<String> = line
                .iter()
                .zip(&widths)
                .map(|(cell, width)| format!("{cell:<width$}"))
                .collect();
            cells.join("  ").trim_end().to_string()
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Runs `drover cluster …`; the exit code says whether the cluster is healthy.
pub async fn run(command: ClusterCommand) -> Result<ExitCode> {
    let args = match command {
        ClusterCommand::Status(args) => args,
        ClusterCommand::Recover(args) => return super::recover::run(args),
    };
    let servers = args.server.servers()?;
    let reply = match servers.send(Method::GET, "/cluster", &[], None).await {
        Ok(reply) => reply,
        Err(error) => {
            eprintln!("drover cluster status: {error}");
            return Ok(ExitCode::from(UNAVAILABLE));
        }
    };
    if reply.status != StatusCode::OK {
        eprintln!("drover cluster status: {}: {}", reply.status, reply.text);
        return Ok(ExitCode::from(UNAVAILABLE));
    }
    let view: Value =
        serde_json::from_str(&reply.text).context("GET /cluster answered something other than JSON")?;
    let output = args.output.unwrap_or(if std::io::stdout().is_terminal() {
        Output::Table
    } else {
        Output::Json
    });
    match output {
        Output::Json => println!("{}", serde_json::to_string_pretty(&view)?),
        Output::Table => println!("{}", table(&view)),
    }
    let why = degraded(&view, args.max_lag);
    for reason in &why {
        eprintln!("degraded: {reason}");
    }
    Ok(if why.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(DEGRADED)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn member(id: u64, role: &str, applied: u64, reachable: bool) -> Value {
        if reachable {
            json!({"id": id, "role": role, "term": 4, "commitIndex": 120, "appliedIndex": applied,
                "version": "0.1.0", "reachable": true, "apiAddr": format!("127.0.0.1:740{id}")})
        } else {
            json!({"id": id, "reachable": false, "error": "connection refused"})
        }
    }

    #[test]
    fn degraded_says_why() {
        let healthy = json!({"leader": 1, "term": 4, "members": [
            member(1, "leader", 120, true), member(2, "follower", 119, true), member(3, "follower", 120, true)]});
        assert!(degraded(&healthy, 1000).is_empty());
        let lagging = json!({"leader": 1, "members": [member(1, "leader", 120, true), member(2, "follower", 10, true)]});
        assert_eq!(
            degraded(&lagging, 100),
            ["member 2 is 110 entries behind the leader (more than 100)"]
        );
        let down =
            json!({"leader": null, "members": [member(1, "follower", 120, true), member(3, "", 0, false)]});
        assert_eq!(
            degraded(&down, 1000),
            ["no leader", "member 3 does not answer: connection refused"]
        );
    }

    #[test]
    fn the_table_has_a_row_per_member() {
        let view = json!({"leader": 1, "members": [member(1, "leader", 120, true), member(3, "", 0, false)]});
        let printed = table(&view);
        let lines: Vec<&str> = printed.lines().collect();
        assert_eq!(lines.len(), 3, "{printed}");
        assert!(lines[0].starts_with("ID  ROLE"), "{printed}");
        assert!(
            lines[1].contains("leader") && lines[1].contains("yes") && lines[1].contains("0.1.0"),
            "{printed}"
        );
        assert!(lines[2].starts_with("3 ") && lines[2].contains("no"), "{printed}");
    }
}
