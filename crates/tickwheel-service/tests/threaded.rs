//! The service on the real clock with its driver thread.
//!
//! These tests assert only strict invariants — never early, each timer ends exactly once,
//! counts add up, nothing lost — and lateness only against generous bounds, so they pass on a
//! loaded two-core machine.

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use tickwheel_service::{Builder, Delivery, Fired, KeyError, ScheduleError, TimerService};

const MS: Duration = Duration::from_millis(1);
/// How late a timer may be before a test calls it lost: far beyond any sane scheduling delay.
const GENEROUS: Duration = Duration::from_secs(5);

/// Payload: an id and the instant the producer asked for.
type Job = (u64, Instant);

#[test]
fn cancel_racing_fire_has_exactly_one_winner() {
    const THREADS: u64 = 4;
    const PER_THREAD: u64 = 30_000; // 120,000 timers in all
                                    // Cancel the timer scheduled this many steps earlier: its deadline (0-2 ms out) is then
                                    // about due, so cancels and fires split the timers and race on the same ones.
    const WINDOW: usize = 6_000;
    let (delivery, fired) = Delivery::channel();
    let service: TimerService<Job> = Builder::new().shards(4).build(delivery).unwrap();
    let collector = thread::spawn(move || {
        let mut got = Vec::new();
        for f in fired.iter() {
            got.push(f);
        }
        got
    });
    let cancelled: Vec<u64> = thread::scope(|s| {
        let joins: Vec<_> = (0..THREADS)
            .map(|t| {
                let h = service.handle();
                s.spawn(move || {
                    let mut keys = std::collections::VecDeque::new();
                    let mut won = Vec::new();
                    for i in 0..PER_THREAD {
                        let id = t * PER_THREAD + i;
                        let at = Instant::now() + Duration::from_millis(i % 3);
                        keys.push_back((id, h.schedule_at(at, (id, at)).unwrap()));
                        // Cancel timers scheduled a little earlier: their deadlines are around
                        // now, so the driver is firing the same ones.
                        if keys.len() > WINDOW {
                            let (id, key) = keys.pop_front().unwrap();
                            match h.cancel(key) {
                                Ok((got, _)) => {
                                    assert_eq!(got, id);
                                    won.push(id);
                                }
                                Err(KeyError::NotPending) => {}
                                Err(e) => panic!("unexpected {e}"),
                            }
                        }
                        if i % 1024 == 0 {
                            thread::yield_now();
                        }
                    }
                    for (id, key) in keys {
                        if let Ok((got, _)) = h.cancel(key) {
                            assert_eq!(got, id);
                            won.push(id);
                        }
                    }
                    won
                })
            })
            .collect();
        joins.into_iter().flat_map(|j| j.join().unwrap()).collect()
    });
    let deadline = Instant::now() + GENEROUS;
    while service.pending() > 0 {
        assert!(
            Instant::now() < deadline,
            "timers still pending long after their deadlines"
        );
        thread::sleep(MS);
    }
    let handle = service.handle();
    let unfired = service.shutdown();
    assert!(unfired.is_empty());
    // After shutdown the driver has finished delivering and recording: the counts are final.
    let stats = handle.stats();
    let fired: Vec<Fired<Job>> = collector.join().unwrap();

    let total = THREADS * PER_THREAD;
    let fired_ids: HashSet<u64> = fired.iter().map(|f| f.payload.0).collect();
    let cancelled_ids: HashSet<u64> = cancelled.iter().copied().collect();
    assert_eq!(fired_ids.len(), fired.len(), "a timer was delivered twice");
    assert_eq!(
        cancelled_ids.len(),
        cancelled.len(),
        "a timer was cancelled twice"
    );
    assert!(
        fired_ids.is_disjoint(&cancelled_ids),
        "cancel and fire both won"
    );
    assert_eq!(
        fired.len() as u64 + cancelled.len() as u64,
        total,
        "a timer was lost"
    );
    assert_eq!(stats.scheduled, total);
    assert_eq!(stats.fired, fired.len() as u64);
    assert_eq!(stats.cancelled, cancelled.len() as u64);
    for f in &fired {
        assert!(f.fired_at >= f.payload.1, "fired early");
        assert!(f.deadline >= f.payload.1);
    }
    assert_eq!(stats.lateness_us.len(), stats.fired);
    println!(
        "race: {} fired, {} cancelled; lateness p50 {} us, p99 {} us, max {} us",
        stats.fired,
        stats.cancelled,
        stats.lateness_us.value_at_quantile(0.5),
        stats.lateness_us.value_at_quantile(0.99),
        stats.lateness_us.max()
    );
}

