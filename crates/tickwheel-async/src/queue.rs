//! [`DelayQueue`]: a task's own timers, over any [`Timer`], in the shape of tokio-util's
//! `DelayQueue`; and [`Wakeup`], how it gets its task woken at the next deadline.
//!
//! The queue is owned by one task and needs no lock: its timers live in a plain `Timer` (a
//! [`HierarchicalWheel`] by default). Only the wake-up at the earliest deadline goes outside,
//! through a [`Wakeup`]:
//! - a [`Sleep`] of the async service ([`DelayQueue::new`] on the default timers,
//!   [`Handle::delay_queue`] on others): one service timer per queue, armed while the task
//!   waits and reset to the queue's earliest deadline, so a queue of a million timers costs
//!   the service one. The queue keeps its ticks on the service's clock, so a deadline rounds
//!   up to a tick once;
//! - or the runtime's own sleep: implement [`Wakeup`] for it, a few lines (below for tokio),
//!   and build the queue with [`DelayQueue::with_parts`].
//!
//! ```
//! use std::pin::Pin;
//! use std::task::{Context, Poll};
//! use std::time::Instant;
//! use tickwheel_async::{Error, Wakeup};
//!
//! /// Wakes a DelayQueue with tokio's own timer.
//! struct TokioWakeup(Pin<Box<tokio::time::Sleep>>);
//!
//! impl Wakeup for TokioWakeup {
//!     fn poll_until(&mut self, at: Instant, cx: &mut Context<'_>) -> Poll<Result<(), Error>> {
//!         if self.0.deadline() != at.into() {
//!             self.0.as_mut().reset(at.into());
//!         }
//!         self.0.as_mut().poll(cx).map(Ok)
//!     }
//! }
//! # use std::future::Future;
//! ```
//!
//! # Costs
//! | operation | cost |
//! |---|---|
//! | `insert`, `remove`, `reset` | the `Timer`'s own (see its module), plus a wake of the task when the new deadline is the earliest |
//! | `poll_expired` | one `Timer::poll`; when nothing is due, `next_deadline` and one `Wakeup::poll_until` |

use std::marker::PhantomData;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use tickwheel::{HierarchicalWheel, InsertError, StaleKeyError, Tick, TickClock, Timer, TimerKey};

#[cfg(doc)]
use crate::Handle;
use crate::{default_handle, Error, Sleep};

