//! The k8s-claimer dialect: `POST /lease` hands out a whole cluster for `max_time` seconds with
//! a token, `DELETE /lease/{token}` (or `/lease/{provider}/{token}`) gives it back. Clusters are
//! the resources of one pool type whose user data carries `kubeconfig`, `ip` and optionally
//! `cluster_name` and `cluster_version`. Every request needs the configured token in
//! `Authorization`, as the claimer server checks it.

use axum::body::Body;
use axum::extract::{Path, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, post};
use axum::{Json, Router};
use base64::Engine;
use drover_model::pool::{states, PoolCommand, PoolResult};
use drover_raft::Consistency;
use serde::Deserialize;
use serde_json::json;

use crate::auth::Verifier;
use crate::boskos::run;
use crate::core::{read_body, Core};

/// The principal of k8s-claimer clients in the audit log (they share one token).
const CLAIMER: &str = "k8s-claimer";

/// How the claimer endpoints are set up.
#[derive(Debug, Clone)]
pub struct ClaimerOptions {
    /// The pool type that holds the clusters.
    pub rtype: String,
    /// The shared secret clients send in `Authorization`.
    pub auth_token: String,
}

/// The claimer room's state: the core, and the endpoints' settings when they are enabled.
#[derive(Clone)]
pub struct ClaimerState {
    core: Core,
    options: Option<std::sync::Arc<ClaimerOptions>>,
}

impl ClaimerState {
    /// The room over `core`; without `options` every request is answered `404`.
    pub fn new(core: Core, options: Option<ClaimerOptions>) -> Self {
        Self {
            core,
            options: options.map(std::sync::Arc::new),
        }
    }
}

impl std::ops::Deref for ClaimerState {
    type Target = Core;

    fn deref(&self) -> &Core {
        &self.core
    }
}

/// Routes of the claimer dialect.
pub fn routes() -> Router<ClaimerState> {
    Router::new()
        .route("/lease", post(lease))
        .route("/lease/{token}", delete(release))
        .route("/lease/{provider}/{token}", delete(release_with_provider))
}

fn text(status: StatusCode, message: impl Into<String>) -> Response {
    (status, message.into()).into_response()
}

/// Why a claimer request was turned away.
type Denied = (StatusCode, &'static str);

fn authorize<'a>(state: &'a ClaimerState, headers: &HeaderMap) -> Result<&'a ClaimerOptions, Denied> {
    let Some(options) = state.options.as_deref() else {
        return Err((
            StatusCode::NOT_FOUND,
            "the k8s-claimer endpoints are disabled: start drover with --claimer-auth-token-file",
        ));
    };
    let header = headers.get(header::AUTHORIZATION).and_then(|v| v.to_str().ok());
    let presented = Verifier::credential(header).unwrap_or_default();
    let matches = drover_raft::constant_time_eq(presented.as_bytes(), options.auth_token.as_bytes());
    // The node's static tokens and tokens of trusted issuers are accepted too.
    let verified = || !presented.is_empty() && state.verifier.verify(&presented).is_ok();
    if matches || verified() {
        Ok(options)
    } else {
        Err((StatusCode::UNAUTHORIZED, "missing or wrong Authorization token"))
    }
}

/// Body of `POST /lease`.
#[derive(Debug, Deserialize)]
struct LeaseRequest {
    max_time: i64,
    #[serde(default)]
    cluster_regex: Option<String>,
    #[serde(default)]
    cluster_version: Option<String>,
    #[serde(default)]
    cloud_provider: Option<String>,
}

