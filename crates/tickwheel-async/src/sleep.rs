//! [`Sleep`]: a future that completes at a deadline, timed by the async service; and
//! [`CheckedSleep`], the same returning an [`Error`] instead of panicking.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Instant;

use tickwheel::Tick;
use tickwheel_service::ServiceKey;

use crate::error::{cannot_fire, Error};
use crate::slot::{Done, Slot};
use crate::Handle;

/// Completes (with `()`) once its deadline has passed; made by
/// [`sleep`](fn@crate::sleep), [`sleep_until`](crate::sleep_until) and the same methods of a
/// [`Handle`].
///
/// **Lazy.** Making a `Sleep` reads the clock and nothing else: its timer is armed on the
/// service at its first poll that would return `Pending`. That poll reads no clock: it
/// completes without arming when the deadline had passed when the sleep was made (or reset),
/// or by the service driver's latest turn; a deadline that passed in between arms a timer at a
/// past tick, which the driver fires at once. A `Sleep` dropped before its first poll never
/// touched the service. Once armed, dropping it cancels the timer at once: the
/// service frees it, and nothing wakes the task after the drop. A fired timer wakes the waker
/// of the latest poll. `Sleep` is `Unpin`.
///
/// # Panics
/// Polling it panics, naming the [`Error`], when its timer cannot fire: the timers were shut
/// down (before it completed, deadline passed or not), every shard is full, or every shard
/// failed. A task never hangs on a timer that cannot fire, and never mistakes one for elapsed
/// time. [`checked`](Self::checked) gives a future that returns the error instead.
///
/// ```
/// use std::time::{Duration, Instant};
/// let start = Instant::now();
/// futures_executor::block_on(tickwheel_async::sleep(Duration::from_millis(20)));
/// assert!(start.elapsed() >= Duration::from_millis(20));
/// ```
#[must_use = "a Sleep does nothing unless polled"]
pub struct Sleep {
    handle: Handle,
    /// The deadline, in the service's ticks (`u64::MAX`: never).
    tick: Tick,
    state: State,
}

/// Where a [`Sleep`] is.
enum State {
    /// Not armed: the service knows nothing of it. The tick is one the clock had reached when
    /// the sleep was made (or reset): a deadline at or before it has passed.
    Unarmed(Tick),
    /// Armed: the service holds `slot` under the key.
    Armed(Arc<Slot>, ServiceKey),
    /// Completed at its deadline.
    Elapsed,
    /// Its timer cannot fire.
    Failed(Error),
}

impl Sleep {
    /// An unarmed sleep until `tick`, made when the clock was at `now` (in ticks).
    pub(crate) fn new(handle: Handle, tick: Tick, now: Tick) -> Self {
        Self {
            handle,
            tick,
            state: State::Unarmed(now),
        }
    }

    /// The instant it completes at: the deadline asked for, rounded up to the service's tick
    /// (1 ms by default); `None` for a sleep beyond what `Instant` holds, which never
    /// completes. Armed or not.
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    /// let at = Instant::now() + Duration::from_secs(5);
    /// let d = tickwheel_async::sleep_until(at).deadline().unwrap();
    /// assert!(d >= at && d < at + Duration::from_millis(1));
    /// ```
    #[must_use]
    pub fn deadline(&self) -> Option<Instant> {
        if self.tick == Tick::MAX {
            return None;
        }
        self.handle.inner.clock().instant_of(self.tick)
    }

    /// The deadline, in the service's ticks.
    pub(crate) fn tick(&self) -> Tick {
        self.tick
    }

    /// The deadline tick `deadline` rounds up to.
    pub(crate) fn tick_of(&self, deadline: Instant) -> Tick {
        self.handle.inner.clock().deadline_tick(deadline)
    }