/// Gets a task woken once an instant has passed: what a [`DelayQueue`] needs from outside.
///
/// ```
/// use std::task::{Context, Poll};
/// use std::time::{Duration, Instant};
/// use tickwheel_async::Wakeup;
///
/// let mut sleep = tickwheel_async::sleep(Duration::MAX);
/// let at = Instant::now() + Duration::from_millis(2);
/// futures_executor::block_on(std::future::poll_fn(|cx| sleep.poll_until(at, cx))).unwrap();
/// assert!(Instant::now() >= at);
/// ```
pub trait Wakeup {
    /// `Ready(Ok(()))` once `deadline` has passed; until then `Pending`, with `cx`'s task woken
    /// when it passes. Called with a new deadline whenever the queue's earliest one moves.
    ///
    /// # Errors
    /// The wake-up cannot be had (its timer service shut down).
    fn poll_until(&mut self, deadline: Instant, cx: &mut Context<'_>) -> Poll<Result<(), Error>>;
}

/// Moves the sleep to `deadline` if that is another tick, and polls it (arming it if it must
/// wait); a timer that cannot fire is an `Err`, not a panic.
impl Wakeup for Sleep {
    fn poll_until(&mut self, deadline: Instant, cx: &mut Context<'_>) -> Poll<Result<(), Error>> {
        if self.tick_of(deadline) != self.tick() {
            self.reset(deadline);
        }
        self.poll_checked(cx)
    }
}

/// A timer that came out of a [`DelayQueue`]: its key (stale now), the deadline it was due
/// at (rounded up to the queue's tick), and its value.
///
/// ```
/// use std::time::{Duration, Instant};
/// let mut q = tickwheel_async::DelayQueue::new();
/// let at = Instant::now() + Duration::from_millis(2);
/// let key = q.insert_at("x", at).unwrap();
/// let e = futures_executor::block_on(std::future::poll_fn(|cx| q.poll_expired(cx)));
/// let e: tickwheel_async::Expired<&str> = e.unwrap().unwrap();
/// assert_eq!(e.key, key);
/// assert!(e.deadline >= at && Instant::now() >= e.deadline);
/// assert_eq!(e.into_inner(), "x");
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Expired<T> {
    /// The key the timer had; it is stale now.
    pub key: TimerKey,
    /// When it was due: the deadline asked for, rounded up to the queue's tick.
    pub deadline: Instant,
    /// The value given at insert.
    pub payload: T,
}

impl<T> Expired<T> {
    /// The value given at insert.
    ///
    /// ```
    /// use std::time::Duration;
    /// let mut q = tickwheel_async::DelayQueue::new();
    /// q.insert(7, Duration::ZERO).unwrap();
    /// let e = futures_executor::block_on(std::future::poll_fn(|cx| q.poll_expired(cx)));
    /// assert_eq!(e.unwrap().unwrap().into_inner(), 7);
    /// ```
    pub fn into_inner(self) -> T {
        self.payload
    }
}

/// Timers owned by one task: insert, remove and reset by key, and
/// [`poll_expired`](Self::poll_expired) for the next due one.
///
/// ```
/// use std::time::Duration;
/// use tickwheel_async::DelayQueue;
///
/// let mut queue = DelayQueue::new();
/// let later = queue.insert("later", Duration::from_secs(60)).unwrap();
/// queue.insert("soon", Duration::from_millis(5)).unwrap();
/// assert_eq!(queue.remove(later), Some("later"));
/// let first = futures_executor::block_on(std::future::poll_fn(|cx| queue.poll_expired(cx)));
/// assert_eq!(first.unwrap().unwrap().payload, "soon");
/// assert!(queue.is_empty());
/// ```
pub struct DelayQueue<T, X = HierarchicalWheel<T>, W = Sleep> {
    timer: X,
    clock: TickClock,
    wakeup: W,
    /// The task that last saw `Pending`, and the tick its wake-up was asked for.
    waiting: Option<(Waker, Tick)>,
    _payload: PhantomData<fn(T) -> T>,
}

impl<T> DelayQueue<T> {
    /// An empty queue on a [`HierarchicalWheel`], woken by a [`Sleep`] of the default timers
    /// and on their clock (1 ms ticks). [`Handle::delay_queue`] makes one on other timers.
    ///
    /// # Panics
    /// As [`default_handle`].
    ///
    /// ```
    /// let queue = tickwheel_async::DelayQueue::<u32>::new();
    /// assert_eq!(queue.len(), 0);
    /// ```
    #[must_use]
    pub fn new() -> Self {
        default_handle().delay_queue()
    }
}

/// [`DelayQueue::new`].
///
/// ```
/// let queue: tickwheel_async::DelayQueue<u8> = Default::default();
/// assert!(queue.is_empty());
/// ```
impl<T> Default for DelayQueue<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T, X: Timer<T>, W: Wakeup> DelayQueue<T, X, W> {
    /// A queue on `timer`, whose ticks `clock` maps to instants (the timer's tick 0 is the
    /// clock's origin), woken by `wakeup`. With a [`Sleep`] for `wakeup`, pass its timers'
    /// [`clock`](Handle::clock) so deadlines round up once; another clock works, one tick
    /// later at worst.
    ///
    /// ```
    /// use std::time::Duration;
    /// use tickwheel::IndexedHeap;
    /// let timers = tickwheel_async::AsyncTimers::new().unwrap();
    /// let clock = timers.handle().clock();
    /// let sleep = timers.handle().sleep(Duration::MAX);
    /// let queue = tickwheel_async::DelayQueue::<u8, _, _>::with_parts(IndexedHeap::new(), clock, sleep);
    /// assert!(queue.is_empty());
    /// ```
    pub fn with_parts(timer: X, clock: TickClock, wakeup: W) -> Self {
        Self {
            timer,
            clock,
            wakeup,
            waiting: None,
            _payload: PhantomData,
        }
    }

