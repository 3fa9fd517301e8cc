//! Service counters and the fire-lateness histogram.
//!
//! The counters that schedule, cancel, reset and fire touch live inside each shard and are
//! bumped while its lock is already held, so keeping them costs no extra atomic and no shared
//! cache line. The rare counters (panicked, rejected, undelivered) are shared atomics. The
//! lateness histogram is written by the driver alone, once per batch.

use std::fmt;

use hdrhistogram::Histogram;

/// The largest lateness the histogram resolves, in microseconds (one hour); later fires are
/// recorded as this value.
///
/// ```
/// assert_eq!(tickwheel_service::LATENESS_MAX_US, 3_600 * 1_000_000);
/// ```
pub const LATENESS_MAX_US: u64 = 3_600_000_000;

/// A snapshot of a service's counters, from [`TimerHandle::stats`](crate::TimerHandle::stats).
///
/// Every scheduled timer ends exactly once, so once a service is idle
/// `scheduled == pending + cancelled + fired + drained`.
///
/// ```
/// use std::time::Duration;
/// use tickwheel_service::{Builder, Delivery};
///
/// let (delivery, fired) = Delivery::channel();
/// let service = Builder::new().build(delivery).unwrap();
/// let key = service.schedule_after(Duration::from_secs(60), 1).unwrap();
/// service.schedule_after(Duration::ZERO, 2).unwrap();
/// service.cancel(key).unwrap();
/// fired.recv().unwrap();
/// let stats = service.stats();
/// assert_eq!((stats.scheduled, stats.cancelled, stats.fired, stats.pending), (2, 1, 1, 0));
/// // Lateness is recorded once the driver's whole batch is delivered, just after this one.
/// let until = std::time::Instant::now() + Duration::from_secs(10);
/// while service.stats().lateness_us.len() < 1 && std::time::Instant::now() < until {
///     std::thread::yield_now();
/// }
/// assert_eq!(service.stats().lateness_us.len(), 1);
/// ```
#[derive(Clone)]
#[non_exhaustive]
pub struct ServiceStats {
    /// Timers waiting in the shards now.
    pub pending: u64,
    /// Timers accepted by `schedule_*`.
    pub scheduled: u64,
    /// Timers ended by a successful `cancel`.
    pub cancelled: u64,
    /// Successful `reset_*` calls.
    pub reset: u64,
    /// Timers taken out of the shards by the driver for delivery.
    pub fired: u64,
    /// Timers handed back by `shutdown`.
    pub drained: u64,
    /// Callbacks that panicked (caught; the driver went on).
    pub panicked: u64,
    /// Panics caught out of a shard's `Timer` implementation, by the driver, `stats`,
    /// `pending`, `shrink_to_fit` or `shutdown`. Each failed its shard.
    pub timer_panics: u64,
    /// Shards that failed: a panic unwound out of their `Timer` (on any thread). Their timers
    /// will not fire; calls on their keys get [`KeyError::Failed`](crate::KeyError::Failed),
    /// schedules go to the other shards, and `shutdown` hands back what their timer still
    /// gives up. A correct `Timer` never panics, so anything but 0 is a bug to report.
    pub failed_shards: usize,
    /// Heap bytes held by the usable shards' timers ([`tickwheel::Timer::allocated_bytes`]).
    pub allocated_bytes: usize,
    /// Schedules refused with [`ScheduleError::Full`](crate::ScheduleError::Full).
    pub rejected: u64,
    /// Fired timers dropped because every receiver of the delivery channel was gone.
    pub undelivered: u64,
    /// Times the driver thread woke from sleep (deadline reached, an earlier deadline arrived,
    /// or a wheel's early slot-boundary answer). An idle service does not add to it.
    pub wakeups: u64,
    /// Wake-ups whose turn delivered nothing: a wheel's early slot-boundary answer (see
    /// [`tickwheel::Timer::next_deadline`]), or a producer's wake for a deadline not yet due.
    pub empty_wakeups: u64,
    /// Driver turns (each locks every shard once to poll).
    pub turns: u64,
    /// Shards in the service.
    pub shards: usize,
    /// Fire lateness in microseconds: delivery start minus the deadline (rounded up to a tick).
    /// Saturates at [`LATENESS_MAX_US`]. Recorded after the driver delivers each batch, so a
    /// receiver that reads it at once may not see its own fire in it yet; `fired` counts it
    /// before delivery.
    pub lateness_us: Histogram<u64>,
}

/// Summarises the histogram (count, p50, p99, max) instead of printing its buckets.
impl fmt::Debug for ServiceStats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let h = &self.lateness_us;
        f.debug_struct("ServiceStats")
            .field("pending", &self.pending)
            .field("scheduled", &self.scheduled)
            .field("cancelled", &self.cancelled)
            .field("reset", &self.reset)
            .field("fired", &self.fired)
            .field("drained", &self.drained)
            .field("panicked", &self.panicked)
            .field("timer_panics", &self.timer_panics)
            .field("failed_shards", &self.failed_shards)
            .field("allocated_bytes", &self.allocated_bytes)
            .field("rejected", &self.rejected)
            .field("undelivered", &self.undelivered)
            .field("wakeups", &self.wakeups)
            .field("empty_wakeups", &self.empty_wakeups)
            .field("turns", &self.turns)
            .field("shards", &self.shards)
            .field(
                "lateness_us",
                &format_args!(
                    "{{ count: {}, p50: {}, p99: {}, max: {} }}",
                    h.len(),
                    h.value_at_quantile(0.5),
                    h.value_at_quantile(0.99),
                    h.max()
                ),
            )
            .finish()
    }
}

pub(crate) fn new_lateness_histogram() -> Histogram<u64> {
    // 3 significant figures from 1 µs to 1 hour: about 180 KiB, allocated once.
    Histogram::new_with_bounds(1, LATENESS_MAX_US, 3).expect("constant bounds are valid")
}

/// Per-shard counters, kept under the shard lock.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct ShardCounters {
    pub(crate) scheduled: u64,
    pub(crate) cancelled: u64,
    pub(crate) reset: u64,
    pub(crate) fired: u64,
    pub(crate) drained: u64,
}
