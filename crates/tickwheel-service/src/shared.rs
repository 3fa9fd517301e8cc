//! The state every handle and the driver share: the shards, the clock, the wake-up word.
//!
//! # Invariants
//! - Each scheduled timer is in exactly one shard's timer until it leaves it exactly once: by
//!   `cancel` (the canceller gets the payload), by the driver's `poll` (it will be delivered),
//!   or by the shutdown drain (handed back). All three happen under that shard's lock, so a
//!   cancel racing a fire has exactly one winner.
//! - No user code runs while a shard lock is held: payloads are moved out before the guard
//!   drops, and deliveries happen after the driver released every lock.
//! - `wake_at` is [`AWAKE`] while the driver runs; otherwise it is the tick the driver will
//!   look again on its own (`u64::MAX`: never). A producer that adds a deadline before it
//!   swaps it to `AWAKE` and unparks the driver; the swap makes sure only one producer pays
//!   the syscall per sleep.
//! - Once a shard is `closed` it stays closed and empty.
//! - Once a shard is `failed` (a panic unwound out of one of its `Timer` methods, on any
//!   thread) no method of its timer runs again except one `drain` at shutdown, itself under
//!   `catch_unwind`: every schedule goes to another shard, and a cancel or reset of one of its
//!   keys gets [`KeyError::Failed`].

use std::cell::Cell;
use std::marker::PhantomData;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::OnceLock;
use std::thread::Thread;
use std::time::Instant;

use hdrhistogram::Histogram;
use parking_lot::Mutex;
use tickwheel::{Expired, Tick, TickClock, Timer};

use crate::stats::{new_lateness_histogram, ShardCounters};
use crate::{Fired, KeyError, ScheduleError, ServiceKey, ServiceStats, Unfired};

/// Most timers taken from one shard per lock hold: bounds how long a producer can wait on a
/// shard lock behind the driver (or behind a [`take_due`](crate::TimerHandle::take_due)).
///
/// ```
/// assert!(tickwheel_service::BATCH >= 64);
/// ```
pub const BATCH: usize = 256;

/// `wake_at` while the driver is awake: it will look at every shard before it sleeps, so
/// producers need not wake it.
pub(crate) const AWAKE: Tick = 0;

/// One shard: a timer and its counters behind one lock.
pub(crate) struct Shard<X> {
    pub(crate) timer: X,
    pub(crate) counters: ShardCounters,
    /// Set once by shutdown; the timer is empty from then on.
    pub(crate) closed: bool,
    /// Set once when a panic unwinds out of a timer method (see the module invariants).
    pub(crate) failed: bool,
}

impl<X> Shard<X> {
    /// Runs `f` on the timer; a panic inside marks the shard failed and goes on unwinding.
    /// Free when nothing panics: the guard is forgotten, so its `drop` runs only on unwind.
    #[inline(always)]
    pub(crate) fn guarded<R>(&mut self, f: impl FnOnce(&mut X) -> R) -> R {
        struct FailOnUnwind<'a>(&'a mut bool);
        impl Drop for FailOnUnwind<'_> {
            fn drop(&mut self) {
                *self.0 = true;
            }
        }
        let guard = FailOnUnwind(&mut self.failed);
        let result = f(&mut self.timer);
        core::mem::forget(guard);
        result
    }

    /// [`guarded`](Self::guarded), with a panic caught instead of unwinding further: it is
    /// counted in `panics`, the shard is failed, and the answer is `None`.
    pub(crate) fn caught<R>(
        &mut self,
        panics: &AtomicU64,
        f: impl FnOnce(&mut X) -> R,
    ) -> Option<R> {
        let result = catch_unwind(AssertUnwindSafe(|| self.guarded(f)));
        if result.is_err() {
            panics.fetch_add(1, Ordering::Relaxed);
        }
        result.ok()
    }

    /// Whether the timer may be called: neither shut down nor failed.
    #[inline(always)]
    pub(crate) fn usable(&self) -> bool {
        !self.closed && !self.failed
    }
}

/// Keeps each shard's lock on its own cache lines so shards do not false-share.
#[repr(align(128))]
pub(crate) struct Padded<S>(pub(crate) S);

