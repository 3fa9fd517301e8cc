//! The contract suite: one expectation per function, run against any [`Timer`].
//!
//! Each function takes a constructor (`Fn(Options) -> X`) and panics with a message naming the
//! implementation when the contract is broken. [`contract_suite!`]
//! instantiates every case as a `#[test]`, so a failure names the implementation and the case.
//! The crate runs it for all four designs; run it for your own `Timer` the same way:
//!
//! ```
//! use tickwheel::{contract, FromOptions, HierarchicalWheel, Options};
//!
//! let make = |o: Options| HierarchicalWheel::<u64>::from_options(o).unwrap();
//! contract::fires_in_order(&make);
//! contract::stale_key_after_slot_reuse(&make);
//! ```

use alloc::vec::Vec;

use crate::{ConfigError, Expired, InsertError, Options, StaleKeyError, Tick, Timer};

/// Ten years of 1 ms ticks.
pub const TEN_YEARS: Tick = 10 * 365 * 24 * 3600 * 1000;

/// Polls at `now` until nothing is left, checking invariants after each call; returns what fired.
pub fn poll_all<X: Timer<u64>>(timer: &mut X, now: Tick) -> Vec<Expired<u64>> {
    let mut out = Vec::new();
    while let Some(e) = timer.poll(now) {
        timer.check_invariants();
        out.push(e);
    }
    timer.check_invariants();
    out
}

/// Polls at `now` until nothing is left, checking invariants once at the end.
fn fire_due<X: Timer<u64>>(timer: &mut X, now: Tick) -> Vec<Expired<u64>> {
    let out: Vec<_> = core::iter::from_fn(|| timer.poll(now)).collect();
    timer.check_invariants();
    out
}

fn payloads(fired: &[Expired<u64>]) -> Vec<u64> {
    fired.iter().map(|e| e.payload).collect()
}

/// Deadline order, equal deadlines first-in first-out, and nothing early.
///
/// # Panics
/// When the implementation breaks the contract.
pub fn fires_in_order<X: Timer<u64>>(make: &dyn Fn(Options) -> X) {
    let mut t = make(Options::new());
    for (payload, deadline) in [
        (0, 50),
        (1, 10),
        (2, 50),
        (3, 10),
        (4, 4096),
        (5, 64),
        (6, 10),
    ] {
        t.insert(deadline, payload).unwrap();
    }
    assert_eq!(t.len(), 7);
    assert!(t.poll(9).is_none(), "{}: fired before 10", t.name());
    let fired = poll_all(&mut t, 64);
    assert_eq!(payloads(&fired), [1, 3, 6, 0, 2, 5], "{}: order", t.name());
    for e in &fired {
        assert!(e.deadline <= 64);
    }
    assert!(t.poll(4095).is_none(), "{}: fired before 4096", t.name());
    assert_eq!(payloads(&poll_all(&mut t, 5000)), [4], "{}", t.name());
    assert!(t.is_empty());
    assert_eq!(t.next_deadline(), None, "{}: empty answers None", t.name());
}

/// A reset orders as a new insertion among equal deadlines.
///
/// # Panics
/// When the implementation breaks the contract.
pub fn reset_counts_as_new_insertion<X: Timer<u64>>(make: &dyn Fn(Options) -> X) {
    let mut t = make(Options::new());
    let a = t.insert(100, 0).unwrap();
    t.insert(100, 1).unwrap();
    t.reset(a, 100).unwrap();
    t.insert(100, 2).unwrap();
    assert_eq!(payloads(&poll_all(&mut t, 100)), [1, 0, 2], "{}", t.name());
}

