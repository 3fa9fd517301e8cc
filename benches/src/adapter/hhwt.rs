//! `hierarchical_hash_wheel_timer`'s cancellable `QuadWheelWithOverflow`: four byte-wide wheels
//! (256 slots each) plus an overflow list, entries behind `Rc` with `Weak` references in the
//! slots and an Fx hash map from id to entry.
//!
//! The wheel takes delays relative to its own time and moves one tick per `tick()` (or several
//! empty ticks per `skip`), returning every entry due at that tick in a `Vec`. The adapter keeps
//! the wheel's tick, skips ahead where `can_skip` allows, ticks otherwise, and hands the fired
//! entries out one per `poll` from a buffer. Cancel removes the id from the map only (the crate's
//! lazy design); the `Weak` and the entry's allocation stay until the wheel ticks past the slot.
//! The crate has no reset: a user cancels and inserts a new entry under a new id.

use std::collections::VecDeque;
use std::time::Duration;

use hierarchical_hash_wheel_timer::wheels::cancellable::{
    CancellableTimerEntry, QuadWheelWithOverflow,
};
use hierarchical_hash_wheel_timer::wheels::{Skip, TimerEntryWithDelay};
use hierarchical_hash_wheel_timer::TimerError;

use super::Adapter;

/// A timer entry: the id the map is keyed by, the delay it was scheduled with, the payload.
#[derive(Debug)]
pub(crate) struct Entry {
    id: u64,
    delay: Duration,
    payload: u64,
}

impl CancellableTimerEntry for Entry {
    type Id = u64;

    fn id(&self) -> &u64 {
        &self.id
    }
}

impl TimerEntryWithDelay for Entry {
    fn delay(&self) -> Duration {
        self.delay
    }
}

/// `QuadWheelWithOverflow<Entry>` with a tick counter and a buffer of fired payloads.
pub struct HhwtAdapter {
    wheel: QuadWheelWithOverflow<Entry>,
    /// The wheel's current tick.
    now: u64,
    next_id: u64,
    /// Fired payloads not yet handed out by `poll`.
    ready: VecDeque<u64>,
    /// Pending timers (the crate does not count them).
    live: usize,
}

impl std::fmt::Debug for HhwtAdapter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HhwtAdapter")
            .field("now", &self.now)
            .field("live", &self.live)
            .finish_non_exhaustive()
    }
}

impl HhwtAdapter {
    /// Moves the wheel to `now`, buffering what fires, and stops at the first tick that fired.
    fn advance(&mut self, now: u64) {
        while self.now < now && self.ready.is_empty() {
            match self.wheel.can_skip() {
                Skip::Empty => {
                    let step = (now - self.now).min(u64::from(u32::MAX));
                    self.wheel.skip(step as u32);
                    self.now += step;
                }
                Skip::Millis(ms) => {
                    let step = (now - self.now).min(u64::from(ms));
                    self.wheel.skip(step as u32);
                    self.now += step;
                }
                Skip::None => {}
            }
            if self.now < now {
                self.now += 1;
                for entry in self.wheel.tick() {
                    self.ready.push_back(entry.payload);
                }
            }
        }
    }
}

impl Adapter for HhwtAdapter {
    type Key = u64;
    const NAME: &'static str = "hhwt";
    const IS_TICKWHEEL: bool = false;
    const NATIVE_RESET: bool = false;

    fn with_capacity(_capacity: usize) -> Self {
        Self {
            wheel: QuadWheelWithOverflow::new(),
            now: 0,
            next_id: 0,
            ready: VecDeque::new(),
            live: 0,
        }
    }

    #[inline(always)]
    fn insert(&mut self, deadline: u64, payload: u64) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        let entry = Entry {
            id,
            delay: Duration::from_millis(deadline.saturating_sub(self.now)),
            payload,
        };
        match self.wheel.insert(entry) {
            Ok(()) => {}
            // A deadline at or before the wheel's tick: due at once.
            Err(TimerError::Expired(entry)) => self.ready.push_back(entry.payload),
            Err(TimerError::NotFound) => unreachable!("insert never reports NotFound"),
        }
        self.live += 1;
        id
    }

    #[inline(always)]
    fn cancel(&mut self, key: u64) -> bool {
        let cancelled = self.wheel.cancel(&key).is_ok();
        self.live -= usize::from(cancelled);
        cancelled
    }

    #[inline(always)]
    fn reset(&mut self, key: u64, deadline: u64, payload: u64) -> u64 {
        self.cancel(key);
        self.insert(deadline, payload)
    }

    #[inline(always)]
    fn poll(&mut self, now: u64) -> Option<u64> {
        if self.ready.is_empty() {
            self.advance(now);
        }
        let payload = self.ready.pop_front()?;
        self.live = self.live.saturating_sub(1);
        Some(payload)
    }

    #[inline(always)]
    fn next_deadline(&mut self) -> Option<u64> {
        if !self.ready.is_empty() {
            return Some(self.now);
        }
        match self.wheel.can_skip() {
            Skip::Empty => None,
            Skip::None => Some(self.now + 1),
            Skip::Millis(ms) => Some(self.now + u64::from(ms) + 1),
        }
    }

    fn len(&self) -> usize {
        self.live
    }
}
