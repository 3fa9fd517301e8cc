//! Await [`tickwheel`] timers from any async runtime: [`Sleep`], [`Timeout`] and a
//! [`DelayQueue`], built on std `Future` and `Waker` alone, with no runtime dependency.
//!
//! [`AsyncTimers`] owns a [`tickwheel_service`] timer service whose payload is a small shared
//! slot per timer: the driver thread fires the slot, which wakes the task that last polled it.
//! Any executor works (tokio, smol, `futures`' `block_on`): nothing here needs a runtime
//! context, so a `Sleep` can be made on one thread and awaited on another.
//!
//! ```
//! use std::time::Duration;
//! use tickwheel_async::{AsyncTimers, TimeoutError};
//!
//! let timers = AsyncTimers::new().unwrap();
//! let handle = timers.handle(); // Clone + Send + Sync, for every task
//! futures_executor::block_on(async {
//!     handle.sleep(Duration::from_millis(5)).await.unwrap();
//!     let idle = handle.timeout(Duration::from_millis(5), std::future::pending::<()>());
//!     assert_eq!(idle.await, Err(TimeoutError::Elapsed));
//! });
//! ```
//!
//! # Guarantees
//! - **Never early.** A sleep completes no earlier than its deadline (the service rounds it up
//!   to its tick, 1 ms by default).
//! - **Drop cancels.** Dropping a pending [`Sleep`] (or [`Timeout`]) cancels its timer at
//!   once: the service frees it, and nothing wakes the task after the drop.
//! - **One winner.** A drop or a [`reset`](Sleep::reset) racing the fire either wins (the
//!   timer never fires) or loses (it fired, and a reset arms a new timer).
//! - **Clear errors.** A sleep that cannot be armed, or whose service shut down before it
//!   fired, completes with an [`Error`]; dropping [`AsyncTimers`] shuts down and wakes every
//!   pending sleep with [`Error::Shutdown`].
//!
//! # Costs
//! | operation | cost |
//! |---|---|
//! | make a `Sleep` | one slot allocation and one schedule on the service (one shard lock) |
//! | drop a pending `Sleep` | one cancel (one shard lock); the slot is freed |
//! | poll | one slot lock; a waker clone only when it changed |
//! | fire | the driver locks the slot and wakes its waker |
//!
//! | item | what |
//! |---|---|
//! | [`AsyncTimers`] | owns the service and its driver thread |
//! | [`Handle`] | `sleep`, `sleep_until`, `timeout`, `timeout_at` |
//! | [`Sleep`], [`Timeout`] | the futures |
//! | [`DelayQueue`] | a task's own timers over any `Timer`, woken through a [`Wakeup`] |
//! | [`Error`], [`TimeoutError`] | why a future could not be timed |
//!
//! # Memory per pending sleep
//! The `Sleep` itself (40 bytes, wherever the task keeps it), its slot (24 bytes in an `Arc`:
//! 40, 48 with the allocator's header), and the service's wheel entry (a 24-byte slab slot and
//! a 12-byte reference). Without `unsafe`, the wheel cannot link the future itself, as
//! tokio's intrusive timer entries do, so the slot is the price of sharing a waker safely.

mod error;
mod queue;
mod sleep;
mod slot;
mod timeout;

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

pub use error::{Error, TimeoutError};
pub use queue::{DelayQueue, Wakeup};
pub use sleep::Sleep;
pub use tickwheel_service::{BuildError, Builder};
pub use timeout::Timeout;

use tickwheel::Tick;
use tickwheel_service::{Delivery, Fired, ServiceKey, TimerHandle, TimerService};

use slot::{Done, Slot};

/// The async timers: a timer service and its driver thread, which fire sleeps and wake their
/// tasks. Dropping it (or [`shutdown`](Self::shutdown)) stops the driver and completes every
/// pending sleep with [`Error::Shutdown`].
///
/// ```
/// let timers = tickwheel_async::AsyncTimers::new().unwrap();
/// let handle = timers.handle();
/// let sleep = handle.sleep(std::time::Duration::from_secs(60));
/// assert_eq!(timers.shutdown(), 1);
/// assert_eq!(futures_executor::block_on(sleep), Err(tickwheel_async::Error::Shutdown));
/// ```
pub struct AsyncTimers {
    /// `None` once shut down.
    service: Option<TimerService<Arc<Slot>>>,
    handle: Handle,
}

impl AsyncTimers {
    /// Timers on a service with the default [`Builder`]: 1 ms ticks, one shard per core.
    ///
    /// # Errors
    /// [`BuildError`] when the driver thread cannot start.
    ///
    /// ```
    /// let timers = tickwheel_async::AsyncTimers::new().unwrap();
    /// # drop(timers);
    /// ```
    pub fn new() -> Result<Self, BuildError> {
        Self::with_builder(Builder::new())
    }

    /// Timers on a service built by `builder` (resolution, shards, capacity, preallocation).
    ///
    /// # Errors
    /// As [`Builder::build`].
    ///
    /// ```
    /// use tickwheel_async::{AsyncTimers, Builder};
    /// let timers = AsyncTimers::with_builder(Builder::new().shards(2).preallocate(1_000)).unwrap();
    /// # drop(timers);
    /// ```
    pub fn with_builder(builder: Builder) -> Result<Self, BuildError> {
        let service = builder.build(Delivery::callback(|fired: Fired<Arc<Slot>>| {
            fired.payload.finish(Done::Fired);
        }))?;
        let handle = Handle {
            inner: service.handle(),
        };
        Ok(Self {
            service: Some(service),
            handle,
        })
    }

