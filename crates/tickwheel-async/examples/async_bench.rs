//! Measures tickwheel-async's sleeps against the sleeps a user would pick instead, in one
//! process: `tokio::time::{sleep, timeout}`, `futures_timer::Delay` and `async_io::Timer`.
//!
//! ```text
//! cargo run --release -p tickwheel-async --example async_bench             # full, ~1-2 min
//! cargo run --release -p tickwheel-async --example async_bench -- --quick  # smoke run, seconds
//! cargo run --release -p tickwheel-async --example async_bench -- --burst  # [5] alone
//! ```
//!
//! 1. create + poll once + drop of a timer that does not fire, with 1,000,000 of the same
//!    peer's timers pending, from 1 and 2 tokio worker tasks;
//! 2. create + fire: 100,000 tasks each awaiting a 1-10 ms sleep, time until all fired;
//! 3. memory per pending sleep: RSS of 1,000,000 pending sleeps, each in a child process;
//! 4. wake lateness on the real clock: 20,000 sleeps with deadlines spread over 2 s;
//! 5. burst lateness: worker tasks create 100,000 sleeps of 1-50 ms per round in batches of
//!    1,000, polling their set after each batch, then await the rest; on 1 and 2 workers,
//!    with and without 1,000,000 of the same peer's sleeps pending; and a light load of
//!    10,000 per round with them pending.
//!
//! tickwheel-async's futures (like tokio's) arm their timer at the first poll that must wait,
//! so every measurement polls each timer once: what is timed is a registered timer.
//!
//! Every peer's futures run in the same place (tokio multi-thread runtime worker tasks), and
//! every count is asserted, so a broken run panics instead of printing numbers.

use std::future::Future;
use std::pin::Pin;
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, LazyLock, Mutex};
use std::task::{Context, Poll, Wake, Waker};
use std::thread::ThreadId;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use tickwheel_async::{AsyncTimers, Builder, Elapsed, Handle};
use tokio::runtime::Runtime;

/// The shards of the tickwheel-async service (one per worker of the largest runtime here).
const SHARDS: usize = 2;
/// How far out a timer that must not fire is armed.
const FAR: Duration = Duration::from_secs(3_600);
/// The memory probe's child-process flag.
const MEMORY_CHILD: &str = "--memory-child";

/// Sizes of one run.
#[derive(Clone, Copy, Debug)]
struct Config {
    quick: bool,
    /// [1]: timers pending while the loop runs.
    pending: usize,
    /// [1]: create + poll + drop per worker task per run.
    ops: usize,
    /// [1] and [2]: runs, of which the median is reported.
    runs: usize,
    /// [2]: sleeps created and fired per run.
    fire: usize,
    /// [3]: pending sleeps held.
    memory: usize,
    /// [4]: sleeps whose lateness is recorded.
    late: usize,
    /// [4]: the window their deadlines spread over.
    late_window: Duration,
    /// [5]: sleeps per round, over all worker tasks.
    burst: usize,
    /// [5]: rounds measured, after one warm-up round.
    burst_rounds: usize,
}

impl Config {
    const FULL: Self = Self {
        quick: false,
        pending: 1_000_000,
        ops: 200_000,
        runs: 5,
        fire: 100_000,
        memory: 1_000_000,
        late: 20_000,
        late_window: Duration::from_secs(2),
        burst: 100_000,
        burst_rounds: 5,
    };
    const QUICK: Self = Self {
        quick: true,
        pending: 50_000,
        ops: 20_000,
        runs: 3,
        fire: 10_000,
        memory: 100_000,
        late: 2_000,
        late_window: Duration::from_millis(300),
        burst: 10_000,
        burst_rounds: 2,
    };
}

/// The peers, by name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Peer {
    TwSleep,
    TwTimeout,
    TokioSleep,
    TokioTimeout,
    FuturesTimer,
    AsyncIo,
}

impl Peer {
    const ALL: [Self; 6] = [
        Self::TwSleep,
        Self::TwTimeout,
        Self::TokioSleep,
        Self::TokioTimeout,
        Self::FuturesTimer,
        Self::AsyncIo,
    ];
    /// The peers whose wake path differs (a timeout fires through the same timer as a sleep).
    const SLEEPS: [Self; 4] = [
        Self::TwSleep,
        Self::TokioSleep,
        Self::FuturesTimer,
        Self::AsyncIo,
    ];

    fn name(self) -> &'static str {
        match self {
            Self::TwSleep => "tickwheel-async handle.sleep",
            Self::TwTimeout => "tickwheel-async handle.timeout",
            Self::TokioSleep => "tokio::time::sleep",
            Self::TokioTimeout => "tokio::time::timeout",
            Self::FuturesTimer => "futures_timer::Delay",
            Self::AsyncIo => "async_io::Timer",
        }
    }

    /// The future's own size, as a task would hold it inline.
    fn size_of(self) -> usize {
        use std::mem::size_of;
        match self {
            Self::TwSleep => size_of::<tickwheel_async::Sleep>(),
            Self::TwTimeout => size_of::<tickwheel_async::Timeout<std::future::Pending<()>>>(),
            Self::TokioSleep => size_of::<tokio::time::Sleep>(),
            Self::TokioTimeout => size_of::<tokio::time::Timeout<std::future::Pending<()>>>(),
            Self::FuturesTimer => size_of::<futures_timer::Delay>(),
            Self::AsyncIo => size_of::<async_io::Timer>(),
        }
    }

    fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|p| p.name() == name)
    }
}

