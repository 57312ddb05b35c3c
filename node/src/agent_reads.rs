//! The platform API's live reads of agents (inventory, logs, identity), made with the cluster actors'
//! agent driver so that both speak to agents the same way.

use std::sync::Arc;
use std::time::Duration;

use drover_actors::clusters::{AgentDriver, ClientIdentity, Driver, DriverError};
use drover_api::agents::{AgentReadError, AgentReads, ReadFuture};
use drover_model::cluster::agent_api::{InstanceId, Inventory, LogChunk, LogQuery};
use drover_model::cluster::identity::AgentIdentity;
use drover_model::cluster::AgentAccess;

/// How long a live read may take.
const READ_TIMEOUT: Duration = Duration::from_secs(10);

/// Reads through [`AgentDriver`], presenting the control plane's client certificate (if any).
pub struct DriverReads {
    identity: ClientIdentity,
}

impl DriverReads {
    fn driver(&self, agent: &AgentAccess) -> Result<AgentDriver, AgentReadError> {
        AgentDriver::new(agent, &self.identity, READ_TIMEOUT).map_err(failed)
    }
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
    fn inventory(&self, agent: &AgentAccess) -> ReadFuture<Inventory> {
        let driver = self.driver(agent);
        Box::pin(async move { driver?.measured_inventory().await.map_err(failed) })
    }

    fn logs(&self, agent: &AgentAccess, id: &InstanceId, query: LogQuery) -> ReadFuture<LogChunk> {
        let driver = self.driver(agent);
        let id = id.clone();
        Box::pin(async move { driver?.logs(&id, &query).await.map_err(failed) })
    }

    fn identity(&self, agent: &AgentAccess) -> ReadFuture<Option<AgentIdentity>> {
        let driver = self.driver(agent);
        Box::pin(async move {
            let (_, identity) = driver?.identified_facts().await.map_err(failed)?;
            Ok(identity)
        })
    }
}

/// The reads as the API options take them.
pub fn agent_reads(identity: ClientIdentity) -> Arc<dyn AgentReads> {
    Arc::new(DriverReads { identity })
}
