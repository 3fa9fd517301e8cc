//! The README's quick start, verbatim below this header (`tests/readme.rs` checks that they
//! match); a test without the harness, so `cargo test` runs its `main`.

use std::time::{Duration, Instant};
use tickwheel_async::{sleep, timeout, AsyncTimers, DelayQueue, Error};

fn main() {
    futures_executor::block_on(async {
        // Any executor works: tokio, smol, this one. No runtime context, no setup: the free
        // functions start a process-wide timer service (one driver thread) on first use.
        let start = Instant::now();
        sleep(Duration::from_millis(20)).await;
        assert!(start.elapsed() >= Duration::from_millis(20)); // never early
        println!("slept {:?} for a 20ms sleep", start.elapsed());

        let never = std::future::pending::<()>();
        let cut = timeout(Duration::from_millis(10), never).await;
        assert!(cut.is_err()); // Err(Elapsed): "deadline has elapsed"
        let done = timeout(Duration::from_secs(5), async { 42 }).await;
        assert_eq!(done, Ok(42)); // ready at its first poll: no timer was armed
        println!("timeouts: {cut:?} for a future that never ends, {done:?} for one that does");

        // An idle timeout pushed out by activity. A sleep arms its timer when first polled;
        // a reset before that only moves the deadline, and after it is one reset on the
        // service, never a new timer.
        let mut idle = sleep(Duration::from_millis(30));
        let activity = Instant::now();
        idle.reset(activity + Duration::from_millis(60));
        idle.await;
        assert!(activity.elapsed() >= Duration::from_millis(60));
        println!("idle timeout fired {:?} after activity", activity.elapsed());

        // A task's own timers: one service timer wakes the whole queue.
        let mut queue = DelayQueue::new();
        queue.insert("later", Duration::from_millis(20)).unwrap();
        queue.insert("sooner", Duration::from_millis(10)).unwrap();
        let first = std::future::poll_fn(|cx| queue.poll_expired(cx)).await;
        let first = first.unwrap().unwrap().payload;
        assert_eq!(first, "sooner");
        println!("the queue's first expired timer: {first}");
    });

    // Timers of your own (another resolution, a capacity, a shutdown): the same methods on
    // a handle. Clone + Send + Sync: one per task.
    let timers = AsyncTimers::new().unwrap();
    let handle = timers.handle();
    let later = handle.sleep(Duration::from_secs(60));
    // Shut down (or dropped), the timers wake every armed sleep. A sleep that can no
    // longer fire panics when awaited, naming why; `checked` returns that as an `Error`.
    timers.shutdown();
    let why = futures_executor::block_on(later.checked());
    assert_eq!(why, Err(Error::Shutdown));
    println!("a sleep awaited after shutdown: {why:?}");
}
