//! What tables and `-o name` read out of an answer: its rows (a Kubernetes list's items, a pool
//! configuration's types, the members, the platform envelope's objects, names or roles), each
//! entry's name, and one entry picked by name.

use serde_json::Value;

use super::failure::{exit, Failure};
use super::kind::Kind;
use super::value_text::cell;

/// One object of an answer, as tables and `-o name` show it.
#[derive(Debug, Clone, Default, PartialEq)]
pub(super) struct Row {
    /// Its tenant, in `-A` listings of the platform's kinds.
    pub(super) tenant: Option<String>,
    /// Its name: the one asked for, or read from the list's entry.
    pub(super) name: String,
    /// The list's entry for it, when the list holds less than the object (a tenant list's role,
    /// a name).
    pub(super) listed: Value,
    /// The object as the API shows one (`Null` until fetched, for kinds listed by name only).
    pub(super) object: Value,
}

/// The rows of an answer: a Kubernetes list's `items`, a pool configuration's `resources`, the
/// members view's `members`, the platform envelope's `data` (a list of objects, of names, or a
/// map of tenants), or — when `name` is given — the one object answered, under that name.
/// `across`: the platform's answer is `-A`'s map of tenant to that tenant's list.
pub(super) fn objects(kind: Kind, answer: &Value, name: Option<&str>, across: bool) -> Vec<Row> {
    let listed = |object: &Value| Row {
        tenant: None,
        name: name_of(kind, object),
        listed: Value::Null,
        object: object.clone(),
    };
    let each = |items: &Value| -> Vec<Row> {
        items
            .as_array()
            .map(|items| items.iter().map(listed).collect())
            .unwrap_or_default()
    };
    if let Some(name) = name {
        let object = if kind.is_platform() && kind != Kind::Revisions {
            answer["data"].clone()
        } else {
            answer.clone()
        };
        return vec![Row {
            tenant: None,
            name: name.to_string(),
            listed: Value::Null,
            object,
        }];
    }
    let data = &answer["data"];
    match kind {
        Kind::Leases | Kind::Akkaleases => each(&answer["items"]),
        Kind::Pools => each(&answer["resources"]),
        Kind::Resources => each(answer),
        Kind::Members => each(&answer["members"]),
        Kind::Revisions => each(data),
        // Role by tenant name.
        Kind::Tenants => data
            .as_object()
            .map(|roles| {
                roles
                    .iter()
                    .map(|(name, role)| Row {
                        tenant: None,
                        name: name.clone(),
                        listed: role.clone(),
                        object: Value::Null,
                    })
                    .collect()
            })
            .unwrap_or_default(),
        Kind::Clusters => {
            let mut rows = each(data);
            if across {
                for row in &mut rows {
                    row.tenant = row.object["tenant"].as_str().map(str::to_string);
                }
            }
            rows
        }
        // Names only: the objects are fetched for tables.
        Kind::Accounts | Kind::Environments | Kind::Services => {
            let names = |tenant: Option<&String>, names: &Value| -> Vec<Row> {
                names
                    .as_array()
                    .map(|names| {
                        names
                            .iter()
                            .map(|name| Row {
                                tenant: tenant.cloned(),
                                name: name_of(kind, name),
                                listed: name.clone(),
                                object: Value::Null,
                            })
                            .collect()
                    })
                    .unwrap_or_default()
            };
            match data.as_object() {
                Some(by_tenant) if across => by_tenant
                    .iter()
                    .flat_map(|(tenant, list)| names(Some(tenant), list))
                    .collect(),
                _ => names(None, data),
            }
        }
    }
}

/// The name of an entry of a list: a plain string (the platform's lists of names), or the
/// kind's name field.
fn name_of(kind: Kind, object: &Value) -> String {
    if let Value::String(name) = object {
        return name.clone();
    }
    let field = match kind {
        Kind::Leases | Kind::Akkaleases => "/metadata/name",
        Kind::Pools => "/type",
        Kind::Members => "/id",
        Kind::Revisions => "/revision",
        Kind::Resources
        | Kind::Tenants
        | Kind::Accounts
        | Kind::Environments
        | Kind::Clusters
        | Kind::Services => "/name",
    };
    object.pointer(field).map_or_else(|| "-".to_string(), cell)
}

/// The one entry of a list answer named `name` (pools, resources, members and revisions have
/// no route of their own for one).
pub(super) fn pick(kind: Kind, answer: &Value, name: &str) -> Result<Value, Failure> {
    objects(kind, answer, None, false)
        .into_iter()
        .find(|row| row.name == name)
        .map(|row| row.object)
        .ok_or_else(|| Failure {
            code: exit::NOT_FOUND,
            message: format!("no {} {name:?}", kind.singular()),
        })
}

/// Takes the single-object answer of `row`'s object into the row.
pub(super) fn absorb(row: &mut Row, answer: &Value) {
    row.object = answer["data"].clone();
}
