//! The wheel's own tests: compaction, in-place moves, the nursery, renumbering; and a
//! proptest against the indexed heap with the nursery's edge cases in reach.

use super::bucket::WINDOW;
use super::compact::STEP_VISITS;
use super::nursery::BATCH;
use super::stage::{CROWDED, EAGER, PUSH_STEP, STAGE_STEP};
use super::*;

/// Fires shrink the pending count without a cancel or reset. A mass expiry leaves the
/// dead references other timers left behind in chunks already allocated, and compacts
/// nothing; the next push that needs a new chunk finds them above the bound and starts a
/// pass instead of growing the arena, reading one step's worth.
#[test]
fn after_a_mass_expiry_the_next_push_starts_a_pass() {
    let mut wheel = HierarchicalWheel::new();
    for i in 0..1_000 {
        wheel.insert(100, i).unwrap();
    }
    let far: Vec<_> = (0..500).map(|i| wheel.insert(50_000, i).unwrap()).collect();
    // Earlier, so each reset places the timer anew and leaves a dead reference: once the
    // 1 000 near timers fire, the far ones' dead references alone exceed the bound.
    for round in 1..=COMPACT_RATIO as Tick {
        for &key in &far {
            wheel.reset(key, 50_000 - round).unwrap();
        }
    }
    // Push the last resets' placements, which wait in the nursery.
    wheel.flush(usize::MAX);
    wheel.check_invariants();
    let before = wheel.stats().compactions;
    let mut fired = 0;
    while let Some(e) = wheel.poll(100) {
        assert_eq!(e.deadline, 100);
        fired += 1;
        wheel.check_invariants();
    }
    assert_eq!(fired, 1_000);
    assert_eq!(wheel.stats().compactions, before, "fires compact nothing");
    assert!(wheel.refs() > wheel.refs_bound());
    let chunks = wheel.chunks.allocated_bytes();
    let refs = wheel.refs();
    // An empty slot: the push takes a chunk.
    let work = wheel.work;
    let key = wheel.insert(60_000, 7).unwrap();
    wheel.check_invariants();
    assert_eq!(
        wheel.stats().compactions,
        before + 1,
        "the insert started a pass"
    );
    assert!(wheel.pass.is_running());
    assert!(
        wheel.work - work <= (WINDOW * CHUNK + CHUNK + STEP_VISITS + 2) as u64,
        "the insert read one step"
    );
    assert!(wheel.refs() < refs, "the step dropped dead references");
    wheel.finish_pass();
    assert_eq!(wheel.refs(), wheel.len(), "only live references are left");
    assert_eq!(
        wheel.chunks.allocated_bytes(),
        chunks,
        "the arena did not grow"
    );
    assert_eq!(wheel.cancel(key), Some(7));
}

/// A burst of cancels drops the dead references it leaves while it goes on: every
/// `CANCEL_STEP`th cancel carries a pass a step on, starting one once the references exceed
/// the bound. The poll that reaches the one timer left then reads a few hundred references,
/// not the 9,999 dead ones ahead of it, and the arena never grew.
#[test]
fn a_burst_of_cancels_compacts_while_it_goes_on() {
    let mut wheel = HierarchicalWheel::new();
    let keys: Vec<_> = (0..10_000u64)
        .map(|i| wheel.insert(1 + i * 7, i).unwrap())
        .collect();
    let chunks = wheel.chunks.allocated_bytes();
    for (i, &key) in keys[..9_999].iter().enumerate() {
        assert_eq!(wheel.cancel(key), Some(i as u64));
        if i % 97 == 0 {
            wheel.check_invariants();
        }
    }
    wheel.check_invariants();
    assert!(wheel.stats().compactions > 0, "the cancels started a pass");
    assert!(
        wheel.refs() <= wheel.refs_bound(),
        "{} references left for one timer",
        wheel.refs()
    );
    let start = wheel.work;
    let last = wheel.poll(1 + 9_999 * 7).expect("the last timer fires");
    let read = wheel.work - start;
    assert!(read < 1_000, "the poll read {read} references and slots");
    assert_eq!(last.payload, 9_999);
    assert_eq!(
        wheel.chunks.allocated_bytes(),
        chunks,
        "the arena did not grow"
    );
}

