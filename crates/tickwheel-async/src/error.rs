//! What a sleep or a timeout reports when the service behind it cannot time it.

use std::fmt;

use tickwheel_service::{KeyError, ScheduleError};

/// The service could not arm or keep a timer, so the future cannot wait on it.
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
            Self::Shutdown => "the async timers were shut down before this timer fired",
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

/// A [`KeyError`] other than `NotPending`.
pub(crate) fn from_key(e: KeyError) -> Error {
    match e {
        KeyError::Failed => Error::Failed,
        KeyError::NotPending | KeyError::Shutdown => Error::Shutdown,
    }
}

/// Why a [`Timeout`](crate::Timeout) ended without its future's output.
///
/// ```
/// use tickwheel_async::{Error, TimeoutError};
/// assert_eq!(TimeoutError::from(Error::Full), TimeoutError::Timer(Error::Full));
/// assert!(TimeoutError::Elapsed.to_string().contains("elapsed"));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TimeoutError {
    /// The deadline passed first.
    Elapsed,
    /// The deadline could not be timed (the future was not polled to completion).
    Timer(Error),
}

impl fmt::Display for TimeoutError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Elapsed => f.write_str("deadline elapsed"),
            Self::Timer(e) => write!(f, "timeout could not be timed: {e}"),
        }
    }
}

impl std::error::Error for TimeoutError {}

impl From<Error> for TimeoutError {
    fn from(e: Error) -> Self {
        Self::Timer(e)
    }
}
