//! Reading the fields of a Krake body, as Krake's marshmallow schemas do: `null` is absent,
//! a value of the wrong shape or a missing required field is a `422` naming the field's path
//! (`spec.kubeconfig`, `metadata.name`).

use drover_model::scheduling::metrics::MetricRef;
use serde::de::DeserializeOwned;
use serde::Deserialize;
use serde_json::{Map, Value};

use super::problem::Problem;

/// The path of `name` in the object at `path` (`""` for the body itself).
fn path_of(path: &str, name: &str) -> String {
    if path.is_empty() {
        name.to_string()
    } else {
        format!("{path}.{name}")
    }
}

/// Field `name` of `object` (at `path`), when present and not `null`.
pub fn field<T: DeserializeOwned>(
    object: &Map<String, Value>,
    name: &str,
    path: &str,
) -> Result<Option<T>, Problem> {
    match object.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(value) => T::deserialize(value)
            .map(Some)
            .map_err(|e| Problem::invalid(&path_of(path, name), &format!("Not a valid value: {e}."))),
    }
}

/// Field `name` of `object` (at `path`), which must be there.
pub fn required<T: DeserializeOwned>(
    object: &Map<String, Value>,
    name: &str,
    path: &str,
) -> Result<T, Problem> {
    field(object, name, path)?
        .ok_or_else(|| Problem::invalid(&path_of(path, name), "Missing data for required field."))
}

/// A metric reference as Krake writes it (`namespaced` false when left out).
#[derive(Deserialize)]
struct MetricRefWire {
    name: String,
    weight: f64,
    #[serde(default)]
    namespaced: bool,
}

/// The `metrics` field of `object` (at `path`): metric references, none when left out.
pub fn metric_refs(object: &Map<String, Value>, path: &str) -> Result<Vec<MetricRef>, Problem> {
    let wire: Vec<MetricRefWire> = field(object, "metrics", path)?.unwrap_or_default();
    Ok(wire
        .into_iter()
        .map(|m| MetricRef {
            name: m.name,
            weight: m.weight,
            namespaced: m.namespaced,
        })
        .collect())
}
