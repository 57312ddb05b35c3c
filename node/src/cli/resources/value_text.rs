//! How a JSON value reads as a table cell (and as a name in `-o name`).

use serde_json::Value;

/// A value as a table cell: `-` for nothing, strings as they are, lists of scalars joined with
/// commas.
pub(super) fn cell(value: &Value) -> String {
    match value {
        Value::Null => "-".into(),
        Value::String(s) if s.is_empty() => "-".into(),
        Value::String(s) => s.clone(),
        Value::Array(items) if items.is_empty() => "-".into(),
        Value::Array(items) if items.iter().all(|i| !i.is_array() && !i.is_object()) => {
            items.iter().map(cell).collect::<Vec<_>>().join(",")
        }
        other => other.to_string(),
    }
}
