//! The builder: resolution, shards, capacity, delivery, and which timer implementation.

use std::sync::Arc;
use std::time::Duration;

use tickwheel::{ConfigError, FromOptions, HierarchicalWheel, Options, TickClock, Timer};

use crate::driver::Driver;
use crate::shared::Shared;
use crate::{BuildError, Delivery, ManualDriver, TimerService};

/// The most shards a service may have (a key stores the shard index in 32 bits; far more than
/// any machine has cores).
///
/// ```
/// assert!(tickwheel_service::MAX_SHARDS >= 1024);
/// ```
pub const MAX_SHARDS: usize = 1 << 16;

/// Configures and builds a [`TimerService`] (driver thread) or a [`ManualDriver`] (no thread).
///
/// | option | default | meaning |
/// |---|---|---|
/// | [`resolution`](Self::resolution) | 1 ms | tick length: deadlines round up to it |
/// | [`shards`](Self::shards) | available parallelism | independent locks producers spread over |
/// | [`capacity`](Self::capacity) | unbounded | most pending timers; beyond it schedules fail with the payload |
/// | [`preallocate`](Self::preallocate) | 0 | timers to reserve memory for, over all shards |
/// | delivery | — | given at build: [`Delivery::channel`] or [`Delivery::callback`] |
/// | timer | [`HierarchicalWheel`] | `build`; any other implementation through a factory in `build_with` |
///
/// ```
/// use std::time::Duration;
/// use tickwheel::{FromOptions, IndexedHeap, Kind, Timer};
/// use tickwheel_service::{Builder, Delivery, TimerService};
///
/// // A heap in every shard, chosen at compile time:
/// let (delivery, _fired) = Delivery::channel();
/// let heap: TimerService<u32, IndexedHeap<u32>> =
///     Builder::new().build_with(delivery, IndexedHeap::from_options).unwrap();
///
/// // Or any implementation picked at run time, e.g. from a command-line flag:
/// let kind: Kind = "hashed".parse().unwrap();
/// let (delivery, _fired) = Delivery::channel();
/// let dynamic = Builder::new()
///     .shards(2)
///     .build_with(delivery, |options| kind.build::<u32>(options))
///     .unwrap();
/// dynamic.schedule_after(Duration::from_secs(1), 5).unwrap();
/// # drop((heap, dynamic));
/// ```
#[derive(Clone, Debug)]
#[must_use]
pub struct Builder {
    resolution: Duration,
    shards: Option<usize>,
    capacity: Option<usize>,
    preallocate: usize,
    thread_name: String,
}

impl Default for Builder {
    fn default() -> Self {
        Self::new()
    }
}

impl Builder {
    /// The defaults in the table above.
    ///
    /// ```
    /// let builder = tickwheel_service::Builder::new();
    /// # drop(builder);
    /// ```
    pub fn new() -> Self {
        Self {
            resolution: TickClock::DEFAULT_RESOLUTION,
            shards: None,
            capacity: None,
            preallocate: 0,
            thread_name: "tickwheel-driver".into(),
        }
    }

    /// The tick length. Timers fire no earlier than their deadline and typically within one
    /// tick plus the driver's wake-up delay after it. Zero is refused at build.
    ///
    /// ```
    /// # use std::time::Duration;
    /// let builder = tickwheel_service::Builder::new().resolution(Duration::from_micros(100));
    /// # drop(builder);
    /// ```
    pub fn resolution(mut self, resolution: Duration) -> Self {
        self.resolution = resolution;
        self
    }

    /// The number of shards (each a lock and a timer). More shards, less contention between
    /// producer threads; each shard costs one timer's fixed memory and one lock per driver
    /// turn. Default: `std::thread::available_parallelism()`. Zero is refused at build; values
    /// above [`MAX_SHARDS`] are clamped; with a capacity below the shard count the service uses
    /// `capacity` shards so each holds at least one timer.
    ///
    /// ```
    /// let builder = tickwheel_service::Builder::new().shards(8);
    /// # drop(builder);
    /// ```
    pub fn shards(mut self, shards: usize) -> Self {
        self.shards = Some(shards);
        self
    }

    /// The most timers pending at once, over all shards. Each shard gets an equal share; a
    /// schedule that finds its shard full tries the others, so
    /// [`ScheduleError::Full`](crate::ScheduleError::Full) means the whole service is full.
    /// Zero is refused at build.
    ///
    /// ```
    /// let builder = tickwheel_service::Builder::new().capacity(1_000_000);
    /// # drop(builder);
    /// ```
    pub fn capacity(mut self, capacity: usize) -> Self {
        self.capacity = Some(capacity);
        self
    }

    /// Reserves memory for this many timers up front, spread over the shards.
    ///
    /// ```
    /// let builder = tickwheel_service::Builder::new().preallocate(100_000);
    /// # drop(builder);
    /// ```
    pub fn preallocate(mut self, timers: usize) -> Self {
        self.preallocate = timers;
        self
    }

    /// The driver thread's name (default `tickwheel-driver`), as shown by debuggers and `top -H`.
    ///
    /// ```
    /// let builder = tickwheel_service::Builder::new().thread_name("timeouts");
    /// # drop(builder);
    /// ```
    pub fn thread_name(mut self, name: impl Into<String>) -> Self {
        self.thread_name = name.into();
        self
    }

