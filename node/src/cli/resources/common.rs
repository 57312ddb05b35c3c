//! The arguments every resource command takes (and `drover service logs` too): which nodes to
//! ask and how long to wait, how to print, and the namespace, tenant, account or service the
//! objects are in.

use clap::Args;

use super::output::Output;
use crate::cli::lease::ServerArgs;

/// What every resource command takes.
#[derive(Debug, Args)]
pub struct Common {
    #[command(flatten)]
    pub(in crate::cli) server: ServerArgs,
    /// Output format (`table` on a terminal, `json` otherwise).
    #[arg(short, long, value_enum)]
    pub(super) output: Option<Output>,
    /// Namespace of leases.
    #[arg(short, long, default_value = "default", env = "DROVER_NAMESPACE")]
    pub(super) namespace: String,
    /// Every namespace (leases), every tenant (tenants, clusters, services, accounts: an
    /// operator's view, with a TENANT column).
    #[arg(short = 'A', long)]
    pub(super) all_namespaces: bool,
    /// Tenant of clusters, services and revisions.
    #[arg(short, long, env = "DROVER_TENANT")]
    pub(in crate::cli) tenant: Option<String>,
    /// Service whose revisions to list.
    #[arg(long)]
    pub(super) service: Option<String>,
    /// Account whose environments to list.
    #[arg(long, env = "DROVER_ACCOUNT")]
    pub(super) account: Option<String>,
    /// Give up on a request after this many seconds.
    #[arg(long, default_value_t = 15.0, env = "DROVER_TIMEOUT")]
    pub(in crate::cli) timeout: f64,
}