/// Makes one peer's futures; cheap to clone into every task.
trait Maker: Clone + Send + Sync + 'static {
    type Fut: Future + Send + 'static;
    /// A timer `d` from now.
    fn after(&self, d: Duration) -> Self::Fut;
    /// A timer at `deadline`.
    fn at(&self, deadline: Instant) -> Self::Fut;
    /// Whether a completed timer reports that it fired (and not an error).
    fn fired(out: &<Self::Fut as Future>::Output) -> bool;
    /// Timers pending in the service, where the peer can tell.
    fn pending(&self) -> Option<usize> {
        None
    }
}

#[derive(Clone)]
struct TwSleep(Handle);

impl Maker for TwSleep {
    type Fut = tickwheel_async::Sleep;
    fn after(&self, d: Duration) -> Self::Fut {
        self.0.sleep(d)
    }
    fn at(&self, deadline: Instant) -> Self::Fut {
        self.0.sleep_until(deadline)
    }
    fn fired(_: &()) -> bool {
        true
    }
    fn pending(&self) -> Option<usize> {
        Some(self.0.pending())
    }
}

#[derive(Clone)]
struct TwTimeout(Handle);

impl Maker for TwTimeout {
    type Fut = tickwheel_async::Timeout<std::future::Pending<()>>;
    fn after(&self, d: Duration) -> Self::Fut {
        self.0.timeout(d, std::future::pending())
    }
    fn at(&self, deadline: Instant) -> Self::Fut {
        self.0.timeout_at(deadline, std::future::pending())
    }
    fn fired(out: &Result<(), Elapsed>) -> bool {
        out.is_err()
    }
    fn pending(&self) -> Option<usize> {
        Some(self.0.pending())
    }
}

#[derive(Clone)]
struct TokioSleep;

impl Maker for TokioSleep {
    type Fut = tokio::time::Sleep;
    fn after(&self, d: Duration) -> Self::Fut {
        tokio::time::sleep(d)
    }
    fn at(&self, deadline: Instant) -> Self::Fut {
        tokio::time::sleep_until(deadline.into())
    }
    fn fired(_: &()) -> bool {
        true
    }
}

#[derive(Clone)]
struct TokioTimeout;

impl Maker for TokioTimeout {
    type Fut = tokio::time::Timeout<std::future::Pending<()>>;
    fn after(&self, d: Duration) -> Self::Fut {
        tokio::time::timeout(d, std::future::pending())
    }
    fn at(&self, deadline: Instant) -> Self::Fut {
        tokio::time::timeout_at(deadline.into(), std::future::pending())
    }
    fn fired(out: &Result<(), tokio::time::error::Elapsed>) -> bool {
        out.is_err()
    }
}

#[derive(Clone)]
struct FuturesTimer;

impl Maker for FuturesTimer {
    type Fut = futures_timer::Delay;
    fn after(&self, d: Duration) -> Self::Fut {
        futures_timer::Delay::new(d)
    }
    fn at(&self, deadline: Instant) -> Self::Fut {
        // No deadline constructor: the remaining time, measured now (so never before it).
        futures_timer::Delay::new(deadline.saturating_duration_since(Instant::now()))
    }
    fn fired(_: &()) -> bool {
        true
    }
}

#[derive(Clone)]
struct AsyncIo;

impl Maker for AsyncIo {
    type Fut = async_io::Timer;
    fn after(&self, d: Duration) -> Self::Fut {
        async_io::Timer::after(d)
    }
    fn at(&self, deadline: Instant) -> Self::Fut {
        async_io::Timer::at(deadline)
    }
    fn fired(_: &Instant) -> bool {
        true
    }
}

/// No timer at all: the cost of spawning and joining the tasks alone.
#[derive(Clone)]
struct NoTimer;

impl Maker for NoTimer {
    type Fut = std::future::Ready<()>;
    fn after(&self, _: Duration) -> Self::Fut {
        std::future::ready(())
    }
    fn at(&self, _: Instant) -> Self::Fut {
        std::future::ready(())
    }
    fn fired(_: &()) -> bool {
        true
    }
}

/// Runs `$body` with `$m` bound to `$peer`'s maker.
macro_rules! with_maker {
    ($peer:expr, $handle:expr, |$m:ident| $body:expr) => {
        match $peer {
            Peer::TwSleep => {
                let $m = TwSleep($handle.clone());
                $body
            }
            Peer::TwTimeout => {
                let $m = TwTimeout($handle.clone());
                $body
            }
            Peer::TokioSleep => {
                let $m = TokioSleep;
                $body
            }
            Peer::TokioTimeout => {
                let $m = TokioTimeout;
                $body
            }
            Peer::FuturesTimer => {
                let $m = FuturesTimer;
                $body
            }
            Peer::AsyncIo => {
                let $m = AsyncIo;
                $body
            }
        }
    };
}

// ---------------------------------------------------------------------------------------
// Process probes
// ---------------------------------------------------------------------------------------

