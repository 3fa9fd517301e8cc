//! `--slowdown FACTOR`, a test hook: [`Slowed`] wraps the timer under test so that its calls
//! take about FACTOR times their own cost in all, as a slower build's would, so that `diff` and
//! `paired` can be seen to flag one. The loadgen times the wrapper as it times any timer; the
//! cost counter knows nothing of it.
//!
//! Extra code a few nanoseconds long cannot be sized per call (a variable loop's exit alone
//! costs more than a 10 ns call), so the wrapper works in chunks. About every `n`-th call (`n`
//! sized so a chunk is about [`CHUNK_NS`] for calls of about [`TYPICAL_CALL_NS`]; the gaps vary
//! around `n` so no periodic pattern of calls is always or never sampled) is read with the
//! cycle counter, and right after it, inside the same call, the wrapper does busy work for
//! `FACTOR − 1` times that call's own cost times the calls it stands for, less the readings it
//! added. The busy work is a counted loop calibrated once per process; each chunk is timed, and
//! what it did beyond or short of what it owed is carried over (the loop runs slower when the
//! machine is busy), up to one chunk's worth, so a preempted chunk does not cancel the next.
//!
//! Under `--cost simulated` a simulator counts the calls and the cycle counter means nothing, so
//! the wrapper is *counted* instead: the same sampled calls each do `FACTOR − 1` times
//! [`TYPICAL_CALL_LOOPS`] busy-loop iterations per call they stand for, read no counter, and
//! the same build and seed do exactly the same work every run. That is FACTOR times a typical
//! timer call's simulated cost, the same absolute work for every implementation.
//!
//! Invariants: every call is forwarded unchanged, in order, so the timer's answers are the
//! inner timer's; a fresh wrapper samples the same calls of the same call sequence, so every
//! repetition of a deterministic run is slowed on the same calls, and a call's fastest
//! repetition is slowed too. Factor 1 is off: no call is ever read.

use std::cell::{Cell, RefCell};
use std::sync::OnceLock;

use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;
use tickwheel::{Expired, InsertError, StaleKeyError, Stats, Tick, Timer, TimerKey};

/// About how much busy work one chunk does, in ns.
pub(crate) const CHUNK_NS: f64 = 1_000.0;

/// The call cost the chunks' spacing is sized for: about a timer call's here, in ns.
pub(crate) const TYPICAL_CALL_NS: f64 = 20.0;

/// Busy-loop iterations that stand for one typical timer call when the wrapper is counted: the
/// loop is about four instructions an iteration, and a timer call about 160 instructions under
/// the default workload's simulated cost.
pub(crate) const TYPICAL_CALL_LOOPS: f64 = 40.0;

/// The counter, its reading pair's median cost in counts, and busy loops per count.
struct Calibration {
    clock: quanta::Clock,
    overhead: u64,
    loops_per_count: f64,
}

fn calibration() -> &'static Calibration {
    static CALIBRATION: OnceLock<Calibration> = OnceLock::new();
    CALIBRATION.get_or_init(|| {
        let clock = quanta::Clock::new();
        let mut pairs: Vec<u64> = (0..10_001)
            .map(|_| {
                let start = clock.raw();
                clock.raw().saturating_sub(start)
            })
            .collect();
        pairs.sort_unstable();
        // Many short runs: the fastest one is that of a loop the machine did not interrupt.
        const LOOPS: u64 = 1 << 14;
        let fastest = (0..100)
            .map(|_| {
                let start = clock.raw();
                busy(LOOPS);
                clock.raw().saturating_sub(start).max(1)
            })
            .min()
            .unwrap_or(1);
        Calibration {
            overhead: pairs[pairs.len() / 2],
            loops_per_count: LOOPS as f64 / fastest as f64,
            clock,
        }
    })
}

/// `loops` iterations of a loop the compiler must keep: the busy work.
#[inline(never)]
fn busy(loops: u64) {
    for i in 0..loops {
        std::hint::black_box(i);
    }
}

/// The timer `X`, its calls slowed `factor` times (see the module docs).
pub(crate) struct Slowed<X> {
    inner: X,
    pace: Pace,
}

