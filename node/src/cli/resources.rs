//! `drover get|delete KIND [NAME]` and `drover create tenant NAME`: one verb set over the objects
//! of every dialect — Kubernetes leases, pool resources, the control plane's members, tenants,
//! clusters, services and their revisions — with kubectl's output flag: `-o json` prints what
//! the API answers (what `curl` gets), `-o yaml` the same as YAML, `-o name` `kind/name` lines,
//! `-o table`/`wide` columns read from each object (for kinds the platform lists by name only,
//! from each object fetched); the default is a table on a terminal and JSON when piped. `-A`
//! lists every namespace or (an operator's view) every tenant, as kubectl's `-A` does.
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
    /// Every namespace (leases), every tenant (tenants, clusters, services, accounts: an
    /// operator's view, with a TENANT column).
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
    path_in(kind, name, common, None)
}

/// The API path of a kind (and one object of it) in `tenant`, or else in `--tenant`.
fn path_in(kind: Kind, name: Option<&str>, common: &Common, tenant: Option<&str>) -> Result<String, Failure> {
    let one = |base: String| match name {
        Some(name) => format!("{base}/{name}"),
        None => base,
    };
    let tenant = || match tenant {
        Some(tenant) => Ok(tenant),
        None => tenant_of(common),
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
        Kind::Accounts => one(format!("{PLATFORM}/tenant/{}/account", tenant()?)),
        Kind::Environments => {
            let account = common
                .account
                .as_deref()
                .ok_or_else(|| Failure::usage("environments belong to an account: give --account"))?;
            one(format!(
                "{PLATFORM}/tenant/{}/account/{account}/environment",
                tenant()?
            ))
        }
        // One member is picked from the list.
        Kind::Members => "/cluster".into(),
        Kind::Tenants => one(format!("{PLATFORM}/tenant")),
        Kind::Clusters => one(format!("{PLATFORM}/tenant/{}/cluster", tenant()?)),
        Kind::Services => one(format!("{PLATFORM}/tenant/{}/service", tenant()?)),
        // One revision is picked from the history.
        Kind::Revisions => {
            let service = common
                .service
                .as_deref()
                .ok_or_else(|| Failure::usage("revisions belong to a service: give --service"))?;
            format!("{PLATFORM}/tenant/{}/service/{service}/history", tenant()?)
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
        let mut message = format!("{status}: {}", text.trim());
        if status == StatusCode::FORBIDDEN && text.contains("register first") {
            message.push_str(
                "; register with this same token (a static token in group operators, or an identity --operators lists, becomes an operator)",
            );
        }
        Self { code, message }
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

/// One object of an answer, as tables and `-o name` show it.
#[derive(Debug, Clone, Default, PartialEq)]
struct Row {
    /// Its tenant, in `-A` listings of the platform's kinds.
    tenant: Option<String>,
    /// Its name: the one asked for, or read from the list's entry.
    name: String,
    /// The list's entry for it, when the list holds less than the object (a tenant list's role,
    /// a name).
    listed: Value,
    /// The object as the API shows one (`Null` until fetched, for kinds listed by name only).
    object: Value,
}

/// What `drover get` asks for: a kind, one object or all of them, in one namespace or tenant
/// or (`-A`) in all.
#[derive(Debug, Clone, Copy)]
struct Listing<'a> {
    kind: Kind,
    name: Option<&'a str>,
    across: bool,
}

impl<'a> Listing<'a> {
    /// Checks the combination: `-A` lists leases, Akka leases, tenants, clusters, services and
    /// accounts of every namespace or tenant, never one object; kinds outside namespaces and
    /// tenants (pools, resources, members) ignore it, as kubectl does for cluster-wide kinds.
    fn of(kind: Kind, name: Option<&'a str>, common: &Common) -> Result<Self, Failure> {
        let across = common.all_namespaces && !matches!(kind, Kind::Pools | Kind::Resources | Kind::Members);
        if across && name.is_some() {
            return Err(Failure::usage(
                "one object is not fetched across namespaces or tenants: give -n or --tenant instead of -A",
            ));
        }
        if across && matches!(kind, Kind::Environments | Kind::Revisions) {
            return Err(Failure::usage(
                "-A lists tenants, clusters, services and accounts of every tenant; environments and revisions belong to one account or service: give --tenant",
            ));
        }
        Ok(Self { kind, name, across })
    }
}

/// The rows of an answer: a Kubernetes list's `items`, a pool configuration's `resources`, the
/// members view's `members`, the platform envelope's `data` (a list of objects, of names, or a
/// map of tenants), or — when `name` is given — the one object answered, under that name.
/// `across`: the platform's answer is `-A`'s map of tenant to that tenant's list.
fn objects(kind: Kind, answer: &Value, name: Option<&str>, across: bool) -> Vec<Row> {
    let listed = |object: &Value| Row {
        tenant: None,
        name: name_of(kind, object),
        listed: Value::Null,
        object: object.clone(),
    };
    let each = |items: &Value| -> Vec<Row> {
        items
            .as_array()
            .map(|items| items.iter().map(listed).collect())
            .unwrap_or_default()
    };
    if let Some(name) = name {
        let object = if kind.is_platform() && kind != Kind::Revisions {
            answer["data"].clone()
        } else {
            answer.clone()
        };
        return vec![Row {
            tenant: None,
            name: name.to_string(),
            listed: Value::Null,
            object,
        }];
    }
    let data = &answer["data"];
    match kind {
        Kind::Leases | Kind::Akkaleases => each(&answer["items"]),
        Kind::Pools => each(&answer["resources"]),
        Kind::Resources => each(answer),
        Kind::Members => each(&answer["members"]),
        Kind::Revisions => each(data),
        // Role by tenant name.
        Kind::Tenants => data
            .as_object()
            .map(|roles| {
                roles
                    .iter()
                    .map(|(name, role)| Row {
                        tenant: None,
                        name: name.clone(),
                        listed: role.clone(),
                        object: Value::Null,
                    })
                    .collect()
            })
            .unwrap_or_default(),
        Kind::Clusters => {
            let mut rows = each(data);
            if across {
                for row in &mut rows {
                    row.tenant = row.object["tenant"].as_str().map(str::to_string);
                }
            }
            rows
        }
        // Names only: the objects are fetched for tables.
        Kind::Accounts | Kind::Environments | Kind::Services => {
            let names = |tenant: Option<&String>, names: &Value| -> Vec<Row> {
                names
                    .as_array()
                    .map(|names| {
                        names
                            .iter()
                            .map(|name| Row {
                                tenant: tenant.cloned(),
                                name: name_of(kind, name),
                                listed: name.clone(),
                                object: Value::Null,
                            })
                            .collect()
                    })
                    .unwrap_or_default()
            };
            match data.as_object() {
                Some(by_tenant) if across => by_tenant
                    .iter()
                    .flat_map(|(tenant, list)| names(Some(tenant), list))
                    .collect(),
                _ => names(None, data),
            }
        }
    }
}

/// The name of an entry of a list: a plain string (the platform's lists of names), or the
/// kind's name field.
fn name_of(kind: Kind, object: &Value) -> String {
    if let Value::String(name) = object {
        return name.clone();
    }
    let field = match kind {
        Kind::Leases | Kind::Akkaleases => "/metadata/name",
        Kind::Pools => "/type",
        Kind::Members => "/id",
        Kind::Revisions => "/revision",
        Kind::Resources
        | Kind::Tenants
        | Kind::Accounts
        | Kind::Environments
        | Kind::Clusters
        | Kind::Services => "/name",
    };
    object.pointer(field).map_or_else(|| "-".to_string(), cell)
}

/// The one entry of a list answer named `name` (pools, resources, members and revisions have
/// no route of their own for one).
fn pick(kind: Kind, answer: &Value, name: &str) -> Result<Value, Failure> {
    objects(kind, answer, None, false)
        .into_iter()
        .find(|row| row.name == name)
        .map(|row| row.object)
        .ok_or_else(|| Failure {
            code: exit::NOT_FOUND,
            message: format!("no {} {name:?}", kind.singular()),
        })
}

/// A value as a table cell: `-` for nothing, strings as they are, lists of scalars joined with
/// commas.
fn cell(value: &Value) -> String {
    match value {
        Value::Null => "-".into(),
        Value::String(s) if s.is_empty() => "-".into(),
        Value::String(s) => s.clone(),
        Value::Array(items) if items.is_empty() => "-".into(),
        Value::Array(items) if items.iter().all(|i| !i.is_array() && !i.is_object()) => {
            items.iter().map(cell).collect::<Vec<_>>().join(",")
        }
        other => other.to_string(),
    }
}

/// Where a column's cells come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Cell {
    /// The object's field at this JSON pointer.
    At(&'static str),
    /// The list's entry (a tenant list's role).
    Listed,
    /// The row's tenant (`-A`).
    Tenant,
    /// How many entries the array or map at this pointer has.
    Count(&'static str),
    /// The keys of the map at this pointer.
    Keys(&'static str),
    /// `key=value` pairs of the map at this pointer.
    Pairs(&'static str),
    /// Marks' use at this pointer: `dimension=current/max` with the unit, for the dimensions
    /// limited or in use.
    Usage(&'static str),
    /// Two fields as `a/b`.
    Ratio(&'static str, &'static str),
}

impl Cell {
    fn of(self, row: &Row) -> String {
        let at = |pointer: &str| row.object.pointer(pointer).unwrap_or(&Value::Null);
        let joined = |items: Vec<String>| {
            if items.is_empty() {
                "-".to_string()
            } else {
                items.join(",")
            }
        };
        match self {
            Cell::At(pointer) => cell(at(pointer)),
            Cell::Listed => cell(&row.listed),
            Cell::Tenant => row.tenant.clone().unwrap_or_else(|| "-".to_string()),
            Cell::Count(pointer) => match at(pointer) {
                Value::Array(items) => items.len().to_string(),
                Value::Object(map) => map.len().to_string(),
                _ => "-".to_string(),
            },
            Cell::Keys(pointer) => joined(
                at(pointer)
                    .as_object()
                    .map(|map| map.keys().cloned().collect())
                    .unwrap_or_default(),
            ),
            Cell::Pairs(pointer) => joined(
                at(pointer)
                    .as_object()
                    .map(|map| map.iter().map(|(k, v)| format!("{k}={}", cell(v))).collect())
                    .unwrap_or_default(),
            ),
            Cell::Usage(pointer) => joined(
                at(pointer)
                    .as_object()
                    .map(|marks| {
                        marks
                            .iter()
                            .filter(|(_, mark)| !mark["max"].is_null() || mark["current"].as_u64() != Some(0))
                            .map(|(dimension, mark)| {
                                let unit = mark["unit"].as_str().unwrap_or_default();
                                match &mark["max"] {
                                    Value::Null => format!("{dimension}={}{unit}", cell(&mark["current"])),
                                    max => {
                                        format!("{dimension}={}/{}{unit}", cell(&mark["current"]), cell(max))
                                    }
                                }
                            })
                            .collect()
                    })
                    .unwrap_or_default(),
            ),
            Cell::Ratio(a, b) => match (at(a), at(b)) {
                (Value::Null, Value::Null) => "-".to_string(),
                (a, b) => format!("{}/{}", cell(a), cell(b)),
            },
        }
    }
}

/// Columns (header, source) of a kind after NAME, read from the object as the API shows one
/// (for kinds listed by name only, the object fetched for the row); `wide` adds some.
fn columns(kind: Kind, wide: bool) -> Vec<(&'static str, Cell)> {
    use Cell::*;
    let mut columns = match kind {
        Kind::Leases => vec![("HOLDER", At("/spec/holderIdentity"))],
        Kind::Akkaleases => vec![("OWNER", At("/spec/owner"))],
        Kind::Pools => vec![
            ("STATE", At("/state")),
            ("MIN", At("/min-count")),
            ("MAX", At("/max-count")),
        ],
        Kind::Resources => vec![
            ("TYPE", At("/type")),
            ("STATE", At("/state")),
            ("OWNER", At("/owner")),
        ],
        Kind::Members => vec![
            ("ROLE", At("/role")),
            ("TERM", At("/term")),
            ("APPLIED", At("/appliedIndex")),
        ],
        Kind::Tenants => vec![("ROLE", Listed)],
        Kind::Accounts => vec![("IAAS", At("/spec/iaas"))],
        Kind::Environments => vec![
            ("ISOLATED", At("/spec/isolated")),
            ("USAGE", Usage("/status/marks")),
        ],
        Kind::Clusters => vec![("STATE", At("/status/state")), ("ENDPOINT", At("/endpoint"))],
        Kind::Services => vec![
            ("PHASE", At("/reconcile/phase")),
            ("CLUSTER", At("/cluster/name")),
            ("REVISION", At("/revision")),
            ("READY", Ratio("/status/running", "/status/desired")),
        ],
        Kind::Revisions => vec![
            ("TYPE", At("/type")),
            ("ACCEPTED", At("/accepted")),
            ("PREVIOUS", At("/previous")),
            ("COMMENT", At("/comment")),
        ],
    };
    if wide {
        columns.extend(match kind {
            Kind::Leases => vec![
                ("DURATION", At("/spec/leaseDurationSeconds")),
                ("RENEWED", At("/spec/renewTime")),
                ("TRANSITIONS", At("/spec/leaseTransitions")),
                ("VERSION", At("/metadata/resourceVersion")),
            ],
            Kind::Akkaleases => vec![
                ("TIME", At("/spec/time")),
                ("VERSION", At("/spec/version")),
                ("RESOURCEVERSION", At("/metadata/resourceVersion")),
            ],
            Kind::Pools => vec![("LIFESPAN", At("/lifespan")), ("NAMES", At("/names"))],
            Kind::Resources => vec![
                ("EXPIRES", At("/expiration-date")),
                ("UPDATED", At("/lastupdate")),
                ("TOKEN", At("/fencing_token")),
            ],
            Kind::Members => vec![
                ("MEMBERSHIP", At("/membership")),
                ("REACHABLE", At("/reachable")),
                ("LAG", At("/replicationLag")),
                ("VERSION", At("/version")),
                ("API", At("/apiAddr")),
            ],
            Kind::Tenants => vec![("ACCOUNTS", Keys("/accounts")), ("USERS", Count("/users"))],
            Kind::Accounts => vec![("LABELS", Pairs("/meta/labels"))],
            Kind::Environments => vec![
                ("CLUSTERS", At("/spec/clusters/names")),
                ("LABELS", Pairs("/spec/labels")),
            ],
            Kind::Clusters => vec![
                ("REASON", At("/status/reason")),
                ("RUNNING", At("/status/instances/running")),
                ("DRAINING", At("/draining")),
                ("LABELS", Pairs("/labels")),
            ],
            Kind::Services => vec![
                ("ENVIRONMENT", At("/environment")),
                ("PENDING", At("/pending")),
                ("CONVERGED", At("/status/converged")),
                ("REASON", At("/reconcile/reason")),
            ],
            Kind::Revisions => vec![("ORIGINAL", At("/original")), ("REINSTATES", At("/reinstates"))],
        });
    }
    columns
}

/// The column `-A` puts first, as kubectl puts NAMESPACE first.
fn scope_column(kind: Kind) -> (&'static str, Cell) {
    match kind {
        Kind::Leases | Kind::Akkaleases => ("NAMESPACE", Cell::At("/metadata/namespace")),
        _ => ("TENANT", Cell::Tenant),
    }
}

/// The cells of a table: the header, then a line per row.
fn matrix(kind: Kind, rows: &[Row], wide: bool, across: bool) -> Vec<Vec<String>> {
    let columns = columns(kind, wide);
    let scope = (across && kind != Kind::Tenants).then(|| scope_column(kind));
    let mut header: Vec<String> = scope.iter().map(|(h, _)| h.to_string()).collect();
    header.push("NAME".to_string());
    header.extend(columns.iter().map(|(h, _)| h.to_string()));
    let mut lines = vec![header];
    for row in rows {
        let mut line: Vec<String> = scope.iter().map(|(_, c)| c.of(row)).collect();
        line.push(row.name.clone());
        line.extend(columns.iter().map(|(_, c)| c.of(row)));
        lines.push(line);
    }
    lines
}

fn table(kind: Kind, rows: &[Row], wide: bool, across: bool) -> String {
    let rows = matrix(kind, rows, wide, across);
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

/// The output asked for: `table` on a terminal, `json` otherwise.
fn output_of(output: Option<Output>) -> Output {
    output.unwrap_or(if std::io::stdout().is_terminal() {
        Output::Table
    } else {
        Output::Json
    })
}

/// Prints an answer without asking for more: JSON and YAML as answered, names, or a table of
/// what the answer holds. `name`: the one object the answer is.
fn print(kind: Kind, name: Option<&str>, answer: &Value, output: Option<Output>) -> Result<(), Failure> {
    match output_of(output) {
        Output::Json => println!(
            "{}",
            serde_json::to_string_pretty(answer).context("printing JSON")?
        ),
        Output::Yaml => print!("{}", super::yaml::to_string(answer)),
        Output::Name => {
            for row in objects(kind, answer, name, false) {
                println!("{}/{}", kind.singular(), row.name);
            }
        }
        output @ (Output::Table | Output::Wide) => println!(
            "{}",
            table(
                kind,
                &objects(kind, answer, name, false),
                output == Output::Wide,
                false
            )
        ),
    }
    Ok(())
}

/// The nodes of one command, asked in turn (built once: a token file and CA are read once).
pub(super) struct Client {
    servers: super::Servers,
}

impl Client {
    pub(super) fn of(common: &Common) -> Result<Self, Failure> {
        if !(common.timeout.is_finite() && common.timeout > 0.0) {
            return Err(Failure::usage("--timeout must be a positive number of seconds"));
        }
        let servers = common
            .server
            .servers()?
            .with_timeout(Duration::from_secs_f64(common.timeout));
        Ok(Self { servers })
    }

    /// One request; the answer as JSON (`Null` for an empty body).
    pub(super) async fn send(
        &self,
        method: Method,
        path: &str,
        query: &[(&str, &str)],
        body: Option<String>,
    ) -> Result<Value, Failure> {
        let reply = self.servers.try_send(method, path, query, body).await?;
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

    async fn get(&self, path: &str) -> Result<Value, Failure> {
        self.send(Method::GET, path, &[], None).await
    }
}

pub(super) async fn call(
    common: &Common,
    method: Method,
    path: &str,
    body: Option<String>,
) -> Result<Value, Failure> {
    Client::of(common)?.send(method, path, &[], body).await
}

/// A refusal of a list across tenants, explained.
fn needs_operator(failure: Failure) -> Failure {
    if failure.code != exit::DENIED {
        return failure;
    }
    Failure {
        code: failure.code,
        message: format!(
            "{}; -A lists every tenant's objects, which only operators may: give --tenant instead",
            failure.message
        ),
    }
}

/// Every tenant (operators only).
async fn every_tenant(client: &Client) -> Result<Vec<String>, Failure> {
    let answer = client
        .send(
            Method::GET,
            &format!("{PLATFORM}/tenant"),
            &[("strict", "false")],
            None,
        )
        .await
        .map_err(needs_operator)?;
    Ok(answer["data"]
        .as_object()
        .map(|tenants| tenants.keys().cloned().collect())
        .unwrap_or_default())
}

/// What `drover get` prints with `-o json`: the API's answer for the listing — for one pool,
/// resource, member or revision the entry of the list answer — or, for `-A` over services and
/// accounts (which have no route across tenants), `{"data": {tenant: that tenant's list}}`.
async fn fetch(client: &Client, listing: Listing<'_>, common: &Common) -> Result<Value, Failure> {
    let kind = listing.kind;
    if listing.across {
        match kind {
            Kind::Tenants => {
                return client
                    .send(
                        Method::GET,
                        &format!("{PLATFORM}/tenant"),
                        &[("strict", "false")],
                        None,
                    )
                    .await
                    .map_err(needs_operator)
            }
            Kind::Clusters => {
                return client
                    .get(&format!("{PLATFORM}/cluster"))
                    .await
                    .map_err(needs_operator)
            }
            Kind::Services | Kind::Accounts => {
                let mut by_tenant = serde_json::Map::new();
                for tenant in every_tenant(client).await? {
                    match client.get(&path_in(kind, None, common, Some(&tenant))?).await {
                        Ok(answer) => {
                            by_tenant.insert(tenant, answer["data"].clone());
                        }
                        // Deleted since it was listed.
                        Err(failure) if failure.code == exit::NOT_FOUND => {}
                        Err(failure) => return Err(failure),
                    }
                }
                return Ok(serde_json::json!({ "data": by_tenant, "events": [] }));
            }
            _ => {}
        }
    }
    let answer = client.get(&path(kind, listing.name, common)?).await?;
    match (kind, listing.name) {
        (Kind::Resources | Kind::Pools | Kind::Members | Kind::Revisions, Some(name)) => {
            pick(kind, &answer, name)
        }
        _ => Ok(answer),
    }
}

/// Takes the single-object answer of `row`'s object into the row.
fn absorb(row: &mut Row, answer: &Value) {
    row.object = answer["data"].clone();
}

/// Fills in what a table needs beyond the list's answer: the objects of kinds listed by name
/// only (accounts, environments, services; tenants for `wide`), and one tenant's role (from the
/// caller's own tenant list).
async fn complete(
    client: &Client,
    listing: Listing<'_>,
    common: &Common,
    rows: &mut [Row],
    wide: bool,
) -> Result<(), Failure> {
    let kind = listing.kind;
    let fetch_objects = matches!(kind, Kind::Accounts | Kind::Environments | Kind::Services)
        || (kind == Kind::Tenants && wide);
    if fetch_objects {
        for row in rows.iter_mut().filter(|row| row.object.is_null()) {
            let path = path_in(kind, Some(&row.name), common, row.tenant.as_deref())?;
            match client.get(&path).await {
                Ok(answer) => absorb(row, &answer),
                // Deleted since it was listed: its cells stay empty.
                Err(failure) if failure.code == exit::NOT_FOUND => {}
                Err(failure) => return Err(failure),
            }
        }
    }
    if kind == Kind::Tenants && listing.name.is_some() {
        // The caller's role; none shown where they have none (an operator's view).
        if let Ok(roles) = client.get(&format!("{PLATFORM}/tenant")).await {
            for row in rows.iter_mut() {
                row.listed = roles["data"][row.name.as_str()].clone();
            }
        }
    }
    Ok(())
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
        let listing = Listing::of(args.kind, args.name.as_deref(), &args.common)?;
        let client = Client::of(&args.common)?;
        let answer = fetch(&client, listing, &args.common).await?;
        match output_of(args.common.output) {
            output @ (Output::Table | Output::Wide) => {
                let wide = output == Output::Wide;
                let mut rows = objects(listing.kind, &answer, listing.name, listing.across);
                complete(&client, listing, &args.common, &mut rows, wide).await?;
                println!("{}", table(listing.kind, &rows, wide, listing.across));
                Ok(())
            }
            Output::Name if listing.across => {
                for row in objects(listing.kind, &answer, None, true) {
                    println!("{}/{}", listing.kind.singular(), row.name);
                }
                Ok(())
            }
            output => print(listing.kind, listing.name, &answer, Some(output)),
        }
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
            print(args.kind, Some(&args.name), &answer, args.common.output)?;
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
                            return print(
                                kind,
                                Some(name),
                                &answer,
                                args.common.output.or(Some(Output::Name)),
                            );
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

/// `drover create tenant`.
pub async fn create_tenant(args: CreateTenantArgs) -> ExitCode {
    let run = async {
        let path = format!("{PLATFORM}/tenant/{}", args.name);
        let answer = call(&args.common, Method::POST, &path, Some("{}".into())).await?;
        match args.common.output {
            Some(output) => print(Kind::Tenants, Some(&args.name), &answer, Some(output)),
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
    use std::collections::BTreeMap;

    use drover_api::axebow::reply::ok;
    use drover_api::axebow::services::ServiceView;
    use drover_model::cluster::views::ClusterView;
    use drover_model::cluster::{ClusterRef, ClusterState, ClusterStatus, InstanceCounts};
    use drover_model::platform::marks::{Mark, MarkStatus};
    use drover_model::platform::views::{AccountInfo, EnvironmentInfo, EnvironmentStatus, TenantInfo};
    use drover_model::platform::{
        AccountMeta, AccountSpec, ClusterSelection, EnvironmentSpec, Member, Role, TenantAccount, TenantRules,
    };
    use drover_model::pool::{PoolConfig, Resource, TypeConfig};
    use drover_model::service::placement::RunStatus;
    use drover_model::service::reconcile::{Phase, Progress, ReconcileStatus};
    use drover_model::service::views::{Configuration, HistoryEntry, ServiceFull};
    use drover_model::service::{Deployment, RevisionType};
    use drover_model::{
        AkkaLeaseSpec, CoordinationLeaseSpec, LeaseSpec, ObjectKey, ObjectKind, ObjectMeta, StoredObject,
    };
    use drover_raft::{MemberView, NodeStatus};
    use serde_json::json;

    use super::*;

    fn value(x: impl serde::Serialize) -> Value {
        serde_json::to_value(x).unwrap()
    }

    fn lease(kind: ObjectKind, spec: LeaseSpec) -> StoredObject {
        StoredObject {
            key: ObjectKey::new(kind, "ns", "l1"),
            meta: ObjectMeta {
                uid: "u-1".into(),
                resource_version: 7,
                created_index: 7,
                creation_timestamp: "2024-01-01T00:00:00Z".into(),
                labels: BTreeMap::new(),
                annotations: BTreeMap::new(),
            },
            spec,
        }
    }

    fn cluster_view() -> ClusterView {
        ClusterView {
            tenant: "operator".into(),
            name: "local-exec".into(),
            uid: "c-1".into(),
            endpoint: "http://127.0.0.1:7701".into(),
            labels: BTreeMap::from([("kind".into(), "exec".into())]),
            metrics: Vec::new(),
            draining: false,
            registered_ms: 1,
            status: ClusterStatus {
                state: ClusterState::Online,
                reason: "the agent answers".into(),
                since_ms: 1,
                facts: None,
                instances: InstanceCounts {
                    running: 4,
                    ..InstanceCounts::default()
                },
                set_errors: BTreeMap::new(),
                sets: BTreeMap::new(),
                metrics: Default::default(),
            },
            events: Vec::new(),
            sets: BTreeMap::new(),
            pending_restarts: Vec::new(),
        }
    }

    fn service_full() -> ServiceFull {
        let local_exec = ClusterRef {
            tenant: "operator".into(),
            name: "local-exec".into(),
        };
        let deployment: Deployment = serde_json::from_value(json!({"roles": {"greeter": {
            "instances": 2, "resources": {"cpu_millis": 10, "memory_mib": 16},
            "exec": {"argv": ["sh", "-c", "sleep 1000"]}}}}))
        .unwrap();
        ServiceFull {
            revision: 1,
            comment: "demo".into(),
            configuration: Configuration {
                parameters: json!({}),
                resources: BTreeMap::new(),
                scale: BTreeMap::from([("greeter".into(), 2)]),
            },
            deployment,
            creation_timestamp: 1,
            last_modification: 1,
            environment: "main/prod".into(),
            pending: Some(2),
            cluster: Some(local_exec.clone()),
            migrating_to: None,
            status: Some(RunStatus {
                cluster: Some(local_exec),
                revision: Some(1),
                desired: 2,
                running: 2,
                converged: true,
            }),
            reconcile: ReconcileStatus {
                phase: Phase::Running,
                reason: "2 of 2 ready".into(),
                revision: Some(1),
                progress: Progress::default(),
            },
            deletion_timestamp: None,
            events: Vec::new(),
            links: Vec::new(),
            scheduling: None,
        }
    }

    /// A rollback: every optional field of a history entry is there.
    fn history() -> Vec<HistoryEntry> {
        vec![HistoryEntry {
            revision: 3,
            previous: Some(2),
            original: 1,
            reinstates: Some(1),
            comment: "back to the first".into(),
            kind: RevisionType::Rollback,
            accepted: true,
        }]
    }

    fn account() -> TenantAccount {
        TenantAccount {
            spec: AccountSpec {
                iaas: "sim".into(),
                iaas_info: Value::Null,
                marks: BTreeMap::from([(
                    "vcpu".into(),
                    Mark {
                        max: 16000,
                        unit: None,
                    },
                )]),
            },
            meta: AccountMeta {
                labels: BTreeMap::from([("team".into(), "blue".into())]),
            },
        }
    }

    fn environment() -> EnvironmentInfo {
        EnvironmentInfo {
            spec: EnvironmentSpec {
                marks: BTreeMap::new(),
                labels: json!({"tier": "prod"}),
                isolated: false,
                clusters: Some(ClusterSelection {
                    names: vec!["operator/local-exec".into()],
                    labels: BTreeMap::new(),
                }),
            },
            status: EnvironmentStatus {
                marks: BTreeMap::from([
                    (
                        "vcpu".into(),
                        MarkStatus {
                            max: Some(8000),
                            current: 20,
                            unit: "m".into(),
                        },
                    ),
                    // Neither limited nor used: left out.
                    (
                        "cost".into(),
                        MarkStatus {
                            max: None,
                            current: 0,
                            unit: "EUR".into(),
                        },
                    ),
                ]),
            },
        }
    }

    fn tenant_info() -> TenantInfo {
        TenantInfo {
            accounts: BTreeMap::from([(
                "main".into(),
                AccountInfo {
                    account: account(),
                    environments: BTreeMap::new(),
                },
            )]),
            users: BTreeMap::from([(
                "u-1".into(),
                Member {
                    role: Role::Owner,
                    confirmed: true,
                },
            )]),
            resources: BTreeMap::new(),
            rules: TenantRules::default(),
            registry: None,
        }
    }

    /// What the API answers for every kind, from the types its handlers serialize: (kind, the
    /// list answer, the name of its object, the answer for that one object when it has a route
    /// of its own).
    fn answers() -> Vec<(Kind, Value, &'static str, Option<Value>)> {
        let coordination = lease(
            ObjectKind::CoordinationLease,
            LeaseSpec::Coordination(CoordinationLeaseSpec {
                holder_identity: Some("me".into()),
                lease_duration_seconds: Some(15),
                acquire_time: Some("2024-01-01T00:00:00.000000Z".into()),
                renew_time: Some("2024-01-01T00:00:05.000000Z".into()),
                lease_transitions: Some(3),
                preferred_holder: None,
                strategy: None,
            }),
        );
        let akka = lease(
            ObjectKind::AkkaLease,
            LeaseSpec::Akka(AkkaLeaseSpec {
                owner: "node-a".into(),
                version: "4".into(),
                time: 1_700_000_000_000,
            }),
        );
        let leases = [coordination.clone()];
        let akkas = [akka.clone()];
        let pools = PoolConfig {
            resources: vec![TypeConfig {
                rtype: "t".into(),
                state: "free".into(),
                names: vec!["r0".into(), "r1".into()],
                min_count: Some(1),
                max_count: Some(3),
                lifespan: Some("48h".into()),
                ..TypeConfig::default()
            }],
        };
        let resource = Resource {
            name: "r0".into(),
            rtype: "t".into(),
            state: "busy".into(),
            owner: "me".into(),
            last_update_ms: 1_700_000_000_000,
            expiration_ms: Some(1_700_000_600_000),
            token: 5,
            ..Resource::default()
        };
        let member = MemberView {
            id: 1,
            membership: "voter",
            peer_addr: "127.0.0.1:7501".into(),
            status: Ok(NodeStatus {
                id: 1,
                api_addr: "127.0.0.1:7401".into(),
                peer_addr: "127.0.0.1:7501".into(),
                role: "leader".into(),
                term: 3,
                leader: Some(1),
                last_log_index: 9,
                commit_index: 9,
                applied_index: 9,
                snapshot_index: 0,
                purged_index: 0,
                version: "0.1.0".into(),
            }),
            replication_lag: Some(0),
        };
        vec![
            (
                Kind::Leases,
                value(drover_api::kube::wire::kube_list(
                    ObjectKind::CoordinationLease,
                    &leases,
                    9,
                )),
                "l1",
                Some(value(drover_api::kube::wire::kube_object(&coordination))),
            ),
            (
                Kind::Akkaleases,
                value(drover_api::kube::wire::kube_list(
                    ObjectKind::AkkaLease,
                    &akkas,
                    9,
                )),
                "l1",
                Some(value(drover_api::kube::wire::kube_object(&akka))),
            ),
            (Kind::Pools, value(&pools), "t", None),
            (
                Kind::Resources,
                json!([drover_api::boskos::wire::resource_json(&resource)]),
                "r0",
                None,
            ),
            (
                Kind::Members,
                json!({"self": 1, "leader": 1, "term": 3, "members": [drover_api::ops::member_json(member)]}),
                "1",
                None,
            ),
            (
                Kind::Tenants,
                value(ok(BTreeMap::from([(
                    "demo".to_string(),
                    Role::Owner.as_str().to_string(),
                )]))),
                "demo",
                Some(value(ok(tenant_info()))),
            ),
            (
                Kind::Accounts,
                value(ok(vec!["main"])),
                "main",
                Some(value(ok(account()))),
            ),
            (
                Kind::Environments,
                value(ok(vec!["prod"])),
                "prod",
                Some(value(ok(environment()))),
            ),
            (
                Kind::Clusters,
                value(ok(vec![cluster_view()])),
                "local-exec",
                Some(value(ok(cluster_view()))),
            ),
            (
                Kind::Services,
                value(ok(vec!["greeter"])),
                "greeter",
                Some(value(ok(ServiceView::Full(Box::new(service_full()))))),
            ),
            (Kind::Revisions, value(ok(history())), "3", None),
        ]
    }

    /// The rows a table shows, as `drover get` makes them: from the list answer, with the
    /// objects of kinds listed by name only taken from their own answers (what `complete`
    /// fetches), and one tenant's role from the tenant list.
    fn listed_rows(kind: Kind, list: &Value, single: Option<&Value>, across: bool) -> Vec<Row> {
        let mut rows = objects(kind, list, None, across);
        for row in &mut rows {
            if row.object.is_null() {
                absorb(row, single.unwrap());
            }
        }
        rows
    }

    fn one_row(kind: Kind, list: &Value, name: &str, single: Option<&Value>) -> Vec<Row> {
        let answer = match single {
            Some(single) => single.clone(),
            None => pick(kind, list, name).unwrap(),
        };
        let mut rows = objects(kind, &answer, Some(name), false);
        if kind == Kind::Tenants {
            rows[0].listed = list["data"][name].clone();
        }
        rows
    }

    /// Every cell of every table, list and one object, normal and wide, comes from the
    /// object: nothing is `-` where the object has the field, and the NAME is the object's.
    #[test]
    fn every_kinds_table_reads_the_api_s_own_shapes() {
        for (kind, list, name, single) in answers() {
            for wide in [false, true] {
                let listed = listed_rows(kind, &list, single.as_ref(), false);
                let one = one_row(kind, &list, name, single.as_ref());
                for (form, rows) in [("list", &listed), ("one", &one)] {
                    let cells = matrix(kind, rows, wide, false);
                    assert_eq!(cells.len(), 2, "{kind:?} {form}: {cells:?}");
                    assert_eq!(cells[0][0], "NAME");
                    assert_eq!(cells[1][0], name, "{kind:?} {form} wide={wide}: {cells:?}");
                    for (header, value) in cells[0].iter().zip(&cells[1]) {
                        assert_ne!(
                            value, "-",
                            "{kind:?} {form} wide={wide}: {header} is empty in {cells:?}"
                        );
                    }
                }
                assert_eq!(
                    matrix(kind, &listed, wide, false),
                    matrix(kind, &one, wide, false),
                    "{kind:?}: a list and its one object show the same row"
                );
                let names: Vec<String> = objects(kind, &list, None, false)
                    .into_iter()
                    .map(|r| r.name)
                    .collect();
                assert_eq!(names, [name], "{kind:?}: -o name");
            }
        }
    }

    /// The cells say what the objects hold (the demo's service: RUNNING revision 1 on
    /// local-exec, two of two ready).
    #[test]
    fn table_cells_hold_the_objects_values() {
        let answers = answers();
        let find = |kind: Kind| answers.iter().find(|a| a.0 == kind).unwrap();
        let row = |kind: Kind, wide: bool| -> BTreeMap<String, String> {
            let (kind, list, _, single) = find(kind);
            let cells = matrix(
                *kind,
                &listed_rows(*kind, list, single.as_ref(), false),
                wide,
                false,
            );
            cells[0].iter().cloned().zip(cells[1].iter().cloned()).collect()
        };
        let services = row(Kind::Services, true);
        assert_eq!(services["NAME"], "greeter");
        assert_eq!(services["PHASE"], "RUNNING");
        assert_eq!(services["CLUSTER"], "local-exec");
        assert_eq!(services["REVISION"], "1");
        assert_eq!(services["READY"], "2/2");
        assert_eq!(services["ENVIRONMENT"], "main/prod");
        assert_eq!(services["CONVERGED"], "true");
        let clusters = row(Kind::Clusters, true);
        assert_eq!(clusters["STATE"], "ONLINE");
        assert_eq!(clusters["ENDPOINT"], "http://127.0.0.1:7701");
        assert_eq!(clusters["RUNNING"], "4");
        assert_eq!(clusters["LABELS"], "kind=exec");
        let tenants = row(Kind::Tenants, true);
        assert_eq!(tenants["ROLE"], "owner");
        assert_eq!(tenants["ACCOUNTS"], "main");
        assert_eq!(tenants["USERS"], "1");
        assert_eq!(row(Kind::Environments, false)["USAGE"], "vcpu=20/8000m");
        assert_eq!(row(Kind::Accounts, true)["IAAS"], "sim");
        let resources = row(Kind::Resources, true);
        assert!(resources["EXPIRES"].starts_with("2023-11-14T"), "{resources:?}");
        assert_eq!(resources["OWNER"], "me");
        assert_eq!(row(Kind::Pools, true)["NAMES"], "r0,r1");
        assert_eq!(row(Kind::Leases, false)["HOLDER"], "me");
        assert_eq!(row(Kind::Members, false)["ROLE"], "leader");
        let revisions = row(Kind::Revisions, false);
        assert_eq!(
            (revisions["NAME"].as_str(), revisions["TYPE"].as_str()),
            ("3", "ROLLBACK")
        );
        assert_eq!(
            (revisions["PREVIOUS"].as_str(), revisions["ACCEPTED"].as_str()),
            ("2", "true")
        );
    }

    /// `-A`: a TENANT column first (NAMESPACE for leases), from the cross-tenant cluster list
    /// and from the per-tenant lists `drover get` gathers for services and accounts.
    #[test]
    fn across_tenants_tables_lead_with_the_tenant() {
        let mut acme = cluster_view();
        acme.tenant = "acme".into();
        acme.name = "edge".into();
        let all = value(ok(vec![cluster_view(), acme]));
        let cells = matrix(
            Kind::Clusters,
            &objects(Kind::Clusters, &all, None, true),
            false,
            true,
        );
        assert_eq!(cells[0][..3], ["TENANT", "NAME", "STATE"]);
        assert_eq!(cells[1][..2], ["operator", "local-exec"]);
        assert_eq!(cells[2][..2], ["acme", "edge"]);
        let services = json!({"data": {"demo": ["greeter"], "acme": ["web", "api"]}, "events": []});
        let full = value(ok(ServiceView::Full(Box::new(service_full()))));
        let rows = listed_rows(Kind::Services, &services, Some(&full), true);
        let cells = matrix(Kind::Services, &rows, false, true);
        let firsts: Vec<(&str, &str)> = cells[1..]
            .iter()
            .map(|c| (c[0].as_str(), c[1].as_str()))
            .collect();
        assert_eq!(firsts, [("acme", "web"), ("acme", "api"), ("demo", "greeter")]);
        assert_eq!(cells[3][2..], ["RUNNING", "local-exec", "1", "2/2"]);
        let leases = value(drover_api::kube::wire::kube_list(
            ObjectKind::CoordinationLease,
            &[lease(
                ObjectKind::CoordinationLease,
                LeaseSpec::Coordination(Default::default()),
            )],
            1,
        ));
        let cells = matrix(
            Kind::Leases,
            &objects(Kind::Leases, &leases, None, true),
            false,
            true,
        );
        assert_eq!(cells[0][..2], ["NAMESPACE", "NAME"]);
        assert_eq!(cells[1][..2], ["ns", "l1"]);
        // Tenants are not in a tenant: -A lists them all, without a TENANT column.
        assert_eq!(matrix(Kind::Tenants, &[], false, true)[0], ["NAME", "ROLE"]);
    }

    #[test]
    fn a_tenant_list_s_entries_are_names_with_roles_not_objects() {
        let tenants = value(ok(BTreeMap::from([
            ("acme".to_string(), "owner".to_string()),
            ("demo".to_string(), "none".to_string()),
        ])));
        let printed = table(
            Kind::Tenants,
            &objects(Kind::Tenants, &tenants, None, false),
            false,
            false,
        );
        assert_eq!(printed, "NAME  ROLE\nacme  owner\ndemo  none", "{printed}");
    }

    #[test]
    fn minus_a_combinations_are_checked() {
        use clap::Parser;
        #[derive(Parser)]
        struct Cli {
            #[command(flatten)]
            common: Common,
        }
        let common =
            |args: &[&str]| Cli::parse_from(std::iter::once("drover").chain(args.iter().copied())).common;
        let all = common(&["-A"]);
        assert!(Listing::of(Kind::Services, None, &all).is_ok_and(|l| l.across));
        assert!(Listing::of(Kind::Pools, None, &all).is_ok_and(|l| !l.across));
        assert_eq!(
            Listing::of(Kind::Services, Some("web"), &all)
                .map(|_| ())
                .unwrap_err()
                .code,
            2
        );
        assert_eq!(
            Listing::of(Kind::Environments, None, &all)
                .map(|_| ())
                .unwrap_err()
                .code,
            2
        );
        assert_eq!(
            Listing::of(Kind::Revisions, None, &all)
                .map(|_| ())
                .unwrap_err()
                .code,
            2
        );
        let one = common(&["--tenant", "demo"]);
        assert!(Listing::of(Kind::Services, Some("web"), &one).is_ok_and(|l| !l.across));
        assert_eq!(
            path_in(Kind::Services, Some("web"), &one, Some("acme")).unwrap(),
            "/api/1.0-beta/tenant/acme/service/web"
        );
        assert_eq!(
            path(Kind::Services, None, &one).unwrap(),
            "/api/1.0-beta/tenant/demo/service"
        );
    }

    #[test]
    fn unregistered_callers_are_told_how_to_register() {
        let failure = Failure::of_status(
            StatusCode::FORBIDDEN,
            r#"{"code":"forbidden","content":"register first: no user has the identity \"demo\" of \"drover-static\" (POST /api/1.0-beta/user)"}"#,
        );
        assert_eq!(failure.code, 7);
        assert!(
            failure.message.contains("register with this same token")
                && failure.message.contains("group operators"),
            "{}",
            failure.message
        );
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
