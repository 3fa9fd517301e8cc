//! What one implementation's run produced: counts, histograms, memory. The reports and the gate
//! read only this.

use std::time::{Duration, SystemTime};

use tickwheel::Stats;

use crate::config::Clock;
use crate::measure::{CallCosts, Hist, Interval};
use crate::slowest::SlowCalls;

/// The result of driving one implementation.
#[derive(Clone, Debug)]
pub(crate) struct Outcome {
    /// The implementation's short name.
    pub(crate) timer: &'static str,
    /// The clock that drove it.
    pub(crate) clock: Clock,
    /// `--service` runs: producer threads driving the thread-safe service; `None` for the
    /// single-threaded event loop.
    pub(crate) threads: Option<usize>,
    /// Requests handled.
    pub(crate) arrivals: u64,
    /// Requests whose intended time fell within the run (real clock: more than `arrivals` when
    /// the loop fell behind).
    pub(crate) arrivals_intended: u64,
    /// Timers inserted (initial idle timers, reopened connections, request deadlines).
    pub(crate) scheduled: u64,
    /// Timers cancelled (responses in time).
    pub(crate) cancelled: u64,
    /// Responses whose deadline had already fired (their cancel missed).
    pub(crate) late_responses: u64,
    /// Idle timers pushed later.
    pub(crate) reset: u64,
    /// Timers fired.
    pub(crate) fired: u64,
    /// Of `fired`: idle timeouts.
    pub(crate) idle_fired: u64,
    /// Of `fired`: request timeouts.
    pub(crate) request_fired: u64,
    /// Timers a `drain` handed back unfired (a replayed trace's drains; 0 otherwise).
    pub(crate) drained: u64,
    /// Fires before the deadline (must be 0).
    pub(crate) early_fires: u64,
    /// Timers due by the end of the run that had not fired (recorded, never dropped).
    pub(crate) overdue_at_end: u64,
    /// Timers not yet due at the end.
    pub(crate) pending_at_end: u64,
    /// Every call into the timer.
    pub(crate) timer_calls: u64,
    /// Estimated time spent inside the timer (sampled mean cost × calls, per operation).
    pub(crate) busy: Duration,
    /// Run time: the virtual duration, or the real loop's elapsed time.
    pub(crate) run_time: Duration,
    /// Wall-clock time of the whole run, generator and bookkeeping included.
    pub(crate) wall: Duration,
    /// Sampled cost per operation in ns, indexed by [`Op`](crate::op::Op).
    pub(crate) cost: [Hist; 5],
    /// Sampled cost of every operation, per second of run time.
    pub(crate) cost_intervals: Vec<Interval>,
    /// Lateness of every fire, in ns.
    pub(crate) lateness: Hist,
    /// Lateness per second of run time.
    pub(crate) lateness_intervals: Vec<Interval>,
    /// Real clock: how late arrivals were handled after their intended time, in ns.
    pub(crate) arrival_lag: Option<Hist>,
    /// Most timers pending at once.
    pub(crate) peak_live: u64,
    /// The timer's `allocated_bytes()` at that peak.
    pub(crate) allocated_at_peak: u64,
    /// The process's peak RSS during this run (`VmHWM`), when known.
    pub(crate) peak_rss_bytes: Option<u64>,
    /// Per-call cost of insert, cancel, reset and fire from runs of identical calls, in ps
    /// (`None` for a service run).
    pub(crate) run_costs: Option<crate::cost_runs::RunCosts>,
    /// When this run started (each implementation and repetition has its own).
    pub(crate) started: SystemTime,
    /// The implementation's own work counters.
    pub(crate) stats: Stats,
    /// Every timer call counted, the slow ones kept by number (empty for a service run).
    pub(crate) slow_calls: SlowCalls,
    /// Virtual clock, `--repeat` 2 or more: every call's cost at its fastest repetition so far
    /// (taken out by the driver before the outcome is kept).
    pub(crate) call_costs: Option<CallCosts>,
    /// Virtual clock, `--repeat` 2 or more: the lateness of the charged pass (the
    /// representative repetition carries it).
    pub(crate) min_cost: Option<MinCost>,
}

/// The lateness of the charged pass: the same calls as every repetition, each charged its
/// minimum cost over the repetitions, so the timer's own lateness without the machine's
/// preemptions.
#[derive(Clone, Debug)]
pub(crate) struct MinCost {
    /// The timer's own bytes per live timer at the peak, on storage grown as needed (the
    /// charged pass does not preallocate).
    pub(crate) bytes_per_timer: f64,
    /// Lateness of every fire, in ns.
    pub(crate) lateness: Hist,
    /// Lateness per second of run time.
    pub(crate) lateness_intervals: Vec<Interval>,
    /// It is the headline (`--lateness-costs min`): the table, gate, files and `diff` show it.
    pub(crate) shown: bool,
}

impl Outcome {
    /// The name in reports and file names: the implementation, plus `-tN` for a service run
    /// with N producer threads.
    pub(crate) fn label(&self) -> String {
        match self.threads {
            Some(n) => format!("{}-t{n}", self.timer),
            None => self.timer.to_string(),
        }
    }

    /// The lateness the table, gate and files show, and its intervals: the charged pass's when
    /// it is the headline, else this run's own, as measured.
    pub(crate) fn shown_lateness(&self) -> (&Hist, &[Interval]) {
        match &self.min_cost {
            Some(m) if m.shown => (&m.lateness, &m.lateness_intervals),
            _ => (&self.lateness, &self.lateness_intervals),
        }
    }

    /// Timer calls per second of estimated time inside the timer.
    pub(crate) fn ops_per_sec(&self) -> f64 {
        let busy = self.busy.as_secs_f64();
        if busy > 0.0 {
            self.timer_calls as f64 / busy
        } else {
            0.0
        }
    }

    /// The timer's own heap bytes per live timer at the peak live count.
    pub(crate) fn bytes_per_timer(&self) -> f64 {
        if self.peak_live == 0 {
            0.0
        } else {
            self.allocated_at_peak as f64 / self.peak_live as f64
        }
    }

    /// Requests handled per second of run time.
    pub(crate) fn achieved_rate(&self) -> f64 {
        let secs = self.run_time.as_secs_f64();
        if secs > 0.0 {
            self.arrivals as f64 / secs
        } else {
            0.0
        }
    }
}
