//! Measurement: histograms that never panic, the sampled cost of each timer call, memory.
//!
//! - [`Hist`] records with saturating writes: a value above its range is recorded as the
//!   range's top and counted in `clamped`, so a wild value can neither panic nor vanish.
//! - [`Probe`] wraps the timer under test. **Every call is counted and timed** with the cycle
//!   counter of [`CallClock`] (about 1 ns resolution, its overhead subtracted), and the time
//!   spent is kept for the driver to charge to the event loop; the slow calls are kept by
//!   number (see [`slowest`](crate::slowest)).
//! - Lateness and cost are also collected per interval (one second of run time) for the `.hlog`,
//!   each interval stored compressed (V2 + DEFLATE) as soon as it closes. Intervals start on
//!   whole seconds; the last one runs to the end of the run, so no interval is empty or cut
//!   short by the end.
//! - With `--repeat` 2 or more on the virtual clock, a [`CallCosts`] log keeps every call's
//!   cost, in call order, at its fastest repetition so far (4 bytes per call); a last, *charged*
//!   pass then replays the same calls with each one charged that minimum instead of timed (see
//!   [`virtual_clock`](crate::virtual_clock)).
//! - Peak RSS is the kernel's `VmHWM` for this process, reset before each implementation through
//!   `/proc/self/clear_refs` where the kernel allows it.

use std::time::Duration;

use hdrhistogram::serialization::{Deserializer, Serializer, V2DeflateSerializer};
use hdrhistogram::Histogram;
use tickwheel::{Expired, InsertError, StaleKeyError, Tick, Timer, TimerKey};

use crate::calls;
use crate::counter::CallClock;
use crate::error::Error;
use crate::op::Op;
use crate::slowest::SlowCalls;

/// Largest lateness recorded exactly: one hour in nanoseconds (or that many ticks).
pub(crate) const LATENESS_MAX: u64 = 3_600_000_000_000;
/// Largest cost recorded exactly: ten seconds in nanoseconds.
pub(crate) const COST_MAX: u64 = 10_000_000_000;
/// Significant digits of every histogram.
pub(crate) const SIGFIG: u8 = 3;
/// Throughput estimates leave out samples above this quantile: on a shared machine the slowest
/// 0.01 % are preemptions, and a few milliseconds of those would swamp a 30 ns mean.
pub(crate) const TRIM: f64 = 0.9999;
/// Length of one `.hlog` interval.
pub(crate) const INTERVAL: Duration = Duration::from_secs(1);

/// A histogram with a fixed range whose `record` never fails.
#[derive(Clone, Debug)]
pub(crate) struct Hist {
    /// The recorded values.
    pub(crate) hist: Histogram<u64>,
    /// Values above the range, recorded as its top.
    pub(crate) clamped: u64,
}

impl Hist {
    /// An empty histogram for values in `0..=high`.
    pub(crate) fn new(high: u64) -> Self {
        Self {
            hist: new_histogram(high),
            clamped: 0,
        }
    }

    /// Records `value`, clamping it to the range (and counting it) when it is above.
    #[inline]
    pub(crate) fn record(&mut self, value: u64) {
        if value > self.hist.high() {
            self.clamped += 1;
        }
        self.hist.saturating_record(value);
    }

    /// Values recorded.
    pub(crate) fn count(&self) -> u64 {
        self.hist.len()
    }

    /// The value at quantile `q` (0 when empty).
    pub(crate) fn quantile(&self, q: f64) -> u64 {
        if self.hist.is_empty() {
            0
        } else {
            self.hist.value_at_quantile(q)
        }
    }

    /// The largest value recorded (0 when empty).
    pub(crate) fn max(&self) -> u64 {
        if self.hist.is_empty() {
            0
        } else {
            self.hist.max()
        }
    }