impl<X> Slowed<X> {
    /// Wraps `inner`; `factor` 1 is off (the caller checks the range, see
    /// [`check_slowdown`](crate::config::check_slowdown)); `counted` for busy work counted in
    /// loop iterations instead of timed (see the module docs).
    pub(crate) fn new(inner: X, factor: f64, counted: bool) -> Self {
        Self {
            inner,
            pace: Pace::new(factor, counted),
        }
    }

    /// The wrapped timer.
    pub(crate) fn inner_mut(&mut self) -> &mut X {
        &mut self.inner
    }
}

/// Which calls are sampled, and the busy work owed.
struct Pace {
    /// `factor − 1`.
    extra: f64,
    /// The mean gap between sampled calls; 0 when off.
    every: u64,
    /// Calls until the next sampled one.
    left: Cell<u64>,
    /// The calls the next sample stands for.
    gap: Cell<u64>,
    /// Busy work owed, less what was done, in counts.
    owed: Cell<f64>,
    /// Draws the gaps (the same fixed seed, so the same sequence, in every wrapper).
    rng: RefCell<Pcg64Mcg>,
    /// Busy work in loop iterations, no counter read (see the module docs).
    counted: bool,
}

impl Pace {
    fn new(factor: f64, counted: bool) -> Self {
        let every = if factor <= 1.0 {
            0
        } else if counted {
            (CHUNK_NS / ((factor - 1.0) * TYPICAL_CALL_LOOPS))
                .round()
                .max(1.0) as u64
        } else {
            calibration();
            (CHUNK_NS / ((factor - 1.0) * TYPICAL_CALL_NS))
                .round()
                .max(1.0) as u64
        };
        let pace = Self {
            extra: factor - 1.0,
            every,
            left: Cell::new(u64::MAX),
            gap: Cell::new(0),
            owed: Cell::new(0.0),
            rng: RefCell::new(Pcg64Mcg::seed_from_u64(0x9e37_79b9_7f4a_7c15)),
            counted,
        };
        if every > 0 {
            pace.draw();
        }
        pace
    }

    /// Draws the gap to the next sampled call: 1 ..= 2n − 1, n on average.
    fn draw(&self) {
        let gap = self.rng.borrow_mut().gen_range(1..2 * self.every);
        self.gap.set(gap);
        self.left.set(gap - 1);
    }

    /// Runs one call `f`, slowed when it is a sampled one.
    #[inline]
    fn call<R>(&self, f: impl FnOnce() -> R) -> R {
        let left = self.left.get();
        if left > 0 {
            self.left.set(left - 1);
            return f();
        }
        self.sampled(f)
    }

    /// A sampled call: read, then the busy work its sample owes.
    #[cold]
    #[inline(never)]
    fn sampled<R>(&self, f: impl FnOnce() -> R) -> R {
        if self.counted {
            let result = f();
            busy((self.extra * TYPICAL_CALL_LOOPS * self.gap.get() as f64).round() as u64);
            self.draw();
            return result;
        }
        let c = calibration();
        let start = c.clock.raw();
        let result = f();
        let own_end = c.clock.raw();
        let own = own_end.saturating_sub(start).saturating_sub(c.overhead);
        // The two readings around the call, and the one below, are this wrapper's own cost.
        let owed = self.owed.get() + own as f64 * self.extra * self.gap.get() as f64
            - 2.0 * c.overhead as f64;
        busy((owed.max(0.0) * c.loops_per_count) as u64);
        let done = c.clock.raw().saturating_sub(own_end) as f64;
        // A chunk the machine preempted did far more than it owed: carry over a chunk at most.
        self.owed.set((owed - done).max(-owed.max(0.0)));
        self.draw();
        result
    }
}

