//! Service semantics on the deterministic core: no threads, the clock in the test's
//! hands, so every expectation is exact.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tickwheel::{FromOptions, HierarchicalWheel};
use tickwheel_service::{
    Builder, Delivery, Fired, KeyError, ManualDriver, ScheduleError, TimerHandle,
};

const MS: Duration = Duration::from_millis(1);

fn channel_driver<T>(
    shards: usize,
) -> (
    ManualDriver<T, HierarchicalWheel<T>>,
    tickwheel_service::crossbeam_channel::Receiver<Fired<T>>,
) {
    let (delivery, fired) = Delivery::channel();
    (
        Builder::new()
            .shards(shards)
            .build_manual(delivery)
            .unwrap(),
        fired,
    )
}

#[test]
fn earlier_deadline_arms_a_wake_up_later_one_does_not() {
    // An indexed heap answers next_deadline exactly (a wheel may answer a slot boundary
    // earlier), so the armed instants below are exact.
    let (delivery, _fired) = Delivery::channel();
    let mut driver = Builder::new()
        .shards(4)
        .build_manual_with(delivery, tickwheel::IndexedHeap::<u32>::from_options)
        .unwrap();
    let t0 = driver.clock().origin();
    let h = driver.handle();
    assert_eq!(
        driver.arm(t0),
        None,
        "an idle service sleeps with no timeout (no tick)"
    );
    assert!(!driver.woken());
    let _ = h.schedule_at(t0 + 100 * MS, 1).unwrap();
    assert!(driver.woken(), "first timer wakes an idle driver");

    driver.turn(t0);
    assert_eq!(driver.arm(t0), Some(t0 + 100 * MS));
    let _ = h.schedule_at(t0 + 200 * MS, 2).unwrap();
    let k3 = h.schedule_at(t0 + 100 * MS, 3).unwrap();
    assert!(
        !driver.woken(),
        "deadlines at or after the armed one pay no wake-up"
    );
    h.reset_at(k3, t0 + 150 * MS).unwrap();
    assert!(!driver.woken());
    // A reset from another thread that brings a timer earlier wakes it.
    let h2 = h.clone();
    std::thread::spawn(move || h2.reset_at(k3, t0 + 40 * MS).unwrap())
        .join()
        .unwrap();
    assert!(driver.woken(), "an earlier deadline must wake the driver");

    driver.turn(t0 + 10 * MS);
    assert_eq!(driver.arm(t0 + 10 * MS), Some(t0 + 40 * MS));
    let _ = h.schedule_at(t0, 4).unwrap(); // in the past
    assert!(driver.woken());
}

#[test]
fn armed_wake_up_is_never_in_the_past_or_now() {
    // After a turn that found nothing at tick n, the driver looks again at n + 1 at the
    // earliest, whatever a wheel's next_deadline answers: no busy loop.
    let (mut driver, _fired) = channel_driver::<u32>(2);
    let t0 = driver.clock().origin();
    let h = driver.handle();
    for i in 0..200u32 {
        let _ = h.schedule_at(t0 + (i * 37 % 5_000) * MS, i).unwrap();
    }
    let mut now = t0;
    for _ in 0..400 {
        driver.run_due(now);
        match driver.arm(now) {
            Some(next) => {
                assert!(next > now);
                now = next;
            }
            None => break,
        }
    }
    assert_eq!(h.pending(), 0);
}

#[test]
fn panicking_callback_is_caught_and_counted_and_later_timers_fire() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    let delivery = Delivery::callback(move |f: Fired<u32>| {
        if f.payload % 3 == 0 {
            panic!("callback fails on {}", f.payload);
        }
        log.lock().unwrap().push(f.payload);
    });
    let mut driver = Builder::new().shards(1).build_manual(delivery).unwrap();
    let t0 = driver.clock().origin();
    let h: TimerHandle<u32> = driver.handle();
    for i in 0..10u32 {
        let _ = h.schedule_at(t0 + i * MS, i).unwrap();
    }
    assert_eq!(driver.run_due(t0 + 20 * MS), 10);
    assert_eq!(*seen.lock().unwrap(), [1, 2, 4, 5, 7, 8]);
    let stats = driver.stats();
    assert_eq!((stats.panicked, stats.fired), (4, 10));
    // The driver lives on.
    let _ = h.schedule_at(t0 + 21 * MS, 10).unwrap();
    assert_eq!(driver.run_due(t0 + 30 * MS), 1);
    assert_eq!(seen.lock().unwrap().last(), Some(&10));
}

