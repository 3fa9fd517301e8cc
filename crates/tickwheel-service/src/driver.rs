//! The driver: takes expired timers out of the shards and delivers them.
//!
//! One step, [`Driver::turn`], is the whole of the driver's work for one look at the clock:
//! lock each shard in turn, poll at most [`BATCH`](crate::BATCH) expired timers out, unlock, then deliver the
//! batch (channel send, or the callback under `catch_unwind`) with no lock held. The driver
//! thread runs `turn` until a turn finds nothing, then [`Driver::arm`]s its sleep (the earliest
//! `next_deadline` over the shards, published in `wake_at`) and parks until then or until a
//! producer unparks it. [`ManualDriver`] exposes the same two steps with the clock in the
//! caller's hands and no thread, so tests are deterministic.
//!
//! After a turn at tick `n` that found nothing, the driver sleeps until `n + 1` at the
//! earliest, whatever a wheel's `next_deadline` answers (a wheel may answer a slot boundary at
//! or before `n`): the driver can never spin. When the shards do report something at or before
//! `n` (typically a due timer scheduled between the driver's poll of its shard and its sleep),
//! the thread turns once more at once, at most once per tick.
//!
//! Why one driver thread for all shards and not one per shard: shards exist to spread the
//! producers' lock traffic; the driver's work per fired timer is a few hundred nanoseconds, so
//! one thread delivers millions per second, and one sleeping thread is one wake-up per deadline
//! instead of one per shard. It also gives one place to merge the shards' batches into deadline
//! order and one histogram writer.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_channel::{SendTimeoutError, Sender, TrySendError};

use tickwheel::{Expired, Tick, Timer};

use crate::shared::{Shared, AWAKE};
use crate::{Delivery, Fired, ServiceStats, TimerHandle, Unfired};

/// What one [`ManualDriver::turn`] did.
///
/// ```
/// use tickwheel_service::{Builder, Delivery};
///
/// let (delivery, _fired) = Delivery::channel();
/// let mut driver = Builder::new().build_manual(delivery).unwrap();
/// let t0 = driver.clock().origin();
/// let _ = driver.handle().schedule_at(t0, ()).unwrap();
/// let turn = driver.turn(t0 + std::time::Duration::from_millis(3));
/// assert_eq!((turn.delivered, turn.more_due, turn.now_tick), (1, false, 3));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Turn {
    /// Timers delivered in this turn.
    pub delivered: usize,
    /// Some shard gave a full batch: more may be due at this `now`; turn again before sleeping.
    pub more_due: bool,
    /// The tick this turn polled at (`now` rounded down).
    pub now_tick: Tick,
}

pub(crate) struct Driver<T, X: Timer<T>> {
    pub(crate) shared: Arc<Shared<T, X>>,
    delivery: Delivery<T>,
    /// Reused between turns: (shard index, expired timer).
    batch: Vec<(usize, Expired<T>)>,
    /// Reused between turns: lateness of this batch in µs.
    lateness: Vec<u64>,
    /// Real driver: `fired_at` is read from the clock per timer; manual: the turn's `now`.
    real_clock: bool,
}

impl<T, X: Timer<T>> Driver<T, X> {
    pub(crate) fn new(shared: Arc<Shared<T, X>>, delivery: Delivery<T>, real_clock: bool) -> Self {
        Self {
            shared,
            delivery,
            batch: Vec::new(),
            lateness: Vec::new(),
            real_clock,
        }
    }

    /// One look at the clock: poll every shard at `now` (a bounded batch each, lock held only
    /// while polling), then deliver with no lock held.
    pub(crate) fn turn(&mut self, now: Instant) -> Turn {
        let shared = &*self.shared;
        let tick = shared.clock.now_tick(now);
        // Only the driver writes it: a plain load and store, no read-modify-write.
        let turns = shared.turns.load(Ordering::Relaxed);
        shared.turns.store(turns + 1, Ordering::Relaxed);
        shared.turned.fetch_max(tick, Ordering::Relaxed);
        self.batch.clear();
        let more_due = shared.take_all(tick, &mut self.batch);
        if shared.shards.len() > 1 {
            // Stable, and each shard's part is already ordered: deadline order across shards,
            // FIFO among equal deadlines within a shard.
            self.batch.sort_by_key(|(_, e)| e.deadline);
        }
        let delivered = self.batch.len();
        self.lateness.clear();
        for (i, expired) in self.batch.drain(..) {
            let fired_at = if self.real_clock { Instant::now() } else { now };
            let fired = shared.fired(i, expired, fired_at, now);
            self.lateness.push(fired.lateness_us());
            match &mut self.delivery {
                Delivery::Channel(tx) => {
                    if !send(tx, fired, &shared.stopping) {
                        shared.undelivered.fetch_add(1, Ordering::Relaxed);
                    }
                }
                Delivery::Callback(callback) => {
                    if catch_unwind(AssertUnwindSafe(|| callback(fired))).is_err() {
                        shared.panicked.fetch_add(1, Ordering::Relaxed);
                    }
                }
            }
        }
        if !self.lateness.is_empty() {
            let mut histogram = shared.lateness.lock();
            for &us in &self.lateness {
                histogram.saturating_record(us);
            }
        }
        Turn {
            delivered,
            more_due,
            now_tick: tick,
        }
    }

