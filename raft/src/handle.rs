//! [`RaftHandle`]: the only door into the replicated store. Writes and linearizable reads sent
//! to a follower are forwarded to the leader here, so callers never look for the leader.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

use drover_model::{Change, CommandResult, Proposal, State};
use openraft::error::CheckIsLeaderError;
use openraft::{ChangeMembers, ServerState};
use prometheus::IntCounter;
use tokio::sync::{broadcast, watch};
use tokio::time::Instant;

use crate::batcher::{shared_rounds, Batcher};
use crate::commit::group_commit;
use crate::elector::Elector;
use crate::error::{HistoryGone, MembershipError, ReadError, StoreError, WriteError};
pub use crate::leadership::Leadership;
use crate::lease::{read_lease, ReadLease};
use crate::metrics::RaftMetricsExporter;
use crate::network::client::{PeerClient, PeerError};
use crate::network::protocol::{LeaderRequest, LeaderResponse, NodeStatus, PreVoteRequest, PreVoteResponse};
use crate::network::raft_network::Network;
use crate::network::transport::Transport;
use crate::store::{self, ApplyObserver, Disk, RocksDisk, SharedState};
use crate::typ::{ClientWriteError, NodeId, PeerNode, Raft, RaftError, RaftMetrics};
use crate::RaftConfig;

/// How often a request waiting for a leader looks again.
const LEADER_POLL: Duration = Duration::from_millis(25);
/// Batches of writes a follower has on their way to the leader at once.
const FORWARDS_IN_FLIGHT: usize = 4;
/// Requests for a read index a follower has on their way to the leader at once: while the
/// leader answers from its lease, a read that arrives during one need not wait for it.
const READ_INDEX_REQUESTS_IN_FLIGHT: usize = 4;
/// Most writes a follower sends to the leader in one request.
const MAX_FORWARD_BATCH: usize = 64;
/// Quorum rounds a leader tries for a read index before it refuses the reads waiting on it.
/// openraft 0.9 gives each follower one heartbeat interval to answer a round, which a follower
/// busy applying large entries on a loaded machine misses now and then; a read that waits one
/// more round is better than a `503`.
const QUORUM_ATTEMPTS: usize = 4;

/// Everything needed to start a node's Raft instance.
#[derive(Debug, Clone)]
pub struct StartOptions {
    /// This node's id.
    pub id: NodeId,
    /// This node's addresses.
    pub node: PeerNode,
    /// Where RocksDB keeps the log and snapshots ([`RaftHandle::start`]; a node started with
    /// [`RaftHandle::start_with`] keeps them on the disk it is given).
    pub data_dir: PathBuf,
    /// Timings and retention.
    pub config: RaftConfig,
    /// The secret every peer request must carry.
    pub cluster_secret: String,
    /// The bootstrap members (id → peer address); empty for a node that joins later.
    pub initial_members: BTreeMap<NodeId, String>,
    /// The address outgoing peer connections start from; `None` lets the OS choose.
    pub peer_source_ip: Option<std::net::IpAddr>,
    /// Mutual TLS towards peers (the cluster's CA and this node's certificate), if configured.
    pub peer_tls: Option<Arc<tokio_rustls::rustls::ClientConfig>>,
}

/// What a node's Raft runs on besides its options: how it reaches its peers, where it keeps
/// its state and the clock the leader stamps on proposals. A node gets HTTP, RocksDB and the
/// system clock ([`RaftHandle::start`]); a test or the simulation plugs in its own.
#[derive(Clone)]
pub struct Seams {
    /// How requests reach the other members.
    pub peers: Arc<dyn Transport>,
    /// Where the log, the vote and snapshots are kept.
    pub disk: Arc<dyn Disk>,
    /// Milliseconds since the Unix epoch, as the leader stamps them on what it commits.
    pub wall_clock: fn() -> u64,
}

impl Seams {
    /// `peers` and `disk` with the system clock.
    pub fn new(peers: Arc<dyn Transport>, disk: Arc<dyn Disk>) -> Self {
        Self {
            peers,
            disk,
            wall_clock: wall_clock_ms,
        }
    }
}

/// How fresh a read must be.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Consistency {
    /// Reflects every write acknowledged before the read started (read index via the leader).
    #[default]
    Linearizable,
    /// Whatever this node has applied; may lag the leader.
    Stale,
}

/// A committed write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Written {
    /// Log index of the entry.
    pub index: u64,
    /// What the state machine answered.
    pub result: CommandResult,
}

/// One member as `/cluster` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemberView {
    /// The member's id.
    pub id: NodeId,
    /// `voter` or `learner`.
    pub membership: &'static str,
    /// Its peer address.
    pub peer_addr: String,
    /// What it reported about itself, or why it could not.
    pub status: Result<NodeStatus, String>,
    /// How far its log is behind the leader's, as the leader sees it.
    pub replication_lag: Option<u64>,
}

/// The whole cluster as this node sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterView {
    /// The leader this node knows of.
    pub leader: Option<NodeId>,
    /// The current term.
    pub term: u64,
    /// Every member.
    pub members: Vec<MemberView>,
}

