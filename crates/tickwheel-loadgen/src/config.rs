//! The validated run configuration: what `run` and `compare` pass down to every driver.
//!
//! Every check happens here, before any load is generated, so bad input fails at once with a
//! message naming the flag (exit 2).

use std::fs;
use std::path::PathBuf;
use std::time::Duration;

use tickwheel::Kind;

use crate::args::LoadArgs;
pub(crate) use crate::args::{Clock, LatenessCosts, LatenessView};
use crate::error::Error;
use crate::profile::{Profile, Shape};
use crate::thresholds::Thresholds;
use crate::units::nanos;

/// The workload: an open-loop model of a server's connections.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Workload {
    /// Open connections, each with one idle timer; at least 1.
    pub(crate) connections: u32,
    /// Requests per second over all connections; finite and positive.
    pub(crate) rate: f64,
    /// Run length; at least one tick.
    pub(crate) duration: Duration,
    /// Idle timeout, reset on every request of its connection; positive.
    pub(crate) idle_timeout: Duration,
    /// Request deadline, cancelled by the response; positive.
    pub(crate) request_timeout: Duration,
    /// Share of responses slower than `request_timeout`, in [0, 1].
    pub(crate) slow_fraction: f64,
    /// One tick of the timers; at least 1 ns.
    pub(crate) tick: Duration,
    /// Seed of the event generator.
    pub(crate) seed: u64,
    /// The application's work per event (arrival, response, fired timer).
    pub(crate) handler_cost: Duration,
    /// Every connection's first idle timer at the same deadline (`--profile herd`), instead of
    /// spread over one idle timeout.
    pub(crate) herd: bool,
}

impl Workload {
    /// Nanoseconds per tick (at least 1).
    pub(crate) fn tick_ns(&self) -> u64 {
        nanos(self.tick).max(1)
    }

    /// Timers to preallocate, so that no measured call pays for a vector's growth: one idle
    /// timer per connection, plus the request deadlines in flight. A deadline lives at most one
    /// request timeout (it fires or is cancelled), so in flight are about the arrivals of one
    /// timeout; twice that, plus 1,024, covers the Poisson count's spread. The in-flight part
    /// is capped at the run's arrivals and at [`MAX_PREALLOCATED_REQUESTS`]: beyond that, the
    /// storage grows as it would in a server.
    pub(crate) fn timers_to_preallocate(&self) -> usize {
        let per_timeout = self.rate * self.request_timeout.as_secs_f64() * 2.0 + 1_024.0;
        let in_flight = per_timeout
            .min(self.rate * self.duration.as_secs_f64() + 1_024.0)
            .min(MAX_PREALLOCATED_REQUESTS as f64);
        self.connections as usize + in_flight as usize
    }
}

/// The most request deadlines [`Workload::timers_to_preallocate`] reserves room for.
pub(crate) const MAX_PREALLOCATED_REQUESTS: usize = 1 << 22;

/// Defaults that depend on the clock: a virtual run is fast and large, a real one short.
const VIRTUAL_DEFAULTS: Shape = Shape {
    connections: 100_000,
    rate: 200_000.0,
    duration: Duration::from_secs(30),
    idle_timeout: Duration::from_secs(10),
    request_timeout: Duration::from_millis(200),
    slow_fraction: 0.01,
    herd: false,
};

const REAL_DEFAULTS: Shape = Shape {
    connections: 10_000,
    rate: 20_000.0,
    duration: Duration::from_secs(3),
    ..VIRTUAL_DEFAULTS
};

/// A validated `run` or `compare`.
#[derive(Clone, Debug)]
pub(crate) struct Config {
    /// `run` or `compare`, for the report.
    pub(crate) command: &'static str,
    /// The implementations to drive, in report order.
    pub(crate) kinds: Vec<Kind>,
    /// The clock.
    pub(crate) clock: Clock,
    /// The workload every implementation gets.
    pub(crate) workload: Workload,
    /// Where the reports go (created if missing; checked writable before the run).
    pub(crate) out: PathBuf,
    /// The CI gate.
    pub(crate) thresholds: Thresholds,
    /// Show a progress bar (stderr is a terminal).
    pub(crate) progress: bool,
    /// `--service`: the producer-thread counts to run each implementation with.
    pub(crate) service: Option<Vec<usize>>,
    /// Runs of each implementation, interleaved; at least 1.
    pub(crate) repeat: u32,
    /// How lateness is measured.
    pub(crate) lateness: LatenessView,
    /// Which call costs the headline lateness charges (`--lateness-costs`).
    pub(crate) lateness_costs: LatenessCosts,
    /// `--record`: where the first repetition's traces go.
    pub(crate) record: Option<PathBuf>,
    /// `--profile`: the shape the workload started from.
    pub(crate) profile: Option<&'static str>,
    /// `--slowdown`: every timed call lasts this many times its own cost (1: off).
    pub(crate) slowdown: f64,
    /// `wall`, or `simulated` in a simulated child (the parent never builds a `Config` run).
    pub(crate) cost: crate::args::CostKind,
}

