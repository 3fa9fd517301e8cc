//! Every adapter against a reference model, so the benchmarks compare structures that do the
//! same work: nothing fires early, everything due fires, cancel and reset act on the right timer,
//! and each workload keeps its live count.

use std::collections::BTreeMap;

use tickwheel_benches::workload::{ChurnIo, ChurnRandom, PollIdle, ResetLater, Runner, Workload};
use tickwheel_benches::{for_each_adapter, Adapter, Rng};

/// Random inserts, cancels, resets and polls with jumps of 0..=300 ticks; checks each fire.
fn model_check<A: Adapter>(seed: u64) {
    let mut a = A::with_capacity(0);
    let mut rng = Rng::new(seed);
    // payload -> (deadline, key)
    let mut live: BTreeMap<u64, (u64, A::Key)> = BTreeMap::new();
    let mut now = 0u64;
    let mut next_payload = 0u64;
    a.scope(|a| {
        for step in 0..4_000 {
            match rng.below(10) {
                0..=4 => {
                    let deadline = now + rng.range(1, 5_000);
                    let key = a.insert(deadline, next_payload);
                    live.insert(next_payload, (deadline, key));
                    next_payload += 1;
                }
                5 | 6 if !live.is_empty() => {
                    let nth = rng.below(live.len() as u64) as usize;
                    let p = *live.keys().nth(nth).unwrap();
                    let (_, key) = live.remove(&p).unwrap();
                    assert!(a.cancel(key), "{}: cancel of a live timer failed", A::NAME);
                }
                7 if !live.is_empty() => {
                    let nth = rng.below(live.len() as u64) as usize;
                    let p = *live.keys().nth(nth).unwrap();
                    let (_, key) = live[&p];
                    let deadline = now + rng.range(1, 5_000);
                    let key = a.reset(key, deadline, p);
                    live.insert(p, (deadline, key));
                }
                _ => {
                    now += rng.below(301);
                    while let Some(p) = a.poll(now) {
                        let (deadline, _) = live
                            .remove(&p)
                            .unwrap_or_else(|| panic!("{}: fired unknown {p}", A::NAME));
                        assert!(deadline <= now, "{}: early fire at step {step}", A::NAME);
                    }
                    if let Some(due) = live.values().map(|v| v.0).min() {
                        assert!(due > now, "{}: {due} due at {now} not fired", A::NAME);
                        let next = a.next_deadline().expect("pending timers");
                        assert!(next <= due, "{}: next_deadline {next} > {due}", A::NAME);
                    }
                }
            }
            assert_eq!(a.len(), live.len(), "{}: len at step {step}", A::NAME);
        }
    });
}

#[test]
fn adapters_agree_with_the_model() {
    for seed in 1..=3 {
        for_each_adapter!(A => model_check::<A>(seed));
    }
}

#[test]
fn workloads_keep_their_live_count() {
    let n = 2_000;
    for_each_adapter!(A => {
        for w in Workload::ALL {
            Runner::<A>::new(w, n).run(2);
        }
        let mut churn = ChurnRandom::<A>::new(n);
        churn.run(5_000);
        assert_eq!(churn.adapter().len(), n, "{}", A::NAME);
        let mut io = ChurnIo::<A>::new(n);
        io.run(50_000);
        assert_eq!(io.adapter().len(), n, "{}", A::NAME);
        let mut reset = ResetLater::<A>::new(n);
        reset.run(50_000);
        assert_eq!(reset.adapter().len(), n, "{}", A::NAME);
        let mut idle = PollIdle::<A>::new(n);
        idle.run(100);
        assert_eq!(idle.adapter().len(), n, "{}", A::NAME);
    });
}

/// The floor store (profile binary only) keeps keys honest: a cancelled key is stale, also once
/// its slot is reused, and `len` follows.
#[test]
fn floor_store_checks_its_keys() {
    use tickwheel_benches::Floor;
    let mut f = Floor::with_capacity(4);
    let a = f.insert(10, 1);
    let b = f.insert(20, 2);
    assert!(f.cancel(a));
    assert!(!f.cancel(a), "a cancelled key is stale");
    let c = f.insert(30, 3);
    assert_eq!(c.0, a.0, "the freed slot is reused");
    assert!(!f.cancel(a), "the old key stays stale after reuse");
    assert_eq!(f.reset(b, 40, 2), b);
    assert_eq!(f.len(), 2);
    assert!(f.cancel(b) && f.cancel(c));
    assert!(f.is_empty());
    assert_eq!(f.poll(u64::MAX), None);
}