/// CPU time of every thread of this process so far, in ns (the scheduler's own account:
/// the first field of each thread's `schedstat`). It counts the peers' helper and driver
/// threads, which the wall time of the measuring threads does not.
fn cpu_ns() -> u64 {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return 0;
    };
    tasks
        .flatten()
        .filter_map(|t| std::fs::read_to_string(t.path().join("schedstat")).ok())
        .filter_map(|s| s.split_whitespace().next()?.parse::<u64>().ok())
        .sum()
}

/// Resident set size, in bytes.
fn rss_bytes() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("read /proc/self/status");
    let line = status
        .lines()
        .find(|l| l.starts_with("VmRSS:"))
        .expect("VmRSS in /proc/self/status");
    let kb: u64 = line
        .split_whitespace()
        .nth(1)
        .and_then(|v| v.parse().ok())
        .expect("VmRSS value");
    kb * 1024
}

/// Waits until the process is idle (its background threads have caught up: futures-timer's
/// helper removing dropped timers, async-io's reactor draining its queue, a runtime's
/// workers parking): under 5% of a core over 50 ms, or 3 s at most.
fn settle() {
    let give_up = Instant::now() + Duration::from_secs(3);
    loop {
        let before = cpu_ns();
        std::thread::sleep(Duration::from_millis(50));
        if cpu_ns() - before < 2_500_000 || Instant::now() > give_up {
            return;
        }
    }
}

fn runtime(workers: usize) -> Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .enable_time()
        .build()
        .expect("tokio runtime")
}

/// Every task's output, in spawn order.
fn join_all<T>(rt: &Runtime, tasks: Vec<tokio::task::JoinHandle<T>>, what: &str) -> Vec<T> {
    rt.block_on(async {
        let mut out = Vec::with_capacity(tasks.len());
        for t in tasks {
            out.push(t.await.expect(what));
        }
        out
    })
}

fn tickwheel_builder() -> Builder {
    Builder::new().shards(SHARDS)
}

/// The `i`-th far-future deadline of a pending population: spread over one hour, one to
/// two hours out, so the population does not sit in one wheel slot or one heap path.
fn far(i: usize) -> Duration {
    FAR + Duration::from_millis((i % 3_600_000) as u64)
}