struct Core {
    id: NodeId,
    node: PeerNode,
    raft: Raft,
    shared: Arc<SharedState>,
    committed: Arc<AtomicU64>,
    /// The highest log index of a write this node answered before applying it itself
    /// ([`RaftHandle::write_answered`]): its reads, stale ones included, wait until it is
    /// applied here, so that whoever wrote through this node reads its write back from it.
    answered: AtomicU64,
    peers: Arc<dyn Transport>,
    config: RaftConfig,
    leadership: watch::Receiver<Leadership>,
    /// Group commit for the writes this node serves as leader.
    group_commit: Batcher<Proposal, LeaderResponse>,
    /// Group forwarding of this node's writes to the leader when it does not lead.
    forwarder: Batcher<Proposal, Routed>,
    /// Shared quorum rounds for the linearizable reads this node serves as leader.
    quorum_rounds: Batcher<(), LeaderResponse>,
    /// Shared requests to the leader for this node's own linearizable reads.
    read_index_rounds: Batcher<(), Routed>,
    /// How long the last confirmed quorum round lets this leader answer read indexes alone.
    lease: Arc<ReadLease>,
    /// Read indexes answered as leader from the lease and after a round (resolved once: they
    /// count every linearizable read).
    lease_reads: IntCounter,
    round_reads: IntCounter,
    /// When to campaign, after a pre-vote round.
    elector: Arc<Elector>,
    /// The Raft gauges and counters on the node's registry.
    exporter: Arc<RaftMetricsExporter>,
    /// The term and last log index this node started with (see [`RestartFloor`]).
    restart_floor: RestartFloor,
    /// The clock stamped on proposals this node commits as leader.
    wall_clock: fn() -> u64,
}

/// What a node restarted as the leader of its old term must not answer reads below.
///
/// openraft 0.9 restores a node whose stored vote is its own committed vote as the leader of
/// that term at once, without a new blank entry; its read index is then the larger of the
/// committed index and the term's first entry, and the committed index it restarted with is
/// only the one it last saved (every 64 entries or 200 ms). Followers still in that term
/// confirm its leadership, so it answered linearizable reads up to 200 ms stale — the chaos
/// harness caught it right after a leader was restarted. While it leads the term it started
/// in, its read index is at least the last entry it held at the start: a leader never drops
/// its own entries, so they all commit while it leads.
#[derive(Debug, Clone, Copy)]
struct RestartFloor {
    term: u64,
    last_index: u64,
}

impl RestartFloor {
    /// The read index `index` raised to the floor while `raft` is still in the term it
    /// started in.
    fn apply(self, raft: &Raft, index: u64) -> u64 {
        let term = raft.metrics().borrow().current_term;
        if term == self.term {
            index.max(self.last_index)
        } else {
            index
        }
    }
}

/// A cheap, cloneable handle on this node's Raft instance.
#[derive(Clone)]
pub struct RaftHandle {
    core: Arc<Core>,
}

// One value per request, moved a few times: boxing would only add an allocation.
#[allow(clippy::large_enum_variant)]
#[derive(Clone)]
enum Routed {
    Answer(LeaderResponse),
    /// Nothing was delivered and no leader is reachable yet.
    NoLeader(String),
}

impl RaftHandle {
    /// Opens storage, starts Raft and, on a pristine node listed in `initial_members`,
    /// initialises the cluster. Safe to call again after any restart with the same options.
    /// Peers are reached over HTTP (HTTPS with `peer_tls`), authenticated with the cluster
    /// secret.
    pub async fn start(options: StartOptions, registry: &prometheus::Registry) -> Result<Self, StoreError> {
        let peers = PeerClient::new(
            &options.cluster_secret,
            options.peer_source_ip,
            options.peer_tls.clone(),
        );
        options.config.validate()?;
        std::fs::create_dir_all(&options.data_dir).map_err(|e| {
            StoreError::Config(format!(
                "cannot create data dir {}: {e}",
                options.data_dir.display()
            ))
        })?;
        let disk = RocksDisk::open(&options.data_dir)?;
        Self::start_with(options, Seams::new(Arc::new(peers), disk), registry).await
    }

