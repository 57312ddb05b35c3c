//! A table's cells: where a column takes its cells from (a field of the object, the list's
//! entry, the row's tenant, or a count, keys, pairs, usage or ratio read from the object).

use serde_json::Value;

use super::rows::Row;
use super::value_text::cell;

/// Where a column's cells come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Cell {
    /// The object's field at this JSON pointer.
    At(&'static str),
    /// The list's entry (a tenant list's role).
    Listed,
    /// The row's tenant (`-A`).
    Tenant,
    /// How many entries the array or map at this pointer has.
    Count(&'static str),
    /// The keys of the map at this pointer.
    Keys(&'static str),
    /// `key=value` pairs of the map at this pointer.
    Pairs(&'static str),
    /// Marks' use at this pointer: `dimension=current/max` with the unit, for the dimensions
    /// limited or in use.
    Usage(&'static str),
    /// Two fields as `a/b`.
    Ratio(&'static str, &'static str),
}

impl Cell {
    pub(super) fn of(self, row: &Row) -> String {
        let at = |pointer: &str| row.object.pointer(pointer).unwrap_or(&Value::Null);
        let joined = |items: Vec<String>| {
            if items.is_empty() {
                "-".to_string()
            } else {
                items.join(",")
            }
        };
        match self {
            Cell::At(pointer) => cell(at(pointer)),
            Cell::Listed => cell(&row.listed),
            Cell::Tenant => row.tenant.clone().unwrap_or_else(|| "-".to_string()),
            Cell::Count(pointer) => match at(pointer) {
                Value::Array(items) => items.len().to_string(),
                Value::Object(map) => map.len().to_string(),
                _ => "-".to_string(),
            },
            Cell::Keys(pointer) => joined(
                at(pointer)
                    .as_object()
                    .map(|map| map.keys().cloned().collect())
                    .unwrap_or_default(),
            ),
            Cell::Pairs(pointer) => joined(
                at(pointer)
                    .as_object()
                    .map(|map| map.iter().map(|(k, v)| format!("{k}={}", cell(v))).collect())
                    .unwrap_or_default(),
            ),
            Cell::Usage(pointer) => joined(
                at(pointer)
                    .as_object()
                    .map(|marks| {
                        marks
                            .iter()
                            .filter(|(_, mark)| !mark["max"].is_null() || mark["current"].as_u64() != Some(0))
                            .map(|(dimension, mark)| {
                                let unit = mark["unit"].as_str().unwrap_or_default();
                                match &mark["max"] {
                                    Value::Null => format!("{dimension}={}{unit}", cell(&mark["current"])),
                                    max => {
                                        format!("{dimension}={}/{}{unit}", cell(&mark["current"]), cell(max))
                                    }
                                }
                            })
                            .collect()
                    })
                    .unwrap_or_default(),
            ),
            Cell::Ratio(a, b) => match (at(a), at(b)) {
                (Value::Null, Value::Null) => "-".to_string(),
                (a, b) => format!("{}/{}", cell(a), cell(b)),
            },
        }
    }
}