    /// A handle for making sleeps and timeouts, from any thread or task.
    ///
    /// ```
    /// let timers = tickwheel_async::AsyncTimers::new().unwrap();
    /// let h = timers.handle();
    /// std::thread::spawn(move || drop(h.sleep(std::time::Duration::from_secs(1)))).join().unwrap();
    /// ```
    #[must_use]
    pub fn handle(&self) -> Handle {
        self.handle.clone()
    }

    /// Stops the driver and completes every pending sleep with [`Error::Shutdown`], waking its
    /// task; returns how many were pending. Every later sleep fails the same way.
    ///
    /// ```
    /// let timers = tickwheel_async::AsyncTimers::new().unwrap();
    /// let h = timers.handle();
    /// assert_eq!(timers.shutdown(), 0);
    /// let late = h.sleep(std::time::Duration::from_millis(1));
    /// assert_eq!(futures_executor::block_on(late), Err(tickwheel_async::Error::Shutdown));
    /// ```
    pub fn shutdown(mut self) -> usize {
        self.stop()
    }

    fn stop(&mut self) -> usize {
        let Some(service) = self.service.take() else {
            return 0;
        };
        let unfired = service.shutdown();
        for u in &unfired {
            u.payload.finish(Done::Shutdown);
        }
        unfired.len()
    }
}

impl Drop for AsyncTimers {
    fn drop(&mut self) {
        self.stop();
    }
}

impl std::fmt::Debug for AsyncTimers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AsyncTimers")
            .field("shut_down", &self.service.is_none())
            .finish()
    }
}

/// Makes sleeps and timeouts on one [`AsyncTimers`]; cheap to clone, `Send + Sync`.
///
/// ```
/// let timers = tickwheel_async::AsyncTimers::new().unwrap();
/// let h = timers.handle();
/// assert_eq!(h.pending(), 0);
/// ```
#[derive(Clone, Debug)]
pub struct Handle {
    pub(crate) inner: TimerHandle<Arc<Slot>>,
}

impl Handle {
    /// Arms `slot` at `tick` (`u64::MAX`: never).
    fn arm(&self, tick: Tick, slot: &Arc<Slot>) -> Result<ServiceKey, Error> {
        self.inner
            .schedule_at_tick(tick, Arc::clone(slot))
            .map_err(Error::from)
    }

    /// A sleep of `duration` from now.
    ///
    /// ```
    /// use std::time::Duration;
    /// let timers = tickwheel_async::AsyncTimers::new().unwrap();
    /// futures_executor::block_on(timers.handle().sleep(Duration::from_millis(2))).unwrap();
    /// ```
    pub fn sleep(&self, duration: Duration) -> Sleep {
        let tick = self.inner.clock().deadline_after(Instant::now(), duration);
        Sleep::arm(self.clone(), tick)
    }

    /// A sleep until `deadline` (at once, one tick on, for a deadline already past).
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    /// let timers = tickwheel_async::AsyncTimers::new().unwrap();
    /// let at = Instant::now() + Duration::from_millis(2);
    /// futures_executor::block_on(timers.handle().sleep_until(at)).unwrap();
    /// assert!(Instant::now() >= at);
    /// ```
    pub fn sleep_until(&self, deadline: Instant) -> Sleep {
        let tick = self.inner.clock().deadline_tick(deadline);
        Sleep::arm(self.clone(), tick)
    }

    /// `future`, ended with [`TimeoutError::Elapsed`] if it takes longer than `duration`.
    ///
    /// ```
    /// use std::time::Duration;
    /// let timers = tickwheel_async::AsyncTimers::new().unwrap();
    /// let t = timers.handle().timeout(Duration::from_secs(1), async { "done" });
    /// assert_eq!(futures_executor::block_on(t), Ok("done"));
    /// ```
    pub fn timeout<F: Future>(&self, duration: Duration, future: F) -> Timeout<F> {
        Timeout::new(future, self.sleep(duration))
    }

    /// `future`, ended with [`TimeoutError::Elapsed`] if it is not done by `deadline`.
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    /// let timers = tickwheel_async::AsyncTimers::new().unwrap();
    /// let at = Instant::now() + Duration::from_millis(3);
    /// let t = timers.handle().timeout_at(at, std::future::pending::<()>());
    /// assert!(futures_executor::block_on(t).is_err());
    /// ```
    pub fn timeout_at<F: Future>(&self, deadline: Instant, future: F) -> Timeout<F> {
        Timeout::new(future, self.sleep_until(deadline))
    }

    /// Sleeps armed and not yet fired or dropped.
    ///
    /// ```
    /// let timers = tickwheel_async::AsyncTimers::new().unwrap();
    /// let h = timers.handle();
    /// let s = h.sleep(std::time::Duration::from_secs(9));
    /// assert_eq!(h.pending(), 1);
    /// drop(s);
    /// assert_eq!(h.pending(), 0);
    /// ```
    #[must_use]
    pub fn pending(&self) -> usize {
        self.inner.pending()
    }

    /// The service's counters (scheduled, cancelled, fired, lateness, memory, ...).
    ///
    /// ```
    /// let timers = tickwheel_async::AsyncTimers::new().unwrap();
    /// drop(timers.handle().sleep(std::time::Duration::from_secs(1)));
    /// assert_eq!(timers.handle().stats().cancelled, 1);
    /// ```
    #[must_use]
    pub fn stats(&self) -> tickwheel_service::ServiceStats {
        self.inner.stats()
    }
}
