//! Elections with a pre-vote round.
//!
//! openraft 0.9 campaigns on a timer whatever its log holds: a follower that missed the last
//! entries starts a term it cannot win, the up-to-date follower has meanwhile voted for nothing
//! it can use, and the cluster waits another election timeout (or two) for a leader. A follower
//! cut off from the others bumps its term on every timeout and unseats the leader when it comes
//! back. So openraft's own election timer is switched off and this task decides when to
//! campaign: after the same timeout openraft would wait, it first asks the other voters whether
//! they would vote for it — they have not heard from a leader for a whole leader lease and its
//! log is at least as up to date as theirs — and triggers openraft's election only with a
//! majority of every voter set saying yes. The real vote still decides; the pre-vote only keeps
//! candidates that cannot win from starting terms.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::stream::{FuturesUnordered, StreamExt};
use openraft::ServerState;
use prometheus::IntCounterVec;
use tokio::time::Instant;

use crate::network::protocol::{PreVoteRequest, PreVoteResponse};
use crate::network::transport::Transport;
use crate::store::LogStore;
use crate::typ::{LogId, NodeId, Raft};
use crate::RaftConfig;

/// How often the election timer looks at the clock.
const TICK: Duration = Duration::from_millis(10);
/// Waited past the leader's lease before campaigning: openraft's voters date the lease from
/// when their Raft core handled the leader's last append, a moment after this task heard of it.
const LEASE_MARGIN: Duration = Duration::from_millis(20);

/// Why a voter would refuse to vote for a candidate, if it would.
pub(crate) fn refusal(
    is_leader: bool,
    since_leader_contact: Option<Duration>,
    lease: Duration,
    own_last_log: Option<LogId>,
    candidate_last_log: Option<LogId>,
) -> Option<String> {
    if is_leader {
        return Some("this node leads".into());
    }
    if let Some(since) = since_leader_contact.filter(|since| *since <= lease) {
        return Some(format!(
            "heard from the leader (or started) {} ms ago",
            since.as_millis()
        ));
    }
    if candidate_last_log < own_last_log {
        return Some(format!(
            "candidate's log ends at {candidate_last_log:?}, before this node's {own_last_log:?}"
        ));
    }
    None
}

/// How long after the last leader contact (or the last attempt, or the start) a voter waits
/// before its pre-vote round. The only voter, at its first attempt, campaigns at once. A
/// follower of a known leader (`committed_vote`) waits out the leader's `lease`, since no voter
/// would grant a vote before it ends, then [`LEASE_MARGIN`], then only the random part of its
/// election timeout (`timeout` − `timeout_min`), so that the two followers of a dead leader seldom
/// campaign together; openraft's own timer would add a whole timeout. After a campaign that
/// found no leader, a whole random timeout, as openraft would.
fn campaign_wait(
    only_voter_first: bool,
    committed_vote: bool,
    lease: Duration,
    timeout: Duration,
    timeout_min: Duration,
) -> Duration {
    if only_voter_first {
        Duration::ZERO
    } else if committed_vote {
        lease + LEASE_MARGIN + timeout.saturating_sub(timeout_min)
    } else {
        timeout
    }
}

/// True when `granted` holds a majority of every voter set (two sets during a joint change).
fn has_quorum(voter_sets: &[BTreeSet<NodeId>], granted: &BTreeSet<NodeId>) -> bool {
    voter_sets
        .iter()
        .all(|set| set.iter().filter(|id| granted.contains(id)).count() * 2 > set.len())
}

/// This node's election timer and its answers to other candidates' pre-votes.
pub(crate) struct Elector {
    id: NodeId,
    raft: Raft,
    /// The log, to compare with candidates'; taken away at shutdown so the database closes.
    log: Mutex<Option<LogStore>>,
    peers: Arc<dyn Transport>,
    config: RaftConfig,
    openraft_config: Arc<openraft::Config>,
    /// When this node last heard from a leader it accepted (or granted a vote); its start at
    /// first if it ever voted: a node that stopped may have answered a leader's quorum round
    /// just before, and that leader's read lease (`crate::lease`) counts on this node refusing
    /// votes for the lease after it answered, restart or not. A node that never voted (term 0)
    /// has answered no leader, so a new cluster's members grant pre-votes from the start.
    leader_contact: Mutex<Option<Instant>>,
    /// Pre-vote rounds by outcome.
    rounds: IntCounterVec,
}

impl Elector {
    pub(crate) fn new(
        id: NodeId,
        raft: Raft,
        log: LogStore,
        peers: Arc<dyn Transport>,
        config: RaftConfig,
        openraft_config: Arc<openraft::Config>,
        rounds: IntCounterVec,
    ) -> Self {
        Self {
            id,
            raft,
            log: Mutex::new(Some(log)),
            peers,
            config,
            openraft_config,
            leader_contact: Mutex::new(Some(Instant::now())),
            rounds,
        }
    }