    /// [`RaftHandle::start`] on other [`Seams`]: peers reached through another transport than
    /// HTTP (an in-process [`crate::network::loopback::Switchboard`] in tests, simulated TCP in
    /// the simulation), state kept on another disk, another clock. `data_dir`,
    /// `cluster_secret`, `peer_source_ip` and `peer_tls` are then the seams' business.
    pub async fn start_with(
        options: StartOptions,
        seams: Seams,
        registry: &prometheus::Registry,
    ) -> Result<Self, StoreError> {
        let Seams {
            peers,
            disk,
            wall_clock,
        } = seams;
        options.config.validate()?;
        let openraft_config = Arc::new(options.config.to_openraft()?);
        let (log_store, state_machine) = store::open(
            disk,
            options.config.watch_history,
            crate::metrics::log_append_histogram(registry)?,
        )?;
        let shared = state_machine.shared();
        let committed = log_store.committed_index();
        // Read from the store before openraft starts (its metrics are not loaded yet then).
        let restart_floor = {
            let mut reader = log_store.clone();
            let vote = openraft::storage::RaftLogStorage::read_vote(&mut reader)
                .await
                .map_err(|e| StoreError::Raft(e.to_string()))?;
            let last = log_store
                .last_log_id_or_purged()
                .map_err(|e| StoreError::Raft(e.to_string()))?;
            RestartFloor {
                term: vote.map_or(0, |vote| vote.leader_id().term),
                last_index: last.map_or(0, |id| id.index),
            }
        };
        let log_for_elector = log_store.clone();
        let raft = Raft::new(
            options.id,
            openraft_config.clone(),
            Network::new(peers.clone()),
            log_store,
            state_machine,
        )
        .await
        .map_err(|e| StoreError::Raft(e.to_string()))?;

        let members: BTreeMap<NodeId, PeerNode> = options
            .initial_members
            .iter()
            .map(|(id, addr)| {
                (
                    *id,
                    PeerNode {
                        peer_addr: addr.clone(),
                        api_addr: String::new(),
                    },
                )
            })
            .collect();
        if let Some(wait) = crate::bootstrap::turn(&members, options.id, options.config.election_timeout_max)
        {
            // Every bootstrap member proposes the same membership at log index 0, so they agree
            // whichever initialises first; they take turns so as not to unseat the first leader.
            let initialize = crate::bootstrap::initialize_in_turn(raft.clone(), members, wait);
            if wait.is_zero() {
                initialize.await;
            } else {
                tokio::spawn(initialize);
            }
        }

        let (leadership_tx, leadership) = watch::channel(Leadership::default());
        let exporter = Arc::new(RaftMetricsExporter::register(registry)?);
        tokio::spawn(follow_metrics(
            options.id,
            raft.metrics(),
            leadership_tx,
            exporter.clone(),
            shared.clone(),
            committed.clone(),
        ));
        let elector = Elector::new(
            options.id,
            raft.clone(),
            log_for_elector,
            peers.clone(),
            options.config.clone(),
            openraft_config,
            crate::metrics::pre_vote_counter(registry)?,
        );
        let elector = Arc::new(if restart_floor.term == 0 {
            elector.never_voted()
        } else {
            elector
        });
        tokio::spawn(elector.clone().run());
        let group_commit_writes = crate::metrics::group_commit_histogram(registry)?;
        let read_indexes = crate::metrics::read_index_counter(registry)?;
        let core = Arc::new_cyclic(|weak: &Weak<Core>| {
            let for_reads = weak.clone();
            let for_writes = weak.clone();
            let raft_for_rounds = raft.clone();
            let lease = Arc::new(ReadLease::new(read_lease(&options.config)));
            let lease_for_rounds = lease.clone();
            let leadership_for_rounds = leadership.clone();
            Core {
                id: options.id,
                node: options.node,
                group_commit: group_commit(
                    raft.clone(),
                    group_commit_writes,
                    leadership.clone(),
                    options.config.request_timeout,
                ),
                forwarder: Batcher::start(
                    FORWARDS_IN_FLIGHT,
                    MAX_FORWARD_BATCH,
                    Some(leadership.clone()),
                    move |proposals| {
                        let core = for_writes.upgrade();
                        Box::pin(async move {
                            match core {
                                Some(core) => RaftHandle { core }.forward_writes(proposals).await,
                                None => {
                                    vec![
                                        Routed::NoLeader("this node is shutting down".into());
                                        proposals.len()
                                    ]
                                }
                            }
                        })
                    },
                ),
                quorum_rounds: shared_rounds(1, None, move || {
                    Box::pin(quorum_round(
                        raft_for_rounds.clone(),
                        restart_floor,
                        lease_for_rounds.clone(),
                        leadership_for_rounds.borrow().term,
                    ))
                }),
                read_index_rounds: shared_rounds(
                    READ_INDEX_REQUESTS_IN_FLIGHT,
                    Some(leadership.clone()),
                    move || {
                        let core = for_reads.upgrade();
                        Box::pin(async move {
                            match core {
                                Some(core) => {
                                    let deadline = Instant::now() + core.config.request_timeout;
                                    RaftHandle { core }
                                        .route(LeaderRequest::ReadIndex, deadline)
                                        .await
                                }
                                None => Routed::NoLeader("this node is shutting down".into()),
                            }
                        })
                    },
                ),
                lease,
                lease_reads: read_indexes.with_label_values(&["lease"]),
                round_reads: read_indexes.with_label_values(&["round"]),
                raft,
                shared,
                committed,
                answered: AtomicU64::new(0),
                peers,
                config: options.config,
                leadership,
                elector,
                exporter,
                restart_floor,
                wall_clock,
            }
        });
        Ok(Self { core })
    }

    /// This node's id.
    pub fn id(&self) -> NodeId {
        self.core.id
    }

    /// The configured request timeout.
    pub fn request_timeout(&self) -> Duration {
        self.core.config.request_timeout
    }

    /// Leadership as this node sees it; changes are published as they happen.
    pub fn leadership(&self) -> watch::Receiver<Leadership> {
        self.core.leadership.clone()
    }

    /// Changes applied from now on. Pair with [`Self::changes_since`] to resume without gaps.
    pub fn subscribe_changes(&self) -> broadcast::Receiver<Arc<Change>> {
        self.core.shared.changes.subscribe()
    }

