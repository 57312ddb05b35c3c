//! Fencing: the agent keeps the highest [`Fence`] it has accepted and refuses calls from older
//! leaders. A lower epoch, or a lower term in the same epoch, is older; an equal epoch and term
//! with another leader is refused too, since two leaders cannot share a Raft term (one of them
//! is not a leader at all). A higher epoch (a cluster restored from a snapshot) outranks every
//! term of a lower one.

use drover_model::cluster::agent_api::Fence;

use crate::error::AgentError;

/// What accepting a call's fence means for the recorded one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Accepted {
    /// The call carries the recorded fence: nothing to record.
    Same,
    /// The call carries a newer fence, to record (on disk) before acting.
    Newer(Fence),
}

/// Checks `offered` against `highest`, the highest fence accepted so far.
pub fn check(highest: Fence, offered: Fence) -> Result<Accepted, AgentError> {
    let (offered_at, highest_at) = ((offered.epoch, offered.term), (highest.epoch, highest.term));
    if offered_at < highest_at || (offered_at == highest_at && offered.leader != highest.leader) {
        // Before any call the recorded fence is term 0 (leader 0): term 0 from another leader
        // is refused like any other equal term; a real Raft leader never has term 0.
        return Err(AgentError::Fenced { offered, highest });
    }
    if offered == highest {
        Ok(Accepted::Same)
    } else {
        Ok(Accepted::Newer(offered))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(term: u64, leader: u64) -> Fence {
        Fence::new(term, leader)
    }

    #[test]
    fn fencing_rules() {
        // (highest, offered, expected)
        let table = [
            (f(5, 1), f(5, 1), Some(Accepted::Same)),
            (f(5, 1), f(6, 1), Some(Accepted::Newer(f(6, 1)))),
            (f(5, 1), f(6, 2), Some(Accepted::Newer(f(6, 2)))),
            (f(5, 1), f(4, 1), None),
            (f(5, 1), f(4, 9), None),
            (f(5, 1), f(5, 2), None),
            (f(5, 2), f(5, 1), None),
            (f(0, 0), f(1, 3), Some(Accepted::Newer(f(1, 3)))),
            (f(0, 0), f(0, 0), Some(Accepted::Same)),
            // A restored cluster: a later epoch outranks any term of an earlier one, and a
            // fence of the earlier epoch is refused afterwards, whatever its term.
            (
                f(9, 1),
                f(1, 3).in_epoch(1),
                Some(Accepted::Newer(f(1, 3).in_epoch(1))),
            ),
            (f(1, 3).in_epoch(1), f(9, 1), None),
            (f(1, 3).in_epoch(1), f(1, 2).in_epoch(1), None),
            (
                f(1, 3).in_epoch(1),
                f(2, 2).in_epoch(1),
                Some(Accepted::Newer(f(2, 2).in_epoch(1))),
            ),
        ];
        for (highest, offered, expected) in table {
            let got = check(highest, offered).ok();
            assert_eq!(got, expected, "highest {highest}, offered {offered}");
        }
    }

    #[test]
    fn a_refusal_names_both_fences() {
        let e = check(f(5, 1), f(4, 2)).unwrap_err();
        assert_eq!(e.status(), 409);
        assert_eq!(
            e.to_string(),
            "fenced: term 4 (leader 2) is older than term 5 (leader 1), which this agent has already accepted"
        );
    }
}