impl Config {
    /// A charged pass follows the repetitions (see [`virtual_clock`](crate::virtual_clock)):
    /// the virtual clock's event loop with `--lateness loop` and `--repeat` 2 or more.
    pub(crate) fn charged_pass(&self) -> bool {
        self.clock == Clock::Virtual
            && self.service.is_none()
            && self.lateness == LatenessView::Loop
            && self.repeat >= 2
    }

    /// Validates the flags.
    ///
    /// # Errors
    /// [`Error::Input`] naming the first bad flag; [`Error::Io`] when `--out` cannot be written.
    pub(crate) fn new(
        command: &'static str,
        kinds: Vec<Kind>,
        args: &LoadArgs,
        progress: bool,
    ) -> Result<Self, Error> {
        let clock = args.clock;
        let profile = match args.profile {
            Some(Profile::All) => {
                return Err(Error::Input(
                    "--profile all runs every profile in turn; it applies to compare alone".into(),
                ))
            }
            Some(p) => p.shape(),
            None => None,
        };
        let workload = workload(args, clock, profile)?;
        let service = service(args, clock, workload.connections)?;
        check_repeat(args.repeat)?;
        let lateness = match (args.lateness, clock) {
            (None | Some(LatenessView::Loop), _) => LatenessView::Loop,
            (Some(LatenessView::Ticks), Clock::Virtual) => LatenessView::Ticks,
            (Some(LatenessView::Ticks), Clock::Real) => {
                return Err(Error::Input(
                    "--lateness ticks applies to the virtual clock; the real clock measures \
                     lateness as the loop hands timers over"
                        .into(),
                ))
            }
        };
        if args.handler_cost > MAX_HANDLER_COST {
            return Err(Error::Input(format!(
                "--handler-cost must be at most {MAX_HANDLER_COST:?} per event, got {:?}",
                args.handler_cost
            )));
        }
        if service.is_some() && !args.handler_cost.is_zero() {
            return Err(Error::Input(
                "--handler-cost models one event loop; it does not apply with --service".into(),
            ));
        }
        if let Some(dir) = &args.record {
            if clock != Clock::Virtual || service.is_some() {
                return Err(Error::Input(
                    "--record writes the virtual clock's event loop; it does not apply to \
                     --clock real or --service"
                        .into(),
                ));
            }
            check_writable("--record", dir)?;
        }
        check_slowdown(args.slowdown)?;
        let thresholds = Thresholds::parse(&args.report.max_lateness, &args.report.max_cost)?;
        thresholds.check_repeatable(clock == Clock::Virtual && service.is_none(), args.repeat)?;
        check_writable("--out", &args.report.out)?;
        let config = Self {
            command,
            kinds,
            clock,
            workload,
            profile: args.profile.map(Profile::name),
            out: args.report.out.clone(),
            thresholds,
            progress,
            service,
            repeat: args.repeat,
            lateness,
            lateness_costs: args.lateness_costs,
            record: args.record.clone(),
            slowdown: args.slowdown,
            cost: args.report.cost,
        };
        config.check_memory(available_memory())?;
        Ok(config)
    }

    /// Refuses a run whose charged pass's call log (4 B per timer call, kept until the
    /// implementation's last pass) would need more than half of `available` bytes, before any
    /// work starts. The calls are estimated from the workload: [`CALLS_PER_REQUEST`] per
    /// request plus one insert per connection. Without a charged pass nothing grows with the
    /// run's length but the compressed `.hlog` intervals, a few hundred bytes per second.
    pub(crate) fn check_memory(&self, available: Option<u64>) -> Result<(), Error> {
        let Some(available) = available else {
            return Ok(());
        };
        if !self.charged_pass() {
            return Ok(());
        }
        let w = &self.workload;
        let calls =
            w.rate * w.duration.as_secs_f64() * CALLS_PER_REQUEST + f64::from(w.connections);
        let bytes = calls * 4.0;
        if bytes <= available as f64 / 2.0 {
            return Ok(());
        }
        Err(Error::Input(format!(
            "--duration {:?} at --rate {} makes about {:.0} million timer calls per \
             implementation; the charged pass keeps 4 B per call, about {:.1} GB, more than half \
             of the {:.1} GB this machine has available. Shorten --duration or lower --rate, or \
             use --repeat 1 (no charged pass)",
            w.duration,
            w.rate,
            calls / 1e6,
            bytes / 1e9,
            available as f64 / 1e9,
        )))
    }
}

