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
//!
//! A file per job: the arguments (`common`, `kind`), where each kind lives in the API
//! (`paths`), the HTTP client (`client`), how a command fails (`failure`), the rows of an answer
//! (`rows`), tables (`cells`, `columns`, `table`), the output flag (`output`), and one file per
//! verb (`get`, `delete`, `wait`, `watch`, `create`).

mod cells;
mod client;
mod columns;
mod common;
mod create;
mod delete;
mod failure;
mod get;
mod kind;
mod output;
mod paths;
mod rows;
#[cfg(test)]
mod sample_answers;
mod table;
mod value_text;
mod wait;
mod watch;

pub use common::Common;
pub use create::{create_tenant, CreateTenantArgs};
pub use delete::{delete, DeleteArgs};
pub use failure::{exit, Failure};
pub use get::{get, GetArgs};
pub use kind::Kind;
pub use output::Output;
pub use wait::{wait, WaitArgs};
pub use watch::{watch, WatchArgs};

// For the other commands of `cli` that speak to the API the same way (`drover service logs`).
pub(super) use client::call;
pub(super) use failure::finish;
pub(super) use paths::tenant_of;
