//! The pure apply of platform commands: authorization first, then the state rules, then the
//! change; a refused command changes nothing.

use std::collections::BTreeMap;

use super::authz::Grant;
use super::entities::{Account, Identity, Member, Role, Tenant, TenantSpec, User};
use super::error::PlatformError;
use super::identity::OPERATOR_TENANT;
use super::marks::validate_marks;
use super::resource::{check_selector, port_of, ResourceKind, ResourceSpec};
use super::{Platform, PlatformCommand, PlatformOp, PlatformResult};
use crate::validation::validate_object_name;

type Outcome = Result<PlatformResult, PlatformError>;

/// Checks every selector of a tenant spec; the error names the list, rule and item.
pub fn validate_tenant_spec(spec: &TenantSpec) -> Result<(), PlatformError> {
    if let Some(rules) = &spec.rules {
        for (list, rules, roots) in rules.lists() {
            for (index, rule) in rules.iter().enumerate() {
                rule.sel.validate(roots).map_err(|e| {
                    PlatformError::invalid(format!("rules.{list}[{index}].sel[{}]", e.item), e.message)
                })?;
            }
        }
    }
    if let Some(registry) = &spec.registry {
        super::registry::validate_registry(registry)?;
    }
    Ok(())
}

/// Refuses a registry domain another tenant publishes under: a domain is one tenant's (what it
/// publishes there is listed and used as its own).
fn check_domain_free(platform: &Platform, tenant: &str, spec: &TenantSpec) -> Result<(), PlatformError> {
    let Some(registry) = &spec.registry else {
        return Ok(());
    };
    let taken = platform.tenants().any(|(name, other)| {
        name != tenant
            && other
                .spec
                .registry
                .as_ref()
                .is_some_and(|r| r.domain == registry.domain)
    });
    if taken {
        return Err(PlatformError::Conflict(format!(
            "registry.domain {:?} is another tenant's: choose a domain of your own",
            registry.domain
        )));
    }
    Ok(())
}

fn not_found(what: String) -> PlatformError {
    PlatformError::NotFound(format!("{what} not found"))
}

fn conflict(message: impl Into<String>) -> PlatformError {
    PlatformError::Conflict(message.into())
}

fn forbidden(message: impl Into<String>) -> PlatformError {
    PlatformError::Forbidden(message.into())
}

impl Platform {
    /// Applies one command. Pure: the outcome depends only on `self` and `command`.
    pub fn apply(&mut self, command: &PlatformCommand) -> Outcome {
        // Tenants, accounts and environments may change many services at once: the derived
        // indexes are rebuilt by their next reader.
        self.reservations.clear();
        self.usage.clear();
        let grant = self.authorize(&command.caller, command.op.requirement())?;
        // Every arm checks everything before it changes anything.
        self.change(&command.caller, &grant, &command.op)
    }

    fn tenant_mut(&mut self, tenant: &str) -> Result<&mut Tenant, PlatformError> {
        self.tenants
            .get_mut(tenant)
            .ok_or_else(|| not_found(format!("tenant {tenant:?}")))
    }

    fn account_mut(&mut self, tenant: &str, account: &str) -> Result<&mut Account, PlatformError> {
        self.tenant_mut(tenant)?
            .accounts
            .get_mut(account)
            .ok_or_else(|| not_found(format!("account {account:?} of tenant {tenant:?}")))
    }

    /// Tenants in which `uid` is the only confirmed owner.
    fn sole_ownerships(&self, uid: &str) -> Vec<String> {
        self.tenants
            .iter()
            .filter(|(_, t)| {
                t.members
                    .get(uid)
                    .is_some_and(|m| m.confirmed && m.role == Role::Owner)
                    && t.owners() == 1
            })
            .map(|(name, _)| name.clone())
            .collect()
    }

    /// Who already registered a port or domain with this value, other than `except`.
    fn holder_of(
        &self,
        kind: ResourceKind,
        spec: &ResourceSpec,
        except: (&str, &str),
    ) -> Option<(String, String)> {
        let same = |other: &ResourceSpec| match kind {
            ResourceKind::Port => {
                port_of(&other.data).is_some() && port_of(&other.data) == port_of(&spec.data)
            }
            _ => other.data == spec.data,
        };
        self.tenants.iter().find_map(|(tenant, t)| {
            t.resources.get(&kind)?.iter().find_map(|(name, other)| {
                ((tenant.as_str(), name.as_str()) != except && same(other))
                    .then(|| (tenant.clone(), name.clone()))
            })
        })
    }

