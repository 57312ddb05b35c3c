//! Krake's Role and RoleBinding (`krake.md` §3.1, §7.2) and the decision they make: a user may
//! do what any rule of any role bound to them allows; roles only allow. An empty string in a
//! rule's `api`, `resources` or `namespaces` matches everything.
//!
//! One difference on purpose: Krake skips the namespace check for requests that name no
//! namespace, so a role limited to `ns1` may list every namespace's applications. Here a
//! request across every namespace of a namespaced kind (list-all, watch-all) needs a rule
//! whose `namespaces` has the wildcard `""`.

use serde::{Deserialize, Serialize};

/// What a rule allows doing (Krake's `Verb`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verb {
    /// `POST` of a new object.
    Create,
    /// Lists and watches.
    List,
    /// Listed by Krake; its handlers check `list` for lists across namespaces, and so does Drover.
    ListAll,
    /// `GET` of one object.
    Get,
    /// `PUT` of an object or a subresource.
    Update,
    /// `DELETE`.
    Delete,
}

/// One rule of a role.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RoleRule {
    /// The API group, `""` for all.
    pub api: String,
    /// Plurals (and `plural/subresource`), `""` for all.
    pub resources: Vec<String>,
    /// Namespaces, `""` for all.
    pub namespaces: Vec<String>,
    /// What may be done.
    pub verbs: Vec<Verb>,
}

/// A role: its rules.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KrakeRole {
    /// The rules; any one allowing a request allows it.
    pub rules: Vec<RoleRule>,
}

/// A binding of users to roles.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KrakeRoleBinding {
    /// The users (a verified credential's subject).
    pub users: Vec<String>,
    /// The roles, by name (a missing role allows nothing).
    pub roles: Vec<String>,
}

/// One request, as RBAC judges it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Access<'a> {
    /// The API group.
    pub api: &'a str,
    /// The plural, or `plural/subresource`.
    pub resource: &'a str,
    /// What is done.
    pub verb: Verb,
    /// Where: one namespace, every namespace of a namespaced kind, or none (a global kind).
    pub scope: Scope<'a>,
}

/// Where a request reaches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope<'a> {
    /// An object of a global kind, or their list.
    Global,
    /// One namespace.
    Namespace(&'a str),
    /// Every namespace of a namespaced kind (list-all, watch-all).
    AllNamespaces,
}

fn matches(wanted: &str, listed: &[String]) -> bool {
    listed.iter().any(|entry| entry.is_empty() || entry == wanted)
}

impl RoleRule {
    /// Whether this rule allows `access`.
    pub fn allows(&self, access: &Access<'_>) -> bool {
        let namespace_ok = match access.scope {
            Scope::Global => true,
            Scope::Namespace(namespace) => matches(namespace, &self.namespaces),
            Scope::AllNamespaces => self.namespaces.iter().any(String::is_empty),
        };
        (self.api.is_empty() || self.api == access.api)
            && self.verbs.contains(&access.verb)
            && matches(access.resource, &self.resources)
            && namespace_ok
    }
}

impl KrakeRole {
    /// Whether any rule allows `access`.
    pub fn allows(&self, access: &Access<'_>) -> bool {
        self.rules.iter().any(|rule| rule.allows(access))
    }
}
