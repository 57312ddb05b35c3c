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

use crate::leadership::Leadership;

/// One round: the answers to the items sent in it, in order.
pub(crate) type Round<A> = Pin<Box<dyn Future<Output = A> + Send>>;

struct Pending<T, A> {
    item: T,
    reply: oneshot::Sender<A>,
}

/// Most requests waiting for a batch; one more is refused at once (the caller answers `503`)
/// rather than queued without bound.
pub(crate) const MAX_QUEUED: usize = 16_384;

/// The queue in front of a batch function.
pub(crate) struct Batcher<T, A> {
    queue: mpsc::Sender<Pending<T, A>>,
}

impl<T, A> Clone for Batcher<T, A> {
    fn clone(&self) -> Self {
        Self {
            queue: self.queue.clone(),
        }
    }
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
        let (queue, pending) = mpsc::channel(MAX_QUEUED);
        tokio::spawn(drain(in_flight, max_batch, leadership, send, pending));
        Self { queue }
    }

    /// Sends `item` with the next batch and waits for its answer; `None` when the queue is
    /// full or the batcher stopped before answering.
    pub(crate) async fn submit(&self, item: T) -> Option<A> {
        let (reply, answer) = oneshot::channel();
        self.queue.try_send(Pending { item, reply }).ok()?;
        answer.await.ok()
    }
}

/// Rounds of `round`, at most `in_flight` at a time, each shared by every caller queued when it
/// starts (never by one that came after it started).
pub(crate) fn shared_rounds<A: Clone + Send + 'static>(
    in_flight: usize,
    leadership: Option<watch::Receiver<Leadership>>,
    round: impl Fn() -> Round<A> + Send + 'static,
) -> Batcher<(), A> {
    Batcher::start(in_flight, usize::MAX, leadership, move |sharing: Vec<()>| {
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
    mut pending: mpsc::Receiver<Pending<T, A>>,
) {
    let mut slots = Arc::new(Semaphore::new(in_flight));
    while let Some(first) = pending.recv().await {
        // Waiting for a slot is what lets the queue fill up.
        let slot = loop {
            // Biased: a free slot wins a tie, and no draw from the runtime's generator makes a
            // simulated run differ from its replay.
            tokio::select! {
                biased;
                slot = slots.clone().acquire_owned() => match slot {
                    Ok(slot) => break slot,
                    Err(_) => return,
                },
                () = leadership_changed(&mut leadership) => slots = Arc::new(Semaphore::new(in_flight)),
            }
        };
        // Callers that gave up (timed out) while queued are not proposed at all.
        let mut batch: Vec<_> = std::iter::once(first).filter(|p| !p.reply.is_closed()).collect();
        while batch.len() < max_batch {
            match pending.try_recv() {
                Ok(next) if next.reply.is_closed() => {}
                Ok(next) => batch.push(next),
                Err(_) => break,
            }
        }
        if batch.is_empty() {
            continue;
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

#[cfg(test)]
mod tests {
    use std::sync::Mutex;
    use std::time::Duration;

    use tokio::sync::Notify;

    use super::*;

    #[tokio::test]
    async fn items_whose_callers_gave_up_are_not_sent() {
        // Finding 10: proposals stayed queued, and were proposed, after their callers timed out.
        let gate = Arc::new(Notify::new());
        let sent = Arc::new(Mutex::new(Vec::<Vec<u32>>::new()));
        let batcher = {
            let (gate, sent) = (gate.clone(), sent.clone());
            Arc::new(Batcher::start(1, 100, None, move |items: Vec<u32>| {
                let (gate, sent) = (gate.clone(), sent.clone());
                Box::pin(async move {
                    sent.lock().unwrap_or_else(|p| p.into_inner()).push(items.clone());
                    gate.notified().await;
                    items
                })
            }))
        };
        let first = tokio::spawn({
            let batcher = batcher.clone();
            async move { batcher.submit(1).await }
        });
        tokio::time::timeout(Duration::from_secs(5), async {
            while sent.lock().unwrap_or_else(|p| p.into_inner()).is_empty() {
                tokio::task::yield_now().await;
            }
        })
        .await
        .expect("the first round starts");
        // Queued behind the first round, then abandoned by its caller.
        let abandoned = tokio::time::timeout(Duration::from_millis(50), batcher.submit(2)).await;
        assert!(abandoned.is_err());
        let third = tokio::spawn({
            let batcher = batcher.clone();
            async move { batcher.submit(3).await }
        });
        // The drain task holds the abandoned item while it waits for a slot; the third waits
        // in the queue.
        tokio::time::timeout(Duration::from_secs(5), async {
            while batcher.queue.capacity() == MAX_QUEUED {
                tokio::task::yield_now().await;
            }
        })
        .await
        .expect("the third item is queued");
        gate.notify_one();
        assert_eq!(first.await.expect("joined"), Some(1));
        tokio::time::timeout(Duration::from_secs(5), async {
            while sent.lock().unwrap_or_else(|p| p.into_inner()).len() < 2 {
                tokio::task::yield_now().await;
            }
        })
        .await
        .expect("the second round starts");
        gate.notify_one();
        assert_eq!(third.await.expect("joined"), Some(3));
        assert_eq!(
            *sent.lock().unwrap_or_else(|p| p.into_inner()),
            vec![vec![1], vec![3]]
        );
    }
}
