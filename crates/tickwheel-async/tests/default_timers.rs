//! The free functions on the process-wide default timers. One test in this binary, so the
//! default timers' counters are this test's alone and can be checked exactly.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::time::{Duration, Instant};

use tickwheel_async::{default_handle, sleep, sleep_until, timeout, timeout_at, DelayQueue};

struct Noop;

impl Wake for Noop {
    fn wake(self: Arc<Self>) {}
}

fn poll_once<F: Future + Unpin>(f: &mut F) -> Poll<F::Output> {
    let waker = Waker::from(Arc::new(Noop));
    Pin::new(f).poll(&mut Context::from_waker(&waker))
}

#[test]
fn the_free_functions_arm_a_default_timer_only_when_a_poll_waits() {
    let h = default_handle();
    let scheduled = || h.stats().scheduled;
    assert_eq!(scheduled(), 0, "nothing armed yet");

    // `timeout` around a future ready at its first poll: no schedule.
    assert_eq!(
        futures_executor::block_on(timeout(Duration::from_secs(60), async { 1 })),
        Ok(1)
    );
    let at = Instant::now() + Duration::from_secs(60);
    assert_eq!(
        futures_executor::block_on(timeout_at(at, std::future::ready(2))),
        Ok(2)
    );
    assert_eq!(scheduled(), 0);

    // A sleep dropped unpolled: no schedule.
    drop(sleep(Duration::from_secs(60)));
    drop(sleep_until(at));
    assert_eq!(scheduled(), 0);

    // A sleep polled into Pending: one schedule; dropped, one cancel.
    let mut s = sleep(Duration::from_secs(60));
    assert!(poll_once(&mut s).is_pending());
    assert_eq!(scheduled(), 1);
    assert_eq!(h.pending(), 1);
    drop(s);
    assert_eq!((h.pending(), h.stats().cancelled), (0, 1));

    // Awaited: `()` no earlier than the deadline, one schedule, one fire.
    let start = Instant::now();
    let () = futures_executor::block_on(sleep(Duration::from_millis(5)));
    assert!(start.elapsed() >= Duration::from_millis(5));
    assert_eq!((scheduled(), h.stats().fired), (2, 1));

    // A timeout that elapses: `Err(Elapsed)`, one more schedule.
    let cut = futures_executor::block_on(timeout(
        Duration::from_millis(5),
        std::future::pending::<()>(),
    ));
    assert_eq!(cut.unwrap_err().to_string(), "deadline has elapsed");
    assert_eq!(scheduled(), 3);

    // The free functions work on tokio as on any executor, from many tasks.
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .build()
        .unwrap();
    rt.block_on(async {
        let tasks: Vec<_> = (0..100u64)
            .map(|i| {
                tokio::spawn(async move {
                    let d = Duration::from_millis(1 + i % 10);
                    let start = Instant::now();
                    sleep(d).await;
                    assert!(start.elapsed() >= d, "woke early");
                })
            })
            .collect();
        for t in tasks {
            t.await.unwrap();
        }
    });

    // A DelayQueue on the default timers, with one wake-up timer for all its entries.
    let mut q = DelayQueue::new();
    for i in 0..10u32 {
        q.insert(i, Duration::from_millis(u64::from(10 - i)))
            .unwrap();
    }
    let before = scheduled();
    let got: Vec<u32> = futures_executor::block_on(async {
        let mut out = Vec::new();
        while let Some(e) = std::future::poll_fn(|cx| q.poll_expired(cx)).await {
            out.push(e.unwrap().into_inner());
        }
        out
    });
    assert_eq!(got, (0..10).rev().collect::<Vec<_>>());
    assert!(
        scheduled() - before <= 10,
        "at most one wake-up per deadline"
    );
    assert_eq!(h.pending(), 0);
}
