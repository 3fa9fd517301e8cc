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

use std::collections::HashMap;
use std::fs::File;
use std::path::Path;
use std::time::{Duration, Instant};

use tickwheel::trace::{Fired, TraceHeader, TraceOp, TraceReader};
use tickwheel::{FromOptions, Options, Timer, TimerKey};

use crate::config::LatenessView;
use crate::counter::CallClock;
use crate::error::Error;
use crate::measure::{Calls, Hist, Op, Probe};

/// Lateness histograms reach this far (ns): an hour.
const LATENESS_MAX_NS: u64 = 3_600_000_000_000;

/// A key no timer ever issues (generation 0), for calls whose key the trace did not know.
const STALE: TimerKey = TimerKey::from_u64(0);

/// What one implementation's replay of a trace produced.
pub(crate) struct Replayed {
    pub(crate) timer: &'static str,
    pub(crate) header: TraceHeader,
    /// Records replayed.
    pub(crate) records: u64,
    pub(crate) calls: Calls,
    /// Cost per call, ns, indexed by [`Op`].
    pub(crate) cost: [Hist; 5],
    /// Lateness of every fire, ns.
    pub(crate) lateness: Hist,
    pub(crate) peak_live: usize,
    pub(crate) allocated_at_peak: usize,
    /// Wall-clock time of the replay.
    pub(crate) wall: Duration,
}

fn open(path: &Path) -> Result<TraceReader<File>, Error> {
    let file = File::open(path).map_err(|e| Error::io("reading", path, e))?;
    TraceReader::new(file).map_err(|e| Error::Input(format!("{}: {e}", path.display())))
}

/// Reads the whole trace once, checking every record and the checksum.
///
/// # Errors
/// [`Error::Input`] naming the path and the byte offset of the first problem.
pub(crate) fn validate(path: &Path) -> Result<(), Error> {
    for item in open(path)? {
        item.map_err(|e| Error::Input(format!("{}: {e}", path.display())))?;
    }
    Ok(())
}

/// Replays the trace at `path` on a fresh `X`.
///
/// # Errors
/// [`Error::Input`] for a trace that cannot be read (naming the byte offset);
/// [`Error::Contract`] at the first call whose outcome differs from the record.
pub(crate) fn replay<X: Timer<u64> + FromOptions>(
    path: &Path,
    view: LatenessView,
    clock: &CallClock,
) -> Result<Replayed, Error> {
    let wall = Instant::now();
    let mut trace = open(path)?;
    let header = trace.header();
    let tick_ns = header.tick_nanos();
    let timer = X::from_options(Options::new().start(header.start))
        .map_err(|e| Error::Input(e.to_string()))?;
    let name = timer.name();
    let mut probe = Probe::new(timer, clock.clone(), Duration::ZERO);
    let mut lateness = Hist::new(LATENESS_MAX_NS);
    let mut keys: HashMap<u64, TimerKey> = HashMap::new();
    let mut next_id = 0u64;
    let (mut peak_live, mut allocated_at_peak) = (0, 0);
    // The loop's clock, ns since tick 0: busy with every call's cost, never behind a poll's now.
    let mut free_ns = header.start.saturating_mul(tick_ns);
    let mut records = 0u64;
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
                let key = id.and_then(|i| keys.get(&i).copied()).unwrap_or(STALE);
                let got = probe.reset(key, deadline);
                if got.is_ok() != ok {
                    return Err(diverged(offset, &op, format!("returned {got:?}")));
                }
            }
            TraceOp::Poll { now, fired } => {
                free_ns = free_ns.max(now.saturating_mul(tick_ns));
                let got = probe.poll(now);
                free_ns = free_ns.saturating_add(probe.take_spent_ns());
                match (&got, fired) {
                    (None, Fired::Nothing) => {}
                    (Some(e), Fired::Id(i)) if e.payload == i => {
                        keys.remove(&i);
                        let late = match view {
                            LatenessView::Loop => {
                                free_ns.saturating_sub(e.deadline.saturating_mul(tick_ns))
                            }
                            LatenessView::Ticks => {
                                now.saturating_sub(e.deadline).saturating_mul(tick_ns)
                            }
                        };
                        if e.deadline > now {
                            return Err(diverged(offset, &op, "fired it early".into()));
                        }
                        lateness.record(late);
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
            }
        }
        free_ns = free_ns.saturating_add(probe.take_spent_ns());
        records += 1;
    }
    Ok(Replayed {
        timer: name,
        header,
        records,
        calls: probe.calls,
        cost: probe.cost,
        lateness,
        peak_live,
        allocated_at_peak,
        wall: wall.elapsed(),
    })
}

/// The table `replay` prints: one row per implementation.
pub(crate) fn render(path: &Path, runs: &[Replayed], view: LatenessView) -> String {
    use std::fmt::Write as _;
    let mut out = String::new();
    let Some(first) = runs.first() else {
        return out;
    };
    let _ = writeln!(
        out,
        "trace {}: {} records, tick {:?}, start tick {}; every implementation returned what the recorded timer did",
        path.display(),
        first.records,
        first.header.tick,
        first.header.start
    );
    let _ = writeln!(
        out,
        "{:<13} {:>10} {:>10} {:>10} {:>10} {:>9} {:>9} {:>9} {:>9} {:>11} {:>11} {:>9}",
        "timer",
        "inserted",
        "cancelled",
        "reset",
        "fired",
        "ins p50",
        "can p50",
        "res p50",
        "fire p50",
        "late p99.9",
        "late max",
        "B/timer"
    );
    let ns = |h: &Hist| format!("{}ns", h.quantile(0.5));
    for r in runs {
        let c = &r.calls;
        let _ = writeln!(
            out,
            "{:<13} {:>10} {:>10} {:>10} {:>10} {:>9} {:>9} {:>9} {:>9} {:>11} {:>11} {:>9.1}",
            r.timer,
            c.inserted,
            c.cancelled,
            c.reset,
            c.fired,
            ns(&r.cost[Op::Insert as usize]),
            ns(&r.cost[Op::Cancel as usize]),
            ns(&r.cost[Op::Reset as usize]),
            ns(&r.cost[Op::Fire as usize]),
            format_ns(r.lateness.quantile(0.999)),
            format_ns(r.lateness.max()),
            r.allocated_at_peak as f64 / r.peak_live.max(1) as f64
        );
    }
    let _ = writeln!(
        out,
        "costs: median of single calls (the call clock's resolution applies); lateness ({} view): hand-over minus the deadline's tick",
        view.name()
    );
    out
}

fn format_ns(ns: u64) -> String {
    match ns {
        0..=9_999 => format!("{ns}ns"),
        10_000..=9_999_999 => format!("{:.1}us", ns as f64 / 1e3),
        _ => format!("{:.2}ms", ns as f64 / 1e6),
    }
}
