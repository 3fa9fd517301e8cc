//! Await [`tickwheel`] timers from any async runtime, in tokio's shapes:
//! [`sleep`](fn@sleep), [`timeout`](fn@timeout) and a [`DelayQueue`], built on std `Future`
//! and `Waker` alone, with no runtime dependency.
//!
//! ```
//! use std::time::Duration;
//!
//! futures_executor::block_on(async {
//!     let () = tickwheel_async::sleep(Duration::from_millis(5)).await; // no setup
//!     let never = std::future::pending::<()>();
//!     let cut = tickwheel_async::timeout(Duration::from_millis(5), never).await;
//!     assert!(cut.is_err()); // Err(Elapsed)
//! });
//! ```
//!
//! The free functions ([`sleep`](fn@sleep), [`sleep_until`], [`timeout`](fn@timeout),
//! [`timeout_at`], [`DelayQueue::new`]) use a process-wide default [`AsyncTimers`], started on
//! first use (1 ms ticks, one shard per core, a driver thread named `tickwheel-async`) and kept
//! for the life of the process; [`default_handle`] reaches it. For timers of your own
//! (another resolution, a capacity, a shutdown), make an [`AsyncTimers`] and use its
//! [`Handle`], which has the same methods. Either way the timers are a [`tickwheel_service`]
//! timer service whose payload is a small shared slot per armed timer: the driver thread fires
//! the slot, which wakes the task that last polled it. Any executor works (tokio, smol,
//! `futures`' `block_on`): nothing here needs a runtime context, so a `Sleep` can be made on
//! one thread and awaited on another.
//!
//! # Guarantees
//! - **Never early.** A sleep completes no earlier than its deadline (rounded up to the
//!   service's tick, 1 ms by default).
//! - **Lazy.** Making a [`Sleep`] or a [`Timeout`] reads the clock and calls nothing on the
//!   service. A sleep arms its timer at its first poll that would return `Pending`. Its first
//!   poll completes without arming when the deadline had passed when the sleep was made, or by
//!   the service driver's latest turn; it reads no clock, so a deadline that passed in between
//!   arms a timer at a past tick, which wakes the driver to fire it at once. So a sleep
//!   dropped unpolled, or a timeout whose future is ready at its first poll, costs no timer at
//!   all.
//! - **Fired by the tasks too.** The service's driver thread fires the sleeps. When it is
//!   late, as when busy worker threads keep it off a core while many sleeps come due, a sleep
//!   that arms first takes the timers already due and wakes their tasks on its own thread
//!   ([`TimerHandle::take_due`](tickwheel_service::TimerHandle::take_due)), as tokio's
//!   workers fire their timers themselves. That costs one more atomic load when the driver is
//!   not late.
//! - **Drop cancels.** Dropping an armed, pending [`Sleep`] (or [`Timeout`]) cancels its timer
//!   at once: the service frees it, and nothing wakes the task after the drop.
//! - **One winner.** A drop or a [`reset`](Sleep::reset) racing the fire either wins (the
//!   timer never fires) or loses (it fired; a reset then leaves the sleep unarmed, to be armed
//!   again at its next poll).
//! - **No hang, no silent pass.** A timer that cannot fire (its timers were shut down, every
//!   shard is full or failed) makes the [`Sleep`] or [`Timeout`] polling it panic with a
//!   message naming the [`Error`], as tokio's sleep panics without a timer driver;
//!   [`Sleep::checked`] and [`Timeout::checked`] return the [`Error`] instead. Shutting down
//!   (or dropping) an [`AsyncTimers`] wakes every armed sleep so it sees this at once. The
//!   default timers are never shut down.
//!
//! # Costs
//! | operation | cost |
//! |---|---|
//! | make a `Sleep` or `Timeout` | one clock read and a handle clone (one atomic increment); no allocation, no service call |
//! | first poll | three atomic loads (the shutdown flag, the driver's latest tick and its wake-up tick); a deadline passed by then completes here, without a service call; a late driver's due timers are fired here first |
//! | first poll that must wait | that, plus one slot allocation and one schedule on the service (one shard lock) |
//! | later polls | one slot lock; a waker clone only when it changed |
//! | `reset` | armed: one reset on the service (one shard lock); unarmed or completed, or when that reset finds the timer fired: one clock read |
//! | drop | unarmed or completed: none; armed: one cancel (one shard lock), and the slot is freed |
//! | fire | the driver (or a sleep arming while the driver is late) locks the slot and wakes its waker |
//! | fire in a burst | a sleep that arms while the driver is behind takes up to [`BATCH`](tickwheel_service::BATCH) due timers per shard and wakes their tasks on its own thread; lateness against tokio's, futures-timer's and async-io's sleeps: `cargo run --release -p tickwheel-async --example async_bench -- --burst` (the repository's `docs/embedding.md` has a run) |
//!
//! | item | what |
//! |---|---|
//! | [`sleep`](fn@sleep), [`sleep_until`], [`timeout`](fn@timeout), [`timeout_at`] | on the default timers |
//! | [`AsyncTimers`], [`Handle`] | timers of your own, and the same four methods on them |
//! | [`Sleep`], [`Timeout`] | the futures (they panic on a timer that cannot fire) |
//! | [`CheckedSleep`], [`CheckedTimeout`] | the same, returning an [`Error`] instead |
//! | [`DelayQueue`], [`Expired`] | a task's own timers over any `Timer`, woken through a [`Wakeup`] |
//! | [`Elapsed`], [`Error`] | a deadline passed first; a timer cannot fire |
//! | `HyperTimer` (feature `hyper`) | hyper 1.x's `rt::Timer` on these timers, for its header read timeout and HTTP/2 pings |
//!
//! # Memory per sleep
//! A [`Sleep`] is 40 bytes, wherever the task keeps it (a [`Timeout`] is its future plus
//! one). Unarmed or completed, that is all. Armed and pending, add its slot (24 bytes in an
//! `Arc`: 40, 48 with the allocator's header) and the service's wheel entry (a 24-byte slab
//! entry and an 8-byte list link). Without `unsafe`, the wheel cannot link the future itself,
//! as tokio's intrusive timer entries do, so the slot is the price of sharing a waker safely.

