//! A `boskosctl`-compatible command set, so that CI scripts written for Boskos run unchanged:
//! `drover boskos acquire|release|metrics|heartbeat`, or the same through a `boskosctl` symlink
//! to `drover` (the binary looks at the name it was started under). Flags, output and exit
//! codes are boskosctl's (`cmd/boskosctl` in the Boskos sources): `--server-url` and
//! `--owner-name` on every command, `--username` and `--password-file` for HTTP Basic
//! credentials (Drover takes the password as its token); `acquire` and `metrics` print the
//! object as compact JSON, `release` and `heartbeat` a line of text; a failure is a message on
//! stderr and exit 1.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use clap::{Args, Parser, Subcommand};
use drover_model::pool::parse_duration_ms;
use reqwest::{Client, RequestBuilder, StatusCode};
use serde_json::Value;

/// How often a waiting acquire asks again (the Boskos client's `AcquireWait`).
const ACQUIRE_POLL: Duration = Duration::from_secs(3);

/// `boskosctl` as its own program (started through a symlink named `boskosctl`).
#[derive(Debug, Parser)]
#[command(
    name = "boskosctl",
    about = "Boskos command-line client for resource leasing (Drover)"
)]
pub struct BoskosCtl {
    #[command(flatten)]
    args: BoskosArgs,
}

/// boskosctl's flags and commands.
#[derive(Debug, Args)]
pub struct BoskosArgs {
    /// URL of the Boskos server (any Drover node).
    #[arg(long, global = true)]
    server_url: Option<String>,
    /// Username used to access the Boskos server.
    #[arg(long, global = true)]
    username: Option<String>,
    /// The path to password file used to access the Boskos server (a Drover token).
    #[arg(long, global = true)]
    password_file: Option<PathBuf>,
    /// Name identifying the user of this client.
    #[arg(long, global = true)]
    owner_name: Option<String>,
    #[command(subcommand)]
    command: BoskosCommand,
}

/// boskosctl's commands.
#[derive(Debug, Subcommand)]
pub enum BoskosCommand {
    /// Acquire a resource lease, best-effort or (with --timeout) blocking; prints it as JSON.
    Acquire {
        /// Type of resource to acquire.
        #[arg(long = "type")]
        rtype: String,
        /// State to acquire the resource in.
        #[arg(long)]
        state: String,
        /// Move resource to this state after acquiring.
        #[arg(long)]
        target_state: String,
        /// If set, retry this long until the resource has been acquired (Go duration).
        #[arg(long, default_value = "0s")]
        timeout: String,
    },
    /// Release a resource lease.
    Release {
        /// Name of the resource lease to release.
        #[arg(long)]
        name: String,
        /// Move resource to this state after releasing.
        #[arg(long)]
        target_state: String,
    },
    /// Get metrics on resource states, as JSON.
    Metrics {
        /// Type of resource to get metrics for.
        #[arg(long = "type")]
        rtype: String,
    },
    /// Send a heartbeat for a resource reservation every --period, for --timeout.
    Heartbeat {
        /// JSON resource lease object to send heartbeat for (what acquire printed).
        #[arg(long)]
        resource: String,
        /// Period to send heartbeats on (Go duration).
        #[arg(long, default_value = "30s")]
        period: String,
        /// How long to send heartbeats for (Go duration).
        #[arg(long, default_value = "5h")]
        timeout: String,
        /// How many failed heartbeats to tolerate.
        #[arg(long, default_value_t = 10)]
        retries: u32,
    },
}

struct Boskos {
    http: Client,
    url: String,
    owner: String,
    credentials: Option<(String, String)>,
}

impl Boskos {
    fn new(args: &BoskosArgs) -> Result<Self> {
        let url = args
            .server_url
            .clone()
            .context("required flag(s) \"server-url\" not set")?;
        let owner = args
            .owner_name
            .clone()
            .context("required flag(s) \"owner-name\" not set")?;
        let credentials = match &args.password_file {
            Some(path) => {
                let password = std::fs::read_to_string(path)
                    .with_context(|| format!("reading the password file {}", path.display()))?;
                Some((
                    args.username.clone().unwrap_or_default(),
                    password.trim().to_string(),
                ))
            }
            None => None,
        };
        let http = Client::builder().timeout(Duration::from_secs(30)).build()?;
        Ok(Self {
            http,
            url: url.trim_end_matches('/').to_string(),
            owner,
            credentials,
        })
    }

    fn request(&self, builder: RequestBuilder) -> RequestBuilder {
        match &self.credentials {
            Some((user, password)) => builder.basic_auth(user, Some(password)),
            None => builder,
        }
    }

    async fn post(
        &self,
        path: &str,
        query: &[(&str, &str)],
        body: Option<String>,
    ) -> Result<(StatusCode, String)> {
        let mut builder = self.request(self.http.post(format!("{}{path}", self.url)).query(query));
        if let Some(body) = body {
            builder = builder.body(body);
        }
        let response = builder.send().await?;
        Ok((response.status(), response.text().await.unwrap_or_default()))
    }

