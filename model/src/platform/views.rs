//! What the platform's reads return, shaped as the Axebow API answers, with secret values and
//! credentials left out for callers who may not read them.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

use super::authz::Grant;
use super::entities::{EnvironmentSpec, Member, Registry, Role, TenantAccount, TenantRules};
use super::error::PlatformError;
use super::marks::{marks_status, MarkStatus};
use super::resource::{port_of, redacted, ResourceKind, ResourceSpec};
use super::Platform;
use crate::pod_security::PodSecurity;

/// `GET /user/info`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct UserInfo {
    /// The user id.
    pub uid: String,
    /// Given name.
    pub name: String,
    /// Family name.
    pub surname: String,
    /// Confirmed memberships: role by tenant.
    pub tenants: BTreeMap<String, Role>,
    /// Pending invitations: offered role by tenant.
    pub invitations: BTreeMap<String, Role>,
    /// Identity profiles: subject by issuer.
    pub profiles: BTreeMap<String, String>,
}

/// One entry of `GET /user`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct UserSummary {
    /// Full name.
    pub name: String,
    /// User id.
    pub uid: String,
}

/// An account as tenant info shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct AccountInfo {
    /// The account (IaaS credentials left out for plain members and operators).
    pub account: TenantAccount,
    /// Environment specs by name.
    pub environments: BTreeMap<String, EnvironmentSpec>,
}

/// `GET /tenant/{name}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct TenantInfo {
    /// Accounts by name.
    pub accounts: BTreeMap<String, AccountInfo>,
    /// Members by user id.
    pub users: BTreeMap<String, Member>,
    /// The members' names (name and surname as they registered) by user id, so that members
    /// know each other by more than an id (Drover's addition to Axebow's view).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub names: BTreeMap<String, String>,
    /// Resource names by kind.
    pub resources: BTreeMap<ResourceKind, Vec<String>>,
    /// The tenant's rules.
    pub rules: TenantRules,
    /// The module registry (its credentials never shown: `hasCredentials` says whether it has some).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub registry: Option<Registry>,
    /// The pod security level its pods are held to (set by operators; `baseline` unless relaxed).
    #[serde(rename = "podSecurity", default)]
    pub pod_security: PodSecurity,
}

/// `GET …/environment/{name}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct EnvironmentInfo {
    /// The environment's spec.
    pub spec: EnvironmentSpec,
    /// Its usage.
    pub status: EnvironmentStatus,
}

/// Usage of an environment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct EnvironmentStatus {
    /// Limit, use and unit of every dimension.
    pub marks: BTreeMap<String, MarkStatus>,
}

/// The parent of a resource.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct ResourceParent {
    /// Tenant name.
    pub name: String,
    /// Always `tenant`.
    pub kind: String,
}

/// A resource's identity.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct ResourceId {
    /// Resource name.
    pub name: String,
    /// Resource kind.
    pub kind: ResourceKind,
    /// Owning tenant.
    pub parent: ResourceParent,
}

/// One entry of a resource list.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct ResourceItem {
    /// The resource's identity.
    pub id: ResourceId,
}

/// `GET /tenant/{t}/port`: the list plus the port numbers the tenant holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct PortList {
    /// The port resources.
    pub items: Vec<ResourceItem>,
    /// Port numbers registered by the tenant, ascending.
    pub usedports: Vec<u16>,
}

/// `GET /tenant/{t}/{kind}/{name}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct ResourceInfo {
    /// The resource's identity.
    pub id: ResourceId,
    /// Its data (secret values and private keys left out for callers who may not read them).
    pub spec: ResourceData,
    /// Free-form metadata.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub meta: Option<Value>,
    /// The resource's environment selector.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub selector: Option<super::selector::Selector>,
}

/// A resource's data.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct ResourceData {
    /// The kind-specific value.
    #[schema(value_type = Object)]
    pub data: Value,
}

fn not_found(what: String) -> PlatformError {
    PlatformError::NotFound(format!("{what} not found"))
}

