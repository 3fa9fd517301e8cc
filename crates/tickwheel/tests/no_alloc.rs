//! Steady state allocates nothing: once the slab and the structures have grown to the working
//! set, insert, cancel, reset and poll (with cascades and fires) reuse memory on every
//! implementation. Counted by a counting global allocator in this test binary alone.

use tickwheel::{Kind, Options, Tick, Timer};

/// An I/O-timeout-shaped churn: request deadlines inserted and mostly cancelled, idle timeouts
/// pushed later, time moving one tick per round so some timers fire and cascade.
fn churn(
    timer: &mut dyn Timer<u64>,
    rounds: u64,
    now: &mut Tick,
    keys: &mut [tickwheel::TimerKey],
) {
    let mut x = 0x2545_F491_4F6C_DD1Du64;
    for round in 0..rounds {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let slot = (x % keys.len() as u64) as usize;
        let key = keys[slot];
        if round % 3 == 0 {
            // The response arrived: cancel (if still pending) and issue the next request.
            timer.cancel(key);
            keys[slot] = timer
                .insert(*now + 1 + x % 5_000, round)
                .expect("unbounded");
        } else if timer.reset(key, *now + 30_000 + x % 100).is_err() {
            keys[slot] = timer
                .insert(*now + 1 + x % 70_000, round)
                .expect("unbounded");
        }
        *now += 1;
        while timer.poll(*now).is_some() {}
    }
}

#[test]
fn steady_state_does_not_allocate() {
    for kind in Kind::ALL {
        let mut timer = kind.build::<u64>(Options::new()).unwrap();
        let mut now = 1_000;
        let mut keys: Vec<_> = (0..20_000)
            .map(|i| timer.insert(now + 1 + i * 3, i).unwrap())
            .collect();
        // Warm up until every structure has reached its working-set size. The hierarchical
        // wheel's slot vectors circulate through a pool, which settles once every level-2 slot
        // (4 096 ticks each, 262 144 a turn; deadlines here reach 70 000 ticks ahead) has been
        // used a few times: 800 000 rounds is three turns.
        churn(&mut *timer, 800_000, &mut now, &mut keys);
        let info = allocation_counter::measure(|| {
            churn(&mut *timer, 200_000, &mut now, &mut keys);
        });
        assert_eq!(
            info.count_total, 0,
            "{kind}: {} allocations in steady state",
            info.count_total
        );
        assert!(
            timer.stats().fired > 0 && timer.stats().cancelled > 0,
            "{kind}: churn did work"
        );
        timer.check_invariants();
    }
}
