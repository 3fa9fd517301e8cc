//! `--cost simulated`: each implementation's pass under valgrind's cache simulator, counted
//! at the timer's own calls, so the figures repeat exactly.
//!
//! Wall-clock figures on a shared machine move by 10–20 % from one process to the next, and a
//! build's code and heap layout alone moves them by as much: more than the changes a gate must
//! see. A simulated CPU gives the same counts for the same binary and input on any x86-64
//! machine, busy or not.
//!
//! How it runs:
//! - The load generator starts itself again once per implementation, under
//!   `valgrind --tool=callgrind --cache-sim=yes`, at most as many at once as there are cores.
//!   Each child (told so by [`CHILD_ENV`]) runs one repetition of that implementation on the
//!   virtual clock with tick-exact lateness, into `OUT/<timer>/` (its report, and
//!   `callgrind.out` for `callgrind_annotate`).
//! - Collection is on only inside the functions of [`calls`], one per call
//!   kind (`--toggle-collect`): insert, cancel, reset, poll and next_deadline. The harness, the
//!   event generator and the cycle counter's reads are not counted.
//! - The simulated caches are fixed here ([`CACHES`]), not taken from the host, so a report
//!   made on one runner compares with one made on another.
//! - **Invariant: a child's figures depend on the build, the flags and the seed alone.** What
//!   the harness does between calls passes through the simulated caches too, so a child reads
//!   no clock ([`call_clock`]), starts with an empty environment and paths padded to one length
//!   ([`Launcher`]), and runs on a thread of its own ([`isolated`]), whose fresh allocator arena
//!   puts its memory on the same cache sets however its command line was parsed.
//! - Per implementation and call kind the report gives calls, instructions (`Ir`), L1 misses
//!   (instruction and data, read and write), last-level misses, and estimated cycles by one
//!   model: [`MODEL`].
//! - Without `--duration`, `compare` and `run` simulate [`SIMULATED_DURATION`] of the default
//!   workload instead of 30 s (see its doc for what that keeps and loses).
//!
//! [`judge()`] compares two such reports, per implementation and call kind, for `paired --cost
//! simulated` and `diff`: estimated cycles per call beyond the tolerance is a regression, and
//! different call counts mean the two runs did not make the same calls.

mod callgrind;
mod judge;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use tickwheel::Kind;

use crate::args::{self, CostKind, LatenessView};
use crate::calls;
use crate::counter::CallClock;
use crate::error::Error;
pub(crate) use callgrind::{Cost, MODEL};
pub(crate) use judge::{judge, render};

/// The environment variable that makes a process a simulated child: `<timer>:<out dir>`.
pub(crate) const CHILD_ENV: &str = "TICKWHEEL_LOADGEN_SIMULATED_CHILD";

/// The simulated caches, as valgrind's options: 32 KiB 8-way L1 instruction and data caches,
/// an 8 MiB 16-way last level, 64-byte lines (a common x86-64 server core's shape).
pub(crate) const CACHES: [(&str, &str); 3] = [
    ("--I1", "32768,8,64"),
    ("--D1", "32768,8,64"),
    ("--LL", "8388608,16,64"),
];

/// The run length `compare` and `run` simulate when `--duration` is not given: 12 s of the
/// default workload (100,000 connections, 200,000 requests/s), about 2 minutes per
/// implementation under callgrind on one core. It keeps the working set, every connection's
/// idle timer and the request deadlines in flight, so the caches see what the 30 s run's see;
/// it keeps the first two seconds of idle timeouts firing (the first at 10 s); it loses
/// the later 18 s, in which the mix of calls stays the same.
pub(crate) const SIMULATED_DURATION: Duration = Duration::from_secs(12);

/// One implementation's simulated figures.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct Simulated {
    /// The implementation's name.
    pub(crate) timer: String,
    /// Per call kind, in [`calls::KINDS`] order: insert, cancel, reset, poll, next_deadline.
    pub(crate) calls: Vec<(String, Cost)>,
    /// Every call kind together.
    pub(crate) total: Cost,
    /// The child run's counts, as its own report gives them.
    pub(crate) scheduled: u64,
    pub(crate) cancelled: u64,
    pub(crate) reset: u64,
    pub(crate) fired: u64,
    pub(crate) early_fires: u64,
}

