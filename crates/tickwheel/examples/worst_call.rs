//! The worst single call of each design in the nine cases that load one call the most, at a
//! million timers, with the work counter (`Stats::max_call_work`) beside the time:
//!
//! - **herd**: 1,000,000 timers; 100,000 of them refreshed together, so they all share one
//!   coarse slot, then every timer drained in deadline order;
//! - **one deadline**: 1,000,000 timers due at the same tick, drained;
//! - **far jump**: 1,000,000 timers spread over 2^33 ticks, drained by polls at a `now` past
//!   all of them;
//! - **farther jump**: the same over 2^40 ticks, past where a six-level wheel ends (2^36);
//! - **span crossing**: 1,000,000 timeouts up to 60 s out, started 30 s before tick 2^36 and
//!   polled whenever `next_deadline` asks;
//! - **churn**: 1,000,000 timers; 4,000,000 cancels, each followed by an insert at a random
//!   deadline up to 100 s out, with a poll every 100 operations (dead references pile up and
//!   are compacted);
//! - **io churn**: 1,000,000 timeouts up to 30 s out; 6,000,000 operations, a third of them
//!   keep-alive resets and the rest a cancel followed by an insert, with a poll every 200;
//! - **stall**: 1,000,000 timers due at one tick 60 s out, polled only there, as by a loop that
//!   slept through every earlier wake-up `next_deadline` asked for;
//! - **cancelled ahead**: 1,000,000 timers due at one tick, the first 500,000 cancelled, then
//!   polled every tick up to it.
//!
//! The hierarchical wheel bounds no call in the last: a poll reads every dead reference ahead
//! of the next live timer (see its module docs).
//!
//! ```sh
//! cargo run --release -p tickwheel --example worst_call
//! ```
//!
//! Every timer is preallocated, so no call pays for a vector's growth (an O(n) copy that any
//! design's insert may otherwise hit once per doubling). Every call is timed with `Instant`.
//! On a shared machine a preemption adds tens of µs or more to whichever call it lands in, so
//! the slowest call is mostly the machine's: read the work column for the bound, and the
//! counts of calls over 50 µs and 200 µs against the heap's in the same case (the heap's calls
//! are all short, so its counts are the machine's interruptions; a wheel's excess over them is
//! its own). Each case checks that every timer fires once, in order, never early.

use std::time::{Duration, Instant};

use tickwheel::{FromOptions, HashedWheel, HierarchicalWheel, IndexedHeap, Options, Tick, Timer};

const N: u64 = 1_000_000;

/// The slowest call of a case, and how many calls took longer than 50 µs and 200 µs.
#[derive(Default)]
struct Calls {
    slowest: Duration,
    over_50: u64,
    over_200: u64,
}

/// What one case measured on one implementation.
struct Worst {
    calls: Calls,
    work: u64,
    total: Duration,
}

impl Worst {
    /// What a case that began at `start` measured on `timer`.
    fn of<X: Timer<u64>>(timer: &X, calls: Calls, start: Instant) -> Self {
        Worst {
            calls,
            work: timer.stats().max_call_work,
            total: start.elapsed(),
        }
    }
}

