//! The futures under three executors (tokio's multi-thread and current-thread runtimes, and
//! the `futures` crate's executors), and the races a server meets: a sleep dropped or reset
//! while its timer fires.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::time::{Duration, Instant};

use tickwheel_async::{AsyncTimers, Builder, DelayQueue, Error, Wakeup};

/// A waker that counts its wakes.
#[derive(Default)]
struct Count(AtomicUsize);

impl Wake for Count {
    fn wake(self: Arc<Self>) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

fn counting() -> (Arc<Count>, Waker) {
    let count = Arc::new(Count::default());
    (Arc::clone(&count), Waker::from(count))
}

fn poll_once<F: Future + Unpin>(f: &mut F, waker: &Waker) -> Poll<F::Output> {
    Pin::new(f).poll(&mut Context::from_waker(waker))
}

/// A small deterministic generator (splitmix64).
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        (z ^ (z >> 31)) % n
    }
}

/// `tasks` sleeps of 1..=40 ms, each checked never to complete early, all awaited.
async fn many_sleeps(
    handle: tickwheel_async::Handle,
    tasks: usize,
    spawn: impl Fn(Pin<Box<dyn Future<Output = ()> + Send>>),
) {
    let done = Arc::new(AtomicUsize::new(0));
    let mut rng = Rng(7);
    for _ in 0..tasks {
        let h = handle.clone();
        let d = Arc::clone(&done);
        let ms = 1 + rng.below(40);
        spawn(Box::pin(async move {
            let start = Instant::now();
            h.sleep(Duration::from_millis(ms)).await;
            assert!(start.elapsed() >= Duration::from_millis(ms), "woke early");
            d.fetch_add(1, Ordering::SeqCst);
        }));
    }
    let until = Instant::now() + Duration::from_secs(10);
    while done.load(Ordering::SeqCst) < tasks {
        assert!(
            Instant::now() < until,
            "{} of {tasks} sleeps woke",
            done.load(Ordering::SeqCst)
        );
        handle.sleep(Duration::from_millis(5)).await;
    }
}

#[test]
fn sleeps_on_tokio_multi_thread() {
    let timers = AsyncTimers::new().unwrap();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .build()
        .unwrap();
    let h = timers.handle();
    rt.block_on(async move {
        many_sleeps(h, 2_000, |f| {
            tokio::spawn(f);
        })
        .await;
    });
    assert_eq!(timers.handle().pending(), 0);
}

#[test]
fn sleeps_on_tokio_current_thread() {
    let timers = AsyncTimers::new().unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let local = tokio::task::LocalSet::new();
    let h = timers.handle();
    local.block_on(&rt, async move {
        many_sleeps(h, 1_000, |f| {
            tokio::task::spawn_local(f);
        })
        .await;
    });
}

#[test]
fn sleeps_on_the_futures_thread_pool_and_block_on() {
    let timers = AsyncTimers::new().unwrap();
    let pool = futures_executor::ThreadPool::builder()
        .pool_size(2)
        .create()
        .unwrap();
    let h = timers.handle();
    futures_executor::block_on(many_sleeps(h, 1_000, |f| pool.spawn_ok(f)));
}

#[test]
fn timeout_returns_the_output_or_elapsed() {
    let timers = AsyncTimers::new().unwrap();
    let h = timers.handle();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_time()
        .build()
        .unwrap();
    rt.block_on(async {
        let (tx, rx) = tokio::sync::oneshot::channel::<u32>();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(5)).await;
            let _ = tx.send(9);
        });
        assert_eq!(h.timeout(Duration::from_secs(5), rx).await, Ok(Ok(9)));
        let start = Instant::now();
        let never = std::future::pending::<()>();
        let elapsed = h
            .timeout(Duration::from_millis(30), never)
            .await
            .unwrap_err();
        assert_eq!(elapsed.to_string(), "deadline has elapsed");
        assert!(start.elapsed() >= Duration::from_millis(30));
    });
    // The completed timeout cancelled its timer.
    assert_eq!(h.pending(), 0);
}