    /// Shows `observer` this node's state now, then after every proposal it applies (see
    /// [`ApplyObserver`]): for views of the state that must see each change at its own
    /// revision, which the change feed (stored objects only) does not carry.
    pub fn observe_applied(&self, observer: Arc<dyn ApplyObserver>) {
        self.core.shared.observe(observer);
    }

    /// At most `limit` changes after `after` that this node still remembers, oldest first.
    pub fn changes_since(&self, after: u64, limit: usize) -> Result<Vec<Arc<Change>>, HistoryGone> {
        self.core
            .shared
            .history
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .since(after, limit)
    }

    /// Proposes a command and waits until it is committed and applied on the leader and on
    /// this node, forwarding to the leader when this node is not it: the caller may read its
    /// write from this node's replica at once ([`RaftHandle::local_read`]).
    pub async fn write(&self, proposal: Proposal) -> Result<Written, WriteError> {
        let deadline = Instant::now() + self.core.config.request_timeout;
        let written = self.commit_through_leader(proposal, deadline).await?;
        // Serve the caller's next read from this node consistently: wait until the write is
        // applied here too.
        let _ = self.wait_applied(written.index, deadline).await;
        Ok(written)
    }

    /// Proposes a command and answers once it is committed and applied on the leader, with the
    /// answer the leader's apply gave; through a follower, without waiting for the follower's
    /// own apply (which waits for the leader's next AppendEntries). This node's reads that go
    /// through [`RaftHandle::read`] — stale ones included — wait until the write is applied
    /// here, so a client that writes and reads through one node reads its writes; its
    /// [`RaftHandle::local_read`]s do not (use [`RaftHandle::write`] before those).
    pub async fn write_answered(&self, proposal: Proposal) -> Result<Written, WriteError> {
        let deadline = Instant::now() + self.core.config.request_timeout;
        let written = self.commit_through_leader(proposal, deadline).await?;
        self.core.answered.fetch_max(written.index, Ordering::AcqRel);
        Ok(written)
    }

    /// Commits `proposal` through the leader (this node or another); its index and result.
    async fn commit_through_leader(
        &self,
        proposal: Proposal,
        deadline: Instant,
    ) -> Result<Written, WriteError> {
        let routed = if self.core.leadership.borrow().is_self {
            self.route(LeaderRequest::Write(proposal), deadline).await
        } else {
            match tokio::time::timeout_at(deadline, self.core.forwarder.submit(proposal)).await {
                Ok(Some(routed)) => routed,
                // The batch may have reached the leader.
                Ok(None) => Routed::Answer(LeaderResponse::Failed {
                    message: "this node stopped while the write was on its way".into(),
                }),
                Err(_) => Routed::Answer(LeaderResponse::Failed {
                    message: "not committed within the request timeout".into(),
                }),
            }
        };
        match routed {
            Routed::Answer(LeaderResponse::Written { index, result }) => Ok(Written { index, result }),
            Routed::Answer(LeaderResponse::Failed { message }) => Err(WriteError::MaybeCommitted(message)),
            Routed::Answer(LeaderResponse::Refused { message }) => Err(WriteError::Unavailable(message)),
            Routed::Answer(other) => Err(WriteError::Unavailable(format!("unexpected answer {other:?}"))),
            Routed::NoLeader(message) => Err(WriteError::Unavailable(message)),
        }
    }

    /// Sends writes that reached this node together to the leader as one request; one answer
    /// per proposal, in order.
    async fn forward_writes(&self, mut proposals: Vec<Proposal>) -> Vec<Routed> {
        let count = proposals.len();
        let deadline = Instant::now() + self.core.config.request_timeout;
        let request = match proposals.pop() {
            Some(only) if proposals.is_empty() => LeaderRequest::Write(only),
            Some(last) => {
                proposals.push(last);
                LeaderRequest::WriteBatch(proposals)
            }
            None => return Vec::new(),
        };
        match self.route(request, deadline).await {
            Routed::Answer(LeaderResponse::Batch { answers }) if answers.len() == count => answers
                .into_iter()
                .map(|answer| match answer {
                    // Not proposed, as `route` assumes of this answer to a single write.
                    LeaderResponse::NotLeader { .. } => {
                        Routed::NoLeader("leadership moved while the write was forwarded".into())
                    }
                    answer => Routed::Answer(answer),
                })
                .collect(),
            Routed::Answer(LeaderResponse::Batch { answers }) => {
                let message = format!("{} answers to a batch of {count}", answers.len());
                vec![Routed::Answer(LeaderResponse::Failed { message }); count]
            }
            routed => vec![routed; count],
        }
    }