    /// The mean of the values at or below quantile `q`: the mean without the rare outliers
    /// (a preempted thread, a page fault) that are not the measured code's cost (0 when empty).
    pub(crate) fn trimmed_mean(&self, q: f64) -> f64 {
        let cut = self.quantile(q);
        let (mut sum, mut n) = (0.0f64, 0u64);
        for v in self.hist.iter_recorded() {
            if v.value_iterated_to() > cut {
                break;
            }
            let value = self.hist.median_equivalent(v.value_iterated_to()) as f64;
            sum += value * v.count_at_value() as f64;
            n += v.count_at_value();
        }
        if n == 0 {
            0.0
        } else {
            sum / n as f64
        }
    }

    /// The mean (0 when empty, never NaN).
    pub(crate) fn mean(&self) -> f64 {
        let mean = self.hist.mean();
        if mean.is_finite() {
            mean
        } else {
            0.0
        }
    }
}

/// A histogram for values in `0..=high` with [`SIGFIG`] significant digits.
pub(crate) fn new_histogram(high: u64) -> Histogram<u64> {
    Histogram::new_with_bounds(1, high.max(2), SIGFIG).expect("1 < high and SIGFIG <= 5")
}

/// One closed interval of a series, compressed.
#[derive(Clone, Debug)]
pub(crate) struct Interval {
    /// Start, from the start of the run.
    pub(crate) start: Duration,
    /// Length (one second, or less for the last one).
    pub(crate) length: Duration,
    /// The interval's histogram, V2 + DEFLATE encoded.
    pub(crate) encoded: Vec<u8>,
}

/// A histogram of the current interval plus the closed ones, encoded.
pub(crate) struct Intervals {
    current: Histogram<u64>,
    started: Duration,
    /// The start of the last interval: whole intervals end before `run`, the last one ends with
    /// the run.
    last_start: Duration,
    closed: Vec<Interval>,
    serializer: V2DeflateSerializer,
}

impl Intervals {
    /// An empty series for values in `0..=high`, starting at run time 0, closed only by
    /// [`close`](Self::close).
    pub(crate) fn new(high: u64) -> Self {
        Self {
            current: new_histogram(high),
            started: Duration::ZERO,
            last_start: Duration::MAX,
            closed: Vec::new(),
            serializer: V2DeflateSerializer::new(),
        }
    }

    /// An empty series for values in `0..=high` over a run of length `run`: one interval per
    /// whole second, the last one running to the end.
    pub(crate) fn for_run(high: u64, run: Duration) -> Self {
        let whole = run.as_nanos().saturating_sub(1) / INTERVAL.as_nanos();
        Self {
            last_start: INTERVAL * u32::try_from(whole).unwrap_or(u32::MAX),
            ..Self::new(high)
        }
    }

    /// Closes every whole interval that ends at or before run time `at`; values recorded next
    /// go to the interval holding `at` (the last one, from its start on).
    pub(crate) fn advance(&mut self, at: Duration) {
        while self.started < self.last_start && at >= self.started + INTERVAL {
            let end = self.started + INTERVAL;
            self.close(end);
        }
    }

    /// Closes the series at the end of the run, `run_time`, and returns every interval in time
    /// order.
    pub(crate) fn finish(mut self, run_time: Duration) -> Vec<Interval> {
        self.advance(run_time);
        let end = run_time.max(self.started);
        self.close(end);
        self.closed
    }

    /// Every closed interval, in time order.
    #[cfg(test)]
    pub(crate) fn into_closed(self) -> Vec<Interval> {
        self.closed
    }

    /// Records into the current interval (values above the range are clamped; [`Hist`] counts
    /// them).
    #[inline]
    pub(crate) fn record(&mut self, value: u64) {
        self.current.saturating_record(value);
    }

    /// Closes the current interval at run time `at` and starts the next one there.
    pub(crate) fn close(&mut self, at: Duration) {
        let mut encoded = Vec::new();
        // Serializing into a Vec cannot fail for a histogram within its own bounds.
        if self
            .serializer
            .serialize(&self.current, &mut encoded)
            .is_ok()
        {
            self.closed.push(Interval {
                start: self.started,
                length: at.saturating_sub(self.started),
                encoded,
            });
        }
        self.current.reset();
        self.started = at;
    }
}

