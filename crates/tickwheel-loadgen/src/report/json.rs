//! `report.json`: the versioned summary a CI pipeline reads (and `diff` compares).
//!
//! Schema 2. Top level: `schema`, `tool`, `version`, `command`, `clock`, `workload` (the
//! knobs, lateness view and handler cost included: two reports compare only when these agree),
//! `timing` (how cost was measured, and how many repetitions), `results` (one object per
//! implementation, in run order), `passed`, `failures` and `context` (the machine and build the
//! run was made on, see [`context`](crate::context); absent from older reports, which still
//! load).
//!
//! In each result, the counts and work counters are those of every repetition (on the virtual
//! clock they are identical, and the gate checks it); each timing and memory figure is the
//! median over the repetitions (for an even count, the lower middle value), and
//! `repetitions` keeps every repetition's own figures, in run order. On the virtual clock with
//! two repetitions or more, `slowest_call` gives each operation's slowest call with every call
//! taken at its fastest repetition, which leaves out what preempted the machine, and
//! `lateness_min_cost` the charged pass's lateness, each call charged its fastest repetition's
//! cost, next to `lateness_measured`, the repetitions' median as measured; `lateness` is one of
//! the two, as `timing.lateness_costs` (`min` or `measured`) says. `core_share` is
//! the time inside the timer per second of run time, in percent of one core. Every number is finite:
//! an empty run reports zeros. All durations are nanoseconds.

use std::fs;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::context::Context;
use crate::error::Error;

/// The schema version written into every report.
pub(crate) const SCHEMA: u32 = 2;

/// The whole report.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub(crate) struct Report {
    /// Always [`SCHEMA`].
    pub(crate) schema: u32,
    /// `tickwheel-loadgen`.
    pub(crate) tool: String,
    /// This tool's version.
    pub(crate) version: String,
    /// `run`, `compare` or `replay`.
    pub(crate) command: String,
    /// `virtual` or `real`.
    pub(crate) clock: String,
    /// The workload every implementation got.
    pub(crate) workload: WorkloadJson,
    /// How cost was measured.
    pub(crate) timing: TimingJson,
    /// One entry per implementation.
    pub(crate) results: Vec<ResultJson>,
    /// No failure below.
    pub(crate) passed: bool,
    /// Each crossed threshold or broken check, as a sentence.
    pub(crate) failures: Vec<String>,
    /// The machine and build the report was made on; `None` in reports written before
    /// reports had it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) context: Option<Context>,
}

/// The workload knobs.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub(crate) struct WorkloadJson {
    /// Open connections.
    pub(crate) connections: u32,
    /// Target requests per second.
    pub(crate) rate: f64,
    /// Run length in seconds.
    pub(crate) duration_secs: f64,
    /// Idle timeout in seconds.
    pub(crate) idle_timeout_secs: f64,
    /// Request timeout in seconds.
    pub(crate) request_timeout_secs: f64,
    /// Share of responses slower than the request timeout.
    pub(crate) slow_fraction: f64,
    /// Tick length in nanoseconds.
    pub(crate) tick_ns: u64,
    /// Generator seed.
    pub(crate) seed: u64,
    /// How lateness was measured: `loop` or `ticks`.
    pub(crate) lateness: String,
    /// The application's work per event, ns.
    pub(crate) handler_cost_ns: u64,
    /// Every first idle timer on one deadline (`--profile herd`).
    #[serde(default)]
    pub(crate) herd: bool,
    /// The `--profile` the workload started from, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) profile: Option<String>,
    /// `replay`: the trace replayed (the synthetic knobs above are then 0, but for `tick_ns`,
    /// the trace's tick, and `duration_secs`, the trace's span).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) trace: Option<TraceJson>,
}

/// Which trace a `replay` report replayed: two replays compare when these agree.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub(crate) struct TraceJson {
    /// The file's name, as given (shown, not compared).
    pub(crate) file: String,
    /// Its length in bytes.
    pub(crate) bytes: u64,
    /// Records (timer calls) before its end record.
    pub(crate) records: u64,
    /// Its checksum (the end record's), as 16 hex digits: the trace's identity.
    pub(crate) checksum: String,
    /// The recorded timer's start tick.
    pub(crate) start_tick: u64,
}