/// A key whose slot was reused by another timer touches nothing.
///
/// # Panics
/// When the implementation breaks the contract.
pub fn stale_key_after_slot_reuse<X: Timer<u64>>(make: &dyn Fn(Options) -> X) {
    let mut t = make(Options::new());
    let a = t.insert(10, 1).unwrap();
    assert_eq!(t.cancel(a), Some(1));
    let b = t.insert(20, 2).unwrap();
    assert_eq!(
        a.index(),
        b.index(),
        "{}: the slot should be reused",
        t.name()
    );
    assert_eq!(t.cancel(a), None, "{}: stale cancel", t.name());
    assert_eq!(t.reset(a, 5), Err(StaleKeyError { key: a }), "{}", t.name());
    assert_eq!(t.deadline(a), None);
    assert_eq!(t.get(a), None);
    assert_eq!(
        t.deadline(b),
        Some(20),
        "{}: the new timer was touched",
        t.name()
    );
    assert_eq!(t.get(b), Some(&2));
    // And after a fire.
    let fired = poll_all(&mut t, 20);
    assert_eq!(fired.len(), 1);
    assert_eq!(fired[0].key, b);
    assert_eq!(t.cancel(b), None, "{}: cancel after fire", t.name());
    assert!(t.reset(b, 30).is_err(), "{}: reset after fire", t.name());
    let c = t.insert(30, 3).unwrap();
    assert_eq!(t.cancel(b), None);
    assert_eq!(t.get(c), Some(&3));
    t.check_invariants();
}

/// A key issued by another timer touches nothing, even where the two timers' slots line up.
///
/// # Panics
/// When the implementation breaks the contract.
pub fn foreign_key_is_refused<X: Timer<u64>>(make: &dyn Fn(Options) -> X) {
    let mut a = make(Options::new());
    let mut b = make(Options::new());
    let mine = a.insert(100, 1).unwrap();
    let theirs = b.insert(200, 1_000).unwrap();
    assert_eq!(mine.index(), theirs.index(), "{}: both in slot 0", a.name());
    assert_eq!(a.cancel(theirs), None, "{}: foreign cancel", a.name());
    assert_eq!(
        a.reset(theirs, 5),
        Err(StaleKeyError { key: theirs }),
        "{}: foreign reset",
        a.name()
    );
    assert_eq!(a.deadline(theirs), None);
    assert_eq!(a.get(theirs), None);
    assert_eq!(
        a.deadline(mine),
        Some(100),
        "{}: own timer touched",
        a.name()
    );
    assert_eq!(
        b.cancel(theirs),
        Some(1_000),
        "{}: the key still works at home",
        b.name()
    );
    // Still refused after the slot has been reused a few times on either side.
    assert_eq!(a.cancel(mine), Some(1));
    for i in 0..100 {
        let k = a.insert(10, i).unwrap();
        assert_eq!(a.cancel(theirs), None);
        assert_eq!(a.cancel(k), Some(i));
    }
    a.check_invariants();
}

/// Cancelling and resetting the earliest timer.
///
/// # Panics
/// When the implementation breaks the contract.
pub fn cancel_and_reset_earliest<X: Timer<u64>>(make: &dyn Fn(Options) -> X) {
    let mut t = make(Options::new());
    let first = t.insert(5, 0).unwrap();
    let second = t.insert(7, 1).unwrap();
    t.insert(9, 2).unwrap();
    assert!(t.next_deadline().unwrap() <= 5);
    assert_eq!(t.cancel(first), Some(0));
    t.check_invariants();
    assert!(t.next_deadline().unwrap() <= 7, "{}", t.name());
    t.reset(second, 100).unwrap();
    t.check_invariants();
    assert!(t.next_deadline().unwrap() <= 9, "{}", t.name());
    assert_eq!(payloads(&poll_all(&mut t, 99)), [2], "{}", t.name());
    assert_eq!(payloads(&poll_all(&mut t, 100)), [1], "{}", t.name());
}

/// Reset earlier, later, to the past, and after fire.
///
/// # Panics
/// When the implementation breaks the contract.
pub fn reset_earlier_later_past_after_fire<X: Timer<u64>>(make: &dyn Fn(Options) -> X) {
    let mut t = make(Options::new());
    poll_all(&mut t, 1000);
    let early = t.insert(5000, 0).unwrap();
    let late = t.insert(1100, 1).unwrap();
    let past = t.insert(9000, 2).unwrap();
    t.reset(early, 1050).unwrap(); // earlier
    t.reset(late, 200_000).unwrap(); // later, onto a coarser level
    t.reset(past, 10).unwrap(); // to the past: due at the next poll
    assert_eq!(t.deadline(past), Some(10));
    assert_eq!(t.next_deadline(), Some(10), "{}", t.name());
    assert_eq!(payloads(&poll_all(&mut t, 1000)), [2], "{}", t.name());
    assert_eq!(payloads(&poll_all(&mut t, 1050)), [0], "{}", t.name());
    assert!(t.poll(199_999).is_none(), "{}: early after reset", t.name());
    let fired = poll_all(&mut t, 200_000);
    assert_eq!(payloads(&fired), [1]);
    assert!(t.reset(late, 5).is_err(), "{}: reset after fire", t.name());
    assert!(t.is_empty());
}