mod error;
#[cfg(feature = "hyper")]
mod hyper_timer;
mod queue;
mod sleep;
mod slot;
mod timeout;

use std::future::Future;
use std::sync::{Arc, LazyLock};
use std::time::{Duration, Instant};

pub use error::{Elapsed, Error};
#[cfg(feature = "hyper")]
pub use hyper_timer::HyperTimer;
pub use queue::{DelayQueue, Expired, Wakeup};
pub use sleep::{CheckedSleep, Sleep};
pub use tickwheel::{InsertError, StaleKeyError, TickClock, TimerKey};
pub use tickwheel_service::{BuildError, Builder, ServiceStats};
pub use timeout::{CheckedTimeout, Timeout};

use tickwheel_service::{Delivery, Fired, TimerHandle, TimerService};

use slot::{Done, Slot};

/// The default timers behind the free functions: started on first use, never shut down.
static DEFAULT: LazyLock<AsyncTimers> = LazyLock::new(|| {
    AsyncTimers::with_builder(Builder::new().thread_name("tickwheel-async"))
        .unwrap_or_else(|e| panic!("tickwheel-async cannot start its default timers: {e}"))
});

/// The handle of the process-wide default timers that [`sleep`](fn@sleep), [`sleep_until`],
/// [`timeout`](fn@timeout), [`timeout_at`] and [`DelayQueue::new`] use; the first call starts
/// them (1 ms ticks, one shard per core, a driver thread named `tickwheel-async`). They live
/// as long as the process and are never shut down.
///
/// # Panics
/// When the default timers' driver thread cannot start (the first call that needs them panics,
/// and so does every later one).
///
/// ```
/// use std::time::Duration;
/// let h = tickwheel_async::default_handle();
/// let before = h.stats().scheduled;
/// drop(tickwheel_async::sleep(Duration::from_secs(1))); // never polled: never armed
/// assert!(h.stats().scheduled >= before); // other threads may use the default timers too
/// ```
#[must_use]
pub fn default_handle() -> &'static Handle {
    &DEFAULT.handle
}