pub(crate) struct Shared<T, X> {
    pub(crate) shards: Box<[Padded<Mutex<Shard<X>>>]>,
    pub(crate) clock: TickClock,
    /// See the module invariants.
    pub(crate) wake_at: AtomicU64,
    /// The driver thread, once started (never set for a manual driver).
    pub(crate) driver: OnceLock<Thread>,
    /// Set by shutdown; the driver exits at its next look.
    pub(crate) stopping: AtomicBool,
    pub(crate) panicked: AtomicU64,
    /// Panics caught out of a timer method (each failed a shard).
    pub(crate) timer_panics: AtomicU64,
    pub(crate) rejected: AtomicU64,
    pub(crate) undelivered: AtomicU64,
    /// Written by the driver only.
    pub(crate) wakeups: AtomicU64,
    /// Written by the driver only.
    pub(crate) empty_wakeups: AtomicU64,
    pub(crate) turns: AtomicU64,
    /// The latest tick a driver turn polled at (0 before the first): the clock has reached
    /// its start. Only raised.
    pub(crate) turned: AtomicU64,
    /// Lateness in µs; written by the driver once per batch.
    pub(crate) lateness: Mutex<Histogram<u64>>,
    _payload: PhantomData<fn(T) -> T>,
}

/// Gives each thread a fixed shard preference: a thread's timers share one shard (and so keep
/// FIFO order among themselves), and threads spread over shards without a shared counter on
/// the hot path.
#[inline]
fn shard_hint() -> usize {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    thread_local! {
        // `usize::MAX` until first use; a const initializer keeps the access a plain TLS load.
        static HINT: Cell<usize> = const { Cell::new(usize::MAX) };
    }
    HINT.with(|h| {
        let mut hint = h.get();
        if hint == usize::MAX {
            hint = NEXT.fetch_add(1, Ordering::Relaxed) & (usize::MAX >> 1);
            h.set(hint);
        }
        hint
    })
}

impl<T, X: Timer<T>> Shared<T, X> {
    pub(crate) fn new(timers: Vec<X>, clock: TickClock) -> Self {
        Self {
            shards: timers
                .into_iter()
                .map(|timer| {
                    Padded(Mutex::new(Shard {
                        timer,
                        counters: ShardCounters::default(),
                        closed: false,
                        failed: false,
                    }))
                })
                .collect(),
            clock,
            wake_at: AtomicU64::new(AWAKE),
            driver: OnceLock::new(),
            stopping: AtomicBool::new(false),
            panicked: AtomicU64::new(0),
            timer_panics: AtomicU64::new(0),
            rejected: AtomicU64::new(0),
            undelivered: AtomicU64::new(0),
            wakeups: AtomicU64::new(0),
            turned: AtomicU64::new(0),
            empty_wakeups: AtomicU64::new(0),
            turns: AtomicU64::new(0),
            lateness: Mutex::new(new_lateness_histogram()),
            _payload: PhantomData,
        }
    }

    #[inline]
    pub(crate) fn schedule(&self, tick: Tick, payload: T) -> Result<ServiceKey, ScheduleError<T>> {
        let n = self.shards.len();
        let mut i = if n == 1 { 0 } else { shard_hint() % n };
        let mut payload = payload;
        // The preferred shard first; when it is at its share of the capacity (or failed), the
        // others, so the service refuses only when it is full as a whole.
        let mut full = false;
        for _ in 0..n {
            let mut shard = self.shards[i].0.lock();
            if shard.closed {
                drop(shard);
                return Err(ScheduleError::Shutdown(payload));
            }
            if !shard.failed {
                match shard.guarded(|timer| timer.insert(tick, payload)) {
                    Ok(key) => {
                        shard.counters.scheduled += 1;
                        drop(shard);
                        self.wake_for(tick);
                        return Ok(ServiceKey::new(i, key));
                    }
                    Err(refused) => payload = refused.into_inner(),
                }
                full = true;
            }
            i = if i + 1 == n { 0 } else { i + 1 };
        }
        if !full {
            return Err(ScheduleError::Failed(payload));
        }
        self.rejected.fetch_add(1, Ordering::Relaxed);
        Err(ScheduleError::Full(payload))
    }

    #[inline]
    pub(crate) fn cancel(&self, key: ServiceKey) -> Result<T, KeyError> {
        let Some(shard) = self.shards.get(key.shard()) else {
            return Err(KeyError::NotPending);
        };
        let mut shard = shard.0.lock();
        if shard.closed {
            return Err(KeyError::Shutdown);
        }
        if shard.failed {
            return Err(KeyError::Failed);
        }
        let payload = shard.guarded(|timer| timer.cancel(key.timer_key()));
        if payload.is_some() {
            shard.counters.cancelled += 1;
        }
        drop(shard);
        payload.ok_or(KeyError::NotPending)
    }

