//! The tickwheel contract, run through the service's deterministic core
//! ([`ManualDriver`]) for every implementation and for one and several shards.
//!
//! Each expectation is a function over a service made by `Case`; the `contract!` macro
//! instantiates it per implementation and shard count, so a failure names both.

use std::collections::{BTreeMap, HashMap};
use std::time::Instant;

use tickwheel::{Kind, Tick, Timer};
use tickwheel_service::crossbeam_channel::Receiver;
use tickwheel_service::{Builder, Delivery, Fired, KeyError, ManualDriver, ScheduleError};

type Dyn = Box<dyn Timer<u64> + Send>;

struct Case {
    driver: ManualDriver<u64, Dyn>,
    fired: Receiver<Fired<u64>>,
}

impl Case {
    fn new(kind: Kind, shards: usize, capacity: Option<usize>) -> Self {
        let (delivery, fired) = Delivery::channel();
        let mut builder = Builder::new().shards(shards);
        if let Some(c) = capacity {
            builder = builder.capacity(c);
        }
        let driver = builder
            .build_manual_with(delivery, |o| kind.build::<u64>(o))
            .unwrap();
        Self { driver, fired }
    }

    fn at(&self, tick: Tick) -> Instant {
        self.driver.clock().instant_of(tick).unwrap()
    }

    /// Runs the driver at `now` until nothing is due; returns what fired, in delivery order,
    /// checking "never early" and "complete" on the way.
    fn run(&mut self, now: Tick) -> Vec<Fired<u64>> {
        let at = self.at(now);
        let n = self.driver.run_due(at);
        let fired: Vec<_> = self.fired.try_iter().collect();
        assert_eq!(fired.len(), n);
        for f in &fired {
            assert!(
                f.deadline <= at,
                "fired early: deadline {:?} > now {now}",
                f.deadline
            );
            assert_eq!(f.fired_at, at);
        }
        fired
    }
}

/// xorshift64*: a tiny deterministic generator so runs repeat exactly.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    /// A deadline offset biased to wheel boundaries, ties, the past and the far future.
    fn offset(&mut self) -> u64 {
        match self.below(8) {
            0 => 0,
            1 => 64u64.pow(self.below(4) as u32 + 1) - 1 + self.below(3),
            2 => self.below(4),
            3 => 1 << (36 + self.below(4)),
            _ => self.below(5_000),
        }
    }
}