    /// Builds a service whose shards each hold a [`HierarchicalWheel`] (the right default for
    /// I/O timeouts), and starts its driver thread. For another implementation use
    /// [`build_with`](Self::build_with).
    ///
    /// # Errors
    /// [`BuildError`] for a zero resolution, shard count or capacity, or when the thread cannot
    /// start.
    ///
    /// ```
    /// use tickwheel_service::{Builder, Delivery, TimerService};
    ///
    /// let (delivery, _fired) = Delivery::channel();
    /// let service: TimerService<String> = Builder::new().build(delivery).unwrap();
    /// # drop(service);
    /// ```
    pub fn build<T>(self, delivery: Delivery<T>) -> Result<TimerService<T>, BuildError>
    where
        T: Send + 'static,
    {
        self.build_with(delivery, HierarchicalWheel::from_options)
    }

    /// Builds a service whose shards' timers come from `make` (called once per shard with
    /// that shard's [`Options`]: its share of the capacity and preallocation): any
    /// implementation's `from_options` (e.g. `IndexedHeap::from_options`), a closure that sets
    /// implementation options such as `hashed_slots`, or `|o| kind.build(o)` for a
    /// `Box<dyn Timer<T> + Send>` picked at run time from a [`Kind`](tickwheel::Kind).
    ///
    /// # Errors
    /// As [`build`](Self::build), plus whatever `make` returns.
    ///
    /// ```
    /// use tickwheel::{FromOptions, HashedWheel};
    /// use tickwheel_service::{Builder, Delivery};
    ///
    /// let (delivery, _fired) = Delivery::<u8>::channel();
    /// let service = Builder::new()
    ///     .build_with(delivery, |o| HashedWheel::from_options(o.hashed_slots(1024)))
    ///     .unwrap();
    /// # drop(service);
    /// ```
    pub fn build_with<T, X, F>(
        self,
        delivery: Delivery<T>,
        make: F,
    ) -> Result<TimerService<T, X>, BuildError>
    where
        T: Send + 'static,
        X: Timer<T> + Send + 'static,
        F: FnMut(Options) -> Result<X, ConfigError>,
    {
        let name = self.thread_name.clone();
        let shared = Arc::new(self.shared(make)?);
        let driver = Driver::new(shared.clone(), delivery, true);
        let thread = std::thread::Builder::new()
            .name(name)
            .spawn(move || driver.run())
            .map_err(BuildError::Spawn)?;
        let _ = shared.driver.set(thread.thread().clone());
        Ok(TimerService::new(shared, thread))
    }

    /// Builds the service's state (with [`HierarchicalWheel`] shards) and a [`ManualDriver`]
    /// instead of a thread: nothing fires until you call its `turn(now)`.
    ///
    /// # Errors
    /// As [`build`](Self::build) (except that no thread is started).
    ///
    /// ```
    /// use tickwheel::HierarchicalWheel;
    /// use tickwheel_service::{Builder, Delivery, ManualDriver};
    ///
    /// let (delivery, _fired) = Delivery::channel();
    /// let driver: ManualDriver<u32, HierarchicalWheel<u32>> =
    ///     Builder::new().build_manual(delivery).unwrap();
    /// # drop(driver);
    /// ```
    pub fn build_manual<T>(
        self,
        delivery: Delivery<T>,
    ) -> Result<ManualDriver<T, HierarchicalWheel<T>>, BuildError> {
        self.build_manual_with(delivery, HierarchicalWheel::from_options)
    }

    /// [`build_manual`](Self::build_manual) with a timer factory, as in
    /// [`build_with`](Self::build_with).
    ///
    /// # Errors
    /// As [`build_with`](Self::build_with).
    ///
    /// ```
    /// use tickwheel::Kind;
    /// use tickwheel_service::{Builder, Delivery};
    ///
    /// for kind in Kind::ALL {
    ///     let (delivery, _fired) = Delivery::<u32>::channel();
    ///     let driver = Builder::new().build_manual_with(delivery, |o| kind.build(o)).unwrap();
    ///     # drop(driver);
    /// }
    /// ```
    pub fn build_manual_with<T, X, F>(
        self,
        delivery: Delivery<T>,
        make: F,
    ) -> Result<ManualDriver<T, X>, BuildError>
    where
        X: Timer<T>,
        F: FnMut(Options) -> Result<X, ConfigError>,
    {
        let shared = Arc::new(self.shared(make)?);
        Ok(ManualDriver::new(shared, delivery))
    }

    fn shared<T, X, F>(self, mut make: F) -> Result<Shared<T, X>, BuildError>
    where
        X: Timer<T>,
        F: FnMut(Options) -> Result<X, ConfigError>,
    {
        let clock = TickClock::new(self.resolution)?;
        let mut shards = match self.shards {
            Some(0) => return Err(BuildError::ZeroShards),
            Some(n) => n.min(MAX_SHARDS),
            None => std::thread::available_parallelism().map_or(1, |n| n.get()),
        };
        if let Some(capacity) = self.capacity {
            if capacity == 0 {
                return Err(ConfigError::ZeroCapacity.into());
            }
            shards = shards.min(capacity);
        }
        let timers = (0..shards)
            .map(|i| {
                let mut options = Options::new().preallocate(share(self.preallocate, shards, i));
                if let Some(capacity) = self.capacity {
                    options = options.capacity(share(capacity, shards, i));
                }
                make(options)
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Shared::new(timers, clock))
    }
}

/// Shard `i`'s part of `total` split over `n` shards: the parts differ by at most one and add
/// up to `total`.
fn share(total: usize, n: usize, i: usize) -> usize {
    total / n + usize::from(i < total % n)
}

#[cfg(test)]
mod tests {
    use super::share;

    #[test]
    fn shares_add_up() {
        for total in 0..50 {
            for n in 1..9 {
                let parts: Vec<_> = (0..n).map(|i| share(total, n, i)).collect();
                assert_eq!(parts.iter().sum::<usize>(), total);
                let (lo, hi) = (parts.iter().min().unwrap(), parts.iter().max().unwrap());
                assert!(hi - lo <= 1);
            }
        }
    }
}
