//! Group commit on the leader: the proposals queued while earlier entries are syncing and
//! replicating become one log entry (`Command::Batch`), and each caller gets its own result
//! and its own revision.

use std::time::Duration;

use drover_model::command::{Command, CommandResult, Proposal};
use prometheus::Histogram;
use tokio::sync::watch;

use crate::batcher::Batcher;
use crate::leadership::Leadership;
use crate::network::protocol::LeaderResponse;
use crate::typ::Raft;

/// Entries proposed but not yet committed at once. Measured at 64 clients: 1 slot gave batches
/// of 32 and 3,500 writes/s, 2 slots batches of 20 and 4,200/s, 4 slots 3,300/s, 16 slots
/// batches of 3 and 2,400/s (each entry costs a serial fsync in the leader's core).
const IN_FLIGHT: usize = 2;
/// Most proposals in one entry: with `MAX_ENTRIES_PER_APPEND` entries per RPC, an RPC holds at
/// most about a thousand writes and stays well within the heartbeat-long RPC deadline.
const MAX_BATCH: usize = 64;

/// The leader's group commit in front of `raft`; `writes_per_entry` observes each entry's size.
///
/// A proposal's slot is free again after `answer_within`, and all slots are when `leadership`
/// changes: openraft 0.9 never answers an entry proposed by a leader that was cut off and then
/// caught up by a snapshot (the snapshot replaces the log without answering its waiting
/// callers), and two such entries held both slots, so that node, leader again in a later term,
/// committed nothing more — found by the simulation with the actors running.
pub(crate) fn group_commit(
    raft: Raft,
    writes_per_entry: Histogram,
    leadership: watch::Receiver<Leadership>,
    answer_within: Duration,
) -> Batcher<Proposal, LeaderResponse> {
    Batcher::start(IN_FLIGHT, MAX_BATCH, Some(leadership), move |proposals| {
        writes_per_entry.observe(proposals.len() as f64);
        Box::pin(commit(raft.clone(), proposals, answer_within))
    })
}

/// Proposes one entry for `proposals` and answers each of them, or says it may still commit
/// after `answer_within`.
async fn commit(raft: Raft, proposals: Vec<Proposal>, answer_within: Duration) -> Vec<LeaderResponse> {
    let count = proposals.len();
    let single = count == 1;
    let entry = if single {
        proposals
            .into_iter()
            .next()
            .unwrap_or_else(|| Proposal::new(Command::Noop))
    } else {
        Proposal {
            idempotency_key: None,
            idempotency_request: None,
            // The leader stamped each with its clock just before; the newest stands for all.
            now_ms: proposals.iter().map(|p| p.now_ms).max().unwrap_or(0),
            principal: None,
            command: Command::Batch { proposals },
        }
    };
    let Ok(written) = tokio::time::timeout(answer_within, raft.client_write(entry)).await else {
        let message = format!("not answered within {answer_within:?}; it may still commit");
        return vec![LeaderResponse::Failed { message }; count];
    };
    match written {
        Ok(response) => {
            let index = response.log_id.index;
            match response.data {
                CommandResult::Batch { results } if !single && results.len() == count => results
                    .into_iter()
                    .map(|result| LeaderResponse::Written { index, result })
                    .collect(),
                result if single => vec![LeaderResponse::Written { index, result }],
                other => {
                    let message = format!("a batch of {count} was answered with {other:?}");
                    vec![LeaderResponse::Failed { message }; count]
                }
            }
        }
        Err(e) => {
            let answer = match e.forward_to_leader() {
                Some(forward) => LeaderResponse::NotLeader {
                    leader: forward.leader_id,
                },
                None => LeaderResponse::Failed {
                    message: e.to_string(),
                },
            };
            vec![answer; count]
        }
    }
}
