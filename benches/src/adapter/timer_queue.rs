//! `timer-queue`: a hierarchical wheel (64-slot levels) with intrusive lists in a slab.

use timer_queue::{Timer, TimerQueue};

use super::Adapter;

/// Drives `timer_queue::TimerQueue<u64>`; every operation is native.
#[derive(Debug)]
pub struct TimerQueueAdapter(TimerQueue<u64>);

impl Adapter for TimerQueueAdapter {
    type Key = Timer;
    const NAME: &'static str = "timer-queue";
    const IS_TICKWHEEL: bool = false;
    const NATIVE_RESET: bool = true;

    fn with_capacity(capacity: usize) -> Self {
        Self(TimerQueue::with_capacity(capacity))
    }

    #[inline(always)]
    fn insert(&mut self, deadline: u64, payload: u64) -> Timer {
        self.0.insert(deadline, payload)
    }

    #[inline(always)]
    fn cancel(&mut self, key: Timer) -> bool {
        // `remove` panics on a stale handle; the workloads only cancel pending timers.
        self.0.remove(key);
        true
    }

    #[inline(always)]
    fn reset(&mut self, key: Timer, deadline: u64, _payload: u64) -> Timer {
        self.0.reset(key, deadline);
        key
    }

    #[inline(always)]
    fn poll(&mut self, now: u64) -> Option<u64> {
        self.0.poll(now)
    }

    #[inline(always)]
    fn next_deadline(&mut self) -> Option<u64> {
        self.0.next_timeout()
    }

    fn len(&self) -> usize {
        self.0.len()
    }
}