/// `report.json` of a `--cost simulated` run.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct Report {
    /// `simulated`: what tells this report from a wall-clock one.
    pub(crate) cost: String,
    pub(crate) tool: String,
    pub(crate) version: String,
    /// The command line, as given.
    pub(crate) command: String,
    /// valgrind's `--version`.
    pub(crate) valgrind: String,
    /// The simulated caches, as valgrind's options.
    pub(crate) caches: Vec<String>,
    /// The estimated-cycles model.
    pub(crate) model: String,
    /// The first child's workload, as its report gives it.
    pub(crate) workload: Value,
    /// The first child's machine and build.
    pub(crate) context: Value,
    pub(crate) results: Vec<Simulated>,
}

/// The child this process is, when [`CHILD_ENV`] says so: its implementation and out dir.
///
/// # Errors
/// [`Error::Input`] when the variable is set but malformed.
pub(crate) fn child() -> Result<Option<(Kind, PathBuf)>, Error> {
    let Some(value) = std::env::var_os(CHILD_ENV) else {
        return Ok(None);
    };
    let value = value.to_string_lossy().into_owned();
    let bad = || Error::Input(format!("{CHILD_ENV}={value}: expected TIMER:DIR"));
    let (timer, dir) = value.split_once(':').ok_or_else(bad)?;
    let kind: Kind = timer.parse().map_err(|_| bad())?;
    Ok(Some((kind, PathBuf::from(dir))))
}

/// The command a simulated child runs: `kind` alone, once, on the virtual clock with
/// tick-exact lateness (deterministic, and nothing charged from valgrind-slowed timings), into
/// `dir`, its calls untimed (`--cost simulated` stays, and in a child means just that);
/// `compare` and `run` without `--duration` run [`SIMULATED_DURATION`].
pub(crate) fn as_child(command: args::Command, kind: Kind, dir: PathBuf) -> args::Command {
    match command {
        args::Command::Run { mut load, .. } | args::Command::Compare { mut load } => {
            load.repeat = 1;
            load.lateness = Some(LatenessView::Ticks);
            load.report.out = dir;
            load.duration.get_or_insert(SIMULATED_DURATION);
            args::Command::Run { timer: kind, load }
        }
        args::Command::Replay {
            trace,
            slowdown,
            mut report,
            ..
        } => {
            report.out = dir;
            args::Command::Replay {
                trace,
                timers: vec![kind],
                repeat: 1,
                lateness: LatenessView::Ticks,
                slowdown,
                report,
            }
        }
        other => other,
    }
}

/// Runs `work` as this process's whole job: in a simulated child on a thread of its own,
/// elsewhere on this one. A new thread allocates from a new arena of the C library's allocator
/// and runs on a stack of its own, so what the child's run allocates lands at the same
/// addresses, and on the same simulated cache sets, whatever the parsing of its command line
/// left behind on the main thread (flags given in another order, paths of other lengths).
pub(crate) fn isolated(
    work: impl FnOnce() -> Result<u8, Error> + Send + 'static,
) -> Result<u8, Error> {
    if std::env::var_os(CHILD_ENV).is_none() {
        return work();
    }
    match std::thread::Builder::new()
        .name("simulated".into())
        .stack_size(8 << 20)
        .spawn(work)
        .map_err(|e| Error::io("starting", "the simulated run's thread", e))?
        .join()
    {
        Ok(result) => result,
        Err(panic) => std::panic::resume_unwind(panic),
    }
}

/// valgrind's version, or a clear error saying how to install it.
///
/// # Errors
/// [`Error::Input`] when valgrind cannot be run.
pub(crate) fn valgrind_version() -> Result<String, Error> {
    let missing = |why: String| {
        Error::Input(format!(
            "--cost simulated runs each implementation under valgrind's cache simulator, and \
             valgrind {why}: install it (`apt-get install valgrind` on Debian or Ubuntu, `dnf \
             install valgrind` on Fedora), or use --cost wall"
        ))
    };
    let output = Command::new("valgrind")
        .arg("--version")
        .output()
        .map_err(|e| missing(format!("could not be run ({e})")))?;
    if !output.status.success() {
        return Err(missing(format!("--version failed ({})", output.status)));
    }
    Ok(String::from_utf8_lossy(&output.stdout).trim().to_string())
}

