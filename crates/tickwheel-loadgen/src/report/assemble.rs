//! Builds the [`Report`] of a run from its [`Outcome`]s (before the gate fills `passed` and
//! `failures`).
//!
//! Per implementation, the counts and work counters are those of the representative
//! repetition; each timing and memory figure is the median over the repetitions (for an even
//! count, the lower middle value), and `repetitions` keeps every repetition's own figures, in
//! run order. Every number is finite: an empty run reports zeros.

use crate::config::{Clock, Config};
use crate::cost_runs::{CALLS_PER_RUN, RUNS};
use crate::counter::CallClock;
use crate::measure::Hist;
use crate::op::Op;
use crate::outcome::Outcome;
use crate::report::json::{
    CostJson, CostsJson, LatenessJson, Percentiles, Report, ResultJson, SlowestJson, TimingJson,
    WorkJson, WorkloadJson, SCHEMA,
};
use crate::slowest::{fastest_max, SlowCalls};
use crate::units::nanos;

/// The median of `values`; for an even count the lower middle one (0 when empty).
pub(crate) fn median_u64(mut values: Vec<u64>) -> u64 {
    values.sort_unstable();
    values
        .get(values.len().saturating_sub(1) / 2)
        .copied()
        .unwrap_or(0)
}

/// The median of `values`; for an even count the lower middle one (0 when empty).
pub(crate) fn median_f64(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values
        .get(values.len().saturating_sub(1) / 2)
        .copied()
        .unwrap_or(0.0)
}

fn percentiles(h: &Hist) -> Percentiles {
    Percentiles {
        p50: h.quantile(0.5),
        p90: h.quantile(0.9),
        p99: h.quantile(0.99),
        p999: h.quantile(0.999),
        p9999: h.quantile(0.9999),
        max: h.max(),
    }
}

fn lateness(h: &Hist) -> LatenessJson {
    LatenessJson {
        unit: "ns".into(),
        percentiles: percentiles(h),
        mean: h.mean(),
        count: h.count(),
        clamped: h.clamped,
    }
}

/// A single calls' distribution `h`, and the cost runs' `runs` (in ps) where measured.
fn cost(h: &Hist, runs: Option<&Hist>) -> CostJson {
    let ns = |ps: f64| ps / 1e3;
    CostJson {
        runs_p50: runs.map_or(0.0, |r| ns(r.quantile(0.5) as f64)),
        runs_p99: runs.map_or(0.0, |r| ns(r.quantile(0.99) as f64)),
        runs_mean: runs.map_or(0.0, |r| ns(r.mean())),
        p50: h.quantile(0.5),
        p99: h.quantile(0.99),
        max: h.max(),
        mean: h.mean(),
        samples: h.count(),
        clamped: h.clamped,
    }
}

/// Time inside the timer per second of run time, in percent of one core. A service run's
/// `busy` is the producer threads' mean, so it counts once per thread.
fn core_share(o: &Outcome) -> f64 {
    let run = o.run_time.as_secs_f64();
    if run <= 0.0 {
        return 0.0;
    }
    let threads = o.threads.unwrap_or(1) as f64;
    o.busy.as_secs_f64() * threads / run * 100.0
}

fn finite(x: f64) -> f64 {
    if x.is_finite() {
        x
    } else {
        0.0
    }
}