#[test]
fn each_timer_ends_once_when_shutdown_races_producers() {
    let (delivery, fired) = Delivery::channel();
    let service: TimerService<u64> = Builder::new().shards(3).build(delivery).unwrap();
    let stop = AtomicBool::new(false);
    let (outcomes, unfired) = thread::scope(|s| {
        let joins: Vec<_> = (0..3u64)
            .map(|t| {
                let h = service.handle();
                let stop = &stop;
                s.spawn(move || {
                    let (mut cancelled, mut refused, mut tried) = (Vec::new(), Vec::new(), 0u64);
                    let mut last = None;
                    for i in 0.. {
                        let id = t << 32 | i;
                        tried += 1;
                        match h.schedule_after(Duration::from_millis(i % 5), id) {
                            Ok(key) => {
                                if let Some((old_id, old_key)) = last.replace((id, key)) {
                                    match h.cancel(old_key) {
                                        Ok(p) => {
                                            assert_eq!(p, old_id);
                                            cancelled.push(p);
                                        }
                                        Err(KeyError::NotPending | KeyError::Shutdown) => {}
                                        Err(KeyError::Failed) => unreachable!("no timer panics"),
                                    }
                                }
                            }
                            Err(ScheduleError::Shutdown(p)) => {
                                refused.push(p);
                                break;
                            }
                            Err(ScheduleError::Full(_)) => unreachable!("unbounded"),
                            Err(ScheduleError::Failed(_)) => unreachable!("no timer panics"),
                        }
                        if stop.load(Ordering::Relaxed) && i > 1_000_000 {
                            break;
                        }
                    }
                    (tried, cancelled, refused)
                })
            })
            .collect();
        thread::sleep(50 * MS);
        let unfired = TimerService::shutdown(service);
        stop.store(true, Ordering::Relaxed);
        let outcomes: Vec<_> = joins.into_iter().map(|j| j.join().unwrap()).collect();
        (outcomes, unfired)
    });
    let fired: Vec<u64> = fired.iter().map(|f| f.payload).collect(); // ends: driver exited
    let tried: u64 = outcomes.iter().map(|o| o.0).sum();
    let mut ended: Vec<u64> = fired;
    ended.extend(unfired.iter().map(|u| u.payload));
    for (_, cancelled, refused) in outcomes {
        ended.extend(cancelled);
        ended.extend(refused);
    }
    let n = ended.len();
    ended.sort_unstable();
    ended.dedup();
    assert_eq!(ended.len(), n, "a timer ended twice");
    assert_eq!(n as u64, tried, "a timer was lost");
}