#[test]
fn dropping_a_pending_sleep_cancels_it_and_nothing_wakes_after() {
    let timers = AsyncTimers::new().unwrap();
    let h = timers.handle();
    let (count, waker) = counting();
    // Far enough out that polling them all cannot outlast them on a loaded machine.
    let mut sleeps: Vec<_> = (0..10_000)
        .map(|i| h.sleep(Duration::from_millis(300 + i % 10)))
        .collect();
    for s in &mut sleeps {
        assert!(poll_once(s, &waker).is_pending());
    }
    assert_eq!(h.pending(), 10_000);
    let before = h.stats().allocated_bytes;
    drop(sleeps);
    assert_eq!(h.pending(), 0);
    assert_eq!(h.stats().cancelled, 10_000);
    // Past every deadline: a timer the drop failed to cancel would have fired by now.
    std::thread::sleep(Duration::from_millis(400));
    assert_eq!(
        count.0.load(Ordering::SeqCst),
        0,
        "a dropped sleep woke its task"
    );
    assert_eq!(h.stats().fired, 0);
    assert!(before > 0);
}

#[test]
fn a_fire_wakes_the_waker_of_the_latest_poll_once() {
    let timers = AsyncTimers::new().unwrap();
    let h = timers.handle();
    let (first, a) = counting();
    let (second, b) = counting();
    let mut s = h.sleep(Duration::from_millis(100));
    assert!(poll_once(&mut s, &a).is_pending());
    assert!(poll_once(&mut s, &b).is_pending());
    let until = Instant::now() + Duration::from_secs(5);
    while second.0.load(Ordering::SeqCst) == 0 {
        assert!(Instant::now() < until, "never woken");
        std::thread::sleep(Duration::from_millis(1));
    }
    std::thread::sleep(Duration::from_millis(20));
    assert_eq!(first.0.load(Ordering::SeqCst), 0);
    assert_eq!(second.0.load(Ordering::SeqCst), 1);
    assert_eq!(poll_once(&mut s, &b), Poll::Ready(()));
    assert!(s.is_elapsed());
}

/// A sleep of 1 ms, polled once with a counting waker, then a spin to a random point 0.5 to
/// 2 ms on, around the moment the driver fires it. (A thread preempted past the deadline
/// before its first poll finds the sleep done; it then starts over.)
fn near_its_fire(
    h: &tickwheel_async::Handle,
    rng: &mut Rng,
) -> (Arc<Count>, tickwheel_async::Sleep) {
    let (count, s) = loop {
        let (count, waker) = counting();
        let mut s = h.sleep(Duration::from_millis(1));
        if poll_once(&mut s, &waker).is_pending() {
            break (count, s);
        }
    };
    let until = Instant::now() + Duration::from_micros(500 + rng.below(1_500));
    while Instant::now() < until {
        std::hint::spin_loop();
    }
    (count, s)
}

/// Drops each sleep around the moment its timer fires: either the drop wins (no wake at all)
/// or the fire won before the drop returned; never a wake after it.
#[test]
fn drop_racing_the_fire_never_wakes_after_the_drop() {
    let timers = AsyncTimers::new().unwrap();
    let h = timers.handle();
    let mut rng = Rng(3);
    for _ in 0..300 {
        let (count, s) = near_its_fire(&h, &mut rng);
        drop(s);
        let at_drop = count.0.load(Ordering::SeqCst);
        std::thread::sleep(Duration::from_millis(3));
        let later = count.0.load(Ordering::SeqCst);
        assert_eq!(later, at_drop, "a wake after the drop");
        assert!(later <= 1, "woken {later} times");
    }
    assert_eq!(h.pending(), 0);
    let stats = h.stats();
    assert_eq!(stats.fired + stats.cancelled, stats.scheduled, "{stats:?}");
    assert!(stats.scheduled >= 300, "{stats:?}");
}

