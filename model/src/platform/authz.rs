//! Who may do what: the one table of requirements for every platform read and write, and the
//! check of a caller against it. Handlers never decide this by hand.
//!
//! Reads of a tenant need a confirmed membership of any role; changes of its spec, accounts,
//! environments and members need `admin`; registering resources needs any confirmed role;
//! deleting it needs `owner`. Confirmed members of the operator tenant act as owners of every
//! tenant and may list all users and tenants. The finer role rules (only owners make owners,
//! the last owner stays) are checked where the change is applied.

use super::entities::{Identity, Role};
use super::error::PlatformError;
use super::{Platform, PlatformOp};

/// What a request needs of its caller.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Requirement<'a> {
    /// A valid credential, registered or not.
    Authenticated,
    /// A registered user.
    Registered,
    /// A member of the operator tenant.
    Operator,
    /// A confirmed member of the tenant with at least this role (operators always pass).
    Tenant {
        /// Tenant name.
        tenant: &'a str,
        /// Least role.
        role: Role,
    },
}

/// The platform reads the API serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PlatformRead<'a> {
    /// `GET /user/info`.
    UserInfo,
    /// `GET /user`.
    ListUsers,
    /// `GET /tenant?strict=true`.
    ListOwnTenants,
    /// `GET /tenant?strict=false`.
    ListAllTenants,
    /// Anything inside one tenant: info, accounts, environments, resources.
    Tenant(&'a str),
    /// A tenant's metrics and metrics providers: the operator tenant's are every registered
    /// user's to read (clusters of any tenant are scored on them), others their members'.
    Metrics(&'a str),
}

impl<'a> PlatformRead<'a> {
    /// What the read needs.
    pub fn requirement(&self) -> Requirement<'a> {
        match self {
            PlatformRead::UserInfo | PlatformRead::ListOwnTenants => Requirement::Registered,
            PlatformRead::ListUsers | PlatformRead::ListAllTenants => Requirement::Operator,
            PlatformRead::Metrics(tenant) if *tenant == super::identity::OPERATOR_TENANT => {
                Requirement::Registered
            }
            PlatformRead::Tenant(tenant) | PlatformRead::Metrics(tenant) => Requirement::Tenant {
                tenant,
                role: Role::Plain,
            },
        }
    }
}

impl PlatformOp {
    /// What the change needs.
    pub fn requirement(&self) -> Requirement<'_> {
        use PlatformOp::*;
        fn tenant_role(tenant: &str, role: Role) -> Requirement<'_> {
            Requirement::Tenant { tenant, role }
        }
        match self {
            RegisterUser { .. } => Requirement::Authenticated,
            AddProfile { .. } | RemoveProfile { .. } | RemoveUser | CreateTenant { .. } => {
                Requirement::Registered
            }
            // The invitee is not a confirmed member yet; apply checks the invitation.
            Confirm { .. } | Reject { .. } => Requirement::Registered,
            // A tenant's pod security is the operator's to relax, never its members'.
            SetPodSecurity { .. } => Requirement::Operator,
            PatchTenant { tenant, .. }
            | Invite { tenant, .. }
            | SetRole { tenant, .. }
            | CreateAccount { tenant, .. }
            | PatchAccount { tenant, .. }
            | DeleteAccount { tenant, .. }
            | CreateEnvironment { tenant, .. }
            | PatchEnvironment { tenant, .. }
            | DeleteEnvironment { tenant, .. } => tenant_role(tenant, Role::Admin),
            // Anyone may leave; removing someone else needs admin (checked in apply).
            RemoveMember { tenant, .. } => tenant_role(tenant, Role::Plain),
            DeleteTenant { tenant } => tenant_role(tenant, Role::Owner),
            RegisterResource { tenant, .. }
            | UpdateResource { tenant, .. }
            | UnregisterResource { tenant, .. } => tenant_role(tenant, Role::Plain),
        }
    }
}

/// What a caller turned out to be allowed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Grant {
    /// The caller's user id; `None` only for [`Requirement::Authenticated`] by an unregistered
    /// identity.
    pub uid: Option<String>,
    /// Whether the caller is an operator.
    pub operator: bool,
    /// The caller's confirmed role in the tenant the requirement named, if any.
    pub role: Option<Role>,
}

impl Grant {
    /// The role the caller acts with in the tenant: operators act as owners.
    pub fn effective_role(&self) -> Option<Role> {
        if self.operator {
            Some(Role::Owner)
        } else {
            self.role
        }
    }

    /// Whether the caller may read secret values and credentials of the tenant: its owners and
    /// admins (not operators, not plain members).
    pub fn reads_secrets(&self) -> bool {
        self.role.is_some_and(|role| role >= Role::Admin)
    }

    /// The caller's user id (present for every requirement but `Authenticated`).
    pub fn uid(&self) -> &str {
        self.uid.as_deref().unwrap_or_default()
    }
}

impl Platform {
    /// Checks `caller` against `requirement`.
    pub fn authorize(&self, caller: &Identity, requirement: Requirement<'_>) -> Result<Grant, PlatformError> {
        let user = self.user_of(caller);
        if requirement == Requirement::Authenticated {
            return Ok(Grant {
                uid: user.map(|u| u.uid.clone()),
                operator: user.is_some_and(|u| self.is_operator(&u.uid)),
                role: None,
            });
        }
        let user = user.ok_or_else(|| PlatformError::Unregistered {
            issuer: caller.issuer.clone(),
            subject: caller.subject.clone(),
        })?;
        let operator = self.is_operator(&user.uid);
        let mut grant = Grant {
            uid: Some(user.uid.clone()),
            operator,
            role: None,
        };
        match requirement {
            Requirement::Authenticated | Requirement::Registered => Ok(grant),
            Requirement::Operator if operator => Ok(grant),
            Requirement::Operator => Err(PlatformError::Forbidden(
                "only members of the operator tenant may do this".to_string(),
            )),
            Requirement::Tenant { tenant, role } => {
                let found = self
                    .tenant(tenant)
                    .ok_or_else(|| PlatformError::NotFound(format!("tenant {tenant:?} not found")))?;
                grant.role = found
                    .members
                    .get(&user.uid)
                    .filter(|member| member.confirmed)
                    .map(|member| member.role);
                match grant.effective_role() {
                    Some(have) if have >= role => Ok(grant),
                    Some(have) => Err(PlatformError::Forbidden(format!(
                        "this needs the {} role in tenant {tenant:?}; you are {}",
                        role.as_str(),
                        have.as_str()
                    ))),
                    // The same answer as for a tenant that does not exist: a stranger must not
                    // learn which tenant names are taken.
                    None => Err(PlatformError::NotFound(format!("tenant {tenant:?} not found"))),
                }
            }
        }
    }
}
