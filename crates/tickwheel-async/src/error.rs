//! [`Error`]: why a timer cannot fire; [`Elapsed`]: a [`Timeout`](crate::Timeout)'s deadline
//! passed first.

use std::fmt;

use tickwheel_service::ScheduleError;

/// The service could not arm or keep a timer, so a future cannot wait on it.
///
/// A [`Sleep`](crate::Sleep) or [`Timeout`](crate::Timeout) polled into one of these panics
/// with its message; [`Sleep::checked`](crate::Sleep::checked) and
/// [`Timeout::checked`](crate::Timeout::checked) return it instead.
///
/// ```
/// let e = tickwheel_async::Error::Shutdown;
/// assert!(e.to_string().contains("shut down"));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Error {
    /// The timers were shut down (or dropped) before this one fired. Permanent.
    Shutdown,
    /// Every shard is at its capacity. Transient: cancels and fires make room.
    Full,
    /// Every shard failed (a `Timer` implementation panicked). Permanent.
    Failed,
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Shutdown => "the async timers were shut down; this timer will not fire",
            Self::Full => "the timer service is at capacity; this timer was not armed",
            Self::Failed => "the timer service's shards failed; this timer will not fire",
        })
    }
}

impl std::error::Error for Error {}

impl<T> From<ScheduleError<T>> for Error {
    fn from(e: ScheduleError<T>) -> Self {
        match e {
            ScheduleError::Full(_) => Self::Full,
            ScheduleError::Shutdown(_) => Self::Shutdown,
            ScheduleError::Failed(_) => Self::Failed,
        }
    }
}

/// The panic of a [`Sleep`](crate::Sleep) or [`Timeout`](crate::Timeout) whose timer cannot
/// fire: it names the error and the way to get it as a value.
#[track_caller]
pub(crate) fn cannot_fire(what: &str, e: Error) -> ! {
    panic!("tickwheel-async {what} cannot complete: {e} (`.checked()` returns this as an Error)")
}

/// A [`Timeout`](crate::Timeout)'s deadline passed before its future completed: the error of
/// [`timeout`](fn@crate::timeout), as tokio's `Elapsed` is of its `timeout`.
///
/// ```
/// use std::time::Duration;
/// let never = std::future::pending::<()>();
/// let r = futures_executor::block_on(tickwheel_async::timeout(Duration::from_millis(2), never));
/// let elapsed: tickwheel_async::Elapsed = r.unwrap_err();
/// assert_eq!(elapsed.to_string(), "deadline has elapsed");
/// let io: std::io::Error = elapsed.into();
/// assert_eq!(io.kind(), std::io::ErrorKind::TimedOut);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Elapsed(());

impl Elapsed {
    pub(crate) const fn new() -> Self {
        Self(())
    }
}

impl fmt::Display for Elapsed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("deadline has elapsed")
    }
}

impl std::error::Error for Elapsed {}

impl From<Elapsed> for std::io::Error {
    fn from(e: Elapsed) -> Self {
        Self::new(std::io::ErrorKind::TimedOut, e)
    }
}