/// Under steady churn (inserts and cancels at random deadlines, the cursor moving on), the
/// pushes that take chunks carry every pass to its end before the arena grows past four
/// references per pending timer, no call reads more than one step, and every timer fires
/// as the indexed heap fires it.
#[test]
fn passes_keep_up_with_churn_a_step_per_call() {
    let mut wheel = HierarchicalWheel::new();
    let mut heap = crate::IndexedHeap::new();
    let mut rnd = crate::test_rng::below(0x2545_F491_4F6C_DD1D);
    // `timers[i]`: the wheel's key and the heap's for timer `i`, whose payload is its id;
    // `slot[id]` is its `i`.
    let mut timers = Vec::new();
    let mut slot = std::collections::HashMap::new();
    let mut next_id = 0u64;
    let mut add = |wheel: &mut HierarchicalWheel<u64>, heap: &mut crate::IndexedHeap<u64>, d| {
        let id = next_id;
        next_id += 1;
        (
            id,
            wheel.insert(d, id).unwrap(),
            heap.insert(d, id).unwrap(),
        )
    };
    for i in 0..20_000 {
        let (id, w, h) = add(&mut wheel, &mut heap, 1 + rnd(200_000));
        timers.push((w, h));
        slot.insert(id, i);
    }
    let mut now = 0;
    for op in 0..200_000u64 {
        let i = rnd(timers.len() as u64) as usize;
        let (w, h) = timers[i];
        let gone = wheel.cancel(w);
        assert_eq!(gone, heap.cancel(h));
        slot.remove(&gone.unwrap());
        let (id, w, h) = add(&mut wheel, &mut heap, now + 1 + rnd(200_000));
        timers[i] = (w, h);
        slot.insert(id, i);
        if op % 32 == 0 {
            now += 1;
            loop {
                let fired = wheel.poll(now).map(|e| (e.deadline, e.payload));
                assert_eq!(fired, heap.poll(now).map(|e| (e.deadline, e.payload)));
                let Some((_, id)) = fired else { break };
                let i = slot.remove(&id).unwrap();
                let (id, w, h) = add(&mut wheel, &mut heap, now + 1 + rnd(200_000));
                timers[i] = (w, h);
                slot.insert(id, i);
            }
        }
        if op % 4_001 == 0 {
            wheel.check_invariants();
        }
        let refs = wheel.chunks.total_chunks() * CHUNK;
        assert!(
            refs <= (COMPACT_RATIO + 1) * wheel.len()
                + COMPACT_SLACK
                + CHUNK * (LEVELS * SLOTS + 1),
            "{refs} references of room for {} timers",
            wheel.len()
        );
    }
    wheel.check_invariants();
    assert!(wheel.stats().compactions > 3, "passes ran");
    // As in the staging tests below, plus one compaction step.
    let bound =
        (STAGE_STEP + CROWDED + CHUNK + 1_024 + 64 + WINDOW * CHUNK + CHUNK + STEP_VISITS) as u64;
    let max = wheel.stats().max_call_work;
    assert!(max <= bound, "one call did {max} units of work");
}

/// A push that needs a new chunk may compact its own slot first, and then finds room in
/// the tail chunk after all: it must push there, not link a chunk behind a tail with room
/// (which would hand out stale references and lose the last ones).
#[test]
fn a_push_that_compacts_its_own_slot_uses_the_room_it_freed() {
    let mut wheel = HierarchicalWheel::new();
    let deadline = 1_000;
    // Two full chunks in one slot; all but every sixteenth timer cancelled.
    let keys: Vec<_> = (0..2 * CHUNK as u64)
        .map(|i| wheel.insert(deadline, i).unwrap())
        .collect();
    assert_eq!(refs_in_slot_of(&wheel, deadline), 2 * CHUNK);
    let mut kept = Vec::new();
    for (i, &key) in keys.iter().enumerate() {
        if i % 16 == 0 {
            kept.push(i as u64);
        } else {
            assert_eq!(wheel.cancel(key), Some(i as u64));
        }
    }
    let chunks = wheel.chunks.allocated_bytes();
    // The slot's tail chunk is full: this push needs a new chunk, and compacts first.
    wheel.insert(deadline, 1_000).unwrap();
    kept.push(1_000);
    wheel.check_invariants();
    assert_eq!(wheel.stats().compactions, 1);
    assert_eq!(refs_in_slot_of(&wheel, deadline), kept.len());
    assert_eq!(
        wheel.chunks.allocated_bytes(),
        chunks,
        "the arena did not grow"
    );
    let fired: Vec<_> = core::iter::from_fn(|| wheel.poll(deadline))
        .map(|e| e.payload)
        .collect();
    assert_eq!(fired, kept, "each survivor once, in insertion order");
    wheel.check_invariants();
}

/// References in the level slot of `deadline`, with the cursor at 0, staged ones included.
fn refs_in_slot_of(wheel: &HierarchicalWheel<u64>, deadline: Tick) -> usize {
    let (level, slot) = (
        level_for(0, deadline),
        slot_for(deadline, level_for(0, deadline)),
    );
    let staged = wheel
        .stages
        .iter()
        .filter(|s| s.is_active() && s.slot() == (level, slot))
        .map(Stage::refs)
        .sum::<usize>();
    staged + wheel.levels.bucket(level, slot).len()
}