    /// Reads the state with the given consistency; returns `f`'s result and the revision it
    /// reflects (the resource version of a list).
    pub async fn read<R>(
        &self,
        consistency: Consistency,
        f: impl FnOnce(&State) -> R,
    ) -> Result<(R, u64), ReadError> {
        let deadline = Instant::now() + self.core.config.request_timeout;
        if consistency == Consistency::Stale {
            // A write this node answered is read back from it: a stale read waits for it (a
            // linearizable one waits for a read index, which is at least as far).
            let answered = self.core.answered.load(Ordering::Acquire);
            // A node that never answered a write early takes no lock here.
            if answered > 0 {
                self.wait_applied(answered, deadline).await?;
            }
        } else if let Some(index) = self.leased_read_index() {
            // This node leads and its lease holds: no queue, no round.
            self.wait_applied(index, deadline).await?;
        } else {
            let round = tokio::time::timeout_at(deadline, self.core.read_index_rounds.submit(())).await;
            let index = match round {
                Ok(Some(Routed::Answer(LeaderResponse::ReadIndex { index }))) => index,
                Ok(Some(Routed::Answer(other))) => return Err(ReadError::Unavailable(format!("{other:?}"))),
                Ok(Some(Routed::NoLeader(message))) => return Err(ReadError::Unavailable(message)),
                Ok(None) => return Err(ReadError::ShuttingDown),
                Err(_) => {
                    return Err(ReadError::Unavailable(
                        "the leader did not confirm a read index within the request timeout".into(),
                    ))
                }
            };
            self.wait_applied(index, deadline).await?;
        }
        Ok(self.core.shared.with_state(f))
    }

    /// The leader's time now, in ms since the Unix epoch: this node's clock (the one it stamps
    /// on what it commits as leader), never behind the committed clock. Decisions that wait on
    /// time (a migration interval, a rescoring, a claim's expiry) are judged against it, not
    /// against the committed clock, which stands still while nothing is written.
    pub fn leader_clock_ms(&self) -> u64 {
        let committed = self.local_read(State::clock_ms);
        (self.core.wall_clock)().max(committed)
    }

    /// Reads this node's replica at once, without any consistency guarantee (for metrics).
    pub fn local_read<R>(&self, f: impl FnOnce(&State) -> R) -> R {
        self.core.shared.with_state(f).0
    }

    /// On the leader: waits until everything committed before its term is applied here and
    /// returns that index. Errors when this node is not the leader.
    pub async fn barrier(&self) -> Result<u64, ReadError> {
        let deadline = Instant::now() + self.core.config.request_timeout;
        match confirmed_read_index(&self.core.raft, self.core.restart_floor).await {
            Ok(index) => {
                self.wait_applied(index, deadline).await?;
                Ok(index)
            }
            Err(e) => Err(ReadError::Unavailable(e.to_string())),
        }
    }

