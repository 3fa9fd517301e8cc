//! The service and its handles.

use std::fmt;
use std::ops::Deref;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use tickwheel::{HierarchicalWheel, Tick, TickClock, Timer};

use crate::shared::Shared;
use crate::{Fired, KeyError, ScheduleError, ServiceKey, ServiceStats, Unfired};

/// A `Clone + Send + Sync` handle: schedule, cancel and reset timers from any thread.
///
/// Each call locks one shard briefly (the calling thread's preferred shard for schedules, the
/// key's shard for cancel and reset); no call waits for the driver's deliveries, and none runs
/// user code under a lock. A schedule or reset that makes a new earliest deadline wakes the
/// sleeping driver; any other costs one atomic load beyond the shard operation.
///
/// Handles stay valid after the service is shut down or dropped; every call then fails with a
/// `Shutdown` error.
///
/// ```
/// use std::time::Duration;
/// use tickwheel_service::{Builder, Delivery};
///
/// let (delivery, fired) = Delivery::channel();
/// let service = Builder::new().build(delivery).unwrap();
/// let handle = service.handle();
/// let worker = std::thread::spawn(move || {
///     let key = handle.schedule_after(Duration::from_secs(30), "request 1").unwrap();
///     handle.cancel(key).unwrap(); // the response arrived in time
///     handle.schedule_after(Duration::from_millis(1), "request 2").unwrap();
/// });
/// worker.join().unwrap();
/// assert_eq!(fired.recv().unwrap().payload, "request 2");
/// ```
pub struct TimerHandle<T, X: Timer<T> = HierarchicalWheel<T>> {
    shared: Arc<Shared<T, X>>,
}

impl<T, X: Timer<T>> Clone for TimerHandle<T, X> {
    fn clone(&self) -> Self {
        Self {
            shared: self.shared.clone(),
        }
    }
}

impl<T, X: Timer<T>> fmt::Debug for TimerHandle<T, X> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TimerHandle")
            .field("shards", &self.shared.shards.len())
            .field("resolution", &self.shared.clock.resolution())
            .field("shutdown", &self.shared.is_shutdown())
            .finish_non_exhaustive()
    }
}

impl<T, X: Timer<T>> TimerHandle<T, X> {
    pub(crate) fn new(shared: Arc<Shared<T, X>>) -> Self {
        Self { shared }
    }

    /// Schedules `payload` to fire at `deadline` (rounded up to the next tick boundary, so
    /// never early). A past deadline fires at the driver's next turn.
    ///
    /// # Errors
    /// [`ScheduleError::Full`] when the service is at capacity, [`ScheduleError::Shutdown`]
    /// after shutdown, [`ScheduleError::Failed`] when every shard failed (a panic in its
    /// timer); each hands the payload back.
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    /// use tickwheel_service::{Builder, Delivery};
    ///
    /// let (delivery, fired) = Delivery::channel();
    /// let service = Builder::new().build(delivery).unwrap();
    /// let at = Instant::now() + Duration::from_millis(3);
    /// service.schedule_at(at, 7).unwrap();
    /// let f = fired.recv().unwrap();
    /// assert!(f.fired_at >= at);
    /// ```
    #[inline]
    pub fn schedule_at(
        &self,
        deadline: Instant,
        payload: T,
    ) -> Result<ServiceKey, ScheduleError<T>> {
        let tick = self.shared.clock.deadline_tick(deadline);
        self.shared.schedule(tick, payload)
    }

    /// Schedules `payload` to fire `delay` from now. Huge delays saturate (the timer then
    /// waits until shutdown hands it back).
    ///
    /// # Errors
    /// As [`schedule_at`](Self::schedule_at).
    ///
    /// ```
    /// use std::time::Duration;
    /// use tickwheel_service::{Builder, Delivery};
    ///
    /// let (delivery, _fired) = Delivery::channel();
    /// let service = Builder::new().build(delivery).unwrap();
    /// service.schedule_after(Duration::MAX, "never").unwrap();
    /// assert_eq!(service.pending(), 1);
    /// ```
    #[inline]
    pub fn schedule_after(
        &self,
        delay: Duration,
        payload: T,
    ) -> Result<ServiceKey, ScheduleError<T>> {
        let tick = self.shared.clock.deadline_after(Instant::now(), delay);
        self.shared.schedule(tick, payload)
    }

