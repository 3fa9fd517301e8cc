use alloc::vec::Vec;

use super::HierarchicalWheel;
use crate::{FromOptions, Options, Timer};

const BOUND: u64 = HierarchicalWheel::<()>::max_call_work_bound();

/// Drives `wheel` as an event loop would: polls at every `next_deadline`, checking the
/// order, the bound and the invariants on the way; returns the fired deadlines.
fn run_out<T>(wheel: &mut HierarchicalWheel<T>, check_every: usize) -> Vec<u64> {
    let mut fired = Vec::new();
    let mut steps = 0;
    while let Some(next) = wheel.next_deadline() {
        let now = next.max(wheel.now());
        while let Some(e) = wheel.poll(now) {
            assert!(e.deadline <= now, "fired early");
            fired.push(e.deadline);
        }
        steps += 1;
        if steps % check_every == 0 {
            wheel.check_invariants();
        }
        assert!(wheel.stats().max_call_work <= BOUND);
    }
    assert!(fired.windows(2).all(|w| w[0] <= w[1]), "out of order");
    fired
}

#[test]
fn herd_behind_one_timer_is_bounded() {
    let mut wheel = HierarchicalWheel::new();
    wheel.insert(4_950, u32::MAX).unwrap();
    for i in 0..100_000u32 {
        wheel.insert(5_000, i).unwrap();
    }
    wheel.check_invariants();
    let fired = run_out(&mut wheel, 10_000);
    assert_eq!(fired.len(), 100_001);
    assert!(
        wheel.stats().max_call_work <= BOUND,
        "{}",
        wheel.stats().max_call_work
    );
}

#[test]
fn equal_deadlines_leave_in_insertion_order_through_splits_and_cascades() {
    let mut wheel = HierarchicalWheel::new();
    let keys: Vec<_> = (0..5_000u32)
        .map(|i| wheel.insert(300_000 + u64::from(i % 3), i).unwrap())
        .collect();
    for key in keys.iter().step_by(7) {
        wheel.reset(*key, 300_001).unwrap();
    }
    wheel.check_invariants();
    let mut last = [None::<u32>; 3];
    let mut resets_seen = false;
    while let Some(e) = wheel.poll(400_000) {
        let group = (e.deadline - 300_000) as usize;
        let i = e.payload;
        let was_reset = i % 7 == 0;
        if group == 1 && was_reset {
            resets_seen = true;
        } else if group == 1 {
            assert!(!resets_seen, "a reset timer left before one never reset");
        }
        if !(group == 1 && was_reset) {
            if let Some(prev) = last[group] {
                assert!(prev < i, "{prev} before {i} at {}", e.deadline);
            }
            last[group] = Some(i);
        }
    }
    assert!(wheel.is_empty());
    wheel.check_invariants();
}

#[test]
fn cancelled_ahead_leaves_nothing_to_skip() {
    let mut wheel = HierarchicalWheel::new();
    let keys: Vec<_> = (0..200_000u32)
        .map(|i| wheel.insert(70_000, i).unwrap())
        .collect();
    for key in &keys[..100_000] {
        wheel.cancel(*key).unwrap();
    }
    wheel.check_invariants();
    let first = wheel.poll(70_000).unwrap();
    assert_eq!(first.payload, 100_000);
    assert!(wheel.stats().max_call_work <= BOUND);
}

#[test]
fn overdue_timers_fire_first_in_order() {
    let mut wheel = HierarchicalWheel::from_options(Options::new().start(1 << 40)).unwrap();
    let now = 1u64 << 40;
    for d in [now - 1, now - 100, now - 5_000, now - 5_000, 3, now] {
        wheel.insert(d, d).unwrap();
    }
    for i in 0..100u64 {
        wheel.insert(now - 4_000 - (i % 40), i).unwrap();
    }
    wheel.check_invariants();
    let fired = run_out(&mut wheel, 1);
    assert_eq!(fired.len(), 106);
    assert_eq!(fired[0], 3);
}

#[test]
fn nodes_are_released_and_reused() {
    let mut wheel = HierarchicalWheel::new();
    for round in 0..3u64 {
        let keys: Vec<_> = (0..10_000u64)
            .map(|i| wheel.insert(1_000 + i * 7 + round, i).unwrap())
            .collect();
        let grown = wheel.nodes.count();
        for key in keys {
            wheel.cancel(key).unwrap();
        }
        wheel.check_invariants();
        assert_eq!(wheel.nodes.free().len() + super::LEVELS, grown);
    }
}

#[test]
fn far_jumps_complete() {
    let mut wheel = HierarchicalWheel::new();
    for i in 0..1_000u64 {
        wheel.insert(i << 40, i).unwrap();
        wheel.insert(u64::MAX - i, i).unwrap();
    }
    let mut n = 0;
    while wheel.poll(u64::MAX).is_some() {
        n += 1;
        assert!(wheel.stats().max_call_work <= BOUND);
    }
    assert_eq!(n, 2_000);
    wheel.check_invariants();
}
