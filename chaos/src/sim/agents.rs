//! Simulated worker machines: each runs a real `drover agent` core ([`drover_agent::Agent`]:
//! the fence check, whole desired sets, its state files written before it acts) with the `sim`
//! executor on a turmoil host, and answers the calls a cluster actor's [`Driver`] makes. The
//! simulation reaches it through [`SimDriver`], so the service and cluster actors run their own
//! code against it; only the HTTP framing of the cluster API is left out.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use drover_actors::clusters::{Driver, DriverError, DriverFactory};
use drover_agent::layout::Layout;
use drover_agent::{AgentConfig, AgentError, ExecutorKind, JoinToken};
use drover_model::cluster::agent_api::{
    DesiredSet, Fence, InstanceId, InstanceSpec, Inventory, LogChunk, LogQuery, NodeFacts, SetName,
};
use drover_model::cluster::identity::{AgentId, AgentIdentity};
use serde::{Deserialize, Serialize};
use turmoil::net::{TcpListener, TcpStream};

use super::wire::{call_at, read_frame, write_frame, CallError};
use crate::rng::Rng;

/// The port every simulated agent listens on.
pub const AGENT_PORT: u16 = 7100;

/// The host name of agent `n`.
pub fn agent_host(n: usize) -> String {
    format!("agent-{n}")
}

/// The endpoint a cluster of agent `n` is registered with.
pub fn agent_endpoint(n: usize) -> String {
    format!("http://{}:{AGENT_PORT}", agent_host(n))
}

/// What a cluster actor asks an agent.
#[derive(Debug, Serialize, Deserialize)]
pub enum AgentCall {
    /// Its machines and capacity.
    Facts,
    /// Everything it runs.
    Inventory,
    /// Record a newer fence.
    RaiseFence(Fence),
    /// Make a desired set whole.
    ApplySet {
        /// The caller's fence.
        fence: Fence,
        /// Which set.
        set: SetName,
        /// Every instance of it.
        instances: Vec<InstanceSpec>,
    },
    /// Restart one instance.
    Restart {
        /// The caller's fence.
        fence: Fence,
        /// Which instance.
        id: InstanceId,
    },
}

/// What an agent answers.
#[derive(Debug, Serialize, Deserialize)]
pub enum AgentAnswer {
    /// To [`AgentCall::Facts`].
    Facts(NodeFacts),
    /// Its inventory (of the set, after [`AgentCall::ApplySet`]).
    Inventory(Inventory),
    /// The instance was restarted.
    Restarted,
    /// The agent refused, with the HTTP status its API answers.
    Failed {
        /// The status.
        status: u16,
        /// Whether it refused an older fence.
        fenced: bool,
        /// Why.
        message: String,
    },
}

impl From<AgentError> for AgentAnswer {
    fn from(error: AgentError) -> Self {
        AgentAnswer::Failed {
            status: error.status(),
            fenced: matches!(error, AgentError::Fenced { .. }),
            message: error.to_string(),
        }
    }
}

/// How an agent is started (and restarted after its host crashed).
#[derive(Clone)]
pub struct AgentSetup {
    /// Its name.
    pub name: String,
    /// Its state directory, which outlives the host (a crash kills the agent, not the disk).
    pub data_dir: PathBuf,
}

/// Writes an identity into the new agent state directory `dir`, its id drawn from `rng` (a new
/// agent would draw it from the system's entropy, which a replay cannot repeat).
pub fn give_identity(dir: &Path, rng: &mut Rng) -> Result<(), AgentError> {
    let mut bytes = [0u8; 16];
    bytes[..8].copy_from_slice(&rng.next_u64().to_le_bytes());
    bytes[8..].copy_from_slice(&rng.next_u64().to_le_bytes());
    let identity = AgentIdentity {
        agent_id: AgentId::from_random_bytes(bytes),
        cluster_uid: None,
    };
    let layout = Layout::new(dir);
    // Makes the state's directories, as opening the agent does.
    drover_agent::store::load(&layout)?;
    drover_agent::store::save_identity(&layout, &identity)
}

/// The simulation's time of day (its epoch plus simulated time), which a replay repeats.
fn sim_time_of_day() -> std::time::SystemTime {
    std::time::UNIX_EPOCH + turmoil::since_epoch().unwrap_or_default()
}

/// Runs the agent until the simulation ends or crashes its host.
pub async fn run(setup: AgentSetup) -> turmoil::Result {
    let token = JoinToken::new("sim-join-token-0123456789", "join token")?;
    let mut config = AgentConfig::new(&setup.data_dir, ExecutorKind::Sim, token);
    config.name = setup.name.clone();
    config.stop_grace = Duration::from_millis(200);
    config.wall_clock = sim_time_of_day;
    let opened = drover_agent::open(&config)?;
    let agent = opened.agent().clone();
    let listener = TcpListener::bind(("0.0.0.0", AGENT_PORT)).await?;
    loop {
        let (stream, _) = listener.accept().await?;
        // Each call runs to its end in its own task, whether or not its caller waits.
        tokio::spawn(answer(agent.clone(), stream));
    }
}