    async fn acquire(&self, rtype: &str, state: &str, dest: &str, timeout: Duration) -> Result<Value> {
        let request_id = uuid::Uuid::new_v4().to_string();
        let deadline = Instant::now() + timeout;
        loop {
            let mut query = vec![
                ("type", rtype),
                ("state", state),
                ("dest", dest),
                ("owner", self.owner.as_str()),
            ];
            if !timeout.is_zero() {
                query.push(("request_id", request_id.as_str()));
            }
            let (status, text) = self.post("/acquire", &query, None).await?;
            if status == StatusCode::OK {
                return serde_json::from_str(&text)
                    .context("the server answered something other than a resource");
            }
            let waiting = status == StatusCode::NOT_FOUND && !timeout.is_zero();
            if !waiting || Instant::now() + ACQUIRE_POLL > deadline {
                bail!("status {status}: {}", text.trim());
            }
            tokio::time::sleep(ACQUIRE_POLL).await;
        }
    }
}

fn duration(flag: &str, text: &str) -> Result<Duration> {
    parse_duration_ms(text)
        .map(Duration::from_millis)
        .map_err(|e| anyhow::anyhow!("invalid argument {text:?} for \"--{flag}\" flag: {e}"))
}

async fn heartbeat(
    client: &Boskos,
    resource: &str,
    period: Duration,
    timeout: Duration,
    retries: u32,
) -> Result<bool> {
    let resource: Value = serde_json::from_str(resource).context("failed to parse resource")?;
    let name = resource["name"]
        .as_str()
        .context("failed to parse resource: no name")?
        .to_string();
    let state = resource["state"].as_str().unwrap_or_default().to_string();
    let user_data = resource.get("userdata").cloned().unwrap_or(Value::Null);
    let body = if user_data.is_object() {
        Some(user_data.to_string())
    } else {
        None
    };
    let end = tokio::time::sleep(timeout);
    tokio::pin!(end);
    let mut tick = tokio::time::interval_at(tokio::time::Instant::now() + period, period);
    let mut failures = 0;
    loop {
        tokio::select! {
            _ = tick.tick() => {
                let query = [("name", name.as_str()), ("owner", client.owner.as_str()), ("state", state.as_str())];
                match client.post("/update", &query, body.clone()).await {
                    Ok((StatusCode::OK, _)) => {
                        failures = 0;
                        println!("heartbeat sent for resource {name:?}");
                    }
                    outcome => {
                        let why = match outcome {
                            Ok((status, text)) => format!("status {status}: {}", text.trim()),
                            Err(e) => e.to_string(),
                        };
                        eprintln!("failed to send heartbeat for resource {name:?}: {why}");
                        failures += 1;
                        if failures > retries {
                            return Ok(false);
                        }
                    }
                }
            }
            _ = tokio::signal::ctrl_c() => {
                println!("received interrupt, stopping heartbeats for resource {name:?}");
                return Ok(true);
            }
            _ = &mut end => {
                println!("reached timeout, stopping heartbeats for resource {name:?}");
                return Ok(true);
            }
        }
    }
}

async fn execute(args: BoskosArgs) -> Result<bool> {
    let client = Boskos::new(&args)?;
    match args.command {
        BoskosCommand::Acquire {
            rtype,
            state,
            target_state,
            timeout,
        } => {
            let timeout = duration("timeout", &timeout)?;
            let resource = client
                .acquire(&rtype, &state, &target_state, timeout)
                .await
                .context("failed to acquire a resource")?;
            println!("{}", serde_json::to_string(&resource)?);
            Ok(true)
        }
        BoskosCommand::Release { name, target_state } => {
            let query = [
                ("name", name.as_str()),
                ("dest", target_state.as_str()),
                ("owner", client.owner.as_str()),
            ];
            let (status, text) = client.post("/release", &query, None).await?;
            if status != StatusCode::OK {
                bail!(
                    "failed to release resource {name:?}: status {status}: {}",
                    text.trim()
                );
            }
            println!("released resource {name:?}");
            Ok(true)
        }
        BoskosCommand::Metrics { rtype } => {
            let response = client
                .request(
                    client
                        .http
                        .get(format!("{}/metric", client.url))
                        .query(&[("type", &rtype)]),
                )
                .send()
                .await?;
            let status = response.status();
            let text = response.text().await.unwrap_or_default();
            if status != StatusCode::OK {
                bail!(
                    "failed to get metrics for resource {rtype:?}: status {status}: {}",
                    text.trim()
                );
            }
            let metric: Value = serde_json::from_str(&text).context("the metrics are not JSON")?;
            println!("{}", serde_json::to_string(&metric)?);
            Ok(true)
        }
        BoskosCommand::Heartbeat {
            resource,
            period,
            timeout,
            retries,
        } => {
            let period = duration("period", &period)?;
            let timeout = duration("timeout", &timeout)?;
            if period.is_zero() {
                bail!("invalid argument for \"--period\" flag: must be positive");
            }
            heartbeat(&client, &resource, period, timeout, retries).await
        }
    }
}

/// Runs a boskosctl command: 0 when it did its work, 1 otherwise (boskosctl's codes).
pub async fn run(args: BoskosArgs) -> ExitCode {
    match execute(args).await {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(error) => {
            eprintln!("{error:#}");
            ExitCode::from(1)
        }
    }
}

impl BoskosCtl {
    /// The arguments, for [`run`].
    pub fn into_args(self) -> BoskosArgs {
        self.args
    }
}
