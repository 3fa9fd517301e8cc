//! `replay TRACE`: drives implementations with a recorded server's timer calls, in order, and
//! checks that each returns what the recorded timer returned.
//!
//! Time is the trace's: each recorded `poll(now)` is made at its `now`. The loop's own clock
//! is charged with every call's measured cost, as in the virtual-clock driver, so lateness
//! (`loop` view) is the instant a fired timer is handed over minus the start of its deadline's
//! tick; the `ticks` view is the poll's tick minus the deadline tick.
//!
//! Every call's outcome is compared with the record: an insert accepted or refused, a cancel
//! finding its timer (and handing back that timer's payload), a reset succeeding, a poll
//! firing nothing or exactly the recorded timer, a drain's count. The first difference ends
//! the replay with exit 1, naming the call and its byte offset: one of the two timers broke
//! the contract (a correct timer's answers follow from the calls alone).
//!
//! A replay ends as a `compare` run does: the timers due at the last `now` that the trace
//! never polled count as overdue, the [cost runs](crate::cost_runs) time each operation on the
//! final state (their request and idle deadlines are the median delays of the trace's inserts
//! and resets), and what is left counts as pending. Its [`Outcome`] goes into the same reports.

use std::collections::HashMap;
use std::fs::File;
use std::path::Path;
use std::time::{Duration, Instant, SystemTime};

use tickwheel::trace::{Fired, TraceHeader, TraceOp, TraceReader};
use tickwheel::{FromOptions, Options, Tick, Timer, TimerKey};

use crate::config::{Clock, LatenessView};
use crate::counter::CallClock;
use crate::error::Error;
use crate::measure::{CallCosts, Hist, Intervals, Probe, LATENESS_MAX};
use crate::outcome::Outcome;
use crate::report::json::TraceJson;
use crate::slowdown::Slowed;

/// A key no timer ever issues (generation 0), for calls whose key the trace did not know.
const STALE: TimerKey = TimerKey::from_u64(0);

/// Delays of inserts and resets are kept up to this many ticks (longer ones count as this).
const DELAY_MAX: u64 = 1 << 40;

/// What reading a whole trace found: its identity and its span.
#[derive(Clone, Debug)]
pub(crate) struct Checked {
    pub(crate) header: TraceHeader,
    /// For the report: the file, its length, record count and checksum.
    pub(crate) json: TraceJson,
    /// The latest `now` any poll passed (the start tick when none did).
    pub(crate) last_now: Tick,
}

impl Checked {
    /// The trace's span: from its start tick to its last poll.
    pub(crate) fn run_time(&self) -> Duration {
        let ticks = self.last_now.saturating_sub(self.header.start);
        Duration::from_nanos(ticks.saturating_mul(self.header.tick_nanos()))
    }
}

fn open(path: &Path) -> Result<TraceReader<File>, Error> {
    let file = File::open(path).map_err(|e| Error::io("reading", path, e))?;
    TraceReader::new(file).map_err(|e| Error::Input(format!("{}: {e}", path.display())))
}

/// Reads the whole trace once, checking every record and the checksum.
///
/// # Errors
/// [`Error::Input`] naming the path and the byte offset of the first problem.
pub(crate) fn validate(path: &Path) -> Result<Checked, Error> {
    let mut trace = open(path)?;
    let header = trace.header();
    let mut last_now = header.start;
    let mut records = 0u64;
    for item in trace.by_ref() {
        let (_, op) = item.map_err(|e| Error::Input(format!("{}: {e}", path.display())))?;
        if let TraceOp::Poll { now, .. } = op {
            last_now = last_now.max(now);
        }
        records += 1;
    }
    let checksum = trace
        .checksum()
        .ok_or_else(|| Error::Input(format!("{}: the trace has no end record", path.display())))?;
    let bytes = std::fs::metadata(path)
        .map_err(|e| Error::io("reading", path, e))?
        .len();
    Ok(Checked {
        header,
        json: TraceJson {
            file: path.file_name().map_or_else(
                || path.display().to_string(),
                |n| n.to_string_lossy().into(),
            ),
            bytes,
            records,
            checksum: format!("{checksum:016x}"),
            start_tick: header.start,
        },
        last_now,
    })
}

/// One replay's state: the timer behind its probe, what the trace's ids map to, and the loop's
/// clock and measures.
struct Replayer<X> {
    probe: Probe<Slowed<X>>,
    view: LatenessView,
    start: Tick,
    tick_ns: u64,
    keys: HashMap<u64, TimerKey>,
    next_id: u64,
    peak_live: usize,
    allocated_at_peak: usize,
    insert_delay: Hist,
    reset_delay: Hist,
    drained: u64,
    /// The trace's time: the latest poll's now.
    cursor: Tick,
    /// The loop's clock, ns since tick 0: busy with every call's cost, never behind a poll's now.
    free_ns: u64,
    lateness: Hist,
    lateness_intervals: Intervals,
}