/// Spreads index `i` of `n` over `0..span` in a scrambled order (creation order is not
/// deadline order).
fn spread(i: usize, n: usize, span: Duration) -> Duration {
    let scrambled = (i as u64).wrapping_mul(7_919) % n as u64;
    span.mul_f64(scrambled as f64 / n as f64)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

fn thousands(n: usize) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A waker that does nothing (safe, and within the crate's MSRV, unlike `Waker::noop`).
struct Noop;

impl Wake for Noop {
    fn wake(self: Arc<Self>) {}
}

/// One shared noop waker: a clone of it is a reference-count increment, never an allocation.
static NOOP: LazyLock<Waker> = LazyLock::new(|| Waker::from(Arc::new(Noop)));

/// Boxes, pins and polls once (with a noop waker) a timer that must not fire yet.
fn armed<M: Maker>(m: &M, d: Duration) -> Pin<Box<M::Fut>> {
    let mut cx = Context::from_waker(&NOOP);
    let mut f = Box::pin(m.after(d));
    assert!(
        f.as_mut().poll(&mut cx).is_pending(),
        "a timer {d:?} out completed on its first poll"
    );
    f
}

// ---------------------------------------------------------------------------------------
// [1] create + poll + drop with a million pending
// ---------------------------------------------------------------------------------------

/// What one worker task of one run saw.
struct Lap {
    start: Instant,
    end: Instant,
    pending: usize,
    together: bool,
    thread: ThreadId,
}

/// One worker task's loop, inside one poll of the task (so its waker is the task's own).
fn churn<M: Maker>(
    m: &M,
    ops: usize,
    workers: usize,
    arrived: &AtomicUsize,
    cx: &mut Context<'_>,
) -> Lap {
    // Start together: spin (no yield, so no task switch) until every worker task is here.
    arrived.fetch_add(1, Ordering::SeqCst);
    let wait = Instant::now();
    while arrived.load(Ordering::SeqCst) < workers && wait.elapsed() < Duration::from_secs(2) {
        std::hint::spin_loop();
    }
    let together = arrived.load(Ordering::SeqCst) >= workers;
    let start = Instant::now();
    let mut pending = 0;
    for i in 0..ops {
        let mut f = std::pin::pin!(m.after(FAR + Duration::from_micros((i % 1_000) as u64)));
        if f.as_mut().poll(cx).is_pending() {
            pending += 1;
        }
    }
    Lap {
        start,
        end: Instant::now(),
        pending,
        together,
        thread: std::thread::current().id(),
    }
}

struct ChurnResult {
    peer: Peer,
    workers: usize,
    /// Wall ns per create+drop, per worker: run wall time / ops per task.
    ns: f64,
    ns_min: f64,
    ns_max: f64,
    /// All tasks' ops per second, in millions.
    mops: f64,
    /// CPU of all threads per op.
    cpu_ns: f64,
    /// Every run had its worker tasks on distinct threads, started together.
    parallel: bool,
}

fn create_drop<M: Maker>(
    peer: Peer,
    m: &M,
    rt: &Runtime,
    workers: usize,
    cfg: &Config,
) -> ChurnResult {
    let base = m.pending();
    let held: Vec<Pin<Box<M::Fut>>> = {
        let _in_runtime = rt.enter();
        (0..cfg.pending).map(|i| armed(m, far(i))).collect()
    };
    if let (Some(base), Some(now)) = (base, m.pending()) {
        assert_eq!(
            now,
            base + cfg.pending,
            "{}: pending population",
            peer.name()
        );
    }
    let (mut ns, mut cpus, mut mops) = (Vec::new(), Vec::new(), Vec::new());
    let mut parallel = true;
    for _ in 0..cfg.runs {
        settle();
        let arrived = Arc::new(AtomicUsize::new(0));
        let cpu0 = cpu_ns();
        let tasks: Vec<_> = (0..workers)
            .map(|_| {
                let (m, arrived, ops) = (m.clone(), Arc::clone(&arrived), cfg.ops);
                // Unconstrained: tokio's coop budget would otherwise make a tokio Sleep's
                // poll return Pending without registering, once the task's budget ran out.
                rt.spawn(tokio::task::unconstrained(std::future::poll_fn(
                    move |cx| Poll::Ready(churn(&m, ops, workers, &arrived, cx)),
                )))
            })
            .collect();
        let laps: Vec<Lap> = join_all(rt, tasks, "worker task");
        let cpu = cpu_ns() - cpu0;
        for lap in &laps {
            assert_eq!(
                lap.pending,
                cfg.ops,
                "{}: a timer completed early",
                peer.name()
            );
        }
        let mut threads: Vec<ThreadId> = laps.iter().map(|l| l.thread).collect();
        threads.sort_unstable_by_key(|t| format!("{t:?}"));
        threads.dedup();
        parallel &= threads.len() == workers && laps.iter().all(|l| l.together);
        let start = laps.iter().map(|l| l.start).min().expect("a lap");
        let end = laps.iter().map(|l| l.end).max().expect("a lap");
        let wall = (end - start).as_secs_f64();
        ns.push(wall * 1e9 / cfg.ops as f64);
        mops.push((workers * cfg.ops) as f64 / wall / 1e6);
        cpus.push(cpu as f64 / (workers * cfg.ops) as f64);
    }
    drop(held);
    if let (Some(base), Some(now)) = (base, m.pending()) {
        assert_eq!(now, base, "{}: drops did not cancel", peer.name());
    }
    settle();
    ChurnResult {
        peer,
        workers,
        ns_min: ns.iter().copied().fold(f64::INFINITY, f64::min),
        ns_max: ns.iter().copied().fold(0.0, f64::max),
        ns: median(ns),
        mops: median(mops),
        cpu_ns: median(cpus),
        parallel,
    }
}

fn measure_create_drop(handle: &Handle, cfg: &Config) {
    let mut results = Vec::new();
    for workers in [1, 2] {
        let rt = runtime(workers);
        for peer in Peer::ALL {
            results.push(with_maker!(peer, handle, |m| create_drop(
                peer, &m, &rt, workers, cfg
            )));
        }
    }
    println!(
        "\n[1] create + poll once + drop, timer {} s out, with {} of the same peer's timers pending",
        FAR.as_secs(),
        thousands(cfg.pending)
    );
    println!(
        "    driven by: a tokio multi-thread runtime of 1, then 2 workers; one task per worker (all \
         peers, tokio's and the others alike), each doing {} create+poll+drop per run in one poll \
         of the task (so with the task's own waker), under tokio::task::unconstrained; median of \
         {} runs",
        thousands(cfg.ops),
        cfg.runs
    );
    println!(
        "    the {} pending timers: boxed, pinned, polled once with a noop waker from the main \
         thread (inside the runtime's context), deadlines spread over 1-2 h",
        thousands(cfg.pending)
    );
    println!(
        "    ns/op: wall time of a run / ops per task (per worker: flat means it scales);  \
         Mops/s: all tasks' ops / wall;  CPU ns/op: CPU of every thread of the process \
         (workers, timer drivers, helper threads) / all ops"
    );
    println!();
    println!(
        "    {:<32} {:>7} {:>8} {:>10} {:>17} {:>8} {:>10}",
        "peer", "size_of", "workers", "ns/op", "ns/op min-max", "Mops/s", "CPU ns/op"
    );
    for r in &results {
        println!(
            "    {:<32} {:>7} {:>8} {:>10.1} {:>17} {:>8.2} {:>10.1}{}",
            r.peer.name(),
            r.peer.size_of(),
            r.workers,
            r.ns,
            format!("{:.1}-{:.1}", r.ns_min, r.ns_max),
            r.mops,
            r.cpu_ns,
            if r.parallel {
                ""
            } else {
                "  (tasks did not run on distinct workers at once)"
            }
        );
    }
}

// ---------------------------------------------------------------------------------------
// [2] create + fire
// ---------------------------------------------------------------------------------------

/// Spawns `n` tasks that each await a 1-10 ms timer; returns (wall, CPU ns) until all fired.
fn fire_run<M: Maker>(m: &M, rt: &Runtime, n: usize) -> (Duration, u64) {
    let fired = Arc::new(AtomicUsize::new(0));
    settle();
    let cpu0 = cpu_ns();
    let t0 = Instant::now();
    let (m2, f2) = (m.clone(), Arc::clone(&fired));
    let root = rt.spawn(async move {
        let mut tasks = Vec::with_capacity(n);
        for i in 0..n {
            let (m, fired) = (m2.clone(), Arc::clone(&f2));
            let d = Duration::from_millis(1) + spread(i, n, Duration::from_millis(9));
            tasks.push(tokio::spawn(async move {
                let out = m.after(d).await;
                if M::fired(&out) {
                    fired.fetch_add(1, Ordering::Relaxed);
                }
            }));
        }
        for t in tasks {
            t.await.expect("sleeping task");
        }
    });
    rt.block_on(root).expect("root task");
    let wall = t0.elapsed();
    let cpu = cpu_ns() - cpu0;
    assert_eq!(fired.load(Ordering::Relaxed), n, "fired count");
    (wall, cpu)
}

struct FireResult {
    name: &'static str,
    wall_ms: f64,
    wall_ns: f64,
    cpu_ns: f64,
    fired: usize,
}

fn fire<M: Maker>(name: &'static str, m: &M, rt: &Runtime, cfg: &Config) -> FireResult {
    let runs: Vec<(Duration, u64)> = (0..cfg.runs).map(|_| fire_run(m, rt, cfg.fire)).collect();
    let wall = median(runs.iter().map(|r| r.0.as_secs_f64()).collect());
    FireResult {
        name,
        wall_ms: wall * 1e3,
        wall_ns: wall * 1e9 / cfg.fire as f64,
        cpu_ns: median(runs.iter().map(|r| r.1 as f64).collect()) / cfg.fire as f64,
        fired: cfg.fire,
    }
}

fn measure_fire(handle: &Handle, rt: &Runtime, cfg: &Config) {
    let mut results = vec![fire("baseline: spawn + join, no timer", &NoTimer, rt, cfg)];
    for peer in Peer::ALL {
        results.push(with_maker!(peer, handle, |m| fire(
            peer.name(),
            &m,
            rt,
            cfg
        )));
    }
    println!(
        "\n[2] create + fire: {} tasks, each awaiting one timer of 1-10 ms (spread evenly, \
         scrambled), until all fired",
        thousands(cfg.fire)
    );
    println!(
        "    driven by: a tokio multi-thread runtime of 2 workers; one root task spawns the {} \
         tasks (each creates its timer when first polled) and joins them; median of {} runs",
        thousands(cfg.fire),
        cfg.runs
    );
    println!(
        "    wall: first spawn to last join (includes the >= 10 ms of the longest sleep);  \
         CPU ns/sleep: CPU of every thread of the process / sleeps;  every run asserts \
         fired == created"
    );
    println!();
    println!(
        "    {:<34} {:>9} {:>13} {:>13} {:>9}",
        "peer", "wall ms", "wall ns/sleep", "CPU ns/sleep", "fired"
    );
    for r in &results {
        println!(
            "    {:<34} {:>9.1} {:>13.1} {:>13.1} {:>9}",
            r.name,
            r.wall_ms,
            r.wall_ns,
            r.cpu_ns,
            thousands(r.fired)
        );
    }
}

// ---------------------------------------------------------------------------------------
// [3] memory per pending sleep
// ---------------------------------------------------------------------------------------

/// In a child process: holds `count` pending timers of `peer` and prints RSS before and after.
fn memory_child(peer: Peer, count: usize) {
    let rt = runtime(2);
    let timers = AsyncTimers::with_builder(tickwheel_builder()).expect("tickwheel-async timers");
    let handle = timers.handle();
    let (before, after) = with_maker!(peer, handle, |m| memory_probe(&m, &rt, count));
    println!("MEM {before} {after}");
    // Skip tearing down a million timers: the numbers are out.
    std::process::exit(0);
}

fn memory_probe<M: Maker>(m: &M, rt: &Runtime, count: usize) -> (u64, u64) {
    let _in_runtime = rt.enter();
    // Start what the peer starts lazily (helper thread, reactor, first allocations).
    drop(armed(m, FAR));
    // The holder's pointer array is written before the baseline, so it is not counted.
    let mut held: Vec<Option<Pin<Box<M::Fut>>>> =
        std::iter::repeat_with(|| None).take(count).collect();
    let base = m.pending();
    settle();
    let before = rss_bytes();
    for (i, slot) in held.iter_mut().enumerate() {
        *slot = Some(armed(m, far(i)));
    }
    settle();
    let after = rss_bytes();
    if let (Some(base), Some(now)) = (base, m.pending()) {
        assert_eq!(now, base + count, "pending count");
    }
    assert_eq!(held.iter().flatten().count(), count);
    (before, after)
}

fn measure_memory(cfg: &Config) {
    let exe = std::env::current_exe().expect("current exe");
    println!(
        "\n[3] memory per pending sleep: {} pending timers of one peer, each boxed and pinned \
         in a Vec, polled once (noop waker)",
        thousands(cfg.memory)
    );
    println!(
        "    driven by: one fresh child process per peer (no other peer's freed memory to \
         reuse), with a 2-worker tokio runtime and tickwheel-async built as below; timers made \
         and polled on the main thread inside the runtime's context"
    );
    println!(
        "    bytes/sleep = (VmRSS after - VmRSS before) / count, after the peer's background \
         threads settle; it includes the Box holding each future (size_of + malloc's header), \
         not the Vec's pointer array (written before the baseline)"
    );
    println!();
    println!(
        "    {:<32} {:>7} {:>14} {:>13} {:>12}",
        "peer", "size_of", "RSS before MB", "RSS after MB", "bytes/sleep"
    );
    for peer in Peer::ALL {
        let out = Command::new(&exe)
            .args([MEMORY_CHILD, peer.name(), &cfg.memory.to_string()])
            .output()
            .expect("run the memory child");
        assert!(
            out.status.success(),
            "memory child for {} failed: {}",
            peer.name(),
            String::from_utf8_lossy(&out.stderr)
        );
        let stdout = String::from_utf8_lossy(&out.stdout);
        let line = stdout
            .lines()
            .find_map(|l| l.strip_prefix("MEM "))
            .expect("the memory child's MEM line");
        let v: Vec<u64> = line
            .split_whitespace()
            .map(|x| x.parse().expect("a number"))
            .collect();
        let (before, after) = (v[0], v[1]);
        println!(
            "    {:<32} {:>7} {:>14.1} {:>13.1} {:>12.1}",
            peer.name(),
            peer.size_of(),
            before as f64 / 1e6,
            after as f64 / 1e6,
            after.saturating_sub(before) as f64 / cfg.memory as f64
        );
    }
}

// ---------------------------------------------------------------------------------------
// [4] wake lateness
// ---------------------------------------------------------------------------------------

/// A lateness histogram in ns: 1 ns to 60 s, 3 significant digits.
fn lateness_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 60_000_000_000, 3).expect("histogram")
}