/// Resets each sleep around the moment its timer fires: it then completes exactly once, no
/// earlier than the new deadline, whichever side won.
#[test]
fn reset_racing_the_fire_completes_once_at_the_new_deadline() {
    let timers = AsyncTimers::new().unwrap();
    let h = timers.handle();
    let mut rng = Rng(5);
    for _ in 0..200 {
        let (count, mut s) = near_its_fire(&h, &mut rng);
        let again = Instant::now() + Duration::from_millis(4);
        s.reset(again);
        assert!(!s.is_elapsed());
        futures_executor::block_on(&mut s);
        assert!(Instant::now() >= again, "completed before its new deadline");
        assert!(count.0.load(Ordering::SeqCst) <= 1);
    }
    assert_eq!(h.pending(), 0);
}

/// A waker that wakes nothing.
fn noop() -> Waker {
    counting().1
}

#[test]
fn shutdown_wakes_armed_sleeps_and_checked_futures_return_the_error() {
    let timers = AsyncTimers::with_builder(Builder::new().shards(2)).unwrap();
    let h = timers.handle();
    let (count, waker) = counting();
    let mut pending = h.sleep(Duration::from_secs(60));
    assert!(poll_once(&mut pending, &waker).is_pending());
    let mut timeout = h.timeout(Duration::from_secs(60), std::future::pending::<()>());
    assert!(Pin::new(&mut timeout)
        .poll(&mut Context::from_waker(&waker))
        .is_pending());
    let unpolled = h.sleep(Duration::from_secs(60));
    assert_eq!(
        timers.shutdown(),
        2,
        "the two armed timers; the unpolled one is not"
    );
    assert_eq!(
        count.0.load(Ordering::SeqCst),
        2,
        "shutdown wakes every armed sleep"
    );
    let mut pending = pending.checked();
    assert_eq!(
        poll_once(&mut pending, &waker),
        Poll::Ready(Err(Error::Shutdown))
    );
    assert!(pending.into_inner().is_elapsed());
    assert_eq!(
        futures_executor::block_on(timeout.checked()),
        Err(Error::Shutdown)
    );
    assert_eq!(
        futures_executor::block_on(unpolled.checked()),
        Err(Error::Shutdown)
    );
    // Deadline passed or not: a sleep of shut-down timers fails at its first poll.
    let past = h.sleep_until(Instant::now() - Duration::from_millis(5));
    assert_eq!(
        futures_executor::block_on(past.checked()),
        Err(Error::Shutdown)
    );
    // A reset never fails; the sleep fails at its next poll.
    let mut late = h.sleep(Duration::from_secs(1));
    late.reset(Instant::now());
    assert_eq!(
        futures_executor::block_on(late.checked()),
        Err(Error::Shutdown)
    );
    // A ready future still wins: its timeout needs no timer.
    let ready = h.timeout(Duration::from_secs(1), async { 3 });
    assert_eq!(futures_executor::block_on(ready.checked()), Ok(Ok(3)));
}

#[test]
#[should_panic(expected = "tickwheel-async Sleep cannot complete: the async timers were shut down")]
fn an_armed_sleep_panics_after_shutdown() {
    let timers = AsyncTimers::new().unwrap();
    let mut sleep = timers.handle().sleep(Duration::from_secs(60));
    assert!(poll_once(&mut sleep, &noop()).is_pending());
    timers.shutdown();
    futures_executor::block_on(sleep);
}

#[test]
#[should_panic(expected = "tickwheel-async Sleep cannot complete: the async timers were shut down")]
fn an_unarmed_sleep_panics_after_shutdown() {
    let timers = AsyncTimers::new().unwrap();
    let h = timers.handle();
    timers.shutdown();
    futures_executor::block_on(h.sleep(Duration::from_millis(1)));
}

