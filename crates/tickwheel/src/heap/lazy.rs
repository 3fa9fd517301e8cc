//! `LazyHeap`: a plain binary heap where cancel only marks the entry dead.
//!
//! The heap holds `(deadline, seq, slab index)`; the slab entry holds the payload and the `seq`
//! of its one live heap element. An element is live iff its slab slot is occupied and carries the
//! same `seq` (seqs are never reused, so a reused slot cannot revive a dead element). Cancel frees
//! the slab slot at once and leaves the element behind; reset pushes a new element and leaves the
//! old one. Dead elements are popped as soon as they reach the top, and when more than half of a
//! heap larger than [`LazyHeap::COMPACT_FLOOR`] is dead it is rebuilt from its live elements in
//! O(n) (heapify), as CPython's asyncio does for its `_scheduled` heap.
//!
//! # Invariants
//! - Heap order over all elements, live or dead, by `(deadline, seq)`.
//! - The top element, if any, is live (dead tops are popped eagerly), so `next_deadline` is exact.
//! - Each pending timer has exactly one live element; `dead = heap.len() - len()`.
//! - After any operation, `dead <= live` or `heap.len() <= COMPACT_FLOOR`.
//! - `seq` is a `u32` (16-byte elements); before it would wrap, the live elements are renumbered
//!   in firing order, which keeps first-in first-out order among equal deadlines.
//!
//! # Costs
//! | operation | cost |
//! |---|---|
//! | insert | O(log n) push |
//! | cancel | O(1) mark, plus amortised O(1) rebuild share and dead-top pops |
//! | reset | O(log n) push of a new element |
//! | poll per fired timer | O(log n) pop, plus dead elements skipped |
//! | `next_deadline`, idle poll | O(1) |
//! | memory per timer | 16 B element (+ up to as many dead ones) + 24 B slab slot (`u64` payload, deadline, seq, generation) |
//!
//! Follows CPython asyncio (compact when over half cancelled) and the `heapq` docs' recipe.

use alloc::collections::BinaryHeap;
use alloc::vec::Vec;
use core::cmp::Ordering;

use crate::slab::Slab;
use crate::stamped::Stamped;
use crate::{
    ConfigError, Expired, FromOptions, InsertError, Options, StaleKeyError, Stats, Tick, Timer,
    TimerKey,
};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Item {
    deadline: Tick,
    seq: u32,
    index: u32,
}

// `BinaryHeap` is a max-heap; reverse the order so the earliest (deadline, seq) is on top.
impl Ord for Item {
    fn cmp(&self, other: &Self) -> Ordering {
        (other.deadline, other.seq).cmp(&(self.deadline, self.seq))
    }
}

impl PartialOrd for Item {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// A binary heap with lazy deletion. See the module docs for costs.
///
/// ```
/// use tickwheel::{LazyHeap, Timer};
///
/// let mut heap = LazyHeap::new();
/// let k = heap.insert(1, "cancelled").unwrap();
/// heap.insert(2, "kept").unwrap();
/// heap.cancel(k);
/// assert_eq!(heap.next_deadline(), Some(2));
/// assert_eq!(heap.poll(2).unwrap().payload, "kept");
/// ```
pub struct LazyHeap<T> {
    slab: Slab<Stamped<T>>,
    heap: BinaryHeap<Item>,
    /// Next sequence number; renumbered before it would wrap (see `renumber`).
    seq: u32,
    now: Tick,
    stats: Stats,
}

impl<T> LazyHeap<T> {
    /// Below this many elements the heap is never rebuilt (CPython uses 100).
    pub const COMPACT_FLOOR: usize = 64;

    /// An empty, unbounded heap at tick 0.
    ///
    /// ```
    /// let heap: tickwheel::LazyHeap<()> = tickwheel::LazyHeap::new();
    /// assert!(tickwheel::Timer::is_empty(&heap));
    /// ```
    #[must_use]
    pub fn new() -> Self {
        Self::with(Options::new())
    }