/// Adds up interval series recorded side by side (one per thread, same boundaries): interval
/// `i` of the result holds every series' interval `i`.
pub(crate) fn merge_intervals(series: &[Vec<Interval>]) -> Vec<Interval> {
    let longest = series.iter().map(Vec::len).max().unwrap_or(0);
    let mut deserializer = Deserializer::new();
    let mut serializer = V2DeflateSerializer::new();
    (0..longest)
        .filter_map(|i| {
            let mut total = new_histogram(COST_MAX);
            let mut first: Option<&Interval> = None;
            for interval in series.iter().filter_map(|s| s.get(i)) {
                first.get_or_insert(interval);
                let hist: Histogram<u64> = deserializer
                    .deserialize(&mut interval.encoded.as_slice())
                    .ok()?;
                for v in hist.iter_recorded() {
                    total.saturating_record_n(v.value_iterated_to(), v.count_at_value());
                }
            }
            let first = first?;
            let mut encoded = Vec::new();
            serializer.serialize(&total, &mut encoded).ok()?;
            Some(Interval {
                start: first.start,
                length: first.length,
                encoded,
            })
        })
        .collect()
}

/// Counts of the calls made through a [`Probe`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Calls {
    /// Successful inserts.
    pub(crate) inserted: u64,
    /// Cancels that returned the payload.
    pub(crate) cancelled: u64,
    /// Cancels of a key whose timer had already fired.
    pub(crate) cancel_misses: u64,
    /// Successful resets.
    pub(crate) reset: u64,
    /// Timers returned by poll.
    pub(crate) fired: u64,
    /// Polls that returned nothing, plus `next_deadline` calls.
    pub(crate) idle: u64,
}

impl Calls {
    /// Every timer call made.
    pub(crate) fn total(&self) -> u64 {
        self.inserted + self.cancelled + self.cancel_misses + self.reset + self.fired + self.idle
    }
}

/// The timer under test, with every call counted and timed.
pub(crate) struct Probe<X> {
    timer: X,
    clock: CallClock,
    /// Nanoseconds spent inside the timer since the driver last took them.
    spent_ns: u64,
    /// Calls made so far.
    pub(crate) calls: Calls,
    /// Cost per operation, in nanoseconds, indexed by [`Op`].
    pub(crate) cost: [Hist; 5],
    /// Cost of insert, cancel, reset and fire, per interval.
    pub(crate) cost_intervals: Intervals,
    /// Every call counted, the slow ones kept (see [`slowest`](crate::slowest)).
    pub(crate) slow: SlowCalls,
    /// Every call's cost kept at its fastest repetition, or charged from there; `None`: timed
    /// only.
    pub(crate) costs: Option<CallCosts>,
}

impl<X: Timer<u64>> Probe<X> {
    /// Wraps `timer`, timing its calls with `clock`, for a run of length `run`.
    pub(crate) fn new(timer: X, clock: CallClock, run: Duration) -> Self {
        Self {
            timer,
            clock,
            spent_ns: 0,
            calls: Calls::default(),
            cost: std::array::from_fn(|_| Hist::new(COST_MAX)),
            cost_intervals: Intervals::for_run(COST_MAX, run),
            slow: SlowCalls::default(),
            costs: None,
        }
    }

    /// Runs one timer call `f`: timed (and its cost noted in the log, if any), or, in a
    /// charged pass, untimed and charged the log's minimum for this call; returns its result
    /// and cost.
    #[inline]
    fn call<R>(&mut self, f: impl FnOnce(&mut X) -> R) -> (R, u64) {
        let timer = &mut self.timer;
        match &mut self.costs {
            Some(log) if log.charging => {
                let result = f(timer);
                (result, log.charge())
            }
            costs => {
                let (result, ns) = self.clock.time(|| f(timer));
                if let Some(log) = costs {
                    log.note(ns);
                }
                (result, ns)
            }
        }
    }