impl WorkloadJson {
    /// The workload in one line, for the table and the plots.
    pub(crate) fn describe(&self) -> String {
        use crate::units::{count, human_ns, si};
        if let Some(t) = &self.trace {
            return format!(
                "trace {}: {} calls over {} from tick {}, tick {}, checksum {}",
                t.file,
                count(t.records),
                human_ns(self.duration_secs * 1e9),
                t.start_tick,
                human_ns(self.tick_ns as f64),
                t.checksum
            );
        }
        format!(
            "{} connections, {} req/s for {}, idle timeout {}, request timeout {}, {}% slow, \
             tick {}, seed {}{}",
            count(u64::from(self.connections)),
            si(self.rate),
            human_ns(self.duration_secs * 1e9),
            human_ns(self.idle_timeout_secs * 1e9),
            human_ns(self.request_timeout_secs * 1e9),
            self.slow_fraction * 100.0,
            human_ns(self.tick_ns as f64),
            self.seed,
            self.profile
                .as_ref()
                .map_or(String::new(), |p| format!(", profile {p}"))
        )
    }
}

/// How cost was measured.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub(crate) struct TimingJson {
    /// The clock every timer call was timed with.
    pub(crate) counter: String,
    /// The cost of an empty timing, subtracted from each call.
    pub(crate) overhead_ns: f64,
    /// The smallest cost difference the counter sees.
    pub(crate) counter_resolution_ns: f64,
    /// The resolution of recorded costs: the counter's, and at least the 1 ns unit.
    pub(crate) resolution_ns: f64,
    /// Runs of each implementation, interleaved.
    pub(crate) repeat: u32,
    /// Calls per cost run.
    pub(crate) calls_per_run: u32,
    /// Cost runs per operation.
    pub(crate) runs_per_op: u32,
    /// The resolution of the cost runs' per-call figures.
    pub(crate) run_resolution_ns: f64,
    /// Which call costs the results' `lateness` charged the loop: `min` (each call's minimum
    /// over the repetitions, in a charged pass) or `measured` (each repetition's own; reports
    /// written before there was a choice).
    #[serde(default = "measured")]
    pub(crate) lateness_costs: String,
}

fn measured() -> String {
    "measured".into()
}

/// Percentiles of a distribution.
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize, PartialEq)]
pub(crate) struct Percentiles {
    /// Median.
    pub(crate) p50: u64,
    /// 90th percentile.
    pub(crate) p90: u64,
    /// 99th percentile.
    pub(crate) p99: u64,
    /// 99.9th percentile.
    pub(crate) p999: u64,
    /// 99.99th percentile.
    pub(crate) p9999: u64,
    /// Largest value.
    pub(crate) max: u64,
}

impl Percentiles {
    /// Each percentile: its key in the report, its name for people, its quantile, its value.
    pub(crate) fn each(&self) -> [(&'static str, &'static str, f64, u64); 6] {
        [
            ("p50", "p50", 0.5, self.p50),
            ("p90", "p90", 0.9, self.p90),
            ("p99", "p99", 0.99, self.p99),
            ("p999", "p99.9", 0.999, self.p999),
            ("p9999", "p99.99", 0.9999, self.p9999),
            ("max", "max", 1.0, self.max),
        ]
    }
}

/// A lateness distribution.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub(crate) struct LatenessJson {
    /// Always `ns`.
    pub(crate) unit: String,
    /// The percentiles, in `unit`.
    #[serde(flatten)]
    pub(crate) percentiles: Percentiles,
    /// Mean, in `unit`.
    pub(crate) mean: f64,
    /// Values recorded (= fires on time or late).
    pub(crate) count: u64,
    /// Values above the histogram's range (1 h), recorded as its top.
    pub(crate) clamped: u64,
}

