//! [`Timeout`]: a future with a deadline.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use pin_project_lite::pin_project;

use crate::error::TimeoutError;
use crate::Sleep;

pin_project! {
    /// Runs a future until a deadline; made by [`Handle::timeout`](crate::Handle::timeout).
    ///
    /// Completes with `Ok(output)` when the future completes first (its timer is then
    /// cancelled when the `Timeout` is dropped), and with [`TimeoutError::Elapsed`] when the
    /// deadline passes first. The future is polled before the deadline is checked, so an
    /// output ready at the deadline wins.
    ///
    /// ```
    /// use std::time::Duration;
    /// use tickwheel_async::TimeoutError;
    /// let timers = tickwheel_async::AsyncTimers::new().unwrap();
    /// let h = timers.handle();
    /// let never = std::future::pending::<()>();
    /// let r = futures_executor::block_on(h.timeout(Duration::from_millis(5), never));
    /// assert_eq!(r, Err(TimeoutError::Elapsed));
    /// let r = futures_executor::block_on(h.timeout(Duration::from_secs(5), async { 7 }));
    /// assert_eq!(r, Ok(7));
    /// ```
    #[must_use = "a Timeout does nothing unless polled"]
    pub struct Timeout<F> {
        #[pin]
        future: F,
        sleep: Sleep,
    }
}

impl<F> Timeout<F> {
    pub(crate) fn new(future: F, sleep: Sleep) -> Self {
        Self { future, sleep }
    }

    /// The deadline's timer, e.g. to [`reset`](Sleep::reset) it on progress.
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    /// let timers = tickwheel_async::AsyncTimers::new().unwrap();
    /// let mut t = timers.handle().timeout(Duration::from_millis(1), async { 1 });
    /// t.sleep_mut().reset(Instant::now() + Duration::from_secs(5)).unwrap();
    /// assert_eq!(futures_executor::block_on(t), Ok(1));
    /// ```
    pub fn sleep_mut(&mut self) -> &mut Sleep {
        &mut self.sleep
    }

    /// The future, handed back.
    ///
    /// ```
    /// use std::time::Duration;
    /// let timers = tickwheel_async::AsyncTimers::new().unwrap();
    /// let t = timers.handle().timeout(Duration::from_secs(1), std::future::ready(3));
    /// assert_eq!(futures_executor::block_on(t.into_inner()), 3);
    /// ```
    pub fn into_inner(self) -> F {
        self.future
    }
}

impl<F: Future> Future for Timeout<F> {
    type Output = Result<F::Output, TimeoutError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        if let Poll::Ready(v) = this.future.poll(cx) {
            return Poll::Ready(Ok(v));
        }
        match Pin::new(this.sleep).poll(cx) {
            Poll::Pending => Poll::Pending,
            Poll::Ready(Ok(())) => Poll::Ready(Err(TimeoutError::Elapsed)),
            Poll::Ready(Err(e)) => Poll::Ready(Err(TimeoutError::Timer(e))),
        }
    }
}

impl<F> std::fmt::Debug for Timeout<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Timeout")
            .field("sleep", &self.sleep)
            .finish()
    }
}