/// A sleep of `duration` from now, on the default timers: `sleep(d).await` yields `()` once
/// `d` has passed (rounded up to the 1 ms tick). Nothing is armed until it is polled.
///
/// # Panics
/// As [`default_handle`]; and awaiting the sleep panics if its timer cannot fire (see
/// [`Sleep`]).
///
/// ```
/// use std::time::{Duration, Instant};
/// let start = Instant::now();
/// futures_executor::block_on(tickwheel_async::sleep(Duration::from_millis(5)));
/// assert!(start.elapsed() >= Duration::from_millis(5));
/// ```
pub fn sleep(duration: Duration) -> Sleep {
    default_handle().sleep(duration)
}

/// A sleep until `deadline`, on the default timers (done at its first poll, for a deadline
/// already past).
///
/// # Panics
/// As [`sleep`](fn@sleep).
///
/// ```
/// use std::time::{Duration, Instant};
/// let at = Instant::now() + Duration::from_millis(3);
/// futures_executor::block_on(tickwheel_async::sleep_until(at));
/// assert!(Instant::now() >= at);
/// ```
pub fn sleep_until(deadline: Instant) -> Sleep {
    default_handle().sleep_until(deadline)
}

/// `future` with a deadline `duration` from now, on the default timers: `Ok(output)` if it
/// completes first, else `Err(`[`Elapsed`]`)`. A future ready at its first poll arms no timer.
///
/// # Panics
/// As [`sleep`](fn@sleep).
///
/// ```
/// use std::time::Duration;
/// let t = tickwheel_async::timeout(Duration::from_secs(1), async { "done" });
/// assert_eq!(futures_executor::block_on(t), Ok("done"));
/// ```
pub fn timeout<F: Future>(duration: Duration, future: F) -> Timeout<F> {
    default_handle().timeout(duration, future)
}

/// `future` with the deadline `deadline`, on the default timers.
///
/// # Panics
/// As [`sleep`](fn@sleep).
///
/// ```
/// use std::time::{Duration, Instant};
/// let at = Instant::now() + Duration::from_millis(3);
/// let t = tickwheel_async::timeout_at(at, std::future::pending::<()>());
/// assert!(futures_executor::block_on(t).is_err());
/// assert!(Instant::now() >= at);
/// ```
pub fn timeout_at<F: Future>(deadline: Instant, future: F) -> Timeout<F> {
    default_handle().timeout_at(deadline, future)
}

/// Timers of your own: a timer service and its driver thread, which fire sleeps and wake
/// their tasks. Dropping it (or [`shutdown`](Self::shutdown)) stops the driver and wakes every
/// armed sleep, whose poll then panics (or, [`checked`](Sleep::checked), returns
/// [`Error::Shutdown`]).
///
/// ```
/// use std::time::Duration;
/// use tickwheel_async::{AsyncTimers, Builder};
/// let builder = Builder::new().resolution(Duration::from_micros(100));
/// let timers = AsyncTimers::with_builder(builder).unwrap();
/// let handle = timers.handle(); // Clone + Send + Sync, for every task
/// futures_executor::block_on(handle.sleep(Duration::from_millis(1)));
/// assert_eq!(timers.shutdown(), 0);
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

    /// Stops the driver and wakes every armed sleep, which then fails with
    /// [`Error::Shutdown`] (a panic at its poll, or the error through
    /// [`checked`](Sleep::checked)); returns how many were armed. Every sleep not yet
    /// completed fails the same way at its next poll, armed or not.
    ///
    /// ```
    /// use std::time::Duration;
    /// use tickwheel_async::{AsyncTimers, Error};
    /// let timers = AsyncTimers::new().unwrap();
    /// let h = timers.handle();
    /// let unpolled = h.sleep(Duration::from_secs(60)); // not armed: not counted
    /// assert_eq!(timers.shutdown(), 0);
    /// assert_eq!(futures_executor::block_on(unpolled.checked()), Err(Error::Shutdown));
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

