//! One simulated Drover node: openraft with the simulation's storage, its peer traffic over
//! turmoil TCP, and the leader's answers to clients — writes through `client_write`, reads
//! behind `ensure_linearizable` (unless the run plants the stale-read bug).

use std::collections::BTreeMap;
use std::future::Future;
use std::io::Cursor;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use drover_model::{ObjectKind, Proposal};
use openraft::error::{
    Fatal, NetworkError, RPCError, RaftError, RemoteError, ReplicationClosed, StreamingError, Unreachable,
};
use openraft::network::{RPCOption, RaftNetwork, RaftNetworkFactory};
use openraft::raft::{
    AppendEntriesRequest, AppendEntriesResponse, SnapshotResponse, VoteRequest, VoteResponse,
};
use openraft::{BasicNode, OptionalSend};
use turmoil::net::{TcpListener, TcpStream};

use super::clients::holder_and_version;
use super::store::{Applied, Disk, MemLog, MemStateMachine, SimTypes, Snapshot, Vote};
use super::wire::{call, read_frame, write_frame, CallError, Request, Response, PORT};

/// The simulated Raft instance.
pub type SimRaft = openraft::Raft<SimTypes>;

/// The host name of node `id`.
pub fn host_name(id: u64) -> String {
    format!("node-{id}")
}

/// How a node is started (and restarted after a crash).
#[derive(Clone)]
pub struct NodeSetup {
    /// Its id.
    pub id: u64,
    /// Its disk.
    pub disk: Disk,
    /// Every member, for the first start of node 1.
    pub members: BTreeMap<u64, BasicNode>,
    /// Raft timings.
    pub config: Arc<openraft::Config>,
    /// Serve reads from the local state without confirming leadership (the planted bug).
    pub planted_stale_read: bool,
    /// Acknowledge appends without syncing them (the other planted bug): a crash loses them.
    pub planted_no_fsync: bool,
}

/// Runs the node until the simulation ends or crashes it; `registry` learns its Raft instance.
pub async fn run(setup: NodeSetup, registry: Arc<Mutex<BTreeMap<u64, SimRaft>>>) -> turmoil::Result {
    {
        // A (re)start after a crash finds only what was synced.
        let mut disk = setup.disk.lock().unwrap_or_else(|p| p.into_inner());
        disk.lose_unsynced();
        disk.planted_no_fsync = setup.planted_no_fsync;
    }
    let log = MemLog::new(setup.disk.clone());
    let state_machine = MemStateMachine::open(setup.disk.clone())?;
    let applied = state_machine.applied.clone();
    let raft = SimRaft::new(setup.id, setup.config.clone(), SimNetwork, log, state_machine).await?;
    registry
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .insert(setup.id, raft.clone());
    if setup.id == 1 && !raft.is_initialized().await? {
        raft.initialize(setup.members.clone()).await?;
    }
    let listener = TcpListener::bind(("0.0.0.0", PORT)).await?;
    loop {
        let (stream, _) = listener.accept().await?;
        let node = Served {
            id: setup.id,
            raft: raft.clone(),
            applied: applied.clone(),
            planted_stale_read: setup.planted_stale_read,
        };
        tokio::spawn(node.answer(stream));
    }
}

/// What a connection handler needs.
struct Served {
    id: u64,
    raft: SimRaft,
    applied: Arc<Mutex<Applied>>,
    planted_stale_read: bool,
}

impl Served {
    async fn answer(self, mut stream: TcpStream) {
        let Ok(request) = read_frame::<Request>(&mut stream).await else {
            return;
        };
        let response = self.respond(request).await;
        // The caller may have given up; nothing to do about it.
        let _ = write_frame(&mut stream, &response).await;
    }

    /// `None` when this node leads; otherwise the answer that points elsewhere.
    fn elsewhere(&self) -> Option<Response> {
        let leader = self.raft.metrics().borrow().current_leader;
        (leader != Some(self.id)).then_some(Response::NotLeader { leader })
    }

