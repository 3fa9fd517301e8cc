//! The worst single call of each design in the cases that load one call the most, at a million
//! timers, with the work counter (`Stats::max_call_work`) and the design's stated bound
//! (`Timer::work_bound`) beside the time:
//!
//! - **herd**: 1,000,000 timers; 100,000 of them refreshed together, so they all share one
//!   coarse slot, then every timer drained in deadline order;
//! - **herd behind one**: one timer due at 4,950, then 100,000 due at 5,000 (the one case
//!   of 100,001 timers), polled whenever `next_deadline` asks;
//! - **one deadline**: 1,000,000 timers due at the same tick, drained;
//! - **far jump**: 1,000,000 timers spread over 2^33 ticks, drained by polls at a `now` past
//!   all of them;
//! - **farther jump**: the same over 2^40 ticks, past the hierarchical wheel's level 6
//!   (2^36 = 64^6);
//! - **level-6 crossing**: 1,000,000 timeouts up to 60 s out, started 30 s before tick 2^36 and
//!   polled whenever `next_deadline` asks;
//! - **churn**: 1,000,000 timers; 4,000,000 cancels, each followed by an insert at a random
//!   deadline up to 100 s out, with a poll every 100 operations (the lazy heap's dead elements
//!   pile up until it rebuilds);
//! - **io churn**: 1,000,000 timeouts up to 30 s out; 6,000,000 operations, a third of them
//!   keep-alive resets and the rest a cancel followed by an insert, with a poll every 200;
//! - **stall**: 1,000,000 timers due at one tick 60 s out, polled only there, as by a loop that
//!   slept through every earlier wake-up `next_deadline` asked for;
//! - **cancelled ahead**: 1,000,000 timers due at one tick, the first 500,000 cancelled, then
//!   polled every tick up to it;
//! - **cancelled behind one**: the same, but the 499,999 cancelled are the ones behind the
//!   first: the lazy heap's unbounded call, a fire that pops every dead element behind it;
//! - **rebuild**: 1,000,000 timers up to 100 s out; 800,000 of them cancelled in random order
//!   with a poll every 100 cancels, so the lazy heap's dead elements cross its rebuild
//!   threshold while timers keep firing; then the rest drained.
//!
//! ```sh
//! cargo run --release -p tickwheel --example worst_call          # 5 runs of each case
//! cargo run --release -p tickwheel --example worst_call -- 9     # 9 runs
//! ```
//!
//! Every timer is preallocated, so no call pays for a vector's growth (an O(n) copy that any
//! design's insert may otherwise hit once per doubling). Every call is timed with `Instant`.
//! On a shared machine a preemption adds tens of µs or more to whichever call it lands in, so
//! one run's slowest call is mostly the machine's. Each case is therefore run several times:
//! its calls are the same in every run (same operations, same order, same work, which the
//! example checks), so the time a call takes in its fastest run is what the call costs, and a
//! preemption must land on the same call in every run to show. The columns:
//!
//! - `worst µs`: the slowest call, each call taken at its fastest run;
//! - `>50 µs`: calls whose fastest run took longer than 50 µs;
//! - `1 run µs`: the slowest call seen in any single run, preemptions included;
//! - `max work`: `Stats::max_call_work` (the same in every run);
//! - `bound`: `Timer::work_bound` at the end of the run;
//! - `target`: whether `worst µs` is at most 20 µs for a wheel, 50 µs for a heap.
//!
//! Each case checks that every timer fires once, in order, never early.

use std::time::{Duration, Instant};

use tickwheel::{
    FromOptions, HashedWheel, HierarchicalWheel, IndexedHeap, LazyHeap, Options, Tick, Timer,
};

const N: u64 = 1_000_000;

/// Every call of one run of a case, in order: its time in ns.
#[derive(Default)]
struct Calls {
    ns: Vec<u32>,
}

/// What one run of a case measured on one implementation.
struct Run {
    calls: Calls,
    work: u64,
    bound: Option<u64>,
    total: Duration,
}

impl Run {
    /// What a run that began at `start` measured on `timer`.
    fn of<X: Timer<u64>>(timer: &X, calls: Calls, start: Instant) -> Self {
        Run {
            calls,
            work: timer.stats().max_call_work,
            bound: timer.work_bound(),
            total: start.elapsed(),
        }
    }
}