/// Requests cancelled right after they are set leave their dead references in the one
/// coarse slot their deadlines share: a pass drops those and stops there when that is
/// enough, leaving the long timeouts' slots unread. When the dead are spread out instead,
/// it compacts every bucket.
#[test]
fn a_compaction_reads_the_crowded_slot_first_and_stops_when_that_is_enough() {
    let mut wheel = HierarchicalWheel::new();
    // Long timeouts in ten level-2 slots, 100 each, one cancelled in each.
    let idle: Vec<Vec<_>> = (0..10)
        .map(|k| {
            let deadline = 100_000 + k * 4_096;
            (0..100)
                .map(|i| wheel.insert(deadline, i).unwrap())
                .collect()
        })
        .collect();
    for slot in &idle {
        assert_eq!(wheel.cancel(slot[0]), Some(0));
    }
    // Requests set and cancelled one after another, until a pass starts (a cancel or a push
    // starts it); the last one stays.
    let before = wheel.stats().compactions;
    let mut request = wheel.insert(5_000, 7).unwrap();
    while wheel.stats().compactions == before {
        assert_eq!(wheel.cancel(request), Some(7));
        request = wheel.insert(5_000, 7).unwrap();
        wheel.check_invariants();
    }
    wheel.flush(usize::MAX);
    wheel.finish_pass();
    assert_eq!(
        refs_in_slot_of(&wheel, 5_000),
        1,
        "the requests' slot is clean"
    );
    for k in 0..10 {
        assert_eq!(
            refs_in_slot_of(&wheel, 100_000 + k * 4_096),
            100,
            "a long timeouts' slot was read"
        );
    }
    assert_eq!(wheel.refs(), 1_001);
    assert_eq!(wheel.cancel(request), Some(7));

    // Cancel most long timeouts: no slot holds an eighth of the references, so the pass
    // these cancels start reads them all.
    let before = wheel.stats().compactions;
    for slot in &idle {
        for &key in &slot[1..80] {
            assert!(wheel.cancel(key).is_some());
            wheel.check_invariants();
        }
    }
    assert!(
        wheel.stats().compactions > before,
        "the cancels started a pass"
    );
    wheel.finish_pass();
    assert!(
        wheel.refs() < 2 * wheel.len(),
        "{} references left for {} timers",
        wheel.refs(),
        wheel.len()
    );
}

/// Levels from `FAR` up hold no homes of timers moved in place (their cascades rely on
/// that), even where such a timer's new deadline agrees with the cursor from bit 32 up, which
/// is all the moved encoding needs: such a reset places the timer anew, and it fires on time.
#[test]
fn a_reset_never_moves_a_far_level_timer_in_place() {
    let mut wheel = HierarchicalWheel::new();
    let old = 1 << 30;
    assert_eq!(level_for(wheel.elapsed, old), FAR, "a far-level deadline");
    let key = wheel.insert(old, 1u64).unwrap();
    let later = old + 5;
    assert!(moved::encodable(wheel.elapsed, later));
    wheel.reset(key, later).unwrap();
    wheel.check_invariants();
    assert!(
        !is_moved(wheel.slab.get(key).unwrap().seq),
        "moved in place from a far level"
    );
    assert_eq!(wheel.poll(later - 1), None);
    let fired = wheel.poll(later).unwrap();
    assert_eq!((fired.key, fired.deadline, fired.payload), (key, later, 1));
    assert_eq!(wheel.poll(u64::MAX / 2), None);
}

/// A keep-alive refresh moves the timer in place: no reference is pushed or left dead, the
/// entry answers with its new deadline, and the timer fires at that deadline, not at its
/// home's. Timers scheduled at the same deadline after the refresh, but pushed there
/// before the home's cascade placed it, still fire after it.
#[test]
fn later_resets_move_in_place_and_keep_their_turn() {
    let mut wheel = HierarchicalWheel::new();
    let b = wheel.insert(5_000, 'b').unwrap();
    let a = wheel.insert(100, 'a').unwrap();
    for d in [300, 1_000, 5_000] {
        wheel.reset(a, d).unwrap();
        assert!(is_moved(wheel.slab.get(a).unwrap().seq), "moved in place");
        assert_eq!(wheel.deadline(a), Some(d));
        wheel.check_invariants();
    }
    let c = wheel.insert(5_000, 'c').unwrap();
    assert_eq!(
        (wheel.refs(), wheel.stats().reset),
        (3, 3),
        "nothing pushed"
    );
    // The home (level 1, slot of 64..127) cascades long before 5 000 and settles `a`.
    assert_eq!(wheel.poll(100), None);
    assert!(
        !is_moved(wheel.slab.get(a).unwrap().seq),
        "settled by the cascade"
    );
    wheel.check_invariants();
    // A moved timer may move again, or earlier than its home (placed anew), or be cancelled.
    let d = wheel.insert(200, 'd').unwrap();
    wheel.reset(d, 4_000).unwrap();
    assert!(is_moved(wheel.slab.get(d).unwrap().seq));
    wheel.reset(d, 150).unwrap();
    assert!(
        !is_moved(wheel.slab.get(d).unwrap().seq),
        "earlier: placed anew"
    );
    let e = wheel.insert(300, 'e').unwrap();
    wheel.reset(e, 4_500).unwrap();
    assert_eq!(wheel.cancel(e), Some('e'));
    wheel.check_invariants();
    let fired: Vec<(Tick, char)> = core::iter::from_fn(|| wheel.poll(4_999))
        .map(|x| (x.deadline, x.payload))
        .collect();
    assert_eq!(fired, [(150, 'd')], "nothing early");
    let fired: Vec<(Tick, char)> = core::iter::from_fn(|| wheel.poll(5_000))
        .map(|x| (x.deadline, x.payload))
        .collect();
    assert_eq!(fired, [(5_000, 'b'), (5_000, 'a'), (5_000, 'c')]);
    assert!(wheel.is_empty() && wheel.deadline(b).is_none() && wheel.deadline(c).is_none());
    wheel.check_invariants();
}

