//! Boskos JSON shapes: the resource object and the `/metric` answer.

use std::collections::BTreeMap;

use drover_model::pool::{states, Resource};
use serde_json::{json, Value};

pub use drover_model::time::rfc3339_ms;

/// A resource as Boskos returns it, plus Drover's `fencing_token`.
pub fn resource_json(resource: &Resource) -> Value {
    let mut value = json!({
        "type": resource.rtype,
        "name": resource.name,
        "state": resource.state,
        "owner": resource.owner,
        "lastupdate": rfc3339_ms(resource.last_update_ms),
        "userdata": resource.user_data,
        "fencing_token": resource.token,
    });
    if let Some(at) = resource.expiration_ms {
        value["expiration-date"] = json!(rfc3339_ms(at));
    }
    value
}

/// `/metric?type=`: counts by state and by owner (unowned under `""`).
pub fn metric_json(rtype: &str, resources: &[Resource]) -> Value {
    let mut current: BTreeMap<&str, u64> = BTreeMap::new();
    let mut owners: BTreeMap<&str, u64> = BTreeMap::new();
    for resource in resources {
        *current.entry(resource.state.as_str()).or_default() += 1;
        *owners.entry(resource.owner.as_str()).or_default() += 1;
    }
    json!({ "type": rtype, "current": current, "owner": owners })
}

/// The state label Prometheus sees: known states as they are, anything else as `other`.
pub fn state_label(state: &str) -> &str {
    if states::KNOWN.contains(&state) {
        state
    } else {
        "other"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_render_like_go() {
        assert_eq!(rfc3339_ms(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339_ms(1_136_214_245_000), "2006-01-02T15:04:05Z");
    }

    #[test]
    fn metric_counts_states_and_owners() {
        let resource = |state: &str, owner: &str| Resource {
            name: format!("{state}{owner}"),
            rtype: "t".into(),
            state: state.into(),
            owner: owner.into(),
            ..Resource::default()
        };
        let value = metric_json(
            "t",
            &[resource("free", ""), resource("busy", "o"), resource("free", "")],
        );
        assert_eq!(value["current"]["free"], 2);
        assert_eq!(value["owner"][""], 2);
        assert_eq!(value["owner"]["o"], 1);
        assert_eq!(state_label("weird"), "other");
    }
}