#[test]
#[should_panic(
    expected = "tickwheel-async Timeout cannot complete: the async timers were shut down"
)]
fn a_timeout_panics_after_shutdown() {
    let timers = AsyncTimers::new().unwrap();
    let h = timers.handle();
    drop(timers);
    let _ =
        futures_executor::block_on(h.timeout(Duration::from_secs(1), std::future::pending::<()>()));
}

#[test]
fn a_full_service_refuses_with_full() {
    let timers = AsyncTimers::with_builder(Builder::new().shards(1).capacity(1)).unwrap();
    let h = timers.handle();
    let mut first = h.sleep(Duration::from_secs(60));
    // Made, the second sleep takes no room: only a poll arms.
    let second = h.sleep(Duration::from_secs(1));
    assert!(poll_once(&mut first, &noop()).is_pending());
    assert_eq!(
        futures_executor::block_on(second.checked()),
        Err(Error::Full)
    );
    let third = h.timeout(Duration::from_secs(1), std::future::pending::<()>());
    assert_eq!(
        futures_executor::block_on(third.checked()),
        Err(Error::Full)
    );
    drop(first);
    assert_eq!(
        futures_executor::block_on(h.sleep(Duration::from_millis(1)).checked()),
        Ok(())
    );
}

#[test]
#[should_panic(
    expected = "tickwheel-async Sleep cannot complete: the timer service is at capacity"
)]
fn a_sleep_panics_on_a_full_service() {
    let timers = AsyncTimers::with_builder(Builder::new().shards(1).capacity(1)).unwrap();
    let h = timers.handle();
    let mut first = h.sleep(Duration::from_secs(60));
    assert!(poll_once(&mut first, &noop()).is_pending());
    futures_executor::block_on(h.sleep(Duration::from_secs(1)));
}

/// Lazy arming, counted on the service: only a poll that must wait schedules a timer.
#[test]
fn only_a_poll_that_waits_schedules_a_timer() {
    let timers = AsyncTimers::new().unwrap();
    let h = timers.handle();
    let scheduled = || h.stats().scheduled;
    let waker = noop();

    // A timeout around a future ready at its first poll: no schedule.
    let ready = h.timeout(Duration::from_secs(60), async { 5 });
    assert_eq!(futures_executor::block_on(ready), Ok(5));
    assert_eq!(scheduled(), 0);

    // A sleep dropped unpolled: no schedule, no cancel.
    drop(h.sleep(Duration::from_secs(60)));
    assert_eq!(scheduled(), 0);

    // A reset of an unarmed sleep only moves its deadline.
    let mut s = h.sleep(Duration::from_secs(60));
    let before = s.deadline().unwrap();
    s.reset(Instant::now() + Duration::from_secs(120));
    assert!(s.deadline().unwrap() > before);
    assert_eq!((scheduled(), h.stats().reset), (0, 0));

    // A sleep whose deadline passed by its first poll completes without arming.
    let mut past = h.sleep_until(Instant::now() - Duration::from_millis(5));
    assert_eq!(poll_once(&mut past, &waker), Poll::Ready(()));
    assert_eq!(scheduled(), 0);

    // A poll that returns Pending arms it: one schedule; later polls, none.
    assert!(poll_once(&mut s, &waker).is_pending());
    assert_eq!(scheduled(), 1);
    assert_eq!(h.pending(), 1);
    assert!(poll_once(&mut s, &waker).is_pending());
    assert_eq!(scheduled(), 1);
    // Armed, a reset is one reset on the service, not a new timer.
    s.reset(Instant::now() + Duration::from_secs(90));
    assert_eq!((scheduled(), h.stats().reset), (1, 1));
    drop(s);
    assert_eq!((h.pending(), h.stats().cancelled), (0, 1));

    // A timeout whose future is pending arms its deadline once.
    let mut t = h.timeout(Duration::from_secs(60), std::future::pending::<()>());
    assert!(Pin::new(&mut t)
        .poll(&mut Context::from_waker(&waker))
        .is_pending());
    assert_eq!(scheduled(), 2);
    drop(t);
    assert_eq!(h.pending(), 0);
}

