//! `drover service logs SERVICE [INSTANCE] [--role R] [--tail N] [-f]`: what a service's
//! instances wrote, read from their agents through any node, as `kubectl logs` shows a pod's.
//! With several instances each line is prefixed with `[instance]`. `-f` follows: every second
//! it asks for what each instance wrote after the last read (the API's `from` offset, so no
//! line is shown twice and none is skipped, rotation included), picks up instances that a
//! scale or a new revision started and says on stderr when one went; it ends with Ctrl-C, or
//! when the service is deleted.

use std::collections::BTreeMap;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Args, Subcommand};
use reqwest::Method;

use super::resources::{call, exit, finish, tenant_of, Common, Failure};
use super::server::Reply;

/// `drover service` subcommands.
#[derive(Debug, Subcommand)]
pub enum ServiceCommand {
    /// Print what a service's instances wrote (stdout and stderr); `-f` follows.
    Logs(LogsArgs),
}

/// `drover service logs`.
#[derive(Debug, Args)]
pub struct LogsArgs {
    /// The service.
    #[arg(value_name = "SERVICE")]
    name: String,
    /// One instance (every instance of the service's roles when left out).
    instance: Option<String>,
    /// Only this role's instances (every role when left out).
    #[arg(long)]
    role: Option<String>,
    /// Lines to show from each instance's end before following (at most 10,000).
    #[arg(long, default_value_t = 100)]
    tail: u32,
    /// Keep printing what the instances write.
    #[arg(short, long)]
    follow: bool,
    #[command(flatten)]
    common: Common,
}

/// How often `-f` asks for new output.
const FOLLOW_EVERY: Duration = Duration::from_secs(1);

/// Runs a `drover service` command.
pub async fn run(command: ServiceCommand) -> ExitCode {
    match command {
        ServiceCommand::Logs(args) => finish(logs(args).await),
    }
}

/// One followed instance: its role, where its next read starts, and an unfinished last line.
struct Followed {
    role: String,
    next: Option<u64>,
    partial: String,
}

async fn logs(args: LogsArgs) -> Result<(), Failure> {
    let tenant = tenant_of(&args.common)?.to_string();
    let base = format!("/api/1.0-beta/tenant/{tenant}");
    let mut followed: BTreeMap<String, Followed> = BTreeMap::new();
    let mut first = true;
    loop {
        let instances = match instances(&args, &base).await {
            Ok(instances) => instances,
            // Deleted while followed: done.
            Err(failure) if !first && failure.code == exit::NOT_FOUND => {
                eprintln!("drover: service {} is gone", args.name);
                return Ok(());
            }
            // No node answered for a moment: keep every offset and ask again.
            Err(failure) if !first && matches!(failure.code, exit::TIMEOUT | exit::UNAVAILABLE) => {
                eprintln!("drover: {}", failure.message);
                tokio::select! {
                    _ = tokio::time::sleep(FOLLOW_EVERY) => continue,
                    _ = tokio::signal::ctrl_c() => return Ok(()),
                }
            }
            Err(failure) => return Err(failure),
        };
        if first && instances.is_empty() {
            return Err(Failure {
                code: exit::NOT_FOUND,
                message: match &args.instance {
                    Some(id) => format!("{id} is not an instance of {}", args.name),
                    None => format!("{} runs no instance now", args.name),
                },
            });
        }
        let prefixed = args.instance.is_none() && (instances.len() > 1 || followed.len() > 1);
        followed.retain(|id, _| {
            let still = instances.contains_key(id);
            if !still && !first {
                eprintln!("drover: instance {id} went");
            }
            still
        });
        for (id, role) in instances {
            let entry = followed.entry(id).or_insert_with(|| Followed {
                role,
                next: None,
                partial: String::new(),
            });
            // New instances of a later round are shown from their start.
            if !first && entry.next.is_none() {
                entry.next = Some(0);
            }
        }
        for (id, instance) in &mut followed {
            let path = format!(
                "{base}/logs/service/{}/role/{}/instance/{id}",
                args.name, instance.role
            );
            let query = match instance.next {
                Some(from) => vec![("from", from.to_string())],
                None => vec![("tail", args.tail.to_string())],
            };
            match read(&args.common, &path, &query).await {
                Ok(reply) => {
                    instance.next = reply
                        .number(drover_model::cluster::agent_api::LOG_OFFSET_HEADER)
                        .or(instance.next);
                    show(id, instance, &reply.text, prefixed);
                }
                Err(failure) if first || failure.code == exit::ERROR => return Err(failure),
                // An agent or node away for a moment: the offset stays, nothing is lost.
                Err(failure) => eprintln!("drover: {id}: {}", failure.message),
            }
        }
        if !args.follow {
            // An unfinished last line is shown as it is.
            for (id, instance) in followed.iter_mut().filter(|(_, i)| !i.partial.is_empty()) {
                show(id, instance, "\n", prefixed);
            }
            return Ok(());
        }
        first = false;
        tokio::select! {
            _ = tokio::time::sleep(FOLLOW_EVERY) => {}
            _ = tokio::signal::ctrl_c() => return Ok(()),
        }
    }
}

/// Prints `text`: as is, or line by line behind `[id]`, keeping an unfinished line back.
fn show(id: &str, instance: &mut Followed, text: &str, prefixed: bool) {
    if !prefixed {
        print!("{text}");
        return;
    }
    instance.partial.push_str(text);
    while let Some(end) = instance.partial.find('\n') {
        let line: String = instance.partial.drain(..=end).collect();
        print!("[{id}] {line}");
    }
}

/// The instances to show, by id, with their role.
async fn instances(args: &LogsArgs, base: &str) -> Result<BTreeMap<String, String>, Failure> {
    let roles: Vec<String> = match &args.role {
        Some(role) => vec![role.clone()],
        None => {
            let scale = call(
                &args.common,
                Method::GET,
                &format!("{base}/service/{}/scale", args.name),
                None,
            )
            .await?;
            scale["data"]
                .as_object()
                .map(|roles| roles.keys().cloned().collect())
                .unwrap_or_default()
        }
    };
    let mut found = BTreeMap::new();
    for role in roles {
        let answer = call(
            &args.common,
            Method::GET,
            &format!("{base}/service/{}/role/{role}", args.name),
            None,
        )
        .await?;
        if let Some(instances) = answer["data"]["instances"].as_object() {
            for id in instances.keys() {
                if args.instance.as_ref().is_none_or(|wanted| wanted == id) {
                    found.insert(id.clone(), role.clone());
                }
            }
        }
    }
    Ok(found)
}

async fn read(common: &Common, path: &str, query: &[(&str, String)]) -> Result<Reply, Failure> {
    let servers = common
        .server
        .servers()?
        .with_timeout(Duration::from_secs_f64(common.timeout.max(0.001)));
    let query: Vec<(&str, &str)> = query.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let reply = servers.try_send(Method::GET, path, &query, None).await?;
    if !reply.status.is_success() {
        return Err(Failure::of_status(reply.status, &reply.text));
    }
    Ok(reply)
}