    /// [`call`](Self::call) of an `op` whose kind is known beforehand, its cost recorded.
    #[inline]
    fn timed<R>(&mut self, op: Op, f: impl FnOnce(&mut X) -> R) -> R {
        let (result, ns) = self.call(f);
        self.record(op, ns);
        result
    }

    /// The timer, for read-only questions that are not measured (`len`, `stats`, ...).
    pub(crate) fn timer(&self) -> &X {
        &self.timer
    }

    /// The timer, to drain it at the end.
    pub(crate) fn timer_mut(&mut self) -> &mut X {
        &mut self.timer
    }

    /// The nanoseconds spent inside the timer since the last call of this method.
    #[inline]
    pub(crate) fn take_spent_ns(&mut self) -> u64 {
        std::mem::take(&mut self.spent_ns)
    }

    #[inline]
    fn record(&mut self, op: Op, ns: u64) {
        self.spent_ns = self.spent_ns.saturating_add(ns);
        self.cost[op as usize].record(ns);
        self.slow.record(op, ns);
        // The `.hlog` cost tag holds the four reported operations, as `<timer>-cost.hgrm` does.
        if op != Op::Idle {
            self.cost_intervals.record(ns);
        }
    }

    /// `insert`, counted and timed.
    #[inline]
    pub(crate) fn insert(
        &mut self,
        deadline: Tick,
        payload: u64,
    ) -> Result<TimerKey, InsertError<u64>> {
        let result = self.timed(Op::Insert, |t| calls::insert(t, deadline, payload));
        self.calls.inserted += u64::from(result.is_ok());
        result
    }

    /// `cancel`, counted and timed; `None` when the timer had already fired.
    #[inline]
    pub(crate) fn cancel(&mut self, key: TimerKey) -> Option<u64> {
        let result = self.timed(Op::Cancel, |t| calls::cancel(t, key));
        match result {
            Some(_) => self.calls.cancelled += 1,
            None => self.calls.cancel_misses += 1,
        }
        result
    }

    /// `reset`, counted and timed.
    #[inline]
    pub(crate) fn reset(&mut self, key: TimerKey, deadline: Tick) -> Result<(), StaleKeyError> {
        let result = self.timed(Op::Reset, |t| calls::reset(t, key, deadline));
        self.calls.reset += u64::from(result.is_ok());
        result
    }

    /// `poll`, counted and timed: a returned timer counts as a fire, nothing as idle.
    #[inline]
    pub(crate) fn poll(&mut self, now: Tick) -> Option<Expired<u64>> {
        let (result, ns) = self.call(|t| calls::poll(t, now));
        if result.is_some() {
            self.record(Op::Fire, ns);
            self.calls.fired += 1;
        } else {
            self.record(Op::Idle, ns);
            self.calls.idle += 1;
        }
        result
    }

    /// `next_deadline`, counted as idle work and timed.
    #[inline]
    pub(crate) fn next_deadline(&mut self) -> Option<Tick> {
        self.calls.idle += 1;
        self.timed(Op::Idle, calls::next_deadline)
    }

    /// Estimated time spent inside the timer: per operation, the mean cost (without the slowest
    /// 0.01 % of calls, see [`TRIM`], and less what an empty timed call reads on average, see
    /// [`CallClock::empty_mean_ns`]) times the number of calls.
    pub(crate) fn estimated_busy(&self) -> Duration {
        let c = &self.calls;
        let counts = [
            c.inserted,
            c.cancelled + c.cancel_misses,
            c.reset,
            c.fired,
            c.idle,
        ];
        let ns: f64 = counts
            .iter()
            .zip(&self.cost)
            .map(|(&n, h)| n as f64 * (h.trimmed_mean(TRIM) - self.clock.empty_mean_ns()).max(0.0))
            .sum();
        Duration::from_nanos(ns as u64)
    }
}

/// Entries per chunk of a [`CallCosts`] log (4 MiB): the log grows a chunk at a time, so it is
/// never copied and never briefly held twice.
const CHUNK: usize = 1 << 20;

