//! Forming a new cluster from its bootstrap members, one proposer at a time.
//!
//! openraft's `initialize` writes the initial membership at log index 0 and campaigns at
//! once. When every bootstrap member did so as it started, a member starting a moment after the
//! first leader won term 1 (before that leader had replicated to it) campaigned for term 1
//! under its own id. openraft orders leaders of one term by node id, so a larger id's candidacy
//! outranks the leader: the leader stepped down on its first append to that member, the
//! candidate could not win with an empty log, and the new cluster stood without a leader for an
//! election timeout. So the members take turns by id: the smallest initialises at once; each
//! next one waits two election timeouts longer, and proposes only if by then no leader has
//! replicated the membership to it. A member that started late is reached by the leader's
//! heartbeats long before its turn; members whose predecessors are down still form the
//! cluster, later.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::typ::{NodeId, PeerNode, Raft};

/// How often a waiting member checks whether a leader has reached it.
const POLL: Duration = Duration::from_millis(20);

/// How long member `id` waits before proposing the initial membership of `members`, or `None`
/// when it is not one of them. Its turn is its place among the ids, each two `election_timeout_max`
/// apart: the member before it has by then either won (its election needs at most one timeout
/// after its start, or after the others grant pre-votes) or is not there.
pub(crate) fn turn(
    members: &BTreeMap<NodeId, PeerNode>,
    id: NodeId,
    election_timeout_max: Duration,
) -> Option<Duration> {
    let place = members.keys().position(|member| *member == id)?;
    let place = u32::try_from(place).unwrap_or(u32::MAX);
    Some(election_timeout_max.saturating_mul(2).saturating_mul(place))
}

/// Proposes `members` as the initial membership once `wait` has passed, unless a leader has
/// replicated a membership to this node by then (or Raft stopped).
pub(crate) async fn initialize_in_turn(raft: Raft, members: BTreeMap<NodeId, PeerNode>, wait: Duration) {
    let deadline = tokio::time::Instant::now() + wait;
    loop {
        match raft.is_initialized().await {
            Ok(true) | Err(_) => return,
            Ok(false) => {}
        }
        if tokio::time::Instant::now() >= deadline {
            break;
        }
        tokio::time::sleep(POLL).await;
    }
    if let Err(e) = raft.initialize(members).await {
        tracing::info!(error = %e, "cluster already initialised");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn members(ids: &[NodeId]) -> BTreeMap<NodeId, PeerNode> {
        ids.iter().map(|id| (*id, PeerNode::default())).collect()
    }

    #[test]
    fn members_take_turns_by_id_two_election_timeouts_apart() {
        let max = Duration::from_millis(300);
        let cases: &[(&[NodeId], NodeId, Option<u64>)] = &[
            (&[1, 2, 3], 1, Some(0)),
            (&[1, 2, 3], 2, Some(600)),
            (&[1, 2, 3], 3, Some(1200)),
            // Ids need not be dense: the place counts, not the id.
            (&[4, 9, 17], 17, Some(1200)),
            (&[7], 7, Some(0)),
            (&[1, 2, 3], 5, None),
            (&[], 1, None),
        ];
        for (ids, id, expected) in cases {
            assert_eq!(
                turn(&members(ids), *id, max),
                expected.map(Duration::from_millis),
                "{ids:?} {id}"
            );
        }
    }
}