/// The clock that times the calls: none in a simulated child, whose calls a simulator counts.
pub(crate) fn call_clock(cost: CostKind) -> CallClock {
    match cost {
        CostKind::Wall => CallClock::new(),
        CostKind::Simulated => CallClock::untimed(),
    }
}

/// `run` or `compare` with `--cost simulated`: the flags checked as for a timed run, then each
/// implementation under callgrind.
pub(crate) fn load(
    command: &'static str,
    kinds: Vec<Kind>,
    load: &args::LoadArgs,
) -> Result<u8, Error> {
    let config = crate::config::Config::new(command, kinds, load, false)?;
    let refuse = |what: &str| {
        Err(Error::Input(format!(
            "--cost simulated counts one virtual-clock run of each implementation; {what}"
        )))
    };
    if config.clock == crate::config::Clock::Real || config.service.is_some() {
        return refuse("--clock real and --service measure the real clock: use --cost wall");
    }
    if config.record.is_some() {
        return refuse("--record it with --cost wall, then replay the trace with --cost simulated");
    }
    if load.profile == Some(crate::profile::Profile::All) {
        return refuse("give one --profile at a time");
    }
    if !(load.report.max_lateness.is_empty() && load.report.max_cost.is_empty()) {
        return refuse("--max-lateness and --max-cost judge timed runs: gate with `paired --cost simulated` or `diff`");
    }
    run(&config.kinds, &config.out)
}

/// Runs every implementation of `kinds` under callgrind (this same command line, each as a
/// child), writes `out/report.json`, prints the table; returns the exit code: 0, or 1 when a
/// child failed a check (its messages are shown) or the implementations' calls differ.
///
/// # Errors
/// [`Error::Input`] without valgrind; [`Error::Io`] when a file cannot be read or written.
pub(crate) fn run(kinds: &[Kind], out: &Path) -> Result<u8, Error> {
    let valgrind = valgrind_version()?;
    let launcher = Launcher::new()?;
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut children = Vec::new();
    for batch in kinds.chunks(cores) {
        let running = batch
            .iter()
            .map(|&kind| launcher.spawn(kind, out))
            .collect::<Result<Vec<_>, _>>()?;
        for child in running {
            children.push(child.finish()?);
        }
    }
    let failed = children.iter().any(|c| c.failed);
    let first = children
        .first()
        .map(|c| c.report.clone())
        .unwrap_or_default();
    let report = Report {
        cost: "simulated".into(),
        tool: "tickwheel-loadgen".into(),
        version: env!("CARGO_PKG_VERSION").into(),
        command: std::env::args().collect::<Vec<_>>().join(" "),
        valgrind,
        caches: CACHES.iter().map(|(o, v)| format!("{o}={v}")).collect(),
        model: MODEL.into(),
        workload: first["workload"].clone(),
        context: first["context"].clone(),
        results: children.into_iter().map(|c| c.figures).collect(),
    };
    let path = out.join("report.json");
    let text = serde_json::to_string_pretty(&report).expect("plain data serialises");
    std::fs::write(&path, text + "\n").map_err(|e| Error::io("writing", &path, e))?;
    print!("{}", table(&report));
    let differ = calls_differ(&report.results);
    if let Some(why) = &differ {
        println!("FAIL: {why}");
    }
    println!("wrote {}", path.display());
    Ok(u8::from(failed || differ.is_some()))
}

/// What every child is started with: valgrind, this executable and the arguments, each as
/// the child sees them.
struct Launcher {
    valgrind: PathBuf,
    exe: std::ffi::OsString,
    args: Vec<std::ffi::OsString>,
}

/// A child under valgrind, running.
struct Running {
    kind: Kind,
    dir: PathBuf,
    child: std::process::Child,
}

/// A child's figures, its report, and whether it failed a check.
struct Finished {
    figures: Simulated,
    report: Value,
    failed: bool,
}

impl Launcher {
    fn new() -> Result<Self, Error> {
        let exe =
            std::env::current_exe().map_err(|e| Error::io("finding", "this executable", e))?;
        Ok(Self {
            valgrind: on_path("valgrind")
                .ok_or_else(|| Error::Input("valgrind is not on PATH".into()))?,
            exe: padded(&exe),
            args: without_out(std::env::args_os().skip(1)),
        })
    }