    async fn wait_applied(&self, index: u64, deadline: Instant) -> Result<(), ReadError> {
        let Some(applied) = self.core.shared.applied_waiter(index) else {
            return Ok(());
        };
        match tokio::time::timeout_at(deadline, applied).await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(_)) => Err(ReadError::ShuttingDown),
            Err(_) => Err(ReadError::Unavailable(format!(
                "this node has not applied index {index} within the request timeout"
            ))),
        }
    }

    fn peer_addr_of(&self, id: NodeId) -> Option<String> {
        let metrics = self.core.raft.metrics();
        let metrics = metrics.borrow();
        metrics
            .membership_config
            .membership()
            .get_node(&id)
            .map(|node| node.peer_addr.clone())
    }

    /// Sends `request` to the leader (possibly this node) until it answers or `deadline`.
    async fn route(&self, request: LeaderRequest, deadline: Instant) -> Routed {
        let mut leadership = self.leadership();
        let mut last_problem = "no leader is known".to_string();
        loop {
            let now = Instant::now();
            if now >= deadline {
                return Routed::NoLeader(last_problem);
            }
            let current = *leadership.borrow_and_update();
            let answer = match current.leader {
                Some(leader) if leader == self.core.id => {
                    match tokio::time::timeout_at(deadline, self.serve_leader_request(request.clone())).await
                    {
                        Ok(answer) => Some(answer),
                        Err(_) => {
                            return Routed::Answer(match request {
                                LeaderRequest::Write(_) | LeaderRequest::WriteBatch(_) => {
                                    LeaderResponse::Failed {
                                        message: "not committed within the request timeout".into(),
                                    }
                                }
                                _ => LeaderResponse::Refused {
                                    message: "leader did not confirm in time".into(),
                                },
                            });
                        }
                    }
                }
                Some(leader) => match self.peer_addr_of(leader) {
                    Some(addr) => {
                        match self
                            .core
                            .peers
                            .leader_request(&addr, &request, deadline - now)
                            .await
                        {
                            Ok(answer) => Some(answer),
                            Err(e) if e.not_delivered() => {
                                last_problem = e.to_string();
                                None
                            }
                            Err(e) => return Routed::Answer(undelivered_or_unknown(&request, &e)),
                        }
                    }
                    None => {
                        last_problem = format!("leader {leader} is not in the membership");
                        None
                    }
                },
                None => None,
            };
            match answer {
                Some(LeaderResponse::NotLeader { .. }) => last_problem = "leadership is moving".into(),
                Some(answer) => return Routed::Answer(answer),
                None => {}
            }
            // Wait for a leadership change, or look again shortly. Nothing was proposed in this
            // round; a closed feed means Raft has stopped (waiting on it again would spin until
            // the deadline — the simulation found this after a Raft core panicked).
            let wake = (Instant::now() + LEADER_POLL).min(deadline);
            if let Ok(Err(_)) = tokio::time::timeout_at(wake, leadership.changed()).await {
                return Routed::NoLeader("this node's Raft has stopped".into());
            }
        }
    }

    /// Answers a request as the leader. Called locally and by the peer server.
    pub(crate) async fn serve_leader_request(&self, request: LeaderRequest) -> LeaderResponse {
        let raft = &self.core.raft;
        match request {
            LeaderRequest::Write(proposal) => {
                if let Some(refusal) = self.refusal_without_quorum() {
                    return refusal;
                }
                self.commit(proposal).await
            }
            LeaderRequest::WriteBatch(proposals) => {
                let leadership = *self.core.leadership.borrow();
                if !leadership.is_self {
                    // Answered for the whole batch, so that the sender tries the leader instead.
                    return LeaderResponse::NotLeader {
                        leader: leadership.leader,
                    };
                }
                if let Some(refusal) = self.refusal_without_quorum() {
                    return refusal;
                }
                let answers = futures::future::join_all(proposals.into_iter().map(|p| self.commit(p))).await;
                LeaderResponse::Batch { answers }
            }
            LeaderRequest::ReadIndex => {
                #[cfg(feature = "planted-stale-read")]
                if let Some(index) = self.planted_stale_read_index() {
                    return LeaderResponse::ReadIndex { index };
                }
                if let Some(index) = self.leased_read_index() {
                    return LeaderResponse::ReadIndex { index };
                }
                let answer =
                    self.core
                        .quorum_rounds
                        .submit(())
                        .await
                        .unwrap_or_else(|| LeaderResponse::Refused {
                            message: "this node is shutting down".to_string(),
                        });
                if matches!(answer, LeaderResponse::ReadIndex { .. }) {
                    self.core.round_reads.inc();
                }
                answer
            }
            LeaderRequest::AddMember { id, node } => {
                let added = match raft.add_learner(id, node, true).await {
                    Ok(_) => {
                        raft.change_membership(ChangeMembers::AddVoterIds(BTreeSet::from([id])), false)
                            .await
                    }
                    Err(e) => Err(e),
                };
                membership_answer(added)
            }
            LeaderRequest::RemoveMember { id } => {
                let membership = raft.metrics().borrow().membership_config.membership().clone();
                if membership.get_node(&id).is_none() {
                    return LeaderResponse::Refused {
                        message: format!("node {id} is not a member"),
                    };
                }
                let is_voter = membership.voter_ids().any(|voter| voter == id);
                let change = if is_voter {
                    ChangeMembers::RemoveVoters(BTreeSet::from([id]))
                } else {
                    ChangeMembers::RemoveNodes(BTreeSet::from([id]))
                };
                membership_answer(raft.change_membership(change, false).await)
            }
        }
    }

    /// Adds a member: as learner first, promoted to voter once it has caught up.
    pub async fn add_member(&self, id: NodeId, node: PeerNode) -> Result<(), MembershipError> {
        // Catching up may take a snapshot transfer: allow more than a plain write.
        let deadline = Instant::now() + self.core.config.request_timeout * 6;
        self.membership_change(LeaderRequest::AddMember { id, node }, deadline)
            .await
    }

    /// Removes a member.
    pub async fn remove_member(&self, id: NodeId) -> Result<(), MembershipError> {
        let deadline = Instant::now() + self.core.config.request_timeout;
        self.membership_change(LeaderRequest::RemoveMember { id }, deadline)
            .await
    }

    async fn membership_change(
        &self,
        request: LeaderRequest,
        deadline: Instant,
    ) -> Result<(), MembershipError> {
        match self.route(request, deadline).await {
            Routed::Answer(LeaderResponse::MembershipChanged) => Ok(()),
            Routed::Answer(LeaderResponse::Refused { message }) => Err(MembershipError::Refused(message)),
            Routed::Answer(other) => Err(MembershipError::Unavailable(format!("{other:?}"))),
            Routed::NoLeader(message) => Err(MembershipError::Unavailable(message)),
        }
    }

    /// On a leader cut off from the majority: the refusal that spares a write waiting out its
    /// timeout.
    fn refusal_without_quorum(&self) -> Option<LeaderResponse> {
        self.quorum_silence_ms().map(|silence| LeaderResponse::Refused {
            message: format!(
                "this leader has not heard from a majority for {silence} ms; nothing was proposed"
            ),
        })
    }

    /// Commits one proposal with the leader's group commit.
    async fn commit(&self, mut proposal: Proposal) -> LeaderResponse {
        // The leader's clock is the cluster's clock: every replica applies this value.
        proposal.now_ms = (self.core.wall_clock)();
        self.core
            .group_commit
            .submit(proposal)
            .await
            .unwrap_or_else(|| LeaderResponse::Refused {
                message: "this node is shutting down".to_string(),
            })
    }

    /// The read index this leader may answer without a quorum round while its lease holds
    /// (see [`crate::lease`]); starts a renewal in the background in the lease's second half.
    fn leased_read_index(&self) -> Option<u64> {
        let leadership = *self.core.leadership.borrow();
        if !leadership.is_self {
            return None;
        }
        let committed = self.core.committed.load(Ordering::Acquire);
        let (index, renew) = self.core.lease.index(leadership.term, committed)?;
        self.core.lease_reads.inc();
        if renew {
            let rounds = self.core.quorum_rounds.clone();
            let lease = self.core.lease.clone();
            tokio::spawn(async move {
                rounds.submit(()).await;
                lease.renewal_done();
            });
        }
        Some(index)
    }

    /// THE PLANTED BUG (feature `planted-stale-read`, for the chaos harness only): a node that
    /// believes it leads answers a read index from its own state, without confirming with a
    /// quorum that it still leads, so a deposed leader serves stale reads.
    #[cfg(feature = "planted-stale-read")]
    fn planted_stale_read_index(&self) -> Option<u64> {
        let metrics = self.core.raft.metrics();
        let metrics = metrics.borrow();
        (metrics.current_leader == Some(self.core.id)).then(|| metrics.last_applied.map_or(0, |id| id.index))
    }

    /// On a leader that has not heard from a majority for twice the maximum election timeout
    /// (openraft 0.9 leaders do not step down by themselves), how long it has been.
    fn quorum_silence_ms(&self) -> Option<u64> {
        let limit = u64::try_from(self.core.config.election_timeout_max.as_millis()).unwrap_or(u64::MAX);
        let metrics = self.core.raft.metrics();
        let silence = metrics.borrow().millis_since_quorum_ack?;
        (silence > limit.saturating_mul(2)).then_some(silence)
    }

    /// Brings the Raft gauges up to date, for a scrape of `/metrics`.
    pub fn refresh_metrics(&self) {
        let metrics = self.core.raft.metrics().borrow().clone();
        let committed = self.core.committed.load(Ordering::Relaxed);
        self.core.exporter.update(&metrics, committed, &self.core.shared);
    }

    /// This node's own status.
    pub fn status(&self) -> NodeStatus {
        let metrics = self.core.raft.metrics();
        let metrics = metrics.borrow();
        node_status(
            &self.core.node,
            &metrics,
            self.core.committed.load(Ordering::Relaxed),
        )
    }

    /// True when a leader is known, is a voter of this node's membership, and this node has
    /// applied up to the commit index it heard of.
    pub fn is_ready(&self) -> bool {
        let status = self.status();
        status.leader.is_some_and(|leader| self.is_voter(leader))
            && status.applied_index >= status.commit_index
    }

    /// Whether `id` is a voter of this node's newest membership.
    pub fn is_voter(&self, id: NodeId) -> bool {
        let metrics = self.core.raft.metrics();
        let metrics = metrics.borrow();
        let is_voter = metrics
            .membership_config
            .membership()
            .voter_ids()
            .any(|voter| voter == id);
        is_voter
    }

    /// This node's term and members, against which peers' votes are judged.
    pub(crate) fn known_to_peers(&self) -> crate::network::plausible::Known {
        let metrics = self.core.raft.metrics();
        let metrics = metrics.borrow();
        crate::network::plausible::Known {
            term: metrics.current_term,
            members: metrics
                .membership_config
                .membership()
                .nodes()
                .map(|(id, _)| *id)
                .collect(),
        }
    }

    /// Members with roles, addresses and each one's own report.
    pub async fn cluster(&self) -> ClusterView {
        let metrics = self.core.raft.metrics().borrow().clone();
        let membership = metrics.membership_config.membership().clone();
        let voters: BTreeSet<NodeId> = membership.voter_ids().collect();
        let last_log = metrics.last_log_index.unwrap_or(0);
        let replication = metrics.replication.clone();
        let timeout = self.core.config.rpc_timeout;
        let lookups = membership.nodes().map(|(id, node)| {
            let id = *id;
            let node = node.clone();
            let this = self.clone();
            async move {
                let status = if id == this.core.id {
                    Ok(this.status())
                } else {
                    this.core
                        .peers
                        .status(&node.peer_addr, timeout)
                        .await
                        .map_err(|e| e.to_string())
                };
                (id, node, status)
            }
        });
        let answers = futures::future::join_all(lookups).await;
        let members = answers
            .into_iter()
            .map(|(id, node, status)| MemberView {
                id,
                membership: if voters.contains(&id) { "voter" } else { "learner" },
                peer_addr: node.peer_addr,
                status,
                replication_lag: replication
                    .as_ref()
                    .and_then(|r| r.get(&id))
                    .map(|matched| last_log.saturating_sub(matched.as_ref().map_or(0, |m| m.index))),
            })
            .collect();
        ClusterView {
            leader: metrics.current_leader,
            term: metrics.current_term,
            members,
        }
    }

    /// Notes that a leader (or a candidate this node voted for) was heard from just now.
    pub(crate) fn heard_from_leader(&self) {
        self.core.elector.heard_from_leader();
    }

    /// Whether this node would vote for the candidate now.
    pub(crate) fn answer_pre_vote(&self, request: &PreVoteRequest) -> PreVoteResponse {
        self.core.elector.answer(request)
    }

    pub(crate) fn raw(&self) -> &Raft {
        &self.core.raft
    }

    /// Stops Raft. In-flight requests fail; the storage is closed when the last handle drops.
    pub async fn shutdown(&self) {
        if let Err(e) = self.core.raft.shutdown().await {
            tracing::warn!(error = %e, "raft did not shut down cleanly");
        }
        self.core.elector.release_log();
    }
}

