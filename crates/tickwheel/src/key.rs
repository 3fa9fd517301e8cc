//! Timer keys: a slab index plus a generation, 8 bytes, `Copy`.
//!
//! A key names one timer for as long as it is pending. When the timer fires or is cancelled its
//! slot's generation moves on, so the old key stops matching even after the slot is reused by a
//! new timer: every later use of the old key answers `None` or [`StaleKeyError`](crate::StaleKeyError)
//! and never touches the new timer.

use core::fmt;

/// Names one pending timer inside the [`Timer`](crate::Timer) that returned it.
///
/// Keys are only meaningful for the timer that issued them, and another timer refuses them: each
/// timer starts its slots' generations at its own point of the `u32` circle, so a foreign key
/// names a generation none of its slots holds (until one slot has been reused millions of times
/// more in one timer than in the other). They are small (`index`, `generation`: 8 bytes), `Copy`,
/// and safe to keep after the timer ended: a stale key is detected by its generation. A slot's
/// generation is a `u32` that wraps, so a key kept through 2³² reuses of the same slot could
/// match again; no realistic program holds a key that long.
///
/// ```
/// use tickwheel::{HashedWheel, Timer};
///
/// let (mut a, mut b) = (HashedWheel::new(), HashedWheel::new());
/// let mine = a.insert(100, "a's own").unwrap();
/// let theirs = b.insert(200, "b's").unwrap();
/// assert_eq!(a.cancel(theirs), None); // a foreign key touches nothing
/// assert_eq!(a.cancel(mine), Some("a's own"));
/// ```
///
/// ```
/// use tickwheel::{HierarchicalWheel, Timer};
///
/// let mut timer = HierarchicalWheel::new();
/// let key = timer.insert(10, "request 7").unwrap();
/// assert_eq!(timer.cancel(key), Some("request 7"));
/// assert_eq!(timer.cancel(key), None); // the key is stale now
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TimerKey {
    pub(crate) index: u32,
    pub(crate) generation: u32,
}

impl TimerKey {
    /// Packs the key into one `u64` (for storage in a foreign map or a token).
    ///
    /// ```
    /// use tickwheel::{IndexedHeap, Timer, TimerKey};
    ///
    /// let mut timer = IndexedHeap::new();
    /// let key = timer.insert(5, ()).unwrap();
    /// assert_eq!(TimerKey::from_u64(key.to_u64()), key);
    /// ```
    #[must_use]
    pub const fn to_u64(self) -> u64 {
        ((self.generation as u64) << 32) | self.index as u64
    }

    /// Rebuilds a key packed by [`TimerKey::to_u64`]. Any `u64` is accepted; one that was never
    /// issued is simply a stale key.
    ///
    /// ```
    /// use tickwheel::{LazyHeap, Timer, TimerKey};
    ///
    /// let mut timer: LazyHeap<u8> = LazyHeap::new();
    /// assert_eq!(timer.cancel(TimerKey::from_u64(12345)), None);
    /// ```
    #[must_use]
    pub const fn from_u64(raw: u64) -> Self {
        Self {
            index: raw as u32,
            generation: (raw >> 32) as u32,
        }
    }

    /// The slot index inside the timer's storage. Indices are reused after a timer ends.
    ///
    /// ```
    /// use tickwheel::{HashedWheel, Timer};
    ///
    /// let mut timer = HashedWheel::new();
    /// let key = timer.insert(1, ()).unwrap();
    /// assert_eq!(key.index(), 0);
    /// ```
    #[must_use]
    pub const fn index(self) -> u32 {
        self.index
    }
}

impl fmt::Debug for TimerKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "TimerKey({}v{})", self.index, self.generation)
    }
}
