//! The `Timer` trait and its contract (on the trait's docs), with the types it trades in.

use alloc::boxed::Box;
use alloc::vec::Vec;

use crate::{ConfigError, InsertError, StaleKeyError, TimerKey};

/// Time in ticks. The caller chooses the tick length (see [`TickClock`](crate::TickClock)).
pub type Tick = u64;

/// A timer that came due, returned by [`Timer::poll`] (or handed back by [`Timer::drain`]).
///
/// ```
/// use tickwheel::{Expired, IndexedHeap, Timer};
///
/// let mut timer = IndexedHeap::new();
/// let key = timer.insert(4, "ping").unwrap();
/// let Expired { key: k, deadline, payload } = timer.poll(4).unwrap();
/// assert_eq!((k, deadline, payload), (key, 4, "ping"));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Expired<T> {
    /// The key the timer had; it is stale now.
    pub key: TimerKey,
    /// The deadline the timer was due at, in ticks.
    pub deadline: Tick,
    /// The payload given at insert.
    pub payload: T,
}

/// Work counters, cheap enough to leave on. Counters an implementation has no use for stay 0.
///
/// ```
/// use tickwheel::{HierarchicalWheel, Timer};
///
/// let mut timer = HierarchicalWheel::new();
/// timer.insert(100, ()).unwrap();
/// while timer.poll(1_000).is_some() {}
/// let stats = timer.stats();
/// assert_eq!((stats.inserted, stats.fired), (1, 1));
/// assert!(stats.cascaded >= 1); // the timer moved down a level on its way out
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Timers accepted by `insert`.
    pub inserted: u64,
    /// Inserts refused because the timer was full.
    pub rejected: u64,
    /// Timers ended by `cancel`.
    pub cancelled: u64,
    /// Successful `reset` calls.
    pub reset: u64,
    /// Timers returned by `poll`.
    pub fired: u64,
    /// Timers handed back by `drain`.
    pub drained: u64,
    /// Hierarchical wheel: entries moved from a coarse slot to a finer one.
    pub cascaded: u64,
    /// Wheels: slots visited by `poll`.
    pub slots_scanned: u64,
    /// Lazy heap: dead (cancelled or reset) entries skipped at the top of the heap.
    pub stale_skipped: u64,
    /// Lazy heap: rebuilds from the live elements (when more than half as many were dead as
    /// live, or to renumber before the insertion counter wraps).
    pub compactions: u64,
    /// Wheels: polls that reached the tick `next_deadline` answers and found nothing due
    /// (not counting the poll that ends a run of fires): the wake-ups an event loop sleeping
    /// until `next_deadline` makes in vain (see [`Timer::next_deadline`] for how early an
    /// answer can be). Always 0 on the heaps, whose answer is exact.
    pub empty_wakeups: u64,
    /// The most work any one call did: for the wheels in units of one timer moved, one node or
    /// slot visited (the hashed wheel also counts each 64-slot word of its ring it looked at),
    /// for the indexed heap one element compared or moved, for the lazy heap one element pushed,
    /// popped or looked at by a rebuild. Each design's cost table states its bound
    /// ([`Timer::work_bound`]).
    pub max_call_work: u64,
}

/// Construction options shared by all implementations.
///
/// ```
/// use tickwheel::{FromOptions, HashedWheel, Options, Timer};
///
/// let timer: HashedWheel<u64> =
///     HashedWheel::from_options(Options::new().capacity(1_000).start(5_000)).unwrap();
/// assert_eq!(timer.capacity(), Some(1_000));
/// assert_eq!(timer.now(), 5_000);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Options {
    /// Most timers pending at once; `None` is unbounded (up to `u32::MAX - 1`).
    pub capacity: Option<usize>,
    /// The tick the timer starts at (its initial `now`).
    pub start: Tick,
    /// Timers to reserve memory for up front.
    pub preallocate: usize,
    /// Slots in a [`HashedWheel`](crate::HashedWheel) ring; a power of two in 64..=2²⁴.
    pub hashed_slots: usize,
}

impl Default for Options {
    fn default() -> Self {
        Self::new()
    }
}

impl Options {
    /// Unbounded, starting at tick 0, nothing preallocated, the default ring size.
    ///
    /// ```
    /// let options = tickwheel::Options::new();
    /// assert_eq!(options.capacity, None);
    /// ```
    #[must_use]
    pub const fn new() -> Self {
        Self {
            capacity: None,
            start: 0,
            preallocate: 0,
            hashed_slots: crate::HashedWheel::<()>::DEFAULT_SLOTS,
        }
    }