    /// Starts `kind`'s child into `out/<timer>/`, with nothing in its environment but what
    /// tells it its part (the same layout on every machine).
    fn spawn(&self, kind: Kind, out: &Path) -> Result<Running, Error> {
        let dir = out.join(kind.name());
        std::fs::create_dir_all(&dir).map_err(|e| Error::io("creating", &dir, e))?;
        let dir = std::fs::canonicalize(&dir).map_err(|e| Error::io("finding", &dir, e))?;
        eprintln!("simulated: {} under callgrind", kind.name());
        let mut setting = std::ffi::OsString::from(format!("{}:", kind.name()));
        setting.push(padded(&dir.join("")));
        let child = Command::new(&self.valgrind)
            .args(valgrind_args(&dir.join("callgrind.out")))
            .arg(&self.exe)
            .args(&self.args)
            .env_clear()
            .env(CHILD_ENV, setting)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| Error::io("running", &self.valgrind, e))?;
        Ok(Running { kind, dir, child })
    }
}

impl Running {
    /// Waits for the child and reads its figures. Exit 1 (a failed check, its messages shown)
    /// still leaves figures; any other failure is an error.
    fn finish(self) -> Result<Finished, Error> {
        let name = self.kind.name();
        let output = self
            .child
            .wait_with_output()
            .map_err(|e| Error::io("running", "valgrind", e))?;
        let log = own_lines(&String::from_utf8_lossy(&output.stderr));
        let failed = match output.status.code() {
            Some(0) => false,
            Some(1) => {
                eprintln!("simulated: {name} failed a check:\n{log}");
                true
            }
            _ => {
                return Err(Error::Input(format!(
                    "{name} under valgrind failed ({}):\n{log}",
                    output.status
                )))
            }
        };
        let text = read(&self.dir.join("callgrind.out"))?;
        let report: Value = serde_json::from_str(&read(&self.dir.join("report.json"))?)
            .map_err(|e| Error::Input(format!("{}: {e}", self.dir.display())))?;
        Ok(Finished {
            figures: simulated(self.kind, &text, &report["results"][0]),
            report,
            failed,
        })
    }
}

/// Paths in a child's arguments and environment are padded to this many bytes.
const PADDED: usize = 1024;

/// `path` with slashes added before its last component up to [`PADDED`] bytes (`/a//b` is
/// `/a/b`): the child's process image then has the same layout whatever the directories are
/// called, so its stack, and what it allocates from them, lands on the same cache sets.
fn padded(path: &Path) -> std::ffi::OsString {
    let (dir, name) = match (path.parent(), path.file_name()) {
        (Some(dir), Some(name)) => (dir.as_os_str(), name),
        _ => return path.as_os_str().to_owned(),
    };
    let mut out = dir.to_owned();
    let used = dir.len() + name.len() + 1;
    out.push("/".repeat(PADDED.saturating_sub(used).max(1)));
    out.push(name);
    if path.as_os_str().to_string_lossy().ends_with('/') {
        out.push("/");
    }
    out
}

/// The arguments without `--out` and its value: a child's out directory comes in its
/// environment, padded.
fn without_out(args: impl Iterator<Item = std::ffi::OsString>) -> Vec<std::ffi::OsString> {
    let mut kept = Vec::new();
    let mut skip = false;
    for arg in args {
        if std::mem::take(&mut skip) {
            continue;
        }
        match arg.to_str() {
            Some("--out") => skip = true,
            Some(a) if a.starts_with("--out=") => {}
            _ => kept.push(arg),
        }
    }
    kept
}

/// `program`'s path on `PATH`.
fn on_path(program: &str) -> Option<PathBuf> {
    let paths = std::env::var_os("PATH")?;
    std::env::split_paths(&paths)
        .map(|dir| dir.join(program))
        .find(|p| p.is_file())
}

/// valgrind's options for one child writing `callgrind_out`.
fn valgrind_args(callgrind_out: &Path) -> Vec<String> {
    let mut args = vec![
        "--tool=callgrind".to_string(),
        "--cache-sim=yes".into(),
        "--collect-atstart=no".into(),
        format!("--toggle-collect={}", calls::TOGGLE),
        format!("--callgrind-out-file={}", callgrind_out.display()),
    ];
    args.extend(CACHES.iter().map(|(o, v)| format!("{o}={v}")));
    args
}

/// The child's own messages in valgrind's log: the lines valgrind did not prefix.
fn own_lines(log: &str) -> String {
    log.lines()
        .filter(|l| !l.starts_with("=="))
        .collect::<Vec<_>>()
        .join("\n")
}

