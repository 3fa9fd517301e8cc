//! `tickwheel-loadgen`: drives every tickwheel implementation with the same realistic timeout
//! workload and reports, side by side, what each costs and how late it fires.
//!
//! # Code map
//! - [`units`]: durations in nanoseconds, parsed from and formatted for people; [`op`]: the
//!   timed operations; [`calls`]: the timer's calls, each a function of its own (where
//!   `--cost simulated` counts); [`context`]: the machine and build a report was made on. They
//!   import nothing from the crate.
//! - [`args`]: the command line (clap derive; the doc comments are the `--help`).
//! - [`thresholds`]: the `--max-lateness` and `--max-cost` lines.
//! - [`config`]: the validated [`config::Config`]; every input check happens there,
//!   before any load.
//! - [`workload`]: the seeded event generator (arrivals, connections, service times).
//! - [`server`]: what each event does to the timer (the modelled server's connections and
//!   requests), shared by both drivers.
//! - [`virtual_clock`], [`real_clock`]: the two drivers (discrete-event time; an event loop on
//!   the monotonic clock).
//! - [`measure`]: saturating histograms, sampled per-call cost, memory.
//! - [`slowest`]: the slowest call with each call at its fastest repetition.
//! - [`slowdown`]: the `--slowdown` test hook, a wrapper around the timer under test.
//! - [`outcome`]: what one implementation's run produced.
//! - [`report`]: table, `report.json`, `.hgrm`, `.hlog`, SVG plots.
//! - [`gate`]: the thresholds applied and the always-on checks; [`mod@diff`]: comparing two
//!   reports.
//! - [`mod@replay`]: a recorded trace of timer calls, replayed and checked on each implementation.
//! - [`simulated`]: `--cost simulated`, each implementation's run under valgrind's cache
//!   simulator, its report, and judging two such reports (for `paired` and `diff`).
//!
//! The modules form layers, each importing only modules below it: `units`, `op` and `context`
//! at the ground, then the command line, thresholds and configuration, measurement and outcomes, the
//! workload, server and drivers, the reports, then gate, diff and replay, and this file on top
//! (the test `module_layers` prints the graph and fails on a cycle).
//!
//! # Invariants
//! - The event sequence depends only on the workload and seed, never on the implementation.
//! - Each implementation is driven by code monomorphized for its concrete type.
//! - Nothing is dropped: every timer ends fired, cancelled, overdue or pending, and the run
//!   checks that the four add up to what was scheduled.
//!
//! Exit codes: 0 pass, 1 a threshold crossed or a contract broken, 2 bad input or I/O error.

mod args;
mod calls;
mod config;
mod context;
mod cost_runs;
mod counter;
mod diff;
mod error;
mod gate;
mod measure;
mod op;
mod outcome;
mod paired;
mod profile;
mod real_clock;
mod replay;
mod report;
mod server;
mod service_mode;
mod simulated;
mod slowdown;
mod slowest;
mod thresholds;
mod units;
mod virtual_clock;
mod workload;

use std::io::{IsTerminal, Write};
use std::process::ExitCode;

use clap::Parser;
use indicatif::{ProgressBar, ProgressStyle};
use tickwheel::{
    FromOptions, HashedWheel, HierarchicalWheel, IndexedHeap, Kind, LazyHeap, Options, Timer,
};

use crate::args::{Args, Command, CostKind};
use crate::config::{Clock, Config, LatenessCosts};
use crate::context::Context;
use crate::counter::CallClock;
use crate::error::Error;
use crate::measure::CallCosts;
use crate::outcome::{MinCost, Outcome};
use crate::report::json::Report;
use crate::slowdown::Slowed;
use crate::thresholds::Thresholds;

fn main() -> ExitCode {
    let args = Args::parse();
    match simulated::isolated(move || run(args)) {
        Ok(code) => ExitCode::from(code),
        Err(err) => {
            let _ = std::io::stdout().flush();
            eprintln!("tickwheel-loadgen: error: {err}");
            ExitCode::from(err.exit_code())
        }
    }
}

