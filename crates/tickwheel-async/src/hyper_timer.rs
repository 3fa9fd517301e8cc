//! [`HyperTimer`]: hyper 1.x's [`Timer`] on these timers (the `hyper` feature).

use std::pin::Pin;
use std::time::{Duration, Instant};

use hyper::rt::{Sleep as HyperSleep, Timer};

use crate::{default_handle, Handle, Sleep};

/// hyper 1.x's timer, [`hyper::rt::Timer`], on tickwheel-async's timers: give it to a hyper
/// connection builder's `timer` method where you would give hyper-util's `TokioTimer`.
/// Needs the `hyper` feature.
///
/// hyper times the HTTP/1 header read timeout (`header_read_timeout`, the defence against
/// slow clients) and the HTTP/2 keep-alive pings with it. Each sleep it hands hyper is a
/// [`Sleep`] of its [`Handle`], boxed, so every guarantee of the crate holds: a sleep never
/// completes before its deadline (rounded up to the timers' tick), it arms its timer only at a
/// poll that must wait, dropping it cancels that timer at once, and any runtime drives it.
/// [`reset`](Timer::reset) of a sleep this crate made moves it in place: one reset on the
/// timer service when it is armed, with no new allocation and no new timer. Any other
/// `hyper::rt::Sleep` is replaced by a new sleep, as hyper's default `reset` does.
///
/// # Panics
/// [`new`](Self::new) as [`default_handle`]. A sleep whose timer cannot fire (its
/// [`AsyncTimers`](crate::AsyncTimers) were shut down or dropped, every shard full or failed)
/// panics when hyper polls it, naming the [`Error`](crate::Error), as a [`Sleep`] does: on
/// tokio that ends the connection's task, which drops (closes) the connection. It never hangs
/// on a timer that cannot fire. The default timers are never shut down.
///
/// ```
/// use std::time::{Duration, Instant};
/// use hyper::{body::Incoming, server::conn::http1, service::service_fn, Request, Response};
/// use hyper_util::rt::TokioIo;
/// use tickwheel_async::HyperTimer;
/// use tokio::io::{AsyncReadExt, AsyncWriteExt};
///
/// async fn hello(_: Request<Incoming>) -> Result<Response<String>, std::convert::Infallible> {
///     Ok(Response::new("hello\n".to_string()))
/// }
///
/// #[tokio::main]
/// async fn main() -> std::io::Result<()> {
///     let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
///     let addr = listener.local_addr()?;
///     let mut http = http1::Builder::new();
///     // A client has 200 ms to send a request's whole head, timed by tickwheel.
///     http.timer(HyperTimer::new()).header_read_timeout(Duration::from_millis(200));
///     tokio::spawn(async move {
///         loop {
///             let Ok((stream, _)) = listener.accept().await else { continue };
///             let conn = http.serve_connection(TokioIo::new(stream), service_fn(hello));
///             tokio::spawn(async move {
///                 if let Err(e) = conn.await {
///                     assert!(e.is_timeout()); // this example's one client is too slow
///                 }
///             });
///         }
///     });
///
///     // A client that starts a request and never finishes its head is closed, not early.
///     let start = Instant::now();
///     let mut slow = tokio::net::TcpStream::connect(addr).await?;
///     slow.write_all(b"GET / HTTP/1.1\r\nHost: example\r\n").await?;
///     let _ = slow.read(&mut [0; 64]).await; // the server closed it: end of stream (or a reset)
///     assert!(start.elapsed() >= Duration::from_millis(200));
///     Ok(())
/// }
/// ```
#[derive(Clone, Debug)]
pub struct HyperTimer {
    handle: Handle,
}

impl HyperTimer {
    /// A timer on the process-wide default timers ([`default_handle`]), started on first
    /// use.
    ///
    /// # Panics
    /// As [`default_handle`].
    ///
    /// ```
    /// let mut http = hyper::server::conn::http1::Builder::new();
    /// http.timer(tickwheel_async::HyperTimer::new());
    /// ```
    #[must_use]
    pub fn new() -> Self {
        Self::with_handle(default_handle().clone())
    }

