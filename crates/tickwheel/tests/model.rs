//! The reference-model test: random operation sequences run against an ordered map keyed by
//! `(deadline, seq)` and against every implementation side by side. After every step each
//! implementation must give exactly the model's answer and pass `check_invariants()`.
//!
//! Deadlines are biased to the places where timers break: slot, level and wheel-period
//! boundaries, equal deadlines, the past, `u64::MAX`, and huge jumps; the clock may start at a
//! large tick value and some runs have a small capacity.

use std::collections::BTreeMap;

use proptest::prelude::*;
use tickwheel::{
    FromOptions, HashedWheel, HierarchicalWheel, IndexedHeap, InsertError, LazyHeap, Options,
    StaleKeyError, Tick, Timer, TimerKey,
};

/// Sequences per implementation: 10,000 in release builds (CI), fewer in debug builds.
fn cases() -> u32 {
    if let Ok(n) = std::env::var("PROPTEST_CASES") {
        return n.parse().expect("PROPTEST_CASES is a number");
    }
    if cfg!(debug_assertions) {
        1_000
    } else {
        10_000
    }
}

/// Where a deadline lands relative to `now`.
#[derive(Clone, Debug)]
enum When {
    /// `now + d`.
    After(u64),
    /// `now - d`, saturating at 0.
    Before(u64),
    /// `u64::MAX`.
    Max,
    /// The deadline of an existing timer (equal deadlines).
    SameAs(usize),
}

#[derive(Clone, Debug)]
enum Op {
    Insert(When),
    Cancel(usize),
    Reset(usize, When),
    /// Advance `now` by a step, then poll at most `limit` timers (`None`: until nothing is due).
    Poll {
        step: u64,
        limit: Option<u8>,
    },
    /// `shrink_to_fit`: changes no answer.
    Shrink,
}

/// Offsets that sit on or next to slot, level and ring boundaries.
fn boundary_delta() -> impl Strategy<Value = u64> {
    let powers = prop::sample::select(vec![
        1u64,
        63,
        64,
        65,
        127,
        128,
        255,
        256,
        4095,
        4096,
        4097,
        (1 << 18) - 1,
        1 << 18,
        (1 << 18) + 1,
        (1 << 24) - 1,
        1 << 24,
        (1 << 30) - 1,
        1 << 30,
        (1 << 36) - 1,
        1 << 36,
        (1 << 36) + 1,
        1 << 42,
    ]);
    (powers, -2i64..=2).prop_map(|(p, d)| p.saturating_add_signed(d).max(1))
}

fn when() -> impl Strategy<Value = When> {
    prop_oneof![
        4 => (0u64..70).prop_map(When::After),
        3 => (0u64..5_000).prop_map(When::After),
        3 => boundary_delta().prop_map(When::After),
        1 => (0u64..(1 << 40)).prop_map(When::After),
        1 => any::<u64>().prop_map(When::After),
        2 => (0u64..200).prop_map(When::Before),
        1 => boundary_delta().prop_map(When::Before),
        1 => Just(When::Max),
        3 => any::<usize>().prop_map(When::SameAs),
    ]
}

fn step() -> impl Strategy<Value = u64> {
    prop_oneof![
        3 => Just(0u64),
        4 => 1u64..70,
        2 => 0u64..5_000,
        3 => boundary_delta(),
        1 => Just(10 * 365 * 24 * 3600 * 1000), // ten years of 1 ms ticks
        1 => Just(u64::MAX),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => when().prop_map(Op::Insert),
        2 => any::<usize>().prop_map(Op::Cancel),
        2 => (any::<usize>(), when()).prop_map(|(i, w)| Op::Reset(i, w)),
        4 => (step(), prop::option::weighted(0.6, 1u8..4))
            .prop_map(|(step, limit)| Op::Poll { step, limit }),
        1 => Just(Op::Shrink),
    ]
}

fn start() -> impl Strategy<Value = Tick> {
    prop_oneof![
        3 => Just(0u64),
        1 => any::<u64>(),
        1 => Just(1u64 << 40),
        1 => Just((1u64 << 36) - 3),
        1 => Just(u64::MAX - (1 << 20)),
        1 => Just(u64::MAX - 100),
    ]
}

