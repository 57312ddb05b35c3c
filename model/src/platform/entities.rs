//! What the platform stores: users and their identity profiles, tenants with their members,
//! rules, accounts, environments and resources.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

pub use super::identity::Identity;
use super::marks::Marks;
use super::resource::{ResourceKind, ResourceSpec};
use super::selector::Selector;

/// A tenant role; `Owner > Admin > Plain`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// May read the tenant and register resources.
    Plain,
    /// May also change the tenant's spec, accounts, environments and members.
    Admin,
    /// May also make owners and delete the tenant.
    Owner,
}

impl Role {
    /// Parses `owner`, `admin` or `plain`.
    pub fn parse(text: &str) -> Option<Role> {
        match text {
            "owner" => Some(Role::Owner),
            "admin" => Some(Role::Admin),
            "plain" => Some(Role::Plain),
            _ => None,
        }
    }

    /// The role's name.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Owner => "owner",
            Role::Admin => "admin",
            Role::Plain => "plain",
        }
    }
}

/// What a user tells about themselves when registering.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct UserProfile {
    /// Given name.
    pub name: String,
    /// Family name.
    pub surname: String,
    /// How the user found the platform.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub discovery_method: Option<String>,
    /// Company.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub company_name: Option<String>,
    /// Role in the company.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub company_role: Option<String>,
}

/// Longest profile field (name, surname, company, …), in characters.
pub const MAX_PROFILE_FIELD_CHARS: usize = 256;

impl UserProfile {
    /// Refuses over-long fields and invisible control or bidi characters: profiles are shown to
    /// other members and operators.
    pub fn check_bounds(&self) -> Result<(), super::error::PlatformError> {
        let fields = [
            ("name", Some(&self.name)),
            ("surname", Some(&self.surname)),
            ("discoveryMethod", self.discovery_method.as_ref()),
            ("companyName", self.company_name.as_ref()),
            ("companyRole", self.company_role.as_ref()),
        ];
        for (field, value) in fields {
            let Some(value) = value else { continue };
            if value.chars().count() > MAX_PROFILE_FIELD_CHARS
                || !value.chars().all(crate::limits::is_visible)
            {
                return Err(super::error::PlatformError::invalid(
                    field,
                    format!("at most {MAX_PROFILE_FIELD_CHARS} visible characters (no control or bidi characters)"),
                ));
            }
        }
        Ok(())
    }
}

/// A registered user.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct User {
    /// The platform-generated id.
    pub uid: String,
    /// What the user registered with.
    pub profile: UserProfile,
    /// Identity profiles: subject by issuer. At least one.
    pub profiles: BTreeMap<String, String>,
}

/// One member of a tenant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct Member {
    /// The member's role (the invited role while pending).
    pub role: Role,
    /// False while the invitation waits for the user's answer.
    pub confirmed: bool,
}

/// One rule: the selector and the reason reported when it fails.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Rule {
    /// Why the rule exists; reported when it does not hold.
    pub reason: String,
    /// The selector program.
    pub sel: Selector,
}

/// A tenant's four rule lists (empty lists pass).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TenantRules {
    /// Environments a new service may be deployed to without further acceptance.
    #[serde(default)]
    pub select_environment_service: Vec<Rule>,
    /// Environments a service may be deployed to once the revision is accepted explicitly.
    #[serde(default)]
    pub select_accept_environment_service: Vec<Rule>,
    /// Which resources an environment may use.
    #[serde(default)]
    pub validate_environment_resource: Vec<Rule>,
    /// Which tenant users may deploy to an environment.
    #[serde(default)]
    pub validate_environment_user: Vec<Rule>,
}

impl TenantRules {
    /// The lists with their field names and the roots their selectors may reference.
    pub fn lists(&self) -> [(&'static str, &[Rule], &'static [&'static str]); 4] {
        [
            (
                "selectEnvironmentService",
                &self.select_environment_service,
                &["this", "service", "environment"],
            ),
            (
                "selectAcceptEnvironmentService",
                &self.select_accept_environment_service,
                &["this", "service", "environment"],
            ),
            (
                "validateEnvironmentResource",
                &self.validate_environment_resource,
                &["this", "environment", "resource"],
            ),
            (
                "validateEnvironmentUser",
                &self.validate_environment_user,
                &["this", "environment", "user"],
            ),
        ]
    }
}

/// The tenant's module registry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Registry {
    /// Registry URL.
    pub endpoint: String,
    /// Credentials (a token, or `user:password`): written, never shown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub credentials: Option<String>,
    /// Module domain published there.
    pub domain: String,
    /// Whether the registry is public: whether the modules published from it are listed to,
    /// and usable by, other tenants of the same registry. Private (`false`) when left out.
    #[serde(default)]
    #[schema(default = false)]
    pub public: bool,
    /// Whether credentials are stored (set by Drover when it shows the registry; ignored when
    /// written).
    #[serde(
        default,
        rename = "hasCredentials",
        skip_serializing_if = "std::ops::Not::not"
    )]
    pub has_credentials: bool,
}

