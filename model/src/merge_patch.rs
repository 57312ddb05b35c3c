//! JSON merge patch (RFC 7386, as RFC 7396 restates it): objects merge key by key, `null`
//! removes a key, anything else replaces. Used by the Kubernetes dialect's `PATCH` and by
//! service revisions made as patches.

use serde_json::Value;

/// Applies `patch` to `target`. Recursion follows the patch's depth, which JSON parsing has
/// already bounded.
pub fn merge_patch(target: &mut Value, patch: &Value) {
    let Value::Object(patch) = patch else {
        *target = patch.clone();
        return;
    };
    if !target.is_object() {
        *target = Value::Object(serde_json::Map::new());
    }
    if let Value::Object(target) = target {
        for (key, value) in patch {
            if value.is_null() {
                target.remove(key);
            } else {
                merge_patch(target.entry(key.clone()).or_insert(Value::Null), value);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn merge_patch_follows_rfc_7386() {
        let mut target = json!({"a": "b", "c": {"d": "e", "f": "g"}});
        merge_patch(&mut target, &json!({"a": "z", "c": {"f": null}}));
        assert_eq!(target, json!({"a": "z", "c": {"d": "e"}}));
        let mut scalar = json!({"a": 1});
        merge_patch(&mut scalar, &json!(["x"]));
        assert_eq!(scalar, json!(["x"]));
    }
}
