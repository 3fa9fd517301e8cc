//! The README's quick start, verbatim below this header (`tests/readme.rs` checks that they
//! match); a test without the harness, so `cargo test` runs its `main`.

use std::time::{Duration, Instant};
use tickwheel_async::{AsyncTimers, DelayQueue, TimeoutError};

fn main() {
    let timers = AsyncTimers::new().unwrap(); // a timer service and its driver thread
    let handle = timers.handle(); // Clone + Send + Sync: one per task
    futures_executor::block_on(async {
        // Any executor works: tokio, smol, this one. Nothing needs a runtime context.
        let start = Instant::now();
        handle.sleep(Duration::from_millis(20)).await.unwrap();
        assert!(start.elapsed() >= Duration::from_millis(20)); // never early

        let never = std::future::pending::<()>();
        let cut = handle.timeout(Duration::from_millis(10), never).await;
        assert_eq!(cut, Err(TimeoutError::Elapsed));
        let done = handle.timeout(Duration::from_secs(5), async { 42 }).await;
        assert_eq!(done, Ok(42));

        // An idle timeout pushed out by activity: one reset on the service, no new timer.
        let mut idle = handle.sleep(Duration::from_millis(30));
        let activity = Instant::now();
        idle.reset(activity + Duration::from_millis(60)).unwrap();
        idle.await.unwrap();
        assert!(activity.elapsed() >= Duration::from_millis(60));

        // A task's own timers: one service timer wakes the whole queue.
        let mut queue = DelayQueue::new(&handle);
        queue.insert("later", Duration::from_millis(20)).unwrap();
        queue.insert("sooner", Duration::from_millis(10)).unwrap();
        let first = std::future::poll_fn(|cx| queue.poll_expired(cx)).await;
        assert_eq!(first.unwrap().unwrap().payload, "sooner");
    });
    timers.shutdown(); // or drop it: stops the driver, ends pending sleeps with Error::Shutdown
}