    /// A timer on the timers of `handle`, e.g. an [`AsyncTimers`](crate::AsyncTimers) of your
    /// own with another resolution or a capacity.
    ///
    /// ```
    /// use std::time::Duration;
    /// use tickwheel_async::{AsyncTimers, Builder, HyperTimer};
    /// let timers = AsyncTimers::with_builder(Builder::new().shards(1)).unwrap();
    /// let mut http = hyper::server::conn::http1::Builder::new();
    /// http.timer(HyperTimer::with_handle(timers.handle()))
    ///     .header_read_timeout(Duration::from_secs(5));
    /// ```
    #[must_use]
    pub fn with_handle(handle: Handle) -> Self {
        Self { handle }
    }

    /// The handle its sleeps are made on, e.g. for the timers' [`stats`](Handle::stats).
    ///
    /// ```
    /// use tickwheel_async::{AsyncTimers, HyperTimer};
    /// let timers = AsyncTimers::new().unwrap();
    /// let timer = HyperTimer::with_handle(timers.handle());
    /// let stats = timer.handle().stats(); // scheduled, fired, cancelled, reset, ...
    /// assert_eq!(stats.scheduled, 0);
    /// ```
    #[must_use]
    pub fn handle(&self) -> &Handle {
        &self.handle
    }
}

impl Default for HyperTimer {
    /// [`HyperTimer::new`].
    fn default() -> Self {
        Self::new()
    }
}

impl Timer for HyperTimer {
    /// A [`Sleep`] of `duration` from now, boxed; unarmed until polled.
    fn sleep(&self, duration: Duration) -> Pin<Box<dyn HyperSleep>> {
        Box::pin(self.handle.sleep(duration))
    }

    /// A [`Sleep`] until `deadline`, boxed; unarmed until polled.
    fn sleep_until(&self, deadline: Instant) -> Pin<Box<dyn HyperSleep>> {
        Box::pin(self.handle.sleep_until(deadline))
    }

    /// `Instant::now()`: the timers keep their deadlines on that clock.
    fn now(&self) -> Instant {
        Instant::now()
    }

    /// A [`Sleep`] of this crate is [`reset`](Sleep::reset) in place (on the timers that
    /// made it): one reset on the service when armed, no new allocation, no new timer. Any
    /// other sleep is replaced by [`sleep_until`](Timer::sleep_until)`(new_deadline)`.
    fn reset(&self, sleep: &mut Pin<Box<dyn HyperSleep>>, new_deadline: Instant) {
        match sleep.as_mut().downcast_mut_pin::<Sleep>() {
            Some(ours) => ours.get_mut().reset(new_deadline),
            None => *sleep = self.sleep_until(new_deadline),
        }
    }
}

/// A [`Sleep`] is hyper's sleep too (`Send + Sync`, output `()`), so [`HyperTimer`] hands it to
/// hyper as it is, and can find it again to reset it.
impl HyperSleep for Sleep {}

#[cfg(test)]
mod tests {
    use std::future::Future;
    use std::sync::Arc;
    use std::task::{Context, Poll, Wake, Waker};

    use super::*;
    use crate::AsyncTimers;

    struct Noop;

    impl Wake for Noop {
        fn wake(self: Arc<Self>) {}
    }

    fn poll_once(sleep: &mut Pin<Box<dyn HyperSleep>>) -> Poll<()> {
        let waker = Waker::from(Arc::new(Noop));
        sleep.as_mut().poll(&mut Context::from_waker(&waker))
    }

    /// Where the boxed sleep lives: the same address means the same sleep, not a new one.
    fn address(sleep: &Pin<Box<dyn HyperSleep>>) -> *const () {
        std::ptr::from_ref::<dyn HyperSleep>(&**sleep).cast()
    }

    /// A sleep of another timer, as hyper-util's `TokioTimer` would hand over.
    struct Foreign;