    /// Schedules at a tick of [`clock`](Self::clock) (what `schedule_at` does after rounding
    /// the instant up). For callers that keep time in ticks, such as a virtual-clock load
    /// generator with a [`ManualDriver`](crate::ManualDriver).
    ///
    /// # Errors
    /// As [`schedule_at`](Self::schedule_at).
    ///
    /// ```
    /// use tickwheel_service::{Builder, Delivery};
    ///
    /// let (delivery, fired) = Delivery::channel();
    /// let mut driver = Builder::new().build_manual(delivery).unwrap();
    /// driver.handle().schedule_at_tick(3, "tick 3").unwrap();
    /// let at = driver.clock().instant_of(3).unwrap();
    /// assert_eq!(driver.run_due(at), 1);
    /// assert_eq!(fired.recv().unwrap().payload, "tick 3");
    /// ```
    #[inline]
    pub fn schedule_at_tick(&self, tick: Tick, payload: T) -> Result<ServiceKey, ScheduleError<T>> {
        self.shared.schedule(tick, payload)
    }

    /// Cancels a pending timer and returns its payload. `Ok` means it will never be
    /// delivered; a timer the driver already took out for delivery is not pending any more.
    /// Racing the driver, exactly one of the two wins.
    ///
    /// # Errors
    /// [`KeyError::NotPending`] when the timer fired (or is being delivered) or was cancelled;
    /// [`KeyError::Shutdown`] after shutdown; [`KeyError::Failed`] when the key's shard failed
    /// (a panic in its timer).
    ///
    /// ```
    /// use std::time::Duration;
    /// use tickwheel_service::{Builder, Delivery, KeyError};
    ///
    /// let (delivery, _fired) = Delivery::channel();
    /// let service = Builder::new().build(delivery).unwrap();
    /// let key = service.schedule_after(Duration::from_secs(10), "timeout").unwrap();
    /// assert_eq!(service.cancel(key), Ok("timeout"));
    /// assert_eq!(service.cancel(key), Err(KeyError::NotPending));
    /// ```
    #[inline]
    pub fn cancel(&self, key: ServiceKey) -> Result<T, KeyError> {
        self.shared.cancel(key)
    }

    /// Moves a pending timer to `deadline` (earlier, later or past); it then orders as a new
    /// schedule. The key stays valid.
    ///
    /// # Errors
    /// As [`cancel`](Self::cancel); on error nothing changed.
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    /// use tickwheel_service::{Builder, Delivery};
    ///
    /// let (delivery, fired) = Delivery::channel();
    /// let service = Builder::new().build(delivery).unwrap();
    /// let key = service.schedule_after(Duration::from_secs(3600), "idle").unwrap();
    /// service.reset_at(key, Instant::now()).unwrap(); // now instead
    /// assert_eq!(fired.recv().unwrap().key, key);
    /// ```
    #[inline]
    pub fn reset_at(&self, key: ServiceKey, deadline: Instant) -> Result<(), KeyError> {
        let tick = self.shared.clock.deadline_tick(deadline);
        self.shared.reset(key, tick)
    }

    /// Moves a pending timer to `delay` from now: the idle-timeout call on every read.
    ///
    /// # Errors
    /// As [`cancel`](Self::cancel); on error nothing changed.
    ///
    /// ```
    /// use std::time::Duration;
    /// use tickwheel_service::{Builder, Delivery};
    ///
    /// let (delivery, _fired) = Delivery::channel();
    /// let service = Builder::new().build(delivery).unwrap();
    /// let idle = service.schedule_after(Duration::from_secs(30), "conn 9 idle").unwrap();
    /// service.reset_after(idle, Duration::from_secs(30)).unwrap(); // bytes arrived
    /// assert_eq!(service.stats().reset, 1);
    /// ```
    #[inline]
    pub fn reset_after(&self, key: ServiceKey, delay: Duration) -> Result<(), KeyError> {
        let tick = self.shared.clock.deadline_after(Instant::now(), delay);
        self.shared.reset(key, tick)
    }

