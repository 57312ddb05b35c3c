//! The multi-tenant platform of the Axebow API: users and their identity profiles, tenants with
//! roles and invitations, IaaS accounts, deployment environments with marks, Kumori resources,
//! the selector language of tenant rules and the environment-selection algorithm.
//!
//! Every change is a [`PlatformCommand`] carrying the caller's verified identity; the rules of
//! who may do what ([`authz`]) are checked by the same pure apply on every replica, so a change
//! is allowed or refused atomically with the state it reads.

pub(crate) mod apply;
pub mod authz;
mod clusters;
pub mod entities;
pub mod error;
pub mod identity;
pub mod marks;
pub mod registry;
pub mod resource;
pub mod selection;
pub mod selector;
mod services;
#[cfg(test)]
mod tests;
mod usage;
pub mod views;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

pub use authz::{Grant, PlatformRead, Requirement};
pub use clusters::{
    environment_may_use, validate_endpoint, validate_join_token, validate_program, validate_selection,
    validate_set,
};
pub use entities::{
    Account, AccountMeta, AccountSpec, ClusterSelection, EnvironmentPatch, EnvironmentSpec, Identity, Member,
    Registry, Role, Rule, Tenant, TenantAccount, TenantRules, TenantSpec, User, UserProfile,
};
pub use error::PlatformError;
pub use identity::OPERATOR_TENANT;
pub use resource::{ResourceKind, ResourceSpec};

/// One change of the platform, made by `caller`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlatformCommand {
    /// The verified identity of whoever asked.
    pub caller: Identity,
    /// What they asked for (`change` on the wire: a command's `op` tag names its kind).
    #[serde(rename = "change")]
    pub op: PlatformOp,
}

/// The changes the platform knows.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "platform_op", rename_all = "snake_case")]
pub enum PlatformOp {
    /// Register the caller as a new user with the proposer-generated `uid`. `operator` (from
    /// the proposing node's configuration) makes them a confirmed owner of the operator tenant.
    RegisterUser {
        /// New user id.
        uid: String,
        /// What they told about themselves.
        profile: UserProfile,
        /// Whether the caller's identity is a configured operator.
        operator: bool,
    },
    /// Add another verified identity to the caller's user.
    AddProfile {
        /// The identity from the verified token.
        identity: Identity,
    },
    /// Remove the caller's identity profile of one issuer.
    RemoveProfile {
        /// The issuer whose profile goes.
        issuer: String,
    },
    /// Remove the caller's user and memberships.
    RemoveUser,
    /// Create a tenant; the caller becomes its confirmed owner.
    CreateTenant {
        /// Tenant name.
        tenant: String,
        /// Rules and registry.
        spec: TenantSpec,
    },
    /// Replace the given parts of a tenant's spec.
    PatchTenant {
        /// Tenant name.
        tenant: String,
        /// The parts to replace.
        spec: TenantSpec,
    },
    /// Set the pod security level of a tenant's pods (operators only: the tenant's own members
    /// must not relax it).
    SetPodSecurity {
        /// Tenant name.
        tenant: String,
        /// The level.
        level: crate::pod_security::PodSecurity,
    },
    /// Delete a tenant and everything in it.
    DeleteTenant {
        /// Tenant name.
        tenant: String,
    },
    /// Invite a user; the membership stays pending until they confirm.
    Invite {
        /// Tenant name.
        tenant: String,
        /// Invited user id.
        user: String,
        /// Offered role.
        role: Role,
    },
    /// Accept the caller's pending invitation.
    Confirm {
        /// Tenant name.
        tenant: String,
        /// Must equal the invited role.
        role: Role,
    },
    /// Decline the caller's pending invitation.
    Reject {
        /// Tenant name.
        tenant: String,
        /// Must equal the invited role.
        role: Role,
    },
    /// Change a confirmed member's role.
    SetRole {
        /// Tenant name.
        tenant: String,
        /// Member user id.
        user: String,
        /// New role.
        role: Role,
    },
    /// Remove a member (or withdraw an invitation).
    RemoveMember {
        /// Tenant name.
        tenant: String,
        /// Member user id.
        user: String,
    },
    /// Register an account.
    CreateAccount {
        /// Tenant name.
        tenant: String,
        /// Account name.
        account: String,
        /// The account.
        body: TenantAccount,
    },
    /// Replace an account's spec and metadata.
    PatchAccount {
        /// Tenant name.
        tenant: String,
        /// Account name.
        account: String,
        /// The account.
        body: TenantAccount,
    },
    /// Remove an account (`delete`) or only purge its unused IaaS resources.
    DeleteAccount {
        /// Tenant name.
        tenant: String,
        /// Account name.
        account: String,
        /// Remove the account itself; refused while it has environments.
        delete: bool,
    },
    /// Create an environment inside an account.
    CreateEnvironment {
        /// Tenant name.
        tenant: String,
        /// Account name.
        account: String,
        /// Environment name.
        environment: String,
        /// The environment.
        spec: EnvironmentSpec,
    },
    /// Change an environment's marks or labels.
    PatchEnvironment {
        /// Tenant name.
        tenant: String,
        /// Account name.
        account: String,
        /// Environment name.
        environment: String,
        /// What changes.
        patch: EnvironmentPatch,
    },
    /// Remove an environment.
    DeleteEnvironment {
        /// Tenant name.
        tenant: String,
        /// Account name.
        account: String,
        /// Environment name.
        environment: String,
    },
    /// Register a resource (already validated by the proposer against the port range).
    RegisterResource {
        /// Tenant name.
        tenant: String,
        /// Resource kind.
        kind: ResourceKind,
        /// Resource name.
        name: String,
        /// The resource.
        spec: ResourceSpec,
    },
    /// Replace a resource's spec.
    UpdateResource {
        /// Tenant name.
        tenant: String,
        /// Resource kind.
        kind: ResourceKind,
        /// Resource name.
        name: String,
        /// The new spec.
        spec: ResourceSpec,
    },
    /// Remove a resource.
    UnregisterResource {
        /// Tenant name.
        tenant: String,
        /// Resource kind.
        kind: ResourceKind,
        /// Resource name.
        name: String,
    },
}

