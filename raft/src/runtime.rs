//! openraft's async runtime for Drover: tokio's, with the random numbers openraft draws (its
//! election timeouts, and the elector's) taken from a per-thread source that a simulation can
//! replace with its seed. Unless [`draw_from`] was called on a thread, its draws come from the
//! operating system's entropy, as with openraft's own `TokioRuntime`.

use std::cell::RefCell;
use std::future::Future;
use std::time::Duration;

use openraft::async_runtime::TokioOneShotSender;
use openraft::{AsyncRuntime, OptionalSend, TokioInstant};
use rand::rngs::SmallRng;
use rand::{RngCore, SeedableRng};

/// Where a thread's draws come from: 64 random bits per call.
type Source = Box<dyn FnMut() -> u64>;

thread_local! {
    static SOURCE: RefCell<Option<Source>> = const { RefCell::new(None) };
}

/// Makes every draw openraft (and the elector) takes on this thread come from `source`, so that
/// a simulation stepping all its hosts on one thread replays one seed's timeouts exactly.
pub fn draw_from(source: impl FnMut() -> u64 + 'static) {
    SOURCE.with(|slot| *slot.borrow_mut() = Some(Box::new(source)));
}

/// The next 64 bits of this thread's source, seeded from entropy on first use when the thread
/// was given none.
fn next_seed() -> u64 {
    SOURCE.with(|slot| {
        let mut slot = slot.borrow_mut();
        let source = slot.get_or_insert_with(|| {
            let mut entropy = SmallRng::from_entropy();
            Box::new(move || entropy.next_u64())
        });
        source()
    })
}

/// A generator for one of openraft's draws, seeded from this thread's source.
pub struct DrawnRng(SmallRng);

impl RngCore for DrawnRng {
    fn next_u32(&mut self) -> u32 {
        self.0.next_u32()
    }

    fn next_u64(&mut self) -> u64 {
        self.0.next_u64()
    }

    fn fill_bytes(&mut self, dest: &mut [u8]) {
        self.0.fill_bytes(dest)
    }

    fn try_fill_bytes(&mut self, dest: &mut [u8]) -> Result<(), rand::Error> {
        self.0.try_fill_bytes(dest)
    }
}

/// tokio, with randomness from [`draw_from`]'s source.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct DroverRuntime;

impl AsyncRuntime for DroverRuntime {
    type JoinError = tokio::task::JoinError;
    type JoinHandle<T: OptionalSend + 'static> = tokio::task::JoinHandle<T>;
    type Sleep = tokio::time::Sleep;
    type Instant = TokioInstant;
    type TimeoutError = tokio::time::error::Elapsed;
    type Timeout<R, T: Future<Output = R> + OptionalSend> = tokio::time::Timeout<T>;
    type ThreadLocalRng = DrawnRng;
    type OneshotSender<T: OptionalSend> = TokioOneShotSender<T>;
    type OneshotReceiver<T: OptionalSend> = tokio::sync::oneshot::Receiver<T>;
    type OneshotReceiverError = tokio::sync::oneshot::error::RecvError;

    fn spawn<T>(future: T) -> Self::JoinHandle<T::Output>
    where
        T: Future + OptionalSend + 'static,
        T::Output: OptionalSend + 'static,
    {
        tokio::task::spawn(future)
    }

    fn sleep(duration: Duration) -> Self::Sleep {
        tokio::time::sleep(duration)
    }

    fn sleep_until(deadline: Self::Instant) -> Self::Sleep {
        tokio::time::sleep_until(deadline)
    }

    fn timeout<R, F: Future<Output = R> + OptionalSend>(
        duration: Duration,
        future: F,
    ) -> Self::Timeout<R, F> {
        tokio::time::timeout(duration, future)
    }

    fn timeout_at<R, F: Future<Output = R> + OptionalSend>(
        deadline: Self::Instant,
        future: F,
    ) -> Self::Timeout<R, F> {
        tokio::time::timeout_at(deadline, future)
    }

    fn is_panic(join_error: &Self::JoinError) -> bool {
        join_error.is_panic()
    }

    fn thread_rng() -> Self::ThreadLocalRng {
        DrawnRng(SmallRng::seed_from_u64(next_seed()))
    }

    fn oneshot<T>() -> (Self::OneshotSender<T>, Self::OneshotReceiver<T>)
    where
        T: OptionalSend,
    {
        let (tx, rx) = tokio::sync::oneshot::channel();
        (TokioOneShotSender(tx), rx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn timeouts(count: usize) -> Vec<u64> {
        let config = openraft::Config::default();
        (0..count)
            .map(|_| config.new_rand_election_timeout::<DroverRuntime>())
            .collect()
    }

    fn seeded(seed: u64) -> Vec<u64> {
        // Each test runs on its own thread: the source set here is this test's alone.
        let mut state = seed;
        draw_from(move || {
            state = state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            state
        });
        timeouts(8)
    }

    #[test]
    fn one_source_one_sequence_of_election_timeouts() {
        let first = seeded(7);
        assert_eq!(first, seeded(7));
        assert_ne!(first, seeded(8));
    }

    #[test]
    fn without_a_source_timeouts_still_vary() {
        let drawn = timeouts(16);
        let config = openraft::Config::default();
        assert!(drawn
            .iter()
            .all(|t| (config.election_timeout_min..config.election_timeout_max).contains(t)));
        assert!(drawn.iter().any(|t| *t != drawn[0]), "{drawn:?}");
    }
}
