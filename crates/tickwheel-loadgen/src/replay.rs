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

/// Replays the trace at `path`, already [validated](validate) as `checked`, on a fresh `X`,
/// its calls slowed `slowdown` times (see [`slowdown`](crate::slowdown)), every call's cost
/// noted in (or, in a charged pass, charged from) `costs`, as in the
/// virtual-clock driver: the trace fixes the calls, so call `i` is the same call in every
/// replay of it.
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
    let tick_ns = header.tick_nanos();
    let run_time = checked.run_time();
    let timer = X::from_options(Options::new().start(header.start))
        .map_err(|e| Error::Input(e.to_string()))?;
    let timer = Slowed::new(timer, slowdown);
    let name = timer.name();
    let mut probe = Probe::new(timer, clock.clone(), run_time);
    probe.costs = costs;
    let mut lateness = Hist::new(LATENESS_MAX);
    let mut lateness_intervals = Intervals::for_run(LATENESS_MAX, run_time);
    let mut keys: HashMap<u64, TimerKey> = HashMap::new();
    let mut next_id = 0u64;
    let (mut peak_live, mut allocated_at_peak) = (0, 0);
    let (mut insert_delay, mut reset_delay) = (Hist::new(DELAY_MAX), Hist::new(DELAY_MAX));
    let mut drained = 0u64;
    // The trace's time: the latest poll's now.
    let mut cursor = header.start;
    // The loop's clock, ns since tick 0: busy with every call's cost, never behind a poll's now.
    let mut free_ns = header.start.saturating_mul(tick_ns);
    let diverged = |offset: u64, op: &TraceOp, got: String| {
        Error::Contract(format!(
            "{}: replay diverged at the record at byte {offset}: recorded {op:?}, {name} {got}",
            path.display()
        ))
    };
    for item in trace.by_ref() {
        let (offset, op) = item.map_err(|e| Error::Input(format!("{}: {e}", path.display())))?;
        match op {
            TraceOp::Insert { deadline, accepted } => {
                insert_delay.record(deadline.saturating_sub(cursor));
                match (probe.insert(deadline, next_id), accepted) {
                    (Ok(key), true) => {
                        keys.insert(next_id, key);
                        next_id += 1;
                        let live = probe.timer().len();
                        if live > peak_live {
                            peak_live = live;
                            allocated_at_peak = probe.timer().allocated_bytes();
                        }
                    }
                    (Err(_), false) => {}
                    (Ok(_), false) => return Err(diverged(
                        offset,
                        &op,
                        "accepted it (the recorded timer had a capacity, or broke the contract)"
                            .into(),
                    )),
                    (Err(_), true) => return Err(diverged(offset, &op, "refused it".into())),
                }
            }
            TraceOp::Cancel { id, found } => {
                let key = id.and_then(|i| keys.get(&i).copied()).unwrap_or(STALE);
                let got = probe.cancel(key);
                if got.is_some() != found || (got.is_some() && got != id) {
                    return Err(diverged(offset, &op, format!("returned {got:?}")));
                }
                if let (Some(i), true) = (id, found) {
                    keys.remove(&i);
                }
            }
            TraceOp::Reset { id, deadline, ok } => {
                reset_delay.record(deadline.saturating_sub(cursor));
                let key = id.and_then(|i| keys.get(&i).copied()).unwrap_or(STALE);
                let got = probe.reset(key, deadline);
                if got.is_ok() != ok {
                    return Err(diverged(offset, &op, format!("returned {got:?}")));
                }
            }
            TraceOp::Poll { now, fired } => {
                cursor = cursor.max(now);
                let at = Duration::from_nanos(
                    cursor.saturating_sub(header.start).saturating_mul(tick_ns),
                );
                lateness_intervals.advance(at);
                probe.cost_intervals.advance(at);
                free_ns = free_ns.max(now.saturating_mul(tick_ns));
                let got = probe.poll(now);
                free_ns = free_ns.saturating_add(probe.take_spent_ns());
                match (&got, fired) {
                    (None, Fired::Nothing) => {}
                    (Some(e), Fired::Id(i)) if e.payload == i => {
                        keys.remove(&i);
                        if e.deadline > now {
                            return Err(diverged(offset, &op, "fired it early".into()));
                        }
                        let late = match view {
                            LatenessView::Loop => {
                                free_ns.saturating_sub(e.deadline.saturating_mul(tick_ns))
                            }
                            LatenessView::Ticks => {
                                now.saturating_sub(e.deadline).saturating_mul(tick_ns)
                            }
                        };
                        lateness.record(late);
                        lateness_intervals.record(late);
                    }
                    _ => {
                        let got = got.map(|e| format!("timer {}", e.payload));
                        return Err(diverged(offset, &op, format!("returned {got:?}")));
                    }
                }
            }
            TraceOp::Drain { count } => {
                let got = probe.timer_mut().drain().len() as u64;
                keys.clear();
                if got != count {
                    return Err(diverged(offset, &op, format!("handed back {got}")));
                }
                drained += got;
            }
        }
        free_ns = free_ns.saturating_add(probe.take_spent_ns());
    }
    let calls = probe.calls;
    let mut call_costs = probe.costs.take();
    if let Some(log) = &mut call_costs {
        log.end_run(calls)?;
    }
    let stats = probe.timer().stats();
    let busy = probe.estimated_busy();
    // What the trace left due but never polled is overdue; the cost runs need nothing due.
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
    let request = insert_delay.quantile(0.5);
    let idle = if reset_delay.count() > 0 {
        reset_delay.quantile(0.5)
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
        drained,
        early_fires: 0,
        overdue_at_end,
        pending_at_end,
        timer_calls: calls.total(),
        busy,
        run_time,
        wall: wall.elapsed(),
        cost: probe.cost,
        cost_intervals: probe.cost_intervals.finish(run_time),
        lateness,
        lateness_intervals: lateness_intervals.finish(run_time),
        arrival_lag: None,
        peak_live: peak_live as u64,
        allocated_at_peak: allocated_at_peak as u64,
        peak_rss_bytes: crate::measure::peak_rss_bytes(),
        run_costs: Some(run_costs),
        started,
        stats,
        slow_calls: probe.slow,
        call_costs,
        min_cost: None,
    })
}
