//! tokio-util's `DelayQueue` (tokio's hierarchical wheel over a slab), driven the way a tokio
//! application drives it, but on a clock we move by hand.
//!
//! Each adapter owns a current-thread runtime started with a paused clock, so time moves only
//! when `poll` asks for a later tick: `tokio::time::advance` (run by `block_on`) moves the clock
//! and lets the time driver fire the queue's `Sleep`; then `poll_expired` is called with a no-op
//! waker. Deadlines are `Instant`s at `base + ticks` ms, `base` being the clock at creation.
//! Everything runs inside the runtime's context ([`Adapter::scope`]), entered once around a
//! timed loop, as code in a tokio task already is.

use std::task::{Context, Poll, Waker};
use std::time::Duration;

use tokio::runtime::{Builder, Runtime};
use tokio::time::Instant;
use tokio_util::time::delay_queue::{DelayQueue, Key};

use super::Adapter;

/// `DelayQueue<u64>` on its own paused current-thread tokio runtime.
#[derive(Debug)]
pub struct DelayQueueAdapter {
    queue: DelayQueue<u64>,
    /// The tokio clock at tick 0.
    base: Instant,
    /// The tick the clock has been advanced to.
    now: u64,
    // Dropped last: the queue's `Sleep` belongs to this runtime's time driver.
    runtime: Runtime,
}

impl Adapter for DelayQueueAdapter {
    type Key = Key;
    const NAME: &'static str = "tokio-delayqueue";
    const IS_TICKWHEEL: bool = false;
    const NATIVE_RESET: bool = true;

    fn with_capacity(capacity: usize) -> Self {
        let runtime = Builder::new_current_thread()
            .enable_time()
            .start_paused(true)
            .build()
            .expect("a current-thread runtime");
        let (queue, base) = {
            let _guard = runtime.enter();
            (DelayQueue::with_capacity(capacity), Instant::now())
        };
        Self {
            queue,
            base,
            now: 0,
            runtime,
        }
    }

    #[inline(always)]
    fn insert(&mut self, deadline: u64, payload: u64) -> Key {
        self.queue
            .insert_at(payload, self.base + Duration::from_millis(deadline))
    }

    #[inline(always)]
    fn cancel(&mut self, key: Key) -> bool {
        self.queue.try_remove(&key).is_some()
    }

    #[inline(always)]
    fn reset(&mut self, key: Key, deadline: u64, _payload: u64) -> Key {
        self.queue
            .reset_at(&key, self.base + Duration::from_millis(deadline));
        key
    }

    #[inline(always)]
    fn poll(&mut self, now: u64) -> Option<u64> {
        if now > self.now {
            let step = Duration::from_millis(now - self.now);
            self.runtime.block_on(tokio::time::advance(step));
            self.now = now;
        }
        let mut cx = Context::from_waker(Waker::noop());
        match self.queue.poll_expired(&mut cx) {
            Poll::Ready(Some(expired)) => Some(expired.into_inner()),
            Poll::Ready(None) | Poll::Pending => None,
        }
    }

    #[inline(always)]
    fn next_deadline(&mut self) -> Option<u64> {
        let key = self.queue.peek()?;
        let at = self.queue.deadline(&key);
        Some(at.saturating_duration_since(self.base).as_millis() as u64)
    }

    /// `poll_expired` only: in a tokio application the queue's own `Sleep`, registered with
    /// the runtime's timer, decides when the task wakes, so nobody asks the queue for its next
    /// deadline. (`peek` would walk a whole wheel slot: tens of µs at 100k timers.)
    #[inline(always)]
    fn idle_turn(&mut self, now: u64) -> Option<u64> {
        std::hint::black_box(self.poll(now));
        None
    }

    fn len(&self) -> usize {
        self.queue.len()
    }

    fn scope<R>(&mut self, f: impl FnOnce(&mut Self) -> R) -> R {
        let handle = self.runtime.handle().clone();
        let _guard = handle.enter();
        f(self)
    }
}
