//! `drover get KIND [NAME]`: one object or a list, in a namespace or tenant or (`-A`) across
//! all, printed as the API answers it or as a table whose cells are read from each object (for
//! kinds the platform lists by name only, from each object fetched).

use std::process::ExitCode;

use clap::Args;
use reqwest::Method;
use serde_json::Value;

use super::client::Client;
use super::common::Common;
use super::failure::{exit, finish, Failure};
use super::kind::Kind;
use super::output::{output_of, print, Output};
use super::paths::{path, path_in, PLATFORM};
use super::rows::{absorb, objects, pick, Row};
use super::table::table;

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

/// The tenant list with every tenant in it (`strict=false`, which only operators may ask).
async fn every_tenant_list(client: &Client) -> Result<Value, Failure> {
    client
        .send(
            Method::GET,
            &format!("{PLATFORM}/tenant"),
            &[("strict", "false")],
            None,
        )
        .await
        .map_err(needs_operator)
}

/// Every tenant (operators only).
async fn every_tenant(client: &Client) -> Result<Vec<String>, Failure> {
    let answer = every_tenant_list(client).await?;
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
            Kind::Tenants => return every_tenant_list(client).await,
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