/// The reference: an ordered map from `(deadline, seq)` to the timer's id.
struct Model {
    queue: BTreeMap<(Tick, u64), u64>,
    /// id → (deadline, seq) for pending timers.
    pending: BTreeMap<u64, (Tick, u64)>,
    seq: u64,
    now: Tick,
    capacity: Option<usize>,
}

impl Model {
    fn resolve(&self, when: &When, ids: &[u64]) -> Tick {
        match *when {
            When::After(d) => self.now.saturating_add(d),
            When::Before(d) => self.now.saturating_sub(d),
            When::Max => Tick::MAX,
            When::SameAs(i) => {
                if ids.is_empty() {
                    self.now
                } else {
                    let id = ids[i % ids.len()];
                    self.pending.get(&id).map_or(self.now, |&(d, _)| d)
                }
            }
        }
    }

    fn insert(&mut self, id: u64, deadline: Tick) -> bool {
        if self.capacity.is_some_and(|c| self.pending.len() >= c) {
            return false;
        }
        self.queue.insert((deadline, self.seq), id);
        self.pending.insert(id, (deadline, self.seq));
        self.seq += 1;
        true
    }

    fn remove(&mut self, id: u64) -> bool {
        match self.pending.remove(&id) {
            Some(k) => {
                self.queue.remove(&k);
                true
            }
            None => false,
        }
    }

    fn poll(&mut self) -> Option<(Tick, u64)> {
        let (&(d, s), &id) = self.queue.iter().next()?;
        if d > self.now {
            return None;
        }
        self.queue.remove(&(d, s));
        self.pending.remove(&id);
        Some((d, id))
    }
}

/// One implementation under test, with the key it issued for each model id.
struct Subject {
    timer: Box<dyn Timer<u64>>,
    keys: BTreeMap<u64, TimerKey>,
}

fn subjects(options: Options) -> Vec<Subject> {
    let timers: Vec<Box<dyn Timer<u64>>> = vec![
        Box::new(HierarchicalWheel::from_options(options).unwrap()),
        Box::new(HashedWheel::from_options(options.hashed_slots(64)).unwrap()),
        Box::new(HashedWheel::from_options(options.hashed_slots(256)).unwrap()),
        Box::new(IndexedHeap::<u64>::from_options(options).unwrap()),
        Box::new(IndexedHeap::<u64, 2>::from_options(options).unwrap()),
        Box::new(LazyHeap::from_options(options).unwrap()),
    ];
    timers
        .into_iter()
        .map(|timer| Subject {
            timer,
            keys: BTreeMap::new(),
        })
        .collect()
}

/// Every design states a bound on the work of one call (`Timer::work_bound`): the most work
/// any call did so far must be within it. The bound only grows (with the timers held, for the
/// heaps), so a check after a call covers every call before it. The lazy heap's bound is linear
/// in the timers held: it covers the call that pops a run of dead elements and the call that
/// rebuilds, which is what the rebuild rule (dead never more than half the live, above a floor) bounds.
fn within_bound(s: &Subject, step_no: usize) -> Result<(), TestCaseError> {
    let bound = s.timer.work_bound();
    prop_assert!(bound.is_some(), "{} states no bound", s.timer.name());
    let work = s.timer.stats().max_call_work;
    prop_assert!(
        Some(work) <= bound,
        "{}: a call did {} units of work, over its bound {:?} (step {})",
        s.timer.name(),
        work,
        bound,
        step_no
    );
    Ok(())
}