/// A coarse slot holding homes cascades without reading them: each home goes down to the
/// level-1 slot of its own deadline, and only that slot's cascade settles its timers, so a
/// slot full of refreshed timers is read a 64-tick slot at a time.
#[test]
fn a_coarse_cascade_carries_homes_down_unread() {
    let mut wheel = HierarchicalWheel::new();
    // Homes at 5 000, 5 016, ..., 6 008: level 2, the slot of 4 096..8 191.
    let keys: Vec<_> = (0..64u64)
        .map(|i| wheel.insert(5_000 + 16 * i, i).unwrap())
        .collect();
    for (i, &k) in (0u64..).zip(&keys) {
        wheel.reset(k, 9_000 + i).unwrap();
    }
    let x = wheel.insert(5_100, 100).unwrap();
    let moved = |w: &HierarchicalWheel<u64>| {
        keys.iter()
            .filter(|&&k| is_moved(w.slab.get(k).unwrap().seq))
            .count()
    };
    assert_eq!(moved(&wheel), 64);
    // Reaching 5 000 cascades the level-2 slot (its homes go down unread), then the
    // level-1 slot of 4 992..5 055, which settles the homes at 5 000, 5 016, 5 032 and
    // 5 048. Reading the whole level-2 slot would have settled all 64.
    assert_eq!(wheel.poll(5_000), None);
    assert_eq!(moved(&wheel), 60, "one level-1 slot settled its four");
    wheel.check_invariants();
    let fired: Vec<_> = core::iter::from_fn(|| wheel.poll(8_999))
        .map(|e| (e.deadline, e.payload))
        .collect();
    assert_eq!(fired, [(5_100, 100)], "nothing early");
    assert!(wheel.deadline(x).is_none());
    let fired: Vec<_> = core::iter::from_fn(|| wheel.poll(10_000))
        .map(|e| (e.deadline, e.payload))
        .collect();
    let expected: Vec<_> = (0..64u64).map(|i| (9_000 + i, i)).collect();
    assert_eq!(fired, expected);
    wheel.check_invariants();
}

/// Drain and the seq renumbering read moved entries through their encoding.
#[test]
fn drain_and_renumbering_settle_moved_timers() {
    let mut wheel = HierarchicalWheel::new();
    let keys: Vec<_> = (0..6u64)
        .map(|i| wheel.insert(100 + i, i).unwrap())
        .collect();
    for (i, &k) in keys.iter().enumerate().rev() {
        wheel.reset(k, 9_000 + (i as u64 % 2)).unwrap();
    }
    wheel.seq = SEQ_LIMIT;
    let extra = wheel.insert(9_000, 99).unwrap();
    assert!(wheel.seq < 10, "renumbered");
    wheel.check_invariants();
    assert_eq!(wheel.deadline(keys[4]), Some(9_000));
    assert_eq!(wheel.deadline(extra), Some(9_000));
    let drained: Vec<(Tick, u64)> = wheel
        .drain()
        .into_iter()
        .map(|x| (x.deadline, x.payload))
        .collect();
    let want = [
        (9_000, 4),
        (9_000, 2),
        (9_000, 0),
        (9_000, 99),
        (9_001, 5),
        (9_001, 3),
    ];
    assert_eq!(drained[..6], want);
    assert_eq!(drained[6], (9_001, 1));
}