/// Random schedules, cancels, resets and irregular turns; checked against a model ordered by
/// (deadline, insertion sequence). One shard: the exact fired order must match the model; with
/// several shards each shard's order must, and a turn's batch is in deadline order.
fn model_run(kind: Kind, shards: usize) {
    let mut case = Case::new(kind, shards, None);
    let handle = case.driver.handle();
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15 ^ shards as u64);
    // id -> (key, deadline, seq); model: (deadline, seq) -> id.
    let mut live = HashMap::new();
    let mut model = BTreeMap::new();
    let mut ended = HashMap::new(); // id -> how it ended
    let mut seq = 0u64;
    let mut now: Tick = 0;
    for id in 0..20_000u64 {
        match rng.below(10) {
            0..=4 => {
                let deadline = now
                    .saturating_sub(rng.below(3))
                    .saturating_add(rng.offset());
                let key = handle.schedule_at_tick(deadline, id).unwrap();
                seq += 1;
                live.insert(id, (key, deadline, seq));
                model.insert((deadline, seq), id);
            }
            5 | 6 if !live.is_empty() => {
                let victim = *live
                    .keys()
                    .nth(rng.below(live.len() as u64) as usize)
                    .unwrap();
                let (key, deadline, s) = live.remove(&victim).unwrap();
                assert_eq!(handle.cancel(key), Ok(victim));
                assert_eq!(handle.cancel(key), Err(KeyError::NotPending), "stale key");
                model.remove(&(deadline, s)).unwrap();
                assert!(ended.insert(victim, "cancelled").is_none());
            }
            7 if !live.is_empty() => {
                let victim = *live
                    .keys()
                    .nth(rng.below(live.len() as u64) as usize)
                    .unwrap();
                let (key, deadline, s) = live[&victim];
                let new = now.saturating_add(rng.offset());
                handle.reset_at_tick(key, new).unwrap();
                seq += 1;
                model.remove(&(deadline, s)).unwrap();
                model.insert((new, seq), victim);
                live.insert(victim, (key, new, seq));
            }
            _ => {
                now += match rng.below(6) {
                    0 => 0,
                    1 => 64u64.pow(rng.below(3) as u32 + 1),
                    _ => rng.below(300),
                };
                let fired = case.run(now);
                let mut expected = Vec::new();
                while let Some((&(deadline, s), &id)) = model.first_key_value() {
                    if deadline > now {
                        break;
                    }
                    model.remove(&(deadline, s));
                    expected.push(id);
                }
                let got: Vec<u64> = fired.iter().map(|f| f.payload).collect();
                if shards == 1 {
                    assert_eq!(got, expected, "fired order at now {now}");
                } else {
                    let (mut a, mut b) = (got.clone(), expected.clone());
                    a.sort_unstable();
                    b.sort_unstable();
                    assert_eq!(a, b, "fired set at now {now}");
                }
                for f in fired {
                    let (key, _, _) = live.remove(&f.payload).expect("fired a live timer");
                    assert_eq!(f.key, key);
                    assert!(ended.insert(f.payload, "fired").is_none(), "fired twice");
                    assert_eq!(handle.cancel(key), Err(KeyError::NotPending));
                    assert_eq!(handle.reset_at_tick(key, now), Err(KeyError::NotPending));
                }
            }
        }
        assert_eq!(handle.pending(), live.len(), "pending is exact");
    }
    // Everything left comes back at shutdown, in deadline order; every timer ended once.
    let unfired = case.driver.shutdown();
    assert_eq!(unfired.len(), live.len());
    // Deadline order; `None` (beyond what `Instant` holds) sorts last.
    let order: Vec<_> = unfired
        .iter()
        .map(|u| (u.deadline.is_none(), u.deadline))
        .collect();
    assert!(order.windows(2).all(|w| w[0] <= w[1]), "shutdown order");
    for u in unfired {
        assert!(live.remove(&u.payload).is_some());
        assert!(ended.insert(u.payload, "drained").is_none());
    }
    assert!(live.is_empty());
    let stats = handle.stats();
    assert_eq!(stats.pending, 0);
    assert_eq!(
        stats.scheduled,
        stats.cancelled + stats.fired + stats.drained,
        "every timer ended exactly once: {stats:?}"
    );
}

/// Equal deadlines fire first-in first-out, and a reset counts as a new insertion.
fn fifo_ties(kind: Kind, shards: usize) {
    let mut case = Case::new(kind, shards, None);
    let h = case.driver.handle();
    let keys: Vec<_> = (0..10)
        .map(|i| h.schedule_at_tick(50, i).unwrap())
        .collect();
    h.reset_at_tick(keys[3], 50).unwrap(); // moves 3 to the back
    let _ = h.schedule_at_tick(49, 100).unwrap();
    assert!(case.run(48).is_empty());
    let got: Vec<_> = case.run(50).into_iter().map(|f| f.payload).collect();
    assert_eq!(got, [100, 0, 1, 2, 4, 5, 6, 7, 8, 9, 3]);
}

/// Past deadlines fire at the next turn; huge jumps are complete; `u64::MAX` never fires.
fn any_deadline(kind: Kind, shards: usize) {
    let mut case = Case::new(kind, shards, None);
    let h = case.driver.handle();
    assert!(case.run(1_000).is_empty());
    let _ = h.schedule_at_tick(10, 1).unwrap(); // in the past
    let never = h.schedule_at_tick(u64::MAX, 2).unwrap();
    let ten_years: Tick = 10 * 365 * 24 * 3_600_000;
    let _ = h.schedule_at_tick(ten_years, 3).unwrap();
    assert_eq!(
        case.run(1_000)
            .iter()
            .map(|f| f.payload)
            .collect::<Vec<_>>(),
        [1]
    );
    assert!(case.run(ten_years - 1).is_empty());
    assert_eq!(
        case.run(ten_years)
            .iter()
            .map(|f| f.payload)
            .collect::<Vec<_>>(),
        [3]
    );
    assert_eq!(h.pending(), 1);
    let unfired = case.driver.shutdown();
    assert_eq!((unfired[0].key, unfired[0].payload), (never, 2));
}

