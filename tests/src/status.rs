//! What a node says about itself through `GET /cluster`.

use serde_json::Value;

/// The log index node `node` (an API address) reports as applied by itself.
pub async fn applied_index(http: &reqwest::Client, node: &str) -> Option<u64> {
    let body: Value = http
        .get(format!("http://{node}/cluster"))
        .send()
        .await
        .ok()?
        .json()
        .await
        .ok()?;
    let me = body["self"].as_u64()?;
    body["members"]
        .as_array()?
        .iter()
        .find(|m| m["id"].as_u64() == Some(me))?["appliedIndex"]
        .as_u64()
}
