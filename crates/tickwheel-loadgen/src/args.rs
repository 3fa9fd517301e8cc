//! The command line, derived with clap. The doc comments here are the `--help` text. Its
//! enums for the clock and the lateness view and costs are also the configuration's (see
//! [`config`](crate::config)), with the names reports use.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Parser, Subcommand, ValueEnum};
use tickwheel::Kind;

use crate::units::{non_negative, parse_duration};

/// Drive every tickwheel timer with the same realistic timeout workload and show, side by side,
/// what each costs and how late it fires.
///
/// Exit codes: 0 pass, 1 a threshold was crossed (or a timer broke its contract: an early fire,
/// counts that differ between implementations), 2 bad input or an I/O error.
#[derive(Debug, Parser)]
#[command(name = "tickwheel-loadgen", version)]
pub(crate) struct Args {
    /// What to do.
    #[command(subcommand)]
    pub(crate) command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Drive one implementation.
    Run {
        /// The implementation: hashed, hierarchical, heap or lazy-heap.
        #[arg(long, value_parser = clap::value_parser!(Kind))]
        timer: Kind,
        /// The workload, clock, reports and thresholds.
        #[command(flatten)]
        load: LoadArgs,
    },
    /// Drive all four implementations on the same workload, their repetitions interleaved,
    /// and print them side by side.
    Compare {
        /// The workload, clock, reports and thresholds.
        #[command(flatten)]
        load: LoadArgs,
    },
    /// Replay a trace of timer calls (from `compare --record`, or a server that wrapped its
    /// timer in tickwheel's `trace::Recorder`) on each implementation, in order, on the
    /// trace's own time; check that each returns what the recorded timer returned (exit 1 at
    /// the first difference, naming the call); then write the same reports as `compare`, which
    /// `diff` compares with another replay of the same trace.
    Replay {
        /// The trace file.
        trace: PathBuf,
        /// Implementations to replay on (repeatable, or comma-separated) [default: all four].
        #[arg(long = "timer", value_delimiter = ',', value_parser = clap::value_parser!(Kind))]
        timers: Vec<Kind>,
        /// Replays of each implementation, interleaved; the table shows the one with the
        /// median wall time.
        #[arg(long, value_parser = non_negative::<u32>, allow_hyphen_values = true, default_value_t = 1)]
        repeat: u32,
        /// `loop` (lateness as an event loop charged with every call's cost hands timers
        /// over) or `ticks` (poll tick minus deadline tick).
        #[arg(long, value_enum, default_value_t = LatenessView::Loop)]
        lateness: LatenessView,
        /// Test hook, as `compare --slowdown`: every timed timer call takes FACTOR times its
        /// own cost, in 1..=10 (1 is off).
        #[arg(
            long,
            allow_negative_numbers = true,
            value_name = "FACTOR",
            default_value_t = 1.0
        )]
        slowdown: f64,
        /// Where the reports go, and the lines that fail the replay.
        #[command(flatten)]
        report: ReportArgs,
    },
    /// Compare two report.json files: both values and their ratio per implementation and
    /// metric, marking regressions beyond the tolerance (exit 1 when there is one).
    Diff {
        /// The report to compare against (e.g. from the main branch).
        baseline: PathBuf,
        /// The report under test.
        current: PathBuf,
        /// Relative change of a timing metric (ops/s, cost and lateness percentiles) that counts
        /// as a regression when the repetitions also show it is beyond noise: 0.25 flags a
        /// metric 25 % worse. The default sits above the drift measured between back-to-back
        /// runs of one build on a shared 2-core machine. For two `--cost simulated` reports:
        /// estimated cycles per call above 1 + TOLERANCE times the baseline's, per
        /// implementation and call kind [default: 0.25 wall, 0.01 simulated].
        #[arg(long, allow_negative_numbers = true)]
        tolerance: Option<f64>,
        /// Relative growth of a memory metric (bytes per live timer, peak RSS) that counts as a
        /// regression.
        #[arg(long, default_value_t = DEFAULT_MEMORY_TOLERANCE, allow_negative_numbers = true)]
        memory_tolerance: f64,
    },
    /// Run two builds of the load generator on one workload, interleaved (A B, then B A, …),
    /// and judge the build under test by its ops/s ratio to the base's within each pair, so
    /// the machine's drift cancels: exit 1 when an implementation's median ratio is below
    /// 1 − tolerance (or the builds' counts differ). Both builds run the command given after
    /// `--` (compare, run or replay, without --out).
    Paired {
        /// The base build's `tickwheel-loadgen` executable.
        #[arg(long)]
        base: PathBuf,
        /// The build under test [default: this executable].
        #[arg(long)]
        head: Option<PathBuf>,
        /// Pairs of runs (wall cost; a simulated cost repeats exactly, so it runs each build
        /// once).
        #[arg(long, value_parser = non_negative::<u32>, allow_hyphen_values = true, default_value_t = 5)]
        pairs: u32,
        /// Wall cost: a median ratio below 1 − TOLERANCE is a regression (0.2 flags 20 % fewer
        /// ops/s; smaller tolerances raised false alarms on a shared 2-core machine). Simulated
        /// cost: estimated cycles per call above 1 + TOLERANCE times the base's, for any
        /// implementation and call kind [default: 0.2 wall, 0.01 simulated].
        #[arg(long, allow_negative_numbers = true)]
        tolerance: Option<f64>,
        /// `wall` (ops/s, pairs of timed runs) or `simulated` (one run of each build under
        /// valgrind's cache simulator; `--cost simulated` is added to the command).
        #[arg(long, value_enum, default_value_t = CostKind::Wall)]
        cost: CostKind,
        /// Where each run's reports go (`base-N/`, `head-N/`), and the verdict, `paired.json`.
        #[arg(long, default_value = "tickwheel-paired")]
        out: PathBuf,
        /// The command both builds run, e.g. `-- compare --duration 10s`.
        #[arg(last = true, required = true)]
        command: Vec<String>,
    },
}

