//! A tour of the contract on every implementation: schedule, cancel, reset and fire the same
//! I/O-style timers, and print what happened. Run with
//! `cargo run --release -p tickwheel --example tour`.

use std::time::{Duration, Instant};

use tickwheel::{Kind, Options, TickClock, Timer};

fn main() {
    let origin = Instant::now();
    let clock = TickClock::with_origin(origin, Duration::from_millis(1)).expect("1 ms is valid");
    for kind in Kind::ALL {
        let mut timer = kind
            .build::<&'static str>(Options::new())
            .expect("default options are valid");
        // A connection's idle timeout, and three requests with 5 s deadlines.
        let idle = timer
            .insert(
                clock.deadline_after(origin, Duration::from_secs(30)),
                "idle timeout",
            )
            .expect("unbounded");
        let fast = timer
            .insert(clock.ticks_ceil(Duration::from_secs(5)), "request 1")
            .unwrap();
        timer
            .insert(clock.ticks_ceil(Duration::from_secs(5)), "request 2")
            .unwrap();
        let past = timer.insert(0, "already due").unwrap();
        // The response to request 1 arrives: cancel returns the payload.
        let cancelled = timer.cancel(fast);
        // Traffic on the connection pushes the idle timeout out by 10 s.
        timer
            .reset(idle, clock.ticks_ceil(Duration::from_secs(40)))
            .unwrap();
        let mut log = Vec::new();
        // An event loop: sleep until next_deadline, poll everything due.
        while let Some(next) = timer.next_deadline() {
            while let Some(e) = timer.poll(next) {
                log.push(format!("{}@{}ms", e.payload, e.deadline));
            }
        }
        println!(
            "{:<13} cancelled {:?}; stale key reset -> {:?}; fired: {}",
            kind.name(),
            cancelled.unwrap_or("-"),
            timer.reset(past, 1).err().map(|e| e.to_string()),
            log.join(", ")
        );
        let s = timer.stats();
        println!(
            "{:<13} stats: inserted {} cancelled {} reset {} fired {} cascaded {} slots scanned {}",
            "", s.inserted, s.cancelled, s.reset, s.fired, s.cascaded, s.slots_scanned
        );
    }
}
