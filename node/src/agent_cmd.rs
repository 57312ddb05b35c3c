//! `drover agent` as the binary runs it: the agent's own checks and state, then its cluster API
//! served over TLS — the same reloading certificate as the node's API, and client certificates
//! required when the agent names a CA — or, with `--plain-http` only, plain HTTP.

use std::future::Future;

use drover_agent::{AgentArgs, AgentError};

/// Runs the agent until `shutdown` resolves; its instances keep running after.
pub async fn run(
    args: AgentArgs,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), AgentError> {
    let prepared = drover_agent::prepare(&args).await?;
    let Some(files) = prepared.tls else {
        return prepared.opened.serve(prepared.listener, shutdown).await;
    };
    let config = crate::tls::agent_server_config(&files.cert, &files.key, files.client_ca.as_deref())
        .map_err(|e| AgentError::config("--tls-cert-file", e.to_string()))?;
    let listener = crate::tls::TlsListener::new(prepared.listener, config, false)
        .map_err(|e| AgentError::config("--listen", e.to_string()))?;
    prepared.opened.serve(listener, shutdown).await
}