/// One quorum round on the leader: the index every read sharing it must wait for. A confirmed
/// round extends the read lease of `term` (the term this node led as it started) from its start.
async fn quorum_round(raft: Raft, floor: RestartFloor, lease: Arc<ReadLease>, term: u64) -> LeaderResponse {
    let started = Instant::now();
    match confirmed_read_index(&raft, floor).await {
        Ok(index) => {
            lease.confirmed(term, started, index);
            LeaderResponse::ReadIndex { index }
        }
        Err(error) => match error.forward_to_leader() {
            Some(forward) => LeaderResponse::NotLeader {
                leader: forward.leader_id,
            },
            None => LeaderResponse::Refused {
                message: error.to_string(),
            },
        },
    }
}

/// The read index once a quorum confirmed this node's leadership (see [`QUORUM_ATTEMPTS`]),
/// raised to the restart floor.
async fn confirmed_read_index(
    raft: &Raft,
    floor: RestartFloor,
) -> Result<u64, RaftError<CheckIsLeaderError<NodeId, PeerNode>>> {
    let mut attempt = 1;
    loop {
        match raft.get_read_log_id().await {
            Ok((read_log_id, _)) => return Ok(floor.apply(raft, read_log_id.map_or(0, |id| id.index))),
            Err(error)
                if attempt < QUORUM_ATTEMPTS
                    && matches!(error.api_error(), Some(CheckIsLeaderError::QuorumNotEnough(_))) =>
            {
                attempt += 1;
            }
            Err(error) => return Err(error),
        }
    }
}

