//! [`Timeout`]: a future with a deadline; and [`CheckedTimeout`], the same returning an
//! [`Error`] instead of panicking.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use pin_project_lite::pin_project;

use crate::error::{cannot_fire, Elapsed, Error};
use crate::Sleep;

pin_project! {
    /// Runs a future until a deadline; made by [`timeout`](fn@crate::timeout),
    /// [`timeout_at`](crate::timeout_at) and the same methods of a [`Handle`](crate::Handle).
    ///
    /// Completes with `Ok(output)` when the future completes first, and with `Err(`[`Elapsed`]`)`
    /// when the deadline passes first. The future is polled before the deadline is looked at,
    /// so an output ready at the deadline wins. The deadline is a lazy [`Sleep`]: a future
    /// ready at its first poll costs no timer at all, and the timer is armed only when the
    /// future returns `Pending`; dropping the `Timeout` cancels it.
    ///
    /// # Panics
    /// Polling it panics, naming the [`Error`], when the deadline's timer cannot fire (as a
    /// [`Sleep`] does); [`checked`](Self::checked) returns the error instead.
    ///
    /// ```
    /// use std::time::Duration;
    /// use tickwheel_async::timeout;
    /// futures_executor::block_on(async {
    ///     let never = std::future::pending::<()>();
    ///     assert!(timeout(Duration::from_millis(5), never).await.is_err());
    ///     assert_eq!(timeout(Duration::from_secs(5), async { 7 }).await, Ok(7));
    /// });
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
    /// let mut t = tickwheel_async::timeout(Duration::from_millis(1), async { 1 });
    /// t.sleep_mut().reset(Instant::now() + Duration::from_secs(5));
    /// assert_eq!(futures_executor::block_on(t), Ok(1));
    /// ```
    pub fn sleep_mut(&mut self) -> &mut Sleep {
        &mut self.sleep
    }

    /// The future, handed back (the deadline's timer, if armed, is cancelled).
    ///
    /// ```
    /// use std::time::Duration;
    /// let t = tickwheel_async::timeout(Duration::from_secs(1), std::future::ready(3));
    /// assert_eq!(futures_executor::block_on(t.into_inner()), 3);
    /// ```
    pub fn into_inner(self) -> F {
        self.future
    }

    /// This timeout as a future that returns `Err` instead of panicking when the deadline's
    /// timer cannot fire: `Ok(Ok(output))`, `Ok(Err(Elapsed))`, or `Err(`[`Error`]`)`.
    ///
    /// ```
    /// use std::time::Duration;
    /// use tickwheel_async::{AsyncTimers, Error};
    /// let timers = AsyncTimers::new().unwrap();
    /// let h = timers.handle();
    /// let ready = h.timeout(Duration::from_secs(1), async { 5 }).checked();
    /// assert_eq!(futures_executor::block_on(ready), Ok(Ok(5)));
    /// timers.shutdown();
    /// let never = std::future::pending::<()>();
    /// let r = futures_executor::block_on(h.timeout(Duration::from_secs(1), never).checked());
    /// assert_eq!(r, Err(Error::Shutdown));
    /// ```
    pub fn checked(self) -> CheckedTimeout<F> {
        CheckedTimeout { timeout: self }
    }
}

impl<F: Future> Timeout<F> {
    /// The poll behind both futures.
    fn poll_checked(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Result<Result<F::Output, Elapsed>, Error>> {
        let this = self.project();
        if let Poll::Ready(v) = this.future.poll(cx) {
            return Poll::Ready(Ok(Ok(v)));
        }
        this.sleep
            .poll_checked(cx)
            .map(|done| done.map(|()| Err(Elapsed::new())))
    }
}

impl<F: Future> Future for Timeout<F> {
    type Output = Result<F::Output, Elapsed>;

    /// # Panics
    /// When the deadline's timer cannot fire; see [`Timeout`].
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.poll_checked(cx) {
            Poll::Ready(Ok(out)) => Poll::Ready(out),
            Poll::Ready(Err(e)) => cannot_fire("Timeout", e),
            Poll::Pending => Poll::Pending,
        }
    }
}

impl<F> std::fmt::Debug for Timeout<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Timeout")
            .field("sleep", &self.sleep)
            .finish_non_exhaustive()
    }
}

pin_project! {
    /// A [`Timeout`] that completes with `Err(`[`Error`]`)` instead of panicking when its
    /// deadline's timer cannot fire; made by [`Timeout::checked`]. Its output is
    /// `Result<Result<F::Output, Elapsed>, Error>`.
    ///
    /// ```
    /// use std::time::Duration;
    /// use tickwheel_async::Elapsed;
    /// let never = std::future::pending::<()>();
    /// let t = tickwheel_async::timeout(Duration::from_millis(2), never).checked();
    /// let r: Result<Result<(), Elapsed>, tickwheel_async::Error> = futures_executor::block_on(t);
    /// assert!(r.unwrap().is_err());
    /// ```
    #[must_use = "a CheckedTimeout does nothing unless polled"]
    pub struct CheckedTimeout<F> {
        #[pin]
        timeout: Timeout<F>,
    }
}

impl<F> CheckedTimeout<F> {
    /// The timeout, handed back.
    ///
    /// ```
    /// use std::time::Duration;
    /// let t = tickwheel_async::timeout(Duration::from_secs(1), async { 2 }).checked();
    /// assert_eq!(futures_executor::block_on(t.into_inner()), Ok(2));
    /// ```
    pub fn into_inner(self) -> Timeout<F> {
        self.timeout
    }
}

impl<F: Future> Future for CheckedTimeout<F> {
    type Output = Result<Result<F::Output, Elapsed>, Error>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        self.project().timeout.poll_checked(cx)
    }
}

impl<F> std::fmt::Debug for CheckedTimeout<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CheckedTimeout")
            .field("timeout", &self.timeout)
            .finish()
    }
}
