//! Shared read-index rounds. A linearizable read needs the leader to confirm with a quorum that
//! it still leads (openraft's `get_read_log_id`, one heartbeat round); on a follower it also
//! needs a request to the leader for that. Reads that arrive while a round is under way wait
//! for the next one, and every read queued when a round starts shares it: the round still
//! begins after each of them arrived, which is all linearizability asks, and a burst of reads
//! costs one round instead of one each. Every node runs one of these in front of the leader
//! (one forwarded request per round from a follower), and the leader runs another in front of
//! its quorum rounds (one round for the reads of every node).

use std::future::Future;
use std::pin::Pin;

use tokio::sync::{mpsc, oneshot};

/// One round: what it answers every read that shared it.
pub(crate) type Round<A> = Pin<Box<dyn Future<Output = A> + Send>>;

/// The queue in front of a round function.
pub(crate) struct ReadBatcher<A> {
    queue: mpsc::UnboundedSender<oneshot::Sender<A>>,
}

impl<A: Clone + Send + 'static> ReadBatcher<A> {
    /// Starts the task that runs the rounds, one at a time. It ends when the batcher is dropped.
    pub(crate) fn start(round: impl Fn() -> Round<A> + Send + 'static) -> Self {
        let (queue, waiting) = mpsc::unbounded_channel();
        tokio::spawn(run_rounds(round, waiting));
        Self { queue }
    }

    /// The answer of a round that starts after this call; `None` when the batcher has stopped.
    pub(crate) async fn read_index(&self) -> Option<A> {
        let (reply, answer) = oneshot::channel();
        self.queue.send(reply).ok()?;
        answer.await.ok()
    }
}

async fn run_rounds<A: Clone>(
    round: impl Fn() -> Round<A>,
    mut waiting: mpsc::UnboundedReceiver<oneshot::Sender<A>>,
) {
    while let Some(first) = waiting.recv().await {
        let mut sharing = vec![first];
        while let Ok(next) = waiting.try_recv() {
            sharing.push(next);
        }
        let answer = round().await;
        for reply in sharing {
            // A reader that gave up no longer listens.
            let _ = reply.send(answer.clone());
        }
    }
}