/// Past deadlines fire at the next poll; `u64::MAX` is accepted and fires only at `u64::MAX`.
///
/// # Panics
/// When the implementation breaks the contract.
pub fn past_and_max_deadlines<X: Timer<u64>>(make: &dyn Fn(Options) -> X) {
    let mut t = make(Options::new().start(1_000_000));
    t.insert(0, 0).unwrap();
    t.insert(999_999, 1).unwrap();
    t.insert(1_000_000, 2).unwrap();
    let max = t.insert(Tick::MAX, 3).unwrap();
    assert_eq!(t.next_deadline(), Some(0), "{}", t.name());
    assert_eq!(
        payloads(&poll_all(&mut t, 0)),
        [0, 1, 2],
        "{}: past",
        t.name()
    );
    assert!(
        t.poll(Tick::MAX - 1).is_none(),
        "{}: u64::MAX early",
        t.name()
    );
    assert!(
        t.next_deadline().is_some(),
        "{}: pending timer but no next deadline",
        t.name()
    );
    assert_eq!(t.deadline(max), Some(Tick::MAX));
    assert_eq!(payloads(&poll_all(&mut t, Tick::MAX)), [3], "{}", t.name());
    // At the end of time everything is due at once and nothing breaks.
    t.insert(Tick::MAX, 4).unwrap();
    t.insert(5, 5).unwrap();
    assert_eq!(payloads(&poll_all(&mut t, 0)), [5, 4], "{}", t.name());
    assert_eq!(t.now(), Tick::MAX);
}

/// A `now` lower than before counts as the earlier `now`.
///
/// # Panics
/// When the implementation breaks the contract.
pub fn now_never_goes_back<X: Timer<u64>>(make: &dyn Fn(Options) -> X) {
    let mut t = make(Options::new());
    assert!(t.poll(100).is_none());
    t.insert(80, 0).unwrap();
    t.insert(150, 1).unwrap();
    assert_eq!(payloads(&poll_all(&mut t, 50)), [0], "{}", t.name());
    assert_eq!(t.now(), 100);
    assert!(t.poll(149).is_none());
    assert_eq!(payloads(&poll_all(&mut t, 150)), [1]);
}

/// A clock that starts at a large tick value (a long uptime) and a ten-year jump in one poll.
///
/// # Panics
/// When the implementation breaks the contract.
pub fn long_uptime_and_ten_year_jump<X: Timer<u64>>(make: &dyn Fn(Options) -> X) {
    for start in [1u64 << 40, (1u64 << 62) + 12_345, Tick::MAX - 2 * TEN_YEARS] {
        let mut t = make(Options::new().start(start));
        let mut expect = Vec::new();
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        for i in 0..500u64 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let deadline = start + x % TEN_YEARS;
            t.insert(deadline, i).unwrap();
            expect.push((deadline, i));
        }
        t.insert(start + TEN_YEARS, 500).unwrap();
        expect.push((start + TEN_YEARS, 500));
        expect.sort();
        t.check_invariants();
        let fired = poll_all(&mut t, start + TEN_YEARS);
        let got: Vec<_> = fired.iter().map(|e| (e.deadline, e.payload)).collect();
        assert_eq!(got, expect, "{}: ten-year jump from {start}", t.name());
        assert!(t.is_empty());
    }
}

/// Polling at irregular steps never fires early, never skips, keeps order.
///
/// # Panics
/// When the implementation breaks the contract.
pub fn irregular_polling<X: Timer<u64>>(make: &dyn Fn(Options) -> X) {
    let mut t = make(Options::new());
    let mut x = 12345u64;
    let mut rnd = move |n: u64| {
        x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
        (x >> 33) % n
    };
    let mut pending = 0usize;
    let mut now = 0;
    let mut last = (0, 0);
    for step in 0..3_000u64 {
        for _ in 0..rnd(4) {
            t.insert(now + rnd(300_000), step).unwrap();
            pending += 1;
        }
        now += [0, 1, 7, 63, 64, 65, 4096, 100_000][rnd(8) as usize];
        while let Some(e) = t.poll(now) {
            assert!(e.deadline <= now, "{}: early", t.name());
            assert!((e.deadline, 0) >= (last.0, 0), "{}: out of order", t.name());
            last = (e.deadline, e.payload);
            pending -= 1;
        }
        assert_eq!(t.len(), pending, "{}: len", t.name());
        if let Some(next) = t.next_deadline() {
            assert!(next > now, "{}: due timer left behind", t.name());
        }
    }
    t.check_invariants();
}