    /// Prepares to sleep after a turn at `now_tick` that found nothing: publishes the tick the
    /// driver will look again on its own and returns it (`None`: idle, sleep until woken).
    /// A schedule or reset that comes earlier from then on resets `wake_at` to [`AWAKE`].
    pub(crate) fn arm(&self, now_tick: Tick) -> Option<Tick> {
        self.arm_raw(now_tick).1
    }

    /// [`arm`](Self::arm), also returning the shards' raw earliest `next_deadline`.
    fn arm_raw(&self, now_tick: Tick) -> (Option<Tick>, Option<Tick>) {
        let shared = &*self.shared;
        // First "asleep until forever", so a timer added while we scan wakes us ...
        shared.wake_at.store(u64::MAX, Ordering::SeqCst);
        // ... then the earliest deadline over all shards. A wheel may answer a slot boundary
        // at or before `now_tick` although nothing is due (the turn just emptied that), so
        // look again at the next tick at the earliest: never a busy loop.
        let raw = shared.next_deadline();
        let next = raw.map(|t| t.max(now_tick.saturating_add(1)));
        // Keep AWAKE if a producer already asked us to stay up.
        let _ = shared.wake_at.compare_exchange(
            u64::MAX,
            next.unwrap_or(u64::MAX),
            Ordering::SeqCst,
            Ordering::SeqCst,
        );
        (raw, next)
    }

    /// Whether a producer asked the driver to wake since the last [`arm`](Self::arm).
    pub(crate) fn woken(&self) -> bool {
        self.shared.wake_at.load(Ordering::SeqCst) == AWAKE
    }

    pub(crate) fn set_awake(&self) {
        self.shared.wake_at.store(AWAKE, Ordering::SeqCst);
    }

    /// The driver thread's loop; returns after shutdown.
    pub(crate) fn run(mut self) {
        // The tick at which the driver last turned again at once because the shards reported
        // something due right after an empty turn (at most once per tick: no spinning).
        let mut retried_at = None;
        let mut woke = false;
        loop {
            if self.shared.stopping.load(Ordering::Acquire) {
                break;
            }
            let turn = self.turn(Instant::now());
            if woke && turn.delivered == 0 {
                let empty = self.shared.empty_wakeups.load(Ordering::Relaxed);
                self.shared
                    .empty_wakeups
                    .store(empty + 1, Ordering::Relaxed);
            }
            woke = false;
            if turn.more_due || turn.delivered > 0 {
                // Deliveries take time; look again before sleeping.
                continue;
            }
            let (raw, next) = self.arm_raw(turn.now_tick);
            if self.woken() {
                continue;
            }
            if raw.is_some_and(|t| t <= turn.now_tick) && retried_at != Some(turn.now_tick) {
                // Most likely a timer already due was scheduled after its shard was polled
                // (its producer saw the driver awake and did not wake it): deliver it now
                // rather than one tick late.
                retried_at = Some(turn.now_tick);
                self.set_awake();
                continue;
            }
            if self.shared.stopping.load(Ordering::Acquire) {
                break;
            }
            match next.and_then(|t| self.shared.clock.instant_of(t)) {
                Some(at) => {
                    let sleep = at.saturating_duration_since(Instant::now());
                    if !sleep.is_zero() {
                        std::thread::park_timeout(sleep);
                    }
                }
                // Idle (or nothing due within `Instant`'s range): sleep until a producer or
                // shutdown unparks us. No periodic tick.
                None => std::thread::park(),
            }
            self.set_awake();
            let wakeups = self.shared.wakeups.load(Ordering::Relaxed);
            self.shared.wakeups.store(wakeups + 1, Ordering::Relaxed);
            woke = true;
        }
    }
}