/// Times `f` on `timer`, recording the call.
fn timed<X, R>(timer: &mut X, calls: &mut Calls, f: impl FnOnce(&mut X) -> R) -> R {
    let start = Instant::now();
    let r = f(timer);
    let took = start.elapsed();
    calls
        .ns
        .push(u32::try_from(took.as_nanos()).unwrap_or(u32::MAX));
    r
}

/// What every run of a case measured on one implementation.
struct Worst {
    /// The slowest call, each call at its fastest run.
    slowest: Duration,
    /// Calls whose fastest run took longer than 50 µs.
    over_50: u64,
    /// The slowest call in any single run.
    one_run: Duration,
    work: u64,
    bound: Option<u64>,
    /// The median run's total time.
    total: Duration,
}

/// Runs `case` `runs` times and takes each call at its fastest run.
fn measure(runs: usize, case: impl Fn() -> Run) -> Worst {
    let mut fastest: Vec<u32> = Vec::new();
    let mut one_run = 0;
    let mut work = None;
    let mut bound = None;
    let mut totals = Vec::with_capacity(runs);
    for run in 0..runs {
        let r = case();
        one_run = one_run.max(r.calls.ns.iter().copied().max().unwrap_or(0));
        totals.push(r.total);
        if let Some(w) = work {
            assert_eq!(w, r.work, "the work differed between runs");
        }
        work = Some(r.work);
        bound = r.bound;
        if run == 0 {
            fastest = r.calls.ns;
        } else {
            assert_eq!(
                fastest.len(),
                r.calls.ns.len(),
                "the calls differed between runs"
            );
            for (f, &t) in fastest.iter_mut().zip(&r.calls.ns) {
                *f = (*f).min(t);
            }
        }
    }
    totals.sort();
    let ns = |t: u32| Duration::from_nanos(u64::from(t));
    Worst {
        slowest: ns(fastest.iter().copied().max().unwrap_or(0)),
        over_50: fastest.iter().filter(|&&t| t > 50_000).count() as u64,
        one_run: ns(one_run),
        work: work.unwrap_or(0),
        bound,
        total: totals[totals.len() / 2],
    }
}

/// Polls at `now` until nothing is due, checking order; returns how many fired.
fn drain<X: Timer<u64>>(timer: &mut X, now: Tick, calls: &mut Calls) -> u64 {
    let mut fired = 0;
    let mut last = 0;
    while let Some(e) = timed(timer, calls, |t| t.poll(now)) {
        assert!(e.deadline <= now, "fired early");
        assert!(e.deadline >= last, "out of order");
        last = e.deadline;
        fired += 1;
    }
    fired
}

/// A timer with room for every timer of a case.
fn fresh<X: FromOptions>() -> X {
    X::from_options(Options::new().preallocate(N as usize)).expect("valid options")
}

fn herd<X: Timer<u64> + FromOptions>() -> Run {
    let mut t = fresh::<X>();
    let mut calls = Calls::default();
    let start = Instant::now();
    // 900,000 timers over 10 s, and 100,000 more over the first second.
    let mut herd = Vec::with_capacity(100_000);
    for i in 0..N {
        let d = 1 + (i * 10_007) % 10_000;
        let key = timed(&mut t, &mut calls, |t| t.insert(d, i)).unwrap();
        if i % 10 == 0 {
            herd.push(key);
        }
    }
    // At 500 ms the herd is refreshed together to 30 s: all land in one coarse slot.
    let mut fired = drain(&mut t, 500, &mut calls);
    for key in herd {
        if t.deadline(key).is_some() {
            timed(&mut t, &mut calls, |t| t.reset(key, 30_500)).unwrap();
        }
    }
    // An event loop's ticks up to and past the herd's slot.
    for now in 501..=31_000 {
        fired += drain(&mut t, now, &mut calls);
    }
    assert_eq!(fired, N);
    let s = t.stats();
    assert_eq!(s.fired, N);
    Run::of(&t, calls, start)
}