#[test]
fn new_earliest_deadline_wakes_a_sleeping_driver() {
    let (delivery, fired) = Delivery::channel();
    let service: TimerService<&str> = Builder::new().build(delivery).unwrap();
    // Idle: the driver sleeps with no timeout; a schedule must wake it.
    thread::sleep(20 * MS);
    let t = Instant::now();
    let _ = service.schedule_after(10 * MS, "from idle").unwrap();
    let f = fired
        .recv_timeout(GENEROUS)
        .expect("lost wake-up from idle");
    assert_eq!(f.payload, "from idle");
    assert!(f.fired_at >= t + 10 * MS);

    // Sleeping until a far deadline: an earlier one must cut the sleep short.
    let _ = service
        .schedule_after(Duration::from_secs(30), "far")
        .unwrap();
    thread::sleep(20 * MS); // let the driver park until +30 s
    let t = Instant::now();
    let handle = service.handle();
    let _ = thread::spawn(move || handle.schedule_after(15 * MS, "near").unwrap())
        .join()
        .unwrap();
    let f = fired
        .recv_timeout(GENEROUS)
        .expect("lost wake-up: driver slept past a new earliest deadline");
    assert_eq!(f.payload, "near");
    assert!(f.fired_at >= t + 15 * MS);

    // A reset that brings a timer earlier wakes it too.
    let key = service
        .schedule_after(Duration::from_secs(20), "reset")
        .unwrap();
    thread::sleep(20 * MS);
    service.reset_after(key, 5 * MS).unwrap();
    let f = fired
        .recv_timeout(GENEROUS)
        .expect("lost wake-up after reset");
    assert_eq!(f.payload, "reset");
    assert_eq!(service.shutdown().len(), 1);
}

#[test]
fn panicking_callback_is_counted_and_the_driver_lives_on() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    let service: TimerService<u32> = Builder::new()
        .build(Delivery::callback(move |f: Fired<u32>| {
            if f.payload % 2 == 1 {
                panic!("deliberate test panic in callback {}", f.payload);
            }
            log.lock().unwrap().push(f.payload);
        }))
        .unwrap();
    for i in 0..20 {
        let _ = service
            .schedule_after(Duration::from_millis(u64::from(i % 4)), i)
            .unwrap();
    }
    let deadline = Instant::now() + GENEROUS;
    while service.stats().fired < 20 || seen.lock().unwrap().len() < 10 {
        assert!(Instant::now() < deadline);
        thread::sleep(MS);
    }
    // Later timers still fire after the panics.
    let _ = service.schedule_after(MS, 100).unwrap();
    while seen.lock().unwrap().len() < 11 {
        assert!(
            Instant::now() < deadline,
            "driver died after a panicking callback"
        );
        thread::sleep(MS);
    }
    assert_eq!(service.stats().panicked, 10);
}

#[test]
fn slow_callback_makes_others_late_not_lost() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    let service: TimerService<u32> = Builder::new()
        .build(Delivery::callback(move |f: Fired<u32>| {
            if f.payload == 0 {
                thread::sleep(100 * MS);
            }
            log.lock()
                .unwrap()
                .push((f.payload, f.fired_at - f.deadline));
        }))
        .unwrap();
    let at = Instant::now() + 5 * MS;
    for i in 0..50 {
        let _ = service.schedule_at(at, i).unwrap();
    }
    let deadline = Instant::now() + GENEROUS;
    while seen.lock().unwrap().len() < 50 {
        assert!(
            Instant::now() < deadline,
            "a timer behind a slow callback was lost"
        );
        thread::sleep(MS);
    }
    let seen = seen.lock().unwrap();
    let order: Vec<u32> = seen.iter().map(|s| s.0).collect();
    assert_eq!(
        order,
        (0..50).collect::<Vec<_>>(),
        "FIFO among equal deadlines"
    );
    assert!(
        seen[1..].iter().all(|s| s.1 >= 100 * MS),
        "others were delivered after the slow one"
    );
    assert!(service.stats().lateness_us.max() >= 100_000);
}