fn run(start: Tick, capacity: Option<usize>, ops: &[Op]) -> Result<(), TestCaseError> {
    let mut options = Options::new().start(start);
    if let Some(c) = capacity {
        options = options.capacity(c);
    }
    let mut subjects = subjects(options);
    let mut model = Model {
        queue: BTreeMap::new(),
        pending: BTreeMap::new(),
        seq: 0,
        now: start,
        capacity,
    };
    // Every id ever issued, so cancels and resets also hit stale keys.
    let mut ids: Vec<u64> = Vec::new();
    let mut next_id = 0u64;
    for (step_no, op) in ops.iter().enumerate() {
        match op {
            Op::Insert(when) => {
                let deadline = model.resolve(when, &ids);
                let id = next_id;
                next_id += 1;
                let accepted = model.insert(id, deadline);
                for s in &mut subjects {
                    match s.timer.insert(deadline, id) {
                        Ok(key) => {
                            prop_assert!(accepted, "{} accepted beyond capacity", s.timer.name());
                            s.keys.insert(id, key);
                        }
                        Err(InsertError::Full(p)) => {
                            prop_assert!(!accepted, "{} refused below capacity", s.timer.name());
                            prop_assert_eq!(p, id, "payload not handed back");
                        }
                    }
                }
                if accepted {
                    ids.push(id);
                }
            }
            Op::Cancel(i) if !ids.is_empty() => {
                let id = ids[i % ids.len()];
                let pending = model.remove(id);
                for s in &mut subjects {
                    let key = s.keys[&id];
                    let got = s.timer.cancel(key);
                    prop_assert_eq!(got, pending.then_some(id), "{} cancel", s.timer.name());
                }
            }
            Op::Reset(i, when) if !ids.is_empty() => {
                let id = ids[i % ids.len()];
                let deadline = model.resolve(when, &ids);
                let pending = model.remove(id);
                if pending {
                    // A reset is a new insertion: it takes a new seq (capacity is unchanged).
                    model.queue.insert((deadline, model.seq), id);
                    model.pending.insert(id, (deadline, model.seq));
                    model.seq += 1;
                }
                for s in &mut subjects {
                    let key = s.keys[&id];
                    let got = s.timer.reset(key, deadline);
                    let want = if pending {
                        Ok(())
                    } else {
                        Err(StaleKeyError { key })
                    };
                    prop_assert_eq!(got, want, "{} reset", s.timer.name());
                }
            }
            Op::Cancel(_) | Op::Reset(..) => {}
            Op::Shrink => {
                for s in &mut subjects {
                    s.timer.shrink_to_fit();
                    s.timer.check_invariants();
                    prop_assert_eq!(s.timer.len(), model.pending.len());
                }
            }
            Op::Poll { step, limit } => {
                model.now = model.now.saturating_add(*step);
                let mut want = Vec::new();
                let max = limit.map_or(usize::MAX, usize::from);
                while want.len() < max {
                    match model.poll() {
                        Some(x) => want.push(x),
                        None => break,
                    }
                }
                for s in &mut subjects {
                    let mut got = Vec::new();
                    while got.len() < max {
                        match s.timer.poll(model.now) {
                            Some(e) => {
                                prop_assert_eq!(Some(e.key), s.keys.get(&e.payload).copied());
                                got.push((e.deadline, e.payload));
                                within_bound(s, step_no)?;
                            }
                            None => break,
                        }
                    }
                    prop_assert_eq!(&got, &want, "{} fired (step {})", s.timer.name(), step_no);
                }
            }
        }
        let earliest = model.queue.keys().next().map(|&(d, _)| d);
        for s in &subjects {
            s.timer.check_invariants();
            within_bound(s, step_no)?;
            prop_assert_eq!(s.timer.len(), model.pending.len(), "{} len", s.timer.name());
            prop_assert_eq!(
                s.timer.stats().inserted,
                ids.len() as u64,
                "{} counts accepted inserts",
                s.timer.name()
            );
            for (id, &(deadline, _)) in &model.pending {
                let key = s.keys[id];
                prop_assert_eq!(
                    (s.timer.deadline(key), s.timer.get(key)),
                    (Some(deadline), Some(id)),
                    "{} deadline and payload of timer {}",
                    s.timer.name(),
                    id
                );
            }
            let next = s.timer.next_deadline();
            match earliest {
                None => prop_assert_eq!(next, None, "{} next_deadline", s.timer.name()),
                Some(e) => prop_assert!(
                    next.is_some_and(|n| n <= e),
                    "{} next_deadline {:?} later than earliest {}",
                    s.timer.name(),
                    next,
                    e
                ),
            }
        }
    }
    // Drain what is left: every implementation hands back exactly the model's timers, in order.
    let rest: Vec<(Tick, u64)> = model.queue.iter().map(|(&(d, _), &id)| (d, id)).collect();
    for s in &mut subjects {
        let drained: Vec<_> = s
            .timer
            .drain()
            .iter()
            .map(|e| (e.deadline, e.payload))
            .collect();
        prop_assert_eq!(&drained, &rest, "{} drain", s.timer.name());
        s.timer.check_invariants();
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), ..ProptestConfig::default() })]

    #[test]
    fn every_implementation_matches_the_model(
        start in start(),
        capacity in prop::option::weighted(0.15, 1usize..8),
        ops in prop::collection::vec(op(), 1..160),
    ) {
        run(start, capacity, &ops)?;
    }
}

