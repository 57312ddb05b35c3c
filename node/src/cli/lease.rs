//! `drover lease acquire|release|list|metric`.
//!
//! `acquire … -- CMD` acquires a resource (waiting in the queue with a stable request id when
//! `--wait` is given), runs CMD with the resource in its environment, heartbeats while CMD runs
//! and releases when CMD exits or the CLI is interrupted. The heartbeat has no silent end: it
//! stops only with CMD or when the lease is lost, and then CMD is stopped and the exit is non-zero.

use std::process::ExitCode;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use clap::{Args, Subcommand};
use reqwest::{Method, StatusCode};
use serde_json::Value;

use super::Servers;

/// `drover lease` subcommands.
#[derive(Debug, Subcommand)]
pub enum LeaseCommand {
    /// Acquire a resource; with `-- CMD`, hold it while CMD runs.
    Acquire(AcquireArgs),
    /// Release a resource.
    Release(ReleaseArgs),
    /// List resources.
    List(ListArgs),
    /// Counts by state and owner for one type (Boskos `/metric`).
    Metric(MetricArgs),
}

/// The servers when neither a flag, `DROVER_SERVER` nor a context names any.
const DEFAULT_SERVERS: &str = "http://127.0.0.1:7401,http://127.0.0.1:7402,http://127.0.0.1:7403";

/// Where the cluster is.
#[derive(Debug, Args)]
pub struct ServerArgs {
    /// API URLs of the cluster's nodes, comma separated; any node answers (default: the
    /// context's, else http://127.0.0.1:7401,…7402,…7403).
    #[arg(long, env = "DROVER_SERVER")]
    pub server: Option<String>,
    /// The client context to use (`drover config`); the current one when left out.
    #[arg(long, env = "DROVER_CONTEXT")]
    pub context: Option<String>,
    /// Bearer token sent to the cluster (a static API token or a JWT), from the environment
    /// variable `DROVER_TOKEN` (never the command line, where `ps` shows it).
    #[arg(skip = crate::config::env_secret("DROVER_TOKEN"))]
    pub token: Option<String>,
    /// File holding the bearer token (read when `DROVER_TOKEN` is unset).
    #[arg(long, env = "DROVER_TOKEN_FILE")]
    pub token_file: Option<std::path::PathBuf>,
    /// PEM certificate(s) of the CA that signed the API's certificate, for `https://` servers.
    #[arg(long, env = "DROVER_CACERT")]
    pub cacert: Option<std::path::PathBuf>,
    /// PEM client certificate presented to `https://` servers (a node with
    /// `--api-client-ca-file` takes its CN as the user and its O as groups).
    #[arg(long, env = "DROVER_CERT", requires = "key")]
    pub cert: Option<std::path::PathBuf>,
    /// PEM private key of `--cert`.
    #[arg(long, env = "DROVER_KEY", requires = "cert")]
    pub key: Option<std::path::PathBuf>,
    /// Give up connecting to one node after this long and try the next (Go duration, as
    /// etcdctl's `--dial-timeout`): a node whose host vanished answers nothing.
    #[arg(long, default_value = "2s", env = "DROVER_DIAL_TIMEOUT")]
    pub dial_timeout: String,
}

impl ServerArgs {
    /// The nodes to talk to, with the token from `DROVER_TOKEN` or `--token-file`.
    pub fn servers(&self) -> anyhow::Result<Servers> {
        let context = super::contexts::selected(self.context.as_deref())?.unwrap_or_default();
        let server = self
            .server
            .clone()
            .or(context.server)
            .unwrap_or_else(|| DEFAULT_SERVERS.to_string());
        let token_file = self.token_file.clone().or(context.token_file);
        let cacert = self.cacert.clone().or(context.cacert);
        let from_file = match (&self.token, &token_file) {
            (None, Some(path)) => Some(
                std::fs::read_to_string(path)
                    .map_err(|e| anyhow::anyhow!("--token-file {}: {e}", path.display()))?
                    .trim()
                    .to_string(),
            ),
            _ => None,
        };
        let dial_timeout = drover_model::pool::parse_duration_ms(&self.dial_timeout)
            .map(Duration::from_millis)
            .map_err(|message| anyhow::anyhow!("--dial-timeout {:?}: {message}", self.dial_timeout))?;
        let servers = Servers::parse(
            &server,
            self.token.as_deref().or(from_file.as_deref()),
            dial_timeout,
        )?;
        let read = |flag: &str, path: &std::path::Path| {
            std::fs::read(path).map_err(|e| anyhow::anyhow!("--{flag} {}: {e}", path.display()))
        };
        let roots = cacert.map(|path| read("cacert", &path)).transpose()?;
        let identity = match (
            self.cert.clone().or(context.cert),
            self.key.clone().or(context.key),
        ) {
            (Some(cert), Some(key)) => {
                let mut pem = read("cert", &cert)?;
                pem.push(b'\n');
                pem.extend(read("key", &key)?);
                Some(pem)
            }
            (None, None) => None,
            _ => anyhow::bail!("a client certificate needs both --cert and --key"),
        };
        if roots.is_none() && identity.is_none() {
            return Ok(servers);
        }
        servers.with_tls(roots.as_deref(), identity.as_deref())
    }
}

