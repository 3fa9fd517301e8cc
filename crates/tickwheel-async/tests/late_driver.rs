//! A sleep that arms while the service's driver thread is late takes the timers already due
//! and wakes their tasks itself: here the driver is held inside a delivery (the first sleep's
//! waker blocks), and ten sleeps that came due meanwhile complete when an eleventh arms, before
//! the driver is let go, and never before their deadline.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{channel, Receiver};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Wake, Waker};
use std::time::{Duration, Instant};

use tickwheel_async::AsyncTimers;

/// Records that it was woken.
struct Flag(AtomicBool);

impl Wake for Flag {
    fn wake(self: Arc<Self>) {
        self.0.store(true, Ordering::SeqCst);
    }
}

/// Blocks the thread that wakes it until the test lets it go, and says when it started.
struct Holds {
    entered: Mutex<Option<std::sync::mpsc::Sender<()>>>,
    release: Mutex<Receiver<()>>,
}

impl Wake for Holds {
    fn wake(self: Arc<Self>) {
        if let Some(entered) = self.entered.lock().unwrap().take() {
            entered.send(()).unwrap();
        }
        let _ = self.release.lock().unwrap().recv();
    }
}

fn poll_once<F: Future + Unpin>(f: &mut F, waker: &Waker) -> Poll<F::Output> {
    Pin::new(f).poll(&mut Context::from_waker(waker))
}

#[test]
fn an_arming_sleep_fires_what_a_held_driver_has_not() {
    let timers = AsyncTimers::new().unwrap();
    let h = timers.handle();
    let ms = Duration::from_millis;

    // The driver's first delivery blocks in this waker until released.
    let (entered_tx, entered) = channel();
    let (release, release_rx) = channel::<()>();

    let holds = Arc::new(Holds {
        entered: Mutex::new(Some(entered_tx)),
        release: Mutex::new(release_rx),
    });
    let mut first = h.sleep(ms(1));
    assert!(poll_once(&mut first, &Waker::from(holds.clone())).is_pending());
    // Lets the driver go however the test ends: a failed assertion must not leave it held
    // (in `first`'s delivery, under its slot's lock) while `first` and `timers` drop. Declared
    // after both, so it drops first.
    struct LetGo(std::sync::mpsc::Sender<()>);
    impl Drop for LetGo {
        fn drop(&mut self) {
            let _ = self.0.send(());
        }
    }
    let release = LetGo(release);
    entered
        .recv_timeout(Duration::from_secs(10))
        .expect("the driver delivered the first sleep");

    // Ten sleeps that come due while the driver is held.
    let flags: Vec<Arc<Flag>> = (0..10)
        .map(|_| Arc::new(Flag(AtomicBool::new(false))))
        .collect();
    let deadline = Instant::now() + ms(5);
    let mut sleeps: Vec<_> = (0..10).map(|_| h.sleep_until(deadline)).collect();
    for (s, f) in sleeps.iter_mut().zip(&flags) {
        assert!(poll_once(s, &Waker::from(f.clone())).is_pending());
    }
    std::thread::sleep(ms(20));
    assert!(
        flags.iter().all(|f| !f.0.load(Ordering::SeqCst)),
        "the driver is held"
    );

    // An eleventh sleep arms: it takes the ten and wakes their tasks here.
    let mut later = h.sleep(Duration::from_secs(60));
    let noop = Waker::from(Arc::new(Flag(AtomicBool::new(false))));
    assert!(poll_once(&mut later, &noop).is_pending());
    assert!(
        flags.iter().all(|f| f.0.load(Ordering::SeqCst)),
        "each woken"
    );
    for s in &mut sleeps {
        assert!(poll_once(s, &noop).is_ready());
    }
    assert!(Instant::now() >= deadline, "never early");

    // The driver is let go; the first sleep completes as usual.
    drop(release);
    let start = Instant::now();
    while poll_once(&mut first, &noop).is_pending() {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "the first sleep completes"
        );
        std::thread::sleep(ms(1));
    }
    let stats = h.stats();
    assert_eq!(
        stats.fired, 11,
        "ten taken by the arming sleep, one by the driver"
    );
    drop(later);
    assert_eq!(timers.shutdown(), 0);
}