/// Capacity: full refuses with the payload back; cancel and fire make room again; 0 is refused.
///
/// # Panics
/// When the implementation breaks the contract.
pub fn capacity_full_then_freed<X: Timer<u64>>(make: &dyn Fn(Options) -> X) {
    let mut t = make(Options::new().capacity(3));
    assert_eq!(t.capacity(), Some(3));
    let a = t.insert(10, 0).unwrap();
    t.insert(20, 1).unwrap();
    t.insert(30, 2).unwrap();
    assert_eq!(
        t.insert(40, 3).err(),
        Some(InsertError::Full(3)),
        "{}",
        t.name()
    );
    assert_eq!(t.len(), 3);
    assert_eq!(t.stats().rejected, 1);
    t.cancel(a);
    t.insert(40, 4).unwrap();
    assert_eq!(t.insert(50, 5).map_err(InsertError::into_inner), Err(5));
    assert_eq!(payloads(&poll_all(&mut t, 20)), [1]);
    t.insert(60, 6).unwrap();
    assert_eq!(t.len(), 3);
    t.check_invariants();
}

/// A capacity of 0 is a configuration error, whatever the implementation.
///
/// # Panics
/// When `make` does not report the error; `make` must return the `from_options` result.
pub fn capacity_zero_is_refused<X>(make: &dyn Fn(Options) -> Result<X, ConfigError>) {
    assert_eq!(
        make(Options::new().capacity(0)).err(),
        Some(ConfigError::ZeroCapacity)
    );
}

/// `drain` hands back every pending timer in firing order and leaves the keys stale.
///
/// # Panics
/// When the implementation breaks the contract.
pub fn drain_returns_everything<X: Timer<u64>>(make: &dyn Fn(Options) -> X) {
    let mut t = make(Options::new());
    poll_all(&mut t, 500);
    let keys: Vec<_> = [
        (600, 0),
        (10, 1),
        (600, 2),
        (1 << 40, 3),
        (500, 4),
        (700_000, 5),
    ]
    .into_iter()
    .map(|(d, p)| t.insert(d, p).unwrap())
    .collect();
    let drained = t.drain();
    assert_eq!(payloads(&drained), [1, 4, 0, 2, 5, 3], "{}", t.name());
    assert!(t.is_empty());
    assert_eq!(t.next_deadline(), None);
    for k in keys {
        assert_eq!(t.cancel(k), None);
    }
    assert_eq!(t.stats().drained, 6);
    t.check_invariants();
    t.insert(501, 9).unwrap();
    assert_eq!(payloads(&poll_all(&mut t, 501)), [9]);
}

/// Inserting a past deadline while due timers are being handed out keeps deadline order.
///
/// # Panics
/// When the implementation breaks the contract.
pub fn past_insert_during_drain<X: Timer<u64>>(make: &dyn Fn(Options) -> X) {
    let mut t = make(Options::new());
    t.insert(60, 0).unwrap();
    t.insert(60, 1).unwrap();
    t.insert(70, 2).unwrap();
    assert_eq!(t.poll(100).map(|e| e.payload), Some(0));
    t.insert(55, 3).unwrap(); // behind the timers being drained
    t.insert(60, 4).unwrap(); // equal to them: after them
    t.insert(65, 5).unwrap();
    assert_eq!(
        payloads(&poll_all(&mut t, 100)),
        [3, 1, 4, 5, 2],
        "{}",
        t.name()
    );
}