/// A reset's placement waits in the nursery; an insert made meanwhile queues behind it,
/// so equal deadlines fire in the order of their last insert or reset, whether the batch
/// is pushed by filling up or by the poll that reaches them.
#[test]
fn inserts_queue_behind_deferred_resets() {
    for filler in [0, BATCH - 3, 3 * BATCH] {
        let mut wheel = HierarchicalWheel::new();
        // Resets to earlier deadlines, which place the timer anew (a later one may stay
        // where it is: see `moved`).
        let a = wheel.insert(710, 'a').unwrap();
        let b = wheel.insert(710, 'b').unwrap();
        let others: Vec<_> = (0..8).map(|_| wheel.insert(1_000, '-').unwrap()).collect();
        wheel.reset(a, 700).unwrap();
        assert_eq!(wheel.nursery.len(), 1, "the reset waits");
        wheel.insert(700, 'c').unwrap();
        wheel.reset(b, 700).unwrap();
        for i in 0..filler {
            wheel
                .reset(others[i % others.len()], 999 - i as u64)
                .unwrap();
        }
        wheel.check_invariants();
        assert_eq!(wheel.next_deadline(), Some(700));
        assert_eq!(wheel.poll(699), None);
        let order: Vec<char> = core::iter::from_fn(|| wheel.poll(700))
            .map(|e| e.payload)
            .collect();
        assert_eq!(order, ['a', 'c', 'b'], "with {filler} resets after");
        wheel.check_invariants();
    }
}

/// Resets within one slot and across slots order as new insertions when they come due,
/// also across the `u32` seq renumbering (which rebuilds every place).
#[test]
fn same_slot_resets_keep_fifo_across_seq_wrap() {
    let mut wheel: HierarchicalWheel<u32> = HierarchicalWheel::new();
    wheel.seq = SEQ_LIMIT - 4;
    // Level 2 (deadlines 4096..262143 ticks away): slot width 4096.
    let keys: Vec<_> = (0..8u32)
        .map(|i| wheel.insert(5_000 + u64::from(i % 2), i).unwrap())
        .collect();
    // Reset to the same deadline: 0 and 2 move to the back of it.
    wheel.reset(keys[0], 5_000).unwrap();
    wheel.reset(keys[2], 5_000).unwrap();
    // And one across slots.
    wheel.reset(keys[3], 9_000).unwrap();
    wheel.check_invariants();
    assert!(wheel.seq < 20, "renumbered");
    let fired: Vec<u32> = core::iter::from_fn(|| wheel.poll(10_000))
        .map(|e| e.payload)
        .collect();
    assert_eq!(fired, [4, 6, 0, 2, 1, 5, 7, 3]);
}

/// One step of [`the_nursery_never_changes_what_fires`].
#[derive(Clone, Debug)]
enum Step {
    /// Insert due `now + d`, or at `now - d` when `past`.
    Insert { d: u64, past: bool },
    /// Cancel the `i`th timer ever inserted (modulo), most often a young one.
    Cancel(usize),
    /// Reset the `i`th timer ever inserted to `now + d`.
    Reset(usize, u64),
    /// Move the clock by `step` and poll until nothing is due.
    Poll(u64),
    /// Hold inserts in the nursery from now on, as a compaction does.
    Hold,
}

fn nursery_step() -> impl proptest::strategy::Strategy<Value = Step> {
    use proptest::prelude::*;
    let d = prop_oneof![
        3 => 0u64..80,
        3 => 4_000u64..4_200,
        2 => Just(4_096u64),
        1 => 60u64..70,
        1 => 200_000u64..300_000,
    ];
    prop_oneof![
        6 => (d.clone(), proptest::bool::weighted(0.05))
            .prop_map(|(d, past)| Step::Insert { d, past }),
        4 => any::<usize>().prop_map(Step::Cancel),
        4 => (any::<usize>(), d).prop_map(|(i, d)| Step::Reset(i, d)),
        2 => prop_oneof![Just(0u64), 1u64..70, 4_000u64..4_200].prop_map(Step::Poll),
        1 => Just(Step::Hold),
    ]
}