/// One timer at 4,950, then 100,000 at 5,000, polled whenever `next_deadline` asks.
fn herd_behind_one<X: Timer<u64> + FromOptions>() -> Run {
    const HERD: u64 = 100_000;
    let mut t = fresh::<X>();
    let mut calls = Calls::default();
    let start = Instant::now();
    timed(&mut t, &mut calls, |t| t.insert(4_950, 0)).unwrap();
    for i in 1..=HERD {
        timed(&mut t, &mut calls, |t| t.insert(5_000, i)).unwrap();
    }
    let mut fired = 0;
    while let Some(now) = timed(&mut t, &mut calls, |t| t.next_deadline()) {
        fired += drain(&mut t, now, &mut calls);
    }
    assert_eq!(fired, HERD + 1);
    Run::of(&t, calls, start)
}

fn one_deadline<X: Timer<u64> + FromOptions>() -> Run {
    let mut t = fresh::<X>();
    let mut calls = Calls::default();
    let start = Instant::now();
    for i in 0..N {
        timed(&mut t, &mut calls, |t| t.insert(60_000, i)).unwrap();
    }
    let mut fired = 0;
    for now in 0..=60_000 {
        fired += drain(&mut t, now, &mut calls);
    }
    assert_eq!(fired, N);
    Run::of(&t, calls, start)
}

/// 1,000,000 timers spread over `span` ticks, drained by polls at a `now` past all of them.
fn jump<X: Timer<u64> + FromOptions>(span: Tick) -> Run {
    let mut t = fresh::<X>();
    let mut calls = Calls::default();
    let start = Instant::now();
    for i in 0..N {
        let d = 1 + (i.wrapping_mul(0x9E37_79B9_7F4A_7C15) % span);
        timed(&mut t, &mut calls, |t| t.insert(d, i)).unwrap();
    }
    let fired = drain(&mut t, span + 1, &mut calls);
    assert_eq!(fired, N);
    Run::of(&t, calls, start)
}

fn far_jump<X: Timer<u64> + FromOptions>() -> Run {
    jump::<X>(1 << 33)
}

fn farther_jump<X: Timer<u64> + FromOptions>() -> Run {
    jump::<X>(1 << 40)
}

fn level6_crossing<X: Timer<u64> + FromOptions>() -> Run {
    let origin: Tick = (1 << 36) - 30_000;
    let mut t =
        X::from_options(Options::new().preallocate(N as usize).start(origin)).expect("valid");
    let mut calls = Calls::default();
    let start = Instant::now();
    for i in 0..N {
        let d = origin + 1 + (i.wrapping_mul(0x9E37_79B9_7F4A_7C15) % 60_000);
        timed(&mut t, &mut calls, |t| t.insert(d, i)).unwrap();
    }
    let mut fired = 0;
    while let Some(now) = timed(&mut t, &mut calls, |t| t.next_deadline()) {
        fired += drain(&mut t, now, &mut calls);
    }
    assert_eq!(fired, N);
    Run::of(&t, calls, start)
}

/// A churn case: 1,000,000 timers due up to `horizon` ticks out, then `ops` operations, each
/// a cancel followed by an insert at a random deadline (or, for one in three with `resets`, a
/// keep-alive reset), with a poll every `poll_every`.
fn churn_with<X: Timer<u64> + FromOptions>(
    seed: u64,
    horizon: Tick,
    ops: u64,
    poll_every: u64,
    resets: bool,
) -> Run {
    let mut t = fresh::<X>();
    let mut calls = Calls::default();
    let start = Instant::now();
    let mut x: u64 = seed;
    let mut rnd = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut keys: Vec<_> = (0..N)
        .map(|i| timed(&mut t, &mut calls, |t| t.insert(1 + rnd() % horizon, i)).unwrap())
        .collect();
    let mut now = 0;
    let mut fired = 0;
    for op in 0..ops {
        let i = (rnd() % N) as usize;
        let deadline = now + 1 + rnd() % horizon;
        if resets && rnd() % 3 == 0 {
            // A keep-alive refresh (a fired timer's key is stale: nothing happens).
            let _ = timed(&mut t, &mut calls, |t| t.reset(keys[i], deadline));
        } else {
            timed(&mut t, &mut calls, |t| t.cancel(keys[i]));
            keys[i] = timed(&mut t, &mut calls, |t| t.insert(deadline, op)).unwrap();
        }
        if op % poll_every == 0 {
            now += 1;
            fired += drain(&mut t, now, &mut calls);
        }
    }
    // Every timer ends once: fired, cancelled (each cancel of a fired one finds nothing), or
    // still pending.
    let s = t.stats();
    assert_eq!(s.fired, fired);
    assert_eq!(s.inserted, s.fired + s.cancelled + t.len() as u64);
    Run::of(&t, calls, start)
}