/// A cost distribution of one operation, in nanoseconds: `p50` … `clamped` over every single
/// call of the run (in steps of the counter's resolution), `runs_*` per call from the cost runs
/// (resolving the counter's resolution ÷ the run length; 0 where not measured).
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize, PartialEq)]
pub(crate) struct CostJson {
    /// Median per call, from the cost runs.
    pub(crate) runs_p50: f64,
    /// 99th percentile of the runs' per-call cost.
    pub(crate) runs_p99: f64,
    /// Mean per call over the cost runs.
    pub(crate) runs_mean: f64,
    /// Median single call.
    pub(crate) p50: u64,
    /// 99th percentile single call.
    pub(crate) p99: u64,
    /// Slowest call.
    pub(crate) max: u64,
    /// Mean.
    pub(crate) mean: f64,
    /// Calls timed.
    pub(crate) samples: u64,
    /// Calls above 10 s, recorded as 10 s.
    pub(crate) clamped: u64,
}

/// One repetition's own figures: its counts, and each timing and memory figure.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub(crate) struct RepetitionJson {
    /// Timers inserted.
    pub(crate) scheduled: u64,
    /// Timers cancelled.
    pub(crate) cancelled: u64,
    /// Idle timers pushed later.
    pub(crate) reset: u64,
    /// Timers fired.
    pub(crate) fired: u64,
    /// Timer calls per second spent inside the timer.
    pub(crate) ops_per_sec: f64,
    /// Wall-clock seconds of the run.
    pub(crate) wall_secs: f64,
    /// Peak RSS during the run, when known.
    pub(crate) peak_rss_bytes: Option<u64>,
    /// Allocated bytes per live timer at the peak.
    pub(crate) bytes_per_timer: f64,
    /// Lateness percentiles, ns.
    pub(crate) lateness: Percentiles,
    /// Cost per operation, ns.
    pub(crate) cost: CostsJson,
}

/// Cost per operation.
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize, PartialEq)]
pub(crate) struct CostsJson {
    /// `insert`.
    pub(crate) insert: CostJson,
    /// `cancel`.
    pub(crate) cancel: CostJson,
    /// `reset`.
    pub(crate) reset: CostJson,
    /// A `poll` that returned a timer.
    pub(crate) fire: CostJson,
}

impl CostsJson {
    /// The operations, in report order.
    pub(crate) const OPS: [&'static str; 4] = ["insert", "cancel", "reset", "fire"];

    /// The cost of the operation named `op`.
    pub(crate) fn get(&self, op: &str) -> Option<&CostJson> {
        match op {
            "insert" => Some(&self.insert),
            "cancel" => Some(&self.cancel),
            "reset" => Some(&self.reset),
            "fire" => Some(&self.fire),
            _ => None,
        }
    }
}

/// The implementation's own work counters.
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize, PartialEq)]
pub(crate) struct WorkJson {
    /// Entries moved down a level (hierarchical wheel).
    pub(crate) cascaded: u64,
    /// Slots visited by poll (wheels).
    pub(crate) slots_scanned: u64,
    /// Dead entries skipped (lazy heap).
    pub(crate) stale_skipped: u64,
    /// Heap rebuilds (lazy heap).
    pub(crate) compactions: u64,
    /// The most work one call did, in the design's own units (`Stats::max_call_work`).
    #[serde(default)]
    pub(crate) max_call_work: u64,
}