/// Sends on the delivery channel. A full bounded channel makes the driver wait (later timers
/// are late, not lost) — but not past shutdown, so a consumer that stopped receiving cannot
/// hang `shutdown`. Returns `false` when the timer could not be delivered (every receiver is
/// gone, or shutdown came while the channel stayed full).
fn send<T>(tx: &Sender<Fired<T>>, fired: Fired<T>, stopping: &AtomicBool) -> bool {
    let mut fired = match tx.try_send(fired) {
        Ok(()) => return true,
        Err(TrySendError::Disconnected(_)) => return false,
        Err(TrySendError::Full(fired)) => fired,
    };
    // Wait in short slices so shutdown is noticed; once it is, the rest of the batch does not
    // wait at all.
    while !stopping.load(Ordering::Acquire) {
        match tx.send_timeout(fired, Duration::from_millis(10)) {
            Ok(()) => return true,
            Err(SendTimeoutError::Disconnected(_)) => return false,
            Err(SendTimeoutError::Timeout(back)) => fired = back,
        }
    }
    false
}

/// The driver's step with the clock in your hands and no thread: for deterministic tests and
/// for embedding the service's delivery into a loop you already run.
///
/// Build it with [`Builder::build_manual`](crate::Builder::build_manual). Schedule through
/// [`handle`](Self::handle) (with `schedule_at`, since your clock is not the wall clock); call
/// [`turn`](Self::turn) with the time you choose; it delivers exactly as the driver thread would.
///
/// ```
/// use std::time::Duration;
/// use tickwheel_service::{Builder, Delivery};
///
/// let (delivery, fired) = Delivery::channel();
/// let mut driver = Builder::new().build_manual::<&str>(delivery).unwrap();
/// let t0 = driver.clock().origin();
/// let ms = Duration::from_millis;
/// let handle = driver.handle();
/// handle.schedule_at(t0 + ms(20), "b").unwrap();
/// handle.schedule_at(t0 + ms(10), "a").unwrap();
/// assert_eq!(driver.turn(t0 + ms(9)).delivered, 0); // never early
/// assert_eq!(driver.turn(t0 + ms(20)).delivered, 2);
/// let order: Vec<_> = fired.try_iter().map(|f| f.payload).collect();
/// assert_eq!(order, ["a", "b"]);
/// ```
pub struct ManualDriver<T, X: Timer<T>> {
    driver: Driver<T, X>,
}

impl<T, X: Timer<T>> ManualDriver<T, X> {
    pub(crate) fn new(shared: Arc<Shared<T, X>>, delivery: Delivery<T>) -> Self {
        Self {
            driver: Driver::new(shared, delivery, false),
        }
    }

    /// A handle to schedule, cancel and reset through (it may be sent to other threads).
    ///
    /// ```
    /// # use tickwheel_service::{Builder, Delivery};
    /// let (delivery, _fired) = Delivery::<()>::channel();
    /// let driver = Builder::new().build_manual(delivery).unwrap();
    /// assert_eq!(driver.handle().pending(), 0);
    /// ```
    #[must_use]
    pub fn handle(&self) -> TimerHandle<T, X> {
        TimerHandle::new(self.driver.shared.clone())
    }

    /// The tick clock: its `origin()` is tick 0, handy as the start of a manual timeline.
    ///
    /// ```
    /// # use tickwheel_service::{Builder, Delivery};
    /// # use std::time::Duration;
    /// let (delivery, _fired) = Delivery::<()>::channel();
    /// let driver = Builder::new().resolution(Duration::from_micros(100)).build_manual(delivery).unwrap();
    /// assert_eq!(driver.clock().resolution(), Duration::from_micros(100));
    /// ```
    #[must_use]
    pub fn clock(&self) -> tickwheel::TickClock {
        self.driver.shared.clock
    }

    /// One driver step at `now`: takes at most [`BATCH`](crate::BATCH) due timers from each shard and
    /// delivers them (callbacks run here, on the calling thread). Turn again while
    /// [`Turn::more_due`].
    ///
    /// ```
    /// # use tickwheel_service::{Builder, Delivery, BATCH};
    /// let (delivery, fired) = Delivery::channel();
    /// let mut driver = Builder::new().shards(1).build_manual(delivery).unwrap();
    /// let t0 = driver.clock().origin();
    /// for i in 0..BATCH + 1 {
    ///     driver.handle().schedule_at(t0, i).unwrap();
    /// }
    /// assert!(driver.turn(t0).more_due);
    /// assert_eq!(driver.turn(t0).delivered, 1);
    /// assert_eq!(fired.len(), BATCH + 1);
    /// ```
    pub fn turn(&mut self, now: std::time::Instant) -> Turn {
        self.driver.turn(now)
    }

