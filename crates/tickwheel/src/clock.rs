//! The tick clock: maps `Instant` ↔ tick at a chosen resolution.
//!
//! The timer structures never read a clock; they take `now` in ticks. This clock is the one place
//! where real time becomes ticks, and it rounds so that a timer can only be late, never early:
//! a **deadline rounds up** to the next tick boundary and **`now` rounds down**. A timer whose
//! deadline tick is `d` fires in a poll at tick `now >= d`, that is at a real time at or after
//! the deadline `Instant`, and at most one tick (plus the caller's wake-up delay) after it.
//!
//! All conversions saturate: an `Instant` before the origin is tick 0, a deadline past
//! `u64::MAX` ticks is tick `u64::MAX`, and a tick too large for `Instant` gives `None`.

use core::time::Duration;
use std::time::Instant;

use crate::{ConfigError, Tick};

/// Converts between `Instant` and ticks of a fixed resolution, counted from an origin.
///
/// ```
/// use std::time::{Duration, Instant};
/// use tickwheel::TickClock;
///
/// let origin = Instant::now();
/// let clock = TickClock::with_origin(origin, Duration::from_millis(1)).unwrap();
/// // A deadline 2.5 ms out rounds up to tick 3; "now" 2.5 ms in rounds down to tick 2.
/// let t = origin + Duration::from_micros(2500);
/// assert_eq!(clock.deadline_tick(t), 3);
/// assert_eq!(clock.now_tick(t), 2);
/// ```
#[derive(Clone, Copy, Debug)]
pub struct TickClock {
    origin: Instant,
    /// Nanoseconds per tick; at least 1.
    resolution_ns: u64,
}

impl TickClock {
    /// The default resolution: 1 ms, as tokio's and Kafka's wheels use.
    pub const DEFAULT_RESOLUTION: Duration = Duration::from_millis(1);

    /// A clock whose tick 0 is now.
    ///
    /// # Errors
    /// [`ConfigError::ZeroResolution`] when `resolution` is zero.
    ///
    /// ```
    /// use std::time::Duration;
    /// let clock = tickwheel::TickClock::new(Duration::from_millis(1)).unwrap();
    /// assert_eq!(clock.resolution(), Duration::from_millis(1));
    /// ```
    pub fn new(resolution: Duration) -> Result<Self, ConfigError> {
        Self::with_origin(Instant::now(), resolution)
    }

    /// A clock whose tick 0 is `origin`.
    ///
    /// # Errors
    /// [`ConfigError::ZeroResolution`] when `resolution` is zero. Resolutions above `u64::MAX`
    /// nanoseconds are clamped to it.
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    /// use tickwheel::{ConfigError, TickClock};
    /// assert_eq!(TickClock::with_origin(Instant::now(), Duration::ZERO).err(),
    ///            Some(ConfigError::ZeroResolution));
    /// ```
    pub fn with_origin(origin: Instant, resolution: Duration) -> Result<Self, ConfigError> {
        let ns = resolution.as_nanos();
        if ns == 0 {
            return Err(ConfigError::ZeroResolution);
        }
        Ok(Self {
            origin,
            resolution_ns: u64::try_from(ns).unwrap_or(u64::MAX),
        })
    }

    /// The instant of tick 0.
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    /// let origin = Instant::now();
    /// let clock = tickwheel::TickClock::with_origin(origin, Duration::from_millis(1)).unwrap();
    /// assert_eq!(clock.origin(), origin);
    /// ```
    #[must_use]
    pub fn origin(&self) -> Instant {
        self.origin
    }

    /// The length of one tick.
    ///
    /// ```
    /// use std::time::Duration;
    /// let clock = tickwheel::TickClock::new(Duration::from_micros(100)).unwrap();
    /// assert_eq!(clock.resolution(), Duration::from_micros(100));
    /// ```
    #[must_use]
    pub fn resolution(&self) -> Duration {
        Duration::from_nanos(self.resolution_ns)
    }

    /// The current tick for a reading of the clock: rounds **down**; instants before the
    /// origin are tick 0.
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    /// let origin = Instant::now();
    /// let clock = tickwheel::TickClock::with_origin(origin, Duration::from_millis(1)).unwrap();
    /// assert_eq!(clock.now_tick(origin + Duration::from_micros(1999)), 1);
    /// ```
    #[must_use]
    pub fn now_tick(&self, now: Instant) -> Tick {
        let since = now.saturating_duration_since(self.origin).as_nanos();
        ticks_floor(since, self.resolution_ns)
    }

    /// The tick at which a timer due at `deadline` may fire: rounds **up**, saturating at
    /// `u64::MAX`.
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    /// let origin = Instant::now();
    /// let clock = tickwheel::TickClock::with_origin(origin, Duration::from_millis(1)).unwrap();
    /// assert_eq!(clock.deadline_tick(origin + Duration::from_micros(1001)), 2);
    /// assert_eq!(clock.deadline_tick(origin + Duration::from_millis(1)), 1);
    /// ```
    #[must_use]
    pub fn deadline_tick(&self, deadline: Instant) -> Tick {
        let since = deadline.saturating_duration_since(self.origin).as_nanos();
        ticks_ceil(since, self.resolution_ns)
    }