    /// Moves a pending timer to a tick of [`clock`](Self::clock).
    ///
    /// # Errors
    /// As [`cancel`](Self::cancel); on error nothing changed.
    ///
    /// ```
    /// use tickwheel_service::{Builder, Delivery};
    ///
    /// let (delivery, _fired) = Delivery::channel();
    /// let driver = Builder::new().build_manual(delivery).unwrap();
    /// let key = driver.handle().schedule_at_tick(10, ()).unwrap();
    /// driver.handle().reset_at_tick(key, 20).unwrap();
    /// assert_eq!(driver.handle().deadline(key), driver.clock().instant_of(20));
    /// ```
    #[inline]
    pub fn reset_at_tick(&self, key: ServiceKey, tick: Tick) -> Result<(), KeyError> {
        self.shared.reset(key, tick)
    }

    /// The deadline (rounded up to its tick) of a pending timer; `None` if it is not pending.
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    /// use tickwheel_service::{Builder, Delivery};
    ///
    /// let (delivery, _fired) = Delivery::channel();
    /// let service = Builder::new().build(delivery).unwrap();
    /// let at = Instant::now() + Duration::from_secs(5);
    /// let key = service.schedule_at(at, ()).unwrap();
    /// assert!(service.deadline(key).unwrap() >= at);
    /// ```
    #[must_use]
    pub fn deadline(&self, key: ServiceKey) -> Option<Instant> {
        let tick = self.shared.deadline(key)?;
        self.shared.clock.instant_of(tick)
    }

    /// Timers pending now (locks each shard briefly).
    ///
    /// ```
    /// # use tickwheel_service::{Builder, Delivery};
    /// let (delivery, _fired) = Delivery::<()>::channel();
    /// let service = Builder::new().build(delivery).unwrap();
    /// assert_eq!(service.pending(), 0);
    /// ```
    #[must_use]
    pub fn pending(&self) -> usize {
        self.shared.pending()
    }

    /// Releases the memory the pending timers do not need, shard by shard
    /// ([`Timer::shrink_to_fit`]): after a burst has passed,
    /// memory follows the live count again. Every key stays valid. Each shard's lock is held
    /// for its O(n) pass, so call it at a quiet moment (say once a minute), not per operation.
    ///
    /// ```
    /// # use tickwheel_service::{Builder, Delivery};
    /// # use std::time::Duration;
    /// let (delivery, _fired) = Delivery::channel();
    /// let service = Builder::new().shards(1).build(delivery).unwrap();
    /// let keep = service.schedule_after(Duration::from_secs(60), u32::MAX).unwrap();
    /// let burst: Vec<_> = (0..100_000)
    ///     .map(|i| service.schedule_after(Duration::from_secs(30), i).unwrap())
    ///     .collect();
    /// let peak = service.stats().allocated_bytes;
    /// for key in burst {
    ///     service.cancel(key).unwrap();
    /// }
    /// service.shrink_to_fit();
    /// assert!(service.stats().allocated_bytes * 10 < peak);
    /// assert_eq!(service.cancel(keep), Ok(u32::MAX));
    /// ```
    pub fn shrink_to_fit(&self) {
        self.shared.shrink_to_fit();
    }

    /// Counters and the lateness histogram; see [`ServiceStats`].
    ///
    /// ```
    /// # use tickwheel_service::{Builder, Delivery};
    /// let (delivery, _fired) = Delivery::<()>::channel();
    /// let service = Builder::new().shards(3).build(delivery).unwrap();
    /// assert_eq!(service.stats().shards, 3);
    /// ```
    #[must_use]
    pub fn stats(&self) -> ServiceStats {
        self.shared.stats()
    }

    /// The clock that turns instants into ticks (origin = when the service was built).
    ///
    /// ```
    /// # use tickwheel_service::{Builder, Delivery};
    /// # use std::time::Duration;
    /// let (delivery, _fired) = Delivery::<()>::channel();
    /// let service = Builder::new().build(delivery).unwrap();
    /// assert_eq!(service.clock().resolution(), Duration::from_millis(1));
    /// ```
    #[must_use]
    pub fn clock(&self) -> TickClock {
        self.shared.clock
    }