/// Work counters add up.
///
/// # Panics
/// When the implementation breaks the contract.
pub fn stats_add_up<X: Timer<u64>>(make: &dyn Fn(Options) -> X) {
    let mut t = make(Options::new());
    let keys: Vec<_> = (0..100).map(|i| t.insert(i * 37, i).unwrap()).collect();
    for k in &keys[..30] {
        t.cancel(*k);
    }
    for k in &keys[30..50] {
        t.reset(*k, 10_000).unwrap();
    }
    let fired = poll_all(&mut t, 5_000).len() as u64;
    let s = t.stats();
    assert_eq!(s.inserted, 100);
    assert_eq!(s.cancelled, 30);
    assert_eq!(s.reset, 20);
    assert_eq!(s.fired, fired);
    assert_eq!(
        s.inserted - s.cancelled - s.fired,
        t.len() as u64,
        "{}",
        t.name()
    );
}

/// After a burst of 100,000 timers, all cancelled, and a quiet period with a trickle of 1,000,
/// [`Timer::shrink_to_fit`] brings memory under a tenth of the peak and within twice what a
/// fresh timer holding the same live set takes; every key stays valid, released slots' keys
/// stay stale, and the trickle then fires exactly as it would have.
///
/// # Panics
/// When the implementation breaks the contract.
pub fn memory_comes_back_after_a_burst<X: Timer<u64>>(make: &dyn Fn(Options) -> X) {
    const BURST: u64 = 100_000;
    const TRICKLE: u64 = 1_000;
    let mut t = make(Options::new());
    let burst: Vec<_> = (0..BURST)
        .map(|i| t.insert(1 + i * 7 % 60_000, i).unwrap())
        .collect();
    let peak = t.allocated_bytes();
    for &k in &burst {
        t.cancel(k).unwrap();
    }
    // The quiet period: a trickle of 1,000 live timers, each fired and replaced in turn.
    let mut live = Vec::new();
    let mut now = 0;
    let mut next = BURST;
    for round in 0..10u64 {
        while (live.len() as u64) < TRICKLE {
            let deadline = now + 1 + (next * 13) % 5_000;
            live.push((t.insert(deadline, next).unwrap(), deadline, next));
            next += 1;
        }
        now += 500 + round;
        let fired = fire_due(&mut t, now);
        live.retain(|&(_, _, id)| fired.iter().all(|e| e.payload != id));
    }
    let mut fresh = make(Options::new().start(now));
    for &(_, deadline, id) in &live {
        fresh.insert(deadline, id).unwrap();
    }
    t.shrink_to_fit();
    t.check_invariants();
    let after = t.allocated_bytes();
    let needed = fresh.allocated_bytes();
    assert!(
        after * 10 < peak,
        "{}: {after} B after the shrink, {peak} B at the peak",
        t.name()
    );
    assert!(
        after <= 2 * needed,
        "{}: {after} B after the shrink, {needed} B for the same timers in a fresh one",
        t.name()
    );
    for &k in &burst {
        assert_eq!(t.cancel(k), None, "{}: a burst key came back", t.name());
    }
    for &(k, deadline, id) in &live {
        assert_eq!(
            t.deadline(k),
            Some(deadline),
            "{}: live key {k:?}",
            t.name()
        );
        assert_eq!(t.get(k), Some(&id));
    }
    // New timers in the released slots: the burst's keys must stay stale.
    let again: Vec<_> = (0..BURST / 2)
        .map(|i| t.insert(now + 10_000, u64::MAX - i).unwrap())
        .collect();
    for &k in &burst {
        assert_eq!(
            t.get(k),
            None,
            "{}: a burst key names a new timer",
            t.name()
        );
    }
    for k in again {
        t.cancel(k).unwrap();
    }
    let mut want: Vec<(Tick, u64)> = live.iter().map(|&(_, d, id)| (d, id)).collect();
    want.sort_unstable();
    let got: Vec<(Tick, u64)> = fire_due(&mut t, now + 10_000)
        .into_iter()
        .map(|e| (e.deadline, e.payload))
        .collect();
    let mut order: Vec<(Tick, u64)> = fire_due(&mut fresh, now + 10_000)
        .into_iter()
        .map(|e| (e.deadline, e.payload))
        .collect();
    assert_eq!(
        got,
        order,
        "{}: the shrink changed the fired sequence",
        t.name()
    );
    order.sort_unstable();
    assert_eq!(order, want, "{}: lost or doubled a timer", t.name());
}