/// `drover lease acquire`.
#[derive(Debug, Args)]
pub struct AcquireArgs {
    #[command(flatten)]
    server: ServerArgs,
    /// Resource type.
    #[arg(long = "type")]
    rtype: String,
    /// Owner name recorded on the resource.
    #[arg(long)]
    owner: String,
    /// State to take a resource from.
    #[arg(long, default_value = "free")]
    state: String,
    /// State the resource is in while held.
    #[arg(long, default_value = "busy")]
    dest: String,
    /// State to release into when CMD ends.
    #[arg(long, default_value = "dirty")]
    release_to: String,
    /// Wait in the queue until a resource is free.
    #[arg(long)]
    wait: bool,
    /// Give up waiting after this long (e.g. 30m); waits forever when unset.
    #[arg(long)]
    timeout: Option<String>,
    /// How often to ask while waiting.
    #[arg(long, default_value = "3s")]
    poll: String,
    /// Heartbeat interval while CMD runs.
    #[arg(long, default_value = "30s")]
    heartbeat: String,
    /// The command to run while holding the resource.
    #[arg(last = true)]
    command: Vec<String>,
}

/// `drover lease release`.
#[derive(Debug, Args)]
pub struct ReleaseArgs {
    #[command(flatten)]
    server: ServerArgs,
    /// Resource name.
    #[arg(long)]
    name: String,
    /// Owner that holds it.
    #[arg(long)]
    owner: String,
    /// State to release into.
    #[arg(long, default_value = "dirty")]
    dest: String,
    /// Fencing token of the grant; a stale one is refused.
    #[arg(long)]
    fencing_token: Option<u64>,
}

/// `drover lease list`.
#[derive(Debug, Args)]
pub struct ListArgs {
    #[command(flatten)]
    server: ServerArgs,
    /// Only this type.
    #[arg(long = "type")]
    rtype: Option<String>,
}

/// `drover lease metric`.
#[derive(Debug, Args)]
pub struct MetricArgs {
    #[command(flatten)]
    server: ServerArgs,
    /// Resource type.
    #[arg(long = "type")]
    rtype: String,
}

fn duration(flag: &str, text: &str) -> Result<Duration> {
    let ms = drover_model::pool::parse_duration_ms(text).map_err(|e| anyhow::anyhow!("--{flag}: {e}"))?;
    if ms == 0 {
        bail!("--{flag} must be greater than zero");
    }
    Ok(Duration::from_millis(ms))
}

/// Runs a `drover lease` subcommand.
pub async fn run(command: LeaseCommand) -> Result<ExitCode> {
    match command {
        LeaseCommand::Acquire(args) => acquire(args).await,
        LeaseCommand::Release(args) => {
            let servers = args.server.servers()?;
            let token = args.fencing_token.map(|t| t.to_string());
            let mut query = vec![
                ("name", args.name.as_str()),
                ("dest", args.dest.as_str()),
                ("owner", args.owner.as_str()),
            ];
            if let Some(token) = &token {
                query.push(("fencing_token", token));
            }
            let reply = servers.send(Method::POST, "/release", &query, None).await?;
            if reply.status != StatusCode::OK {
                bail!("release refused ({}): {}", reply.status, reply.text.trim());
            }
            eprintln!("released {} to {}", args.name, args.dest);
            Ok(ExitCode::SUCCESS)
        }
        LeaseCommand::List(args) => {
            let servers = args.server.servers()?;
            let query: Vec<(&str, &str)> = args
                .rtype
                .as_deref()
                .map(|t| vec![("type", t)])
                .unwrap_or_default();
            let reply = servers
                .send(Method::GET, "/pools/resources", &query, None)
                .await?;
            if reply.status != StatusCode::OK {
                bail!("list refused ({}): {}", reply.status, reply.text.trim());
            }
            let resources: Vec<Value> =
                serde_json::from_str(&reply.text).context("decoding the resource list")?;
            println!(
                "{:<32} {:<20} {:<12} {:<24} LASTUPDATE",
                "NAME", "TYPE", "STATE", "OWNER"
            );
            for r in resources {
                let field = |k: &str| r[k].as_str().unwrap_or_default().to_string();
                println!(
                    "{:<32} {:<20} {:<12} {:<24} {}",
                    field("name"),
                    field("type"),
                    field("state"),
                    field("owner"),
                    field("lastupdate")
                );
            }
            Ok(ExitCode::SUCCESS)
        }
        LeaseCommand::Metric(args) => {
            let servers = args.server.servers()?;
            let reply = servers
                .send(Method::GET, "/metric", &[("type", args.rtype.as_str())], None)
                .await?;
            if reply.status != StatusCode::OK {
                bail!("metric refused ({}): {}", reply.status, reply.text.trim());
            }
            println!("{}", reply.text.trim());
            Ok(ExitCode::SUCCESS)
        }
    }
}