    /// The latest tick a turn of the driver polled at, 0 before the first: the clock has
    /// reached its start, so every deadline that rounds up to it or an earlier tick has passed.
    /// A lower bound on [`TickClock::now_tick`] that costs one atomic load instead of a clock
    /// read; an idle driver sleeps until its next deadline, so it can lag the clock by that
    /// much.
    ///
    /// ```
    /// use std::time::Duration;
    /// use tickwheel_service::{Builder, Delivery};
    /// let (delivery, _fired) = Delivery::<()>::channel();
    /// let mut driver = Builder::new().build_manual(delivery).unwrap();
    /// let handle = driver.handle();
    /// assert_eq!(handle.last_turn_tick(), 0);
    /// driver.turn(driver.clock().origin() + Duration::from_millis(7));
    /// assert_eq!(handle.last_turn_tick(), 7);
    /// ```
    #[must_use]
    pub fn last_turn_tick(&self) -> Tick {
        self.shared.turned.load(Ordering::Relaxed)
    }

    /// Takes the timers already due that a late driver thread has not taken yet, and hands
    /// them to the caller instead of the delivery: each is then the caller's to deliver, and
    /// the driver never sees it. `seen` is a tick the caller's clock reached lately (as
    /// [`TickClock::now_tick`] gave it). When nothing is due by `seen` (the driver sleeps past
    /// it), or a turn has looked at `seen` already, this is two atomic loads and an empty
    /// `Vec`. Otherwise it polls every shard at the clock's own `now` (never early, whatever
    /// `seen` says), at most [`BATCH`](crate::BATCH) timers from each.
    ///
    /// For a thread that makes timers anyway and can deliver cheaply where it is, so that
    /// timers coming due together need not wait for the driver thread to get a core while busy
    /// threads hold them all: `tickwheel-async` calls it when a sleep arms, and wakes each
    /// task itself. On a [`ManualDriver`](crate::ManualDriver), whose clock is the caller's, it
    /// takes nothing. The counters and the lateness histogram count what it takes as fired.
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    /// use tickwheel_service::{Builder, Delivery};
    ///
    /// let (delivery, delivered) = Delivery::channel();
    /// let service = Builder::new().build(delivery).unwrap();
    /// service.schedule_after(Duration::from_millis(2), "ping").unwrap();
    /// std::thread::sleep(Duration::from_millis(5));
    /// let seen = service.clock().now_tick(Instant::now());
    /// // Taken here if the driver thread had not delivered it yet: once, one way or the other.
    /// let taken = service.take_due(seen);
    /// let by_driver = delivered.recv_timeout(Duration::from_secs(1)).ok();
    /// assert_eq!(taken.len() + usize::from(by_driver.is_some()), 1);
    /// assert_eq!(service.stats().fired, 1);
    /// ```
    #[inline]
    #[must_use = "the timers taken are the caller's to deliver"]
    pub fn take_due(&self, seen: Tick) -> Vec<Fired<T>> {
        self.shared.take_due(seen)
    }

    /// Whether the service was shut down (then every call fails with a `Shutdown` error).
    ///
    /// ```
    /// # use tickwheel_service::{Builder, Delivery};
    /// let (delivery, _fired) = Delivery::<()>::channel();
    /// let service = Builder::new().build(delivery).unwrap();
    /// let handle = service.handle();
    /// drop(service);
    /// assert!(handle.is_shutdown());
    /// ```
    #[must_use]
    pub fn is_shutdown(&self) -> bool {
        self.shared.is_shutdown()
    }
}

