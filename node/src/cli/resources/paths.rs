//! Where each kind lives in the API: the route of its list and of one object, in the namespace,
//! tenant, account or service the common arguments name. Pools, resources, members and
//! revisions have no route for one object: their list's route is given and the object picked
//! from the answer.

use super::common::Common;
use super::failure::Failure;
use super::kind::Kind;

/// Where the platform API is served.
pub(super) const PLATFORM: &str = "/api/1.0-beta";

/// The tenant of `--tenant` (or `DROVER_TENANT`), which the kinds a tenant holds need.
pub(in crate::cli) fn tenant_of(common: &Common) -> Result<&str, Failure> {
    common
        .tenant
        .as_deref()
        .ok_or_else(|| Failure::usage("this kind belongs to a tenant: give --tenant (or DROVER_TENANT)"))
}

/// The API path of a kind (and one object of it).
pub(super) fn path(kind: Kind, name: Option<&str>, common: &Common) -> Result<String, Failure> {
    path_in(kind, name, common, None)
}

/// The API path of a kind (and one object of it) in `tenant`, or else in `--tenant`.
pub(super) fn path_in(
    kind: Kind,
    name: Option<&str>,
    common: &Common,
    tenant: Option<&str>,
) -> Result<String, Failure> {
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