    impl Future for Foreign {
        type Output = ();
        fn poll(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<()> {
            Poll::Pending
        }
    }

    impl HyperSleep for Foreign {}

    #[test]
    fn reset_moves_an_armed_sleep_in_place() {
        let timers = AsyncTimers::new().unwrap();
        let timer = HyperTimer::with_handle(timers.handle());
        let mut sleep = timer.sleep(Duration::from_secs(60));
        assert!(poll_once(&mut sleep).is_pending()); // armed
        let before = (timer.handle().stats(), address(&sleep));
        assert_eq!(before.0.scheduled, 1);

        let start = Instant::now();
        timer.reset(&mut sleep, start + Duration::from_millis(20));
        let after = timer.handle().stats();
        assert_eq!(address(&sleep), before.1, "the same sleep, not a new one");
        assert_eq!(after.scheduled, 1, "no new timer");
        assert_eq!(after.reset, before.0.reset + 1, "one reset on the service");
        assert_eq!(after.pending, 1);
        let ours = sleep.as_mut().downcast_mut_pin::<Sleep>().unwrap();
        let deadline = ours.deadline().unwrap();
        assert!(deadline >= start + Duration::from_millis(20));
        assert!(deadline < start + Duration::from_secs(1));

        futures_executor::block_on(sleep); // never early, and not at the old deadline
        assert!(start.elapsed() >= Duration::from_millis(20));
        assert!(start.elapsed() < Duration::from_secs(30));
        let done = timer.handle().stats();
        assert_eq!((done.scheduled, done.fired, done.pending), (1, 1, 0));
    }

    #[test]
    fn reset_of_an_unarmed_sleep_calls_nothing() {
        let timers = AsyncTimers::new().unwrap();
        let timer = HyperTimer::with_handle(timers.handle());
        let mut sleep = timer.sleep(Duration::from_secs(60));
        let at = address(&sleep);
        timer.reset(&mut sleep, Instant::now() + Duration::from_millis(5));
        assert_eq!(address(&sleep), at);
        let stats = timer.handle().stats();
        assert_eq!((stats.scheduled, stats.reset), (0, 0));
        futures_executor::block_on(sleep);
    }

    #[test]
    fn a_foreign_sleep_is_replaced() {
        let timers = AsyncTimers::new().unwrap();
        let timer = HyperTimer::with_handle(timers.handle());
        let mut sleep: Pin<Box<dyn HyperSleep>> = Box::pin(Foreign);
        let start = Instant::now();
        timer.reset(&mut sleep, start + Duration::from_millis(5));
        assert!(!sleep.is::<Foreign>());
        let ours = sleep.as_mut().downcast_mut_pin::<Sleep>().unwrap();
        assert!(ours.deadline().unwrap() >= start + Duration::from_millis(5));
        futures_executor::block_on(sleep);
        assert!(start.elapsed() >= Duration::from_millis(5));
        assert_eq!(timer.handle().stats().scheduled, 1);
    }

    #[test]
    fn dropping_a_sleep_cancels_its_timer() {
        let timers = AsyncTimers::new().unwrap();
        let timer = HyperTimer::with_handle(timers.handle());
        let mut sleep = timer.sleep_until(Instant::now() + Duration::from_secs(60));
        assert!(poll_once(&mut sleep).is_pending());
        assert_eq!(timer.handle().pending(), 1);
        drop(sleep);
        let stats = timer.handle().stats();
        assert_eq!((stats.pending, stats.cancelled), (0, 1));
    }

    #[test]
    fn a_sleep_of_shut_down_timers_panics_naming_why() {
        let timers = AsyncTimers::new().unwrap();
        let timer = HyperTimer::with_handle(timers.handle());
        let mut sleep = timer.sleep(Duration::from_secs(60));
        assert!(poll_once(&mut sleep).is_pending());
        timers.shutdown();
        let why = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| poll_once(&mut sleep)))
            .unwrap_err();
        let why = why.downcast_ref::<String>().unwrap();
        assert!(why.contains("shut down"), "{why}");
    }
}
