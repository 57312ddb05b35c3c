//! The platform API's live reads of agents (inventory, logs, identity), made with the cluster actors'
//! agent driver so that both speak to agents the same way.

use std::sync::Arc;
use std::time::Duration;

use drover_actors::clusters::{AgentDriver, Driver, DriverError};
use drover_api::agents::{AgentReadError, AgentReads, ReadFuture};
use drover_model::cluster::agent_api::{InstanceId, Inventory, LogChunk, LogQuery};
use drover_model::cluster::identity::AgentIdentity;

/// How long a live read may take.
const READ_TIMEOUT: Duration = Duration::from_secs(10);

/// Reads through [`AgentDriver`].
pub struct DriverReads;

fn driver(endpoint: &str, token: &str) -> Result<AgentDriver, AgentReadError> {
    AgentDriver::new(endpoint, token, READ_TIMEOUT).map_err(failed)
}

fn failed(error: DriverError) -> AgentReadError {
    match error {
        DriverError::Unreachable(message) => AgentReadError::Unreachable(message),
        DriverError::NotFound(message) => AgentReadError::NotFound(message),
        DriverError::Refused { status: 400, message } => AgentReadError::BadQuery(message),
        other => AgentReadError::Refused(other.to_string()),
    }
}

impl AgentReads for DriverReads {
    fn inventory(&self, endpoint: &str, token: &str) -> ReadFuture<Inventory> {
        let driver = driver(endpoint, token);
        Box::pin(async move { driver?.inventory().await.map_err(failed) })
    }

    fn logs(&self, endpoint: &str, token: &str, id: &InstanceId, query: LogQuery) -> ReadFuture<LogChunk> {
        let driver = driver(endpoint, token);
        let id = id.clone();
        Box::pin(async move { driver?.logs(&id, &query).await.map_err(failed) })
    }

    fn identity(&self, endpoint: &str, token: &str) -> ReadFuture<Option<AgentIdentity>> {
        let driver = driver(endpoint, token);
        Box::pin(async move {
            let (_, identity) = driver?.identified_facts().await.map_err(failed)?;
            Ok(identity)
        })
    }
}

/// The reads as the API options take them.
pub fn agent_reads() -> Arc<dyn AgentReads> {
    Arc::new(DriverReads)
}
