//! What the API checks of a Krake `Cluster` before it is written: that its kubeconfig's server
//! is a `drover agent` taking the token (Drover has no Kubernetes driver: a Kubernetes API
//! server cannot be driven, and is refused rather than left `OFFLINE`); and `?blocking=STATE`
//! of Clusters and Applications, which answers once the object is in that state (or gone) —
//! within a minute, not never. And that a Prometheus provider points where the operator's egress
//! policy lets the control plane call on a tenant's behalf, and an Application's images come
//! from registries its tenant may pull from ([`crate::images`]).

use std::time::Duration;

use axum::http::StatusCode;
use drover_model::krake::apply::read;
use drover_model::krake::cluster::KrakeCluster;
use drover_model::krake::{KrakeKey, KrakeKind};
use drover_model::platform::validate_endpoint;

use super::context::KrakeState;
use super::problem::Problem;
use crate::agents::AgentReadError;

/// Longest a `?blocking` request waits, as Krake's.
pub const BLOCKING_WAIT: Duration = Duration::from_secs(60);

/// How often a `?blocking` request looks.
const BLOCKING_POLL: Duration = Duration::from_millis(100);

/// Refuses a kubeconfig whose server answers, but not as a drover agent taking the token. An
/// agent that cannot be reached yet is accepted: its cluster stays `PENDING`, then `OFFLINE`,
/// until it answers (as any cluster).
pub async fn agent_answers(
    state: &KrakeState,
    cluster: &KrakeCluster,
    stored_token: Option<&str>,
) -> Result<(), Problem> {
    let allowed = state.options.allow_plain_http_agents;
    if let Some((_, message)) =
        crate::agents::agent_transport_refused(allowed, &cluster.endpoint, cluster.ca.as_deref())
    {
        return Err(Problem::invalid("spec.kubeconfig", &message));
    }
    let Some(agents) = &state.agents else {
        return Ok(());
    };
    let Some(token) = cluster.join_token.as_deref().or(stored_token) else {
        return Ok(());
    };
    if validate_endpoint(&cluster.endpoint).is_err() {
        // The apply refuses it with its reason.
        return Ok(());
    }
    let access = drover_model::cluster::AgentAccess {
        endpoint: cluster.endpoint.clone(),
        token: token.to_string(),
        ca: cluster.ca.clone(),
    };
    match agents.identity(&access).await {
        Ok(_) | Err(AgentReadError::Unreachable(_)) => Ok(()),
        Err(error) => Err(Problem::invalid(
            "spec.kubeconfig",
            &format!(
                "the server {} answered, but not as a drover agent that takes this token ({error}). A Krake Cluster on Drover is a drover agent: Drover has no Kubernetes driver, so a Kubernetes API server cannot be registered.",
                cluster.endpoint
            ),
        )),
    }
}

/// A Cluster's states, as `?blocking` takes them.
const CLUSTER_STATES: [&str; 9] = [
    "PENDING",
    "ONLINE",
    "DEGRADED",
    "OFFLINE",
    "CONNECTING",
    "UNHEALTHY",
    "NOTREADY",
    "FAILING_METRICS",
    "DELETED",
];

/// An Application's states (Krake's enum), as `?blocking` takes them.
const APPLICATION_STATES: [&str; 14] = [
    "PENDING",
    "CREATING",
    "RUNNING",
    "RECONCILING",
    "TRANSLATING",
    "RETRYING",
    "RESTARTING",
    "WAITING_FOR_CLEANING",
    "READY_FOR_ACTION",
    "MIGRATING",
    "DELETING",
    "DELETED",
    "DEGRADED",
    "FAILED",
];

/// Refuses a Prometheus metrics provider whose URL the egress policy refuses.
pub async fn provider_target(
    state: &KrakeState,
    body: &drover_model::krake::KrakeBody,
) -> Result<(), Problem> {
    use drover_model::scheduling::metrics::ProviderSpec;
    if let drover_model::krake::KrakeBody::MetricsProvider(ProviderSpec::Prometheus { prometheus }) = body {
        if let Some(why) = crate::agents::egress_refused(&state.options.egress, &prometheus.url).await {
            return Err(Problem::invalid(
                "spec.prometheus.url",
                &format!("{why}: the control plane does not call it on a tenant's behalf (the operator allows networks and hosts with --tenant-egress-allow)"),
            ));
        }
    }
    Ok(())
}

/// Refuses an Application whose manifest names an image its tenant may not pull (a registry
/// not on `--image-registry-allow`, or a host the egress policy refuses), naming the image's
/// manifest path.
pub async fn pod_images(state: &KrakeState, body: &drover_model::krake::KrakeBody) -> Result<(), Problem> {
    let drover_model::krake::KrakeBody::Application(app) = body else {
        return Ok(());
    };
    let images = drover_model::image_policy::manifest_images(&app.manifest);
    match crate::images::first_refused(&state.options.image_registries, &state.options.egress, images).await {
        Some((field, why)) => Err(Problem::invalid(&field, &why)),
        None => Ok(()),
    }
}

/// `?blocking=STATE` (case-insensitive) of a Cluster or an Application: waits until the object
/// is in that state, or for `deleted` until it is gone; `None` when the request does not block
/// (or the kind has no states).
pub fn blocking_state(
    kind: KrakeKind,
    query: &std::collections::HashMap<String, String>,
) -> Result<Option<String>, Problem> {
    let states: &[&str] = match kind {
        KrakeKind::Cluster => &CLUSTER_STATES,
        KrakeKind::Application => &APPLICATION_STATES,
        _ => return Ok(None),
    };
    let Some(wanted) = query.get("blocking") else {
        return Ok(None);
    };
    let wanted = wanted.to_ascii_uppercase();
    if !states.contains(&wanted.as_str()) {
        return Err(Problem::plain(
            StatusCode::UNPROCESSABLE_ENTITY,
            format!(
                "{{'blocking': ['{wanted} is not a state of a {}: one of {}.']}}",
                kind.name(),
                states.join(", ")
            ),
        ));
    }
    Ok(Some(wanted))
}

/// Waits (on this node's replica) until the object `key` names shows `wanted` as its
/// `status.state`, or is gone for `DELETED`, or [`BLOCKING_WAIT`] has passed.
pub async fn wait_for(state: &KrakeState, key: &KrakeKey, wanted: &str) {
    let deadline = tokio::time::Instant::now() + BLOCKING_WAIT;
    loop {
        let reached = state
            .raft
            .local_read(|s| match read(s.platform(), s.krake(), key) {
                None => wanted == "DELETED",
                Some((meta, body)) => {
                    super::wire::render(s, key, &meta, &body)["status"]["state"].as_str() == Some(wanted)
                }
            });
        if reached || tokio::time::Instant::now() >= deadline {
            return;
        }
        tokio::select! {
            _ = state.shutdown.cancelled() => return,
            _ = tokio::time::sleep(BLOCKING_POLL) => {}
        }
    }
}