#[test]
fn shutdown_with_pending_timers_returns_them_and_later_calls_fail() {
    let (delivery, fired) = Delivery::channel();
    let service: TimerService<u64> = Builder::new().shards(2).build(delivery).unwrap();
    let handle = service.handle();
    let keys: Vec<_> = (0..1_000u64)
        .map(|i| {
            service
                .schedule_after(Duration::from_secs(60 + i), i)
                .unwrap()
        })
        .collect();
    let _ = service.schedule_after(Duration::ZERO, 5_000).unwrap();
    assert_eq!(fired.recv_timeout(GENEROUS).unwrap().payload, 5_000);
    let unfired = service.shutdown();
    assert_eq!(
        unfired.iter().map(|u| u.payload).collect::<Vec<_>>(),
        (0..1_000).collect::<Vec<_>>(),
        "every unfired payload, in deadline order"
    );
    assert_eq!(unfired[7].key, keys[7]);
    assert!(
        fired.recv().is_err(),
        "the driver exited and closed the channel"
    );
    assert!(handle.is_shutdown());
    assert!(matches!(
        handle.schedule_after(MS, 1),
        Err(ScheduleError::Shutdown(1))
    ));
    assert_eq!(handle.cancel(keys[0]), Err(KeyError::Shutdown));
    assert_eq!(handle.reset_after(keys[1], MS), Err(KeyError::Shutdown));
    let stats = handle.stats();
    assert_eq!((stats.drained, stats.fired, stats.pending), (1_000, 1, 0));
}

#[test]
fn capacity_is_enforced_and_freed_by_cancel_and_fire() {
    let (delivery, fired) = Delivery::channel();
    let service: TimerService<u32> = Builder::new()
        .shards(4)
        .capacity(8)
        .build(delivery)
        .unwrap();
    let keys: Vec<_> = (0..8)
        .map(|i| service.schedule_after(Duration::from_secs(60), i).unwrap())
        .collect();
    match service.schedule_after(MS, 8) {
        Err(ScheduleError::Full(8)) => {}
        other => panic!("expected Full(8), got {other:?}"),
    }
    service.cancel(keys[0]).unwrap();
    let _ = service.schedule_after(MS, 9).unwrap(); // fits again, then fires
    assert_eq!(fired.recv_timeout(GENEROUS).unwrap().payload, 9);
    let _ = service.schedule_after(Duration::from_secs(60), 10).unwrap();
    assert!(service.schedule_after(MS, 11).is_err());
    let stats = service.stats();
    assert_eq!((stats.pending, stats.rejected), (8, 2));
}

#[test]
fn dropping_the_service_joins_the_driver_and_drops_payloads() {
    let token = Arc::new(());
    let in_callback = token.clone();
    let service: TimerService<Arc<()>> = Builder::new()
        .build(Delivery::callback(move |_f| {
            let _keep = &in_callback;
        }))
        .unwrap();
    let handle = service.handle();
    let _ = service
        .schedule_after(Duration::from_secs(60), token.clone())
        .unwrap();
    assert_eq!(Arc::strong_count(&token), 3);
    drop(service);
    // The pending payload was dropped and the driver thread (owner of the callback) is gone.
    assert_eq!(Arc::strong_count(&token), 1);
    assert!(handle.is_shutdown());
}

/// utime + stime of one thread, in clock ticks (usually 10 ms), from /proc.
fn thread_cpu_ticks(name: &str) -> Option<u64> {
    for task in std::fs::read_dir("/proc/self/task").ok()? {
        let dir = task.ok()?.path();
        let comm = std::fs::read_to_string(dir.join("comm")).ok()?;
        if comm.trim() == name {
            let stat = std::fs::read_to_string(dir.join("stat")).ok()?;
            // Fields after the ")" that closes the name: state is field 3; utime 14, stime 15.
            let rest = &stat[stat.rfind(')')? + 2..];
            let fields: Vec<&str> = rest.split_whitespace().collect();
            return Some(fields[11].parse::<u64>().ok()? + fields[12].parse::<u64>().ok()?);
        }
    }
    None
}

#[test]
fn an_idle_service_with_far_timers_uses_no_cpu() {
    let name = "tw-idle-test";
    let (delivery, _fired) = Delivery::channel();
    let service: TimerService<u32> = Builder::new().thread_name(name).build(delivery).unwrap();
    for i in 0..100_000u32 {
        let _ = service
            .schedule_after(
                Duration::from_secs(3_600) + Duration::from_millis(u64::from(i)),
                i,
            )
            .unwrap();
    }
    thread::sleep(100 * MS);
    let Some(before) = thread_cpu_ticks(name) else {
        eprintln!("no /proc/self/task: skipping the CPU measurement");
        return;
    };
    thread::sleep(Duration::from_secs(1));
    let after = thread_cpu_ticks(name).unwrap();
    // A 1 ms ticker would burn thousands of wake-ups a second; a sleeping driver ~nothing.
    assert!(
        after - before <= 2,
        "idle driver used {} clock ticks in 1 s",
        after - before
    );
    assert_eq!(service.pending(), 100_000);
}

