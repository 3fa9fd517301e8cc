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

use std::cell::Cell;

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
    /// `--slowdown`: each timing lasts this many times the timed code's own cost (1: off).
    slowdown: f64,
    /// Iterations of [`busy`] per counter count, calibrated when the slowdown is set.
    loops_per_count: f64,
    /// Busy work owed by the spans timed so far, less what was done, in counts.
    slowdown_owed: Cell<f64>,
    /// Every how many spans a chunk of busy work is done.
    slowdown_every: u64,
    /// Spans until the next chunk.
    slowdown_left: Cell<u64>,
    /// What an empty timing reads on average without the slowdown, in counts.
    slowdown_empty: u64,
}

/// About how much busy work `--slowdown` does at once (see [`CallClock::with_slowdown`]).
pub(crate) const SLOWDOWN_CHUNK_NS: f64 = 1_000.0;

/// The call cost `--slowdown` sizes its chunks' spacing for: about a timer call's here.
pub(crate) const SLOWDOWN_TYPICAL_CALL_NS: f64 = 20.0;

/// `loops` iterations of a loop the compiler must keep: the slowdown's busy work.
#[inline(never)]
fn busy(loops: u64) {
    for i in 0..loops {
        std::hint::black_box(i);
    }
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
            slowdown: 1.0,
            loops_per_count: 0.0,
            slowdown_owed: Cell::new(0.0),
            slowdown_every: u64::MAX,
            slowdown_left: Cell::new(u64::MAX),
            slowdown_empty: 0,
        };
        clock.empty_mean_ns = clock.empty_mean();
        clock
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

    /// This clock with the `--slowdown` test hook set, so that the timed calls really take
    /// `factor` times as long in all, as they would in a slower build, and read so. A call's
    /// own cost is its reading less what an empty timing reads on average (as the time inside
    /// the timer is estimated, see [`empty_mean_ns`](Self::empty_mean_ns)).
    ///
    /// Every `n`-th timed span (`n` sized so a chunk is about [`SLOWDOWN_CHUNK_NS`] for calls
    /// of about [`SLOWDOWN_TYPICAL_CALL_NS`]) does busy work for `factor − 1` times the own
    /// cost of the spans since the last one, between its two readings, so it is timed as the
    /// call is; it times that work, and what earlier chunks did more or less than they owed is
    /// carried over, so the busy work done matches what is owed however fast the loop runs. Not a little after every call: extra code a few nanoseconds long cannot be
    /// sized that finely (a variable loop's exit alone costs more), so per-call busy work would
    /// slow a 10 ns call several times over. The chunks fall on the same calls in every
    /// repetition of a run (the count restarts with [`for_run`](Self::for_run)), so a call's
    /// fastest repetition is slowed too. The busy work is a counted loop calibrated here.
    /// `factor` 1 is off; the caller checks the range (see [`Config`](crate::config::Config)).
    pub(crate) fn with_slowdown(mut self, factor: f64) -> Self {
        self.slowdown = factor;
        if factor > 1.0 {
            const LOOPS: u64 = 1 << 20;
            let fastest = (0..5)
                .map(|_| {
                    let start = self.clock.raw();
                    busy(LOOPS);
                    self.clock.raw().saturating_sub(start).max(1)
                })
                .min()
                .unwrap_or(1);
            self.loops_per_count = LOOPS as f64 / fastest as f64;
            self.slowdown_empty = (self.empty_mean_ns / self.ns_per_count).round() as u64;
            self.slowdown_every = (SLOWDOWN_CHUNK_NS / ((factor - 1.0) * SLOWDOWN_TYPICAL_CALL_NS))
                .round()
                .max(1.0) as u64;
            // `empty_mean_ns` stays the plain clock's: what the timer's time is measured from.
            self = self.for_run();
        }
        self
    }

    /// A copy for one run: the slowdown's count of spans starts over, so its chunks fall on the
    /// same calls in every run of the same calls.
    pub(crate) fn for_run(&self) -> Self {
        let run = self.clone();
        run.slowdown_left.set(self.slowdown_every.saturating_sub(1));
        run.slowdown_owed.set(0.0);
        run
    }

    /// The counts from `start` until now, the overhead subtracted (and the slowdown's work
    /// done, when on).
    #[inline]
    fn elapsed_counts(&self, start: u64) -> u64 {
        if self.slowdown > 1.0 {
            return self.slowed_counts(start);
        }
        self.clock
            .raw()
            .saturating_sub(start)
            .saturating_sub(self.overhead_counts)
    }

    /// [`elapsed_counts`](Self::elapsed_counts) with the slowdown on: every
    /// `slowdown_every`-th span does the busy work the spans since the last one owe, less what
    /// earlier chunks overpaid (a short loop runs a little slower than its calibration).
    #[inline]
    fn slowed_counts(&self, start: u64) -> u64 {
        let left = self.slowdown_left.get();
        if left == 0 {
            return self.pay(start);
        }
        let counts = self
            .clock
            .raw()
            .saturating_sub(start)
            .saturating_sub(self.overhead_counts);
        self.slowdown_left.set(left - 1);
        // What an empty timing reads is the reading's, not the call's: it owes nothing.
        self.slowdown_owed.set(
            self.slowdown_owed.get()
                + counts.saturating_sub(self.slowdown_empty) as f64 * (self.slowdown - 1.0),
        );
        counts
    }

    /// The end of a span that pays the busy work owed, its own share included.
    #[cold]
    #[inline(never)]
    fn pay(&self, start: u64) -> u64 {
        let own_end = self.clock.raw();
        let own = own_end
            .saturating_sub(start)
            .saturating_sub(self.overhead_counts)
            .saturating_sub(self.slowdown_empty);
        let owed = self.slowdown_owed.get() + own as f64 * (self.slowdown - 1.0);
        busy((owed.max(0.0) * self.loops_per_count) as u64);
        let end = self.clock.raw();
        self.slowdown_owed
            .set(owed - end.saturating_sub(own_end) as f64);
        self.slowdown_left.set(self.slowdown_every - 1);
        end.saturating_sub(start)
            .saturating_sub(self.overhead_counts)
    }

    /// Runs `f` and returns its result with its cost in nanoseconds, overhead subtracted.
    #[inline]
    pub(crate) fn time<R>(&self, f: impl FnOnce() -> R) -> (R, u64) {
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

    #[test]
    fn slowdown_makes_the_timed_code_really_take_longer() {
        let clock = CallClock::new().with_slowdown(1.5);
        let every = usize::try_from(clock.slowdown_every).unwrap();
        assert_eq!(
            every, 100,
            "1,000 ns chunks for 20 ns calls owing half their cost"
        );
        let wall = std::time::Instant::now();
        let costs: Vec<u64> = (0..3 * every)
            .map(|_| {
                clock
                    .time(|| std::thread::sleep(Duration::from_micros(20)))
                    .1
            })
            .collect();
        let wall = wall.elapsed();
        // Every `every`-th span did the busy work the spans before it owed: together the spans
        // read at least half as much again as the spans that did none, and that time really
        // passed.
        let paying: u64 = costs.iter().skip(every - 1).step_by(every).sum();
        let total: u64 = costs.iter().sum();
        let plain = total - paying;
        assert!(total * 10 >= plain * 14, "{total} vs {plain}");
        assert!(
            wall.as_nanos() >= u128::from(total) * 9 / 10,
            "{wall:?} vs {total}"
        );
        // A new run starts the count over: its first span does no busy work.
        let run = clock.for_run();
        let (_, first) = run.time(|| std::hint::black_box(()));
        assert!(first < 500_000, "{first}");
    }
}
