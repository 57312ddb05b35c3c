//! Shared read-index rounds on the leader. A linearizable read needs the leader to confirm with
//! a quorum that it still leads (openraft's `get_read_log_id`, one heartbeat round). Reads that
//! arrive while a round is under way wait for the next one, and every read queued when a round
//! starts shares it: the round still begins after each of them arrived, which is all
//! linearizability asks, and a burst of reads costs one round instead of one each.

use tokio::sync::{mpsc, oneshot};

use crate::network::protocol::LeaderResponse;
use crate::typ::Raft;

/// The queue in front of `Raft::get_read_log_id`.
pub(crate) struct ReadBatcher {
    queue: mpsc::UnboundedSender<oneshot::Sender<LeaderResponse>>,
}

impl ReadBatcher {
    /// Starts the task that runs the rounds. It ends when the batcher is dropped.
    pub(crate) fn start(raft: Raft) -> Self {
        let (queue, waiting) = mpsc::unbounded_channel();
        tokio::spawn(run_rounds(raft, waiting));
        Self { queue }
    }

    /// The read index of a round that starts after this call.
    pub(crate) async fn read_index(&self) -> LeaderResponse {
        let (reply, answer) = oneshot::channel();
        let stopped = || LeaderResponse::Refused {
            message: "this node is shutting down".to_string(),
        };
        if self.queue.send(reply).is_err() {
            return stopped();
        }
        answer.await.unwrap_or_else(|_| stopped())
    }
}

async fn run_rounds(raft: Raft, mut waiting: mpsc::UnboundedReceiver<oneshot::Sender<LeaderResponse>>) {
    while let Some(first) = waiting.recv().await {
        let mut round = vec![first];
        while let Ok(next) = waiting.try_recv() {
            round.push(next);
        }
        let answer = match raft.get_read_log_id().await {
            Ok((read_log_id, _)) => LeaderResponse::ReadIndex {
                index: read_log_id.map_or(0, |id| id.index),
            },
            Err(e) => match e.forward_to_leader() {
                Some(forward) => LeaderResponse::NotLeader {
                    leader: forward.leader_id,
                },
                None => LeaderResponse::Refused {
                    message: e.to_string(),
                },
            },
        };
        for reply in round {
            // A reader that gave up no longer listens.
            let _ = reply.send(answer.clone());
        }
    }
}