/// Many timers in few slots, cancelled and reset over and over: crowded lists split and empty
/// again, slots come due while timers in them are cancelled and reset, and the lazy heap's dead
/// elements cross its rebuild threshold.
fn churn_op() -> impl Strategy<Value = Op> {
    let near = prop_oneof![
        3 => (0u64..3).prop_map(When::After),
        3 => (60u64..70).prop_map(When::After),
        3 => (4_090u64..4_100).prop_map(When::After),
        1 => any::<usize>().prop_map(When::SameAs),
    ];
    prop_oneof![
        4 => near.clone().prop_map(Op::Insert),
        3 => any::<usize>().prop_map(Op::Cancel),
        4 => (any::<usize>(), near).prop_map(|(i, w)| Op::Reset(i, w)),
        1 => (prop_oneof![Just(0u64), 1u64..3, 60u64..70], prop::option::weighted(0.8, 1u8..4))
            .prop_map(|(step, limit)| Op::Poll { step, limit }),
        1 => Just(Op::Shrink),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases() / 4, ..ProptestConfig::default() })]

    #[test]
    fn heavy_churn_in_few_slots_matches_the_model(
        start in start(),
        ops in prop::collection::vec(churn_op(), 200..800),
    ) {
        run(start, None, &ops)?;
    }
}

/// Thousands of resets and cancels over a few dozen timers: every design must keep every timer,
/// once, in order, while the lazy heap's dead elements far outnumber its live ones and force
/// rebuild after rebuild.
#[test]
fn resets_far_beyond_the_live_count_force_rebuilds() {
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    for near in [2u64, 66, 4_095] {
        let mut ops: Vec<Op> = (0..40)
            .map(|i| Op::Insert(When::After(near + i % 3)))
            .collect();
        for round in 0..3_000u64 {
            let r = next();
            let when = When::After(near + r % 5);
            ops.push(match r % 16 {
                0 => Op::Cancel(r as usize),
                1 | 2 => Op::Insert(when),
                3 if round % 7 == 0 => Op::Poll {
                    step: r % 3,
                    limit: Some(2),
                },
                _ => Op::Reset(r as usize, when),
            });
        }
        ops.push(Op::Poll {
            step: near + 10,
            limit: None,
        });
        run(0, None, &ops).unwrap();
    }
}

/// Equal deadlines in bulk, with cancels and resets in between: FIFO must survive cascades.
#[test]
fn bulk_equal_deadlines_with_cascades() {
    for deadline in [64u64, 4096, 4097, 1 << 20, (1 << 36) + 5] {
        let ops: Vec<Op> = (0..300)
            .flat_map(|i| {
                let mut v = vec![Op::Insert(When::After(deadline - (i % 3)))];
                if i % 7 == 0 {
                    v.push(Op::Reset(i as usize * 13, When::After(deadline)));
                }
                if i % 11 == 0 {
                    v.push(Op::Cancel(i as usize * 17));
                }
                if i % 50 == 0 {
                    v.push(Op::Poll {
                        step: 1,
                        limit: Some(1),
                    });
                }
                v
            })
            .chain([Op::Poll {
                step: deadline,
                limit: None,
            }])
            .collect();
        run(0, None, &ops).unwrap();
    }
}
