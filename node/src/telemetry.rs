//! Structured logs with `tracing`: text or JSON, filtered by `RUST_LOG`.

use tracing_subscriber::EnvFilter;

use crate::config::LogFormat;

/// Installs the global subscriber. The default filter keeps openraft's chatter at warnings.
pub fn init(format: LogFormat, node_id: u64) {
    let filter = EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| EnvFilter::new("info,openraft=warn,ractor=warn"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_target(false);
    let installed = match format {
        LogFormat::Text => builder.try_init(),
        LogFormat::Json => builder.json().flatten_event(true).try_init(),
    };
    if installed.is_ok() {
        tracing::info!(node = node_id, "logging initialised");
    }
}