/// Runs `steps` against a hierarchical wheel with a nursery of `capacity` and against the
/// lazy heap (itself checked against the reference model in `tests/model.rs`); they must
/// agree on every answer, and the wheel must pass its invariant check after every step.
fn agree_with_the_heap(capacity: usize, steps: &[Step]) {
    use crate::LazyHeap;
    let mut wheel: HierarchicalWheel<usize> = HierarchicalWheel::new();
    wheel.nursery = Nursery::with_capacity(capacity);
    let mut heap: LazyHeap<usize> = LazyHeap::new();
    let mut keys: Vec<(TimerKey, TimerKey)> = Vec::new();
    let mut now: Tick = 0;
    for (n, step) in steps.iter().enumerate() {
        match *step {
            Step::Insert { d, past } => {
                let at = if past { now.saturating_sub(d) } else { now + d };
                let id = keys.len();
                keys.push((wheel.insert(at, id).unwrap(), heap.insert(at, id).unwrap()));
            }
            // Mostly the latest timers: the young cancels the nursery is for.
            Step::Cancel(i) if !keys.is_empty() => {
                let back = i % 8.min(keys.len());
                let i = if i % 4 == 0 { i } else { keys.len() - 1 - back };
                let (w, h) = keys[i % keys.len()];
                assert_eq!(wheel.cancel(w), heap.cancel(h), "cancel at step {n}");
            }
            Step::Reset(i, d) if !keys.is_empty() => {
                let (w, h) = keys[i % keys.len()];
                assert_eq!(
                    wheel.reset(w, now + d).is_ok(),
                    heap.reset(h, now + d).is_ok(),
                    "reset at step {n}"
                );
            }
            Step::Cancel(_) | Step::Reset(..) => {}
            Step::Poll(by) => {
                now += by;
                loop {
                    let (w, h) = (wheel.poll(now), heap.poll(now));
                    assert_eq!(
                        w.as_ref().map(|e| (e.deadline, e.payload)),
                        h.as_ref().map(|e| (e.deadline, e.payload)),
                        "fired at step {n}"
                    );
                    if w.is_none() {
                        break;
                    }
                }
            }
            Step::Hold => wheel.nursery.set_holds_inserts(true),
        }
        wheel.check_invariants();
        assert_eq!(wheel.len(), heap.len(), "len at step {n}");
        assert!(
            wheel.next_deadline() <= heap.next_deadline() || heap.is_empty(),
            "next_deadline later than the earliest at step {n}"
        );
    }
    let rest = |v: Vec<Expired<usize>>| -> Vec<(Tick, usize)> {
        v.iter().map(|e| (e.deadline, e.payload)).collect()
    };
    assert_eq!(rest(wheel.drain()), rest(heap.drain()), "drain");
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig {
        cases: if cfg!(debug_assertions) { 200 } else { 2_000 },
        ..proptest::prelude::ProptestConfig::default()
    })]

    /// Placements held in the nursery, pushed when it fills, pushed all at once when the
    /// cursor could reach them, dropped when their timer was cancelled or reset since, and
    /// the nursery switching between holding inserts and not: none of it changes what
    /// fires, when, or in which order.
    #[test]
    fn the_nursery_never_changes_what_fires(
        capacity in proptest::sample::select(vec![2usize, 4, 8, 64]),
        steps in proptest::collection::vec(nursery_step(), 1..400),
    ) {
        agree_with_the_heap(capacity, &steps);
    }
}

/// The pushes that crowd a coarse slot stage it: 10,000 timers inserted into one level-4 slot
/// are cascaded ahead by their own inserts, a bounded piece each, and the poll that reaches
/// the slot, after a jump, does not carry them all down; the work counter sees every call.
#[test]
fn the_pushes_that_crowd_a_slot_stage_it_a_bounded_piece_each() {
    let mut wheel = HierarchicalWheel::new();
    // A level-4 slot: staged early, by its pushes (lower levels are staged just in time).
    let at = 5 << 24;
    for i in 0..10_000u64 {
        wheel.insert(at + i % 1_000, i).unwrap();
    }
    let staged = wheel.stats().cascaded;
    assert!(
        staged >= (10_000 - CROWDED - PUSH_STEP) as u64,
        "the inserts staged {staged} of 10,000"
    );
    let max = wheel.stats().max_call_work;
    assert!(
        (1..=PUSH_STEP as u64).contains(&max),
        "an insert did {max} units"
    );
    let first = wheel.poll(at).unwrap();
    assert_eq!(first.deadline, at);
    let max = wheel.stats().max_call_work;
    assert!(max < 10_000 / 4, "the poll after the jump did {max} units");
    let mut last = first.deadline;
    for now in at..=at + 1_000 {
        while let Some(e) = wheel.poll(now) {
            assert!(e.deadline <= now && e.deadline >= last);
            last = e.deadline;
        }
    }
    assert!(wheel.is_empty());
    wheel.check_invariants();
}