fn churn<X: Timer<u64> + FromOptions>() -> Run {
    churn_with::<X>(0x9E37_79B9_7F4A_7C15, 100_000, 4 * N, 100, false)
}

fn io_churn<X: Timer<u64> + FromOptions>() -> Run {
    churn_with::<X>(0x2545_F491_4F6C_DD1D, 30_000, 6 * N, 200, true)
}

fn stall<X: Timer<u64> + FromOptions>() -> Run {
    let mut t = fresh::<X>();
    let mut calls = Calls::default();
    let start = Instant::now();
    for i in 0..N {
        timed(&mut t, &mut calls, |t| t.insert(60_000, i)).unwrap();
    }
    let fired = drain(&mut t, 60_000, &mut calls);
    assert_eq!(fired, N);
    Run::of(&t, calls, start)
}

fn cancelled_ahead<X: Timer<u64> + FromOptions>() -> Run {
    let mut t = fresh::<X>();
    let mut calls = Calls::default();
    let start = Instant::now();
    let keys: Vec<_> = (0..N)
        .map(|i| timed(&mut t, &mut calls, |t| t.insert(60_000, i)).unwrap())
        .collect();
    for &key in &keys[..N as usize / 2] {
        assert!(timed(&mut t, &mut calls, |t| t.cancel(key)).is_some());
    }
    let mut fired = 0;
    for now in 0..=60_000 {
        fired += drain(&mut t, now, &mut calls);
    }
    assert_eq!(fired, N / 2);
    Run::of(&t, calls, start)
}

/// 1,000,000 timers due at one tick; the 499,999 behind the first cancelled, in order: the
/// cancels tip the lazy heap's rebuild once, and the poll that fires the first pops the dead
/// elements left behind it since.
fn cancelled_behind_one<X: Timer<u64> + FromOptions>() -> Run {
    let mut t = fresh::<X>();
    let mut calls = Calls::default();
    let start = Instant::now();
    let keys: Vec<_> = (0..N)
        .map(|i| timed(&mut t, &mut calls, |t| t.insert(60_000, i)).unwrap())
        .collect();
    for &key in &keys[1..N as usize / 2] {
        assert!(timed(&mut t, &mut calls, |t| t.cancel(key)).is_some());
    }
    let fired = drain(&mut t, 60_000, &mut calls);
    assert_eq!(fired, N / 2 + 1);
    Run::of(&t, calls, start)
}

/// 1,000,000 timers up to 100 s out; 800,000 cancelled in random order with a poll every 100
/// cancels (the lazy heap's dead elements pass its rebuild threshold while timers fire), then
/// the rest drained.
fn rebuild<X: Timer<u64> + FromOptions>() -> Run {
    let mut t = fresh::<X>();
    let mut calls = Calls::default();
    let start = Instant::now();
    let mut x: u64 = 0x5851_F42D_4C95_7F2D;
    let mut rnd = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut keys: Vec<_> = (0..N)
        .map(|i| timed(&mut t, &mut calls, |t| t.insert(1 + rnd() % 100_000, i)).unwrap())
        .collect();
    // A Fisher-Yates shuffle: the cancel order.
    for i in (1..keys.len()).rev() {
        keys.swap(i, (rnd() % (i as u64 + 1)) as usize);
    }
    let (mut now, mut fired, mut cancelled) = (0, 0, 0);
    for (n, &key) in keys[..800_000].iter().enumerate() {
        if timed(&mut t, &mut calls, |t| t.cancel(key)).is_some() {
            cancelled += 1;
        }
        if n % 100 == 0 {
            now += 1;
            fired += drain(&mut t, now, &mut calls);
        }
    }
    fired += drain(&mut t, 100_000, &mut calls);
    assert_eq!(fired + cancelled, N);
    Run::of(&t, calls, start)
}