/// Runs a parsed command; `Ok` carries the exit code (0 pass, 1 failed gate).
fn run(mut args: Args) -> Result<u8, Error> {
    let progress = std::io::stderr().is_terminal();
    let child = simulated::child()?;
    let parent = child.is_none();
    if let Some((kind, dir)) = child {
        args.command = simulated::as_child(args.command, kind, dir);
    }
    let config = match args.command {
        Command::Run { timer, load } if parent && load.report.cost == CostKind::Simulated => {
            return simulated::load("run", vec![timer], &load)
        }
        Command::Compare { load } if parent && load.report.cost == CostKind::Simulated => {
            return simulated::load("compare", Kind::ALL.to_vec(), &load)
        }
        Command::Run { timer, load } => Config::new("run", vec![timer], &load, progress)?,
        Command::Compare { load } if load.profile == Some(profile::Profile::All) => {
            return every_profile(&load, progress)
        }
        Command::Compare { load } => Config::new("compare", Kind::ALL.to_vec(), &load, progress)?,
        Command::Replay {
            trace,
            timers,
            repeat,
            lateness,
            slowdown,
            report,
        } => return replay(&trace, timers, repeat, lateness, slowdown, &report, parent),
        Command::Diff {
            baseline,
            current,
            tolerance,
            memory_tolerance,
        } => return diff(&baseline, &current, tolerance, memory_tolerance),
        Command::Paired {
            base,
            head,
            pairs,
            tolerance,
            cost,
            out,
            command,
        } => {
            let head = head
                .map_or_else(std::env::current_exe, Ok)
                .map_err(|e| Error::io("finding", "this executable", e))?;
            if cost == CostKind::Simulated {
                let tolerance = tolerance.unwrap_or(paired::SIMULATED_TOLERANCE);
                return paired::simulated(&base, &head, tolerance, &out, &command);
            }
            let tolerance = tolerance.unwrap_or(paired::WALL_TOLERANCE);
            return paired::paired(&base, &head, pairs, tolerance, &out, &command);
        }
    };
    load(&config)
}

fn diff(
    baseline: &std::path::Path,
    current: &std::path::Path,
    tolerance: Option<f64>,
    memory_tolerance: f64,
) -> Result<u8, Error> {
    let simulated = (
        simulated::read_report(baseline)?,
        simulated::read_report(current)?,
    );
    let default = match &simulated {
        (Some(_), _) | (_, Some(_)) => paired::SIMULATED_TOLERANCE,
        (None, None) => args::DEFAULT_TOLERANCE,
    };
    let tolerance = tolerance.unwrap_or(default);
    for (flag, value) in [
        ("--tolerance", tolerance),
        ("--memory-tolerance", memory_tolerance),
    ] {
        if !(value.is_finite() && value >= 0.0) {
            return Err(Error::Input(format!(
                "{flag} must be a non-negative fraction (0.1 = 10 %), got {value}"
            )));
        }
    }
    match simulated {
        (Some(base), Some(head)) => {
            if base.workload != head.workload || base.caches != head.caches {
                return Err(Error::Input(
                    "the two simulated reports measured other workloads or caches: they do not \
                     compare"
                        .into(),
                ));
            }
            let judged = simulated::judge(&base, &head, tolerance)?;
            print!("{}", simulated::render(&judged, tolerance));
            return Ok(u8::from(judged.iter().any(|j| j.verdict != "ok")));
        }
        (None, None) => {}
        _ => {
            return Err(Error::Input(
                "one report is --cost simulated and the other --cost wall: they do not compare"
                    .into(),
            ))
        }
    }
    let baseline = Report::read(baseline)?;
    let current = Report::read(current)?;
    diff::comparable(&baseline, &current)?;
    let judged = diff::compare(&baseline, &current, tolerance, memory_tolerance);
    print!("{}", diff::render(&judged, &baseline, &current, tolerance));
    Ok(u8::from(judged.regressed()))
}