/// One implementation's result.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub(crate) struct ResultJson {
    /// `hashed`, `hierarchical`, `heap` or `lazy-heap`.
    pub(crate) timer: String,
    /// `virtual` or `real`.
    pub(crate) clock: String,
    /// `--service` runs: producer threads driving the thread-safe service (absent for the
    /// single-threaded event loop).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) threads: Option<usize>,
    /// Timers inserted.
    pub(crate) scheduled: u64,
    /// Timers cancelled.
    pub(crate) cancelled: u64,
    /// Idle timers pushed later.
    pub(crate) reset: u64,
    /// Timers fired.
    pub(crate) fired: u64,
    /// Of `fired`: idle timeouts.
    #[serde(default)]
    pub(crate) idle_fired: u64,
    /// Of `fired`: request timeouts.
    #[serde(default)]
    pub(crate) request_fired: u64,
    /// Responses that found their deadline already fired.
    #[serde(default)]
    pub(crate) late_responses: u64,
    /// Timers a `drain` handed back unfired (a replayed trace's drains).
    #[serde(default)]
    pub(crate) drained: u64,
    /// Fires before the deadline (must be 0).
    pub(crate) early_fires: u64,
    /// Timers due by the end that had not fired.
    pub(crate) overdue_at_end: u64,
    /// Timers still pending, not yet due, at the end.
    #[serde(default)]
    pub(crate) pending_at_end: u64,
    /// Requests handled.
    #[serde(default)]
    pub(crate) arrivals: u64,
    /// Requests whose intended time fell within the run.
    #[serde(default)]
    pub(crate) arrivals_intended: u64,
    /// Target request rate per second.
    #[serde(default)]
    pub(crate) target_rate: f64,
    /// Requests handled per second of run time.
    #[serde(default)]
    pub(crate) achieved_rate: f64,
    /// Every call into the timer.
    #[serde(default)]
    pub(crate) timer_calls: u64,
    /// Timer calls per second of (estimated) time spent inside the timer.
    pub(crate) ops_per_sec: f64,
    /// Estimated seconds inside the timer.
    #[serde(default)]
    pub(crate) busy_secs: f64,
    /// Run time in seconds (virtual duration, or the real loop's elapsed time).
    #[serde(default)]
    pub(crate) run_secs: f64,
    /// Wall-clock seconds of the whole run.
    #[serde(default)]
    pub(crate) wall_secs: f64,
    /// Time inside the timer per second of run time, as a percentage of one core:
    /// `busy_secs / run_secs × 100` (with `--service`, summed over the producer threads, lock
    /// waits included), the median over the repetitions. 0 in reports written before reports had it.
    #[serde(default)]
    pub(crate) core_share: f64,
    /// Peak RSS of the process during this implementation's run, when known.
    pub(crate) peak_rss_bytes: Option<u64>,
    /// The timer's `allocated_bytes()` at its peak live count, divided by that count: from the
    /// charged pass when `bytes_grown` (storage grown as the timers need it), else the
    /// repetitions' median (storage preallocated for the workload, so it also counts room
    /// the timers never used).
    pub(crate) bytes_per_timer: f64,
    /// `bytes_per_timer` is what the timers use, grown as needed (the charged pass); false in
    /// reports written before it was.
    #[serde(default)]
    pub(crate) bytes_grown: bool,
    /// Most timers pending at once.
    #[serde(default)]
    pub(crate) peak_live: u64,
    /// Fire lateness: the headline, as `timing.lateness_costs` says (`lateness_min_cost` or
    /// `lateness_measured` when those are present).
    pub(crate) lateness: LatenessJson,
    /// Virtual clock, `--repeat` 2 or more: lateness as measured, the median over the
    /// repetitions (each one's own percentiles are in `repetitions`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) lateness_measured: Option<LatenessJson>,
    /// Virtual clock, `--repeat` 2 or more: lateness of the charged pass, each call charged its
    /// minimum cost over the repetitions (the timer's own lateness).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) lateness_min_cost: Option<LatenessJson>,
    /// Sampled cost per operation, ns.
    #[serde(default)]
    pub(crate) cost: CostsJson,
    /// Real clock: how long after their intended time arrivals were handled, in ns.
    #[serde(default)]
    pub(crate) arrival_lag: Option<LatenessJson>,
    /// The implementation's own work counters.
    #[serde(default)]
    pub(crate) work: WorkJson,
    /// Virtual clock, two repetitions or more: each operation's slowest call, every call taken
    /// at its fastest repetition.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) slowest_call: Option<SlowestJson>,
    /// Every repetition's own figures, in run order.
    pub(crate) repetitions: Vec<RepetitionJson>,
}

/// Per operation, the slowest call with every call taken at its fastest repetition, in ns
/// (see [`slowest`](crate::slowest)); 0: every call under [`SLOW_NS`](crate::slowest::SLOW_NS) in
/// some repetition.
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize, PartialEq)]
pub(crate) struct SlowestJson {
    /// `insert`.
    pub(crate) insert: u64,
    /// `cancel`.
    pub(crate) cancel: u64,
    /// `reset`.
    pub(crate) reset: u64,
    /// A `poll` that returned a timer.
    pub(crate) fire: u64,
    /// A `poll` that returned nothing, and `next_deadline`.
    pub(crate) idle: u64,
}

