//! Errors. Each one says what went wrong and what to do next; an error that refuses a payload
//! hands it back.

use core::fmt;

use crate::TimerKey;

/// An insert that was refused. The payload comes back so nothing is lost.
///
/// ```
/// use tickwheel::{IndexedHeap, InsertError, Options, Timer, FromOptions};
///
/// let mut timer: IndexedHeap<&str> = IndexedHeap::from_options(Options::new().capacity(1)).unwrap();
/// timer.insert(10, "first").unwrap();
/// let err = timer.insert(10, "second").unwrap_err();
/// assert!(matches!(err, InsertError::Full(_)));
/// assert_eq!(err.into_inner(), "second");
/// ```
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum InsertError<T> {
    /// The timer already holds as many timers as its capacity allows (or `u32::MAX - 1`, the
    /// most a key can name). This is transient: cancel or fire timers to make room, or shed load.
    Full(T),
}

impl<T> InsertError<T> {
    /// Takes the refused payload back.
    ///
    /// ```
    /// use tickwheel::InsertError;
    /// assert_eq!(InsertError::Full(7).into_inner(), 7);
    /// ```
    pub fn into_inner(self) -> T {
        match self {
            Self::Full(payload) => payload,
        }
    }
}

impl<T> fmt::Debug for InsertError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Full(_) => f.write_str("Full(..)"),
        }
    }
}

impl<T> fmt::Display for InsertError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Full(_) => f.write_str(
                "timer is at capacity: cancel or fire timers to make room, or shed load",
            ),
        }
    }
}

#[cfg(feature = "std")]
impl<T> std::error::Error for InsertError<T> {}

/// A key that no longer names a pending timer: it fired, was cancelled, or came from another
/// timer. Nothing was changed. Drop the key; the timer it named is gone.
///
/// ```
/// use tickwheel::{HashedWheel, StaleKeyError, Timer};
///
/// let mut timer = HashedWheel::new();
/// let key = timer.insert(3, ()).unwrap();
/// timer.cancel(key);
/// assert_eq!(timer.reset(key, 9), Err(StaleKeyError { key }));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StaleKeyError {
    /// The key that was refused.
    pub key: TimerKey,
}

impl fmt::Display for StaleKeyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{:?} names no pending timer (it fired or was cancelled); nothing was changed",
            self.key
        )
    }
}

#[cfg(feature = "std")]
impl std::error::Error for StaleKeyError {}

/// A configuration that cannot build a timer. Fix the value it names.
///
/// ```
/// use tickwheel::{ConfigError, HierarchicalWheel, Options, FromOptions};
///
/// let err = HierarchicalWheel::<()>::from_options(Options::new().capacity(0)).err();
/// assert_eq!(err, Some(ConfigError::ZeroCapacity));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ConfigError {
    /// A capacity of 0 would refuse every insert; leave the capacity unset for "unbounded".
    ZeroCapacity,
    /// The hashed wheel's slot count must be a power of two between 64 and 2²⁴ (got this).
    WheelSlots(usize),
    /// A tick clock needs a resolution of at least one nanosecond.
    ZeroResolution,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::ZeroCapacity => f.write_str(
                "capacity 0 would refuse every timer; use a positive capacity or none for unbounded",
            ),
            Self::WheelSlots(n) => write!(
                f,
                "hashed wheel slots must be a power of two in 64..=16777216, got {n}"
            ),
            Self::ZeroResolution => f.write_str("tick resolution must be at least 1 ns"),
        }
    }
}

#[cfg(feature = "std")]
impl std::error::Error for ConfigError {}