/// A first poll reads no clock: a deadline that passed after the sleep was made, while the
/// driver slept, arms a timer at a past tick, and the driver, woken for it, fires it at once.
/// It completes, and never early.
#[test]
fn a_deadline_passed_since_the_sleep_was_made_fires_at_once() {
    let timers = AsyncTimers::new().unwrap();
    let h = timers.handle();
    for _ in 0..20 {
        let before = h.stats().scheduled;
        let sleep = h.sleep(Duration::from_millis(2));
        let at = sleep.deadline().unwrap();
        std::thread::sleep(Duration::from_millis(5));
        let start = Instant::now();
        futures_executor::block_on(sleep);
        assert!(Instant::now() >= at);
        // Armed (the driver had no turn since) or not (it had): either way, done promptly.
        assert!(h.stats().scheduled - before <= 1);
        assert!(
            start.elapsed() < Duration::from_secs(2),
            "{:?}",
            start.elapsed()
        );
    }
    assert!(
        h.stats().scheduled >= 1,
        "no sleep armed: the test saw no passed deadline"
    );
    assert_eq!(h.pending(), 0);
}

/// A reset after the timer fired leaves the sleep unarmed until its next poll, which waits
/// for the new deadline on a new timer.
#[test]
fn a_reset_after_the_fire_rearms_at_the_next_poll() {
    let timers = AsyncTimers::new().unwrap();
    let h = timers.handle();
    let mut s = h.sleep(Duration::from_millis(2));
    futures_executor::block_on(&mut s);
    assert!(s.is_elapsed());
    let scheduled = h.stats().scheduled;
    let again = Instant::now() + Duration::from_millis(20);
    s.reset(again);
    assert!(!s.is_elapsed());
    assert_eq!(h.stats().scheduled, scheduled);
    futures_executor::block_on(&mut s);
    assert!(Instant::now() >= again);
    assert_eq!(h.stats().scheduled, scheduled + 1);
}

/// Wakes a queue with tokio's own timer instead of the service.
struct TokioWakeup(Pin<Box<tokio::time::Sleep>>);

impl Wakeup for TokioWakeup {
    fn poll_until(&mut self, at: Instant, cx: &mut Context<'_>) -> Poll<Result<(), Error>> {
        if self.0.deadline() != at.into() {
            self.0.as_mut().reset(at.into());
        }
        self.0.as_mut().poll(cx).map(Ok)
    }
}

/// Inserts 2,000 timers over 0..200 ms (a tenth removed, a tenth reset), then takes every
/// expired one: all come out, in deadline order, none early. Each timer's due instant is the
/// clock read just before its insert (or reset) plus its delay: the queue reads its own clock
/// after that, so a timer out before it is early, however long a preemption between the two
/// reads lasts.
async fn drain_queue<X: tickwheel::Timer<u64>, W: Wakeup>(mut q: DelayQueue<u64, X, W>) {
    let mut rng = Rng(11);
    let mut due = std::collections::HashMap::new();
    let mut keys = Vec::new();
    for i in 0..2_000u64 {
        let after = Duration::from_millis(rng.below(200));
        due.insert(i, Instant::now() + after);
        let key = q.insert(i, after).unwrap();
        keys.push(key);
    }
    for (i, key) in keys.iter().enumerate().step_by(10) {
        assert_eq!(q.remove(*key), Some(i as u64));
        due.remove(&(i as u64));
    }
    for (i, key) in keys.iter().enumerate().skip(5).step_by(10) {
        due.insert(i as u64, Instant::now() + Duration::from_millis(50));
        q.reset(*key, Duration::from_millis(50)).unwrap();
    }
    let mut last = None;
    let mut seen = 0;
    while let Some(e) = std::future::poll_fn(|cx| q.poll_expired(cx)).await {
        let e = e.unwrap();
        let now = Instant::now();
        assert!(now >= due[&e.payload], "timer {} early", e.payload);
        assert!(
            now >= e.deadline,
            "timer {} out before its deadline",
            e.payload
        );
        assert!(last <= Some(e.deadline), "out of order");
        last = Some(e.deadline);
        seen += 1;
    }
    assert_eq!(seen, due.len());
}