    /// Turns until nothing more is due at `now`; returns how many timers were delivered.
    ///
    /// ```
    /// # use tickwheel_service::{Builder, Delivery};
    /// let (delivery, _fired) = Delivery::channel();
    /// let mut driver = Builder::new().build_manual(delivery).unwrap();
    /// let t0 = driver.clock().origin();
    /// for i in 0..1000 {
    ///     driver.handle().schedule_at(t0, i).unwrap();
    /// }
    /// assert_eq!(driver.run_due(t0), 1000);
    /// ```
    pub fn run_due(&mut self, now: std::time::Instant) -> usize {
        let mut total = 0;
        loop {
            let turn = self.driver.turn(now);
            total += turn.delivered;
            if !turn.more_due && turn.delivered == 0 {
                return total;
            }
        }
    }

    /// Does what the driver thread does before it sleeps after a turn at `now` that found
    /// nothing: returns when it would wake on its own (`None`: idle, only a new timer or
    /// shutdown wakes it) and arms the wake-up check read by [`woken`](Self::woken).
    ///
    /// ```
    /// # use tickwheel_service::{Builder, Delivery};
    /// # use std::time::Duration;
    /// let (delivery, _fired) = Delivery::channel();
    /// let mut driver = Builder::new().build_manual(delivery).unwrap();
    /// let t0 = driver.clock().origin();
    /// assert_eq!(driver.arm(t0), None); // idle: sleeps until woken
    /// driver.handle().schedule_at(t0 + Duration::from_millis(50), ()).unwrap();
    /// assert!(driver.woken());
    /// ```
    pub fn arm(&mut self, now: std::time::Instant) -> Option<std::time::Instant> {
        let tick = self.driver.shared.clock.now_tick(now);
        let next = self.driver.arm(tick)?;
        Some(self.driver.shared.instant_of(next, now))
    }

    /// Whether a schedule or reset since the last [`arm`](Self::arm) brought a deadline
    /// earlier than the armed wake-up (so the driver thread would have been unparked).
    /// The next `arm` clears it, as the driver thread does when it wakes.
    ///
    /// ```
    /// # use tickwheel_service::{Builder, Delivery};
    /// # use std::time::Duration;
    /// let (delivery, _fired) = Delivery::channel();
    /// let mut driver = Builder::new().build_manual(delivery).unwrap();
    /// let t0 = driver.clock().origin();
    /// let ms = Duration::from_millis;
    /// driver.handle().schedule_at(t0 + ms(50), ()).unwrap();
    /// assert_eq!(driver.arm(t0), Some(t0 + ms(50)));
    /// driver.handle().schedule_at(t0 + ms(60), ()).unwrap(); // later: no wake-up
    /// assert!(!driver.woken());
    /// driver.handle().schedule_at(t0 + ms(10), ()).unwrap(); // new earliest: wake
    /// assert!(driver.woken());
    /// ```
    #[must_use]
    pub fn woken(&self) -> bool {
        self.driver.woken()
    }

    /// Counters and lateness; see [`ServiceStats`].
    ///
    /// ```
    /// # use tickwheel_service::{Builder, Delivery};
    /// let (delivery, _fired) = Delivery::<()>::channel();
    /// let driver = Builder::new().build_manual(delivery).unwrap();
    /// assert_eq!(driver.stats().scheduled, 0);
    /// ```
    #[must_use]
    pub fn stats(&self) -> ServiceStats {
        self.driver.shared.stats()
    }

    /// Shuts down: returns every unfired payload (deadline order); later calls through any
    /// handle fail with a `Shutdown` error.
    ///
    /// ```
    /// # use tickwheel_service::{Builder, Delivery, ScheduleError};
    /// let (delivery, _fired) = Delivery::channel();
    /// let driver = Builder::new().build_manual(delivery).unwrap();
    /// let handle = driver.handle();
    /// handle.schedule_at(driver.clock().origin(), 1).unwrap();
    /// assert_eq!(driver.shutdown().len(), 1);
    /// assert!(matches!(handle.schedule_at(std::time::Instant::now(), 2), Err(ScheduleError::Shutdown(2))));
    /// ```
    #[must_use]
    pub fn shutdown(self) -> Vec<Unfired<T>> {
        self.driver.shared.close()
    }
}

impl<T, X: Timer<T>> Drop for ManualDriver<T, X> {
    fn drop(&mut self) {
        // Like dropping a `TimerService`: shut down, dropping the unfired payloads (outside
        // every lock). A no-op after `shutdown`.
        drop(self.driver.shared.close());
    }
}