#[test]
fn handles_are_clone_send_sync() {
    fn check<H: Clone + Send + Sync + 'static>() {}
    check::<tickwheel_service::TimerHandle<String>>();
    check::<tickwheel_service::TimerHandle<u64, Box<dyn tickwheel::Timer<u64> + Send>>>();
    fn send<S: Send + Sync>() {}
    send::<TimerService<u64>>();
    let _ = AtomicUsize::new(0);
}

#[test]
fn shutdown_does_not_hang_on_a_full_bounded_channel() {
    // A consumer that stopped receiving: the driver waits on the full channel, and shutdown
    // must still return (the timer the driver holds is counted as undelivered).
    let (tx, rx) = tickwheel_service::crossbeam_channel::bounded(1);
    let service: TimerService<u32> = Builder::new().build(Delivery::Channel(tx)).unwrap();
    let handle = service.handle();
    for i in 0..3 {
        let _ = service.schedule_after(Duration::ZERO, i).unwrap();
    }
    let deadline = Instant::now() + GENEROUS;
    while handle.stats().fired < 3 {
        assert!(
            Instant::now() < deadline,
            "the driver did not take the due timers"
        );
        thread::sleep(MS);
    }
    let start = Instant::now();
    assert!(service.shutdown().is_empty());
    assert!(
        start.elapsed() < GENEROUS,
        "shutdown hung on a full channel"
    );
    assert_eq!(rx.try_recv().unwrap().payload, 0);
    assert_eq!(handle.stats().undelivered, 2);
}

#[test]
fn every_implementation_sleeps_through_far_timers() {
    // A wheel may answer next_deadline with a slot boundary before the real deadline; that may
    // cost an occasional early wake-up, never a periodic tick.
    for kind in tickwheel::Kind::ALL {
        let (delivery, _fired) = Delivery::channel();
        let service = Builder::new()
            .build_with(delivery, |o| kind.build::<u32>(o))
            .unwrap();
        for i in 0..10_000u32 {
            let _ = service
                .schedule_after(
                    Duration::from_secs(3_600) + Duration::from_millis(u64::from(i)),
                    i,
                )
                .unwrap();
        }
        thread::sleep(50 * MS);
        let before = service.stats().wakeups;
        thread::sleep(300 * MS);
        let woke = service.stats().wakeups - before;
        assert!(woke <= 3, "{kind}: idle driver woke {woke} times in 300 ms");
        assert_eq!(service.shutdown().len(), 10_000);
    }
}

#[test]
fn a_wheel_s_early_answer_is_counted_as_an_empty_wakeup() {
    let (delivery, fired) = Delivery::channel();
    let service = Builder::new().shards(1).build(delivery).unwrap();
    // 300 ticks out waits in a level-1 slot that starts at tick 256. Once the 10 ms timer has
    // fired, the wheel's next answer is that slot's start: the driver wakes there, cascades
    // the slot, finds nothing due, and sleeps on until 300.
    let _ = service.schedule_after(MS * 10, 0u32).unwrap();
    let key = service.schedule_after(MS * 300, 1u32).unwrap();
    assert_eq!(
        fired.recv_timeout(Duration::from_secs(30)).unwrap().payload,
        0
    );
    let f = fired.recv_timeout(Duration::from_secs(30)).unwrap();
    assert_eq!(f.key, key);
    let stats = service.stats();
    assert!(stats.empty_wakeups >= 1, "{stats:?}");
    assert!(stats.empty_wakeups < stats.wakeups, "{stats:?}");
}