#[test]
fn delay_queue_woken_by_the_service_and_by_tokio() {
    let timers = AsyncTimers::new().unwrap();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_time()
        .build()
        .unwrap();
    let h = timers.handle();
    rt.block_on(async move {
        drain_queue(h.delay_queue()).await;
        let clock = tickwheel::TickClock::new(Duration::from_millis(1)).unwrap();
        let sleep = TokioWakeup(Box::pin(tokio::time::sleep(Duration::from_secs(3600))));
        drain_queue(DelayQueue::with_parts(
            tickwheel::IndexedHeap::new(),
            clock,
            sleep,
        ))
        .await;
    });
    // On futures' block_on too, and on the default timers.
    futures_executor::block_on(drain_queue(timers.handle().delay_queue()));
    futures_executor::block_on(drain_queue(DelayQueue::new()));
}

#[test]
fn an_earlier_insert_wakes_the_waiting_task() {
    let timers = AsyncTimers::new().unwrap();
    let mut q = timers.handle().delay_queue();
    q.insert("late", Duration::from_secs(60)).unwrap();
    let (count, waker) = counting();
    let mut cx = Context::from_waker(&waker);
    assert!(q.poll_expired(&mut cx).is_pending());
    q.insert("later still", Duration::from_secs(90)).unwrap();
    assert_eq!(count.0.load(Ordering::SeqCst), 0);
    q.insert("soon", Duration::from_millis(1)).unwrap();
    assert_eq!(
        count.0.load(Ordering::SeqCst),
        1,
        "the earlier insert woke the task"
    );
}

#[cfg(feature = "stream")]
#[test]
fn delay_queue_is_a_stream() {
    use futures_core::Stream;
    let mut q = DelayQueue::new();
    for i in 0..5u8 {
        q.insert(i, Duration::from_millis(u64::from(5 - i)))
            .unwrap();
    }
    let got: Vec<u8> = futures_executor::block_on(async {
        let mut out = Vec::new();
        while let Some(e) = std::future::poll_fn(|cx| Pin::new(&mut q).poll_next(cx)).await {
            out.push(e.unwrap().payload);
        }
        out
    });
    assert_eq!(got, vec![4, 3, 2, 1, 0]);
}

/// A queue of a handle keeps its ticks on the service's clock: a deadline rounds up once, to
/// the tick its wake-up sleep waits for, and the queue's wake-up is one service timer.
#[test]
fn a_delay_queue_shares_its_timers_clock() {
    let timers = AsyncTimers::new().unwrap();
    let h = timers.handle();
    let mut q = h.delay_queue();
    assert_eq!(h.stats().scheduled, 0, "an empty queue arms nothing");
    let start = Instant::now();
    let mut keys = Vec::new();
    for us in [300, 1_700, 2_500, 4_100] {
        let at = start + Duration::from_micros(us);
        let key = q.insert_at(us, at).unwrap();
        assert_eq!(q.deadline(key), h.sleep_until(at).deadline());
        keys.push((key, at));
    }
    futures_executor::block_on(async {
        for (key, at) in keys {
            let e = std::future::poll_fn(|cx| q.poll_expired(cx))
                .await
                .unwrap()
                .unwrap();
            assert_eq!(e.key, key);
            assert_eq!(Some(e.deadline), h.sleep_until(at).deadline());
            assert!(Instant::now() >= e.deadline && e.deadline >= at);
        }
    });
    assert!(h.pending() <= 1);
}
