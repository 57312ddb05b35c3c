//! Sanity checks on the votes and log ids a peer sends, made before openraft sees them.
//!
//! openraft trusts its peers: a vote of term `u64::MAX` makes it compute `term + 1` and panic, and
//! the vote is persisted first, so the node panics again at every start. The cluster secret keeps
//! strangers out, but one leaked secret must not brick a cluster for good. A term can only grow
//! by one per election, so a leap of more than [`MAX_TERM_LEAP`] over this node's term, or any
//! term past [`MAX_TERM`], cannot come from a real member. The sender must be a member this node
//! knows, or one named by a membership entry carried in the same request (a member added while
//! this node lagged).

use std::collections::BTreeSet;

use openraft::EntryPayload;

use crate::typ::{Entry, LogId, NodeId, Vote};

/// Largest jump over this node's own term accepted from a peer: a million elections.
pub const MAX_TERM_LEAP: u64 = 1_000_000;
/// Largest term accepted at all (2^48: far beyond any real cluster's elections, far below
/// overflow).
pub const MAX_TERM: u64 = 1 << 48;

/// What this node knows when it judges a peer's request.
#[derive(Debug, Clone)]
pub struct Known {
    /// This node's current term.
    pub term: u64,
    /// Members (voters and learners) of this node's newest membership; empty before it has one.
    pub members: BTreeSet<NodeId>,
}

impl Known {
    /// Checks a vote (of a candidate or a leader) and the log ids sent with it. `entries` are the
    /// entries an append carries (empty for votes).
    pub fn check(&self, vote: &Vote, log_ids: &[Option<LogId>], entries: &[Entry]) -> Result<(), String> {
        let term = vote.leader_id.get_term();
        let ceiling = self.term.saturating_add(MAX_TERM_LEAP).min(MAX_TERM);
        if term > ceiling {
            return Err(format!(
                "term {term} is implausible: this node is at term {}, and a term grows by one per election",
                self.term
            ));
        }
        let ids = log_ids
            .iter()
            .flatten()
            .chain(entries.iter().map(|entry| &entry.log_id));
        if let Some(id) = ids.clone().find(|id| id.leader_id.term > term) {
            return Err(format!("log id {id} has a term above the sender's term {term}"));
        }
        if let Some(sender) = vote.leader_id.voted_for() {
            let named_here = entries.iter().any(|entry| match &entry.payload {
                EntryPayload::Membership(membership) => membership.get_node(&sender).is_some(),
                _ => false,
            });
            if !self.members.is_empty() && !self.members.contains(&sender) && !named_here {
                return Err(format!(
                    "node {sender} is not a member of this cluster (members: {:?})",
                    self.members
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use openraft::{CommittedLeaderId, LeaderId};

    use super::*;

    fn known() -> Known {
        Known {
            term: 7,
            members: BTreeSet::from([1, 2, 3]),
        }
    }

    fn vote(term: u64, node: NodeId) -> Vote {
        Vote {
            leader_id: LeaderId::new(term, node),
            committed: true,
        }
    }

    fn log_id(term: u64, index: u64) -> Option<LogId> {
        Some(LogId::new(CommittedLeaderId::new(term, 0), index))
    }

    #[test]
    fn a_forged_term_near_overflow_is_refused() {
        assert!(known().check(&vote(u64::MAX, 1), &[], &[]).is_err());
        assert!(known().check(&vote(7 + MAX_TERM_LEAP + 1, 1), &[], &[]).is_err());
        assert!(known().check(&vote(8, 2), &[log_id(8, 10)], &[]).is_ok());
        assert!(known().check(&vote(7 + MAX_TERM_LEAP, 2), &[], &[]).is_ok());
        let far_ahead = Known {
            term: MAX_TERM,
            members: BTreeSet::new(),
        };
        assert!(far_ahead.check(&vote(MAX_TERM + 1, 1), &[], &[]).is_err());
    }

    #[test]
    fn log_ids_above_the_senders_term_are_refused() {
        assert!(known().check(&vote(8, 2), &[log_id(9, 10)], &[]).is_err());
        assert!(known()
            .check(&vote(8, 2), &[None, log_id(u64::MAX, 1)], &[])
            .is_err());
    }

    #[test]
    fn a_sender_that_is_no_member_is_refused_unless_the_request_adds_it() {
        let refused = known().check(&vote(8, 99), &[], &[]);
        assert!(refused.is_err_and(|e| e.contains("node 99")));
        // A node with no membership yet (a new member being caught up) takes any sender.
        let fresh = Known {
            term: 0,
            members: BTreeSet::new(),
        };
        assert!(fresh.check(&vote(3, 99), &[], &[]).is_ok());
        let mut nodes = std::collections::BTreeMap::new();
        for id in [1u64, 2, 3, 4] {
            nodes.insert(id, crate::typ::PeerNode::default());
        }
        let membership = openraft::Membership::new(vec![BTreeSet::from([1, 2, 3, 4])], nodes);
        let entry = Entry {
            log_id: LogId::new(CommittedLeaderId::new(8, 0), 11),
            payload: EntryPayload::Membership(membership),
        };
        assert!(known().check(&vote(8, 4), &[], &[entry]).is_ok());
    }
}