    /// Adds `value`, due `after` from now.
    ///
    /// # Errors
    /// The timer is at its capacity: the value comes back.
    ///
    /// ```
    /// use std::time::Duration;
    /// let mut q = tickwheel_async::DelayQueue::new();
    /// let key = q.insert(1, Duration::from_secs(1)).unwrap();
    /// assert!(q.deadline(key).is_some());
    /// ```
    pub fn insert(&mut self, value: T, after: Duration) -> Result<TimerKey, InsertError<T>> {
        let tick = self.clock.deadline_after(Instant::now(), after);
        self.insert_tick(value, tick)
    }

    /// Adds `value`, due at `deadline`.
    ///
    /// # Errors
    /// As [`insert`](Self::insert).
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    /// let mut q = tickwheel_async::DelayQueue::new();
    /// q.insert_at("x", Instant::now() + Duration::from_secs(1)).unwrap();
    /// assert_eq!(q.len(), 1);
    /// ```
    pub fn insert_at(&mut self, value: T, deadline: Instant) -> Result<TimerKey, InsertError<T>> {
        let tick = self.clock.deadline_tick(deadline);
        self.insert_tick(value, tick)
    }

    fn insert_tick(&mut self, value: T, tick: Tick) -> Result<TimerKey, InsertError<T>> {
        let key = self.timer.insert(tick, value)?;
        self.earlier(tick);
        Ok(key)
    }

    /// Wakes the waiting task when `tick` comes before the wake-up it waits for.
    fn earlier(&mut self, tick: Tick) {
        if matches!(&self.waiting, Some((_, armed)) if tick < *armed) {
            if let Some((waker, _)) = self.waiting.take() {
                waker.wake();
            }
        }
    }

    /// Removes the timer `key` names and returns its value; `None` when it expired (was
    /// returned by `poll_expired`) or was removed.
    ///
    /// ```
    /// use std::time::Duration;
    /// let mut q = tickwheel_async::DelayQueue::new();
    /// let key = q.insert('a', Duration::from_secs(1)).unwrap();
    /// assert_eq!(q.remove(key), Some('a'));
    /// assert_eq!(q.remove(key), None);
    /// ```
    pub fn remove(&mut self, key: TimerKey) -> Option<T> {
        self.timer.cancel(key)
    }

    /// Moves the timer `key` names to `after` from now.
    ///
    /// # Errors
    /// The key names no pending timer.
    ///
    /// ```
    /// use std::time::Duration;
    /// let mut q = tickwheel_async::DelayQueue::new();
    /// let key = q.insert((), Duration::from_secs(60)).unwrap();
    /// q.reset(key, Duration::from_millis(1)).unwrap();
    /// futures_executor::block_on(std::future::poll_fn(|cx| q.poll_expired(cx))).unwrap().unwrap();
    /// ```
    pub fn reset(&mut self, key: TimerKey, after: Duration) -> Result<(), StaleKeyError> {
        let tick = self.clock.deadline_after(Instant::now(), after);
        self.reset_tick(key, tick)
    }

    /// Moves the timer `key` names to `deadline`.
    ///
    /// # Errors
    /// As [`reset`](Self::reset).
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    /// let mut q = tickwheel_async::DelayQueue::new();
    /// let key = q.insert((), Duration::from_secs(60)).unwrap();
    /// assert!(q.reset_at(key, Instant::now()).is_ok());
    /// ```
    pub fn reset_at(&mut self, key: TimerKey, deadline: Instant) -> Result<(), StaleKeyError> {
        let tick = self.clock.deadline_tick(deadline);
        self.reset_tick(key, tick)
    }