/// Every timer call's cost over the repetitions of one deterministic run, in call order: each
/// call's minimum, in ns (saturating at `u32::MAX`, 4.3 s), 4 bytes per call.
///
/// The seed fixes which calls a virtual-clock run makes, and in which order, so call `i` of one
/// repetition is call `i` of every other. The first repetition appends its costs, each later one
/// keeps the smaller of the two, and [`charging`](Self::charging) turns the log into the costs a
/// charged pass is charged with. Each run ends with [`end_run`](Self::end_run), which refuses a
/// run whose calls differ in number from the first one's.
#[derive(Clone, Debug, Default)]
pub(crate) struct CallCosts {
    chunks: Vec<Vec<u32>>,
    len: usize,
    next: usize,
    charging: bool,
    runs: u32,
    calls: Option<Calls>,
}

impl CallCosts {
    /// An empty log, for the first repetition.
    pub(crate) fn new() -> Self {
        Self::default()
    }

    /// Notes the cost of the next call of a measured repetition.
    #[inline]
    fn note(&mut self, ns: u64) {
        let ns = u32::try_from(ns).unwrap_or(u32::MAX);
        let i = self.next;
        self.next += 1;
        if self.runs == 0 {
            if self.chunks.last().map_or(true, |c| c.len() == CHUNK) {
                self.chunks.push(Vec::with_capacity(CHUNK));
            }
            if let Some(chunk) = self.chunks.last_mut() {
                chunk.push(ns);
            }
            self.len += 1;
        } else if let Some(kept) = self
            .chunks
            .get_mut(i / CHUNK)
            .and_then(|c| c.get_mut(i % CHUNK))
        {
            *kept = (*kept).min(ns);
        }
    }

    /// The cost the next call of the charged pass is charged: its minimum (0 past the end of
    /// the log, which [`end_run`](Self::end_run) then refuses).
    #[inline]
    fn charge(&mut self) -> u64 {
        let i = self.next;
        self.next += 1;
        self.chunks
            .get(i / CHUNK)
            .and_then(|c| c.get(i % CHUNK))
            .map_or(0, |&ns| u64::from(ns))
    }

    /// Ends one run, which made `calls`.
    ///
    /// # Errors
    /// [`Error::Contract`] when the run made other calls than the first repetition: another
    /// number of calls in all, or of any kind. A charged pass would then charge each call
    /// another call's cost, so it is refused, never shown.
    pub(crate) fn end_run(&mut self, calls: Calls) -> Result<(), Error> {
        let made = std::mem::take(&mut self.next);
        let pass = if self.charging {
            "the charged pass"
        } else {
            "a repetition"
        };
        if made != self.len || self.calls.is_some_and(|c| c != calls) {
            return Err(Error::Contract(format!(
                "{pass} made {made} timer calls ({calls:?}), the first repetition {} ({:?}): \
                 the run is not deterministic, so no call can be charged its minimum cost",
                self.len, self.calls
            )));
        }
        self.calls = Some(calls);
        self.runs += 1;
        Ok(())
    }

    /// The log as the costs of a charged pass.
    pub(crate) fn charging(mut self) -> Self {
        self.charging = true;
        self.next = 0;
        self
    }

    /// Whether it charges the calls (the charged pass) rather than noting their costs.
    pub(crate) fn is_charging(&self) -> bool {
        self.charging
    }

    /// Calls logged.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Repetitions ended so far.
    pub(crate) fn runs(&self) -> u32 {
        self.runs
    }

    /// Bytes the log holds.
    pub(crate) fn bytes(&self) -> u64 {
        (self.chunks.iter().map(Vec::capacity).sum::<usize>() * std::mem::size_of::<u32>()) as u64
    }

    /// The calls each run made (per kind), once a run has ended.
    #[cfg(test)]
    pub(crate) fn calls(&self) -> Option<Calls> {
        self.calls
    }
}

/// Resets the kernel's peak-RSS mark for this process (Linux `clear_refs` value 5). Best
/// effort: elsewhere the peak covers the whole process so far.
pub(crate) fn reset_peak_rss() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