fn undelivered_or_unknown(request: &LeaderRequest, error: &PeerError) -> LeaderResponse {
    match request {
        LeaderRequest::Write(_)
        | LeaderRequest::WriteBatch(_)
        | LeaderRequest::AddMember { .. }
        | LeaderRequest::RemoveMember { .. } => LeaderResponse::Failed {
            message: error.to_string(),
        },
        LeaderRequest::ReadIndex => LeaderResponse::Refused {
            message: error.to_string(),
        },
    }
}

/// Milliseconds since the Unix epoch by this node's clock.
pub fn wall_clock_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |elapsed| {
            u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX)
        })
}

fn membership_answer<T>(result: Result<T, RaftError<ClientWriteError>>) -> LeaderResponse {
    match result {
        Ok(_) => LeaderResponse::MembershipChanged,
        Err(e) => match e.forward_to_leader() {
            Some(forward) => LeaderResponse::NotLeader {
                leader: forward.leader_id,
            },
            None => LeaderResponse::Refused {
                message: e.to_string(),
            },
        },
    }
}

pub(crate) fn node_status(node: &PeerNode, metrics: &RaftMetrics, committed: u64) -> NodeStatus {
    let role = match metrics.state {
        ServerState::Leader => "leader",
        ServerState::Follower => "follower",
        ServerState::Candidate => "candidate",
        ServerState::Learner => "learner",
        ServerState::Shutdown => "shutdown",
    };
    let applied = metrics.last_applied.as_ref().map_or(0, |id| id.index);
    NodeStatus {
        id: metrics.id,
        api_addr: node.api_addr.clone(),
        peer_addr: node.peer_addr.clone(),
        role: role.to_string(),
        term: metrics.current_term,
        leader: metrics.current_leader,
        last_log_index: metrics.last_log_index.unwrap_or(0),
        // A leader's commit index can be ahead of what it persisted; never report below applied.
        commit_index: committed.max(applied),
        applied_index: applied,
        snapshot_index: metrics.snapshot.as_ref().map_or(0, |id| id.index),
        purged_index: metrics.purged.as_ref().map_or(0, |id| id.index),
        version: env!("CARGO_PKG_VERSION").to_string(),
    }
}

async fn follow_metrics(
    id: NodeId,
    mut metrics: watch::Receiver<RaftMetrics>,
    leadership: watch::Sender<Leadership>,
    exporter: Arc<RaftMetricsExporter>,
    shared: Arc<SharedState>,
    committed: Arc<AtomicU64>,
) {
    loop {
        // openraft publishes metrics on every append, commit and apply. The gauges are computed
        // at each scrape (`refresh_metrics`); here only a change of leadership is exported, for
        // the election and leader-change counters that count what they see change.
        let changed_leadership = {
            let current = metrics.borrow_and_update();
            let next = Leadership {
                leader: current.current_leader,
                term: current.current_term,
                is_self: current.current_leader == Some(id),
            };
            let changed = leadership.send_if_modified(|old| {
                let changed = *old != next;
                *old = next;
                changed
            });
            changed.then(|| current.clone())
        };
        if let Some(snapshot) = changed_leadership {
            exporter.update(&snapshot, committed.load(Ordering::Relaxed), &shared);
        }
        if metrics.changed().await.is_err() {
            break;
        }
    }
    leadership.send_replace(Leadership::default());
}