struct Lateness {
    peer: Peer,
    hist: Histogram<u64>,
    early: usize,
}

fn lateness<M: Maker>(peer: Peer, m: &M, rt: &Runtime, cfg: &Config) -> Lateness {
    settle();
    let hist = Arc::new(Mutex::new(lateness_histogram()));
    let early = Arc::new(AtomicUsize::new(0));
    let fired = Arc::new(AtomicUsize::new(0));
    // Room to spawn every task before the first deadline.
    let start = Instant::now() + Duration::from_millis(100);
    let (n, window) = (cfg.late, cfg.late_window);
    let (m2, h2, e2, f2) = (
        m.clone(),
        Arc::clone(&hist),
        Arc::clone(&early),
        Arc::clone(&fired),
    );
    let root = rt.spawn(async move {
        let mut tasks = Vec::with_capacity(n);
        for i in 0..n {
            let (m, hist, early, fired) = (
                m2.clone(),
                Arc::clone(&h2),
                Arc::clone(&e2),
                Arc::clone(&f2),
            );
            let deadline = start + spread(i, n, window);
            tasks.push(tokio::spawn(async move {
                let out = m.at(deadline).await;
                let now = Instant::now();
                if now < deadline {
                    early.fetch_add(1, Ordering::Relaxed);
                }
                let late = now.saturating_duration_since(deadline).as_nanos();
                let late = u64::try_from(late).unwrap_or(u64::MAX).max(1);
                hist.lock().expect("histogram lock").saturating_record(late);
                if M::fired(&out) {
                    fired.fetch_add(1, Ordering::Relaxed);
                }
            }));
        }
        for t in tasks {
            t.await.expect("sleeping task");
        }
    });
    rt.block_on(root).expect("root task");
    assert_eq!(
        fired.load(Ordering::Relaxed),
        n,
        "{}: fired count",
        peer.name()
    );
    let hist = Arc::try_unwrap(hist)
        .unwrap_or_else(|_| panic!("{}: a task still holds the histogram", peer.name()))
        .into_inner()
        .expect("histogram lock");
    assert_eq!(hist.len(), n as u64, "{}: recorded count", peer.name());
    Lateness {
        peer,
        hist,
        early: early.load(Ordering::Relaxed),
    }
}