    /// The deadline tick for a timer set `after` a delay from `now`: `deadline_tick(now +
    /// after)`, saturating instead of overflowing for huge durations. A `now` before the origin
    /// counts from `now`, like `deadline_tick`: the delay that reaches past the origin is what
    /// is left of it there.
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    /// let clock = tickwheel::TickClock::new(Duration::from_millis(1)).unwrap();
    /// assert_eq!(clock.deadline_after(Instant::now(), Duration::MAX), u64::MAX);
    /// ```
    #[must_use]
    pub fn deadline_after(&self, now: Instant, after: Duration) -> Tick {
        let after = after.as_nanos();
        let total = match now.checked_duration_since(self.origin) {
            Some(since) => since.as_nanos().saturating_add(after),
            None => after.saturating_sub((self.origin - now).as_nanos()),
        };
        ticks_ceil(total, self.resolution_ns)
    }

    /// The number of whole ticks covering `duration`, rounded up.
    ///
    /// ```
    /// use std::time::Duration;
    /// let clock = tickwheel::TickClock::new(Duration::from_millis(1)).unwrap();
    /// assert_eq!(clock.ticks_ceil(Duration::from_micros(1500)), 2);
    /// ```
    #[must_use]
    pub fn ticks_ceil(&self, duration: Duration) -> Tick {
        ticks_ceil(duration.as_nanos(), self.resolution_ns)
    }

    /// The instant at which `tick` begins, or `None` if that lies beyond what `Instant` can
    /// represent.
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    /// let origin = Instant::now();
    /// let clock = tickwheel::TickClock::with_origin(origin, Duration::from_millis(1)).unwrap();
    /// assert_eq!(clock.instant_of(3), Some(origin + Duration::from_millis(3)));
    /// ```
    #[must_use]
    pub fn instant_of(&self, tick: Tick) -> Option<Instant> {
        let ns = u128::from(tick) * u128::from(self.resolution_ns);
        let secs = u64::try_from(ns / 1_000_000_000).ok()?;
        let nanos = (ns % 1_000_000_000) as u32;
        self.origin.checked_add(Duration::new(secs, nanos))
    }
}

fn saturate(ticks: u128) -> Tick {
    u64::try_from(ticks).unwrap_or(u64::MAX)
}

/// `ns / resolution`, rounded down and saturating. A span under 584 years fits `u64`, and then
/// one 64-bit division does it: a 128-bit one is a library call several times slower, and
/// the async sleeps divide on every sleep made.
#[inline]
fn ticks_floor(ns: u128, resolution: u64) -> Tick {
    match u64::try_from(ns) {
        Ok(ns) => ns / resolution,
        Err(_) => saturate(ns / u128::from(resolution)),
    }
}

/// `ns / resolution`, rounded up and saturating; see [`ticks_floor`].
#[inline]
fn ticks_ceil(ns: u128, resolution: u64) -> Tick {
    match u64::try_from(ns) {
        Ok(ns) => ns.div_ceil(resolution),
        Err(_) => saturate(ns.div_ceil(u128::from(resolution))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn clock() -> (Instant, TickClock) {
        let origin = Instant::now();
        (
            origin,
            TickClock::with_origin(origin, Duration::from_millis(1)).unwrap(),
        )
    }

    #[test]
    fn deadline_never_rounds_before_its_instant() {
        let (origin, clock) = clock();
        for us in 0..5_000u64 {
            let t = origin + Duration::from_micros(us);
            let d = clock.deadline_tick(t);
            assert!(
                clock.instant_of(d).unwrap() >= t,
                "deadline {us}us rounded early"
            );
            assert!(clock.now_tick(t) <= d);
            assert!(clock.instant_of(clock.now_tick(t)).unwrap() <= t);
        }
    }

    #[test]
    fn before_origin_is_tick_zero() {
        let (origin, clock) = clock();
        let later =
            TickClock::with_origin(origin + Duration::from_secs(5), Duration::from_millis(1))
                .unwrap();
        assert_eq!(later.now_tick(origin), 0);
        assert_eq!(later.deadline_tick(origin), 0);
        assert_eq!(clock.now_tick(origin), 0);
    }

    #[test]
    fn a_delay_from_before_the_origin_counts_from_then() {
        let (origin, _) = clock();
        let later =
            TickClock::with_origin(origin + Duration::from_millis(5), Duration::from_millis(1))
                .unwrap();
        // 10 ms after a moment 5 ms before the origin is 5 ms after it, as deadline_tick says.
        let after = Duration::from_millis(10);
        assert_eq!(later.deadline_after(origin, after), 5);
        assert_eq!(
            later.deadline_after(origin, after),
            later.deadline_tick(origin + after)
        );
        // A delay that ends before the origin is due at once.
        assert_eq!(later.deadline_after(origin, Duration::from_millis(3)), 0);
    }

    #[test]
    fn saturates() {
        let (origin, _) = clock();
        let ns = TickClock::with_origin(origin, Duration::from_nanos(1)).unwrap();
        assert_eq!(ns.deadline_after(origin, Duration::MAX), u64::MAX);
        assert_eq!(ns.ticks_ceil(Duration::MAX), u64::MAX);
        // u64::MAX nanoseconds is 584 years: an `Instant` still holds it.
        let years_500 = Duration::from_secs(500 * 365 * 86_400);
        assert!(ns
            .instant_of(u64::MAX)
            .is_some_and(|at| at > origin + years_500));
        let huge = TickClock::with_origin(origin, Duration::MAX).unwrap();
        assert_eq!(huge.instant_of(u64::MAX), None);
        assert_eq!(huge.ticks_ceil(Duration::from_secs(1)), 1);
    }
}