fn resource_id(tenant: &str, kind: ResourceKind, name: &str) -> ResourceId {
    ResourceId {
        name: name.to_string(),
        kind,
        parent: ResourceParent {
            name: tenant.to_string(),
            kind: "tenant".to_string(),
        },
    }
}

/// The list entries of some resources of one kind.
fn items(tenant: &str, kind: ResourceKind, resources: &[(&String, &ResourceSpec)]) -> Vec<ResourceItem> {
    resources
        .iter()
        .map(|(name, _)| ResourceItem {
            id: resource_id(tenant, kind, name),
        })
        .collect()
}

fn account_view(account: &TenantAccount, grant: &Grant) -> TenantAccount {
    let mut account = account.clone();
    if !grant.reads_secrets() {
        account.spec.iaas_info = Value::Null;
    }
    account
}

impl Platform {
    /// The caller's own user.
    pub fn user_info(&self, grant: &Grant) -> Result<UserInfo, PlatformError> {
        let user = self
            .user(grant.uid())
            .ok_or_else(|| not_found(format!("user {:?}", grant.uid())))?;
        let mut info = UserInfo {
            uid: user.uid.clone(),
            name: user.profile.name.clone(),
            surname: user.profile.surname.clone(),
            tenants: BTreeMap::new(),
            invitations: BTreeMap::new(),
            profiles: user.profiles.clone(),
        };
        for (name, tenant) in self.tenants() {
            if let Some(member) = tenant.members.get(&user.uid) {
                let map = if member.confirmed {
                    &mut info.tenants
                } else {
                    &mut info.invitations
                };
                map.insert(name.clone(), member.role);
            }
        }
        Ok(info)
    }

    /// Every user (operators only).
    pub fn user_list(&self) -> Vec<UserSummary> {
        self.users()
            .map(|user| UserSummary {
                name: format!("{} {}", user.profile.name, user.profile.surname)
                    .trim()
                    .to_string(),
                uid: user.uid.clone(),
            })
            .collect()
    }

    /// The caller's role in each tenant: only their confirmed tenants when `strict`, every
    /// tenant (with `none` where they have no role) otherwise.
    pub fn tenant_list(&self, grant: &Grant, strict: bool) -> BTreeMap<String, String> {
        self.tenants()
            .filter_map(|(name, tenant)| {
                let role = tenant
                    .members
                    .get(grant.uid())
                    .filter(|m| m.confirmed)
                    .map(|m| m.role.as_str().to_string());
                match (role, strict) {
                    (Some(role), _) => Some((name.clone(), role)),
                    (None, false) => Some((name.clone(), "none".to_string())),
                    (None, true) => None,
                }
            })
            .collect()
    }

    /// One tenant.
    pub fn tenant_info(&self, name: &str, grant: &Grant) -> Result<TenantInfo, PlatformError> {
        let tenant = self
            .tenant(name)
            .ok_or_else(|| not_found(format!("tenant {name:?}")))?;
        let accounts = tenant
            .accounts
            .iter()
            .map(|(name, account)| {
                let info = AccountInfo {
                    account: account_view(&account.account, grant),
                    environments: account.environments.clone(),
                };
                (name.clone(), info)
            })
            .collect();
        let resources = tenant
            .resources
            .iter()
            .map(|(kind, names)| (*kind, names.keys().cloned().collect()))
            .collect();
        // Credentials are written, never shown (to owners neither, as every other secret).
        let mut registry = tenant.spec.registry.clone();
        if let Some(registry) = registry.as_mut() {
            registry.has_credentials = registry.credentials.take().is_some();
        }
        let names = tenant
            .members
            .keys()
            .filter_map(|uid| {
                let profile = &self.users.get(uid)?.profile;
                let name = format!("{} {}", profile.name, profile.surname);
                Some((uid.clone(), name.trim().to_string()))
            })
            .collect();
        Ok(TenantInfo {
            accounts,
            users: tenant.members.clone(),
            names,
            resources,
            rules: tenant.spec.rules.clone().unwrap_or_default(),
            registry,
            pod_security: tenant.pod_security,
        })
    }

