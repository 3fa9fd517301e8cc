//! The cost clock: a calibrated cycle counter that times every timer call to about a
//! nanosecond.
//!
//! A pair of `Instant::now()` readings costs 20–30 ns here, more than most timer calls, so
//! [`CallClock`] reads the CPU's time-stamp counter through `quanta` instead (`Clock::raw`, one
//! `rdtsc` where the CPU has an invariant TSC; `quanta` falls back to the OS clock elsewhere)
//! and converts counts to nanoseconds with `quanta`'s own calibration against the monotonic
//! clock.
//!
//! At start it measures two things, both reported with every run:
//! - **overhead**: the median count between two back-to-back readings. It is subtracted from
//!   every timed call (saturating at 0), so a call's cost is the counter's view of the call
//!   alone;
//! - **resolution**: the smallest advance between consecutive readings, in ns. No timing can
//!   be finer than that. It is one reading's own duration on a fine counter, and the counter's
//!   step on a coarse one: on some AMD EPYC hosts the TSC advances from a 100 MHz reference, so
//!   a 2.45 GHz TSC moves in steps of 24–25 counts, 10 ns; on others it reads 1 ns.
//!
//! A single call shorter than the resolution reads as 0 or one step, so per-call percentiles
//! come in steps of the resolution. [`time_run`](CallClock::time_run) times a run of calls with
//! two readings and divides: its per-call figure resolves the resolution ÷ the run length.

/// Back-to-back reading pairs taken to calibrate.
const CALIBRATION_PAIRS: usize = 20_001;

/// A calibrated counter that times calls.
#[derive(Clone, Debug)]
pub(crate) struct CallClock {
    clock: quanta::Clock,
    ns_per_count: f64,
    overhead_counts: u64,
    resolution_ns: f64,
    empty_mean_ns: f64,
    /// Times nothing: every call costs 0 (see [`untimed`](Self::untimed)).
    untimed: bool,
}

impl CallClock {
    /// Calibrates a new clock (a few milliseconds).
    pub(crate) fn new() -> Self {
        let clock = quanta::Clock::new();
        let span: u64 = 1 << 30;
        let ns_per_count = clock.delta_as_nanos(0, span) as f64 / span as f64;
        let mut pairs: Vec<u64> = (0..CALIBRATION_PAIRS)
            .map(|_| {
                let start = clock.raw();
                clock.raw().saturating_sub(start)
            })
            .collect();
        pairs.sort_unstable();
        let overhead_counts = pairs[pairs.len() / 2];
        let reads: Vec<u64> = (0..CALIBRATION_PAIRS).map(|_| clock.raw()).collect();
        let step = reads
            .windows(2)
            .map(|w| w[1].saturating_sub(w[0]))
            .filter(|&d| d > 0)
            .min()
            .unwrap_or(1);
        let mut clock = Self {
            clock,
            ns_per_count: if ns_per_count > 0.0 {
                ns_per_count
            } else {
                1.0
            },
            overhead_counts,
            resolution_ns: step as f64 * ns_per_count,
            empty_mean_ns: 0.0,
            untimed: false,
        };
        clock.empty_mean_ns = clock.empty_mean();
        clock
    }

    /// A clock that reads no counter: [`time`](Self::time) runs the call and says it cost 0.
    /// Under `--cost simulated` a simulator counts the calls, and the harness must do the same
    /// work on every run: a timed cost would land in a histogram bucket that depends on the
    /// machine, and move the simulated cache's contents.
    pub(crate) fn untimed() -> Self {
        Self {
            clock: quanta::Clock::new(),
            ns_per_count: 1.0,
            overhead_counts: 0,
            resolution_ns: 1.0,
            empty_mean_ns: 0.0,
            untimed: true,
        }
    }

    /// Whether this clock times nothing ([`untimed`](Self::untimed)).
    pub(crate) fn is_untimed(&self) -> bool {
        self.untimed
    }

