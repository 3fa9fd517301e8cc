//! Errors. Each says what went wrong and what to do next; an error that refuses a payload hands
//! it back, so nothing scheduled is ever lost.

use core::fmt;

use tickwheel::ConfigError;

/// A schedule that was refused. The payload comes back inside.
///
/// ```
/// use std::time::Duration;
/// use tickwheel_service::{Builder, Delivery, ScheduleError};
///
/// let (delivery, _fired) = Delivery::channel();
/// let service = Builder::new().shards(1).capacity(1).build(delivery).unwrap();
/// let key = service.schedule_after(Duration::from_secs(9), "first").unwrap();
/// let err = service.schedule_after(Duration::from_secs(9), "second").unwrap_err();
/// assert!(matches!(err, ScheduleError::Full(_)));
/// assert_eq!(err.into_inner(), "second");
/// service.cancel(key).unwrap(); // frees the room again
/// ```
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum ScheduleError<T> {
    /// Every shard is at its share of the capacity. Transient: cancels and fires make room;
    /// meanwhile shed load (refuse the request) rather than queue without bound.
    Full(T),
    /// The service was shut down. Permanent: every later schedule fails the same way.
    Shutdown(T),
    /// Every shard has failed: a panic unwound out of the `Timer` implementation each one
    /// holds (see [`ServiceStats::failed_shards`](crate::ServiceStats::failed_shards)).
    /// Permanent; shut the service down to recover what it can.
    Failed(T),
}

impl<T> ScheduleError<T> {
    /// Takes the refused payload back.
    ///
    /// ```
    /// assert_eq!(tickwheel_service::ScheduleError::Shutdown(3).into_inner(), 3);
    /// ```
    pub fn into_inner(self) -> T {
        match self {
            Self::Full(payload) | Self::Shutdown(payload) | Self::Failed(payload) => payload,
        }
    }

    /// Whether retrying later can succeed (`Full`), as opposed to never (`Shutdown`, `Failed`).
    ///
    /// ```
    /// use tickwheel_service::ScheduleError;
    /// assert!(ScheduleError::Full(()).is_transient());
    /// assert!(!ScheduleError::Shutdown(()).is_transient());
    /// ```
    pub fn is_transient(&self) -> bool {
        matches!(self, Self::Full(_))
    }
}

impl<T> fmt::Debug for ScheduleError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Full(_) => f.write_str("Full(..)"),
            Self::Shutdown(_) => f.write_str("Shutdown(..)"),
            Self::Failed(_) => f.write_str("Failed(..)"),
        }
    }
}

impl<T> fmt::Display for ScheduleError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Full(_) => f.write_str(
                "timer service is at capacity: cancel timers or let them fire to make room, or shed load",
            ),
            Self::Shutdown(_) => {
                f.write_str("timer service has been shut down; it accepts no more timers")
            }
            Self::Failed(_) => f.write_str(
                "every shard of the timer service failed (its Timer implementation panicked); shut it down to recover what it can",
            ),
        }
    }
}

impl<T> std::error::Error for ScheduleError<T> {}

/// A cancel or reset that found no pending timer. Nothing was changed.
///
/// ```
/// use std::time::Duration;
/// use tickwheel_service::{Builder, Delivery, KeyError};
///
/// let (delivery, _fired) = Delivery::channel();
/// let service = Builder::new().build::<u32>(delivery).unwrap();
/// let key = service.schedule_after(Duration::from_secs(5), 1).unwrap();
/// assert_eq!(service.cancel(key), Ok(1));
/// assert_eq!(service.reset_after(key, Duration::from_secs(1)), Err(KeyError::NotPending));
/// let unfired = service.shutdown();
/// assert!(unfired.is_empty());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum KeyError {
    /// The timer already fired (its payload is delivered or being delivered), was cancelled, or
    /// the key came from elsewhere. Drop the key; if you were racing the timer, it won.
    NotPending,
    /// The service was shut down; every pending payload was handed back by
    /// [`TimerService::shutdown`](crate::TimerService::shutdown). Permanent.
    Shutdown,
    /// The key's shard failed: a panic unwound out of its `Timer` implementation, so its
    /// timers will not fire. `shutdown` hands back what that timer still gives up. Permanent.
    Failed,
}

impl fmt::Display for KeyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NotPending => f.write_str(
                "key names no pending timer (it fired, is being delivered, or was cancelled); nothing was changed",
            ),
            Self::Shutdown => f.write_str(
                "timer service has been shut down; pending payloads were returned by shutdown",
            ),
            Self::Failed => f.write_str(
                "the key's shard failed (its Timer implementation panicked) and its timers will not fire; shutdown returns what it can recover",
            ),
        }
    }
}

impl std::error::Error for KeyError {}

/// A configuration that cannot build a service, or a driver thread that could not start.
///
/// ```
/// use tickwheel_service::{BuildError, Builder, Delivery};
///
/// let (delivery, _fired) = Delivery::<()>::channel();
/// let err = Builder::new().shards(0).build(delivery).err().unwrap();
/// assert!(matches!(err, BuildError::ZeroShards));
/// ```
#[derive(Debug)]
#[non_exhaustive]
pub enum BuildError {
    /// An option the timers or the tick clock refuse (capacity 0, resolution 0, …); fix it.
    Config(ConfigError),
    /// A service needs at least one shard; leave `shards` unset for one per core.
    ZeroShards,
    /// The operating system refused to start the driver thread.
    Spawn(std::io::Error),
}

impl fmt::Display for BuildError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Config(e) => write!(f, "invalid timer service configuration: {e}"),
            Self::ZeroShards => f.write_str(
                "a timer service needs at least one shard; leave it unset for one per core",
            ),
            Self::Spawn(e) => write!(f, "could not start the timer driver thread: {e}"),
        }
    }
}

impl std::error::Error for BuildError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Config(e) => Some(e),
            Self::ZeroShards => None,
            Self::Spawn(e) => Some(e),
        }
    }
}

impl From<ConfigError> for BuildError {
    fn from(e: ConfigError) -> Self {
        Self::Config(e)
    }
}
