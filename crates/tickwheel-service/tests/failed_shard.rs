//! A `Timer` that panics: the service counts it, fails that shard alone, refuses its keys with
//! a clear error, keeps the other shards firing, and hands back at shutdown what the failed
//! timer still gives up.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tickwheel::{
    ConfigError, Expired, FromOptions, HierarchicalWheel, InsertError, Options, StaleKeyError,
    Stats, Tick, Timer, TimerKey,
};
use tickwheel_service::{Builder, Delivery, KeyError, ScheduleError, ServiceKey};

const MS: Duration = Duration::from_millis(1);

/// Which method panics (set at any time, from the test).
#[derive(Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
enum Fault {
    None = 0,
    Poll = 1,
    Insert = 2,
    Drain = 3,
}

/// A hierarchical wheel that panics in the method its switch names.
struct Panicky {
    inner: HierarchicalWheel<u32>,
    fault: Arc<AtomicU8>,
}

impl Panicky {
    fn trip(&self, here: Fault) {
        if self.fault.load(Ordering::SeqCst) == here as u8 {
            panic!("deliberate panic inside Timer::{}", here as u8);
        }
    }
}

impl Timer<u32> for Panicky {
    fn insert(&mut self, deadline: Tick, payload: u32) -> Result<TimerKey, InsertError<u32>> {
        self.trip(Fault::Insert);
        self.inner.insert(deadline, payload)
    }
    fn cancel(&mut self, key: TimerKey) -> Option<u32> {
        self.inner.cancel(key)
    }
    fn reset(&mut self, key: TimerKey, deadline: Tick) -> Result<(), StaleKeyError> {
        self.inner.reset(key, deadline)
    }
    fn poll(&mut self, now: Tick) -> Option<Expired<u32>> {
        self.trip(Fault::Poll);
        self.inner.poll(now)
    }
    fn next_deadline(&self) -> Option<Tick> {
        self.inner.next_deadline()
    }
    fn deadline(&self, key: TimerKey) -> Option<Tick> {
        self.inner.deadline(key)
    }
    fn get(&self, key: TimerKey) -> Option<&u32> {
        self.inner.get(key)
    }
    fn now(&self) -> Tick {
        self.inner.now()
    }
    fn len(&self) -> usize {
        self.inner.len()
    }
    fn capacity(&self) -> Option<usize> {
        self.inner.capacity()
    }
    fn stats(&self) -> Stats {
        self.inner.stats()
    }
    fn drain(&mut self) -> Vec<Expired<u32>> {
        self.trip(Fault::Drain);
        self.inner.drain()
    }
    fn allocated_bytes(&self) -> usize {
        self.inner.allocated_bytes()
    }
    fn shrink_to_fit(&mut self) {
        self.inner.shrink_to_fit();
    }
    fn name(&self) -> &'static str {
        "panicky"
    }
    fn check_invariants(&self) {
        self.inner.check_invariants();
    }
}

/// Shard 0 is a plain wheel behind the same type (its switch is never set), shard 1 panics
/// as its switch says.
fn make_shards(fault: &Arc<AtomicU8>) -> impl FnMut(Options) -> Result<Panicky, ConfigError> {
    let fault = fault.clone();
    let mut built = 0;
    move |options| {
        built += 1;
        Ok(Panicky {
            inner: HierarchicalWheel::from_options(options)?,
            fault: if built == 2 {
                fault.clone()
            } else {
                Arc::new(AtomicU8::new(Fault::None as u8))
            },
        })
    }
}

/// Which of `keys`, none of them cancelled, live in the failed shard: neither delivered nor
/// with a deadline (a failed shard answers no deadline).
fn in_failed_shard(
    handle: &tickwheel_service::TimerHandle<u32, Panicky>,
    keys: &[(ServiceKey, u32)],
    delivered: &[u32],
) -> Vec<u32> {
    keys.iter()
        .filter(|&&(key, payload)| handle.deadline(key).is_none() && !delivered.contains(&payload))
        .map(|&(_, payload)| payload)
        .collect()
}