/// An event loop that sleeps until `next_deadline` and then polls: every answer is at most
/// the earliest deadline (so nothing is missed or late), the polls that find nothing are
/// exactly what [`Stats::empty_wakeups`](crate::Stats::empty_wakeups) counts, and there are
/// few of them: none on a heap, and on a wheel at most 5 per timer plus one per cancel (42
/// for these 8 timers), though a timer may cross up to 10 of the hierarchical wheel's levels
/// on its way down.
///
/// # Panics
/// When the implementation breaks the contract.
pub fn next_deadline_precision<X: Timer<u64>>(make: &dyn Fn(Options) -> X) {
    let mut t = make(Options::new());
    let deadlines: [Tick; 8] = [
        70,
        4_000,
        4_001,
        250_000,
        300_005,
        1 << 30,
        (1 << 36) + 9,
        TEN_YEARS,
    ];
    let keys: Vec<_> = deadlines
        .iter()
        .enumerate()
        .map(|(i, &d)| t.insert(d, i as u64).unwrap())
        .collect();
    let cancelled = [keys[2], keys[4]];
    for &k in &cancelled {
        t.cancel(k).unwrap();
    }
    let earliest = |fired: &[u64]| {
        (0..deadlines.len() as u64)
            .filter(|i| ![2, 4].contains(i) && !fired.contains(i))
            .map(|i| deadlines[i as usize])
            .min()
    };
    let mut now = 0;
    let (mut vain, mut fired) = (0u64, Vec::new());
    while let Some(next) = t.next_deadline() {
        let due = earliest(&fired).expect("a timer is pending while next_deadline answers");
        assert!(
            next <= due,
            "{}: answered {next} after the earliest deadline {due}",
            t.name()
        );
        now = now.max(next);
        let before = fired.len();
        while let Some(e) = t.poll(now) {
            assert!(e.deadline <= now, "{}: early fire", t.name());
            assert_eq!(
                Some(e.deadline),
                earliest(&fired),
                "{}: out of order",
                t.name()
            );
            assert_eq!(
                e.deadline,
                now,
                "{}: the answer let a timer fire late",
                t.name()
            );
            fired.push(e.payload);
        }
        if fired.len() == before {
            vain += 1;
        }
        now += 1;
    }
    assert_eq!(fired, [0, 1, 3, 5, 6, 7], "{}", t.name());
    assert_eq!(t.stats().empty_wakeups, vain, "{}: empty_wakeups", t.name());
    if t.name() == "hierarchical" {
        assert!(
            vain > 0,
            "the case no longer reaches an early slot-boundary answer"
        );
    }
    let bound = if t.name().contains("heap") {
        0
    } else {
        5 * 8 + 2
    };
    assert!(
        vain <= bound,
        "{}: {vain} empty wake-ups, more than {bound}",
        t.name()
    );
}

/// Instantiates every case of the contract suite as a `#[test]` for one implementation.
///
/// ```
/// // In a test file: one `#[test]` per case, named `hierarchical::<case>`.
/// mod hierarchical {
///     use tickwheel::{FromOptions, HierarchicalWheel};
///     tickwheel::contract_suite!(HierarchicalWheel::<u64>::from_options);
/// }
/// # fn main() {}
/// ```
#[doc(hidden)] // shown in this module, through the re-export below
#[macro_export]
macro_rules! contract_suite {
    ($make:expr) => {
        fn make(options: $crate::Options) -> impl $crate::Timer<u64> {
            #[allow(clippy::redundant_closure_call)]
            ($make)(options).expect("valid options")
        }
        $crate::contract_suite!(@cases make;
            fires_in_order, reset_counts_as_new_insertion, stale_key_after_slot_reuse,
            foreign_key_is_refused,
            cancel_and_reset_earliest, reset_earlier_later_past_after_fire,
            past_and_max_deadlines, now_never_goes_back, long_uptime_and_ten_year_jump,
            irregular_polling, capacity_full_then_freed, drain_returns_everything,
            past_insert_during_drain, stats_add_up, memory_comes_back_after_a_burst,
            next_deadline_precision);
        #[test]
        fn capacity_zero_is_refused() {
            $crate::contract::capacity_zero_is_refused(&$make);
        }
    };
    (@cases $make:ident; $($case:ident),* $(,)?) => {
        $(
            #[test]
            fn $case() {
                $crate::contract::$case(&$make);
            }
        )*
    };
}

#[doc(inline)]
pub use crate::contract_suite;
