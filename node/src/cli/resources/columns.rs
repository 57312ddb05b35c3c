//! The columns of each kind's table after NAME, as `-o table` and (with more) `-o wide` show
//! them, and the column `-A` puts first.

use super::cells::Cell;
use super::kind::Kind;

/// Columns (header, source) of a kind after NAME, read from the object as the API shows one
/// (for kinds listed by name only, the object fetched for the row); `wide` adds some.
pub(super) fn columns(kind: Kind, wide: bool) -> Vec<(&'static str, Cell)> {
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
                ("OOMKILLS", At("/status/instances/oom_kills")),
                ("USED-CPU", At("/status/facts/used/cpu_millis")),
                ("USED-MEMORY", At("/status/facts/used/memory_mib")),
                ("CONFINEMENT", At("/status/facts/confinement/mode")),
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
pub(super) fn scope_column(kind: Kind) -> (&'static str, Cell) {
    match kind {
        Kind::Leases | Kind::Akkaleases => ("NAMESPACE", Cell::At("/metadata/namespace")),
        _ => ("TENANT", Cell::Tenant),
    }
}