#[test]
fn a_panic_in_poll_fails_one_shard_and_the_driver_goes_on() {
    let fault = Arc::new(AtomicU8::new(Fault::None as u8));
    let (delivery, fired) = Delivery::channel();
    let mut driver = Builder::new()
        .shards(2)
        .capacity(8)
        .build_manual_with(delivery, make_shards(&fault))
        .unwrap();
    let t0 = driver.clock().origin();
    let handle = driver.handle();
    // Capacity 4 per shard: eight timers fill both.
    let keys: Vec<(ServiceKey, u32)> = (0..8u32)
        .map(|i| (handle.schedule_at(t0 + MS * (10 + i), i).unwrap(), i))
        .collect();
    fault.store(Fault::Poll as u8, Ordering::SeqCst);

    let turn = driver.turn(t0 + MS * 100);
    let stats = handle.stats();
    assert_eq!((stats.timer_panics, stats.failed_shards), (1, 1));
    assert_eq!(turn.delivered, 4, "the healthy shard's four fire");
    let delivered: Vec<u32> = fired.try_iter().map(|f| f.payload).collect();
    let in_failed = in_failed_shard(&handle, &keys, &delivered);
    assert_eq!(in_failed.len(), 4);
    let mut all: Vec<u32> = delivered.iter().chain(&in_failed).copied().collect();
    all.sort_unstable();
    assert_eq!(
        all,
        (0..8).collect::<Vec<_>>(),
        "every timer is delivered or held"
    );

    // The failed shard's keys get a clear error; nothing is scheduled into it any more.
    for &(key, payload) in &keys {
        if in_failed.contains(&payload) {
            assert_eq!(handle.cancel(key), Err(KeyError::Failed));
            assert_eq!(handle.reset_at(key, t0), Err(KeyError::Failed));
        }
    }
    let later: Vec<_> = (0..4u32)
        .map(|i| handle.schedule_at(t0 + MS * 200, 100 + i).unwrap())
        .collect();
    let err = handle.schedule_at(t0 + MS * 200, 999).unwrap_err();
    assert!(
        matches!(err, ScheduleError::Full(999)),
        "the healthy shard is full and the failed one takes nothing: {err:?}"
    );
    assert_eq!(driver.turn(t0 + MS * 300).delivered, 4);
    let mut got: Vec<u32> = fired.try_iter().map(|f| f.payload).collect();
    got.sort_unstable();
    assert_eq!(got, [100, 101, 102, 103]);
    assert_eq!(later.len(), 4);
    assert_eq!(
        handle.stats().timer_panics,
        1,
        "a failed shard is not polled again"
    );

    // Shutdown tries the failed timer's drain once: here it gives everything back.
    fault.store(Fault::None as u8, Ordering::SeqCst);
    let mut back: Vec<u32> = driver.shutdown().into_iter().map(|u| u.payload).collect();
    back.sort_unstable();
    let mut want = in_failed.clone();
    want.sort_unstable();
    assert_eq!(back, want);
}

#[test]
fn a_panic_in_drain_at_shutdown_is_caught_and_the_rest_comes_back() {
    let fault = Arc::new(AtomicU8::new(Fault::None as u8));
    let (delivery, _fired) = Delivery::channel();
    let driver = Builder::new()
        .shards(2)
        .capacity(4)
        .build_manual_with(delivery, make_shards(&fault))
        .unwrap();
    let t0 = driver.clock().origin();
    let handle = driver.handle();
    for i in 0..4u32 {
        let _ = handle.schedule_at(t0 + MS * 50, i).unwrap();
    }
    fault.store(Fault::Drain as u8, Ordering::SeqCst);
    let back = driver.shutdown();
    assert_eq!(back.len(), 2, "the healthy shard's two come back");
    let stats = handle.stats();
    assert_eq!(stats.timer_panics, 1);
}

#[test]
fn a_panic_in_insert_on_a_producer_fails_the_shard_and_later_schedules_get_an_error() {
    let fault = Arc::new(AtomicU8::new(Fault::Insert as u8));
    let (delivery, _fired) = Delivery::channel();
    let mut built = 0;
    let driver = Builder::new()
        .shards(1)
        .build_manual_with(delivery, |options| {
            built += 1;
            Ok(Panicky {
                inner: HierarchicalWheel::from_options(options)?,
                fault: fault.clone(),
            })
        })
        .unwrap();
    let handle = driver.handle();
    let t0 = driver.clock().origin();
    let unwound = catch_unwind(AssertUnwindSafe(|| handle.schedule_at(t0 + MS, 1)));
    assert!(
        unwound.is_err(),
        "the panic reaches the caller that made the call"
    );
    fault.store(Fault::None as u8, Ordering::SeqCst);
    let err = handle.schedule_at(t0 + MS, 2).unwrap_err();
    assert!(matches!(err, ScheduleError::Failed(2)), "{err:?}");
    assert!(!err.is_transient());
    assert_eq!(handle.stats().failed_shards, 1);
    assert_eq!(built, 1);
}

#[test]
fn the_driver_thread_survives_a_panicking_timer() {
    let fault = Arc::new(AtomicU8::new(Fault::None as u8));
    let (delivery, fired) = Delivery::channel();
    let service = Builder::new()
        .shards(2)
        .capacity(4)
        .build_with(delivery, make_shards(&fault))
        .unwrap();
    // Far enough out that nothing fires before the switch is set.
    let keys: Vec<(ServiceKey, u32)> = (0..4u32)
        .map(|i| (service.schedule_after(MS * 300, i).unwrap(), i))
        .collect();
    fault.store(Fault::Poll as u8, Ordering::SeqCst);
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut got = Vec::new();
    while got.len() < 2 && Instant::now() < deadline {
        if let Ok(f) = fired.recv_timeout(MS * 100) {
            got.push(f.payload);
        }
    }
    assert_eq!(got.len(), 2, "the healthy shard's timers fire");
    while service.stats().timer_panics == 0 && Instant::now() < deadline {
        std::thread::sleep(MS);
    }
    assert_eq!(service.stats().failed_shards, 1);
    // The driver thread is still there: a new timer fires.
    let key = service.schedule_after(MS * 5, 42).unwrap();
    let f = fired
        .recv_timeout(Duration::from_secs(30))
        .expect("fires after the panic");
    assert_eq!((f.key, f.payload), (key, 42));
    let in_failed = in_failed_shard(&service, &keys, &got);
    assert_eq!(in_failed.len(), 2);
    fault.store(Fault::None as u8, Ordering::SeqCst);
    let back = service.shutdown();
    assert_eq!(
        back.len(),
        2,
        "the failed shard's two come back at shutdown"
    );
}