/// The process's peak resident set size in bytes (`VmHWM`), or `None` off Linux.
pub(crate) fn peak_rss_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status
        .lines()
        .find_map(|line| line.strip_prefix("VmHWM:"))?;
    let kb = line
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse::<u64>()
        .ok()?;
    Some(kb * 1024)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn record_clamps_and_counts_instead_of_panicking() {
        let mut h = Hist::new(1_000);
        h.record(0);
        h.record(5);
        h.record(u64::MAX);
        h.record(1_000_000);
        assert_eq!(h.count(), 4);
        assert_eq!(h.clamped, 2);
        assert!(h.max() >= 1_000 && h.max() < 1_100);
    }

    #[test]
    fn trimmed_mean_drops_rare_outliers() {
        let mut h = Hist::new(COST_MAX);
        for _ in 0..100_000 {
            h.record(30);
        }
        h.record(8_000_000);
        assert!(h.mean() > 100.0);
        assert_eq!(h.trimmed_mean(0.9999), 30.0);
    }

    #[test]
    fn empty_histogram_has_no_nan() {
        let h = Hist::new(COST_MAX);
        assert_eq!((h.quantile(0.99), h.max(), h.count()), (0, 0, 0));
        assert_eq!(h.mean(), 0.0);
        assert_eq!(h.trimmed_mean(0.9999), 0.0);
    }

    #[test]
    fn call_costs_keep_each_calls_minimum_and_charge_it() {
        let calls = Calls {
            inserted: 3,
            ..Calls::default()
        };
        let mut log = CallCosts::new();
        for ns in [50, 7, 900] {
            log.note(ns);
        }
        log.end_run(calls).unwrap();
        for ns in [40, 9, u64::MAX] {
            log.note(ns);
        }
        log.end_run(calls).unwrap();
        assert_eq!((log.len(), log.runs()), (3, 2));
        let mut charged = log.charging();
        let costs: Vec<u64> = (0..3).map(|_| charged.charge()).collect();
        assert_eq!(costs, [40, 7, 900]);
        charged.end_run(calls).unwrap();
        assert_eq!(charged.calls(), Some(calls));
    }

    #[test]
    fn a_run_with_other_calls_is_refused() {
        let calls = Calls {
            inserted: 2,
            ..Calls::default()
        };
        let mut log = CallCosts::new();
        log.note(5);
        log.note(6);
        log.end_run(calls).unwrap();
        // One call more.
        for _ in 0..3 {
            log.note(5);
        }
        let err = log.end_run(calls).unwrap_err();
        assert!(matches!(err, Error::Contract(_)), "{err}");
        // As many calls, of another kind.
        let mut log = CallCosts::new();
        log.note(5);
        log.note(6);
        log.end_run(calls).unwrap();
        let mut charged = log.charging();
        charged.charge();
        charged.charge();
        let other = Calls {
            inserted: 1,
            reset: 1,
            ..Calls::default()
        };
        let err = charged.end_run(other).unwrap_err();
        assert!(err.to_string().contains("charged pass"), "{err}");
    }

    #[test]
    fn the_log_grows_by_chunks() {
        let mut log = CallCosts::new();
        for i in 0..(CHUNK as u64 + 3) {
            log.note(i);
        }
        assert_eq!(log.len(), CHUNK + 3);
        assert_eq!(log.bytes(), 2 * CHUNK as u64 * 4);
        log.end_run(Calls::default()).unwrap();
        let mut charged = log.charging();
        let last: Vec<u64> = (0..CHUNK + 3)
            .map(|_| charged.charge())
            .skip(CHUNK)
            .collect();
        assert_eq!(last, [CHUNK as u64, CHUNK as u64 + 1, CHUNK as u64 + 2]);
    }

    #[test]
    fn peak_rss_is_readable_on_linux() {
        reset_peak_rss();
        if cfg!(target_os = "linux") {
            assert!(peak_rss_bytes().unwrap() > 0);
        }
    }
}