impl<X: Timer<u64>> Replayer<X> {
    /// The key of a trace id (a stale one for an id the trace did not know).
    fn key(&self, id: Option<u64>) -> TimerKey {
        id.and_then(|i| self.keys.get(&i).copied()).unwrap_or(STALE)
    }

    /// Makes the recorded call `op`; `Err` says what the timer did instead of the record.
    fn apply(&mut self, op: TraceOp) -> Result<(), String> {
        match op {
            TraceOp::Insert { deadline, accepted } => {
                self.insert_delay
                    .record(deadline.saturating_sub(self.cursor));
                match (self.probe.insert(deadline, self.next_id), accepted) {
                    (Ok(key), true) => {
                        self.keys.insert(self.next_id, key);
                        self.next_id += 1;
                        let live = self.probe.timer().len();
                        if live > self.peak_live {
                            self.peak_live = live;
                            self.allocated_at_peak = self.probe.timer().allocated_bytes();
                        }
                    }
                    (Err(_), false) => {}
                    (Ok(_), false) => {
                        return Err("accepted it (the recorded timer had a \
                                                 capacity, or broke the contract)"
                            .into())
                    }
                    (Err(_), true) => return Err("refused it".into()),
                }
            }
            TraceOp::Cancel { id, found } => {
                let got = self.probe.cancel(self.key(id));
                if got.is_some() != found || (got.is_some() && got != id) {
                    return Err(format!("returned {got:?}"));
                }
                if let (Some(i), true) = (id, found) {
                    self.keys.remove(&i);
                }
            }
            TraceOp::Reset { id, deadline, ok } => {
                self.reset_delay
                    .record(deadline.saturating_sub(self.cursor));
                let got = self.probe.reset(self.key(id), deadline);
                if got.is_ok() != ok {
                    return Err(format!("returned {got:?}"));
                }
            }
            TraceOp::Poll { now, fired } => self.poll(now, fired)?,
            TraceOp::Drain { count } => {
                let got = self.probe.timer_mut().drain().len() as u64;
                self.keys.clear();
                if got != count {
                    return Err(format!("handed back {got}"));
                }
                self.drained += got;
            }
        }
        self.free_ns = self.free_ns.saturating_add(self.probe.take_spent_ns());
        Ok(())
    }

    /// A recorded `poll(now)`, which fired `fired`: its lateness measured, as the view says.
    fn poll(&mut self, now: Tick, fired: Fired) -> Result<(), String> {
        let tick_ns = self.tick_ns;
        self.cursor = self.cursor.max(now);
        let at = self
            .cursor
            .saturating_sub(self.start)
            .saturating_mul(tick_ns);
        self.lateness_intervals.advance(Duration::from_nanos(at));
        self.probe.cost_intervals.advance(Duration::from_nanos(at));
        self.free_ns = self.free_ns.max(now.saturating_mul(tick_ns));
        let got = self.probe.poll(now);
        self.free_ns = self.free_ns.saturating_add(self.probe.take_spent_ns());
        match (&got, fired) {
            (None, Fired::Nothing) => {}
            (Some(e), Fired::Id(i)) if e.payload == i => {
                self.keys.remove(&i);
                if e.deadline > now {
                    return Err("fired it early".into());
                }
                let late = match self.view {
                    LatenessView::Loop => self
                        .free_ns
                        .saturating_sub(e.deadline.saturating_mul(tick_ns)),
                    LatenessView::Ticks => now.saturating_sub(e.deadline).saturating_mul(tick_ns),
                };
                self.lateness.record(late);
                self.lateness_intervals.record(late);
            }
            _ => {
                let got = got.map(|e| format!("timer {}", e.payload));
                return Err(format!("returned {got:?}"));
            }
        }
        Ok(())
    }

