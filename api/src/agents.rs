//! Live reads of a cluster's agent (its inventory, an instance's logs) for the platform API.
//! Any node serves them by calling the agent directly: they change nothing, so they need no
//! fence and need not pass through the leader's cluster actor, which alone makes changes. The
//! node supplies the client (`drover-actors`' agent driver) so this crate stays beside
//! `actors` rather than above it.

use std::future::Future;
use std::pin::Pin;

use drover_model::cluster::agent_api::{InstanceId, Inventory, LogChunk, LogQuery};
use drover_model::cluster::identity::AgentIdentity;
use drover_model::cluster::AgentAccess;

/// A boxed future of a read.
pub type ReadFuture<T> = Pin<Box<dyn Future<Output = Result<T, AgentReadError>> + Send>>;

/// Why a live read failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AgentReadError {
    /// The agent could not be reached.
    #[error("the cluster's agent cannot be reached: {0}")]
    Unreachable(String),
    /// The agent does not know the instance.
    #[error("{0}")]
    NotFound(String),
    /// The agent found the query wrong (a bad `since`, `tail`).
    #[error("{0}")]
    BadQuery(String),
    /// The agent refused the read (it no longer accepts the join token, or failed).
    #[error("the cluster's agent refused: {0}")]
    Refused(String),
}

/// Reads from agents, given how the committed cluster reaches its agent.
pub trait AgentReads: Send + Sync {
    /// Everything the agent runs.
    fn inventory(&self, agent: &AgentAccess) -> ReadFuture<Inventory>;
    /// What an instance wrote: its last lines, or what follows an offset.
    fn logs(&self, agent: &AgentAccess, id: &InstanceId, query: LogQuery) -> ReadFuture<LogChunk>;
    /// Who answers there: the agent's id and the cluster object it is bound to (`None` from an
    /// agent that keeps no identity).
    fn identity(&self, agent: &AgentAccess) -> ReadFuture<Option<AgentIdentity>>;
}

/// A log read as the API answers it: the text, and in `x-drover-log-offset` the `from` with
/// which a follower reads what comes next.
pub fn log_response(chunk: LogChunk) -> axum::response::Response {
    use axum::http::header::{HeaderName, HeaderValue, CONTENT_TYPE};
    use axum::response::IntoResponse;
    let mut response = (
        [(
            CONTENT_TYPE,
            HeaderValue::from_static("text/plain; charset=utf-8"),
        )],
        chunk.text,
    )
        .into_response();
    if let Some(next) = chunk.next {
        response.headers_mut().insert(
            HeaderName::from_static(drover_model::cluster::agent_api::LOG_OFFSET_HEADER),
            HeaderValue::from(next),
        );
    }
    response
}

/// Why the control plane will not reach an agent at `endpoint` this way, if it will not: a
/// plain `http://` endpoint unless the nodes allow plain-HTTP agents, or a CA whose PEM blocks
/// are not base64 certificates. (The apply checks the rest: an `https://` endpoint needs a CA.)
pub fn agent_transport_refused(
    allow_plain_http: bool,
    endpoint: &str,
    ca: Option<&str>,
) -> Option<(&'static str, String)> {
    if endpoint.starts_with("http://") && !allow_plain_http {
        return Some((
            "endpoint",
            format!(
                "{endpoint} is plain HTTP: the agent's join token would cross the network in the clear. Serve the agent over TLS (drover agent --tls-cert-file … --tls-key-file …) and register https://… with its CA, or start the nodes with --allow-plain-http-agents"
            ),
        ));
    }
    let ca = ca?;
    let blocks: Vec<&str> = ca
        .split("-----BEGIN CERTIFICATE-----")
        .skip(1)
        .map(|rest| rest.split("-----END CERTIFICATE-----").next().unwrap_or_default())
        .collect();
    let decodes = |block: &&str| {
        use base64::Engine as _;
        let text: String = block.chars().filter(|c| !c.is_whitespace()).collect();
        base64::engine::general_purpose::STANDARD
            .decode(text)
            .is_ok_and(|der| der.first() == Some(&0x30))
    };
    if blocks.is_empty() || !blocks.iter().all(decodes) {
        return Some((
            "ca",
            "not PEM certificates: give the CA certificate(s) that signed the agent's certificate, -----BEGIN CERTIFICATE----- … -----END CERTIFICATE-----".to_string(),
        ));
    }
    None
}

/// Why the egress policy refuses the target of `url` (a metrics provider's Prometheus, a
/// module registry), if it does: not a URL that can be called, the address it names however it
/// is spelled (read by the URL standard's rules, as the call will read it), or any address its
/// name resolves to now (a name that does not resolve yet is accepted; every call's connection
/// is checked again).
pub async fn egress_refused(policy: &drover_model::egress::EgressPolicy, url: &str) -> Option<String> {
    use drover_model::egress::{CallHost, CallUrl};
    let target = match CallUrl::parse(url) {
        Ok(target) => target,
        Err(why) => return Some(why),
    };
    let host = match target.host() {
        CallHost::Address(ip) => return policy.refuses(*ip),
        CallHost::Name(host) => host.clone(),
    };
    if policy.allows_host(&host) {
        return None;
    }
    let resolved = tokio::time::timeout(
        std::time::Duration::from_secs(2),
        tokio::net::lookup_host((host.as_str(), target.port())),
    )
    .await;
    match resolved {
        Ok(Ok(addrs)) => addrs
            .into_iter()
            .find_map(|a| policy.refuses(a.ip()))
            .map(|why| format!("{host} resolves to {why}")),
        _ => None,
    }
}