/// The default `--tolerance`: see the module docs of `diff`.
pub(crate) const DEFAULT_TOLERANCE: f64 = 0.25;
/// The default `--memory-tolerance`.
pub(crate) const DEFAULT_MEMORY_TOLERANCE: f64 = 0.05;

/// How virtual-clock lateness is measured.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum LatenessView {
    /// As a server sees it: the loop is busy for the measured time of every timer call (and
    /// --handler-cost per event); lateness = the instant the loop hands a fired timer to the
    /// application minus its intended deadline, tick rounding included.
    Loop,
    /// Tick-exact: the poll's tick minus the deadline's tick (0 for a correct timer), in ns.
    Ticks,
}

/// Which call costs the headline virtual-clock lateness charges.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum LatenessCosts {
    /// Each call charged its minimum cost over the repetitions (a charged pass after them).
    Min,
    /// Each call charged its cost as measured in that repetition.
    Measured,
}

/// How a timer call's cost is measured.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum CostKind {
    /// Timed with the cycle counter, on this machine as it is.
    Wall,
    /// Counted under valgrind's cache simulator, with fixed caches.
    Simulated,
}

/// Which clock drives the timer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum Clock {
    /// Deterministic discrete-event time: the event loop charged with every call's measured
    /// cost; lateness at hand-over, in ns.
    Virtual,
    /// The real monotonic clock: an event loop that sleeps; lateness in nanoseconds.
    Real,
}

impl Clock {
    /// The name used in reports.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Clock::Virtual => "virtual",
            Clock::Real => "real",
        }
    }
}

impl LatenessView {
    /// The name used in reports.
    pub(crate) fn name(self) -> &'static str {
        match self {
            LatenessView::Loop => "loop",
            LatenessView::Ticks => "ticks",
        }
    }
}