/// Makes sleeps, timeouts and delay queues on one [`AsyncTimers`] (or the default timers,
/// through [`default_handle`]); cheap to clone, `Send + Sync`. Its methods are the free
/// functions' twins.
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
    /// A sleep of `duration` from now (unarmed until polled).
    ///
    /// ```
    /// use std::time::Duration;
    /// let timers = tickwheel_async::AsyncTimers::new().unwrap();
    /// futures_executor::block_on(timers.handle().sleep(Duration::from_millis(2)));
    /// ```
    pub fn sleep(&self, duration: Duration) -> Sleep {
        let (clock, now) = (self.inner.clock(), Instant::now());
        Sleep::new(
            self.clone(),
            clock.deadline_after(now, duration),
            clock.now_tick(now),
        )
    }

    /// A sleep until `deadline` (done at its first poll, for a deadline already past).
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    /// let timers = tickwheel_async::AsyncTimers::new().unwrap();
    /// let at = Instant::now() + Duration::from_millis(2);
    /// futures_executor::block_on(timers.handle().sleep_until(at));
    /// assert!(Instant::now() >= at);
    /// ```
    pub fn sleep_until(&self, deadline: Instant) -> Sleep {
        let clock = self.inner.clock();
        Sleep::new(
            self.clone(),
            clock.deadline_tick(deadline),
            clock.now_tick(Instant::now()),
        )
    }

    /// `future`, ended with `Err(`[`Elapsed`]`)` if it takes longer than `duration`.
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

    /// `future`, ended with `Err(`[`Elapsed`]`)` if it is not done by `deadline`.
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

    /// An empty [`DelayQueue`] woken by a sleep of these timers and on their clock, so a
    /// deadline rounds up to a tick once: the tick the queue keeps is the one its wake-up
    /// sleep waits for.
    ///
    /// ```
    /// use std::time::Duration;
    /// let timers = tickwheel_async::AsyncTimers::new().unwrap();
    /// let mut queue = timers.handle().delay_queue();
    /// queue.insert("x", Duration::from_millis(1)).unwrap();
    /// let e = futures_executor::block_on(std::future::poll_fn(|cx| queue.poll_expired(cx)));
    /// assert_eq!(e.unwrap().unwrap().payload, "x");
    /// ```
    #[must_use]
    pub fn delay_queue<T>(&self) -> DelayQueue<T> {
        DelayQueue::with_parts(
            tickwheel::HierarchicalWheel::new(),
            self.clock(),
            self.sleep(Duration::MAX),
        )
    }

    /// Sleeps armed and not yet fired or dropped (an unpolled sleep is not armed).
    ///
    /// ```
    /// use std::time::Duration;
    /// let timers = tickwheel_async::AsyncTimers::new().unwrap();
    /// let h = timers.handle();
    /// let mut s = Box::pin(h.sleep(Duration::from_secs(9)));
    /// assert_eq!(h.pending(), 0);
    /// let waker = std::sync::Arc::new(Noop).into();
    /// assert!(s.as_mut().poll(&mut std::task::Context::from_waker(&waker)).is_pending());
    /// assert_eq!(h.pending(), 1);
    /// drop(s);
    /// assert_eq!(h.pending(), 0);
    /// # use std::future::Future;
    /// # struct Noop;
    /// # impl std::task::Wake for Noop { fn wake(self: std::sync::Arc<Self>) {} }
    /// ```
    #[must_use]
    pub fn pending(&self) -> usize {
        self.inner.pending()
    }

    /// The service's counters (scheduled, cancelled, fired, lateness, memory, ...).
    ///
    /// ```
    /// use std::time::Duration;
    /// let timers = tickwheel_async::AsyncTimers::new().unwrap();
    /// let h = timers.handle();
    /// drop(h.sleep(Duration::from_secs(1))); // never polled: never armed
    /// let ready = h.timeout(Duration::from_secs(1), async { 1 });
    /// assert_eq!(futures_executor::block_on(ready), Ok(1)); // ready at once: never armed
    /// assert_eq!(h.stats().scheduled, 0);
    /// ```
    #[must_use]
    pub fn stats(&self) -> ServiceStats {
        self.inner.stats()
    }

    /// The clock that turns instants into these timers' ticks (origin: when they started).
    /// A [`DelayQueue`] built with it ([`DelayQueue::with_parts`]) rounds a deadline to the
    /// same tick as its wake-up sleep.
    ///
    /// ```
    /// let timers = tickwheel_async::AsyncTimers::new().unwrap();
    /// let clock: tickwheel_async::TickClock = timers.handle().clock();
    /// assert_eq!(clock.resolution(), std::time::Duration::from_millis(1));
    /// ```
    #[must_use]
    pub fn clock(&self) -> TickClock {
        self.inner.clock()
    }
}