    /// One account.
    pub fn account_info(
        &self,
        tenant: &str,
        account: &str,
        grant: &Grant,
    ) -> Result<TenantAccount, PlatformError> {
        self.tenant(tenant)
            .and_then(|t| t.accounts.get(account))
            .map(|a| account_view(&a.account, grant))
            .ok_or_else(|| not_found(format!("account {account:?} of tenant {tenant:?}")))
    }

    /// Account names of a tenant.
    pub fn account_names(&self, tenant: &str) -> Result<Vec<String>, PlatformError> {
        self.tenant(tenant)
            .map(|t| t.accounts.keys().cloned().collect())
            .ok_or_else(|| not_found(format!("tenant {tenant:?}")))
    }

    /// Environment names of an account.
    pub fn environment_names(&self, tenant: &str, account: &str) -> Result<Vec<String>, PlatformError> {
        self.tenant(tenant)
            .and_then(|t| t.accounts.get(account))
            .map(|a| a.environments.keys().cloned().collect())
            .ok_or_else(|| not_found(format!("account {account:?} of tenant {tenant:?}")))
    }

    /// One environment with what the services deployed in it use of each mark.
    pub fn environment_info(
        &self,
        tenant: &str,
        account: &str,
        environment: &str,
    ) -> Result<EnvironmentInfo, PlatformError> {
        let spec = self
            .tenant(tenant)
            .and_then(|t| t.accounts.get(account))
            .and_then(|a| a.environments.get(environment))
            .ok_or_else(|| not_found(format!("environment {environment:?} of account {account:?}")))?;
        Ok(EnvironmentInfo {
            spec: spec.clone(),
            status: EnvironmentStatus {
                marks: marks_status(
                    &spec.marks,
                    &self.environment_usage(
                        tenant,
                        &crate::service::EnvironmentRef {
                            account: account.to_string(),
                            environment: environment.to_string(),
                        },
                    ),
                ),
            },
        })
    }

    fn resources_of(
        &self,
        tenant: &str,
        kind: ResourceKind,
    ) -> Result<Vec<(&String, &ResourceSpec)>, PlatformError> {
        let found = self
            .tenant(tenant)
            .ok_or_else(|| not_found(format!("tenant {tenant:?}")))?;
        Ok(found
            .resources
            .get(&kind)
            .map(|names| names.iter().collect())
            .unwrap_or_default())
    }

    /// The resources of one kind.
    pub fn resource_list(
        &self,
        tenant: &str,
        kind: ResourceKind,
    ) -> Result<Vec<ResourceItem>, PlatformError> {
        Ok(items(tenant, kind, &self.resources_of(tenant, kind)?))
    }

    /// The port resources with the port numbers they hold.
    pub fn port_list(&self, tenant: &str) -> Result<PortList, PlatformError> {
        let ports = self.resources_of(tenant, ResourceKind::Port)?;
        let mut usedports: Vec<u16> = ports.iter().filter_map(|(_, spec)| port_of(&spec.data)).collect();
        usedports.sort_unstable();
        Ok(PortList {
            items: items(tenant, ResourceKind::Port, &ports),
            usedports,
        })
    }

    /// One resource.
    pub fn resource_info(
        &self,
        tenant: &str,
        kind: ResourceKind,
        name: &str,
        grant: &Grant,
    ) -> Result<ResourceInfo, PlatformError> {
        let spec = self
            .resources_of(tenant, kind)?
            .into_iter()
            .find(|(stored, _)| *stored == name)
            .map(|(_, spec)| spec)
            .ok_or_else(|| not_found(format!("{kind} {name:?} of tenant {tenant:?}")))?;
        let spec = if grant.reads_secrets() {
            spec.clone()
        } else {
            redacted(kind, spec)
        };
        Ok(ResourceInfo {
            id: resource_id(tenant, kind, name),
            spec: ResourceData { data: spec.data },
            meta: spec.meta,
            selector: spec.selector,
        })
    }
}