/// The summary of one outcome.
fn from_outcome(o: &Outcome, target_rate: f64) -> ResultJson {
    let op = |op: Op| {
        let runs = o.run_costs.as_ref().map(|r| &r[op as usize]);
        cost(&o.cost[op as usize], runs)
    };
    ResultJson {
        timer: o.timer.into(),
        clock: o.clock.name().into(),
        threads: o.threads,
        scheduled: o.scheduled,
        cancelled: o.cancelled,
        reset: o.reset,
        fired: o.fired,
        idle_fired: o.idle_fired,
        request_fired: o.request_fired,
        late_responses: o.late_responses,
        drained: o.drained,
        early_fires: o.early_fires,
        overdue_at_end: o.overdue_at_end,
        pending_at_end: o.pending_at_end,
        arrivals: o.arrivals,
        arrivals_intended: o.arrivals_intended,
        target_rate: finite(target_rate),
        achieved_rate: finite(o.achieved_rate()),
        timer_calls: o.timer_calls,
        ops_per_sec: finite(o.ops_per_sec()),
        busy_secs: o.busy.as_secs_f64(),
        run_secs: o.run_time.as_secs_f64(),
        wall_secs: o.wall.as_secs_f64(),
        core_share: finite(core_share(o)),
        peak_rss_bytes: o.peak_rss_bytes,
        bytes_per_timer: finite(o.bytes_per_timer()),
        bytes_grown: false,
        peak_live: o.peak_live,
        lateness: lateness(&o.lateness),
        lateness_measured: None,
        lateness_min_cost: None,
        cost: CostsJson {
            insert: op(Op::Insert),
            cancel: op(Op::Cancel),
            reset: op(Op::Reset),
            fire: op(Op::Fire),
        },
        arrival_lag: o.arrival_lag.as_ref().map(lateness),
        work: WorkJson {
            cascaded: o.stats.cascaded,
            slots_scanned: o.stats.slots_scanned,
            stale_skipped: o.stats.stale_skipped,
            compactions: o.stats.compactions,
            max_call_work: o.stats.max_call_work,
        },
        slowest_call: None,
        repetitions: Vec::new(),
    }
}

/// Each percentile's median over `each`.
fn median_percentiles(each: &[Percentiles]) -> Percentiles {
    let u = |f: fn(&Percentiles) -> u64| median_u64(each.iter().map(f).collect());
    Percentiles {
        p50: u(|p| p.p50),
        p90: u(|p| p.p90),
        p99: u(|p| p.p99),
        p999: u(|p| p.p999),
        p9999: u(|p| p.p9999),
        max: u(|p| p.max),
    }
}

/// Each figure's median over `each`, but `samples` and `clamped`, which are `counts`'.
fn median_cost(each: &[CostJson], counts: CostJson) -> CostJson {
    let m = |f: fn(&CostJson) -> f64| median_f64(each.iter().map(f).collect());
    let u = |f: fn(&CostJson) -> u64| median_u64(each.iter().map(f).collect());
    CostJson {
        runs_p50: m(|c| c.runs_p50),
        runs_p99: m(|c| c.runs_p99),
        runs_mean: m(|c| c.runs_mean),
        p50: u(|c| c.p50),
        p99: u(|c| c.p99),
        max: u(|c| c.max),
        mean: m(|c| c.mean),
        ..counts
    }
}