/// Options shared by `run` and `compare`.
#[derive(Clone, Debug, clap::Args)]
pub(crate) struct LoadArgs {
    /// Clock: `virtual` (deterministic, fast, counts must agree across implementations) or
    /// `real` (an event loop on the monotonic clock).
    #[arg(long, value_enum, default_value_t = Clock::Virtual)]
    pub(crate) clock: Clock,
    /// Open connections, each with an idle timeout [default: 100000 virtual, 10000 real].
    #[arg(long, value_parser = non_negative::<u64>, allow_hyphen_values = true)]
    pub(crate) connections: Option<u64>,
    /// Requests per second over all connections (open loop, Poisson arrivals)
    /// [default: 200000 virtual, 20000 real].
    #[arg(long, allow_negative_numbers = true)]
    pub(crate) rate: Option<f64>,
    /// Run length, e.g. `30s`, `250ms` [default: 30s virtual, 3s real].
    #[arg(long, value_parser = parse_duration, allow_hyphen_values = true)]
    pub(crate) duration: Option<Duration>,
    /// Idle timeout per connection, pushed later (reset) on every request of that connection
    /// [default: 10s].
    #[arg(long, value_parser = parse_duration, allow_hyphen_values = true)]
    pub(crate) idle_timeout: Option<Duration>,
    /// Deadline per request, cancelled when its response arrives [default: 200ms].
    #[arg(long, value_parser = parse_duration, allow_hyphen_values = true)]
    pub(crate) request_timeout: Option<Duration>,
    /// Share of responses slower than the request timeout (their timers fire), in [0, 1]
    /// [default: 0.01].
    #[arg(long, allow_negative_numbers = true)]
    pub(crate) slow_fraction: Option<f64>,
    /// A workload shape from a real system's defaults (see each one's source below); the
    /// workload flags given as well override it.
    #[arg(long, value_enum)]
    pub(crate) profile: Option<crate::profile::Profile>,
    /// Timer resolution (one tick).
    #[arg(long, value_parser = parse_duration, allow_hyphen_values = true, default_value = "1ms")]
    pub(crate) tick: Duration,
    /// Seed of the workload generator: the same seed gives the same event sequence.
    #[arg(long, value_parser = non_negative::<u64>, allow_hyphen_values = true, default_value_t = 42)]
    pub(crate) seed: u64,
    /// Runs of each implementation, interleaved (all implementations once, then again, ...),
    /// on the same seed; report.json keeps every run's figures, so `diff` can tell noise from
    /// change.
    #[arg(long, value_parser = non_negative::<u32>, allow_hyphen_values = true, default_value_t = 3)]
    pub(crate) repeat: u32,
    /// Work the application does per event (a request, a response, a fired timer), e.g.
    /// `500ns`. The virtual loop is busy that long per event; the real loop spins that long.
    #[arg(long, value_parser = parse_duration, default_value = "0ns", allow_hyphen_values = true)]
    pub(crate) handler_cost: Duration,
    /// Virtual clock only: `loop` (lateness as the event loop hands timers over, costs
    /// charged) or `ticks` (poll tick minus deadline tick).
    #[arg(long, value_enum)]
    pub(crate) lateness: Option<LatenessView>,
    /// Virtual clock, `--lateness loop`, `--repeat` 2 or more: the call costs the headline
    /// lateness charges the loop. `min` (each call's fastest repetition, in one more pass of the
    /// same calls: the timer's own lateness, the machine's preemptions left out) or `measured`
    /// (each repetition's own measured costs, preemptions included). report.json keeps both.
    #[arg(long, value_enum, default_value_t = LatenessCosts::Min)]
    pub(crate) lateness_costs: LatenessCosts,
    /// Test hook, to check that a CI gate catches a slower build: every timed timer call spins
    /// until it has taken FACTOR times its own cost, so the run measures a build that much
    /// slower. In 1..=10; 1 is off. Shown in report.json's context and by `diff`.
    #[arg(
        long,
        allow_negative_numbers = true,
        value_name = "FACTOR",
        default_value_t = 1.0
    )]
    pub(crate) slowdown: f64,
    /// Real clock only: drive the thread-safe timer service (tickwheel-service) from producer
    /// threads that schedule, cancel and reset while its driver thread fires, instead of one
    /// event loop. Each implementation runs once per thread count 1, 2, 4, … up to --threads.
    #[arg(long)]
    pub(crate) service: bool,
    /// Most producer threads for --service [default: the number of cores].
    #[arg(long, value_parser = non_negative::<usize>, allow_hyphen_values = true)]
    pub(crate) threads: Option<usize>,
    /// Virtual clock only: also write each implementation's first repetition as a trace of
    /// its timer calls, `DIR/<timer>.trace`, for `replay` (that repetition's costs include the
    /// recording).
    #[arg(long, value_name = "DIR")]
    pub(crate) record: Option<PathBuf>,
    /// Where the reports go, and the lines that fail the run.
    #[command(flatten)]
    pub(crate) report: ReportArgs,
}

/// Options of every command that writes reports: `run`, `compare` and `replay`.
#[derive(Clone, Debug, clap::Args)]
pub(crate) struct ReportArgs {
    /// Directory for report.json, *.hgrm, *.hlog, lateness.svg and cost.svg.
    #[arg(long, default_value = "tickwheel-report")]
    pub(crate) out: PathBuf,
    /// What a call costs: `wall` (timed with the cycle counter) or `simulated` (each
    /// implementation once under valgrind's cache simulator: instructions, cache misses and
    /// estimated cycles per call kind, the same on every run and machine; needs valgrind).
    #[arg(long, value_enum, default_value_t = CostKind::Wall)]
    pub(crate) cost: CostKind,
    /// Fail (exit 1) when a lateness percentile crosses a line, e.g. `p99.9=5ms`. Percentiles:
    /// p50, p90, p99, p99.9, p99.99, max. Repeatable. Virtual-clock lateness is ticks × tick.
    #[arg(long, value_name = "PCT=DURATION")]
    pub(crate) max_lateness: Vec<String>,
    /// Fail (exit 1) when an operation's cost crosses a line, e.g. `insert.p99=200ns`.
    /// Operations: insert, cancel, reset, fire; statistics: p50, p99, max, or slowest (the
    /// slowest call at its fastest repetition; OP may then be idle too). Repeatable.
    #[arg(long, value_name = "OP.STAT=DURATION")]
    pub(crate) max_cost: Vec<String>,
}
