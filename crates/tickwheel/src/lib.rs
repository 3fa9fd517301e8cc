//! Timers for network servers: four interchangeable designs behind one [`Timer`] trait.
//!
//! Each design keeps the same contract (see [`Timer`]): never early, never lost or
//! doubled, complete, ordered by deadline then first-in first-out, harmless stale keys, one timer
//! per poll, a safe `next_deadline`, any deadline accepted, an optional capacity, work counters.
//! One operation sequence gives one fired sequence on all of them, so you can swap them freely.
//!
//! | type | design | pick it when |
//! |---|---|---|
//! | [`HierarchicalWheel`] | 11 levels × 64 slots (every `u64` tick), a crowded slot split into a finer wheel; every call bounded | many timers, most cancelled or pushed later (I/O timeouts) |
//! | [`HashedWheel`] | one ring of 2^k one-tick slots for the next revolution; other timers wait in an indexed heap; every call bounded | timeouts mostly shorter than one revolution |
//! | [`IndexedHeap`] | 4-ary min-heap with positions; every call O(log n) | fewer timers, an exact next deadline |
//! | [`LazyHeap`] | `std`'s binary heap, cancel marks dead, rebuilt when a third dead | insert-heavy, cancel-light; one call may pop a long run of cancelled timers or rebuild the heap |
//!
//! Time is `u64` ticks that you pass in; [`TickClock`] converts `Instant`s (deadlines round up,
//! `now` rounds down, so nothing fires early). Keys are 8-byte [`TimerKey`]s with a generation.
//!
//! ```
//! use tickwheel::{HierarchicalWheel, Timer};
//!
//! let mut timer = HierarchicalWheel::new();
//! let a = timer.insert(20, "a").unwrap();
//! timer.insert(10, "b").unwrap();
//! timer.reset(a, 5).unwrap();
//! let fired: Vec<_> = std::iter::from_fn(|| timer.poll(20)).map(|e| e.payload).collect();
//! assert_eq!(fired, ["a", "b"]);
//! ```
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