fn measure_lateness(handle: &Handle, rt: &Runtime, cfg: &Config) {
    let mut results = Vec::new();
    for peer in Peer::SLEEPS {
        results.push(with_maker!(peer, handle, |m| lateness(peer, &m, rt, cfg)));
    }
    println!(
        "\n[4] wake lateness on the real clock: {} sleeps, deadlines spread evenly over {:.1} s \
         (scrambled creation order); lateness = Instant::now() in the woken task - deadline",
        thousands(cfg.late),
        cfg.late_window.as_secs_f64()
    );
    println!(
        "    driven by: a tokio multi-thread runtime of 2 workers, one task per sleep (all \
         spawned before the first deadline); recorded into an hdrhistogram (ns, 3 digits); \
         sleep_until / timeout_at where the peer has it (futures-timer: Delay::new of the \
         remaining time); timeouts fire through the same timers as sleeps and are left out"
    );
    println!(
        "    tickwheel-async (1 ms ticks) and tokio (1 ms) round deadlines up to their tick, so \
         up to 1 ms of their lateness is that rounding; futures-timer and async-io keep the \
         exact instant"
    );
    println!();
    println!(
        "    {:<32} {:>9} {:>9} {:>10} {:>9} {:>6} {:>8}",
        "peer", "p50 us", "p99 us", "p99.9 us", "max us", "early", "fired"
    );
    for r in &results {
        let us = |q: f64| r.hist.value_at_quantile(q) as f64 / 1e3;
        println!(
            "    {:<32} {:>9.1} {:>9.1} {:>10.1} {:>9.1} {:>6} {:>8}",
            r.peer.name(),
            us(0.5),
            us(0.99),
            us(0.999),
            r.hist.max() as f64 / 1e3,
            r.early,
            thousands(r.hist.len() as usize)
        );
    }
}