fn read(path: &Path) -> Result<String, Error> {
    std::fs::read_to_string(path).map_err(|e| Error::io("reading", path, e))
}

/// One implementation's figures from its callgrind output and its report's result.
fn simulated(kind: Kind, callgrind: &str, result: &Value) -> Simulated {
    let by_fn = callgrind::parse(callgrind);
    let mut total = Cost::default();
    let calls = calls::KINDS
        .iter()
        .map(|(name, function)| {
            let cost = by_fn.get(*function).copied().unwrap_or_default();
            total.add(&cost);
            (name.to_string(), cost)
        })
        .collect();
    let count = |k: &str| result[k].as_u64().unwrap_or(0);
    Simulated {
        timer: kind.name().to_string(),
        calls,
        total,
        scheduled: count("scheduled"),
        cancelled: count("cancelled"),
        reset: count("reset"),
        fired: count("fired"),
        early_fires: count("early_fires"),
    }
}

/// Why the implementations' calls differ, if they do: the same seed makes the same inserts,
/// cancels and resets on every implementation. (Polls and `next_deadline`s may differ: a wheel's
/// `next_deadline` may name a slot boundary before the deadline, where the loop polls once more.)
fn calls_differ(results: &[Simulated]) -> Option<String> {
    let first = results.first()?;
    let counts = |s: &Simulated| {
        s.calls
            .iter()
            .take(3)
            .map(|(_, c)| c.calls)
            .collect::<Vec<_>>()
    };
    results
        .iter()
        .find(|s| counts(s) != counts(first))
        .map(|s| {
            format!(
                "{} made {:?} calls (insert, cancel, reset) and {} made {:?}: the same seed must \
             make the same calls",
                first.timer,
                counts(first),
                s.timer,
                counts(s)
            )
        })
}

/// The table a simulated run prints: per call kind, calls and estimated cycles per call, then
/// the totals with instructions and misses per call.
pub(crate) fn table(report: &Report) -> String {
    let mut s = format!(
        "simulated cost per call (callgrind; {}; {MODEL})\n{:<22}",
        report.caches.join(" "),
        ""
    );
    for r in &report.results {
        s += &format!(" {:>13}", r.timer);
    }
    s.push('\n');
    let row = |s: &mut String, label: &str, f: &dyn Fn(&Simulated) -> String| {
        *s += &format!("{label:<22}");
        for r in &report.results {
            *s += &format!(" {:>13}", f(r));
        }
        s.push('\n');
    };
    for (i, (kind, _)) in calls::KINDS.iter().enumerate() {
        row(&mut s, &format!("{kind} cycles"), &|r| {
            format!("{:.1}", r.calls[i].1.cycles_per_call())
        });
    }
    row(&mut s, "all calls: cycles", &|r| {
        format!("{:.1}", r.total.cycles_per_call())
    });
    let per = |v: u64, c: &Cost| v as f64 / c.calls.max(1) as f64;
    row(&mut s, "  instructions", &|r| {
        format!("{:.1}", per(r.total.instructions, &r.total))
    });
    row(&mut s, "  L1 misses", &|r| {
        format!("{:.3}", per(r.total.l1_misses, &r.total))
    });
    row(&mut s, "  LL misses", &|r| {
        format!("{:.4}", per(r.total.ll_misses, &r.total))
    });
    row(&mut s, "  calls", &|r| r.total.calls.to_string());
    row(&mut s, "fired", &|r| r.fired.to_string());
    row(&mut s, "early fires (must be 0)", &|r| {
        r.early_fires.to_string()
    });
    s
}

/// Reads a simulated `report.json`; `None` when the file is a wall-clock report.
///
/// # Errors
/// [`Error::Io`] when it cannot be read; [`Error::Input`] when it claims to be simulated but
/// does not parse as one.
pub(crate) fn read_report(path: &Path) -> Result<Option<Report>, Error> {
    let text = read(path)?;
    let value: Value = serde_json::from_str(&text)
        .map_err(|e| Error::Input(format!("{}: not a report ({e})", path.display())))?;
    if value.get("cost").and_then(Value::as_str) != Some("simulated") {
        return Ok(None);
    }
    serde_json::from_value(value)
        .map(Some)
        .map_err(|e| Error::Input(format!("{}: not a simulated report ({e})", path.display())))
}