/// Polled once per tick, a wheel stages its crowded slots ahead of the cursor: 2,000 timers
/// due at one tick, 2,000 spread over one coarse slot and 2,000 inserted later into another
/// never cost one call more than the bound below; the invariants hold throughout and all fire
/// in order.
#[test]
fn polled_each_tick_no_call_carries_a_crowded_slot_down_at_once() {
    let mut wheel = HierarchicalWheel::new();
    for i in 0..2_000u64 {
        wheel.insert(1 + (i * 7) % 3_000, i).unwrap();
    }
    for i in 0..2_000u64 {
        wheel.insert(250_000 + 77, 10_000 + i).unwrap();
    }
    let mut staged = false;
    let mut last = 0;
    let mut fired = 0;
    for now in 0..=300_000u64 {
        if now == 400 {
            for i in 0..2_000u64 {
                wheel.insert(40_000 + i % 500, 20_000 + i).unwrap();
            }
        }
        while let Some(e) = wheel.poll(now) {
            assert!(e.deadline <= now, "early");
            assert!(e.deadline >= last, "out of order");
            last = e.deadline;
            fired += 1;
        }
        staged |= wheel.staged.iter().any(|&w| w != 0);
        if now % 97 == 0 {
            wheel.check_invariants();
        }
    }
    assert_eq!(fired, 6_000);
    assert!(staged, "no slot was staged");
    // A crowded slot carried down at once is 2,000.
    let max = wheel.stats().max_call_work;
    assert!(max <= POLLED_BOUND, "one call did {max} units of work");
}

/// A herd of timers moved in place by resets comes down behind references that took their
/// seqs later: it goes to the overtaken store a reference at a time and fires merged with
/// its tick's bucket in reset order, and no call sorts it whole.
#[test]
fn a_herd_moved_in_place_fires_in_reset_order_without_a_sort() {
    let mut wheel = HierarchicalWheel::new();
    let keys: Vec<_> = (0..3_000u64)
        .map(|i| wheel.insert(100 + i % 3_000, i).unwrap())
        .collect();
    wheel.insert(9_000, 10_000).unwrap();
    // Refreshed together, in reverse order of their homes, to one later tick.
    for &key in keys.iter().rev() {
        wheel.reset(key, 9_000).unwrap();
    }
    wheel.insert(9_000, 10_001).unwrap();
    let mut fired = Vec::new();
    let mut overtaken = false;
    for now in 0..=9_000 {
        while let Some(e) = wheel.poll(now) {
            assert_eq!(e.deadline, 9_000);
            fired.push(e.payload);
        }
        overtaken |= !wheel.overtaken.is_empty();
        if now % 61 == 0 {
            wheel.check_invariants();
        }
    }
    assert!(overtaken, "no reference was overtaken");
    let mut expected = vec![10_000];
    expected.extend((0..3_000).rev());
    expected.push(10_001);
    assert_eq!(
        fired, expected,
        "first-in first-out by insert and reset order"
    );
    // A sort of the herd would count 3,000.
    let max = wheel.stats().max_call_work;
    assert!(max <= POLLED_BOUND, "one call did {max} units of work");
}

/// The bound of `polled_each_tick_no_call_carries_a_crowded_slot_down_at_once`: one staging
/// step (rounded up to a chunk), one uncrowded slot's cascade, a nursery flush, and the slots
/// a poll visits.
const POLLED_BOUND: u64 = (STAGE_STEP + CROWDED + CHUNK + 1_024 + 64) as u64;

/// Every deadline has a slot, so no call brings a far store's timers in at once: 3,000 I/O
/// timeouts across the tick `2^36` (where six levels would end), polled when `next_deadline`
/// asks, and 3,000 timers beyond `2^40` and at `u64::MAX`, cost no call more than the bound,
/// and all fire in order.
#[test]
fn crossing_2_pow_36_polled_as_asked_costs_no_call_more_than_the_bound() {
    let origin: Tick = (1 << 36) - 30_000;
    let mut wheel = HierarchicalWheel::from_options(Options::new().start(origin)).unwrap();
    for i in 0..3_000u64 {
        wheel.insert(origin + 1 + (i * 7_919) % 60_000, i).unwrap();
    }
    for i in 0..3_000u64 {
        let far = if i % 3 == 0 {
            u64::MAX
        } else {
            (1 << 40) + i * 1_000_003
        };
        wheel.insert(far, 10_000 + i).unwrap();
    }
    let mut last = 0;
    let mut fired = 0;
    while let Some(now) = wheel.next_deadline() {
        while let Some(e) = wheel.poll(now) {
            assert!(e.deadline <= now, "early");
            assert!(e.deadline >= last, "out of order");
            last = e.deadline;
            fired += 1;
        }
        if fired % 500 == 0 {
            wheel.check_invariants();
        }
    }
    assert_eq!(fired, 6_000);
    let max = wheel.stats().max_call_work;
    assert!(max <= POLLED_BOUND, "one call did {max} units of work");
}

/// A jump across many `2^36`-tick spans drains 40,000 timers spread over `2^40` ticks (2,500
/// per span) in order, and no poll carries a span's timers down at once.
#[test]
fn a_jump_across_many_spans_costs_no_call_more_than_the_bound() {
    let mut wheel = HierarchicalWheel::new();
    let span: Tick = 1 << 40;
    for i in 0..40_000u64 {
        wheel
            .insert(1 + i.wrapping_mul(0x9E37_79B9_7F4A_7C15) % span, i)
            .unwrap();
    }
    let mut last = 0;
    let mut fired = 0;
    while let Some(e) = wheel.poll(span + 1) {
        assert!(e.deadline >= last, "out of order");
        last = e.deadline;
        fired += 1;
    }
    assert_eq!(fired, 40_000);
    wheel.check_invariants();
    let max = wheel.stats().max_call_work;
    assert!(max <= POLLED_BOUND, "one call did {max} units of work");
}