    /// Whether it has completed (elapsed, or found its timer cannot fire) as of its last poll
    /// or reset. An unpolled sleep has not, even past its deadline.
    ///
    /// ```
    /// use std::time::Duration;
    /// let mut sleep = tickwheel_async::sleep(Duration::ZERO);
    /// assert!(!sleep.is_elapsed());
    /// futures_executor::block_on(&mut sleep);
    /// assert!(sleep.is_elapsed());
    /// ```
    #[must_use]
    pub fn is_elapsed(&self) -> bool {
        matches!(self.state, State::Elapsed | State::Failed(_))
    }

    /// Moves the deadline to `deadline`, whether the sleep is unarmed, pending or completed:
    /// it is pending again until then.
    ///
    /// Unarmed (or completed), this only moves the deadline; the next poll arms it. Armed and
    /// pending, it is one `reset` on the service (the timer keeps its key and its waker). If
    /// the timer fired meanwhile (or cannot be reset), the sleep lets go of it and is unarmed
    /// again. It never fails: a timer that cannot fire shows at the next poll, as a panic
    /// (or an [`Error`] through [`checked`](Self::checked)).
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    /// let mut sleep = tickwheel_async::sleep(Duration::from_secs(60));
    /// let start = Instant::now();
    /// sleep.reset(start + Duration::from_millis(10));
    /// futures_executor::block_on(&mut sleep);
    /// assert!(start.elapsed() >= Duration::from_millis(10));
    /// assert!(start.elapsed() < Duration::from_secs(60));
    /// ```
    pub fn reset(&mut self, deadline: Instant) {
        self.tick = self.tick_of(deadline);
        if let State::Armed(slot, key) = &self.state {
            if self.handle.inner.reset_at_tick(*key, self.tick).is_ok() {
                return;
            }
            // It fired (or is being delivered), or the service shut down or failed: a
            // delivery in flight may still finish the slot, so detach it first.
            slot.forget();
        }
        let now = self.handle.inner.clock().now_tick(Instant::now());
        self.state = State::Unarmed(now);
    }

    /// This sleep as a future that returns `Err` instead of panicking when its timer cannot
    /// fire.
    ///
    /// ```
    /// use std::time::Duration;
    /// use tickwheel_async::{AsyncTimers, Error};
    /// let timers = AsyncTimers::new().unwrap();
    /// let h = timers.handle();
    /// timers.shutdown();
    /// let r = futures_executor::block_on(h.sleep(Duration::from_secs(1)).checked());
    /// assert_eq!(r, Err(Error::Shutdown));
    /// ```
    pub fn checked(self) -> CheckedSleep {
        CheckedSleep { sleep: self }
    }

    /// The poll behind both futures: arms the timer when it must wait.
    pub(crate) fn poll_checked(&mut self, cx: &Context<'_>) -> Poll<Result<(), Error>> {
        let done = match &self.state {
            State::Elapsed => return Poll::Ready(Ok(())),
            State::Failed(e) => return Poll::Ready(Err(*e)),
            State::Unarmed(now) => return self.arm(cx, *now),
            State::Armed(slot, _) => match slot.poll(cx) {
                None => return Poll::Pending,
                Some(done) => done,
            },
        };
        let (state, out) = match done {
            Done::Fired => (State::Elapsed, Ok(())),
            Done::Shutdown => (State::Failed(Error::Shutdown), Err(Error::Shutdown)),
        };
        self.state = state;
        Poll::Ready(out)
    }

    /// The first poll of an unarmed sleep made at tick `made`: completes if the deadline had
    /// passed then, or by the driver's latest turn, else arms. No clock read: a deadline that
    /// passed since then arms a timer at a past tick, which wakes the driver to fire it at
    /// once. When the driver thread is behind `made` with timers due, this thread takes them
    /// and wakes their tasks first (`take_due`), so a burst's sleeps do not wait for the
    /// driver to get a core.
    fn arm(&mut self, cx: &Context<'_>, made: Tick) -> Poll<Result<(), Error>> {
        let service = &self.handle.inner;
        for fired in service.take_due(made) {
            fired.payload.finish(Done::Fired);
        }
        let (state, out) = if service.is_shutdown() {
            (State::Failed(Error::Shutdown), Err(Error::Shutdown))
        } else if made.max(service.last_turn_tick()) >= self.tick {
            (State::Elapsed, Ok(()))
        } else {
            // The waker is in the slot before the timer is scheduled: a fire at once finds it.
            let slot = Slot::waiting(cx);
            match service.schedule_at_tick(self.tick, Arc::clone(&slot)) {
                Ok(key) => {
                    self.state = State::Armed(slot, key);
                    return Poll::Pending;
                }
                Err(e) => {
                    let e = Error::from(e);
                    (State::Failed(e), Err(e))
                }
            }
        };
        self.state = state;
        Poll::Ready(out)
    }
}

