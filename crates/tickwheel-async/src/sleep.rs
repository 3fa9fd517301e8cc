//! [`Sleep`]: a future that completes at a deadline, timed by the async service.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Instant;

use tickwheel::Tick;
use tickwheel_service::{KeyError, ServiceKey};

use crate::error::{from_key, Error};
use crate::slot::{Done, Slot};
use crate::Handle;

/// Completes with `Ok(())` once its deadline has passed; made by [`Handle::sleep`] and
/// [`Handle::sleep_until`].
///
/// Its timer is armed when the `Sleep` is made, not when it is first polled. Dropping a
/// pending `Sleep` cancels that timer at once: the service frees it, and nothing wakes the
/// task after the drop. A fired timer wakes the waker of the latest poll. `Sleep` is `Unpin`.
///
/// It completes with an [`Error`] when the service could not arm it (`Full`, `Shutdown`,
/// `Failed`) or shut down before it fired.
///
/// ```
/// use std::time::{Duration, Instant};
/// let timers = tickwheel_async::AsyncTimers::new().unwrap();
/// let start = Instant::now();
/// futures_executor::block_on(timers.handle().sleep(Duration::from_millis(20))).unwrap();
/// assert!(start.elapsed() >= Duration::from_millis(20));
/// ```
#[must_use = "a Sleep does nothing unless polled (and dropping it cancels its timer)"]
pub struct Sleep {
    handle: Handle,
    slot: Arc<Slot>,
    /// The armed timer: `Ok(None)` once it ended, `Err` when it could not be armed.
    key: Result<Option<ServiceKey>, Error>,
    /// The deadline, in the service's ticks (`u64::MAX`: never).
    tick: Tick,
}

impl Sleep {
    pub(crate) fn arm(handle: Handle, tick: Tick) -> Self {
        let slot = Slot::new();
        let key = handle.arm(tick, &slot).map(Some);
        Self {
            handle,
            slot,
            key,
            tick,
        }
    }

    /// The instant it completes at: the deadline asked for, rounded up to the service's tick
    /// (1 ms by default); `None` for a sleep beyond what `Instant` holds, which never
    /// completes.
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    /// let timers = tickwheel_async::AsyncTimers::new().unwrap();
    /// let at = Instant::now() + Duration::from_secs(5);
    /// let d = timers.handle().sleep_until(at).deadline().unwrap();
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

    /// Whether it has completed (fired, or ended with an error) as of its last poll or reset.
    ///
    /// ```
    /// use std::time::Duration;
    /// let timers = tickwheel_async::AsyncTimers::new().unwrap();
    /// let mut sleep = timers.handle().sleep(Duration::ZERO);
    /// assert!(!sleep.is_elapsed());
    /// futures_executor::block_on(&mut sleep).unwrap();
    /// assert!(sleep.is_elapsed());
    /// ```
    #[must_use]
    pub fn is_elapsed(&self) -> bool {
        !matches!(self.key, Ok(Some(_)))
    }

    /// Moves the deadline to `deadline`, whether the sleep is pending or has completed: it
    /// is pending again until then. While its timer is pending this is one `reset` on the
    /// service (the timer keeps its key); once it fired, it arms a new one.
    ///
    /// # Errors
    /// The service refused the timer; the sleep then completes with the same error.
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    /// let timers = tickwheel_async::AsyncTimers::new().unwrap();
    /// let mut sleep = timers.handle().sleep(Duration::from_secs(60));
    /// let start = Instant::now();
    /// sleep.reset(start + Duration::from_millis(10)).unwrap();
    /// futures_executor::block_on(&mut sleep).unwrap();
    /// assert!(start.elapsed() < Duration::from_secs(60));
    /// ```
    pub fn reset(&mut self, deadline: Instant) -> Result<(), Error> {
        self.tick = self.tick_of(deadline);
        if let Ok(Some(key)) = self.key {
            match self.handle.inner.reset_at_tick(key, self.tick) {
                Ok(()) => return Ok(()),
                // It fired (or is being delivered) meanwhile: arm a new timer below.
                Err(KeyError::NotPending) => {}
                Err(e) => {
                    self.key = Err(from_key(e));
                    return Err(from_key(e));
                }
            }
        }
        // The old slot may still be finished by a delivery in flight: detach it first.
        self.slot.forget();
        self.slot = Slot::new();
        self.key = self.handle.arm(self.tick, &self.slot).map(Some);
        self.key.map(|_| ())
    }
}

impl Future for Sleep {
    type Output = Result<(), Error>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        match this.key {
            Err(e) => return Poll::Ready(Err(e)),
            Ok(None) => return Poll::Ready(Ok(())),
            Ok(Some(_)) => {}
        }
        match this.slot.poll(cx) {
            None => Poll::Pending,
            Some(Done::Fired) => {
                this.key = Ok(None);
                Poll::Ready(Ok(()))
            }
            Some(Done::Shutdown) => {
                this.key = Err(Error::Shutdown);
                Poll::Ready(Err(Error::Shutdown))
            }
        }
    }
}

impl Drop for Sleep {
    fn drop(&mut self) {
        if let Ok(Some(key)) = self.key {
            // Cancelled: the service hands the slot back and frees the timer. Otherwise it
            // fired or is being delivered: forget the waker so that delivery wakes nobody.
            if self.handle.inner.cancel(key).is_err() {
                self.slot.forget();
            }
        }
    }
}

impl std::fmt::Debug for Sleep {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sleep")
            .field("deadline", &self.deadline())
            .field("elapsed", &self.is_elapsed())
            .finish()
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