    /// Sets the capacity (0 is refused at construction with [`ConfigError::ZeroCapacity`]).
    ///
    /// ```
    /// assert_eq!(tickwheel::Options::new().capacity(8).capacity, Some(8));
    /// ```
    #[must_use]
    pub const fn capacity(mut self, capacity: usize) -> Self {
        self.capacity = Some(capacity);
        self
    }

    /// Sets the starting tick.
    ///
    /// ```
    /// assert_eq!(tickwheel::Options::new().start(1 << 40).start, 1 << 40);
    /// ```
    #[must_use]
    pub const fn start(mut self, start: Tick) -> Self {
        self.start = start;
        self
    }

    /// Reserves storage for this many timers.
    ///
    /// ```
    /// assert_eq!(tickwheel::Options::new().preallocate(1024).preallocate, 1024);
    /// ```
    #[must_use]
    pub const fn preallocate(mut self, timers: usize) -> Self {
        self.preallocate = timers;
        self
    }

    /// Sets the hashed wheel's ring size.
    ///
    /// ```
    /// assert_eq!(tickwheel::Options::new().hashed_slots(512).hashed_slots, 512);
    /// ```
    #[must_use]
    pub const fn hashed_slots(mut self, slots: usize) -> Self {
        self.hashed_slots = slots;
        self
    }

    pub(crate) fn validate(&self) -> Result<(), ConfigError> {
        if self.capacity == Some(0) {
            return Err(ConfigError::ZeroCapacity);
        }
        Ok(())
    }
}

/// Builds an implementation from [`Options`]; what generic code (the contract suite, the service)
/// uses to make a timer of a type it only knows as a parameter.
///
/// ```
/// use tickwheel::{FromOptions, LazyHeap, Options, Timer};
///
/// fn make<X: FromOptions + Timer<u32>>() -> X {
///     X::from_options(Options::new()).unwrap()
/// }
/// let timer: LazyHeap<u32> = make();
/// assert!(timer.is_empty());
/// ```
pub trait FromOptions: Sized {
    /// Builds a timer.
    ///
    /// # Errors
    /// [`ConfigError`] when an option is out of range (capacity 0, a bad ring size).
    fn from_options(options: Options) -> Result<Self, ConfigError>;
}

/// One timer structure holding payloads of type `T` at deadlines in ticks. Every design in
/// this crate keeps the contract below, so one operation sequence gives one fired sequence
/// on all of them and they can be swapped freely.
///
/// # The contract
/// 1. **Never early.** A timer is returned only by a `poll(now)` with `now >= deadline`.
/// 2. **Never lost, never twice.** Each inserted timer ends exactly once: returned by `poll`,
///    returned by `cancel`, or returned by `drain`. `len()` is exact after every call.
/// 3. **Complete.** Repeated `poll(now)` returns every timer with `deadline <= now` before it
///    returns `None`, whatever the jump from the previous `now`.
/// 4. **Ordered.** Timers come out by deadline, equal deadlines first-in first-out; a `reset`
///    counts as a new insertion. Every implementation gives the same order.
/// 5. **Stale and foreign keys are harmless.** A key whose timer ended gets `None` /
///    [`StaleKeyError`], even after its storage is reused; so does a key another timer issued
///    (each timer starts its key generations elsewhere on the `u32` circle: a foreign key is
///    accepted only after one slot has been reused about 2³² / (2.6 · n) times more in one
///    timer than in the other, among the first `n` timers of a process: 1.6 million reuses
///    for a thousand timers. On targets without 32-bit atomics keys are not bound to their
///    timer).
/// 6. **Bounded work per call.** `poll` returns one timer per call. The most work any one call
///    did is counted ([`Stats::max_call_work`]), and each design states its bound
///    ([`Timer::work_bound`]), which every call but `drain` and `shrink_to_fit` keeps: the
///    wheels a constant
///    ([`HierarchicalWheel::max_call_work_bound`](crate::HierarchicalWheel::max_call_work_bound),
///    `LEVELS · (MAX_LIST + 2 · LEVELS)` = 594 units, and
///    [`HashedWheel::max_call_work_bound`](crate::HashedWheel::max_call_work_bound)), the
///    indexed heap `(D + 1) · (h + 1) + 2` for a heap `h` levels deep, leaving out its
///    renumbering, once per `2^32` inserts and resets. The lazy heap's bound grows with the
///    timers, `n + max(n / 2, 64) + 2` for `n` pending at most: one call may pop every dead element
///    ordered just behind the earliest live one, or rebuild the heap
///    ([`LazyHeap`](crate::LazyHeap) gives the costs).
/// 7. **Next deadline.** `next_deadline()` is never later than the earliest pending deadline.
/// 8. **Any deadline.** Past deadlines fire at the next poll; `u64::MAX` is accepted.
/// 9. **Bounded when asked.** With a capacity, an insert beyond it is refused with the payload.
/// 10. **Observable.** [`Stats`] counts the work done.
///
/// Time is `u64` ticks passed in by the caller ([`Tick`]); a `now` lower than an earlier one is
/// treated as the earlier one (clocks stall and step back).
///
/// The trait is object safe: `Box<dyn Timer<T> + Send>` (from [`Kind::build`](crate::Kind::build))
/// implements it too, for code that picks an implementation at run time.
///
/// ```
/// use tickwheel::{HierarchicalWheel, Timer};
///
/// let mut timer = HierarchicalWheel::new();
/// let idle = timer.insert(30_000, "idle timeout").unwrap();
/// let request = timer.insert(5_000, "request deadline").unwrap();
/// timer.cancel(request);                 // the response arrived
/// timer.reset(idle, 31_000).unwrap();    // the connection was active: push idle out
/// assert_eq!(timer.poll(30_999), None);  // never early
/// assert_eq!(timer.poll(31_000).map(|e| e.payload), Some("idle timeout"));
/// ```
pub trait Timer<T> {
    /// Adds a timer due at `deadline` (any tick: a past one fires at the next poll).
    ///
    /// # Errors
    /// [`InsertError::Full`] with the payload when the timer is at capacity.
    fn insert(&mut self, deadline: Tick, payload: T) -> Result<TimerKey, InsertError<T>>;