/// A row's name, the case run on its design, and the design's target.
type Design = (&'static str, fn() -> Run, Duration);

/// A case's rows: each design run `runs` times.
fn case(name: &str, runs: usize, designs: &[Design]) {
    for &(timer, run, target) in designs {
        let w = measure(runs, run);
        let met = if w.slowest <= target { "met" } else { "missed" };
        row(name, timer, &w, met);
    }
}

/// The slowest single call a wheel may take, and a heap.
const WHEEL_TARGET: Duration = Duration::from_micros(20);
const HEAP_TARGET: Duration = Duration::from_micros(50);

fn row(case: &str, timer: &str, w: &Worst, target: &str) {
    let bound = w.bound.map_or("-".to_string(), |b| b.to_string());
    println!(
        "{case:<20} {timer:<13} {:>9.1} {:>7} {:>9.1} {:>9} {:>9} {:>8.2}  {target}",
        w.slowest.as_secs_f64() * 1e6,
        w.over_50,
        w.one_run.as_secs_f64() * 1e6,
        w.work,
        bound,
        w.total.as_secs_f64()
    );
}

/// The cases the example knows, by name.
const CASES: [&str; 12] = [
    "herd",
    "herd behind one",
    "one deadline",
    "far jump",
    "farther jump",
    "level-6 crossing",
    "churn",
    "io churn",
    "stall",
    "cancelled ahead",
    "cancelled behind one",
    "rebuild",
];

/// `[RUNS] [CASE...]`: runs per case (5 unless given) and the cases to run (all unless
/// given; a case's name with `-` for its spaces, as in `io-churn`).
fn parse_args() -> Result<(usize, Vec<&'static str>), String> {
    let mut runs = 5;
    let mut cases = Vec::new();
    for (i, a) in std::env::args().skip(1).enumerate() {
        if i == 0 {
            if let Ok(n) = a.parse::<usize>() {
                if n == 0 {
                    return Err("the number of runs per case must be at least 1".into());
                }
                runs = n;
                continue;
            }
        }
        let name = a.replace('-', " ");
        match CASES.iter().find(|&&c| c == name) {
            Some(&c) => cases.push(c),
            None => {
                return Err(format!(
                    "no case {a:?}; the cases are {}",
                    CASES.map(|c| c.replace(' ', "-")).join(", ")
                ))
            }
        }
    }
    if cases.is_empty() {
        cases = CASES.to_vec();
    }
    Ok((runs, cases))
}

fn main() {
    let (runs, cases) = parse_args().unwrap_or_else(|e| {
        eprintln!("worst_call: {e}\nusage: worst_call [RUNS] [CASE...]");
        std::process::exit(2);
    });
    println!(
        "1,000,000 timers per case, {runs} runs each; the worst single call (insert, cancel, reset, poll or next_deadline), each call at its fastest run"
    );
    println!(
        "{:<20} {:<13} {:>9} {:>7} {:>9} {:>9} {:>9} {:>8}  target",
        "case", "timer", "worst µs", ">50 µs", "1 run µs", "max work", "bound", "total s"
    );
    macro_rules! rows {
        ($name:expr, $f:ident) => {
            case(
                $name,
                runs,
                &[
                    // In `Kind` order, named as the load generator names them.
                    ("hashed", $f::<HashedWheel<u64>>, WHEEL_TARGET),
                    ("hierarchical", $f::<HierarchicalWheel<u64>>, WHEEL_TARGET),
                    ("heap", $f::<IndexedHeap<u64>>, HEAP_TARGET),
                    ("lazy-heap", $f::<LazyHeap<u64>>, HEAP_TARGET),
                ],
            )
        };
    }
    for name in cases {
        match name {
            "herd" => rows!(name, herd),
            "herd behind one" => rows!(name, herd_behind_one),
            "one deadline" => rows!(name, one_deadline),
            "far jump" => rows!(name, far_jump),
            "farther jump" => rows!(name, farther_jump),
            "level-6 crossing" => rows!(name, level6_crossing),
            "churn" => rows!(name, churn),
            "io churn" => rows!(name, io_churn),
            "stall" => rows!(name, stall),
            "cancelled ahead" => rows!(name, cancelled_ahead),
            "cancelled behind one" => rows!(name, cancelled_behind_one),
            _ => rows!(name, rebuild),
        }
    }
    println!("(max work: Stats::max_call_work, each design's units (see its cost table); bound: Timer::work_bound; target: worst µs at most 20 µs for a wheel, 50 µs for a heap)");
}