/// The summary of one implementation's repetitions: the counts of `runs[representative]`,
/// each timing and memory figure the median over `runs`, and every run's own figures.
fn from_repetitions(runs: &[Outcome], representative: usize, rate: f64) -> ResultJson {
    let each: Vec<ResultJson> = runs.iter().map(|o| from_outcome(o, rate)).collect();
    let mut out = each[representative].clone();
    let m = |f: &dyn Fn(&ResultJson) -> f64| median_f64(each.iter().map(f).collect());
    out.ops_per_sec = m(&|r| r.ops_per_sec);
    out.busy_secs = m(&|r| r.busy_secs);
    out.wall_secs = m(&|r| r.wall_secs);
    out.core_share = m(&|r| r.core_share);
    out.bytes_per_timer = m(&|r| r.bytes_per_timer);
    out.peak_rss_bytes = out
        .peak_rss_bytes
        .map(|_| median_u64(each.iter().map(|r| r.peak_rss_bytes.unwrap_or(0)).collect()));
    let lateness_each: Vec<Percentiles> = each.iter().map(|r| r.lateness.percentiles).collect();
    out.lateness.percentiles = median_percentiles(&lateness_each);
    out.lateness.mean = m(&|r| r.lateness.mean);
    if let Some(min_cost) = runs.iter().find_map(|o| o.min_cost.as_ref()) {
        // What the timers use, grown as they need, not what the repetitions preallocated.
        out.bytes_per_timer = finite(min_cost.bytes_per_timer);
        out.bytes_grown = true;
        let (measured, min) = (out.lateness.clone(), lateness(&min_cost.lateness));
        out.lateness = if min_cost.shown { &min } else { &measured }.clone();
        out.lateness_measured = Some(measured);
        out.lateness_min_cost = Some(min);
    }
    let cost = |pick: fn(&CostsJson) -> CostJson| {
        let costs: Vec<CostJson> = each.iter().map(|r| pick(&r.cost)).collect();
        median_cost(&costs, pick(&out.cost))
    };
    out.cost = CostsJson {
        insert: cost(|c| c.insert),
        cancel: cost(|c| c.cancel),
        reset: cost(|c| c.reset),
        fire: cost(|c| c.fire),
    };
    out.repetitions = each.iter().map(ResultJson::repetition).collect();
    if runs.iter().all(|o| o.clock == Clock::Virtual) {
        let slow: Vec<&SlowCalls> = runs.iter().map(|o| &o.slow_calls).collect();
        out.slowest_call = fastest_max(&slow).map(|max| SlowestJson {
            insert: max[Op::Insert as usize],
            cancel: max[Op::Cancel as usize],
            reset: max[Op::Reset as usize],
            fire: max[Op::Fire as usize],
            idle: max[Op::Idle as usize],
        });
    }
    out
}

impl Report {
    /// The report of a run: `runs` holds, per implementation, its repetitions in run order, and
    /// the index of the representative one (whose histograms the files hold).
    pub(crate) fn new(config: &Config, runs: &[(Vec<Outcome>, usize)], clock: &CallClock) -> Self {
        let w = &config.workload;
        let workload = WorkloadJson {
            connections: w.connections,
            rate: w.rate,
            duration_secs: w.duration.as_secs_f64(),
            idle_timeout_secs: w.idle_timeout.as_secs_f64(),
            request_timeout_secs: w.request_timeout.as_secs_f64(),
            slow_fraction: w.slow_fraction,
            tick_ns: nanos(w.tick),
            seed: w.seed,
            lateness: config.lateness.name().into(),
            handler_cost_ns: nanos(w.handler_cost),
            herd: w.herd,
            profile: config.profile.map(str::to_owned),
            trace: None,
        };
        let (command, clock_name) = (config.command, config.clock.name());
        Self::assemble(command, clock_name, workload, config.repeat, runs, clock)
    }

    /// The report of `runs` (as in [`new`](Self::new)) on `workload`.
    pub(crate) fn assemble(
        command: &str,
        clock_name: &str,
        workload: WorkloadJson,
        repeat: u32,
        runs: &[(Vec<Outcome>, usize)],
        clock: &CallClock,
    ) -> Self {
        let min_shown = runs
            .iter()
            .flat_map(|(reps, _)| reps)
            .any(|o| o.min_cost.as_ref().is_some_and(|m| m.shown));
        let rate = workload.rate;
        Self {
            schema: SCHEMA,
            tool: env!("CARGO_PKG_NAME").into(),
            version: env!("CARGO_PKG_VERSION").into(),
            command: command.into(),
            clock: clock_name.into(),
            workload,
            timing: TimingJson {
                counter: "quanta cycle counter, every call timed".into(),
                overhead_ns: clock.overhead_ns(),
                counter_resolution_ns: clock.resolution_ns(),
                resolution_ns: clock.call_resolution_ns(),
                repeat,
                calls_per_run: CALLS_PER_RUN,
                runs_per_op: RUNS,
                run_resolution_ns: clock.resolution_ns() / f64::from(CALLS_PER_RUN),
                lateness_costs: if min_shown { "min" } else { "measured" }.into(),
            },
            results: runs
                .iter()
                .map(|(reps, rep)| from_repetitions(reps, *rep, rate))
                .collect(),
            passed: true,
            failures: Vec::new(),
            context: None,
        }
    }
}
