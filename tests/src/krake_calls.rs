//! Krake requests from the tests: one call as a user, and a namespace ready for Applications.

use anyhow::{ensure, Context, Result};
use reqwest::{Method, StatusCode};
use serde_json::Value;

use crate::client::http_client;
use crate::platform::{token, PlatformClient};

/// A Krake request to the node at `addr` as `user` (a token of that subject, as `Bearer`): its
/// status and JSON answer (`null` when the answer is not JSON).
pub async fn call(
    addr: &str,
    user: &str,
    method: Method,
    path: &str,
    body: Option<&Value>,
) -> Result<(StatusCode, Value)> {
    let authorization = format!("Bearer {}", token(user));
    let mut request =
        http_client(Some(&authorization)).request(method.clone(), format!("http://{addr}{path}"));
    if let Some(body) = body {
        request = request.json(body);
    }
    let response = request.send().await.with_context(|| format!("{method} {path}"))?;
    let status = response.status();
    let text = response.text().await?;
    Ok((status, serde_json::from_str(&text).unwrap_or(Value::Null)))
}

/// Makes `tenant` (as the operator `root`) a tenant with an account `main` and an environment
/// `prod`: a Krake namespace whose Applications have somewhere to be deployed.
pub async fn namespace_with_environment(root: &PlatformClient, tenant: &str) -> Result<()> {
    for (path, body) in [
        (format!("/tenant/{tenant}"), serde_json::json!({})),
        (
            format!("/tenant/{tenant}/account/main"),
            serde_json::json!({"spec": {"iaas": "sim"}}),
        ),
        (
            format!("/tenant/{tenant}/account/main/environment/prod"),
            serde_json::json!({}),
        ),
    ] {
        let made = root.post(&path, &body).await?;
        ensure!(made.status == StatusCode::OK, "{path}: {made:?}");
    }
    Ok(())
}