/// A stale key never touches the timer that reused its storage.
fn stale_keys(kind: Kind, shards: usize) {
    let mut case = Case::new(kind, shards, None);
    let h = case.driver.handle();
    let old = h.schedule_at_tick(5, 1).unwrap();
    assert_eq!(h.cancel(old), Ok(1));
    let new = h.schedule_at_tick(5, 2).unwrap(); // likely reuses the slot
    assert_eq!(h.cancel(old), Err(KeyError::NotPending));
    assert_eq!(h.reset_at_tick(old, 1), Err(KeyError::NotPending));
    assert_eq!(h.deadline(old), None);
    let fired = case.run(5);
    assert_eq!((fired[0].key, fired[0].payload), (new, 2));
    let newer = h.schedule_at_tick(9, 3).unwrap();
    assert_eq!(h.cancel(new), Err(KeyError::NotPending));
    assert_eq!(h.cancel(newer), Ok(3));
}

/// A key from another service never touches this one's timers, though both put their first
/// timer in the same shard and slot.
fn foreign_keys(kind: Kind, shards: usize) {
    let mut mine = Case::new(kind, shards, None);
    let theirs = Case::new(kind, shards, None);
    let (h, other) = (mine.driver.handle(), theirs.driver.handle());
    let own = h.schedule_at_tick(5, 1).unwrap();
    let foreign = other.schedule_at_tick(7, 1_000).unwrap();
    assert_eq!(own.shard(), foreign.shard());
    assert_eq!(own.timer_key().index(), foreign.timer_key().index());
    assert_eq!(h.cancel(foreign), Err(KeyError::NotPending));
    assert_eq!(h.reset_at_tick(foreign, 1), Err(KeyError::NotPending));
    assert_eq!(h.deadline(foreign), None);
    let fired = mine.run(5);
    assert_eq!((fired[0].key, fired[0].payload), (own, 1));
    assert_eq!(other.cancel(foreign), Ok(1_000));
}

/// Capacity over all shards: the schedule beyond it fails with the payload; cancel and fire
/// make room again.
fn capacity(kind: Kind, shards: usize) {
    let mut case = Case::new(kind, shards, Some(4));
    let h = case.driver.handle();
    let keys: Vec<_> = (0..4)
        .map(|i| h.schedule_at_tick(10 + i, i).unwrap())
        .collect();
    match h.schedule_at_tick(1, 99) {
        Err(ScheduleError::Full(99)) => {}
        other => panic!("expected Full(99), got {other:?}"),
    }
    assert_eq!(h.cancel(keys[3]), Ok(3));
    let extra = h.schedule_at_tick(20, 4).unwrap();
    assert!(h.schedule_at_tick(20, 5).is_err());
    assert_eq!(case.run(10).len(), 1); // fire frees one
    let _ = h.schedule_at_tick(30, 6).unwrap();
    assert_eq!(h.cancel(extra), Ok(4));
    let stats = h.stats();
    assert_eq!((stats.rejected, stats.pending), (2, 3));
}

macro_rules! contract {
    ($($case:ident),* $(,)?) => {
        $(
            mod $case {
                use super::*;
                #[test]
                fn hashed_1_shard() { super::$case(Kind::Hashed, 1) }
                #[test]
                fn hierarchical_1_shard() { super::$case(Kind::Hierarchical, 1) }
                #[test]
                fn heap_1_shard() { super::$case(Kind::IndexedHeap, 1) }
                #[test]
                fn lazy_heap_1_shard() { super::$case(Kind::LazyHeap, 1) }
                #[test]
                fn hashed_4_shards() { super::$case(Kind::Hashed, 4) }
                #[test]
                fn hierarchical_4_shards() { super::$case(Kind::Hierarchical, 4) }
                #[test]
                fn heap_4_shards() { super::$case(Kind::IndexedHeap, 4) }
                #[test]
                fn lazy_heap_4_shards() { super::$case(Kind::LazyHeap, 4) }
            }
        )*
    };
}

contract!(
    model_run,
    fifo_ties,
    any_deadline,
    stale_keys,
    foreign_keys,
    capacity
);