async fn acquire(args: AcquireArgs) -> Result<ExitCode> {
    let servers = args.server.servers()?;
    let poll = duration("poll", &args.poll)?;
    let heartbeat = duration("heartbeat", &args.heartbeat)?;
    let deadline = args
        .timeout
        .as_deref()
        .map(|t| duration("timeout", t))
        .transpose()?
        .map(|d| tokio::time::Instant::now() + d);
    // One request id for the whole wait keeps this client's place in the queue.
    let request_id = uuid::Uuid::new_v4().to_string();
    let query = [
        ("type", args.rtype.as_str()),
        ("state", args.state.as_str()),
        ("dest", args.dest.as_str()),
        ("owner", args.owner.as_str()),
        ("request_id", request_id.as_str()),
    ];
    let started = tokio::time::Instant::now();
    let mut progress = args.wait.then(super::progress::Progress::start);
    let resource: Value = loop {
        let reply = servers.send(Method::POST, "/acquire", &query, None).await;
        match reply {
            Ok(reply) if reply.status == StatusCode::OK => break serde_json::from_str(&reply.text)?,
            Ok(reply) if reply.status == StatusCode::NOT_FOUND && reply.text.contains("does not exist") => {
                bail!("{}", reply.text.trim())
            }
            Ok(reply) if reply.status == StatusCode::NOT_FOUND && args.wait => {
                let place = match reply.number(drover_api::boskos::QUEUE_POSITION_HEADER) {
                    Some(n) => format!("{} in the queue", super::progress::ordinal(n)),
                    None => "queued".to_string(),
                };
                if let Some(progress) = &mut progress {
                    progress.say(&format!(
                        "waiting for a free {} resource: {place} (request {request_id})",
                        args.rtype
                    ));
                }
            }
            Ok(reply) if reply.status == StatusCode::NOT_FOUND => {
                eprintln!("{}", reply.text.trim());
                return Ok(ExitCode::from(1));
            }
            Ok(reply) => bail!("acquire refused ({}): {}", reply.status, reply.text.trim()),
            Err(e) if args.wait => {
                if let Some(progress) = &mut progress {
                    progress.say(&format!("cluster unreachable, retrying: {e}"));
                }
            }
            Err(e) => return Err(e),
        }
        if deadline.is_some_and(|d| tokio::time::Instant::now() + poll > d) {
            let gave_up = format!("gave up waiting after {:?}", started.elapsed());
            match progress.take() {
                Some(progress) => progress.finish(&gave_up),
                None => eprintln!("{gave_up}"),
            }
            return Ok(ExitCode::from(1));
        }
        tokio::time::sleep(poll).await;
    };
    let name = resource["name"].as_str().unwrap_or_default().to_string();
    let token = resource["fencing_token"].as_u64().unwrap_or_default();
    let acquired = format!("acquired {name} (type {}, fencing token {token})", args.rtype);
    match progress {
        Some(progress) => progress.finish(&acquired),
        None => eprintln!("{acquired}"),
    }
    if args.command.is_empty() {
        println!("{resource}");
        return Ok(ExitCode::SUCCESS);
    }
    let held = Held {
        servers,
        name,
        owner: args.owner,
        state: args.dest,
        token,
    };
    let code = hold_while_running(&held, &args.command, &resource, heartbeat).await;
    let released = held.release(&args.release_to).await;
    match (&code, released) {
        (_, Err(e)) => {
            eprintln!("release of {} failed: {e}", held.name);
            Ok(ExitCode::from(1))
        }
        (Ok(code), Ok(())) => {
            eprintln!("released {} to {}", held.name, args.release_to);
            Ok(ExitCode::from(*code))
        }
        (Err(e), Ok(())) => Err(anyhow::anyhow!("{e}")),
    }
}