    fn with(options: Options) -> Self {
        let pre = options
            .preallocate
            .min(options.capacity.unwrap_or(usize::MAX));
        Self {
            slab: Slab::new(options.capacity, pre),
            heap: BinaryHeap::with_capacity(pre),
            seq: 0,
            now: options.start,
            stats: Stats::default(),
        }
    }

    #[inline]
    fn next_seq(&mut self) -> u32 {
        if self.seq == u32::MAX {
            self.renumber();
        }
        let s = self.seq;
        self.seq += 1;
        s
    }

    /// Drops dead elements and gives the live ones seqs `0..n` in firing order, so a `u32` seq
    /// never wraps (O(n log n) once per 2^32 inserts and resets).
    #[cold]
    fn renumber(&mut self) {
        let mut live: Vec<Item> = core::mem::take(&mut self.heap)
            .into_iter()
            .filter(|i| self.is_live(i))
            .collect();
        live.sort_unstable_by_key(|i| (i.deadline, i.seq));
        for (n, item) in live.iter_mut().enumerate() {
            item.seq = n as u32;
            self.slab.at_mut(item.index).seq = n as u32;
        }
        self.seq = live.len() as u32;
        self.heap = BinaryHeap::from(live);
    }

    #[inline]
    fn is_live(&self, item: &Item) -> bool {
        crate::stamped::is_live(&self.slab, item.index, item.seq)
    }

    /// Pops dead elements off the top and rebuilds when more than half is dead.
    fn tidy(&mut self) {
        let dead = self.heap.len() - self.slab.len();
        if dead > self.slab.len() && self.heap.len() > Self::COMPACT_FLOOR {
            let slab = &self.slab;
            self.heap
                .retain(|i| slab.try_at(i.index).is_some_and(|e| e.seq == i.seq));
            self.stats.compactions += 1;
            return;
        }
        while let Some(top) = self.heap.peek() {
            if self.is_live(top) {
                break;
            }
            self.heap.pop();
            self.stats.stale_skipped += 1;
        }
    }
}

impl<T> Default for LazyHeap<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> FromOptions for LazyHeap<T> {
    fn from_options(options: Options) -> Result<Self, ConfigError> {
        options.validate()?;
        Ok(Self::with(options))
    }
}

impl<T> Timer<T> for LazyHeap<T> {
    fn insert(&mut self, deadline: Tick, payload: T) -> Result<TimerKey, InsertError<T>> {
        // Refuse before taking a seq, so a refused insert never triggers a renumbering; the
        // slab's own check below still covers the u32 index space.
        if self.slab.limit().is_some_and(|l| self.slab.len() >= l) {
            self.stats.rejected += 1;
            return Err(InsertError::Full(payload));
        }
        let seq = self.next_seq();
        let key = match self.slab.insert(Stamped::new(deadline, payload, seq)) {
            Ok(key) => key,
            Err(entry) => {
                self.stats.rejected += 1;
                return Err(InsertError::Full(entry.payload));
            }
        };
        self.heap.push(Item {
            deadline,
            seq,
            index: key.index,
        });
        self.stats.inserted += 1;
        // A push can lift a small, mostly dead heap over the compaction floor.
        self.tidy();
        Ok(key)
    }

    fn cancel(&mut self, key: TimerKey) -> Option<T> {
        let index = self.slab.resolve(key)?;
        let entry = self.slab.remove_at(index);
        self.stats.cancelled += 1;
        self.tidy();
        Some(entry.payload)
    }

    fn reset(&mut self, key: TimerKey, deadline: Tick) -> Result<(), StaleKeyError> {
        let index = self.slab.resolve(key).ok_or(StaleKeyError { key })?;
        let seq = self.next_seq();
        let entry = self.slab.at_mut(index);
        entry.seq = seq;
        entry.deadline = deadline;
        self.heap.push(Item {
            deadline,
            seq,
            index,
        });
        self.stats.reset += 1;
        self.tidy();
        Ok(())
    }

