//! `drover get|delete KIND [NAME]` and `drover create tenant NAME`: one verb set over the objects
//! of every dialect — Kubernetes leases, pool resources, the control plane's members, tenants,
//! clusters, services and their revisions — with kubectl's output flag: `-o json` prints what
//! the API answers (what `curl` gets), `-o yaml` the same as YAML, `-o name` `kind/name` lines,
//! `-o table`/`wide` columns; the default is a table on a terminal and JSON when piped.
//!
//! Exit codes (also in `docs/CLI.md`): 0 done, 1 any other error, 2 usage, 3 not found,
//! 4 conflict, 5 timeout, 6 unavailable (no node answered, or no leader), 7 unauthenticated or
//! forbidden.

use std::io::IsTerminal;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, Result};
use clap::{Args, ValueEnum};
use reqwest::{Method, StatusCode};
use serde_json::Value;

use super::lease::ServerArgs;
use super::server::SendError;

/// Exit codes of the resource commands.
pub mod exit {
    /// Any other error.
    pub const ERROR: u8 = 1;
    /// The object does not exist.
    pub const NOT_FOUND: u8 = 3;
    /// The change conflicts with the current state.
    pub const CONFLICT: u8 = 4;
    /// No answer within `--timeout`.
    pub const TIMEOUT: u8 = 5;
    /// No node answered, or the cluster has no leader.
    pub const UNAVAILABLE: u8 = 6;
    /// No valid credential, or not allowed.
    pub const DENIED: u8 = 7;
}

/// The kinds of object the CLI knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Kind {
    /// Kubernetes-style leases (`coordination.k8s.io/v1`).
    #[value(alias = "lease")]
    Leases,
    /// Akka leases (`akka.io/v1`).
    #[value(alias = "akkalease")]
    Akkaleases,
    /// Pool resource types (the pool configuration's entries).
    #[value(alias = "pool")]
    Pools,
    /// Pool resources (Boskos).
    #[value(alias = "resource")]
    Resources,
    /// The control plane's members.
    #[value(alias = "member")]
    Members,
    /// Platform tenants.
    #[value(alias = "tenant")]
    Tenants,
    /// A tenant's accounts.
    #[value(alias = "account")]
    Accounts,
    /// An account's environments.
    #[value(alias = "environment", alias = "env")]
    Environments,
    /// A tenant's workload clusters.
    #[value(alias = "cluster")]
    Clusters,
    /// A tenant's services.
    #[value(alias = "service", alias = "svc")]
    Services,
    /// A service's revisions (its history).
    #[value(alias = "revision")]
    Revisions,
}

/// How to print.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Output {
    /// Columns.
    Table,
    /// More columns.
    Wide,
    /// The API's answer.
    Json,
    /// The API's answer as YAML.
    Yaml,
    /// `kind/name` per object.
    Name,
}

/// What every resource command takes.
#[derive(Debug, Args)]
pub struct Common {
    #[command(flatten)]
    pub(super) server: ServerArgs,
    /// Output format (`table` on a terminal, `json` otherwise).
    #[arg(short, long, value_enum)]
    output: Option<Output>,
    /// Namespace of leases.
    #[arg(short, long, default_value = "default", env = "DROVER_NAMESPACE")]
    namespace: String,
    /// Leases of every namespace.
    #[arg(short = 'A', long)]
    all_namespaces: bool,
    /// Tenant of clusters, services and revisions.
    #[arg(short, long, env = "DROVER_TENANT")]
    pub(super) tenant: Option<String>,
    /// Service whose revisions to list.
    #[arg(long)]
    service: Option<String>,
    /// Account whose environments to list.
    #[arg(long, env = "DROVER_ACCOUNT")]
    account: Option<String>,
    /// Give up on a request after this many seconds.
    #[arg(long, default_value_t = 15.0, env = "DROVER_TIMEOUT")]
    pub(super) timeout: f64,
}

/// `drover get KIND [NAME]`.
#[derive(Debug, Args)]
pub struct GetArgs {
    /// What to list or show.
    #[arg(value_enum)]
    kind: Kind,
    /// One object (all of them when left out).
    name: Option<String>,
    #[command(flatten)]
    common: Common,
}

