//! Timers for network servers: four interchangeable designs behind one [`Timer`] trait.
//!
//! Each design keeps the same contract (see [`Timer`]): never early, never lost or
//! doubled, complete, ordered by deadline then first-in first-out, harmless stale keys, one timer
//! per poll, a safe `next_deadline`, any deadline accepted, an optional capacity, work counters.
//! One operation sequence gives one fired sequence on all of them, so you can swap them freely.
//!
//! # Picking a timer
//!
//! | type | design | pick it when |
//! |---|---|---|
//! | [`HashedWheel`] | one ring of 2^k one-tick slots for the next revolution; other timers wait in an indexed heap; every call bounded | I/O timeouts shorter than one revolution (about 65 s at 1 ms ticks by default): the least time in the timer of the bounded designs on the load generator's default I/O workload |
//! | [`HierarchicalWheel`] | 11 levels × 64 slots (every `u64` tick), a crowded slot split into a finer wheel; every call bounded by [`HierarchicalWheel::max_call_work_bound`] | timeouts of any length, however they spread |
//! | [`IndexedHeap`] | 4-ary min-heap with positions; every call O(log n) | fewer timers, an exact next deadline |
//! | [`LazyHeap`] | `std`'s binary heap, cancel marks dead, rebuilt when more than half as many are dead as live | insert-heavy, cancel-light; one call may pop a long run of cancelled timers or rebuild the heap |
//!
//! The measured figures behind this column (time in the timer, lateness, memory, the worst
//! single call) are in the repository's README and its `docs/compare.md`; the words are defined
//! in its `docs/glossary.md`. [`Kind`] names the four for code that picks one at run time.
//!
//! # Embedding a timer in an event loop
//!
//! Time is `u64` ticks that you pass in, so the loop owns its timer: no thread, no lock.
//! [`TickClock`] converts between ticks and `Instant`s, rounding so that nothing fires early:
//! - [`TickClock::deadline_after`] gives the tick of a timeout set now (rounded **up**);
//! - [`Timer::next_deadline`] and [`TickClock::instant_of`] give how long the loop may sleep;
//! - [`TickClock::now_tick`] gives the tick to [`poll`](Timer::poll) with (rounded **down**).
//!
//! Keys are 8-byte [`TimerKey`]s with a generation: a [`reset`](Timer::reset) after the timer
//! fired returns [`StaleKeyError`], a normal race to `match`, never to `?`. This loop closes
//! connections that send nothing for 20 ms:
//!
//! ```
//! use std::collections::HashMap;
//! use std::sync::mpsc::{self, RecvTimeoutError};
//! use std::time::{Duration, Instant};
//! use tickwheel::{HashedWheel, StaleKeyError, TickClock, Timer};
//!
//! let clock = TickClock::new(Duration::from_millis(1)).unwrap(); // 1 tick = 1 ms
//! let idle = Duration::from_millis(20);
//! let mut timer = HashedWheel::new();
//! let mut keys = HashMap::new(); // connection -> its idle timer's key
//! let mut closed = Vec::new();
//!
//! // Connection 1 sends data twice, 5 ms apart; connection 2 once.
//! let (data, inbox) = mpsc::channel();
//! std::thread::spawn(move || {
//!     for id in [1, 2, 1] {
//!         data.send(id).unwrap();
//!         std::thread::sleep(Duration::from_millis(5));
//!     }
//! });
//! loop {
//!     // Sleep until the first deadline, or until data comes.
//!     let wait = match timer.next_deadline().and_then(|t| clock.instant_of(t)) {
//!         Some(at) => at.saturating_duration_since(Instant::now()),
//!         None => Duration::MAX, // no timer pending: no wake-up
//!     };
//!     match inbox.recv_timeout(wait) {
//!         Ok(id) => {
//!             // Data: arm the connection's idle timer, or push it out.
//!             let deadline = clock.deadline_after(Instant::now(), idle);
//!             match keys.get(&id).map(|&key| timer.reset(key, deadline)) {
//!                 Some(Ok(())) => {}
//!                 // None: a new connection. Stale: its timer fired before the data came.
//!                 None | Some(Err(StaleKeyError { .. })) => {
//!                     keys.insert(id, timer.insert(deadline, id).unwrap());
//!                 }
//!             }
//!         }
//!         Err(RecvTimeoutError::Timeout) => {}
//!         Err(RecvTimeoutError::Disconnected) if timer.is_empty() => break,
//!         Err(RecvTimeoutError::Disconnected) => std::thread::sleep(wait),
//!     }
//!     // Fire what is due: one timer per poll.
//!     while let Some(expired) = timer.poll(clock.now_tick(Instant::now())) {
//!         keys.remove(&expired.payload);
//!         closed.push(expired.payload);
//!     }
//! }
//! assert_eq!(closed.last(), Some(&1)); // connection 1 sent last, so it closes last
//! ```
//!
//! The repository's `docs/embedding.md` shows the same loop in a mio server, many threads
//! sharing one timer (`tickwheel-service`) and async tasks (`tickwheel-async`).
//!
//! # Implementing `Timer`
//!
//! Only for a timer of your own: the [`contract`] module holds the contract suite, one function
//! per case, and [`contract::contract_suite!`] instantiates every case as a `#[test]`.
#![cfg_attr(not(feature = "std"), no_std)]

extern crate alloc;

#[cfg(feature = "std")]
mod clock;
pub mod contract;
mod error;
mod heap;
mod key;
mod kind;
mod slab;
#[cfg(test)]
mod test_rng;
mod timer;
#[cfg(feature = "trace")]
pub mod trace;
mod wheel;

#[cfg(feature = "std")]
pub use clock::TickClock;
pub use error::{ConfigError, InsertError, StaleKeyError};
pub use heap::indexed::IndexedHeap;
pub use heap::lazy::LazyHeap;
pub use key::TimerKey;
pub use kind::{Kind, UnknownKind};
pub use timer::{Expired, FromOptions, Options, Stats, Tick, Timer};
pub use wheel::hashed::HashedWheel;
pub use wheel::hierarchical::HierarchicalWheel;