    fn applied(&self) -> std::sync::MutexGuard<'_, Applied> {
        self.applied.lock().unwrap_or_else(|p| p.into_inner())
    }

    async fn respond(&self, request: Request) -> Response {
        match request {
            Request::Append(rpc) => Response::Append(self.raft.append_entries(rpc).await),
            Request::Vote(rpc) => Response::Vote(self.raft.vote(rpc).await),
            Request::Snapshot { vote, meta, data } => {
                let snapshot = Snapshot {
                    meta,
                    snapshot: Box::new(Cursor::new(data)),
                };
                Response::Snapshot(self.raft.install_full_snapshot(vote, snapshot).await)
            }
            Request::Write(command) => {
                if let Some(elsewhere) = self.elsewhere() {
                    return elsewhere;
                }
                let proposal = Proposal {
                    idempotency_key: None,
                    idempotency_request: None,
                    now_ms: turmoil::since_epoch().map_or(0, |t| t.as_millis() as u64),
                    principal: None,
                    command,
                };
                match self.raft.client_write(proposal).await {
                    Ok(written) => Response::Written(written.data),
                    // Handed to Raft: it may still commit under the next leader.
                    Err(e) => Response::WriteUnknown(e.to_string()),
                }
            }
            Request::Read(key) => {
                if let Some(elsewhere) = self.elsewhere() {
                    return elsewhere;
                }
                if !self.planted_stale_read && self.raft.ensure_linearizable().await.is_err() {
                    return Response::NotLeader { leader: None };
                }
                Response::Read(self.applied().state.get(&key).cloned())
            }
            Request::Status => {
                let applied = self.applied();
                let objects = applied
                    .state
                    .list(ObjectKind::CoordinationLease, None)
                    .into_iter()
                    .map(|object| {
                        let (holder, version) = holder_and_version(&object);
                        (object.key.to_string(), holder, version)
                    })
                    .collect();
                Response::Status {
                    applied: applied.last_applied.map_or(0, |id| id.index),
                    objects,
                }
            }
        }
    }
}

/// openraft's network over the simulated TCP.
struct SimNetwork;

impl RaftNetworkFactory<SimTypes> for SimNetwork {
    type Network = SimConnection;

    async fn new_client(&mut self, target: u64, _node: &BasicNode) -> SimConnection {
        SimConnection { target }
    }
}

struct SimConnection {
    target: u64,
}

type RpcResult<T> = Result<T, RPCError<u64, BasicNode, RaftError<u64>>>;

fn unanswered<E: std::error::Error>(target: u64, error: CallError) -> RPCError<u64, BasicNode, E> {
    let message = std::io::Error::other(format!("node {target}: {error:?}"));
    match error {
        CallError::NotDelivered => RPCError::Unreachable(Unreachable::new(&message)),
        CallError::Lost => RPCError::Network(NetworkError::new(&message)),
    }
}

fn unexpected<E: std::error::Error>(target: u64) -> RPCError<u64, BasicNode, E> {
    RPCError::Network(NetworkError::new(&std::io::Error::other(format!(
        "node {target} answered something else"
    ))))
}

impl SimConnection {
    async fn ask(&self, request: Request, timeout: Duration) -> Result<Response, CallError> {
        call(&host_name(self.target), &request, timeout).await
    }
}

impl RaftNetwork<SimTypes> for SimConnection {
    async fn append_entries(
        &mut self,
        rpc: AppendEntriesRequest<SimTypes>,
        option: RPCOption,
    ) -> RpcResult<AppendEntriesResponse<u64>> {
        match self.ask(Request::Append(rpc), option.hard_ttl()).await {
            Ok(Response::Append(answer)) => {
                answer.map_err(|e| RPCError::RemoteError(RemoteError::new(self.target, e)))
            }
            Ok(_) => Err(unexpected(self.target)),
            Err(e) => Err(unanswered(self.target, e)),
        }
    }

    async fn vote(&mut self, rpc: VoteRequest<u64>, option: RPCOption) -> RpcResult<VoteResponse<u64>> {
        match self.ask(Request::Vote(rpc), option.hard_ttl()).await {
            Ok(Response::Vote(answer)) => {
                answer.map_err(|e| RPCError::RemoteError(RemoteError::new(self.target, e)))
            }
            Ok(_) => Err(unexpected(self.target)),
            Err(e) => Err(unanswered(self.target, e)),
        }
    }

    async fn full_snapshot(
        &mut self,
        vote: Vote,
        snapshot: Snapshot,
        cancel: impl Future<Output = ReplicationClosed> + OptionalSend + 'static,
        option: RPCOption,
    ) -> Result<SnapshotResponse<u64>, StreamingError<SimTypes, Fatal<u64>>> {
        let request = Request::Snapshot {
            vote,
            meta: snapshot.meta.clone(),
            data: snapshot.snapshot.into_inner(),
        };
        let answer = tokio::select! {
            closed = cancel => return Err(StreamingError::Closed(closed)),
            answer = self.ask(request, option.hard_ttl()) => answer,
        };
        match answer {
            Ok(Response::Snapshot(answer)) => {
                answer.map_err(|e| StreamingError::RemoteError(RemoteError::new(self.target, e)))
            }
            Ok(_) => Err(StreamingError::Network(NetworkError::new(
                &std::io::Error::other("unexpected answer to a snapshot"),
            ))),
            Err(CallError::NotDelivered) => Err(StreamingError::Unreachable(Unreachable::new(
                &std::io::Error::other("snapshot not delivered"),
            ))),
            Err(CallError::Lost) => Err(StreamingError::Network(NetworkError::new(
                &std::io::Error::other("snapshot answer lost"),
            ))),
        }
    }
}