/// `replay`: every chosen implementation `repeat` times, interleaved; writes the reports and
/// prints the table, as `compare` does.
fn replay(
    trace: &std::path::Path,
    timers: Vec<Kind>,
    repeat: u32,
    view: config::LatenessView,
    slowdown: f64,
    args: &args::ReportArgs,
    parent: bool,
) -> Result<u8, Error> {
    config::check_slowdown(slowdown)?;
    config::check_repeat(repeat)?;
    let kinds = if timers.is_empty() {
        Kind::ALL.to_vec()
    } else {
        timers
    };
    let thresholds = Thresholds::parse(&args.max_lateness, &args.max_cost)?;
    thresholds.check_repeatable(true, repeat)?;
    // A corrupt trace is refused whole (exit 2) before any replay could report a divergence.
    let checked = replay::validate(trace)?;
    config::check_writable("--out", &args.out)?;
    if parent && args.cost == CostKind::Simulated {
        if !(args.max_lateness.is_empty() && args.max_cost.is_empty()) {
            return Err(Error::Input(
                "--cost simulated counts one replay of each implementation; --max-lateness and \
                 --max-cost judge timed replays (--cost wall)"
                    .into(),
            ));
        }
        return simulated::run(&kinds, &args.out);
    }
    let context = Context::start(repeat).with_slowdown(slowdown);
    let clock = simulated::call_clock(args.cost);
    // As in `compare`: with two replays or more (and `--lateness loop`), a charged pass gives
    // the headline lateness, the timer's own.
    let charged = view == config::LatenessView::Loop && repeat >= 2;
    let runs = repetitions(&kinds, repeat, charged, true, |slot, _, log| {
        replay_kind(kinds[slot], trace, &checked, view, &clock, log, slowdown)
    })?;
    let workload = report::json::WorkloadJson {
        duration_secs: checked.run_time().as_secs_f64(),
        tick_ns: checked.header.tick_nanos(),
        lateness: view.name().into(),
        trace: Some(checked.json.clone()),
        ..Default::default()
    };
    let mut report = Report::assemble("replay", "virtual", workload, repeat, &runs, &clock);
    report.context = Some(context.finish());
    finish(&mut report, &thresholds, &runs, &args.out)?;
    Ok(u8::from(!report.passed))
}

/// `compare --profile all`: each profile in turn, its reports in `OUT/<profile>/`, then one
/// line per profile and metric family: the best implementation and its lead.
fn every_profile(args: &args::LoadArgs, progress: bool) -> Result<u8, Error> {
    let mut failed = false;
    let mut summary = String::from("\nwhich to pick, per profile:\n");
    for p in profile::Profile::EACH {
        let mut one = args.clone();
        one.profile = Some(p);
        one.report.out = args.report.out.join(p.name());
        let config = Config::new("compare", Kind::ALL.to_vec(), &one, progress)?;
        println!("== profile {}", p.name());
        let report = load_report(&config)?;
        failed |= !report.passed;
        for pick in report::pick::picks(&report) {
            let share = report
                .results
                .iter()
                .find(|r| pick.family == report::pick::COST && r.label() == pick.best.0)
                .map_or(String::new(), |r| {
                    format!("; {} % of a core", report::pick::percent(r.core_share))
                });
            summary.push_str(&format!(
                "  {:<18} {:<20} {:<13} {:>9}  {}{share}\n",
                p.name(),
                pick.family,
                pick.best.0,
                report::pick::shown(pick.family, pick.best.1),
                report::pick::lead(&pick)
            ));
        }
    }
    print!("{summary}");
    Ok(u8::from(failed))
}