    #[inline]
    pub(crate) fn reset(&self, key: ServiceKey, tick: Tick) -> Result<(), KeyError> {
        let Some(shard) = self.shards.get(key.shard()) else {
            return Err(KeyError::NotPending);
        };
        let mut shard = shard.0.lock();
        if shard.closed {
            return Err(KeyError::Shutdown);
        }
        if shard.failed {
            return Err(KeyError::Failed);
        }
        shard
            .guarded(|timer| timer.reset(key.timer_key(), tick))
            .map_err(|_| KeyError::NotPending)?;
        shard.counters.reset += 1;
        drop(shard);
        self.wake_for(tick);
        Ok(())
    }

    pub(crate) fn deadline(&self, key: ServiceKey) -> Option<Tick> {
        let mut shard = self.shards.get(key.shard())?.0.lock();
        if !shard.usable() {
            return None;
        }
        shard.guarded(|timer| timer.deadline(key.timer_key()))
    }

    /// Polls at most [`BATCH`] timers due at `tick` out of shard `i` into `batch`, under its
    /// lock; returns whether the batch was full (more may be due). A panic inside the timer
    /// fails the shard (see `Shard::guarded`); what it handed out before is kept.
    pub(crate) fn take(&self, i: usize, tick: Tick, batch: &mut Vec<(usize, Expired<T>)>) -> bool {
        let before = batch.len();
        let mut shard = self.shards[i].0.lock();
        if !shard.usable() {
            return false;
        }
        let _ = shard.caught(&self.timer_panics, |timer| {
            while batch.len() - before < BATCH {
                match timer.poll(tick) {
                    Some(expired) => batch.push((i, expired)),
                    None => break,
                }
            }
        });
        let taken = batch.len() - before;
        shard.counters.fired += taken as u64;
        taken == BATCH
    }

    /// [`take`](Self::take) from every shard in turn; whether some shard had more due.
    pub(crate) fn take_all(&self, tick: Tick, batch: &mut Vec<(usize, Expired<T>)>) -> bool {
        let mut more_due = false;
        for i in 0..self.shards.len() {
            more_due |= self.take(i, tick, batch);
        }
        more_due
    }

    /// The delivery of `expired`, taken from shard `shard`, starting at `fired_at`;
    /// `fallback` stands for a deadline beyond what `Instant` holds.
    pub(crate) fn fired(
        &self,
        shard: usize,
        expired: Expired<T>,
        fired_at: Instant,
        fallback: Instant,
    ) -> Fired<T> {
        Fired {
            key: ServiceKey::new(shard, expired.key),
            deadline: self.instant_of(expired.deadline, fallback),
            fired_at,
            payload: expired.payload,
        }
    }

    /// [`TimerHandle::take_due`](crate::TimerHandle::take_due): two atomic loads unless the
    /// driver is behind `seen` with timers due.
    #[inline]
    pub(crate) fn take_due(&self, seen: Tick) -> Vec<Fired<T>> {
        if self.wake_at.load(Ordering::Relaxed) > seen
            || self.turned.load(Ordering::Relaxed) >= seen
        {
            return Vec::new();
        }
        self.take_due_now()
    }

    #[cold]
    fn take_due_now(&self) -> Vec<Fired<T>> {
        if self.driver.get().is_none() {
            return Vec::new(); // a manual driver: time is the caller's to give
        }
        // The clock, not the caller's `seen`, decides what is due: never early.
        let now = Instant::now();
        let tick = self.clock.now_tick(now);
        let mut batch = Vec::new();
        if !self.take_all(tick, &mut batch) {
            // Everything due at `tick` is taken: later calls at `tick` need not look.
            self.turned.fetch_max(tick, Ordering::Relaxed);
        }
        let fired: Vec<Fired<T>> = batch
            .into_iter()
            .map(|(i, e)| self.fired(i, e, now, now))
            .collect();
        if !fired.is_empty() {
            let mut histogram = self.lateness.lock();
            for f in &fired {
                histogram.saturating_record(f.lateness_us());
            }
        }
        fired
    }