    fn poll(&mut self, now: Tick) -> Option<Expired<T>> {
        self.now = self.now.max(now);
        let top = *self.heap.peek()?;
        if top.deadline > self.now {
            return None;
        }
        self.heap.pop();
        let key = self.slab.key_at(top.index);
        let entry = self.slab.remove_at(top.index);
        self.stats.fired += 1;
        self.tidy();
        Some(entry.into_expired(key))
    }

    fn next_deadline(&self) -> Option<Tick> {
        self.heap.peek().map(|i| i.deadline)
    }

    fn deadline(&self, key: TimerKey) -> Option<Tick> {
        self.slab.get(key).map(|e| e.deadline)
    }

    fn get(&self, key: TimerKey) -> Option<&T> {
        self.slab.get(key).map(|e| &e.payload)
    }

    fn now(&self) -> Tick {
        self.now
    }

    fn len(&self) -> usize {
        self.slab.len()
    }

    fn capacity(&self) -> Option<usize> {
        self.slab.limit()
    }

    fn stats(&self) -> Stats {
        self.stats
    }

    fn drain(&mut self) -> Vec<Expired<T>> {
        let mut live: Vec<Item> = core::mem::take(&mut self.heap)
            .into_iter()
            .filter(|i| self.is_live(i))
            .collect();
        live.sort_unstable_by(|a, b| b.cmp(a));
        self.stats.drained += live.len() as u64;
        live.into_iter()
            .map(|i| {
                let key = self.slab.key_at(i.index);
                self.slab.remove_at(i.index).into_expired(key)
            })
            .collect()
    }

    fn allocated_bytes(&self) -> usize {
        self.slab.allocated_bytes() + self.heap.capacity() * core::mem::size_of::<Item>()
    }

    fn name(&self) -> &'static str {
        "lazy-heap"
    }

    fn check_invariants(&self) {
        self.slab.check();
        let items = self.heap.as_slice();
        for (pos, item) in items.iter().enumerate() {
            if pos > 0 {
                assert!(
                    items[(pos - 1) / 2] >= *item,
                    "element {pos} orders before its parent"
                );
            }
        }
        if let Some(top) = self.heap.peek() {
            assert!(self.is_live(top), "the top element is dead");
        }
        // Seqs are unique per element, so no two live elements share a slot: `live == len`
        // means every pending timer has exactly one live element.
        let mut live = 0;
        for item in items.iter().filter(|i| self.is_live(i)) {
            live += 1;
            assert_eq!(
                self.slab.at(item.index).deadline,
                item.deadline,
                "live element disagrees with its timer's deadline"
            );
        }
        assert_eq!(
            live,
            self.slab.len(),
            "each timer needs exactly one live element"
        );
        let dead = items.len() - live;
        assert!(
            dead <= live || items.len() <= Self::COMPACT_FLOOR,
            "more than half dead ({dead} of {}) and not rebuilt",
            items.len()
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn elements_are_16_bytes() {
        assert_eq!(core::mem::size_of::<Item>(), 16);
    }

    /// Crossing the `u32` seq limit renumbers without changing the firing order.
    #[test]
    fn seq_wrap_keeps_fifo_order() {
        let mut heap: LazyHeap<u32> = LazyHeap::new();
        heap.seq = u32::MAX - 5;
        let keys: Vec<_> = (0..12)
            .map(|i| heap.insert(100 + u64::from(i % 3), i).unwrap())
            .collect();
        heap.reset(keys[0], 100).unwrap();
        heap.cancel(keys[4]);
        heap.check_invariants();
        assert!(heap.seq < 20, "renumbered");
        let fired: Vec<u32> = core::iter::from_fn(|| heap.poll(200))
            .map(|e| e.payload)
            .collect();
        assert_eq!(fired, [3, 6, 9, 0, 1, 7, 10, 2, 5, 8, 11]);
    }
}

#[cfg(test)]
mod layout {
    #[test]
    fn slot_is_24_bytes() {
        assert_eq!(core::mem::size_of::<crate::stamped::Stamped<u64>>(), 24);
    }
}