// ---------------------------------------------------------------------------------------
// [5] burst lateness
// ---------------------------------------------------------------------------------------

/// [5]: sleeps a worker task creates between two polls of its set.
const BURST_BATCH: usize = 1_000;

/// What the sleeps of a burst saw: lateness (ns) as the awaiting future saw `Ready`.
struct BurstTally {
    hist: Histogram<u64>,
    early: usize,
}

impl BurstTally {
    fn new() -> Self {
        Self {
            hist: lateness_histogram(),
            early: 0,
        }
    }

    fn record(&mut self, (deadline, seen, fired): (Instant, Instant, bool)) {
        assert!(fired, "a burst sleep completed without firing");
        if seen < deadline {
            self.early += 1;
        }
        let late = u64::try_from(seen.saturating_duration_since(deadline).as_nanos());
        self.hist.saturating_record(late.unwrap_or(u64::MAX).max(1));
    }
}

/// One worker task of one round: `count` sleeps of 1-50 ms, made in batches of
/// [`BURST_BATCH`]; after each batch the task polls its set once (which registers the new
/// sleeps and collects the fired ones) and yields; then it awaits the rest.
async fn burst_task<M: Maker>(m: M, count: usize, salt: usize) -> BurstTally {
    use futures_util::stream::{FuturesUnordered, StreamExt};
    let mut tally = BurstTally::new();
    let mut set = FuturesUnordered::new();
    let mut made = 0;
    while made < count {
        for _ in 0..BURST_BATCH.min(count - made) {
            let scrambled = ((salt + made) as u64).wrapping_mul(7_919) % 49_000;
            let deadline = Instant::now() + Duration::from_micros(1_000 + scrambled);
            let sleep = m.at(deadline);
            set.push(async move {
                let out = sleep.await;
                (deadline, Instant::now(), M::fired(&out))
            });
            made += 1;
        }
        std::future::poll_fn(|cx| {
            while let Poll::Ready(Some(done)) = set.poll_next_unpin(cx) {
                tally.record(done);
            }
            Poll::Ready(())
        })
        .await;
        tokio::task::yield_now().await;
    }
    while let Some(done) = set.next().await {
        tally.record(done);
    }
    tally
}

struct BurstResult {
    peer: Peer,
    case: BurstCase,
    hist: Histogram<u64>,
    early: usize,
    cpu_ns: f64,
}

/// One burst case: `per_round` sleeps per round over `workers` tasks, with `pending` others.
#[derive(Clone, Copy)]
struct BurstCase {
    workers: usize,
    pending: usize,
    per_round: usize,
}

fn burst<M: Maker>(peer: Peer, m: &M, rt: &Runtime, case: BurstCase, cfg: &Config) -> BurstResult {
    let BurstCase {
        workers,
        pending,
        per_round,
    } = case;
    let held: Vec<Pin<Box<M::Fut>>> = {
        let _in_runtime = rt.enter();
        (0..pending).map(|i| armed(m, far(i))).collect()
    };
    let (mut total, mut cpu) = (BurstTally::new(), 0);
    for round in 0..=cfg.burst_rounds {
        settle();
        let cpu0 = cpu_ns();
        let tasks: Vec<_> = (0..workers)
            .map(|w| {
                let count = per_round / workers;
                let task = burst_task(m.clone(), count, (round * workers + w) * count);
                // Unconstrained, as in [1]: tokio's coop budget is not what is measured.
                rt.spawn(tokio::task::unconstrained(task))
            })
            .collect();
        let tallies: Vec<BurstTally> = join_all(rt, tasks, "burst task");
        if round == 0 {
            continue; // the warm-up round
        }
        cpu += cpu_ns() - cpu0;
        for t in tallies {
            total.early += t.early;
            total.hist.add(&t.hist).expect("histogram add");
        }
    }
    let sleeps = (per_round / workers * workers * cfg.burst_rounds) as u64;
    assert_eq!(
        total.hist.len(),
        sleeps,
        "{}: burst sleeps recorded",
        peer.name()
    );
    drop(held);
    settle();
    BurstResult {
        peer,
        case,
        hist: total.hist,
        early: total.early,
        cpu_ns: cpu as f64 / sleeps as f64,
    }
}

