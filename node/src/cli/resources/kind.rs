//! The kinds of object the resource commands know, by the names kubectl users type (plural,
//! singular and short aliases), and what the rest of the module asks of a kind: whether the
//! platform API answers for it, and its singular as `-o name` prints it.

use clap::ValueEnum;

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

impl Kind {
    /// Whether the platform API answers for it (in its `{data, events}` envelope).
    pub(super) fn is_platform(self) -> bool {
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
    pub(super) fn singular(self) -> &'static str {
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