    /// Removes a pending timer and returns its payload; `None` for a stale key.
    fn cancel(&mut self, key: TimerKey) -> Option<T>;

    /// Moves a pending timer to a new deadline (earlier, later or past). It then orders as a
    /// new insertion. The key stays valid.
    ///
    /// # Errors
    /// [`StaleKeyError`] when the key names no pending timer; nothing changes.
    fn reset(&mut self, key: TimerKey, deadline: Tick) -> Result<(), StaleKeyError>;

    /// Advances to `now` (a lower `now` than before counts as the earlier one) and returns the
    /// next timer due by then, or `None` when none is left.
    fn poll(&mut self, now: Tick) -> Option<Expired<T>>;

    /// A tick no later than the earliest pending deadline; `None` when empty. An event loop may
    /// sleep until then. How close the answer is:
    ///
    /// - the heaps: exactly the earliest deadline;
    /// - the hierarchical wheel: the earliest deadline, or the start of the slot it waits in
    ///   (level `k` slots span `64^k` ticks). A poll there cascades the slot a level down, so
    ///   a timer costs an event loop at most one early wake-up per level it crosses;
    /// - the hashed wheel: the earliest deadline when it computes the answer (a slot holds one
    ///   deadline); a cached answer that a cancel or reset made stale stays low until the next
    ///   poll past it.
    ///
    /// Polls that find nothing due at the answered tick are counted in
    /// [`Stats::empty_wakeups`].
    fn next_deadline(&self) -> Option<Tick>;

    /// The deadline of a pending timer, or `None` for a stale key.
    fn deadline(&self, key: TimerKey) -> Option<Tick>;

    /// The payload of a pending timer, or `None` for a stale key.
    fn get(&self, key: TimerKey) -> Option<&T>;

    /// The latest `now` seen (or the start tick).
    fn now(&self) -> Tick;

    /// Pending timers.
    fn len(&self) -> usize;

    /// No timers pending.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The capacity, or `None` when unbounded.
    fn capacity(&self) -> Option<usize>;

    /// Work counters.
    fn stats(&self) -> Stats;