    /// Wakes a sleeping driver if `tick` is before the tick it sleeps until. Costs one atomic
    /// load when it is not.
    #[inline]
    fn wake_for(&self, tick: Tick) {
        // Ordering: the insert was published by the shard unlock. Either the driver's scan of
        // this shard comes after that unlock (and sees the timer), or it came before our lock,
        // in which case its store of `u64::MAX` happens-before this load and we see it (or a
        // later value) and wake it.
        let at = self.wake_at.load(Ordering::SeqCst);
        if tick < at && self.wake_at.swap(AWAKE, Ordering::SeqCst) != AWAKE {
            if let Some(driver) = self.driver.get() {
                driver.unpark();
            }
        }
    }

    /// Runs `f` on every usable shard's timer in turn, each under its lock. A panic out of
    /// `f` is caught and counted, and fails that shard; the others still run.
    pub(crate) fn each_timer(&self, mut f: impl FnMut(&mut X)) {
        for shard in self.shards.iter() {
            let mut shard = shard.0.lock();
            if shard.usable() {
                let _ = shard.caught(&self.timer_panics, &mut f);
            }
        }
    }

    /// The earliest `next_deadline` over the usable shards (a tick no later than the earliest
    /// pending deadline there).
    pub(crate) fn next_deadline(&self) -> Option<Tick> {
        let mut earliest = None;
        self.each_timer(|timer| {
            if let Some(t) = timer.next_deadline() {
                earliest = Some(earliest.map_or(t, |e: Tick| e.min(t)));
            }
        });
        earliest
    }

    /// Timers pending in the usable shards.
    pub(crate) fn pending(&self) -> usize {
        let mut pending = 0;
        self.each_timer(|timer| pending += timer.len());
        pending
    }

    /// Releases the memory each shard's pending timers do not need ([`Timer::shrink_to_fit`]).
    pub(crate) fn shrink_to_fit(&self) {
        self.each_timer(|timer| timer.shrink_to_fit());
    }

    pub(crate) fn is_shutdown(&self) -> bool {
        self.stopping.load(Ordering::Acquire)
    }

    /// Closes every shard and returns what was pending, in deadline order. Then tells the
    /// driver to exit. Idempotent: a second call returns nothing.
    pub(crate) fn close(&self) -> Vec<Unfired<T>> {
        let mut drained = Vec::new();
        for (i, shard) in self.shards.iter().enumerate() {
            let mut shard = shard.0.lock();
            if shard.closed {
                continue;
            }
            shard.closed = true;
            // A failed shard's timer is tried once more: what it hands back is recovered.
            if let Some(taken) = shard.caught(&self.timer_panics, |timer| timer.drain()) {
                shard.counters.drained += taken.len() as u64;
                drop(shard);
                drained.extend(taken.into_iter().map(|e| (i, e)));
            }
        }
        self.stopping.store(true, Ordering::Release);
        if let Some(driver) = self.driver.get() {
            driver.unpark();
        }
        // Stable: each shard's drain is already in deadline order, FIFO among equals.
        drained.sort_by_key(|(_, e)| e.deadline);
        drained
            .into_iter()
            .map(|(i, e)| Unfired {
                key: ServiceKey::new(i, e.key),
                // A timer at the last tick never fires: it has no deadline to report.
                deadline: (e.deadline != Tick::MAX)
                    .then(|| self.clock.instant_of(e.deadline))
                    .flatten(),
                payload: e.payload,
            })
            .collect()
    }

    pub(crate) fn stats(&self) -> ServiceStats {
        let mut c = ShardCounters::default();
        let mut pending = 0u64;
        let mut allocated_bytes = 0usize;
        let mut failed_shards = 0usize;
        for shard in self.shards.iter() {
            let mut shard = shard.0.lock();
            if shard.failed {
                failed_shards += 1;
            } else if !shard.closed {
                let sizes = shard.caught(&self.timer_panics, |timer| {
                    (timer.len(), timer.allocated_bytes())
                });
                match sizes {
                    Some((len, bytes)) => {
                        pending += len as u64;
                        allocated_bytes += bytes;
                    }
                    None => failed_shards += 1,
                }
            }
            c.scheduled += shard.counters.scheduled;
            c.cancelled += shard.counters.cancelled;
            c.reset += shard.counters.reset;
            c.fired += shard.counters.fired;
            c.drained += shard.counters.drained;
        }
        ServiceStats {
            pending,
            scheduled: c.scheduled,
            cancelled: c.cancelled,
            reset: c.reset,
            fired: c.fired,
            drained: c.drained,
            panicked: self.panicked.load(Ordering::Relaxed),
            timer_panics: self.timer_panics.load(Ordering::Relaxed),
            failed_shards,
            allocated_bytes,
            rejected: self.rejected.load(Ordering::Relaxed),
            undelivered: self.undelivered.load(Ordering::Relaxed),
            wakeups: self.wakeups.load(Ordering::Relaxed),
            empty_wakeups: self.empty_wakeups.load(Ordering::Relaxed),
            turns: self.turns.load(Ordering::Relaxed),
            shards: self.shards.len(),
            lateness_us: self.lateness.lock().clone(),
        }
    }