/// Times `f` on `timer`, keeping the slowest call and counting the slow ones.
fn timed<X, R>(timer: &mut X, calls: &mut Calls, f: impl FnOnce(&mut X) -> R) -> R {
    let start = Instant::now();
    let r = f(timer);
    let took = start.elapsed();
    calls.slowest = calls.slowest.max(took);
    calls.over_50 += u64::from(took > Duration::from_micros(50));
    calls.over_200 += u64::from(took > Duration::from_micros(200));
    r
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

fn herd<X: Timer<u64> + FromOptions>() -> Worst {
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
    Worst::of(&t, calls, start)
}

fn one_deadline<X: Timer<u64> + FromOptions>() -> Worst {
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
    Worst::of(&t, calls, start)
}

/// 1,000,000 timers spread over `span` ticks, drained by polls at a `now` past all of them.
fn jump<X: Timer<u64> + FromOptions>(span: Tick) -> Worst {
    let mut t = fresh::<X>();
    let mut calls = Calls::default();
    let start = Instant::now();
    for i in 0..N {
        let d = 1 + (i.wrapping_mul(0x9E37_79B9_7F4A_7C15) % span);
        timed(&mut t, &mut calls, |t| t.insert(d, i)).unwrap();
    }
    let fired = drain(&mut t, span + 1, &mut calls);
    assert_eq!(fired, N);
    Worst::of(&t, calls, start)
}

fn far_jump<X: Timer<u64> + FromOptions>() -> Worst {
    jump::<X>(1 << 33)
}

fn farther_jump<X: Timer<u64> + FromOptions>() -> Worst {
    jump::<X>(1 << 40)
}

fn span_crossing<X: Timer<u64> + FromOptions>() -> Worst {
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
    Worst::of(&t, calls, start)
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
) -> Worst {
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
    Worst::of(&t, calls, start)
}

fn churn<X: Timer<u64> + FromOptions>() -> Worst {
    churn_with::<X>(0x9E37_79B9_7F4A_7C15, 100_000, 4 * N, 100, false)
}

fn io_churn<X: Timer<u64> + FromOptions>() -> Worst {
    churn_with::<X>(0x2545_F491_4F6C_DD1D, 30_000, 6 * N, 200, true)
}

fn stall<X: Timer<u64> + FromOptions>() -> Worst {
    let mut t = fresh::<X>();
    let mut calls = Calls::default();
    let start = Instant::now();
    for i in 0..N {
        timed(&mut t, &mut calls, |t| t.insert(60_000, i)).unwrap();
    }
    let fired = drain(&mut t, 60_000, &mut calls);
    assert_eq!(fired, N);
    Worst::of(&t, calls, start)
}

fn cancelled_ahead<X: Timer<u64> + FromOptions>() -> Worst {
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
    Worst::of(&t, calls, start)
}

fn row(case: &str, name: &str, w: &Worst) {
    println!(
        "{case:<16} {name:<13} {:>10.1} {:>8} {:>8} {:>10} {:>8.2}",
        w.calls.slowest.as_secs_f64() * 1e6,
        w.calls.over_50,
        w.calls.over_200,
        w.work,
        w.total.as_secs_f64()
    );
}

fn main() {
    println!("1,000,000 timers per case; worst single call (insert, reset or poll) by the clock, and by the work counter");
    println!(
        "{:<16} {:<13} {:>10} {:>8} {:>8} {:>10} {:>8}",
        "case", "timer", "worst µs", ">50 µs", ">200 µs", "max work", "total s"
    );
    type Hier = HierarchicalWheel<u64>;
    type Hashed = HashedWheel<u64>;
    type Heap = IndexedHeap<u64>;
    row("herd", "hierarchical", &herd::<Hier>());
    row("herd", "hashed", &herd::<Hashed>());
    row("herd", "heap", &herd::<Heap>());
    row("one deadline", "hierarchical", &one_deadline::<Hier>());
    row("one deadline", "hashed", &one_deadline::<Hashed>());
    row("one deadline", "heap", &one_deadline::<Heap>());
    row("far jump", "hierarchical", &far_jump::<Hier>());
    row("far jump", "hashed", &far_jump::<Hashed>());
    row("far jump", "heap", &far_jump::<Heap>());
    row("farther jump", "hierarchical", &farther_jump::<Hier>());
    row("farther jump", "hashed", &farther_jump::<Hashed>());
    row("farther jump", "heap", &farther_jump::<Heap>());
    row("span crossing", "hierarchical", &span_crossing::<Hier>());
    row("span crossing", "hashed", &span_crossing::<Hashed>());
    row("span crossing", "heap", &span_crossing::<Heap>());
    row("churn", "hierarchical", &churn::<Hier>());
    row("churn", "hashed", &churn::<Hashed>());
    row("churn", "heap", &churn::<Heap>());
    row("io churn", "hierarchical", &io_churn::<Hier>());
    row("io churn", "hashed", &io_churn::<Hashed>());
    row("io churn", "heap", &io_churn::<Heap>());
    row("stall", "hierarchical", &stall::<Hier>());
    row("stall", "hashed", &stall::<Hashed>());
    row("stall", "heap", &stall::<Heap>());
    row(
        "cancelled ahead",
        "hierarchical",
        &cancelled_ahead::<Hier>(),
    );
    row("cancelled ahead", "hashed", &cancelled_ahead::<Hashed>());
    row("cancelled ahead", "heap", &cancelled_ahead::<Heap>());
    println!("(max work: references moved, read or dropped and slots visited in one call; 0 on the heap, which counts none)");
}