    fn reset_tick(&mut self, key: TimerKey, tick: Tick) -> Result<(), StaleKeyError> {
        self.timer.reset(key, tick)?;
        self.earlier(tick);
        Ok(())
    }

    /// When the timer `key` names is due (rounded up to the tick), if it is pending.
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    /// let mut q = tickwheel_async::DelayQueue::new();
    /// let at = Instant::now() + Duration::from_secs(1);
    /// let key = q.insert_at(0u8, at).unwrap();
    /// assert!(q.deadline(key).unwrap() >= at);
    /// ```
    #[must_use]
    pub fn deadline(&self, key: TimerKey) -> Option<Instant> {
        self.timer
            .deadline(key)
            .and_then(|t| self.clock.instant_of(t))
    }

    /// Timers pending.
    ///
    /// ```
    /// assert_eq!(tickwheel_async::DelayQueue::<()>::new().len(), 0);
    /// ```
    #[must_use]
    pub fn len(&self) -> usize {
        self.timer.len()
    }

    /// No timer pending.
    ///
    /// ```
    /// assert!(tickwheel_async::DelayQueue::<()>::new().is_empty());
    /// ```
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.timer.is_empty()
    }

    /// The next due timer: `Ready(Some(Ok(_)))` with it, `Ready(None)` when the queue is
    /// empty, or `Pending` with the task to be woken when the earliest deadline comes (or an
    /// earlier timer is inserted). Due timers come out in deadline order, first inserted first
    /// among equals, never before their deadline.
    ///
    /// # Errors
    /// `Ready(Some(Err(_)))` when the [`Wakeup`] fails (its service shut down): the queue
    /// cannot wait, though its due timers still come out.
    ///
    /// ```
    /// use std::time::Duration;
    /// let mut q = tickwheel_async::DelayQueue::new();
    /// q.insert(5, Duration::from_millis(1)).unwrap();
    /// let e = futures_executor::block_on(std::future::poll_fn(|cx| q.poll_expired(cx)));
    /// assert_eq!(e.unwrap().unwrap().payload, 5);
    /// let none = futures_executor::block_on(std::future::poll_fn(|cx| q.poll_expired(cx)));
    /// assert!(none.is_none());
    /// ```
    pub fn poll_expired(
        &mut self,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Expired<T>, Error>>> {
        loop {
            let now = Instant::now();
            if let Some(e) = self.timer.poll(self.clock.now_tick(now)) {
                return Poll::Ready(Some(Ok(Expired {
                    key: e.key,
                    // A due tick is at or before `now`: an `Instant` holds it.
                    deadline: self.clock.instant_of(e.deadline).unwrap_or(now),
                    payload: e.payload,
                })));
            }
            let Some(next) = self.timer.next_deadline() else {
                self.waiting = None;
                return Poll::Ready(None);
            };
            match &mut self.waiting {
                Some((w, armed)) => {
                    if !w.will_wake(cx.waker()) {
                        *w = cx.waker().clone();
                    }
                    *armed = next;
                }
                None => self.waiting = Some((cx.waker().clone(), next)),
            }
            // A deadline past what `Instant` holds never comes: wait for an insert.
            let Some(at) = self.clock.instant_of(next) else {
                return Poll::Pending;
            };
            match self.wakeup.poll_until(at, cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Err(e)) => return Poll::Ready(Some(Err(e))),
                // The earliest deadline passed (or was an early answer of a wheel): look again.
                Poll::Ready(Ok(())) => {}
            }
        }
    }
}

#[cfg(feature = "stream")]
impl<T, X: Timer<T> + Unpin, W: Wakeup + Unpin> futures_core::Stream for DelayQueue<T, X, W> {
    type Item = Result<Expired<T>, Error>;

    fn poll_next(self: std::pin::Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.get_mut().poll_expired(cx)
    }
}

impl<T, X, W> std::fmt::Debug for DelayQueue<T, X, W> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DelayQueue").finish_non_exhaustive()
    }
}