    /// Converts a tick back to the instant it begins (for deadlines handed to users).
    pub(crate) fn instant_of(&self, tick: Tick, fallback: Instant) -> Instant {
        self.clock.instant_of(tick).unwrap_or(fallback)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::Ordering;
    use std::time::{Duration, Instant};

    use tickwheel::{HierarchicalWheel, TickClock};

    use super::{Shared, BATCH};

    /// Two shards; `threaded` marks it a driver thread's service (the driver itself never
    /// runs here, so only this thread takes).
    fn shared(threaded: bool) -> Shared<u32, HierarchicalWheel<u32>> {
        let clock = TickClock::new(Duration::from_millis(1)).unwrap();
        let s = Shared::new(
            vec![HierarchicalWheel::new(), HierarchicalWheel::new()],
            clock,
        );
        if threaded {
            let _ = s.driver.set(std::thread::current());
        }
        s
    }

    fn later(s: &Shared<u32, HierarchicalWheel<u32>>) -> u64 {
        std::thread::sleep(Duration::from_millis(3));
        s.clock.now_tick(Instant::now())
    }

    #[test]
    fn take_due_takes_what_is_due_each_once_and_nothing_later() {
        let s = shared(true);
        let due = 3 * BATCH as u32; // more than a batch per shard: it takes in rounds
        for i in 0..due {
            let _ = s.schedule(1, i).unwrap();
        }
        let far = s.clock.now_tick(Instant::now()) + 60_000;
        let _ = s.schedule(far, u32::MAX).unwrap();
        let seen = later(&s);
        let mut taken = Vec::new();
        loop {
            let round = s.take_due(seen);
            if round.is_empty() {
                break;
            }
            assert!(
                round.len() <= 2 * BATCH,
                "at most a batch per shard per call"
            );
            taken.extend(round);
        }
        for f in &taken {
            assert!(f.fired_at >= f.deadline, "taken before its deadline");
        }
        let mut payloads: Vec<u32> = taken.iter().map(|f| f.payload).collect();
        payloads.sort_unstable();
        assert_eq!(
            payloads,
            (0..due).collect::<Vec<_>>(),
            "each once, none later"
        );
        assert_eq!(s.pending(), 1);
        assert!(s.turned.load(Ordering::Relaxed) >= seen);
        assert_eq!(s.stats().fired, u64::from(due));
        assert_eq!(s.stats().lateness_us.len(), u64::from(due));
    }

    #[test]
    fn take_due_leaves_timers_to_a_driver_that_is_not_behind() {
        let s = shared(true);
        let _ = s.schedule(1, 7).unwrap();
        let seen = later(&s);
        // The driver will wake after `seen`: nothing is due by then as far as it knows.
        s.wake_at.store(seen + 1, Ordering::SeqCst);
        assert!(s.take_due(seen).is_empty());
        // A turn looked at `seen` already.
        s.wake_at.store(super::AWAKE, Ordering::SeqCst);
        s.turned.store(seen, Ordering::Relaxed);
        assert!(s.take_due(seen).is_empty());
        assert_eq!(s.pending(), 1, "left for the driver");
        assert_eq!(s.take_due(seen + 1).len(), 1);
    }

    #[test]
    fn take_due_takes_nothing_on_a_manual_driver_or_after_shutdown() {
        let manual = shared(false);
        let _ = manual.schedule(1, 7).unwrap();
        let seen = later(&manual);
        assert!(manual.take_due(seen).is_empty());
        assert_eq!(
            manual.pending(),
            1,
            "the manual driver's caller decides when"
        );
        let s = shared(true);
        let _ = s.schedule(1, 7).unwrap();
        assert_eq!(s.close().len(), 1);
        assert!(s.take_due(later(&s)).is_empty());
    }
}