/// `drover delete KIND NAME`.
#[derive(Debug, Args)]
pub struct DeleteArgs {
    /// What to delete.
    #[arg(value_enum)]
    kind: Kind,
    /// Which.
    name: String,
    #[command(flatten)]
    common: Common,
}

/// `drover wait KIND/NAME --for CONDITION`.
#[derive(Debug, Args)]
pub struct WaitArgs {
    /// The object, as `kind/name` (e.g. `service/web`, `lease/l1`, `cluster/edge`).
    target: String,
    /// `delete` (until it is gone), or `PATH=VALUE`: a dotted path into the object (for
    /// platform objects, into its `data`) and the value it must have, e.g.
    /// `status.converged=true`, `status.state=ONLINE`, `spec.holderIdentity=me`.
    #[arg(long = "for")]
    condition: String,
    #[command(flatten)]
    common: Common,
}

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

/// `drover create tenant NAME`.
#[derive(Debug, Args)]
pub struct CreateTenantArgs {
    /// The new tenant's name; the caller becomes its owner.
    name: String,
    #[command(flatten)]
    common: Common,
}

const PLATFORM: &str = "/api/1.0-beta";

impl Kind {
    /// Whether the platform API answers for it (in its `{data, events}` envelope).
    fn is_platform(self) -> bool {
        matches!(
            self,
            Kind::Tenants
                | Kind::Accounts
                | Kind::Environments
                | Kind::Clusters
                | Kind::Services
                | Kind::Revisions
        )
    }

    /// One object's kind, as `-o name` prints it.
    fn singular(self) -> &'static str {
        match self {
            Kind::Leases => "lease",
            Kind::Akkaleases => "akkalease",
            Kind::Pools => "pool",
            Kind::Resources => "resource",
            Kind::Members => "member",
            Kind::Tenants => "tenant",
            Kind::Accounts => "account",
            Kind::Environments => "environment",
            Kind::Clusters => "cluster",
            Kind::Services => "service",
            Kind::Revisions => "revision",
        }
    }
}

pub(super) fn tenant_of(common: &Common) -> Result<&str, Failure> {
    common
        .tenant
        .as_deref()
        .ok_or_else(|| Failure::usage("this kind belongs to a tenant: give --tenant (or DROVER_TENANT)"))
}

/// The API path of a kind (and one object of it).
fn path(kind: Kind, name: Option<&str>, common: &Common) -> Result<String, Failure> {
    let one = |base: String| match name {
        Some(name) => format!("{base}/{name}"),
        None => base,
    };
    Ok(match kind {
        Kind::Leases if common.all_namespaces && name.is_none() => {
            "/apis/coordination.k8s.io/v1/leases".into()
        }
        Kind::Leases => one(format!(
            "/apis/coordination.k8s.io/v1/namespaces/{}/leases",
            common.namespace
        )),
        Kind::Akkaleases if common.all_namespaces && name.is_none() => "/apis/akka.io/v1/leases".into(),
        Kind::Akkaleases => one(format!("/apis/akka.io/v1/namespaces/{}/leases", common.namespace)),
        // The pools list resources and types only; one is picked from the list.
        Kind::Resources => "/pools/resources".into(),
        Kind::Pools => "/pools/config".into(),
        Kind::Accounts => one(format!("{PLATFORM}/tenant/{}/account", tenant_of(common)?)),
        Kind::Environments => {
            let account = common
                .account
                .as_deref()
                .ok_or_else(|| Failure::usage("environments belong to an account: give --account"))?;
            one(format!(
                "{PLATFORM}/tenant/{}/account/{account}/environment",
                tenant_of(common)?
            ))
        }
        Kind::Members => "/cluster".into(),
        Kind::Tenants => one(format!("{PLATFORM}/tenant")),
        Kind::Clusters => one(format!("{PLATFORM}/tenant/{}/cluster", tenant_of(common)?)),
        Kind::Services => one(format!("{PLATFORM}/tenant/{}/service", tenant_of(common)?)),
        Kind::Revisions => {
            let service = common
                .service
                .as_deref()
                .ok_or_else(|| Failure::usage("revisions belong to a service: give --service"))?;
            format!(
                "{PLATFORM}/tenant/{}/service/{service}/history",
                tenant_of(common)?
            )
        }
    })
}

