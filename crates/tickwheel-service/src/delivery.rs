//! How expired timers reach user code: a channel or a callback on the driver thread.

use std::fmt;
use std::time::Instant;

use crossbeam_channel::{Receiver, Sender};

use crate::stats::LATENESS_MAX_US;
use crate::ServiceKey;

/// A timer that fired, as delivered by the driver.
///
/// `deadline` is the deadline rounded **up** to the service's tick boundary (so
/// `fired_at >= deadline >=` the instant you asked for); `fired_at` is when the driver began
/// delivering it. `fired_at - deadline` is what the lateness histogram records.
///
/// ```
/// use std::time::{Duration, Instant};
/// use tickwheel_service::{Builder, Delivery};
///
/// let (delivery, fired) = Delivery::channel();
/// let service = Builder::new().build(delivery).unwrap();
/// let asked = Instant::now() + Duration::from_millis(5);
/// let key = service.schedule_at(asked, "ping").unwrap();
/// let f = fired.recv().unwrap();
/// assert_eq!((f.key, f.payload), (key, "ping"));
/// assert!(f.fired_at >= f.deadline && f.deadline >= asked); // never early
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fired<T> {
    /// The key the timer had; stale from now on.
    pub key: ServiceKey,
    /// The deadline, rounded up to a tick boundary.
    pub deadline: Instant,
    /// When the driver started delivering this timer (the manual driver: the `now` of its turn).
    pub fired_at: Instant,
    /// The payload given at schedule time.
    pub payload: T,
}

impl<T> Fired<T> {
    /// `fired_at - deadline` in µs, as the lateness histogram records it (at most
    /// [`LATENESS_MAX_US`]).
    pub(crate) fn lateness_us(&self) -> u64 {
        let late = self
            .fired_at
            .saturating_duration_since(self.deadline)
            .as_micros();
        u64::try_from(late).map_or(LATENESS_MAX_US, |us| us.min(LATENESS_MAX_US))
    }
}

/// A timer that had not fired when the service shut down; returned by
/// [`TimerService::shutdown`](crate::TimerService::shutdown).
///
/// ```
/// use std::time::Duration;
/// use tickwheel_service::{Builder, Delivery};
///
/// let (delivery, _fired) = Delivery::channel();
/// let service = Builder::new().build(delivery).unwrap();
/// let key = service.schedule_after(Duration::from_secs(60), "later").unwrap();
/// let unfired = service.shutdown();
/// assert_eq!((unfired[0].key, unfired[0].payload), (key, "later"));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Unfired<T> {
    /// The key the timer had; stale from now on.
    pub key: ServiceKey,
    /// The deadline rounded up to a tick boundary, or `None` for a timer that would never have
    /// fired: one set `Duration::MAX` out (its tick saturates at `u64::MAX`, which never comes
    /// due), or one beyond what `Instant` can represent.
    pub deadline: Option<Instant>,
    /// The payload given at schedule time.
    pub payload: T,
}

/// The callback type: runs on the driver thread, once per fired timer.
///
/// ```
/// use tickwheel_service::{Callback, Delivery, Fired};
///
/// let log: Callback<u32> = Box::new(|fired: Fired<u32>| println!("timer {} fired", fired.payload));
/// let delivery = Delivery::Callback(log);
/// # drop(delivery);
/// ```
pub type Callback<T> = Box<dyn FnMut(Fired<T>) + Send + 'static>;

/// Where fired timers go.
///
/// * [`Delivery::Channel`]: the driver sends each [`Fired`] on a crossbeam channel; any number
///   of threads may receive. With a bounded channel a slow consumer slows the driver (later
///   timers fire late, none is lost) until shutdown: then a send that still cannot go through
///   is given up, so shutdown never hangs on a consumer that stopped receiving. A payload that
///   cannot be sent (every receiver gone, or given up at shutdown) is dropped and counted in
///   [`ServiceStats::undelivered`](crate::ServiceStats::undelivered).
/// * [`Delivery::Callback`]: the driver calls the closure, outside every lock, so it may
///   schedule, cancel and reset. A panic is caught and counted
///   ([`ServiceStats::panicked`](crate::ServiceStats::panicked)); later timers still fire. A
///   slow callback delays the timers behind it; keep it short or hand work off.
///
/// ```
/// use std::sync::atomic::{AtomicUsize, Ordering};
/// use std::sync::Arc;
/// use std::time::Duration;
/// use tickwheel_service::{Builder, Delivery};
///
/// let count = Arc::new(AtomicUsize::new(0));
/// let seen = count.clone();
/// let delivery = Delivery::callback(move |_fired| {
///     seen.fetch_add(1, Ordering::Relaxed);
/// });
/// let service = Builder::new().build::<()>(delivery).unwrap();
/// service.schedule_after(Duration::ZERO, ()).unwrap();
/// while count.load(Ordering::Relaxed) == 0 {
///     std::thread::sleep(Duration::from_millis(1));
/// }
/// ```
pub enum Delivery<T> {
    /// Send each fired timer on this channel.
    Channel(Sender<Fired<T>>),
    /// Call this on the driver thread for each fired timer.
    Callback(Callback<T>),
}

impl<T> Delivery<T> {
    /// An unbounded channel: the delivery and its receiving end.
    ///
    /// ```
    /// let (delivery, fired) = tickwheel_service::Delivery::<u32>::channel();
    /// assert!(fired.is_empty());
    /// # drop(delivery);
    /// ```
    #[must_use]
    pub fn channel() -> (Self, Receiver<Fired<T>>) {
        let (tx, rx) = crossbeam_channel::unbounded();
        (Self::Channel(tx), rx)
    }

    /// A callback run on the driver thread.
    ///
    /// ```
    /// let delivery = tickwheel_service::Delivery::callback(|fired| drop(fired.payload));
    /// # let _: tickwheel_service::Delivery<String> = delivery;
    /// ```
    pub fn callback(f: impl FnMut(Fired<T>) + Send + 'static) -> Self {
        Self::Callback(Box::new(f))
    }
}

impl<T> fmt::Debug for Delivery<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Channel(_) => f.write_str("Delivery::Channel"),
            Self::Callback(_) => f.write_str("Delivery::Callback"),
        }
    }
}
