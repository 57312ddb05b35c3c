//! Batching of concurrent requests into shared rounds, with a few rounds in flight.
//!
//! On the leader it is group commit: openraft 0.9 appends one log entry at a time and waits for
//! its disk sync before the next (and before replicating it), so one entry per request caps
//! writes at one per fsync. The proposals that reach the leader are queued, and whenever one of
//! two in-flight slots is free everything queued becomes one entry (`Command::Batch`): the writes
//! that arrive while the previous entries are being synced and replicated share the next append,
//! sync and replication round. On a follower it is group forwarding: the writes its clients send
//! together travel to the leader in one peer request. Each caller still gets its own answer.
//!
//! Read-index rounds ([`shared_rounds`]) are the same with one round at a time and one answer
//! for everyone in it: a linearizable read needs the leader to confirm with a quorum that it
//! still leads (openraft's `get_read_log_id`, one heartbeat round), and on a follower also a
//! request to the leader for that. Every read queued when a round starts shares it: the round
//! still begins after each of them arrived, which is all linearizability asks.
//!
//! A batcher that talks to the leader starts afresh when the leadership changes: batches still
//! waiting on a leader that is gone keep their slots until they time out, and must not hold up
//! the requests that can go to the new one.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use tokio::sync::{mpsc, oneshot, watch, Semaphore};

use crate::handle::Leadership;

/// One round: the answers to the items sent in it, in order.
pub(crate) type Round<A> = Pin<Box<dyn Future<Output = A> + Send>>;

struct Pending<T, A> {
    item: T,
    reply: oneshot::Sender<A>,
}

/// The queue in front of a batch function.
pub(crate) struct Batcher<T, A> {
    queue: mpsc::UnboundedSender<Pending<T, A>>,
}

impl<T: Send + 'static, A: Send + 'static> Batcher<T, A> {
    /// Starts the task that drains the queue: at most `in_flight` batches of at most `max_batch`
    /// items at once (afresh after each change of `leadership`, when given), each sent with
    /// `send`, which answers every item in order. The task ends when the batcher is dropped.
    pub(crate) fn start(
        in_flight: usize,
        max_batch: usize,
        leadership: Option<watch::Receiver<Leadership>>,
        send: impl Fn(Vec<T>) -> Round<Vec<A>> + Send + 'static,
    ) -> Self {
        let (queue, pending) = mpsc::unbounded_channel();
        tokio::spawn(drain(in_flight, max_batch, leadership, send, pending));
        Self { queue }
    }

    /// Sends `item` with the next batch and waits for its answer; `None` when the batcher
    /// stopped before answering.
    pub(crate) async fn submit(&self, item: T) -> Option<A> {
        let (reply, answer) = oneshot::channel();
        self.queue.send(Pending { item, reply }).ok()?;
        answer.await.ok()
    }
}

/// Rounds of `round`, one at a time, each shared by every caller queued when it starts.
pub(crate) fn shared_rounds<A: Clone + Send + 'static>(
    leadership: Option<watch::Receiver<Leadership>>,
    round: impl Fn() -> Round<A> + Send + 'static,
) -> Batcher<(), A> {
    Batcher::start(1, usize::MAX, leadership, move |sharing: Vec<()>| {
        let round = round();
        Box::pin(async move { vec![round.await; sharing.len()] })
    })
}

/// Resolves at the next change of `leadership`; never without one.
async fn leadership_changed(leadership: &mut Option<watch::Receiver<Leadership>>) {
    let changed = match leadership {
        Some(receiver) => receiver.changed().await.is_ok(),
        None => false,
    };
    if !changed {
        std::future::pending::<()>().await;
    }
}

async fn drain<T: Send + 'static, A: Send + 'static>(
    in_flight: usize,
    max_batch: usize,
    mut leadership: Option<watch::Receiver<Leadership>>,
    send: impl Fn(Vec<T>) -> Round<Vec<A>>,
    mut pending: mpsc::UnboundedReceiver<Pending<T, A>>,
) {
    let mut slots = Arc::new(Semaphore::new(in_flight));
    while let Some(first) = pending.recv().await {
        // Waiting for a slot is what lets the queue fill up.
        let slot = loop {
            tokio::select! {
                slot = slots.clone().acquire_owned() => match slot {
                    Ok(slot) => break slot,
                    Err(_) => return,
                },
                () = leadership_changed(&mut leadership) => slots = Arc::new(Semaphore::new(in_flight)),
            }
        };
        let mut batch = vec![first];
        while batch.len() < max_batch {
            match pending.try_recv() {
                Ok(next) => batch.push(next),
                Err(_) => break,
            }
        }
        let (items, replies): (Vec<T>, Vec<_>) = batch.into_iter().map(|p| (p.item, p.reply)).unzip();
        let round = send(items);
        tokio::spawn(async move {
            let answers = round.await;
            for (reply, answer) in replies.into_iter().zip(answers) {
                // A caller that gave up no longer listens.
                let _ = reply.send(answer);
            }
            drop(slot);
        });
    }
}