/// The most work of a poll that no poll before prepared for, reaching slots that were the
/// earliest of their levels (or held no more than [`EAGER`] references): a slot's cascade per
/// level the poll comes down through (such a slot holds at most [`EAGER`] references and a
/// chunk before it is staged, and a staged one at most that and two chunks more), plus
/// [`POLLED_BOUND`].
const STALLED_BOUND: u64 = POLLED_BOUND + (LEVELS * (EAGER + 2 * CHUNK)) as u64;

/// Drains `wheel` by polls at `now` only, checking the order; returns how many fired.
fn drain_at(wheel: &mut HierarchicalWheel<u64>, now: Tick) -> usize {
    let mut last = 0;
    let mut fired = 0;
    while let Some(e) = wheel.poll(now) {
        assert!(e.deadline <= now, "early");
        assert!(e.deadline >= last, "out of order");
        last = e.deadline;
        fired += 1;
        if fired % 10_000 == 0 {
            wheel.check_invariants();
        }
    }
    fired
}

/// A loop that sleeps through every wake-up `next_deadline` asks for and polls only when
/// 60,000 timers at one tick of level 2 are due finds their slot staged by the inserts, and
/// that slot's crowded part staged in turn: no call carries them all down at once.
#[test]
fn a_poll_after_a_stall_finds_a_crowded_slot_staged_by_its_pushes() {
    let mut wheel = HierarchicalWheel::new();
    let at: Tick = 60_000;
    for i in 0..60_000u64 {
        wheel.insert(at, i).unwrap();
    }
    wheel.check_invariants();
    let staged_in_turn = wheel.stages.iter().any(|s| s.parent().is_some());
    assert!(staged_in_turn, "no stage's slot was staged in turn");
    let mut fifo = Vec::new();
    while let Some(e) = wheel.poll(at) {
        assert_eq!(e.deadline, at);
        fifo.push(e.payload);
    }
    assert_eq!(fifo, (0..60_000).collect::<Vec<_>>(), "first-in first-out");
    wheel.check_invariants();
    let max = wheel.stats().max_call_work;
    assert!(max <= STALLED_BOUND, "one call did {max} units of work");
}

/// The same for 200,000 timers: a fifth spread over each of four spans (slots of levels 1 to
/// 4) and a fifth within ten ticks of `2^18 + 4,160`, in the earliest level-3 slot, whose
/// earliest level-2 and level-1 slots are staged in turn (every other slot past [`EAGER`]
/// references is the earliest of its level too), some of them reset later in place and some
/// cancelled, drained by one far jump.
#[test]
fn a_far_jump_after_a_stall_costs_no_call_more_than_the_bound() {
    let mut wheel = HierarchicalWheel::new();
    let mut keys = Vec::new();
    for i in 0..200_000u64 {
        let r = i.wrapping_mul(0x9E37_79B9_7F4A_7C15);
        let at = match i % 5 {
            4 => (1 << 18) + 4_096 + 64 + r % 10,
            k => 1 + r % [1 << 8, 1 << 13, 1 << 19, 1 << 25][k as usize],
        };
        keys.push(wheel.insert(at, i).unwrap());
    }
    let depth = |w: &HierarchicalWheel<u64>| {
        let parent = |i: usize| w.stages[i].parent();
        (0..w.stages.len())
            .map(|i| core::iter::successors(Some(i), |&j| parent(j)).count())
            .max()
    };
    assert_eq!(depth(&wheel), Some(3), "slots staged in turn, twice");
    let mut fired_early = 0;
    let mut cancelled = 0;
    for (n, &key) in keys.iter().enumerate() {
        // A timer due by tick 100 may have fired in the drain at that tick.
        if let Some(d) = wheel.deadline(key) {
            match n % 5 {
                0 => cancelled += usize::from(wheel.cancel(key).is_some()),
                1 => wheel.reset(key, d + 3_000).unwrap(),
                _ => {}
            }
        }
        if n == 50_000 {
            fired_early = drain_at(&mut wheel, 100);
        }
        if n % 20_000 == 0 {
            wheel.check_invariants();
        }
    }
    let fired = fired_early + drain_at(&mut wheel, 1 << 26);
    assert_eq!(fired + cancelled, 200_000);
    assert!(wheel.is_empty());
    let max = wheel.stats().max_call_work;
    assert!(max <= STALLED_BOUND, "one call did {max} units of work");
}