/// Drives every configured implementation `--repeat` times, interleaved, then (virtual clock,
/// `--repeat` 2 or more) each once more charged with its calls' minimum costs; writes the
/// reports, prints the table.
fn load(config: &Config) -> Result<u8, Error> {
    let report = load_report(config)?;
    Ok(u8::from(!report.passed))
}

/// [`load`], returning the report.
fn load_report(config: &Config) -> Result<Report, Error> {
    let context = Context::start(config.repeat).with_slowdown(config.slowdown);
    let clock = simulated::call_clock(config.cost);
    let threads: Vec<Option<usize>> = match &config.service {
        Some(counts) => counts.iter().copied().map(Some).collect(),
        None => vec![None],
    };
    let slots: Vec<(Kind, Option<usize>)> = config
        .kinds
        .iter()
        .flat_map(|&kind| threads.iter().map(move |&t| (kind, t)))
        .collect();
    let kinds: Vec<Kind> = slots.iter().map(|&(kind, _)| kind).collect();
    let shown = config.lateness_costs == LatenessCosts::Min;
    let runs = repetitions(
        &kinds,
        config.repeat,
        config.charged_pass(),
        shown,
        |slot, rep, log| {
            let (kind, threads) = slots[slot];
            let bar = progress_bar(config, kind, threads, rep);
            let record = config.record.as_deref().filter(|_| rep == Some(0));
            let outcome = drive_kind(kind, config, threads, record, log, &clock, &bar);
            bar.finish_and_clear();
            outcome
        },
    )?;
    let mut report = Report::new(config, &runs, &clock);
    report.context = Some(context.finish());
    finish(&mut report, &config.thresholds, &runs, &config.out)?;
    Ok(report)
}

/// [`drive`] on `kind`'s concrete type.
fn drive_kind(
    kind: Kind,
    config: &Config,
    threads: Option<usize>,
    record: Option<&std::path::Path>,
    costs: Option<CallCosts>,
    clock: &CallClock,
    bar: &ProgressBar,
) -> Result<Outcome, Error> {
    match kind {
        Kind::Hashed => drive::<HashedWheel<u64>>(kind, config, threads, record, costs, clock, bar),
        Kind::Hierarchical => {
            drive::<HierarchicalWheel<u64>>(kind, config, threads, record, costs, clock, bar)
        }
        Kind::IndexedHeap => {
            drive::<IndexedHeap<u64>>(kind, config, threads, record, costs, clock, bar)
        }
        Kind::LazyHeap => drive::<LazyHeap<u64>>(kind, config, threads, record, costs, clock, bar),
    }
}

/// Every slot's `repeat` runs, interleaved (all slots once, then again, ...): `run(slot,
/// Some(rep), log)`. With `charged`, each run notes its calls' costs in its slot's log, kept at
/// each call's fastest repetition, and then each slot's charged pass (see [`virtual_clock`]),
/// `run(slot, None, log)` with the log charging, gives its representative repetition the
/// min-cost lateness (the headline when `shown`). `kinds` names each slot's implementation.
///
/// # Errors
/// What `run` returns; [`Error::Contract`] when a charged pass makes other calls than the
/// repetitions (see [`min_cost`]).
fn repetitions(
    kinds: &[Kind],
    repeat: u32,
    charged: bool,
    shown: bool,
    mut run: impl FnMut(usize, Option<u32>, Option<CallCosts>) -> Result<Outcome, Error>,
) -> Result<Vec<(Vec<Outcome>, usize)>, Error> {
    let mut runs: Vec<Vec<Outcome>> = kinds.iter().map(|_| Vec::new()).collect();
    let mut logs: Vec<Option<CallCosts>> =
        kinds.iter().map(|_| charged.then(CallCosts::new)).collect();
    for rep in 0..repeat {
        for slot in 0..kinds.len() {
            let mut outcome = run(slot, Some(rep), logs[slot].take())?;
            logs[slot] = outcome.call_costs.take();
            // The logs are the tool's own memory, not the timer's: left out of its peak RSS.
            let held: u64 = logs.iter().flatten().map(CallCosts::bytes).sum();
            outcome.peak_rss_bytes = outcome.peak_rss_bytes.map(|b| b.saturating_sub(held));
            runs[slot].push(outcome);
        }
    }
    let mut runs = representatives(runs);
    for (slot, log) in logs.into_iter().enumerate() {
        if let Some(log) = log {
            let calls = log.runs();
            let pass = run(slot, None, Some(log.charging()))?;
            let (reps, representative) = &mut runs[slot];
            let min_cost = min_cost(kinds[slot], repeat, calls, pass, reps, shown)?;
            reps[*representative].min_cost = Some(min_cost);
        }
    }
    Ok(runs)
}