#[test]
fn callback_runs_with_no_lock_held_and_may_use_the_service() {
    // The callback schedules, cancels and resets through the handle (on every shard). With a
    // shard lock held this would deadlock: parking_lot mutexes are not reentrant.
    let slot: Arc<Mutex<Option<TimerHandle<u32>>>> = Arc::new(Mutex::new(None));
    let inner = slot.clone();
    let delivery = Delivery::callback(move |f: Fired<u32>| {
        let h = inner.lock().unwrap().clone().unwrap();
        if f.payload < 5 {
            let k = h.schedule_at(f.deadline, 100 + f.payload).unwrap();
            h.reset_at(k, f.deadline + MS).unwrap();
            let _ = h.cancel(f.key); // stale: it just fired
            let _ = h.pending();
            let _ = h.stats();
        }
    });
    let mut driver = Builder::new().shards(3).build_manual(delivery).unwrap();
    let t0 = driver.clock().origin();
    *slot.lock().unwrap() = Some(driver.handle());
    for i in 0..5 {
        let _ = driver.handle().schedule_at(t0, i).unwrap();
    }
    assert_eq!(driver.run_due(t0), 5);
    assert_eq!(driver.handle().pending(), 5);
    assert_eq!(driver.run_due(t0 + MS), 5);
    assert_eq!(driver.handle().pending(), 0);
}

#[test]
fn full_hands_the_payload_back_and_room_returns_after_cancel_or_fire() {
    let (delivery, fired) = Delivery::channel();
    let mut driver = Builder::new()
        .shards(2)
        .capacity(3)
        .build_manual::<String>(delivery)
        .unwrap();
    let t0 = driver.clock().origin();
    let h = driver.handle();
    let a = h.schedule_at(t0 + MS, "a".to_string()).unwrap();
    let _ = h.schedule_at(t0 + 2 * MS, "b".to_string()).unwrap();
    let _ = h.schedule_at(t0 + 3 * MS, "c".to_string()).unwrap();
    let err = h.schedule_at(t0, "d".to_string()).unwrap_err();
    assert!(err.is_transient());
    assert!(err.to_string().contains("capacity"));
    assert_eq!(err.into_inner(), "d");
    assert_eq!(h.cancel(a).unwrap(), "a");
    let _ = h.schedule_at(t0 + 9 * MS, "e".to_string()).unwrap();
    assert!(matches!(
        h.schedule_at(t0, "f".to_string()),
        Err(ScheduleError::Full(_))
    ));
    driver.run_due(t0 + 2 * MS);
    assert_eq!(fired.try_recv().unwrap().payload, "b");
    let _ = h.schedule_at(t0 + 9 * MS, "g".to_string()).unwrap();
    let s = driver.stats();
    assert_eq!((s.pending, s.rejected, s.cancelled, s.fired), (3, 2, 1, 1));
}

#[test]
fn a_timer_that_never_fires_comes_back_without_a_deadline() {
    let (driver, _fired) = channel_driver::<u64>(1);
    let t0 = driver.clock().origin();
    let h = driver.handle();
    let never = h.schedule_after(Duration::MAX, 1).unwrap();
    let soon = h.schedule_at(t0 + 5 * MS, 2).unwrap();
    let unfired = driver.shutdown();
    let deadline = |key| unfired.iter().find(|u| u.key == key).unwrap().deadline;
    assert_eq!(deadline(never), None, "Duration::MAX never comes due");
    assert_eq!(deadline(soon), Some(t0 + 5 * MS));
}