    /// For a node that has never voted (its stored term is 0): it has answered no leader, so it
    /// need not count its start as leader contact, and a new cluster's members grant pre-votes
    /// from the start.
    pub(crate) fn never_voted(self) -> Self {
        *self.leader_contact.lock().unwrap_or_else(|p| p.into_inner()) = None;
        self
    }

    /// openraft's leader lease: voters refuse real votes for this long after leader contact.
    fn lease(&self) -> Duration {
        self.config.election_timeout_max
    }

    fn random_timeout(&self) -> Duration {
        Duration::from_millis(
            self.openraft_config
                .new_rand_election_timeout::<crate::runtime::DroverRuntime>(),
        )
    }

    /// Records that a leader (or a candidate this node voted for) was heard from just now.
    pub(crate) fn heard_from_leader(&self) {
        *self.leader_contact.lock().unwrap_or_else(|p| p.into_inner()) = Some(Instant::now());
    }

    /// Lets go of the log store (at shutdown): the database stays locked while anything holds it.
    pub(crate) fn release_log(&self) {
        self.log.lock().unwrap_or_else(|p| p.into_inner()).take();
    }

    /// The last log id this node holds.
    fn last_log_id(&self) -> Result<Option<LogId>, String> {
        let log = self.log.lock().unwrap_or_else(|p| p.into_inner()).clone();
        match log {
            Some(log) => log.last_log_id_or_purged().map_err(|e| e.to_string()),
            None => Err("this node is shutting down".into()),
        }
    }

    fn last_leader_contact(&self) -> Option<Instant> {
        *self.leader_contact.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Answers another node's pre-vote.
    pub(crate) fn answer(&self, request: &PreVoteRequest) -> PreVoteResponse {
        let is_leader = self.raft.metrics().borrow().state == ServerState::Leader;
        let since = self.last_leader_contact().map(|at| at.elapsed());
        let refused = match self.last_log_id() {
            Ok(own) => refusal(is_leader, since, self.lease(), own, request.last_log_id),
            Err(e) => Some(format!("cannot read this node's log: {e}")),
        };
        if let Some(reason) = &refused {
            tracing::debug!(candidate = request.candidate, reason, "pre-vote refused");
        }
        PreVoteResponse {
            granted: refused.is_none(),
            reason: refused.unwrap_or_default(),
        }
    }

    /// The election timer: runs until Raft shuts down.
    pub(crate) async fn run(self: Arc<Self>) {
        let started = Instant::now();
        let mut last_attempt: Option<Instant> = None;
        let mut timeout = self.random_timeout();
        let mut tick = tokio::time::interval(TICK);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            let (state, committed_vote, voter_sets) = {
                let metrics = self.raft.metrics();
                // Raft has stopped.
                if metrics.has_changed().is_err() {
                    return;
                }
                let metrics = metrics.borrow();
                let membership = metrics.membership_config.membership();
                (
                    metrics.state,
                    metrics.vote.is_committed(),
                    membership.get_joint_config().clone(),
                )
            };
            match state {
                ServerState::Shutdown => return,
                ServerState::Leader | ServerState::Learner => continue,
                ServerState::Follower | ServerState::Candidate => {}
            }
            if !voter_sets.iter().any(|set| set.contains(&self.id)) {
                continue;
            }
            let only_voter = voter_sets
                .iter()
                .all(|set| set.len() == 1 && set.contains(&self.id));
            let wait = campaign_wait(
                only_voter && last_attempt.is_none(),
                committed_vote,
                self.lease(),
                timeout,
                self.config.election_timeout_min,
            );
            let since = [Some(started), last_attempt, self.last_leader_contact()]
                .into_iter()
                .flatten()
                .max()
                .unwrap_or(started);
            if since.elapsed() < wait {
                continue;
            }
            last_attempt = Some(Instant::now());
            timeout = self.random_timeout();
            if self.majority_would_vote(&voter_sets).await {
                self.rounds.with_label_values(&["won"]).inc();
                tracing::info!(node = self.id, "pre-vote won; campaigning");
                if self.raft.trigger().elect().await.is_err() {
                    return;
                }
            } else {
                self.rounds.with_label_values(&["lost"]).inc();
            }
        }
    }