/// The charged pass `pass` as `kind`'s min-cost lateness, once it is checked to have made the
/// same calls as the `repeat` repetitions `reps` its log noted (`runs` of them).
///
/// # Errors
/// [`Error::Contract`] when it made other calls, or the log saw another number of runs.
fn min_cost(
    kind: Kind,
    repeat: u32,
    runs: u32,
    pass: Outcome,
    reps: &[Outcome],
    shown: bool,
) -> Result<MinCost, Error> {
    let key = |o: &Outcome| {
        [
            o.arrivals,
            o.scheduled,
            o.cancelled,
            o.late_responses,
            o.reset,
            o.fired,
            o.idle_fired,
            o.request_fired,
            o.drained,
            o.timer_calls,
        ]
    };
    if runs != repeat || reps.iter().any(|r| key(r) != key(&pass)) {
        return Err(Error::Contract(format!(
            "{}: the charged pass made other calls than the {} repetitions it was charged from \
             (arrivals, scheduled, cancelled, late responses, reset, fired, idle and request \
             fires, drained, calls: {:?} vs {:?})",
            kind.name(),
            runs,
            key(&pass),
            reps.iter().map(key).collect::<Vec<_>>()
        )));
    }
    Ok(MinCost {
        bytes_per_timer: pass.bytes_per_timer(),
        lateness: pass.lateness,
        lateness_intervals: pass.lateness_intervals,
        shown,
    })
}

/// [`replay::replay`] on `kind`'s concrete type.
fn replay_kind(
    kind: Kind,
    trace: &std::path::Path,
    checked: &replay::Checked,
    view: config::LatenessView,
    clock: &CallClock,
    costs: Option<CallCosts>,
    slowdown: f64,
) -> Result<Outcome, Error> {
    let (t, c, s) = (trace, checked, slowdown);
    match kind {
        Kind::Hashed => replay::replay::<HashedWheel<u64>>(t, c, view, clock, costs, s),
        Kind::Hierarchical => replay::replay::<HierarchicalWheel<u64>>(t, c, view, clock, costs, s),
        Kind::IndexedHeap => replay::replay::<IndexedHeap<u64>>(t, c, view, clock, costs, s),
        Kind::LazyHeap => replay::replay::<LazyHeap<u64>>(t, c, view, clock, costs, s),
    }
}

/// Each implementation's repetitions, and its representative one, whose histograms the files
/// hold: the median by ops/s.
fn representatives(runs: Vec<Vec<Outcome>>) -> Vec<(Vec<Outcome>, usize)> {
    runs.into_iter()
        .map(|reps| {
            let mut order: Vec<usize> = (0..reps.len()).collect();
            order.sort_by(|&a, &b| reps[a].ops_per_sec().total_cmp(&reps[b].ops_per_sec()));
            let representative = order[(order.len() - 1) / 2];
            (reps, representative)
        })
        .collect()
}

