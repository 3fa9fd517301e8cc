//! The [`Adapter`] trait: the operations every workload needs, one implementation per structure.
//!
//! Fairness rules every adapter keeps:
//! - the same deadlines (ticks of 1 ms from the structure's start) and the same payloads (`u64`);
//! - no work hidden outside the timed region that a user would pay inside it (a peer without
//!   `reset` does what a user would: cancel, then insert a new timer, and returns the new key);
//! - `with_capacity` reserves space where the structure offers it, so growth is not timed for
//!   one structure and free for another more than the structure itself decides.
//! - every operation is `#[inline(always)]`: an adapter is a shim the benchmark adds, so it must
//!   not decide what gets inlined into the workload's loop. What a user's direct call would
//!   inline is then decided by the structure's own code, for every structure alike.

pub(crate) mod binary_heap;
pub(crate) mod btree;
pub(crate) mod delay_queue;
pub(crate) mod floor;
pub(crate) mod hhwt;
pub(crate) mod tickwheel;
pub(crate) mod timer_queue;

/// One timer structure as the workloads drive it. Deadlines and `now` are ticks (1 ms).
pub trait Adapter: Sized + std::fmt::Debug {
    /// What `insert` hands back to cancel or reset the timer later.
    type Key: Copy + std::fmt::Debug;

    /// The name in reports (`tw-…` for tickwheel's own).
    const NAME: &'static str;

    /// `true` for tickwheel's implementations, `false` for the peers.
    const IS_TICKWHEEL: bool;

    /// `true` when `reset` is the structure's own operation, `false` when emulated.
    const NATIVE_RESET: bool;

    /// An empty structure at tick 0, with room reserved for `capacity` timers where possible.
    fn with_capacity(capacity: usize) -> Self;

    /// Adds a timer due at `deadline` (greater than the current tick).
    fn insert(&mut self, deadline: u64, payload: u64) -> Self::Key;

    /// Removes a pending timer; `true` when it was pending.
    fn cancel(&mut self, key: Self::Key) -> bool;

    /// Moves a pending timer to `deadline` and returns its key (a new one when emulated by
    /// cancel + insert, which is why the payload is passed again).
    fn reset(&mut self, key: Self::Key, deadline: u64, payload: u64) -> Self::Key;

    /// Advances to `now` and returns the payload of one timer due by then.
    fn poll(&mut self, now: u64) -> Option<u64>;

    /// A tick no later than the earliest pending deadline; `None` when empty.
    fn next_deadline(&mut self) -> Option<u64>;

    /// One event-loop turn with nothing due: `poll(now)`, then ask how long to sleep.
    ///
    /// By default `poll` + `next_deadline`. A structure whose runtime already tracks its next
    /// wake-up (tokio's `DelayQueue`) overrides this with what its users actually call.
    #[inline(always)]
    fn idle_turn(&mut self, now: u64) -> Option<u64> {
        std::hint::black_box(self.poll(now));
        self.next_deadline()
    }

    /// Pending timers.
    fn len(&self) -> usize;

    /// `true` when no timer is pending.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Heap bytes the structure reports for itself, when it can.
    fn allocated_bytes(&self) -> Option<usize> {
        None
    }

    /// Runs `f` in the context the structure needs (tokio's runtime for `DelayQueue`), the way
    /// user code already runs inside it. Workloads enter it once around a whole timed loop.
    fn scope<R>(&mut self, f: impl FnOnce(&mut Self) -> R) -> R {
        f(self)
    }
}