#[test]
fn shutdown_returns_every_unfired_payload_then_errors_are_permanent() {
    let (mut driver, fired) = channel_driver::<u64>(4);
    let t0 = driver.clock().origin();
    let handles: Vec<_> = (0..4).map(|_| driver.handle()).collect();
    // Schedule from four threads so several shards hold timers.
    let keys: Vec<_> = std::thread::scope(|s| {
        let joins: Vec<_> = handles
            .iter()
            .enumerate()
            .map(|(t, h)| {
                s.spawn(move || {
                    (0..250u64)
                        .map(|i| {
                            let id = t as u64 * 1000 + i;
                            h.schedule_at(t0 + Duration::from_millis(i % 50), id)
                                .unwrap()
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        joins.into_iter().flat_map(|j| j.join().unwrap()).collect()
    });
    assert!(driver.stats().shards == 4);
    driver.run_due(t0 + 24 * MS);
    let delivered: Vec<u64> = fired.try_iter().map(|f| f.payload).collect();
    assert_eq!(delivered.len(), 4 * 125);
    let h = driver.handle();
    let unfired = driver.shutdown();
    assert_eq!(unfired.len(), 4 * 125);
    let mut all: Vec<u64> = delivered
        .into_iter()
        .chain(unfired.iter().map(|u| u.payload))
        .collect();
    all.sort_unstable();
    all.dedup();
    assert_eq!(all.len(), 1000, "each timer fired or was handed back, once");
    assert!(unfired.windows(2).all(|w| w[0].deadline <= w[1].deadline));

    assert!(h.is_shutdown());
    assert!(matches!(
        h.schedule_at(t0, 7),
        Err(ScheduleError::Shutdown(7))
    ));
    assert_eq!(h.cancel(keys[0]), Err(KeyError::Shutdown));
    assert_eq!(h.reset_at(keys[999], t0), Err(KeyError::Shutdown));
    let err = h.schedule_after(MS, 8).unwrap_err();
    assert!(!err.is_transient());
    assert!(err.to_string().contains("shut down"));
    assert_eq!(h.pending(), 0);
}

#[test]
fn lateness_is_recorded_from_the_tick_boundary() {
    let (mut driver, fired) = channel_driver::<u32>(1);
    let t0 = driver.clock().origin();
    let h = driver.handle();
    let _ = h.schedule_at(t0 + Duration::from_micros(1_500), 1).unwrap(); // rounds up to 2 ms
    driver.run_due(t0 + 7 * MS);
    let f = fired.try_recv().unwrap();
    assert_eq!(f.deadline, t0 + 2 * MS);
    assert_eq!(f.fired_at - f.deadline, 5 * MS);
    let lateness = driver.stats().lateness_us;
    assert_eq!(lateness.len(), 1);
    assert!(lateness.equivalent(lateness.max(), 5_000));
}

#[test]
fn dropped_receiver_counts_undelivered() {
    let (mut driver, fired) = channel_driver::<u32>(1);
    drop(fired);
    let t0 = driver.clock().origin();
    let _ = driver.handle().schedule_at(t0, 1).unwrap();
    driver.run_due(t0);
    assert_eq!(driver.stats().undelivered, 1);
}

#[test]
fn dropping_the_manual_driver_shuts_down() {
    let count = Arc::new(AtomicUsize::new(0));
    struct Counted(Arc<AtomicUsize>);
    impl Drop for Counted {
        fn drop(&mut self) {
            self.0.fetch_add(1, Ordering::Relaxed);
        }
    }
    let (delivery, _fired) = Delivery::channel();
    let driver = Builder::new().build_manual::<Counted>(delivery).unwrap();
    let h = driver.handle();
    let _ = h
        .schedule_after(Duration::from_secs(60), Counted(count.clone()))
        .unwrap();
    drop(driver);
    assert_eq!(
        count.load(Ordering::Relaxed),
        1,
        "the unfired payload was dropped"
    );
    assert!(h.is_shutdown());
    let refused = h.schedule_after(MS, Counted(count.clone())).unwrap_err();
    assert!(matches!(refused, ScheduleError::Shutdown(_)));
}
