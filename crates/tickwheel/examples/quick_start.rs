//! The README's quick start, verbatim below this header (`tests/readme.rs` checks that they
//! match): an event loop that closes connections idle for 60 ms, and a `main` that feeds it a
//! scripted connection's events.
//!
//! ```text
//! cargo run -p tickwheel --example quick_start
//! ```

use std::collections::HashMap;
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};
use tickwheel::{HierarchicalWheel, StaleKeyError, TickClock, Timer};

enum Event {
    Open(u32),
    Data(u32),
    Close(u32),
}

/// The event loop: closes connections idle for `idle`.
fn serve(events: Receiver<Event>, idle: Duration) {
    let clock = TickClock::new(Duration::from_millis(1)).unwrap(); // 1 tick = 1 ms
    let mut timer = HierarchicalWheel::new();
    let mut keys = HashMap::new(); // connection -> its idle timer's key
    let deadline = || clock.deadline_after(Instant::now(), idle);
    loop {
        // Sleep until the next deadline or the next event.
        let wait = match timer.next_deadline().and_then(|t| clock.instant_of(t)) {
            Some(at) => at.saturating_duration_since(Instant::now()),
            None => Duration::MAX, // no timer pending: no wake-up
        };
        match events.recv_timeout(wait) {
            Ok(Event::Open(id)) => {
                keys.insert(id, timer.insert(deadline(), id).unwrap());
            }
            Ok(Event::Data(id)) => match timer.reset(keys[&id], deadline()) {
                Ok(()) => println!("{id}: data; idle timer pushed out"),
                // The timer fired before the data came, so its key is stale: not an error.
                Err(StaleKeyError { .. }) => println!("{id}: data after its idle timeout"),
            },
            Ok(Event::Close(id)) => {
                timer.cancel(keys.remove(&id).unwrap()); // `None` if it fired: harmless
            }
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => return,
        }
        while let Some(expired) = timer.poll(clock.now_tick(Instant::now())) {
            println!("{}: idle for {idle:?}; closing", expired.payload); // one timer per poll
        }
    }
}

fn main() {
    let (network, events) = std::sync::mpsc::channel(); // stands in for the sockets
    std::thread::spawn(move || {
        use Event::*; // 2 goes quiet: its timer fires at 80 ms, before its data at 100 ms
        for event in [Open(2), Open(1), Data(1), Data(1), Data(2), Close(1)] {
            std::thread::sleep(Duration::from_millis(20)); // an event every 20 ms
            network.send(event).unwrap();
        }
    });
    serve(events, Duration::from_millis(60));
}