impl<X: Timer<u64>> Timer<u64> for Slowed<X> {
    fn insert(&mut self, deadline: Tick, payload: u64) -> Result<TimerKey, InsertError<u64>> {
        self.pace.call(|| self.inner.insert(deadline, payload))
    }
    fn cancel(&mut self, key: TimerKey) -> Option<u64> {
        self.pace.call(|| self.inner.cancel(key))
    }
    fn reset(&mut self, key: TimerKey, deadline: Tick) -> Result<(), StaleKeyError> {
        self.pace.call(|| self.inner.reset(key, deadline))
    }
    fn poll(&mut self, now: Tick) -> Option<Expired<u64>> {
        self.pace.call(|| self.inner.poll(now))
    }
    fn next_deadline(&self) -> Option<Tick> {
        self.pace.call(|| self.inner.next_deadline())
    }
    fn deadline(&self, key: TimerKey) -> Option<Tick> {
        self.inner.deadline(key)
    }
    fn get(&self, key: TimerKey) -> Option<&u64> {
        self.inner.get(key)
    }
    fn now(&self) -> Tick {
        self.inner.now()
    }
    fn len(&self) -> usize {
        self.inner.len()
    }
    fn capacity(&self) -> Option<usize> {
        self.inner.capacity()
    }
    fn stats(&self) -> Stats {
        self.inner.stats()
    }
    fn work_bound(&self) -> Option<u64> {
        self.inner.work_bound()
    }
    fn drain(&mut self) -> Vec<Expired<u64>> {
        self.inner.drain()
    }
    fn allocated_bytes(&self) -> usize {
        self.inner.allocated_bytes()
    }
    fn shrink_to_fit(&mut self) {
        self.inner.shrink_to_fit();
    }
    fn name(&self) -> &'static str {
        self.inner.name()
    }
    fn check_invariants(&self) {
        self.inner.check_invariants();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tickwheel::{FromOptions, HierarchicalWheel, Options};

    /// The answers a fresh wheel wrapped with `factor` gives to a churn of inserts, cancels
    /// and polls.
    fn churn(factor: f64) -> Vec<Option<u64>> {
        let wheel = HierarchicalWheel::from_options(Options::new().preallocate(20_000));
        let mut timer = Slowed::new(wheel.unwrap(), factor, false);
        let mut answers = Vec::new();
        let keys: Vec<_> = (0..20_000)
            .map(|i| timer.insert(i % 5_000, i).unwrap())
            .collect();
        for key in keys.iter().step_by(3) {
            answers.push(timer.cancel(*key));
        }
        while let Some(e) = timer.poll(5_000) {
            answers.push(Some(e.payload));
        }
        answers
    }

    /// [`churn`] with the wrapper counted.
    fn churn_counted(factor: f64) -> Vec<Option<u64>> {
        let wheel = HierarchicalWheel::from_options(Options::new().preallocate(100));
        let mut timer = Slowed::new(wheel.unwrap(), factor, true);
        let keys: Vec<_> = (0..20_000)
            .map(|i| timer.insert(i % 5_000, i).unwrap())
            .collect();
        let mut answers: Vec<_> = keys.iter().step_by(3).map(|k| timer.cancel(*k)).collect();
        while let Some(e) = timer.poll(5_000) {
            answers.push(Some(e.payload));
        }
        answers
    }

    /// What the slowdown costs is measured where speed is measured, by the load generator
    /// itself (`tests/cli.rs` sees a 2x slowed build flagged by `paired`); here, that the
    /// wrapper changes no answer.
    #[test]
    fn slowed_calls_answer_as_the_inner_timer() {
        assert_eq!(churn(1.0), churn(3.0));
        assert_eq!(churn(1.0), churn_counted(3.0));
    }

    #[test]
    fn off_samples_nothing_and_gaps_average_n() {
        assert_eq!(Pace::new(1.0, false).left.get(), u64::MAX);
        assert_eq!(Pace::new(1.0, true).left.get(), u64::MAX);
        assert_eq!(
            Pace::new(1.5, true).every,
            50,
            "1,000-iteration chunks for 40-iteration calls owing half"
        );
        let pace = Pace::new(1.5, false);
        assert_eq!(
            pace.every, 100,
            "1,000 ns chunks for 20 ns calls owing half"
        );
        let gaps: Vec<u64> = (0..10_000)
            .map(|_| {
                pace.draw();
                pace.gap.get()
            })
            .collect();
        assert!(gaps.iter().all(|g| (1..200).contains(g)));
        let mean = gaps.iter().sum::<u64>() as f64 / gaps.len() as f64;
        assert!((95.0..105.0).contains(&mean), "{mean}");
    }
}