async fn lease(State(state): State<ClaimerState>, headers: HeaderMap, body: Body) -> Response {
    // The credential is checked before the body is read: an unauthenticated caller cannot make
    // the node buffer a megabyte.
    let options = match authorize(&state, &headers) {
        Ok(options) => options.clone(),
        Err((status, message)) => return text(status, message),
    };
    let body = match read_body(body, state.max_body_bytes).await {
        Ok(body) => body,
        Err(refused) => return refused,
    };
    let request: LeaseRequest = match serde_json::from_slice(&body) {
        Ok(request) => request,
        Err(e) => {
            return text(
                StatusCode::BAD_REQUEST,
                format!("the body must be {{\"max_time\": <seconds>}}: {e}"),
            )
        }
    };
    let longest_s = drover_model::limits::MAX_DURATION_MS / 1000;
    let max_ms = match u64::try_from(request.max_time) {
        Ok(seconds) if seconds > 0 && seconds <= longest_s => seconds * 1000,
        _ => {
            return text(
                StatusCode::BAD_REQUEST,
                format!("max_time must be a positive number of seconds, at most {longest_s}"),
            )
        }
    };
    if let Some(provider) = request.cloud_provider.as_deref() {
        if !provider.is_empty() && provider != "google" && provider != "azure" {
            return text(
                StatusCode::BAD_REQUEST,
                format!("unknown cloud_provider {provider:?}"),
            );
        }
    }
    let pattern = match request
        .cluster_regex
        .as_deref()
        .filter(|r| !r.is_empty())
        .map(regex::Regex::new)
    {
        None => None,
        Some(Ok(pattern)) => Some(pattern),
        Some(Err(e)) => return text(StatusCode::BAD_REQUEST, format!("invalid cluster_regex: {e}")),
    };
    // Filters are resolved on a linearizable snapshot of the pool (so credentials registered
    // through any node before this request count); the grant itself is still atomic. Only
    // clusters with a kubeconfig can be leased: a claim without one would be useless.
    let candidates = {
        let rtype = options.rtype.clone();
        let listed = state
            .raft
            .read(Consistency::Linearizable, |s| {
                s.pools()
                    .of_type(&rtype)
                    .filter(|r| {
                        r.user_data
                            .get("kubeconfig")
                            .is_some_and(|k| !k.trim().is_empty())
                    })
                    .map(|r| {
                        let cluster = r
                            .user_data
                            .get("cluster_name")
                            .cloned()
                            .unwrap_or_else(|| r.name.clone());
                        (
                            r.name.clone(),
                            cluster,
                            r.user_data.get("cluster_version").cloned(),
                        )
                    })
                    .collect::<Vec<_>>()
            })
            .await;
        let Ok((listed, _)) = listed else {
            return text(
                StatusCode::SERVICE_UNAVAILABLE,
                "the pool cannot be read right now",
            );
        };
        Some(
            listed
                .into_iter()
                .filter(|(_, cluster, _)| pattern.as_ref().is_none_or(|p| p.is_match(cluster)))
                .filter(|(_, _, version)| {
                    request
                        .cluster_version
                        .as_ref()
                        .is_none_or(|wanted| version.as_ref() == Some(wanted))
                })
                .map(|(name, _, _)| name)
                .collect::<Vec<_>>(),
        )
    };
    let token = uuid::Uuid::new_v4().to_string();
    let command = PoolCommand::Acquire {
        rtype: options.rtype.clone(),
        state: states::FREE.to_string(),
        dest: states::LEASED.to_string(),
        owner: token.clone(),
        request_id: None,
        candidates,
        claim_for_ms: Some(max_ms),
        new_dynamic_name: None,
    };
    match crate::audit::scoped(CLAIMER.into(), run(&state, command)).await {
        Ok(PoolResult::Resource(resource)) => {
            let kubeconfig = resource.user_data.get("kubeconfig").cloned().unwrap_or_default();
            Json(json!({
                "kubeconfig": base64::engine::general_purpose::STANDARD.encode(kubeconfig),
                "ip": resource.user_data.get("ip").cloned().unwrap_or_default(),
                "token": token,
                "uuid": token,
                "cluster_name": resource.user_data.get("cluster_name").cloned().unwrap_or_else(|| resource.name.clone()),
                "cluster_version": resource.user_data.get("cluster_version").cloned().unwrap_or_default(),
                "cloud_provider": request.cloud_provider.unwrap_or_else(|| "google".into()),
                "fencing_token": resource.token,
            }))
            .into_response()
        }
        Ok(other) => text(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("unexpected result {other:?}"),
        ),
        Err(error) => error.into_response_with(|status| match status {
            StatusCode::NOT_FOUND => StatusCode::CONFLICT,
            other => other,
        }),
    }
}

async fn release(
    State(state): State<ClaimerState>,
    Path(token): Path<String>,
    headers: HeaderMap,
) -> Response {
    release_token(state, token, headers).await
}

async fn release_with_provider(
    State(state): State<ClaimerState>,
    Path((_provider, token)): Path<(String, String)>,
    headers: HeaderMap,
) -> Response {
    release_token(state, token, headers).await
}

async fn release_token(state: ClaimerState, token: String, headers: HeaderMap) -> Response {
    if let Err((status, message)) = authorize(&state, &headers) {
        return text(status, message);
    }
    if uuid::Uuid::parse_str(&token).is_err() {
        return text(StatusCode::BAD_REQUEST, format!("{token:?} is not a lease token"));
    }
    match crate::audit::scoped(CLAIMER.into(), run(&state, PoolCommand::ReleaseClaim { token })).await {
        Ok(_) => StatusCode::OK.into_response(),
        Err(error) => error.into_response_with(|status| status),
    }
}
