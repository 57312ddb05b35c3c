//! One simulated Drover member: the real [`RaftHandle`] (elector with pre-vote, group commit,
//! forwarding to the leader, read batching, the RocksDB store's code on a [`MemDisk`]) on a
//! turmoil host, its peer traffic on the simulated TCP, and what the node's API does with a
//! client's write or read: [`RaftHandle::write`] and a linearizable [`RaftHandle::read`] on
//! whichever member the client picked.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use drover_actors::clusters::{ClusterActorsConfig, ClustersChild, Observations};
use drover_actors::services::{ServiceActorsConfig, ServicesChild};
use drover_actors::{ActorsError, ChildSpec, LeaderGate, RestartPolicyConfig};
use drover_model::{ObjectKind, Proposal};
use drover_raft::network::service::PeerService;
use drover_raft::{
    Consistency, MemDisk, NodeId, PeerNode, RaftConfig, RaftHandle, Seams, StartOptions, WriteError,
};
use tokio_util::sync::CancellationToken;
use turmoil::net::{TcpListener, TcpStream};

use super::agents::sim_drivers;
use super::clients::holder_and_version;
use super::services::held;
use super::transport::SimTransport;
use super::wire::{read_frame, write_frame, Request, Response, PORT};
use super::world::host_name;

/// The running members' handles, for the driver to find the leader.
pub type Registry = Arc<Mutex<BTreeMap<NodeId, RaftHandle>>>;

/// Milliseconds since the Unix epoch in simulated time: the leader's clock.
fn sim_clock_ms() -> u64 {
    turmoil::since_epoch().map_or(0, |t| u64::try_from(t.as_millis()).unwrap_or(u64::MAX))
}

/// How a member is started (and restarted after a crash).
#[derive(Clone)]
pub struct HostSetup {
    /// Its id.
    pub id: NodeId,
    /// Its disk, which outlives the host.
    pub disk: MemDisk,
    /// Every member's id.
    pub members: Vec<NodeId>,
    /// Raft timings.
    pub config: RaftConfig,
    /// Serve reads from the local replica without a read index (the planted bug).
    pub planted_stale_read: bool,
    /// Run the leader's actor tree (cluster and service actors) against the simulated agents.
    pub actors: bool,
}

/// How long a simulated cluster may stay unreachable before its services move elsewhere (the
/// faults last 0.5–3.5 s, so some of them do).
const OFFLINE_AFTER: Duration = Duration::from_secs(3);

/// The leadership gate with the cluster and service actors, as a node starts it, with the
/// clusters reached through [`sim_drivers`].
fn start_actors(handle: &RaftHandle) -> Result<LeaderGate, ActorsError> {
    let registry = prometheus::Registry::new();
    let observations = Observations::default();
    let clusters = ClusterActorsConfig {
        offline_after: OFFLINE_AFTER,
        ..ClusterActorsConfig::default()
    };
    let services = ServiceActorsConfig {
        interval: clusters.probe_interval,
        sync_interval: clusters.sync_interval,
        ..ServiceActorsConfig::default()
    };
    let drivers = sim_drivers(clusters.probe_timeout);
    let children: Vec<Arc<dyn ChildSpec>> = vec![
        Arc::new(ClustersChild::with_drivers(
            clusters,
            &registry,
            drivers,
            observations.clone(),
        )?),
        Arc::new(ServicesChild::new(services, &registry, observations)?),
    ];
    LeaderGate::start(
        handle.clone(),
        children,
        RestartPolicyConfig::default(),
        &registry,
        CancellationToken::new(),
    )
}

/// Runs the member until the simulation ends or crashes it; `registry` learns its handle.
pub async fn run(setup: HostSetup, registry: Registry) -> turmoil::Result {
    // A (re)start after a crash finds only what was synced; a first start finds nothing.
    setup.disk.power_cut();
    let options = StartOptions {
        id: setup.id,
        node: PeerNode {
            peer_addr: host_name(setup.id),
            api_addr: String::new(),
        },
        data_dir: std::path::PathBuf::new(),
        config: setup.config.clone(),
        cluster_secret: String::new(),
        initial_members: setup.members.iter().map(|id| (*id, host_name(*id))).collect(),
        peer_source_ip: None,
        peer_tls: None,
    };
    let seams = Seams {
        peers: Arc::new(SimTransport),
        disk: Arc::new(setup.disk.clone()),
        wall_clock: sim_clock_ms,
    };
    let handle = RaftHandle::start_with(options, seams, &prometheus::Registry::new()).await?;
    registry
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .insert(setup.id, handle.clone());
    // Lives as long as the host: a crash drops it with everything else.
    let _gate = if setup.actors {
        Some(start_actors(&handle)?)
    } else {
        None
    };
    let listener = TcpListener::bind(("0.0.0.0", PORT)).await?;
    loop {
        let (stream, _) = listener.accept().await?;
        let member = Member {
            handle: handle.clone(),
            peers: PeerService::new(handle.clone()),
            planted_stale_read: setup.planted_stale_read,
        };
        tokio::spawn(member.answer(stream));
    }
}

/// What a connection handler needs.
struct Member {
    handle: RaftHandle,
    peers: PeerService,
    planted_stale_read: bool,
}

impl Member {
    async fn answer(self, mut stream: TcpStream) {
        let Ok(request) = read_frame::<Request>(&mut stream).await else {
            return;
        };
        let response = self.respond(request).await;
        // The caller may have given up; nothing to do about it.
        let _ = write_frame(&mut stream, &response).await;
    }

    async fn respond(&self, request: Request) -> Response {
        let refused = |refusal: drover_raft::network::service::Refusal| Response::Refused {
            status: refusal.status(),
            message: refusal.to_string(),
        };
        match request {
            Request::Append(rpc) => self
                .peers
                .append(rpc)
                .await
                .map_or_else(refused, Response::Append),
            Request::Vote(rpc) => self.peers.vote(rpc).await.map_or_else(refused, Response::Vote),
            Request::Snapshot { vote, meta, data } => self
                .peers
                .snapshot(vote, meta, data)
                .await
                .map_or_else(refused, Response::Snapshot),
            Request::Leader(request) => Response::Leader(self.peers.leader(request).await),
            Request::PreVote(request) => Response::PreVote(self.peers.pre_vote(&request)),
            Request::PeerStatus => Response::PeerStatus(self.peers.status()),
            Request::Write(command) => match self.handle.write(Proposal::new(command)).await {
                Ok(written) => Response::Written(written.result),
                Err(WriteError::Unavailable(message)) => Response::NotWritten(message),
                Err(other) => Response::WriteUnknown(other.to_string()),
            },
            Request::Read(key) => {
                if self.planted_stale_read {
                    return Response::Read(self.handle.local_read(|state| state.get(&key).cloned()));
                }
                match self
                    .handle
                    .read(Consistency::Linearizable, |state| state.get(&key).cloned())
                    .await
                {
                    Ok((object, _)) => Response::Read(object),
                    Err(e) => Response::NotRead(e.to_string()),
                }
            }
            Request::Services => match self.handle.read(Consistency::Linearizable, held).await {
                Ok((services, _)) => Response::Services(services),
                Err(e) => Response::NotRead(e.to_string()),
            },
            Request::Inventory => {
                let objects = self.handle.local_read(|state| {
                    state
                        .list(ObjectKind::CoordinationLease, None)
                        .into_iter()
                        .map(|object| {
                            let (holder, version) = holder_and_version(&object);
                            (object.key.to_string(), holder, version)
                        })
                        .collect()
                });
                Response::Inventory {
                    applied: self.handle.status().applied_index,
                    objects,
                }
            }
        }
    }
}