/// A command that did not succeed, with its exit code.
#[derive(Debug)]
pub struct Failure {
    pub(super) code: u8,
    pub(super) message: String,
}

impl Failure {
    pub(super) fn usage(message: &str) -> Self {
        Self {
            code: 2,
            message: message.to_string(),
        }
    }

    pub(super) fn of_status(status: StatusCode, text: &str) -> Self {
        let code = match status {
            StatusCode::NOT_FOUND => exit::NOT_FOUND,
            StatusCode::CONFLICT => exit::CONFLICT,
            StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN => exit::DENIED,
            StatusCode::SERVICE_UNAVAILABLE => exit::UNAVAILABLE,
            StatusCode::REQUEST_TIMEOUT | StatusCode::GATEWAY_TIMEOUT => exit::TIMEOUT,
            _ => exit::ERROR,
        };
        Self {
            code,
            message: format!("{status}: {}", text.trim()),
        }
    }
}

impl From<SendError> for Failure {
    fn from(error: SendError) -> Self {
        let code = match error {
            SendError::Timeout(_) => exit::TIMEOUT,
            SendError::Unavailable(_) => exit::UNAVAILABLE,
        };
        Self {
            code,
            message: error.to_string(),
        }
    }
}

impl From<anyhow::Error> for Failure {
    fn from(error: anyhow::Error) -> Self {
        Self {
            code: exit::ERROR,
            message: format!("{error:#}"),
        }
    }
}

/// The objects of an answer, for tables and names: a Kubernetes list's `items`, the platform
/// envelope's `data`, a members view's `members`, or the answer itself.
fn objects(kind: Kind, answer: &Value) -> Vec<Value> {
    let inner = match kind {
        Kind::Leases | Kind::Akkaleases if answer["items"].is_array() => &answer["items"],
        Kind::Pools if answer["resources"].is_array() => &answer["resources"],
        Kind::Members => &answer["members"],
        kind if kind.is_platform() => &answer["data"],
        _ => answer,
    };
    match inner {
        Value::Array(items) => items.clone(),
        // The platform lists tenants as a map by name.
        Value::Object(map) if kind == Kind::Tenants && !map.contains_key("name") => map
            .iter()
            .map(|(name, value)| {
                let mut value = value.clone();
                if let Value::Object(fields) = &mut value {
                    fields.insert("name".into(), Value::String(name.clone()));
                }
                value
            })
            .collect(),
        other => vec![other.clone()],
    }
}

fn name_of(kind: Kind, object: &Value) -> String {
    let field = |pointer: &str| object.pointer(pointer).map(cell);
    // Platform lists of names (accounts, environments) are plain strings.
    if let Value::String(name) = object {
        return name.clone();
    }
    match kind {
        Kind::Leases | Kind::Akkaleases => field("/metadata/name"),
        Kind::Pools => field("/type"),
        Kind::Members => field("/id"),
        Kind::Revisions => field("/revision"),
        _ => field("/name"),
    }
    .unwrap_or_else(|| "-".to_string())
}