impl SlowestJson {
    /// Each operation's name and slowest call, in report order.
    fn each(&self) -> [(&'static str, u64); 5] {
        [
            ("insert", self.insert),
            ("cancel", self.cancel),
            ("reset", self.reset),
            ("fire", self.fire),
            ("idle", self.idle),
        ]
    }

    /// The slowest call of the operation named `op` (`insert` … `fire`, or `idle`).
    pub(crate) fn get(&self, op: &str) -> Option<u64> {
        self.each().into_iter().find(|e| e.0 == op).map(|e| e.1)
    }

    /// The slowest of every operation, and its name (the first of equals in report order).
    pub(crate) fn slowest(&self) -> (&'static str, u64) {
        let each = self.each().into_iter();
        each.fold(("insert", 0), |a, b| if b.1 > a.1 { b } else { a })
    }
}

impl ResultJson {
    /// The column and file name: the implementation, plus `-tN` for a service run.
    pub(crate) fn label(&self) -> String {
        match self.threads {
            Some(n) => format!("{}-t{n}", self.timer),
            None => self.timer.clone(),
        }
    }

    /// Every repetition's figures; a report of one run may carry them at the top level only,
    /// and then they are its one repetition.
    pub(crate) fn each_repetition(&self) -> Vec<RepetitionJson> {
        if self.repetitions.is_empty() {
            vec![self.repetition()]
        } else {
            self.repetitions.clone()
        }
    }

    /// The headline lateness is the charged pass's (`--lateness-costs min`).
    pub(crate) fn lateness_is_min_cost(&self) -> bool {
        self.lateness_min_cost.as_ref() == Some(&self.lateness)
    }

    /// The headline lateness percentiles, per repetition: each repetition's own as measured, or
    /// the charged pass's one figure when that is the headline (it takes every repetition's
    /// calls at their fastest, so there is one).
    pub(crate) fn lateness_each(&self) -> Vec<Percentiles> {
        if self.lateness_is_min_cost() {
            vec![self.lateness.percentiles]
        } else {
            self.each_repetition().iter().map(|x| x.lateness).collect()
        }
    }

    /// This result's figures as one repetition.
    pub(crate) fn repetition(&self) -> RepetitionJson {
        RepetitionJson {
            scheduled: self.scheduled,
            cancelled: self.cancelled,
            reset: self.reset,
            fired: self.fired,
            ops_per_sec: self.ops_per_sec,
            wall_secs: self.wall_secs,
            peak_rss_bytes: self.peak_rss_bytes,
            bytes_per_timer: self.bytes_per_timer,
            lateness: self.lateness.percentiles,
            cost: self.cost,
        }
    }
}
impl Report {
    /// Writes the report as pretty JSON.
    ///
    /// # Errors
    /// [`Error::Io`] when the file cannot be written.
    pub(crate) fn write(&self, path: &Path) -> Result<(), Error> {
        let mut text = serde_json::to_string_pretty(self)
            .map_err(|e| Error::io("encoding", path, std::io::Error::other(e)))?;
        text.push('\n');
        fs::write(path, text).map_err(|e| Error::io("writing", path, e))
    }

    /// Reads a report written by [`write`](Self::write).
    ///
    /// # Errors
    /// [`Error::Io`] when the file cannot be read; [`Error::Input`] when it is not a report of
    /// this tool's schema.
    pub(crate) fn read(path: &Path) -> Result<Self, Error> {
        let text = fs::read_to_string(path).map_err(|e| Error::io("reading", path, e))?;
        let schema = serde_json::from_str::<serde_json::Value>(&text)
            .ok()
            .and_then(|v| v.get("schema").and_then(serde_json::Value::as_u64));
        if let Some(schema) = schema.filter(|&s| s != u64::from(SCHEMA)) {
            return Err(Error::Input(format!(
                "{} has schema {schema}, this tool reads schema {SCHEMA}: rerun the baseline with \
                 this version",
                path.display()
            )));
        }
        let report: Report = serde_json::from_str(&text).map_err(|e| {
            Error::Input(format!(
                "{} is not a tickwheel-loadgen report: {e}",
                path.display()
            ))
        })?;
        if report.schema != SCHEMA {
            return Err(Error::Input(format!(
                "{} has schema {}, this tool reads schema {SCHEMA}",
                path.display(),
                report.schema
            )));
        }
        Ok(report)
    }
}
