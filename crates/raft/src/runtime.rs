//! openraft on tokio, with the one difference the simulator needs: the randomness behind
//! election timeouts comes from a generator a run can seed, so a seed replays exactly.
//! Outside the simulator it is seeded from the OS, as openraft's own tokio runtime is.

use std::cell::RefCell;
use std::future::Future;
use std::time::Duration;

use openraft::async_runtime::TokioOneShotSender;
use openraft::{AsyncRuntime, OptionalSend, TokioInstant};
use rand08::rngs::SmallRng;
use rand08::{RngCore, SeedableRng};

thread_local! {
    /// The generator every election timeout on this thread is drawn from. The simulator
    /// runs every node on one thread, so one seed orders them all.
    static RNG: RefCell<SmallRng> = RefCell::new(SmallRng::from_entropy());
}

/// Seeds this thread's election-timeout generator (the simulator, once per run).
pub fn seed_elections(seed: u64) {
    RNG.with(|r| *r.borrow_mut() = SmallRng::seed_from_u64(seed));
}

/// A generator forked from the thread's: each call advances the thread's, so successive
/// timeouts differ and a seeded thread draws the same ones every run.
fn fork() -> SmallRng {
    RNG.with(|r| SmallRng::seed_from_u64(r.borrow_mut().next_u64()))
}

#[derive(Debug, Default, PartialEq, Eq)]
pub struct Runtime;

impl AsyncRuntime for Runtime {
    type JoinError = tokio::task::JoinError;
    type JoinHandle<T: OptionalSend + 'static> = tokio::task::JoinHandle<T>;
    type Sleep = tokio::time::Sleep;
    type Instant = TokioInstant;
    type TimeoutError = tokio::time::error::Elapsed;
    type Timeout<R, T: Future<Output = R> + OptionalSend> = tokio::time::Timeout<T>;
    type ThreadLocalRng = SmallRng;
    type OneshotSender<T: OptionalSend> = TokioOneShotSender<T>;
    type OneshotReceiverError = tokio::sync::oneshot::error::RecvError;
    type OneshotReceiver<T: OptionalSend> = tokio::sync::oneshot::Receiver<T>;

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
        fork()
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
    use rand08::Rng;

    #[test]
    fn a_seeded_thread_draws_the_same_timeouts_every_time() {
        let draw = || -> Vec<u64> {
            (0..5)
                .map(|_| Runtime::thread_rng().gen_range(150..300))
                .collect()
        };
        seed_elections(7);
        let first = draw();
        seed_elections(7);
        assert_eq!(draw(), first);
        assert!(first.windows(2).any(|w| w[0] != w[1]), "{first:?}");
    }
}