struct Held {
    servers: Servers,
    name: String,
    owner: String,
    state: String,
    token: u64,
}

/// Why heartbeating stopped.
enum Beat {
    /// The lease is gone (reclaimed, superseded): stop the command.
    Lost(String),
}

impl Held {
    async fn heartbeat(&self) -> Result<(), Beat> {
        let token = self.token.to_string();
        let query = [
            ("name", self.name.as_str()),
            ("owner", self.owner.as_str()),
            ("state", self.state.as_str()),
            ("fencing_token", token.as_str()),
        ];
        match self.servers.send(Method::POST, "/update", &query, None).await {
            Ok(reply) if reply.status == StatusCode::OK => Ok(()),
            Ok(reply) if matches!(reply.status.as_u16(), 401 | 404 | 409) => {
                Err(Beat::Lost(format!("{}: {}", reply.status, reply.text.trim())))
            }
            // Transient: keep the command running and try again at the next beat.
            Ok(reply) => {
                eprintln!("heartbeat answered {}: {}", reply.status, reply.text.trim());
                Ok(())
            }
            Err(e) => {
                eprintln!("heartbeat failed, retrying: {e}");
                Ok(())
            }
        }
    }

    async fn release(&self, dest: &str) -> Result<()> {
        let token = self.token.to_string();
        let query = [
            ("name", self.name.as_str()),
            ("dest", dest),
            ("owner", self.owner.as_str()),
            ("fencing_token", token.as_str()),
        ];
        for _ in 0..5 {
            match self.servers.send(Method::POST, "/release", &query, None).await {
                Ok(reply) if reply.status == StatusCode::OK => return Ok(()),
                Ok(reply) => bail!("{}: {}", reply.status, reply.text.trim()),
                Err(e) => {
                    eprintln!("release failed, retrying: {e}");
                    tokio::time::sleep(Duration::from_secs(1)).await;
                }
            }
        }
        bail!("no server accepted the release")
    }
}

async fn hold_while_running(
    held: &Held,
    command: &[String],
    resource: &Value,
    heartbeat: Duration,
) -> Result<u8> {
    let user_data = resource["userdata"].to_string();
    let mut child = tokio::process::Command::new(&command[0])
        .args(&command[1..])
        .env("DROVER_LEASE_NAME", &held.name)
        .env("DROVER_LEASE_TYPE", resource["type"].as_str().unwrap_or_default())
        .env("DROVER_LEASE_TOKEN", held.token.to_string())
        .env("DROVER_LEASE_USERDATA", user_data)
        .spawn()
        .with_context(|| format!("cannot run {:?}", command[0]))?;
    let mut beats = tokio::time::interval(heartbeat);
    beats.tick().await;
    let mut terminate = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    loop {
        tokio::select! {
            status = child.wait() => {
                let status = status?;
                return Ok(status.code().map_or(1, |c| u8::try_from(c).unwrap_or(1)));
            }
            _ = tokio::signal::ctrl_c() => {
                eprintln!("interrupted: stopping the command and releasing {}", held.name);
                stop_child(&mut child).await;
                return Ok(130);
            }
            _ = terminate.recv() => {
                eprintln!("terminated: stopping the command and releasing {}", held.name);
                stop_child(&mut child).await;
                return Ok(143);
            }
            _ = beats.tick() => {
                if let Err(Beat::Lost(why)) = held.heartbeat().await {
                    eprintln!("lease on {} lost ({why}): stopping the command", held.name);
                    stop_child(&mut child).await;
                    bail!("lease lost: {why}");
                }
            }
        }
    }
}

/// Asks the command to stop (SIGTERM via `kill`), then kills it after a grace period.
async fn stop_child(child: &mut tokio::process::Child) {
    if let Some(pid) = child.id() {
        let _ = tokio::process::Command::new("kill")
            .arg("-TERM")
            .arg(pid.to_string())
            .status()
            .await;
    }
    if tokio::time::timeout(Duration::from_secs(10), child.wait())
        .await
        .is_err()
    {
        let _ = child.kill().await;
    }
}