fn cell(value: &Value) -> String {
    match value {
        Value::Null => "-".into(),
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Columns (header, JSON pointer) of a kind; `wide` adds some.
fn columns(kind: Kind, wide: bool) -> Vec<(&'static str, &'static str)> {
    let mut columns = match kind {
        Kind::Leases => vec![
            ("NAMESPACE", "/metadata/namespace"),
            ("HOLDER", "/spec/holderIdentity"),
        ],
        Kind::Akkaleases => vec![("NAMESPACE", "/metadata/namespace"), ("OWNER", "/spec/owner")],
        Kind::Resources => vec![("TYPE", "/type"), ("STATE", "/state"), ("OWNER", "/owner")],
        Kind::Pools => vec![("STATE", "/state"), ("MIN", "/min-count"), ("MAX", "/max-count")],
        Kind::Accounts | Kind::Environments => vec![],
        Kind::Members => vec![("ROLE", "/role"), ("TERM", "/term"), ("APPLIED", "/appliedIndex")],
        Kind::Tenants => vec![("ROLE", "/role")],
        Kind::Clusters => vec![("STATE", "/status/state"), ("ENDPOINT", "/endpoint")],
        Kind::Services => vec![
            ("CLUSTER", "/status/cluster/name"),
            ("REVISION", "/status/revision"),
        ],
        Kind::Revisions => vec![("TYPE", "/type"), ("COMMENT", "/comment")],
    };
    if wide {
        columns.extend(match kind {
            Kind::Leases | Kind::Akkaleases => vec![("VERSION", "/metadata/resourceVersion")],
            Kind::Pools => vec![("LIFESPAN", "/lifespan")],
            Kind::Resources => vec![("EXPIRES", "/expirationDate")],
            Kind::Members => vec![("VERSION", "/version"), ("API", "/apiAddr")],
            Kind::Clusters => vec![("REASON", "/status/reason")],
            Kind::Services => vec![("CONVERGED", "/status/converged")],
            Kind::Tenants | Kind::Revisions | Kind::Accounts | Kind::Environments => vec![],
        });
    }
    columns
}

fn table(kind: Kind, answer: &Value, wide: bool) -> String {
    let columns = columns(kind, wide);
    let mut rows = vec![std::iter::once("NAME".to_string())
        .chain(columns.iter().map(|(h, _)| h.to_string()))
        .collect::<Vec<_>>()];
    for object in objects(kind, answer) {
        let mut row = vec![name_of(kind, &object)];
        row.extend(
            columns
                .iter()
                .map(|(_, pointer)| object.pointer(pointer).map_or("-".to_string(), cell)),
        );
        rows.push(row);
    }
    let widths: Vec<usize> = (0..rows[0].len())
        .map(|c| rows.iter().map(|r| r[c].chars().count()).max().unwrap_or(0))
        .collect();
    rows.iter()
        .map(|row| {
            row.iter()
                .zip(&widths)
                .map(|(cell, width)| format!("{cell:<width$}"))
                .collect::<Vec<_>>()
                .join("  ")
                .trim_end()
                .to_string()
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn print(kind: Kind, answer: &Value, output: Option<Output>) -> Result<(), Failure> {
    let output = output.unwrap_or(if std::io::stdout().is_terminal() {
        Output::Table
    } else {
        Output::Json
    });
    match output {
        Output::Json => println!(
            "{}",
            serde_json::to_string_pretty(answer).context("printing JSON")?
        ),
        Output::Yaml => print!("{}", yaml_serde::to_string(answer).context("printing YAML")?),
        Output::Name => {
            for object in objects(kind, answer) {
                println!("{}/{}", kind.singular(), name_of(kind, &object));
            }
        }
        Output::Table | Output::Wide => println!("{}", table(kind, answer, output == Output::Wide)),
    }
    Ok(())
}

pub(super) async fn call(
    common: &Common,
    method: Method,
    path: &str,
    body: Option<String>,
) -> Result<Value, Failure> {
    if !(common.timeout.is_finite() && common.timeout > 0.0) {
        return Err(Failure::usage("--timeout must be a positive number of seconds"));
    }
    let servers = common
        .server
        .servers()?
        .with_timeout(Duration::from_secs_f64(common.timeout));
    let reply = servers.try_send(method, path, &[], body).await?;
    if !reply.status.is_success() {
        return Err(Failure::of_status(reply.status, &reply.text));
    }
    if reply.text.trim().is_empty() {
        return Ok(Value::Null);
    }
    serde_json::from_str(&reply.text).map_err(|e| Failure {
        code: exit::ERROR,
        message: format!("the answer is not JSON: {e}"),
    })
}

pub(super) fn finish(result: Result<(), Failure>) -> ExitCode {
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(failure) => {
            eprintln!("drover: {}", failure.message);
            ExitCode::from(failure.code)
        }
    }
}

/// `drover get`.
pub async fn get(args: GetArgs) -> ExitCode {
    let run = async {
        let path = path(args.kind, args.name.as_deref(), &args.common)?;
        let mut answer = call(&args.common, Method::GET, &path, None).await?;
        if let (Kind::Resources | Kind::Pools, Some(name)) = (args.kind, &args.name) {
            answer = objects(args.kind, &answer)
                .into_iter()
                .find(|r| name_of(args.kind, r) == *name)
                .ok_or_else(|| Failure {
                    code: exit::NOT_FOUND,
                    message: format!("no {} {name:?}", args.kind.singular()),
                })?;
        }
        print(args.kind, &answer, args.common.output)
    };
    finish(run.await)
}

/// `drover delete`.
pub async fn delete(args: DeleteArgs) -> ExitCode {
    let run = async {
        if matches!(
            args.kind,
            Kind::Members | Kind::Revisions | Kind::Resources | Kind::Pools
        ) {
            return Err(Failure::usage(
                "members leave with DELETE /cluster/members/{id}; revisions are not deleted; pools and their resources come from the pool configuration",
            ));
        }
        let path = path(args.kind, Some(&args.name), &args.common)?;
        let answer = call(&args.common, Method::DELETE, &path, None).await?;
        if args.common.output.is_some() {
            print(args.kind, &answer, args.common.output)?;
        } else {
            eprintln!("{}/{} deleted", args.kind.singular(), args.name);
        }
        Ok(())
    };
    finish(run.await)
}

/// What `--for` asks.
enum Condition {
    Deleted,
    Field(Vec<String>, String),
}

fn condition(text: &str) -> Result<Condition, Failure> {
    if text == "delete" {
        return Ok(Condition::Deleted);
    }
    let (path, value) = text
        .split_once('=')
        .ok_or_else(|| Failure::usage("--for is `delete` or PATH=VALUE, e.g. status.converged=true"))?;
    if path.is_empty() {
        return Err(Failure::usage("--for PATH=VALUE needs a path"));
    }
    Ok(Condition::Field(
        path.split('.').map(str::to_string).collect(),
        value.to_string(),
    ))
}

/// Whether `object` has `value` at `path` (strings compare without quotes).
fn holds(kind: Kind, answer: &Value, path: &[String], value: &str) -> bool {
    let mut at = if kind.is_platform() {
        &answer["data"]
    } else {
        answer
    };
    for step in path {
        at = match at {
            Value::Array(items) => match step.parse::<usize>() {
                Ok(index) => items.get(index).unwrap_or(&Value::Null),
                Err(_) => &Value::Null,
            },
            other => &other[step.as_str()],
        };
    }
    match at {
        Value::String(s) => s == value,
        Value::Null => false,
        // Numbers and booleans: the value read as JSON.
        other => serde_json::from_str::<Value>(value).is_ok_and(|v| v == *other),
    }
}

/// `drover wait`: polls until the condition holds (exit 0), or `--timeout` passes (exit 5).
pub async fn wait(args: WaitArgs) -> ExitCode {
    let run = async {
        let (kind, name) = args
            .target
            .split_once('/')
            .ok_or_else(|| Failure::usage("the object is KIND/NAME, e.g. service/web"))?;
        let kind = <Kind as ValueEnum>::from_str(kind, true)
            .map_err(|_| Failure::usage(&format!("unknown kind {kind:?}")))?;
        if matches!(
            kind,
            Kind::Resources | Kind::Pools | Kind::Members | Kind::Revisions
        ) {
            return Err(Failure::usage(
                "wait takes leases, akka leases, tenants, accounts, environments, clusters and services",
            ));
        }
        let condition = condition(&args.condition)?;
        let path = path(kind, Some(name), &args.common)?;
        let deadline = std::time::Instant::now() + Duration::from_secs_f64(args.common.timeout.max(0.001));
        loop {
            match call(&args.common, Method::GET, &path, None).await {
                Ok(answer) => {
                    if let Condition::Field(path, value) = &condition {
                        if holds(kind, &answer, path, value) {
                            eprintln!("{}: {} met", args.target, args.condition);
                            return print(kind, &answer, args.common.output.or(Some(Output::Name)));
                        }
                    }
                }
                Err(failure) if failure.code == exit::NOT_FOUND => {
                    if matches!(condition, Condition::Deleted) {
                        eprintln!("{}: deleted", args.target);
                        return Ok(());
                    }
                }
                Err(failure) if failure.code == exit::TIMEOUT || failure.code == exit::UNAVAILABLE => {}
                Err(failure) => return Err(failure),
            }
            if std::time::Instant::now() >= deadline {
                return Err(Failure {
                    code: exit::TIMEOUT,
                    message: format!(
                        "{}: {} not met within {}s",
                        args.target, args.condition, args.common.timeout
                    ),
                });
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    };
    finish(run.await)
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

/// `drover create tenant`.
pub async fn create_tenant(args: CreateTenantArgs) -> ExitCode {
    let run = async {
        let path = format!("{PLATFORM}/tenant/{}", args.name);
        let answer = call(&args.common, Method::POST, &path, Some("{}".into())).await?;
        match args.common.output {
            Some(output) => print(Kind::Tenants, &answer, Some(output)),
            None => {
                eprintln!("tenant/{} created", args.name);
                Ok(())
            }
        }
    };
    finish(run.await)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn tables_and_names_come_from_each_dialects_shape() {
        let leases = json!({"kind": "LeaseList", "items": [
            {"metadata": {"name": "a", "namespace": "ns", "resourceVersion": "7"}, "spec": {"holderIdentity": "me"}}]});
        let printed = table(Kind::Leases, &leases, true);
        assert_eq!(printed.lines().count(), 2, "{printed}");
        assert!(
            printed.lines().nth(1).unwrap().starts_with("a     ns"),
            "{printed}"
        );
        assert!(printed.contains("me") && printed.contains('7'), "{printed}");
        let services = json!({"data": [{"name": "web", "status": {"cluster": {"name": "edge"}, "revision": 2}}], "events": []});
        let names: Vec<String> = objects(Kind::Services, &services)
            .iter()
            .map(|o| name_of(Kind::Services, o))
            .collect();
        assert_eq!(names, ["web"]);
        let tenants = json!({"data": {"acme": {"role": "owner"}}, "events": []});
        let printed = table(Kind::Tenants, &tenants, false);
        assert!(printed.contains("acme") && printed.contains("owner"), "{printed}");
    }

    #[test]
    fn wait_conditions_read_paths_strings_numbers_and_booleans() {
        let service =
            json!({"data": {"status": {"converged": true, "revision": 3, "cluster": {"name": "edge"}}}});
        let at = |path: &str| path.split('.').map(str::to_string).collect::<Vec<_>>();
        assert!(holds(Kind::Services, &service, &at("status.converged"), "true"));
        assert!(!holds(Kind::Services, &service, &at("status.converged"), "false"));
        assert!(holds(Kind::Services, &service, &at("status.revision"), "3"));
        assert!(holds(
            Kind::Services,
            &service,
            &at("status.cluster.name"),
            "edge"
        ));
        assert!(!holds(Kind::Services, &service, &at("status.missing"), "null"));
        let lease = json!({"spec": {"holderIdentity": "me"}});
        assert!(holds(Kind::Leases, &lease, &at("spec.holderIdentity"), "me"));
        assert!(matches!(condition("delete"), Ok(Condition::Deleted)));
        assert!(condition("nonsense").is_err());
    }

    #[test]
    fn statuses_map_to_the_documented_exit_codes() {
        for (status, code) in [
            (StatusCode::NOT_FOUND, 3),
            (StatusCode::CONFLICT, 4),
            (StatusCode::REQUEST_TIMEOUT, 5),
            (StatusCode::SERVICE_UNAVAILABLE, 6),
            (StatusCode::UNAUTHORIZED, 7),
            (StatusCode::FORBIDDEN, 7),
            (StatusCode::BAD_REQUEST, 1),
        ] {
            assert_eq!(Failure::of_status(status, "").code, code, "{status}");
        }
    }
}