    /// Asks the other voters for a pre-vote; true once a majority of every set said yes.
    async fn majority_would_vote(&self, voter_sets: &[BTreeSet<NodeId>]) -> bool {
        let mut granted = BTreeSet::from([self.id]);
        if has_quorum(voter_sets, &granted) {
            return true;
        }
        let request = match self.last_log_id() {
            Ok(last_log_id) => PreVoteRequest {
                candidate: self.id,
                last_log_id,
            },
            Err(e) => {
                tracing::warn!(error = %e, "cannot read own log; not campaigning");
                return false;
            }
        };
        let addresses: Vec<(NodeId, String)> = {
            let metrics = self.raft.metrics();
            let metrics = metrics.borrow();
            let membership = metrics.membership_config.membership();
            voter_sets
                .iter()
                .flatten()
                .collect::<BTreeSet<_>>()
                .into_iter()
                .filter(|id| **id != self.id)
                .filter_map(|id| membership.get_node(id).map(|node| (*id, node.peer_addr.clone())))
                .collect()
        };
        let timeout = self.config.election_timeout_min;
        let mut asks: FuturesUnordered<_> = addresses
            .iter()
            .map(|(id, addr)| {
                let request = &request;
                async move { (*id, self.peers.pre_vote(addr, request, timeout).await) }
            })
            .collect();
        while let Some((id, answer)) = asks.next().await {
            match answer {
                Ok(PreVoteResponse { granted: true, .. }) => {
                    granted.insert(id);
                    if has_quorum(voter_sets, &granted) {
                        return true;
                    }
                }
                Ok(PreVoteResponse { reason, .. }) => tracing::debug!(voter = id, reason, "pre-vote refused"),
                Err(e) => tracing::debug!(voter = id, error = %e, "pre-vote not answered"),
            }
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn log_id(term: u64, index: u64) -> Option<LogId> {
        Some(openraft::LogId::new(
            openraft::CommittedLeaderId::new(term, 0),
            index,
        ))
    }

    const LEASE: Duration = Duration::from_millis(500);

    #[test]
    fn a_follower_of_a_silent_leader_waits_the_lease_and_a_random_part_of_a_timeout() {
        let ms = Duration::from_millis;
        // (only voter at its first attempt, committed vote, random timeout, expected wait),
        // with a lease of 300 ms and timeouts of 150..300 ms.
        let cases = [
            (true, true, ms(200), ms(0)),
            (true, false, ms(200), ms(0)),
            (false, true, ms(150), ms(300 + 20)),
            (false, true, ms(299), ms(300 + 20 + 149)),
            (false, false, ms(150), ms(150)),
            (false, false, ms(299), ms(299)),
        ];
        for (only_voter_first, committed_vote, timeout, expected) in cases {
            assert_eq!(
                campaign_wait(only_voter_first, committed_vote, ms(300), timeout, ms(150)),
                expected,
                "only voter {only_voter_first}, committed vote {committed_vote}, timeout {timeout:?}"
            );
        }
    }

    #[test]
    fn a_voter_grants_only_a_candidate_that_could_win_its_real_vote() {
        let long_ago = Some(Duration::from_secs(2));
        let cases = [
            // (name, is_leader, since contact, own log, candidate log, granted)
            (
                "never heard from a leader, equal logs",
                false,
                None,
                log_id(1, 5),
                log_id(1, 5),
                true,
            ),
            (
                "lease over, candidate ahead",
                false,
                long_ago,
                log_id(1, 5),
                log_id(1, 7),
                true,
            ),
            (
                "lease over, candidate in a later term",
                false,
                long_ago,
                log_id(1, 9),
                log_id(2, 6),
                true,
            ),
            (
                "lease over, candidate's log shorter",
                false,
                long_ago,
                log_id(1, 5),
                log_id(1, 4),
                false,
            ),
            (
                "lease over, candidate's last term older",
                false,
                long_ago,
                log_id(2, 5),
                log_id(1, 9),
                false,
            ),
            (
                "lease over, candidate has no log",
                false,
                long_ago,
                log_id(1, 1),
                None,
                false,
            ),
            (
                "leader heard 100 ms ago",
                false,
                Some(Duration::from_millis(100)),
                None,
                log_id(3, 3),
                false,
            ),
            (
                "leader heard exactly a lease ago",
                false,
                Some(LEASE),
                None,
                log_id(3, 3),
                false,
            ),
            ("the voter leads", true, None, None, log_id(3, 3), false),
        ];
        for (name, is_leader, since, own, candidate, granted) in cases {
            let answer = refusal(is_leader, since, LEASE, own, candidate);
            assert_eq!(answer.is_none(), granted, "{name}: {answer:?}");
        }
    }

    #[test]
    fn a_quorum_needs_a_majority_of_every_voter_set() {
        let set = |ids: &[NodeId]| ids.iter().copied().collect::<BTreeSet<_>>();
        assert!(has_quorum(&[set(&[1, 2, 3])], &set(&[1, 2])));
        assert!(!has_quorum(&[set(&[1, 2, 3])], &set(&[1])));
        assert!(!has_quorum(&[set(&[1, 2, 3, 4])], &set(&[1, 2])));
        assert!(has_quorum(&[set(&[1])], &set(&[1])));
        // Joint change from {1,2,3} to {3,4,5}: {1,2,3} is a majority of the old set only.
        assert!(!has_quorum(&[set(&[1, 2, 3]), set(&[3, 4, 5])], &set(&[1, 2, 3])));
        assert!(has_quorum(&[set(&[1, 2, 3]), set(&[3, 4, 5])], &set(&[2, 3, 4])));
    }
}
