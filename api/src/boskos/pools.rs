//! Pool administration: the configuration (Boskos YAML) committed through Raft, and a listing
//! of resources for operators and `drover lease list`.

use std::collections::HashMap;

use axum::body::Bytes;
use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use drover_model::pool::{PoolCommand, PoolConfig};
use drover_raft::Consistency;
use serde_json::json;

use super::wire::resource_json;
use super::{run, BoskosError, BoskosState};

/// Routes of the pool administration endpoints.
pub fn routes() -> Router<BoskosState> {
    Router::new()
        .route("/pools/config", get(get_config).put(put_config))
        .route("/pools/resources", get(list_resources))
}

async fn get_config(State(state): State<BoskosState>) -> Result<Response, BoskosError> {
    let (config, _) = state
        .raft
        .read(Consistency::Linearizable, |s| s.pools().config().cloned())
        .await?;
    match config {
        Some(config) => Ok(Json(config).into_response()),
        None => Ok((StatusCode::NOT_FOUND, "no pool configuration has been set").into_response()),
    }
}

async fn put_config(State(state): State<BoskosState>, body: Bytes) -> Result<Response, BoskosError> {
    // Parsing is CPU work proportional to the document: keep it off the runtime's workers.
    let parsed =
        tokio::task::spawn_blocking(move || PoolConfig::from_yaml(&String::from_utf8_lossy(&body))).await;
    let config = match parsed {
        Ok(Ok(config)) => config,
        Ok(Err(message)) => return Ok((StatusCode::BAD_REQUEST, message).into_response()),
        Err(join) => {
            return Ok((
                StatusCode::INTERNAL_SERVER_ERROR,
                format!("parsing the configuration failed: {join}"),
            )
                .into_response())
        }
    };
    let types: Vec<String> = config.resources.iter().map(|t| t.rtype.clone()).collect();
    run(&state, PoolCommand::SetConfig { config }).await?;
    Ok(Json(json!({ "types": types })).into_response())
}

async fn list_resources(
    State(state): State<BoskosState>,
    Query(params): Query<HashMap<String, String>>,
    credentials: crate::guard::Credentials,
) -> Result<Response, BoskosError> {
    let rtype = params.get("type").cloned().filter(|t| !t.is_empty());
    // User data carries credentials (the claimer's kubeconfigs): listed only for operators.
    // Holders get a resource's user data from their acquire.
    let with_user_data = crate::guard::sees_as_operator(&state, &credentials);
    let (resources, _) = state
        .raft
        .read(Consistency::Linearizable, |s| {
            s.pools()
                .resources()
                .filter(|r| rtype.as_ref().is_none_or(|t| &r.rtype == t))
                .map(|r| {
                    let mut json = resource_json(r);
                    if !with_user_data && !r.user_data.is_empty() {
                        json["userdata"] = json!({});
                        json["userdataRedacted"] = json!(true);
                    }
                    json
                })
                .collect::<Vec<_>>()
        })
        .await?;
    Ok(Json(resources).into_response())
}