fn measure_burst(handle: &Handle, cfg: &Config) {
    let mut results = Vec::new();
    let mut drivers = Vec::new();
    for workers in [1, 2] {
        let rt = runtime(workers);
        // The burst, with and without others pending; then a light load of a tenth.
        let cases = [
            (cfg.pending, cfg.burst),
            (0, cfg.burst),
            (cfg.pending, cfg.burst / 10),
        ];
        for (pending, per_round) in cases {
            let case = BurstCase {
                workers,
                pending,
                per_round,
            };
            for peer in Peer::SLEEPS {
                let before = handle.stats().lateness_us;
                results.push(with_maker!(peer, handle, |m| burst(
                    peer, &m, &rt, case, cfg
                )));
                if peer == Peer::TwSleep {
                    // The service's own account: when a turn (the driver thread's, or a
                    // worker's through `take_due`) delivered each fire.
                    let mut fired = handle.stats().lateness_us;
                    fired
                        .subtract(&before)
                        .expect("the service's lateness only grows");
                    drivers.push((case, fired));
                }
            }
        }
    }
    println!(
        "\n[5] burst lateness on the real clock: per round, the worker tasks create {} sleeps of \
         1-50 ms between them ({} for the light load), in batches of {}, polling their set (a \
         FuturesUnordered) after each batch and yielding, then await the rest; {} rounds after \
         a warm-up",
        thousands(cfg.burst),
        thousands(cfg.burst / 10),
        thousands(BURST_BATCH),
        cfg.burst_rounds
    );
    println!(
        "    driven by: a tokio multi-thread runtime of 1, then 2 workers, one task per worker \
         under tokio::task::unconstrained; lateness = Instant::now() as the awaiting future sees \
         Ready - deadline (ns, 3 digits); CPU: every thread of the process / burst sleeps"
    );
    println!();
    println!(
        "    {:<32} {:>7} {:>9} {:>9} {:>9} {:>9} {:>10} {:>9} {:>6} {:>11}",
        "peer",
        "workers",
        "pending",
        "per round",
        "p50 us",
        "p99 us",
        "p99.9 us",
        "max us",
        "early",
        "CPU ns/slp"
    );
    for r in &results {
        let us = |q: f64| r.hist.value_at_quantile(q) as f64 / 1e3;
        println!(
            "    {:<32} {:>7} {:>9} {:>9} {:>9.1} {:>9.1} {:>10.1} {:>9.1} {:>6} {:>11.0}",
            r.peer.name(),
            r.case.workers,
            thousands(r.case.pending),
            thousands(r.case.per_round),
            us(0.5),
            us(0.99),
            us(0.999),
            r.hist.max() as f64 / 1e3,
            r.early,
            r.cpu_ns
        );
    }
    println!(
        "\n    tickwheel-async's turns alone (the service's lateness histogram: delivery time - \
         deadline, by the driver thread or a worker's take_due, warm-up round included), us:"
    );
    for (case, h) in &drivers {
        println!(
            "    {:<32} {:>7} {:>9} {:>9} {:>9} {:>9} {:>10} {:>9}",
            "  service delivery",
            case.workers,
            thousands(case.pending),
            thousands(case.per_round),
            h.value_at_quantile(0.5),
            h.value_at_quantile(0.99),
            h.value_at_quantile(0.999),
            h.max()
        );
    }
}

// ---------------------------------------------------------------------------------------

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some(MEMORY_CHILD) {
        let peer = args
            .get(1)
            .and_then(|n| Peer::from_name(n))
            .expect("a peer name");
        let count = args.get(2).and_then(|c| c.parse().ok()).expect("a count");
        memory_child(peer, count);
        return;
    }
    let quick = args.iter().any(|a| a == "--quick");
    let burst_only = args.iter().any(|a| a == "--burst");
    if args.iter().any(|a| a != "--quick" && a != "--burst") {
        eprintln!("usage: async_bench [--quick] [--burst]");
        std::process::exit(2);
    }
    let cfg = if quick { Config::QUICK } else { Config::FULL };
    let began = Instant::now();
    // A thread's schedstat is brought up to date when it is switched out: spin, then sleep.
    while began.elapsed() < Duration::from_millis(20) {
        std::hint::spin_loop();
    }
    std::thread::sleep(Duration::from_millis(1));
    assert!(
        cpu_ns() > 0,
        "needs /proc/self/task/*/schedstat for CPU time"
    );
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());

    println!("tickwheel-async vs the async sleeps a user would pick instead (one process)");
    println!(
        "    mode: {}; {} cores; tickwheel-async: AsyncTimers::with_builder(Builder::new().shards({})) \
         (1 ms ticks, no preallocation, its own driver thread)",
        if cfg.quick { "--quick" } else { "full" },
        cores,
        SHARDS
    );
    println!(
        "    peers: tokio 1 time::sleep / time::timeout (the runtime's timer driver, 1 ms), \
         futures-timer 3 Delay (a global helper thread, binary heap), async-io 2 Timer (its \
         reactor thread, BTreeMap behind an op queue)"
    );

    let timers = AsyncTimers::with_builder(tickwheel_builder()).expect("tickwheel-async timers");
    let handle = timers.handle();

    if !burst_only {
        measure_create_drop(&handle, &cfg);
        let rt = runtime(2);
        measure_fire(&handle, &rt, &cfg);
        measure_memory(&cfg);
        measure_lateness(&handle, &rt, &cfg);
    }
    measure_burst(&handle, &cfg);

    assert_eq!(handle.pending(), 0, "tickwheel-async timers left pending");
    let stats = handle.stats();
    println!(
        "\ntickwheel-async service totals: scheduled {}, cancelled {}, fired {}",
        stats.scheduled, stats.cancelled, stats.fired
    );
    println!("total run time {:.1} s", began.elapsed().as_secs_f64());
}