    fn change(&mut self, caller: &Identity, grant: &Grant, op: &PlatformOp) -> Outcome {
        use PlatformOp::*;
        let uid = grant.uid().to_string();
        match op {
            RegisterUser {
                uid: new_uid,
                profile,
                operator,
            } => {
                if let Some(existing) = &grant.uid {
                    return Err(conflict(format!(
                        "this identity is already registered as user {existing:?}"
                    )));
                }
                if self.users.contains_key(new_uid) {
                    return Err(conflict(format!("user id {new_uid:?} is taken; retry")));
                }
                if profile.name.trim().is_empty() {
                    return Err(PlatformError::invalid("name", "must not be empty"));
                }
                profile.check_bounds()?;
                let user = User {
                    uid: new_uid.clone(),
                    profile: profile.clone(),
                    profiles: BTreeMap::from([(caller.issuer.clone(), caller.subject.clone())]),
                };
                self.users.insert(new_uid.clone(), user);
                self.identities
                    .entry(caller.issuer.clone())
                    .or_default()
                    .insert(caller.subject.clone(), new_uid.clone());
                if *operator {
                    let tenant = self.tenants.entry(OPERATOR_TENANT.to_string()).or_default();
                    tenant.members.insert(
                        new_uid.clone(),
                        Member {
                            role: Role::Owner,
                            confirmed: true,
                        },
                    );
                }
                Ok(PlatformResult::UserRegistered { uid: new_uid.clone() })
            }
            AddProfile { identity } => {
                if let Some(owner) = self
                    .identities
                    .get(&identity.issuer)
                    .and_then(|s| s.get(&identity.subject))
                {
                    return Err(conflict(if *owner == uid {
                        "this identity is already one of your profiles".to_string()
                    } else {
                        "this identity belongs to another user".to_string()
                    }));
                }
                let user = self
                    .users
                    .get_mut(&uid)
                    .ok_or_else(|| not_found(format!("user {uid:?}")))?;
                if user.profiles.contains_key(&identity.issuer) {
                    return Err(conflict(format!(
                        "you already have a profile of {:?}",
                        identity.issuer
                    )));
                }
                user.profiles
                    .insert(identity.issuer.clone(), identity.subject.clone());
                self.identities
                    .entry(identity.issuer.clone())
                    .or_default()
                    .insert(identity.subject.clone(), uid);
                Ok(PlatformResult::Done)
            }
            RemoveProfile { issuer } => {
                let user = self
                    .users
                    .get_mut(&uid)
                    .ok_or_else(|| not_found(format!("user {uid:?}")))?;
                let Some(subject) = user.profiles.get(issuer).cloned() else {
                    return Err(not_found(format!("profile of {issuer:?}")));
                };
                if user.profiles.len() == 1 {
                    return Err(conflict(
                        "this is your only profile; add another before removing it",
                    ));
                }
                user.profiles.remove(issuer);
                if let Some(subjects) = self.identities.get_mut(issuer) {
                    subjects.remove(&subject);
                }
                Ok(PlatformResult::Done)
            }
            RemoveUser => {
                let sole = self.sole_ownerships(&uid);
                if !sole.is_empty() {
                    return Err(conflict(format!(
                        "you are the last owner of {}; make someone else owner or delete it first",
                        sole.join(", ")
                    )));
                }
                if let Some(user) = self.users.remove(&uid) {
                    for (issuer, subject) in &user.profiles {
                        if let Some(subjects) = self.identities.get_mut(issuer) {
                            subjects.remove(subject);
                        }
                    }
                }
                for tenant in self.tenants.values_mut() {
                    tenant.members.remove(&uid);
                }
                Ok(PlatformResult::Done)
            }
            CreateTenant { tenant, spec } => {
                validate_object_name("tenant", tenant)?;
                validate_tenant_spec(spec)?;
                check_domain_free(self, tenant, spec)?;
                if self.tenants.contains_key(tenant) {
                    return Err(conflict(format!("tenant {tenant:?} already exists")));
                }
                if tenant == OPERATOR_TENANT {
                    return Err(forbidden(format!(
                        "{OPERATOR_TENANT:?} is reserved; operators are configured on the nodes"
                    )));
                }
                let members = BTreeMap::from([(
                    uid,
                    Member {
                        role: Role::Owner,
                        confirmed: true,
                    },
                )]);
                self.tenants.insert(
                    tenant.clone(),
                    Tenant {
                        spec: TenantSpec {
                            registry: spec.registry.as_ref().map(|r| super::registry::merged(None, r)),
                            ..spec.clone()
                        },
                        members,
                        ..Tenant::default()
                    },
                );
                Ok(PlatformResult::Done)
            }
            PatchTenant { tenant, spec } => {
                validate_tenant_spec(spec)?;
                check_domain_free(self, tenant, spec)?;
                let stored = self.tenant_mut(tenant)?;
                if let Some(rules) = &spec.rules {
                    stored.spec.rules = Some(rules.clone());
                }
                if let Some(registry) = &spec.registry {
                    let next = super::registry::merged(stored.spec.registry.as_ref(), registry);
                    stored.spec.registry = Some(next);
                }
                Ok(PlatformResult::Done)
            }
            SetPodSecurity { tenant, level } => {
                self.tenant_mut(tenant)?.pod_security = *level;
                Ok(PlatformResult::Done)
            }
            DeleteTenant { tenant } => {
                let stored = self.tenant_mut(tenant)?;
                if let Some(service) = stored.services.keys().next() {
                    return Err(conflict(format!(
                        "tenant {tenant:?} still has services ({service:?} first); delete them first"
                    )));
                }
                if !grant.operator && stored.owners() > 1 {
                    return Err(conflict(format!(
                        "tenant {tenant:?} has other owners; only its sole owner may delete it"
                    )));
                }
                // Its clusters go with it: not while services (of any tenant) run on them.
                let hosting = self
                    .tenants
                    .values()
                    .flat_map(|t| t.services.values())
                    .any(|s| s.placement.as_ref().is_some_and(|c| c.tenant == *tenant));
                if hosting {
                    return Err(conflict(format!(
                        "services run on clusters of tenant {tenant:?}; they must be deleted first"
                    )));
                }
                self.tenants.remove(tenant);
                Ok(PlatformResult::Done)
            }
            Invite { tenant, user, role } => {
                if *role == Role::Owner && grant.effective_role() != Some(Role::Owner) {
                    return Err(forbidden("only owners may invite owners"));
                }
                if !self.users.contains_key(user) {
                    return Err(not_found(format!("user {user:?}")));
                }
                let stored = self.tenant_mut(tenant)?;
                if let Some(member) = stored.members.get(user) {
                    return Err(conflict(format!(
                        "user {user:?} is already {} of tenant {tenant:?}",
                        if member.confirmed {
                            "a member"
                        } else {
                            "invited to"
                        }
                    )));
                }
                stored.members.insert(
                    user.clone(),
                    Member {
                        role: *role,
                        confirmed: false,
                    },
                );
                Ok(PlatformResult::Done)
            }
            Confirm { tenant, role } | Reject { tenant, role } => {
                let stored = self.tenant_mut(tenant)?;
                let member = stored
                    .members
                    .get_mut(&uid)
                    .ok_or_else(|| not_found(format!("invitation to tenant {tenant:?}")))?;
                if member.confirmed {
                    return Err(conflict(format!(
                        "you are already a confirmed member of tenant {tenant:?}"
                    )));
                }
                if member.role != *role {
                    return Err(conflict(format!(
                        "the invitation is for the {} role, not {}",
                        member.role.as_str(),
                        role.as_str()
                    )));
                }
                if matches!(op, Confirm { .. }) {
                    member.confirmed = true;
                } else {
                    stored.members.remove(&uid);
                }
                Ok(PlatformResult::Done)
            }
            SetRole { tenant, user, role } => {
                let acting = grant.effective_role().unwrap_or(Role::Plain);
                let stored = self.tenant_mut(tenant)?;
                let member = member_of(stored, tenant, user)?;
                if !member.confirmed {
                    return Err(conflict(format!(
                        "user {user:?} has not confirmed the invitation yet"
                    )));
                }
                if *role > acting || member.role > acting {
                    return Err(forbidden(format!(
                        "a {} cannot give or take the {} role",
                        acting.as_str(),
                        (*role).max(member.role).as_str()
                    )));
                }
                if member.role == Role::Owner && *role != Role::Owner && stored.owners() == 1 {
                    return Err(last_owner(tenant, user));
                }
                stored.members.insert(
                    user.clone(),
                    Member {
                        role: *role,
                        ..member
                    },
                );
                Ok(PlatformResult::Done)
            }
            RemoveMember { tenant, user } => {
                let acting = grant.effective_role().unwrap_or(Role::Plain);
                let stored = self.tenant_mut(tenant)?;
                let member = member_of(stored, tenant, user)?;
                let leaving = *user == uid;
                if !leaving && (acting < Role::Admin || member.role > acting) {
                    return Err(forbidden(format!(
                        "a {} cannot remove a member with the {} role",
                        acting.as_str(),
                        member.role.as_str()
                    )));
                }
                if member.confirmed && member.role == Role::Owner && stored.owners() == 1 {
                    return Err(last_owner(tenant, user));
                }
                stored.members.remove(user);
                Ok(PlatformResult::Done)
            }
            CreateAccount {
                tenant,
                account,
                body,
            } => {
                validate_object_name("account", account)?;
                validate_marks("spec.marks", &body.spec.marks)?;
                let stored = self.tenant_mut(tenant)?;
                if stored.accounts.contains_key(account) {
                    return Err(conflict(format!(
                        "account {account:?} already exists in tenant {tenant:?}"
                    )));
                }
                stored.accounts.insert(
                    account.clone(),
                    Account {
                        account: body.clone(),
                        environments: BTreeMap::new(),
                    },
                );
                Ok(PlatformResult::Done)
            }
            PatchAccount {
                tenant,
                account,
                body,
            } => {
                validate_marks("spec.marks", &body.spec.marks)?;
                let stored = self.account_mut(tenant, account)?;
                if stored.account.spec.iaas != body.spec.iaas && !stored.environments.is_empty() {
                    return Err(conflict(
                        "the IaaS provider cannot change while the account has environments",
                    ));
                }
                stored.account = body.clone();
                Ok(PlatformResult::Done)
            }
            DeleteAccount {
                tenant,
                account,
                delete,
            } => {
                let stored = self.account_mut(tenant, account)?;
                if !*delete {
                    // Only purges IaaS resources no environment uses; none are held yet.
                    return Ok(PlatformResult::Done);
                }
                if !stored.environments.is_empty() {
                    let names: Vec<&str> = stored.environments.keys().map(String::as_str).collect();
                    return Err(conflict(format!(
                        "account {account:?} still has environments: {}",
                        names.join(", ")
                    )));
                }
                self.tenant_mut(tenant)?.accounts.remove(account);
                Ok(PlatformResult::Done)
            }
            CreateEnvironment {
                tenant,
                account,
                environment,
                spec,
            } => {
                validate_object_name("environment", environment)?;
                validate_marks("marks", &spec.marks)?;
                if let Some(selection) = &spec.clusters {
                    super::clusters::validate_selection(selection)?;
                }
                if !spec.labels.is_object() {
                    return Err(PlatformError::invalid("labels", "must be a JSON object"));
                }
                let stored = self.account_mut(tenant, account)?;
                if stored.environments.contains_key(environment) {
                    return Err(conflict(format!(
                        "environment {environment:?} already exists in account {account:?}"
                    )));
                }
                stored.environments.insert(environment.clone(), spec.clone());
                Ok(PlatformResult::Done)
            }
            PatchEnvironment {
                tenant,
                account,
                environment,
                patch,
            } => {
                if let Some(marks) = &patch.marks {
                    validate_marks("marks", marks)?;
                }
                if let Some(selection) = &patch.clusters {
                    super::clusters::validate_selection(selection)?;
                }
                if patch.labels.as_ref().is_some_and(|labels| !labels.is_object()) {
                    return Err(PlatformError::invalid("labels", "must be a JSON object"));
                }
                let stored = self
                    .account_mut(tenant, account)?
                    .environments
                    .get_mut(environment)
                    .ok_or_else(|| {
                        not_found(format!("environment {environment:?} of account {account:?}"))
                    })?;
                if let Some(marks) = &patch.marks {
                    stored.marks = marks.clone();
                }
                if let Some(labels) = &patch.labels {
                    stored.labels = labels.clone();
                }
                if let Some(selection) = &patch.clusters {
                    stored.clusters = Some(selection.clone());
                }
                Ok(PlatformResult::Done)
            }
            DeleteEnvironment {
                tenant,
                account,
                environment,
            } => {
                let reference = crate::service::EnvironmentRef {
                    account: account.clone(),
                    environment: environment.clone(),
                };
                if let Some(service) = self.services_in(tenant, &reference).first() {
                    return Err(conflict(format!(
                        "service {service:?} is deployed in environment {environment:?}; delete it first"
                    )));
                }
                self.account_mut(tenant, account)?
                    .environments
                    .remove(environment)
                    .ok_or_else(|| {
                        not_found(format!("environment {environment:?} of account {account:?}"))
                    })?;
                Ok(PlatformResult::Done)
            }
            RegisterResource {
                tenant,
                kind,
                name,
                spec,
            } => {
                validate_object_name("name", name)?;
                check_selector(spec)?;
                self.check_unique(*kind, spec, tenant, name)?;
                let stored = self.tenant_mut(tenant)?;
                if stored
                    .resources
                    .get(kind)
                    .is_some_and(|names| names.contains_key(name))
                {
                    return Err(conflict(format!(
                        "{kind} {name:?} already exists in tenant {tenant:?}"
                    )));
                }
                stored
                    .resources
                    .entry(*kind)
                    .or_default()
                    .insert(name.clone(), spec.clone());
                Ok(PlatformResult::Done)
            }
            UpdateResource {
                tenant,
                kind,
                name,
                spec,
            } => {
                check_selector(spec)?;
                self.check_unique(*kind, spec, tenant, name)?;
                let stored = self
                    .tenant_mut(tenant)?
                    .resources
                    .get_mut(kind)
                    .and_then(|names| names.get_mut(name))
                    .ok_or_else(|| not_found(format!("{kind} {name:?} of tenant {tenant:?}")))?;
                *stored = spec.clone();
                Ok(PlatformResult::Done)
            }
            UnregisterResource { tenant, kind, name } => {
                if let Some((service, _)) = self
                    .tenant_mut(tenant)?
                    .services
                    .iter()
                    .find(|(_, s)| s.uses_resource(kind.as_str(), name))
                {
                    return Err(conflict(format!("service {service:?} uses {kind} {name:?}")));
                }
                let resources = &mut self.tenant_mut(tenant)?.resources;
                let names = resources
                    .get_mut(kind)
                    .filter(|names| names.contains_key(name))
                    .ok_or_else(|| not_found(format!("{kind} {name:?} of tenant {tenant:?}")))?;
                names.remove(name);
                if names.is_empty() {
                    resources.remove(kind);
                }
                Ok(PlatformResult::Done)
            }
        }
    }

    /// Ports and domains are unique across all tenants: refuses a value another resource
    /// already holds.
    fn check_unique(
        &self,
        kind: ResourceKind,
        spec: &ResourceSpec,
        tenant: &str,
        name: &str,
    ) -> Result<(), PlatformError> {
        if !matches!(kind, ResourceKind::Port | ResourceKind::Domain) {
            return Ok(());
        }
        match self.holder_of(kind, spec, (tenant, name)) {
            Some((holder, _)) => Err(conflict(format!(
                "this {kind} is already registered {}",
                if holder == tenant {
                    "in this tenant"
                } else {
                    "by another tenant"
                }
            ))),
            None => Ok(()),
        }
    }
}

/// A member of `stored` (the tenant named `tenant`), confirmed or not.
fn member_of(stored: &Tenant, tenant: &str, user: &str) -> Result<Member, PlatformError> {
    stored
        .members
        .get(user)
        .copied()
        .ok_or_else(|| not_found(format!("member {user:?} of tenant {tenant:?}")))
}

/// The refusal to leave a tenant without a confirmed owner.
fn last_owner(tenant: &str, user: &str) -> PlatformError {
    conflict(format!("user {user:?} is the last owner of tenant {tenant:?}"))
}