/// The timer service: owns the driver thread. Use it through its [`TimerHandle`] (it derefs to
/// one; [`handle`](Self::handle) gives clones for other threads).
///
/// `T` is the payload; `X` the tickwheel [`Timer`] each shard uses (default
/// [`HierarchicalWheel`]; any implementation, or `Box<dyn Timer<T> + Send>` picked at run time
/// via [`Builder::build_with`](crate::Builder::build_with)).
///
/// [`shutdown`](Self::shutdown) returns every unfired payload; dropping the service shuts it
/// down too (dropping those payloads) and joins the driver thread.
///
/// ```
/// use std::time::Duration;
/// use tickwheel_service::{Builder, Delivery, TimerService};
///
/// let (delivery, fired) = Delivery::channel();
/// let service: TimerService<u64> = Builder::new()
///     .resolution(Duration::from_millis(1))
///     .shards(4)
///     .capacity(100_000)
///     .build(delivery)
///     .unwrap();
/// service.schedule_after(Duration::from_millis(2), 42).unwrap();
/// service.schedule_after(Duration::from_secs(60), 43).unwrap();
/// assert_eq!(fired.recv().unwrap().payload, 42);
/// let unfired = service.shutdown();
/// assert_eq!(unfired.len(), 1);
/// assert!(fired.recv().is_err()); // the driver is gone: the channel is closed
/// ```
pub struct TimerService<T, X: Timer<T> = HierarchicalWheel<T>> {
    handle: TimerHandle<T, X>,
    driver: Option<JoinHandle<()>>,
}

impl<T, X: Timer<T>> TimerService<T, X> {
    pub(crate) fn new(shared: Arc<Shared<T, X>>, driver: JoinHandle<()>) -> Self {
        Self {
            handle: TimerHandle::new(shared),
            driver: Some(driver),
        }
    }

    /// A handle for another thread (same as `Clone` on the handle this derefs to).
    ///
    /// ```
    /// # use tickwheel_service::{Builder, Delivery};
    /// let (delivery, _fired) = Delivery::<()>::channel();
    /// let service = Builder::new().build(delivery).unwrap();
    /// let handle = service.handle();
    /// std::thread::spawn(move || handle.pending()).join().unwrap();
    /// ```
    #[must_use]
    pub fn handle(&self) -> TimerHandle<T, X> {
        self.handle.clone()
    }

    /// Shuts down: every pending timer is handed back (deadline order), the driver finishes
    /// the delivery it is in and exits (closing the delivery channel), and every later call
    /// through any handle fails with a `Shutdown` error. Cancel and fire that race shutdown
    /// still have one winner each: a timer is delivered, cancelled or returned here, once.
    ///
    /// ```
    /// use std::time::Duration;
    /// use tickwheel_service::{Builder, Delivery, KeyError, ScheduleError};
    ///
    /// let (delivery, _fired) = Delivery::channel();
    /// let service = Builder::new().build(delivery).unwrap();
    /// let handle = service.handle();
    /// let key = handle.schedule_after(Duration::from_secs(60), "a").unwrap();
    /// let unfired = service.shutdown();
    /// assert_eq!(unfired.iter().map(|u| u.payload).collect::<Vec<_>>(), ["a"]);
    /// assert_eq!(handle.cancel(key), Err(KeyError::Shutdown));
    /// assert!(matches!(handle.schedule_after(Duration::ZERO, "b"), Err(ScheduleError::Shutdown("b"))));
    /// ```
    #[must_use = "the unfired payloads are handed back here"]
    pub fn shutdown(mut self) -> Vec<Unfired<T>> {
        self.stop()
    }

    fn stop(&mut self) -> Vec<Unfired<T>> {
        let unfired = self.handle.shared.close();
        if let Some(driver) = self.driver.take() {
            // A callback that shuts the service down runs on the driver thread: it cannot join
            // itself; the driver exits when the callback returns.
            if driver.thread().id() != std::thread::current().id() {
                // The driver catches callback panics, so it only ends by returning.
                let _ = driver.join();
            }
        }
        unfired
    }
}

impl<T, X: Timer<T>> Deref for TimerService<T, X> {
    type Target = TimerHandle<T, X>;

    fn deref(&self) -> &Self::Target {
        &self.handle
    }
}

impl<T, X: Timer<T>> Drop for TimerService<T, X> {
    fn drop(&mut self) {
        let unfired = self.stop();
        drop(unfired);
    }
}

impl<T, X: Timer<T>> fmt::Debug for TimerService<T, X> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TimerService")
            .field("handle", &self.handle)
            .finish_non_exhaustive()
    }
}