    /// Ends the replay after `run_time`: checks the calls against the earlier repetitions'
    /// log, counts what the trace left due as overdue, times the [cost runs](crate::cost_runs)
    /// and gathers the outcome (`wall`, `started`: when the replay started, on the monotonic
    /// and the system clock).
    fn finish(
        self,
        name: &'static str,
        clock: &CallClock,
        run_time: Duration,
        (wall, started): (Instant, SystemTime),
    ) -> Result<Outcome, Error> {
        let mut probe = self.probe;
        let calls = probe.calls;
        let mut call_costs = probe.costs.take();
        if let Some(log) = &mut call_costs {
            log.end_run(calls)?;
        }
        let stats = probe.timer().stats();
        let busy = probe.estimated_busy();
        // What the trace left due but never polled is overdue; the cost runs need nothing due.
        let cursor = self.cursor;
        let mut overdue_at_end = 0u64;
        while let Some(e) = probe.timer_mut().poll(cursor) {
            if e.deadline > cursor {
                return Err(Error::Contract(format!(
                    "{name} fired timer {} (deadline {}) early at the trace's end, tick {cursor}",
                    e.payload, e.deadline
                )));
            }
            overdue_at_end += 1;
        }
        let request = self.insert_delay.quantile(0.5);
        let idle = if self.reset_delay.count() > 0 {
            self.reset_delay.quantile(0.5)
        } else {
            request
        };
        let run_costs = crate::cost_runs::measure(probe.timer_mut(), clock, cursor, request, idle)?;
        let pending_at_end = probe.timer_mut().drain().len() as u64;
        Ok(Outcome {
            timer: name,
            clock: Clock::Virtual,
            threads: None,
            arrivals: 0,
            arrivals_intended: 0,
            scheduled: calls.inserted,
            cancelled: calls.cancelled,
            late_responses: calls.cancel_misses,
            reset: calls.reset,
            fired: calls.fired,
            idle_fired: 0,
            request_fired: 0,
            drained: self.drained,
            early_fires: 0,
            overdue_at_end,
            pending_at_end,
            timer_calls: calls.total(),
            busy,
            run_time,
            wall: wall.elapsed(),
            cost: probe.cost,
            cost_intervals: probe.cost_intervals.finish(run_time),
            lateness: self.lateness,
            lateness_intervals: self.lateness_intervals.finish(run_time),
            arrival_lag: None,
            peak_live: self.peak_live as u64,
            allocated_at_peak: self.allocated_at_peak as u64,
            peak_rss_bytes: crate::measure::peak_rss_bytes(),
            run_costs: Some(run_costs),
            started,
            stats,
            slow_calls: probe.slow,
            call_costs,
            min_cost: None,
        })
    }
}

/// Replays the trace at `path`, already [validated](validate) as `checked`, on a fresh `X`,
/// its calls slowed `slowdown` times (see [`slowdown`](crate::slowdown)), every call's cost
/// noted in (or, in a charged pass, charged from) `costs`, as in the virtual-clock driver: the
/// trace fixes the calls, so call `i` is the same call in every replay of it.
///
/// # Errors
/// [`Error::Input`] for a trace that cannot be read (naming the byte offset);
/// [`Error::Contract`] at the first call whose outcome differs from the record, when the
/// cost runs find the timer broken, or when the replay made other calls than the earlier ones
/// of `costs`.
pub(crate) fn replay<X: Timer<u64> + FromOptions>(
    path: &Path,
    checked: &Checked,
    view: LatenessView,
    clock: &CallClock,
    costs: Option<CallCosts>,
    slowdown: f64,
) -> Result<Outcome, Error> {
    let wall = Instant::now();
    let started = SystemTime::now();
    crate::measure::reset_peak_rss();
    let mut trace = open(path)?;
    let header = trace.header();
    let run_time = checked.run_time();
    let timer = X::from_options(Options::new().start(header.start))
        .map_err(|e| Error::Input(e.to_string()))?;
    let name = timer.name();
    let mut probe = Probe::new(
        Slowed::new(timer, slowdown, clock.is_untimed()),
        clock.clone(),
        run_time,
    );
    probe.costs = costs;
    let mut r = Replayer {
        probe,
        view,
        start: header.start,
        tick_ns: header.tick_nanos(),
        keys: HashMap::new(),
        next_id: 0,
        peak_live: 0,
        allocated_at_peak: 0,
        insert_delay: Hist::new(DELAY_MAX),
        reset_delay: Hist::new(DELAY_MAX),
        drained: 0,
        cursor: header.start,
        free_ns: header.start.saturating_mul(header.tick_nanos()),
        lateness: Hist::new(LATENESS_MAX),
        lateness_intervals: Intervals::for_run(LATENESS_MAX, run_time),
    };
    for item in trace.by_ref() {
        let (offset, op) = item.map_err(|e| Error::Input(format!("{}: {e}", path.display())))?;
        r.apply(op).map_err(|got| {
            Error::Contract(format!(
                "{}: replay diverged at the record at byte {offset}: recorded {op:?}, {name} {got}",
                path.display()
            ))
        })?;
    }
    r.finish(name, clock, run_time, (wall, started))
}