/// Timer calls per request, measured on the default workload (30.3 million calls for 6.0
/// million requests): an insert and a cancel or fire for the deadline, a reset of the idle
/// timer, and the polls and `next_deadline`s around them.
const CALLS_PER_REQUEST: f64 = 5.0;

/// `MemAvailable` from `/proc/meminfo`, in bytes; `None` where the system does not say.
fn available_memory() -> Option<u64> {
    let meminfo = fs::read_to_string("/proc/meminfo").ok()?;
    let line = meminfo.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// The workload the flags ask for, on `clock`'s defaults or `profile`'s.
fn workload(args: &LoadArgs, clock: Clock, profile: Option<Shape>) -> Result<Workload, Error> {
    let defaults = profile.unwrap_or(match clock {
        Clock::Virtual => VIRTUAL_DEFAULTS,
        Clock::Real => REAL_DEFAULTS,
    });
    let idle_timeout = args.idle_timeout.unwrap_or(defaults.idle_timeout);
    let request_timeout = args.request_timeout.unwrap_or(defaults.request_timeout);
    let slow_fraction = args.slow_fraction.unwrap_or(defaults.slow_fraction);
    let connections = args.connections.unwrap_or(defaults.connections);
    if connections == 0 || connections > u64::from(MAX_CONNECTIONS) {
        return Err(Error::Input(format!(
            "--connections must be in 1..={MAX_CONNECTIONS}, got {connections}"
        )));
    }
    let rate = args.rate.unwrap_or(defaults.rate);
    if !(rate.is_finite() && rate > 0.0) {
        return Err(Error::Input(format!(
            "--rate must be a positive number of requests per second, got {rate}"
        )));
    }
    if args.tick.is_zero() {
        return Err(Error::Input("--tick must be at least 1ns, got 0".into()));
    }
    let duration = args.duration.unwrap_or(defaults.duration);
    if duration < args.tick {
        return Err(Error::Input(format!(
            "--duration {duration:?} is shorter than one --tick ({:?}); nothing could be measured",
            args.tick
        )));
    }
    for (flag, timeout) in [
        ("--idle-timeout", idle_timeout),
        ("--request-timeout", request_timeout),
    ] {
        if timeout.is_zero() {
            return Err(Error::Input(format!(
                "{flag} must be positive, got 0 (a zero timeout fires at once)"
            )));
        }
    }
    if args.tick > idle_timeout.min(request_timeout) {
        return Err(Error::Input(format!(
            "--tick {:?} is longer than the shorter timeout ({:?}): every timer would round to \
             whole ticks longer than the timeout itself",
            args.tick,
            idle_timeout.min(request_timeout)
        )));
    }
    if !(0.0..=1.0).contains(&slow_fraction) {
        return Err(Error::Input(format!(
            "--slow-fraction is a share of responses and must be in [0, 1], got {slow_fraction}"
        )));
    }
    Ok(Workload {
        connections: connections as u32,
        rate,
        duration,
        idle_timeout,
        request_timeout,
        slow_fraction,
        tick: args.tick,
        seed: args.seed,
        handler_cost: args.handler_cost,
        herd: defaults.herd,
    })
}

/// `--service`'s producer-thread counts, `None` without it.
fn service(args: &LoadArgs, clock: Clock, connections: u32) -> Result<Option<Vec<usize>>, Error> {
    match (args.service, args.threads) {
        (false, None) => Ok(None),
        (false, Some(_)) => Err(Error::Input("--threads only applies with --service".into())),
        (true, _) if clock == Clock::Virtual => Err(Error::Input(
            "--service drives the threaded service in real time; add --clock real".into(),
        )),
        (true, threads) => {
            let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
            let threads = threads.unwrap_or(cores);
            if threads == 0 || threads > MAX_THREADS {
                return Err(Error::Input(format!(
                    "--threads must be in 1..={MAX_THREADS}, got {threads}"
                )));
            }
            if (connections as usize) < threads {
                return Err(Error::Input(format!(
                    "--connections ({connections}) must be at least --threads ({threads})"
                )));
            }
            Ok(Some(thread_counts(threads)))
        }
    }
}

/// Refuses a `--repeat` outside `1..=MAX_REPEAT`.
pub(crate) fn check_repeat(repeat: u32) -> Result<(), Error> {
    if (1..=MAX_REPEAT).contains(&repeat) {
        return Ok(());
    }
    Err(Error::Input(format!(
        "--repeat must be in 1..={MAX_REPEAT}, got {repeat}"
    )))
}

/// The most connections a run may model: connection ids share a `u64` payload with a flag bit,
/// and the per-connection table must fit in memory.
pub(crate) const MAX_CONNECTIONS: u32 = 100_000_000;

/// The largest `--slowdown` factor.
pub(crate) const MAX_SLOWDOWN: f64 = 10.0;

/// Refuses a `--slowdown` factor outside `1..=MAX_SLOWDOWN`.
pub(crate) fn check_slowdown(factor: f64) -> Result<(), Error> {
    if (1.0..=MAX_SLOWDOWN).contains(&factor) {
        return Ok(());
    }
    Err(Error::Input(format!(
        "--slowdown must be in 1..={MAX_SLOWDOWN} (1 is off), got {factor}"
    )))
}

/// The most runs `--repeat` may ask for per implementation.
pub(crate) const MAX_REPEAT: u32 = 100;

/// The longest `--handler-cost`: a loop busier than this per event models no server.
pub(crate) const MAX_HANDLER_COST: Duration = Duration::from_secs(1);

/// The most producer threads `--service` may start.
pub(crate) const MAX_THREADS: usize = 256;

/// The thread counts a `--threads n` run measures: powers of two below `n`, then `n`.
pub(crate) fn thread_counts(n: usize) -> Vec<usize> {
    let mut counts: Vec<usize> = std::iter::successors(Some(1usize), |t| t.checked_mul(2))
        .take_while(|&t| t < n)
        .collect();
    counts.push(n.max(1));
    counts
}

/// Creates `dir` if needed and proves a file can be written there, so an unwritable `--out` or
/// `--record` (`flag`) fails before the run rather than after a minute of load.
pub(crate) fn check_writable(flag: &'static str, dir: &PathBuf) -> Result<(), Error> {
    let refuse = |doing: &str, e: std::io::Error| {
        Error::Input(format!(
            "{flag} {}: {doing} the directory failed: {e}",
            dir.display()
        ))
    };
    fs::create_dir_all(dir).map_err(|e| refuse("creating", e))?;
    let probe = dir.join(".tickwheel-loadgen-write-test");
    fs::write(&probe, b"ok").map_err(|e| refuse("writing to", e))?;
    fs::remove_file(&probe).map_err(|e| Error::io("removing", &probe, e))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    /// The configuration of `compare` with `flags`, writing into a scratch `--out`.
    fn compare(flags: &[&str]) -> Config {
        let out = std::env::temp_dir().join(format!("tickwheel-config-{}", std::process::id()));
        let mut argv = vec![
            "tickwheel-loadgen",
            "compare",
            "--out",
            out.to_str().unwrap(),
        ];
        argv.extend_from_slice(flags);
        let crate::args::Command::Compare { load } = crate::args::Args::parse_from(argv).command
        else {
            unreachable!("parsed a compare")
        };
        Config::new("compare", Kind::ALL.to_vec(), &load, false).unwrap()
    }

    #[test]
    fn the_call_log_is_refused_up_front_when_it_would_not_fit() {
        // The default run: 30 s at 200,000 requests/s, about 30 million calls, 120 MB of log.
        let default = compare(&[]);
        assert!(default.check_memory(Some(1_000_000_000)).is_ok());
        let Err(Error::Input(message)) = default.check_memory(Some(200_000_000)) else {
            panic!("a 120 MB log in 100 MB of headroom must be refused");
        };
        assert!(
            message.contains("about 30 million timer calls"),
            "{message}"
        );
        assert!(message.contains("about 0.1 GB"), "{message}");
        // Without a charged pass (one repetition) there is no log to refuse.
        assert!(compare(&["--repeat", "1"]).check_memory(Some(1)).is_ok());
        // Nor where the system does not say how much memory is available.
        assert!(default.check_memory(None).is_ok());
    }

    #[test]
    fn thread_counts_double_up_to_n() {
        assert_eq!(thread_counts(1), [1]);
        assert_eq!(thread_counts(2), [1, 2]);
        assert_eq!(thread_counts(6), [1, 2, 4, 6]);
        assert_eq!(thread_counts(8), [1, 2, 4, 8]);
    }
}