    /// The mean an empty timed call reads, in ns, trimmed like the costs (the slowest 0.1 % are
    /// interrupts, not the reading).
    fn empty_mean(&self) -> f64 {
        let mut empty: Vec<u64> = (0..CALIBRATION_PAIRS)
            .map(|_| self.time(|| std::hint::black_box(())).1)
            .collect();
        empty.sort_unstable();
        let kept = &empty[..empty.len() * 999 / 1000];
        kept.iter().sum::<u64>() as f64 / kept.len().max(1) as f64
    }

    /// The counts from `start` until now, the overhead subtracted.
    #[inline]
    fn elapsed_counts(&self, start: u64) -> u64 {
        self.clock
            .raw()
            .saturating_sub(start)
            .saturating_sub(self.overhead_counts)
    }

    /// Runs `f` and returns its result with its cost in nanoseconds, overhead subtracted.
    #[inline]
    pub(crate) fn time<R>(&self, f: impl FnOnce() -> R) -> (R, u64) {
        if self.untimed {
            return (f(), 0);
        }
        let start = self.clock.raw();
        let result = f();
        let counts = self.elapsed_counts(start);
        (result, (counts as f64 * self.ns_per_count).round() as u64)
    }

    /// Runs `f` `calls` times in a row and returns the cost per call in picoseconds (overhead
    /// subtracted once for the run), resolving [`resolution_ns`](Self::resolution_ns) ÷ `calls`.
    #[inline]
    pub(crate) fn time_run(&self, calls: u32, mut f: impl FnMut(u32)) -> u64 {
        let start = self.clock.raw();
        for i in 0..calls {
            f(i);
        }
        let counts = self.elapsed_counts(start);
        (counts as f64 * self.ns_per_count * 1e3 / f64::from(calls.max(1))).round() as u64
    }

    /// The cost of one empty timing, in ns: what [`time`](Self::time) subtracts.
    pub(crate) fn overhead_ns(&self) -> f64 {
        self.overhead_counts as f64 * self.ns_per_count
    }

    /// The mean cost an empty timed call reads, in ns: the part of the overhead that the median
    /// does not remove (a reading that straddles a counter step reads one step more). Means of
    /// many timed calls subtract it to stay unbiased.
    pub(crate) fn empty_mean_ns(&self) -> f64 {
        self.empty_mean_ns
    }

    /// The smallest cost difference one timing can see, in ns (see the module docs).
    pub(crate) fn resolution_ns(&self) -> f64 {
        self.resolution_ns
    }

    /// The resolution of single-call costs: the clock's, and never below the 1 ns unit they are
    /// recorded in.
    pub(crate) fn call_resolution_ns(&self) -> f64 {
        self.resolution_ns.max(1.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn calibration_is_sane_and_timing_adds_up() {
        let clock = CallClock::new();
        assert!(clock.resolution_ns() > 0.0 && clock.resolution_ns() < 1_000.0);
        assert!(clock.overhead_ns() >= 0.0 && clock.overhead_ns() < 10_000.0);
        // A sleep of 2 ms must read as at least 2 ms and (generously, on a shared machine)
        // well under a second.
        let ((), ns) = clock.time(|| std::thread::sleep(Duration::from_millis(2)));
        assert!((2_000_000..1_000_000_000).contains(&ns), "{ns}");
        // An empty call reads near zero: the overhead is subtracted.
        let mut empty: Vec<u64> = (0..1_001).map(|_| clock.time(|| ()).1).collect();
        empty.sort_unstable();
        assert!(empty[500] < 50, "median empty timing {} ns", empty[500]);
        // A run of 2 ms sleeps reads as 2 ms per call, in picoseconds.
        let per_call = clock.time_run(3, |_| std::thread::sleep(Duration::from_millis(2)));
        assert!(
            (2_000_000_000..300_000_000_000).contains(&per_call),
            "{per_call}"
        );
    }
}