/// Gates `report`, writes every report file into `out` and prints the table.
fn finish(
    report: &mut Report,
    thresholds: &Thresholds,
    runs: &[(Vec<Outcome>, usize)],
    out: &std::path::Path,
) -> Result<(), Error> {
    report.failures = gate::failures(report, thresholds);
    report.passed = report.failures.is_empty();
    let shown: Vec<&Outcome> = runs.iter().map(|(reps, i)| &reps[*i]).collect();
    report::write_all(out, report, &shown)?;
    print!("{}", report::table::render(report));
    println!("reports: {}", out.display());
    Ok(())
}

/// Builds one implementation (its concrete type, so the hot loop is monomorphized) and drives
/// it with the configured clock, its calls slowed by `--slowdown` — or, with `threads`, puts it in the service under that many
/// producer threads — with the peak-RSS mark reset first.
fn drive<X: Timer<u64> + FromOptions + Send + 'static>(
    kind: Kind,
    config: &Config,
    threads: Option<usize>,
    record: Option<&std::path::Path>,
    costs: Option<CallCosts>,
    clock: &CallClock,
    bar: &ProgressBar,
) -> Result<Outcome, Error> {
    measure::reset_peak_rss();
    if let Some(threads) = threads {
        let (w, slowdown) = (&config.workload, config.slowdown);
        return service_mode::run::<X>(kind.name(), w, threads, clock, slowdown, bar);
    }
    // The charged pass charges each call instead of timing it, so a vector's growth costs it
    // nothing: it runs on storage grown as the timers need it, and its peak memory is what they
    // use. The timed repetitions preallocate, so no timed call pays for growth.
    let charged = costs.as_ref().is_some_and(CallCosts::is_charging);
    let preallocate = if charged {
        0
    } else {
        config.workload.timers_to_preallocate()
    };
    let options = Options::new().preallocate(preallocate);
    let timer = X::from_options(options).map_err(|e| Error::Input(e.to_string()))?;
    let counted = config.cost == CostKind::Simulated;
    let slowed = |timer| Slowed::new(timer, config.slowdown, counted);
    let mut outcome = match (config.clock, record) {
        (Clock::Virtual, Some(dir)) => {
            let path = dir.join(format!("{}.trace", kind.name()));
            let file = std::fs::File::create(&path).map_err(|e| Error::io("writing", &path, e))?;
            let recorder = tickwheel::trace::Recorder::new(timer, file, config.workload.tick);
            virtual_clock::run_then(
                Slowed::new(recorder, config.slowdown, counted),
                &config.workload,
                config.lateness,
                clock,
                costs,
                bar,
                |r| {
                    r.inner_mut()
                        .stop()
                        .map_err(|e| Error::io("writing", &path, e))
                },
            )?
        }
        (Clock::Virtual, None) => virtual_clock::run_then(
            slowed(timer),
            &config.workload,
            config.lateness,
            clock,
            costs,
            bar,
            |_| Ok(()),
        )?,
        (Clock::Real, _) => real_clock::run(slowed(timer), &config.workload, clock, bar)?,
    };
    outcome.peak_rss_bytes = measure::peak_rss_bytes();
    Ok(outcome)
}

/// The progress bar of one repetition, `rep`, or of the charged pass (`None`).
fn progress_bar(
    config: &Config,
    kind: Kind,
    threads: Option<usize>,
    rep: Option<u32>,
) -> ProgressBar {
    if !config.progress {
        return ProgressBar::hidden();
    }
    let mut label = match threads {
        Some(n) => format!("{}-t{n}", kind.name()),
        None => kind.name().to_string(),
    };
    match rep {
        Some(rep) if config.repeat > 1 => {
            label = format!("{label} {}/{}", rep + 1, config.repeat);
        }
        Some(_) => {}
        None => label = format!("{label} min-cost"),
    }
    let bar = ProgressBar::new(0).with_prefix(format!("{label:>15}"));
    let style =
        ProgressStyle::with_template("{prefix} [{bar:40}] {pos}/{len} ms of run time ({elapsed})")
            .map(|s| s.progress_chars("=> "));
    if let Ok(style) = style {
        bar.set_style(style);
    }
    bar
}