    /// The most work one call may do, in [`Stats::max_call_work`] units, where the design
    /// states a bound (`None` where it states none): a constant for the wheels, a function of
    /// the most timers held so far for the heaps (each type's docs give the formula and the
    /// calls it leaves out). `stats().max_call_work` never exceeds it.
    ///
    /// ```
    /// use tickwheel::{HierarchicalWheel, IndexedHeap, LazyHeap, Timer};
    ///
    /// fn churn(timer: &mut dyn Timer<u64>) {
    ///     let keys: Vec<_> = (0..10_000).map(|i| timer.insert(i % 977, i).unwrap()).collect();
    ///     for key in keys.iter().step_by(3) {
    ///         timer.cancel(*key);
    ///     }
    ///     while timer.poll(1_000).is_some() {}
    ///     assert!(timer.stats().max_call_work <= timer.work_bound().unwrap());
    /// }
    /// churn(&mut HierarchicalWheel::new());
    /// churn(&mut IndexedHeap::new());
    /// churn(&mut LazyHeap::new());
    /// ```
    fn work_bound(&self) -> Option<u64> {
        None
    }

    /// Removes and returns every pending timer (for shutdown), in deadline order.
    fn drain(&mut self) -> Vec<Expired<T>>;

    /// Heap bytes held by the structure (its allocations, not counting what payloads own).
    fn allocated_bytes(&self) -> usize;

    /// Releases the memory the pending timers do not need, as after a burst has passed.
    /// Every key stays valid and nothing pending changes: no timer moves to a slot its key
    /// does not name, and the fired sequence is the same with or without the call.
    ///
    /// Afterwards [`allocated_bytes`](Self::allocated_bytes) is at most about twice what the
    /// pending timers need, plus the structure's fixed floor, as long as the live timers sit
    /// at low slab indices: inserts take a free slot from the lowest page of 1,024 slots that
    /// has one, so timers inserted after a burst do. A timer still pending from the burst's
    /// peak keeps the slots below it. O(n) (the hierarchical wheel: O(n log n), it places every timer anew); call it from
    /// a quiet moment, not per operation.
    ///
    /// ```
    /// use tickwheel::{IndexedHeap, Timer};
    ///
    /// let mut timer = IndexedHeap::new();
    /// let keep = timer.insert(5, u64::MAX).unwrap();
    /// let burst: Vec<_> = (0..100_000).map(|i| timer.insert(1_000 + i, i).unwrap()).collect();
    /// for key in burst {
    ///     timer.cancel(key);
    /// }
    /// let peak = timer.allocated_bytes();
    /// timer.shrink_to_fit();
    /// assert!(timer.allocated_bytes() * 10 < peak);
    /// assert_eq!(timer.poll(5).map(|e| (e.key, e.payload)), Some((keep, u64::MAX)));
    /// ```
    fn shrink_to_fit(&mut self);

    /// The implementation's short name (`hashed`, `hierarchical`, `heap`, `lazy-heap`).
    fn name(&self) -> &'static str;

    /// Asserts every invariant of the structure; panics with a description on the first broken
    /// one. O(n): for tests and debugging.
    fn check_invariants(&self);
}

impl<T, X: Timer<T> + ?Sized> Timer<T> for Box<X> {
    fn insert(&mut self, deadline: Tick, payload: T) -> Result<TimerKey, InsertError<T>> {
        (**self).insert(deadline, payload)
    }
    fn cancel(&mut self, key: TimerKey) -> Option<T> {
        (**self).cancel(key)
    }
    fn reset(&mut self, key: TimerKey, deadline: Tick) -> Result<(), StaleKeyError> {
        (**self).reset(key, deadline)
    }
    fn poll(&mut self, now: Tick) -> Option<Expired<T>> {
        (**self).poll(now)
    }
    fn next_deadline(&self) -> Option<Tick> {
        (**self).next_deadline()
    }
    fn deadline(&self, key: TimerKey) -> Option<Tick> {
        (**self).deadline(key)
    }
    fn get(&self, key: TimerKey) -> Option<&T> {
        (**self).get(key)
    }
    fn now(&self) -> Tick {
        (**self).now()
    }
    fn len(&self) -> usize {
        (**self).len()
    }
    fn capacity(&self) -> Option<usize> {
        (**self).capacity()
    }
    fn stats(&self) -> Stats {
        (**self).stats()
    }
    fn work_bound(&self) -> Option<u64> {
        (**self).work_bound()
    }
    fn drain(&mut self) -> Vec<Expired<T>> {
        (**self).drain()
    }
    fn allocated_bytes(&self) -> usize {
        (**self).allocated_bytes()
    }
    fn shrink_to_fit(&mut self) {
        (**self).shrink_to_fit();
    }
    fn name(&self) -> &'static str {
        (**self).name()
    }
    fn check_invariants(&self) {
        (**self).check_invariants();
    }
}