async fn answer(agent: Arc<drover_agent::Agent>, mut stream: TcpStream) {
    let Ok(call) = read_frame::<AgentCall>(&mut stream).await else {
        return;
    };
    let answer = match call {
        AgentCall::Facts => AgentAnswer::Facts(agent.facts()),
        AgentCall::Inventory => AgentAnswer::Inventory(agent.inventory(None)),
        AgentCall::RaiseFence(fence) => agent
            .raise_fence(fence)
            .await
            .map_or_else(AgentAnswer::from, AgentAnswer::Inventory),
        AgentCall::ApplySet {
            fence,
            set,
            instances,
        } => agent
            .put_set(set, DesiredSet { fence, instances })
            .await
            .map_or_else(AgentAnswer::from, AgentAnswer::Inventory),
        AgentCall::Restart { fence, id } => agent
            .restart(id, fence)
            .await
            .map_or_else(AgentAnswer::from, |_| AgentAnswer::Restarted),
    };
    // The caller may have given up; the change is made either way.
    let _ = write_frame(&mut stream, &answer).await;
}

/// A cluster actor's [`Driver`] to a simulated agent.
pub struct SimDriver {
    host: String,
    timeout: Duration,
}

impl SimDriver {
    async fn ask(&self, call: &AgentCall) -> Result<AgentAnswer, DriverError> {
        match call_at::<AgentCall, AgentAnswer>(&self.host, AGENT_PORT, call, self.timeout).await {
            Ok(AgentAnswer::Failed {
                fenced: true,
                message,
                ..
            }) => Err(DriverError::Fenced(message)),
            Ok(AgentAnswer::Failed {
                status: 404, message, ..
            }) => Err(DriverError::NotFound(message)),
            Ok(AgentAnswer::Failed {
                status: 503, message, ..
            }) => Err(DriverError::Unreachable(message)),
            Ok(AgentAnswer::Failed { status, message, .. }) => Err(DriverError::Refused { status, message }),
            Ok(answer) => Ok(answer),
            Err(CallError::NotDelivered) => {
                Err(DriverError::Unreachable(format!("{}: no connection", self.host)))
            }
            Err(CallError::Lost) => Err(DriverError::Unreachable(format!(
                "{}: no answer within {:?}",
                self.host, self.timeout
            ))),
        }
    }

    async fn inventory_of(&self, call: &AgentCall) -> Result<Inventory, DriverError> {
        match self.ask(call).await? {
            AgentAnswer::Inventory(inventory) => Ok(inventory),
            other => Err(DriverError::Decode(format!("unexpected answer {other:?}"))),
        }
    }
}

#[async_trait]
impl Driver for SimDriver {
    async fn facts(&self) -> Result<NodeFacts, DriverError> {
        match self.ask(&AgentCall::Facts).await? {
            AgentAnswer::Facts(facts) => Ok(facts),
            other => Err(DriverError::Decode(format!("unexpected answer {other:?}"))),
        }
    }

    async fn inventory(&self) -> Result<Inventory, DriverError> {
        self.inventory_of(&AgentCall::Inventory).await
    }

    async fn raise_fence(&self, fence: Fence) -> Result<Inventory, DriverError> {
        self.inventory_of(&AgentCall::RaiseFence(fence)).await
    }

    async fn apply_set(
        &self,
        fence: Fence,
        set: &SetName,
        instances: Vec<InstanceSpec>,
    ) -> Result<Inventory, DriverError> {
        let call = AgentCall::ApplySet {
            fence,
            set: set.clone(),
            instances,
        };
        self.inventory_of(&call).await
    }

    async fn restart(&self, fence: Fence, id: &InstanceId) -> Result<(), DriverError> {
        match self
            .ask(&AgentCall::Restart {
                fence,
                id: id.clone(),
            })
            .await?
        {
            AgentAnswer::Restarted => Ok(()),
            other => Err(DriverError::Decode(format!("unexpected answer {other:?}"))),
        }
    }

    async fn logs(&self, _id: &InstanceId, _query: &LogQuery) -> Result<LogChunk, DriverError> {
        Err(DriverError::Refused {
            status: 501,
            message: "a simulated agent keeps no logs".into(),
        })
    }
}

/// The drivers of the simulation's clusters: an endpoint `http://agent-N:7100` reaches the
/// simulated agent on host `agent-N`, each call bounded by `timeout`.
pub fn sim_drivers(timeout: Duration) -> DriverFactory {
    Arc::new(move |agent: &drover_model::cluster::AgentAccess| {
        let endpoint = agent.endpoint.as_str();
        let host = endpoint
            .strip_prefix("http://")
            .and_then(|rest| rest.split(':').next())
            .filter(|host| host.starts_with("agent-"))
            .ok_or_else(|| DriverError::Refused {
                status: 400,
                message: format!("{endpoint} is not a simulated agent"),
            })?;
        Ok(Arc::new(SimDriver {
            host: host.to_string(),
            timeout,
        }) as Arc<dyn Driver>)
    })
}