/// What a platform command reports back.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum PlatformResult {
    /// The change was made.
    Done,
    /// A user was registered.
    UserRegistered {
        /// The new user id.
        uid: String,
    },
}

/// Users and tenants.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Platform {
    /// Users by id.
    users: BTreeMap<String, User>,
    /// User id by issuer and subject.
    identities: BTreeMap<String, BTreeMap<String, String>>,
    /// Tenants by name.
    pub(crate) tenants: BTreeMap<String, Tenant>,
    /// Services removed lately, for watches.
    #[serde(default)]
    pub(crate) service_removals: crate::service::versions::Removals,
    /// What each cluster has committed to it, kept between placements (derived; see
    /// [`crate::service::reservations`]).
    #[serde(skip)]
    pub(crate) reservations: crate::service::reservations::ReservationCache,
    /// What each tenant's services use in each environment (derived; see [`usage`]).
    #[serde(skip)]
    pub(crate) usage: usage::UsageIndex,
}

impl Platform {
    /// The user an identity belongs to.
    pub fn user_of(&self, identity: &Identity) -> Option<&User> {
        let uid = self.identities.get(&identity.issuer)?.get(&identity.subject)?;
        self.users.get(uid)
    }

    /// A user by id.
    pub fn user(&self, uid: &str) -> Option<&User> {
        self.users.get(uid)
    }

    /// Every user.
    pub fn users(&self) -> impl Iterator<Item = &User> {
        self.users.values()
    }

    /// A tenant by name.
    pub fn tenant(&self, name: &str) -> Option<&Tenant> {
        self.tenants.get(name)
    }

    /// Every tenant with its name.
    pub fn tenants(&self) -> impl Iterator<Item = (&String, &Tenant)> {
        self.tenants.iter()
    }

    /// Whether a user is a confirmed member of the operator tenant.
    pub fn is_operator(&self, uid: &str) -> bool {
        self.tenants
            .get(OPERATOR_TENANT)
            .and_then(|t| t.members.get(uid))
            .is_some_and(|m| m.confirmed)
    }
}