impl Future for Sleep {
    type Output = ();

    /// # Panics
    /// When the timer cannot fire; see [`Sleep`].
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        match self.get_mut().poll_checked(cx) {
            Poll::Ready(Ok(())) => Poll::Ready(()),
            Poll::Ready(Err(e)) => cannot_fire("Sleep", e),
            Poll::Pending => Poll::Pending,
        }
    }
}

impl Drop for Sleep {
    fn drop(&mut self) {
        if let State::Armed(slot, key) = &self.state {
            // Cancelled: the service hands the slot back and frees the timer. Otherwise it
            // fired or is being delivered: forget the waker so that delivery wakes nobody.
            if self.handle.inner.cancel(*key).is_err() {
                slot.forget();
            }
        }
    }
}

impl std::fmt::Debug for Sleep {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = match &self.state {
            State::Unarmed(_) => "unarmed",
            State::Armed(..) => "armed",
            State::Elapsed => "elapsed",
            State::Failed(_) => "failed",
        };
        f.debug_struct("Sleep")
            .field("deadline", &self.deadline())
            .field("state", &state)
            .finish()
    }
}

/// A [`Sleep`] that completes with `Err` instead of panicking when its timer cannot fire;
/// made by [`Sleep::checked`]. Otherwise the same: lazy, cancelled on drop, `Unpin`.
///
/// ```
/// use std::time::Duration;
/// use tickwheel_async::{AsyncTimers, Builder, Error};
/// let timers = AsyncTimers::with_builder(Builder::new().shards(1).capacity(1)).unwrap();
/// let h = timers.handle();
/// futures_executor::block_on(async {
///     let mut first = h.sleep(Duration::from_millis(20));
///     // Its first poll arms the one timer the service has room for.
///     std::future::poll_fn(|cx| Poll::Ready(assert!(Pin::new(&mut first).poll(cx).is_pending())))
///         .await;
///     assert_eq!(h.sleep(Duration::from_millis(10)).checked().await, Err(Error::Full));
///     first.await;
/// });
/// # use std::{future::Future, pin::Pin, task::Poll};
/// ```
#[must_use = "a CheckedSleep does nothing unless polled"]
#[derive(Debug)]
pub struct CheckedSleep {
    sleep: Sleep,
}

impl CheckedSleep {
    /// The sleep, e.g. to [`reset`](Sleep::reset) it.
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    /// let mut s = tickwheel_async::sleep(Duration::from_secs(60)).checked();
    /// s.sleep_mut().reset(Instant::now());
    /// assert_eq!(futures_executor::block_on(s), Ok(()));
    /// ```
    pub fn sleep_mut(&mut self) -> &mut Sleep {
        &mut self.sleep
    }

    /// The sleep, handed back (its timer stays armed, if it is).
    ///
    /// ```
    /// use std::time::Duration;
    /// let s = tickwheel_async::sleep(Duration::from_millis(1)).checked();
    /// futures_executor::block_on(s.into_inner());
    /// ```
    pub fn into_inner(self) -> Sleep {
        self.sleep
    }
}

impl Future for CheckedSleep {
    type Output = Result<(), Error>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        self.get_mut().sleep.poll_checked(cx)
    }
}

#[cfg(test)]
mod tests {
    /// The size the crate docs state.
    #[test]
    fn a_sleep_is_40_bytes() {
        assert_eq!(std::mem::size_of::<super::Sleep>(), 40);
    }
}