/// A tenant's spec as `POST` and `PATCH /tenant/{name}` take it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TenantSpec {
    /// Deployment rules.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rules: Option<TenantRules>,
    /// Module registry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub registry: Option<Registry>,
}

/// An account's spec.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AccountSpec {
    /// The IaaS provider, one of the platform's `iaasProviders`.
    pub iaas: String,
    /// Provider-specific settings and credentials; shown only to owners and admins.
    #[serde(default)]
    #[schema(value_type = Object)]
    pub iaas_info: Value,
    /// Limits of everything deployed through the account.
    #[serde(default)]
    pub marks: Marks,
}

/// An account's metadata.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AccountMeta {
    /// Labels.
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
}

/// An account as `POST /tenant/{t}/account/{a}` takes it and `GET` returns it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TenantAccount {
    /// What the account is.
    pub spec: AccountSpec,
    /// Labels.
    #[serde(default)]
    pub meta: AccountMeta,
}

/// An environment's spec.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct EnvironmentSpec {
    /// Limits of what services deployed here may use.
    #[serde(default)]
    pub marks: Marks,
    /// Arbitrary JSON read by selectors as `$.environment.labels`.
    #[serde(default = "empty_object")]
    #[schema(value_type = Object)]
    pub labels: Value,
    /// An isolated environment gets clusters of its own.
    #[serde(default)]
    pub isolated: bool,
    /// Which clusters its services may run on; every cluster it can see when left out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clusters: Option<ClusterSelection>,
}

/// Which clusters an environment may use, of those it can see: the tenant's own and (unless the
/// environment is isolated) the platform-wide ones of the operator tenant. A cluster is selected
/// when `names` lists it or when it carries every label of a non-empty `labels`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ClusterSelection {
    /// `name` for the tenant's own clusters, `operator/name` for platform-wide ones.
    #[serde(default)]
    pub names: Vec<String>,
    /// Labels a cluster must all carry.
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
}

impl Default for EnvironmentSpec {
    fn default() -> Self {
        Self {
            marks: Marks::default(),
            labels: empty_object(),
            isolated: false,
            clusters: None,
        }
    }
}

fn empty_object() -> Value {
    Value::Object(serde_json::Map::new())
}

/// `PATCH` of an environment: only metadata changes.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct EnvironmentPatch {
    /// New limits, when given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub marks: Option<Marks>,
    /// New labels, when given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub labels: Option<Value>,
    /// New cluster selection, when given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clusters: Option<ClusterSelection>,
}

/// A stored account with its environments.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Account {
    /// The account as registered.
    pub account: TenantAccount,
    /// Environments by name.
    pub environments: BTreeMap<String, EnvironmentSpec>,
}

/// A stored tenant.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tenant {
    /// Rules and registry.
    pub spec: TenantSpec,
    /// Members by user id.
    pub members: BTreeMap<String, Member>,
    /// Accounts by name.
    pub accounts: BTreeMap<String, Account>,
    /// Resources by kind and name.
    pub resources: BTreeMap<ResourceKind, BTreeMap<String, ResourceSpec>>,
    /// Workload clusters by name.
    #[serde(default)]
    pub clusters: BTreeMap<String, crate::cluster::Cluster>,
    /// Services by name.
    #[serde(default)]
    pub services: BTreeMap<String, crate::service::Service>,
    /// Links between its services' channels, by id.
    #[serde(default)]
    pub links: BTreeMap<String, crate::service::links::Link>,
    /// Metrics providers by name (the operator tenant's are everyone's).
    #[serde(default)]
    pub metrics_providers: BTreeMap<String, crate::scheduling::metrics::ProviderSpec>,
    /// Metrics by name (the operator tenant's are everyone's).
    #[serde(default)]
    pub metrics: BTreeMap<String, crate::scheduling::metrics::MetricSpec>,
    /// The Krake metadata of its metrics and providers (kept by writes from either dialect).
    #[serde(default, skip_serializing_if = "crate::krake::store::KrakeMetas::is_empty")]
    pub krake: crate::krake::store::KrakeMetas,
    /// The pod security level its pods are held to, set by operators only (baseline when left
    /// out, as every tenant stored before it existed reads).
    #[serde(
        default,
        skip_serializing_if = "crate::pod_security::PodSecurity::is_baseline"
    )]
    pub pod_security: crate::pod_security::PodSecurity,
}

impl Tenant {
    /// Confirmed owners.
    pub fn owners(&self) -> usize {
        self.members
            .values()
            .filter(|m| m.confirmed && m.role == Role::Owner)
            .count()
    }
}
