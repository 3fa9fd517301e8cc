//! `IndexedHeap`: a d-ary min-heap of timers that knows where each timer sits.
//!
//! The heap array holds 16-byte `(deadline, seq, slab index)` elements so that sifting compares
//! within one array and never chases a pointer; the slab holds the payloads and a parallel array
//! holds each timer's position in the heap, so `cancel` and `reset` find their element in O(1)
//! and fix the heap with one sift. Nothing is
//! left behind by a cancel (no tombstones). The arity `D` defaults to 4, as Go's runtime and .NET's
//! `PriorityQueue` use: a shallower tree than a binary heap, and the four children share a cache
//! line or two.
//!
//! # Invariants
//! - Heap order: no element orders before its parent by `(deadline, seq)`.
//! - Positions: for every element at array position `p`, its slab entry's `pos == p`; the array
//!   and the slab hold the same timers (`heap.len() == slab.len()`).
//! - `seq` values are unique and grow with every insert and reset, so equal deadlines leave in
//!   first-in first-out order. `seq` is a `u32` to keep elements at 16 bytes; when it would
//!   wrap, every pending timer is renumbered in firing order (O(n log n) once per 2^32 inserts
//!   and resets), which keeps the order and makes the sorted array a valid heap.
//!
//! # Costs
//! | operation | cost | work |
//! |---|---|---|
//! | insert | O(log_D n) sift up | `2h + 2` |
//! | cancel | O(log_D n) (swap in the last element, sift) | `(D + 1) · (h + 1) + 2` |
//! | reset | O(log_D n) one sift, up or down | `(D + 1) · (h + 1)` |
//! | poll per fired timer | O(D log_D n) sift down | `(D + 1) · (h + 1) + 2` |
//! | poll with nothing due, `next_deadline` | O(1) | 0 |
//! | memory per timer | 16 B element + 4 B position + 16 B slab slot (`u64` payload + generation) | |
//!
//! Work is counted in [`Stats::max_call_work`] units, by level: one element compared or moved.
//! A sift up compares and moves once a level; a sift down compares the `D` children and the
//! element and moves once a level. `h` is the depth (levels below the root) of a heap of the
//! most timers held so far, so [`Timer::work_bound`] is `(D + 1) · (h + 1) + 2`: 57 units for the
//! 4-ary heap that has held a million timers (`h` = 10).
//! Every call keeps it but the renumbering once per `2^32` inserts and resets (O(n log n)),
//! `drain` and `shrink_to_fit`.
//!
//! Follows the Go runtime's 4-ary timer heap and libuv's `(timeout, start_id)` tie-break.

use alloc::vec::Vec;

use core::num::NonZeroU32;

use crate::slab::{Slab, FIRST_GENERATION};
use crate::{
    ConfigError, Expired, FromOptions, InsertError, Options, StaleKeyError, Stats, Tick, Timer,
    TimerKey,
};

#[derive(Clone, Copy, Debug)]
struct Item {
    deadline: Tick,
    seq: u32,
    index: u32,
}

impl Item {
    #[inline]
    fn before(&self, other: &Item) -> bool {
        (self.deadline, self.seq) < (other.deadline, other.seq)
    }
}

/// A payload and its slot's generation (16 bytes for a `u64` payload).
struct Payload<T> {
    payload: T,
    generation: NonZeroU32,
}

crate::slab::generational!(Payload);

/// A d-ary min-heap of timers that knows where each timer sits (`D` = 4 by default, as in
/// Go's runtime).
///
/// Elements `(deadline, seq, index)` of 16 bytes sit in one array; a second array holds each
/// timer's position, so cancel and reset fix the heap with one sift and leave nothing behind.
/// `next_deadline` is exact. Every call but `drain`, `shrink_to_fit` and a renumbering once
/// per `2^32` inserts and resets does at most `(D + 1) · (h + 1) + 2` units of work (elements
/// compared or moved, counted by level) for a heap `h` levels deep: 57 at a million timers
/// ([`Timer::work_bound`]). Pick it for fewer timers, or when an exact next deadline matters.
///
/// | operation | cost |
/// |---|---|
/// | insert | O(log_D n) |
/// | cancel, reset | O(log_D n): one sift |
/// | poll per fired timer | O(D log_D n) |
/// | poll with nothing due, `next_deadline` | O(1) |
/// | memory per timer | 36 B: a 16 B element, a 4 B position and a 16 B slab slot (`u64` payload) |
///
/// ```
/// use tickwheel::{FromOptions, IndexedHeap, Options, Timer};
///
/// // A binary heap instead of the default 4-ary one.
/// let mut heap = IndexedHeap::<&str, 2>::from_options(Options::new()).unwrap();
/// let k = heap.insert(10, "late").unwrap();
/// heap.insert(3, "soon").unwrap();
/// heap.reset(k, 1).unwrap();
/// assert_eq!(heap.next_deadline(), Some(1));
/// assert_eq!(heap.poll(10).unwrap().payload, "late");
/// ```
pub struct IndexedHeap<T, const D: usize = 4> {
    slab: Slab<Payload<T>>,
    heap: Vec<Item>,
    /// `pos[i]` is the heap position of the timer in slab slot `i` (stale for vacant slots).
    pos: Vec<u32>,
    /// Next insertion sequence number.
    seq: u32,
    /// The most timers held at once (the work bound's `n`).
    peak: usize,
    /// Latest `now` seen; only increases.
    now: Tick,
    /// The work of the last call that did any (for a design that embeds this heap).
    last_work: u64,
    stats: Stats,
}

impl<T> IndexedHeap<T> {
    /// An empty, unbounded 4-ary heap at tick 0.
    ///
    /// ```
    /// let heap: tickwheel::IndexedHeap<u64> = tickwheel::IndexedHeap::new();
    /// assert_eq!(tickwheel::Timer::len(&heap), 0);
    /// ```
    #[must_use]
    pub fn new() -> Self {
        Self::with(Options::new())
    }
}

impl<T> Default for IndexedHeap<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T, const D: usize> FromOptions for IndexedHeap<T, D> {
    fn from_options(options: Options) -> Result<Self, ConfigError> {
        options.validate()?;
        Ok(Self::with(options))
    }
}

impl<T, const D: usize> IndexedHeap<T, D> {
    const ARITY_OK: () = assert!(D >= 2, "a heap needs an arity of at least 2");

    pub(crate) fn with(options: Options) -> Self {
        #[allow(clippy::let_unit_value)]
        let () = Self::ARITY_OK;
        let pre = options
            .preallocate
            .min(options.capacity.unwrap_or(usize::MAX));
        Self {
            slab: Slab::new(options.capacity, pre),
            heap: Vec::with_capacity(pre),
            pos: Vec::with_capacity(pre),
            seq: 0,
            now: options.start,
            last_work: 0,
            stats: Stats::default(),
            peak: 0,
        }
    }

    /// Records one call's work.
    #[inline]
    fn note(&mut self, work: u64) {
        self.last_work = work;
        if work > self.stats.max_call_work {
            self.stats.max_call_work = work;
        }
    }

    /// The work of the last insert, cancel, reset or fire, in [`Stats::max_call_work`] units.
    #[inline]
    pub(crate) fn last_call_work(&self) -> u64 {
        self.last_work
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

    /// Gives the pending timers seqs `0..n` in firing order. A sorted array is a heap.
    #[cold]
    fn renumber(&mut self) {
        self.heap.sort_unstable_by_key(|i| (i.deadline, i.seq));
        for (n, item) in self.heap.iter_mut().enumerate() {
            item.seq = n as u32;
            self.pos[item.index as usize] = n as u32;
        }
        self.seq = self.heap.len() as u32;
    }

    #[inline]
    fn place(&mut self, pos: usize, item: Item) {
        self.heap[pos] = item;
        self.pos[item.index as usize] = pos as u32;
    }

    /// Sifts the element at `pos` up; returns the work done: a compare and a move a level it
    /// rises, the compare that stops it, the final write.
    fn sift_up(&mut self, mut pos: usize) -> u64 {
        let item = self.heap[pos];
        let mut levels = 0;
        while pos > 0 {
            let parent = (pos - 1) / D;
            if !item.before(&self.heap[parent]) {
                break;
            }
            let p = self.heap[parent];
            self.place(pos, p);
            pos = parent;
            levels += 1;
        }
        self.place(pos, item);
        2 * levels + 2
    }

    /// Sifts the element at `pos` down; returns the work done, counted by level: at most `D`
    /// compares (among the children and with the element) and a move a level it sinks, as
    /// many compares at the level that stops it, the final write.
    fn sift_down(&mut self, mut pos: usize) -> u64 {
        let item = self.heap[pos];
        let len = self.heap.len();
        let mut levels = 0;
        loop {
            let first = pos * D + 1;
            if first >= len {
                break;
            }
            let last = (first + D).min(len);
            let mut best = first;
            for c in first + 1..last {
                if self.heap[c].before(&self.heap[best]) {
                    best = c;
                }
            }
            if !self.heap[best].before(&item) {
                break;
            }
            let b = self.heap[best];
            self.place(pos, b);
            pos = best;
            levels += 1;
        }
        self.place(pos, item);
        (D as u64 + 1) * levels + D as u64 + 1
    }

    /// The depth of a heap of `n` elements: the levels below the root.
    fn depth(n: usize) -> u64 {
        let (mut last, mut depth) = (n.saturating_sub(1), 0);
        while last > 0 {
            last = (last - 1) / D;
            depth += 1;
        }
        depth
    }

    /// Takes the due top element `top` out of the heap and the slab.
    #[inline(never)]
    fn fire_top(&mut self, top: Item) -> Expired<T> {
        let key = self.slab.key_at(top.index);
        let (_, work) = self.remove_pos(0);
        self.note(work);
        self.stats.fired += 1;
        Expired {
            key,
            deadline: top.deadline,
            payload: self.slab.remove_at(top.index).payload,
        }
    }

    /// Takes the element at `pos` out of the heap, keeping heap order; returns it and the
    /// work done.
    fn remove_pos(&mut self, pos: usize) -> (Item, u64) {
        let last = self.heap.pop().expect("remove from a non-empty heap");
        if pos == self.heap.len() {
            return (last, 1);
        }
        let removed = self.heap[pos];
        self.heap[pos] = last;
        self.pos[last.index as usize] = pos as u32;
        let work = if pos > 0 && last.before(&self.heap[(pos - 1) / D]) {
            self.sift_up(pos)
        } else {
            self.sift_down(pos)
        };
        (removed, work + 2)
    }
}

impl<T, const D: usize> Timer<T> for IndexedHeap<T, D> {
    #[inline]
    fn insert(&mut self, deadline: Tick, payload: T) -> Result<TimerKey, InsertError<T>> {
        let entry = Payload {
            payload,
            generation: FIRST_GENERATION,
        };
        let key = match self.slab.insert(entry) {
            Ok(key) => key,
            Err(entry) => {
                self.stats.rejected += 1;
                return Err(InsertError::Full(entry.payload));
            }
        };
        let seq = self.next_seq();
        let pos = self.heap.len() as u32;
        let slot = key.index as usize;
        if slot == self.pos.len() {
            self.pos.push(pos);
        } else {
            self.pos[slot] = pos;
        }
        self.heap.push(Item {
            deadline,
            seq,
            index: key.index,
        });
        let work = self.sift_up(pos as usize);
        self.note(work);
        self.peak = self.peak.max(self.heap.len());
        self.stats.inserted += 1;
        Ok(key)
    }

    fn cancel(&mut self, key: TimerKey) -> Option<T> {
        let index = self.slab.resolve(key)?;
        let (_, work) = self.remove_pos(self.pos[index as usize] as usize);
        self.note(work);
        self.stats.cancelled += 1;
        Some(self.slab.remove_at(index).payload)
    }

    fn reset(&mut self, key: TimerKey, deadline: Tick) -> Result<(), StaleKeyError> {
        let index = self.slab.resolve(key).ok_or(StaleKeyError { key })?;
        let seq = self.next_seq();
        let pos = self.pos[index as usize] as usize;
        let old = self.heap[pos];
        self.heap[pos] = Item {
            deadline,
            seq,
            index,
        };
        // The new (deadline, seq) orders after the old one iff the deadline did not move earlier.
        let work = if deadline < old.deadline {
            self.sift_up(pos)
        } else {
            self.sift_down(pos)
        };
        self.note(work);
        self.stats.reset += 1;
        Ok(())
    }

    #[inline]
    fn poll(&mut self, now: Tick) -> Option<Expired<T>> {
        self.now = self.now.max(now);
        let top = *self.heap.first()?;
        if top.deadline > self.now {
            return None; // idle turn, inlined
        }
        Some(self.fire_top(top))
    }

    fn next_deadline(&self) -> Option<Tick> {
        self.heap.first().map(|i| i.deadline)
    }

    fn deadline(&self, key: TimerKey) -> Option<Tick> {
        let index = self.slab.resolve(key)?;
        Some(self.heap[self.pos[index as usize] as usize].deadline)
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

    fn work_bound(&self) -> Option<u64> {
        Some((D as u64 + 1) * (Self::depth(self.peak) + 1) + 2)
    }

    fn drain(&mut self) -> Vec<Expired<T>> {
        let mut items = core::mem::take(&mut self.heap);
        items.sort_unstable_by_key(|i| (i.deadline, i.seq));
        self.stats.drained += items.len() as u64;
        items
            .into_iter()
            .map(|i| Expired {
                key: self.slab.key_at(i.index),
                deadline: i.deadline,
                payload: self.slab.remove_at(i.index).payload,
            })
            .collect()
    }

    fn shrink_to_fit(&mut self) {
        self.slab.shrink_to_fit();
        self.pos.truncate(self.slab.slots());
        self.pos.shrink_to_fit();
        self.heap.shrink_to_fit();
    }

    fn allocated_bytes(&self) -> usize {
        self.slab.allocated_bytes()
            + self.heap.capacity() * core::mem::size_of::<Item>()
            + self.pos.capacity() * core::mem::size_of::<u32>()
    }

    fn name(&self) -> &'static str {
        "heap"
    }

    fn check_invariants(&self) {
        self.slab.check();
        assert_eq!(
            self.heap.len(),
            self.slab.len(),
            "heap and slab disagree on len"
        );
        for (pos, item) in self.heap.iter().enumerate() {
            assert_eq!(
                self.pos[item.index as usize] as usize, pos,
                "slab position of element {pos} is wrong"
            );
            if pos > 0 {
                assert!(
                    !item.before(&self.heap[(pos - 1) / D]),
                    "element {pos} orders before its parent"
                );
            }
            assert!(item.seq < self.seq, "seq from the future");
        }
        assert!(
            self.stats.max_call_work <= (D as u64 + 1) * (Self::depth(self.peak) + 1) + 2,
            "a call did more work than the bound"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The bound the module docs quote for a million timers.
    #[test]
    fn a_million_timers_are_ten_levels_deep() {
        assert_eq!(IndexedHeap::<u64>::depth(1_000_000), 10);
        assert_eq!(IndexedHeap::<u64, 2>::depth(1_000_000), 19);
        let mut heap: IndexedHeap<u64> = IndexedHeap::new();
        heap.peak = 1_000_000;
        assert_eq!(heap.work_bound(), Some(57));
    }

    #[test]
    fn elements_are_16_bytes() {
        assert_eq!(core::mem::size_of::<Item>(), 16);
    }

    /// Crossing the `u32` seq limit renumbers without changing the firing order.
    #[test]
    fn seq_wrap_keeps_fifo_order() {
        let mut heap: IndexedHeap<u32> = IndexedHeap::new();
        heap.seq = u32::MAX - 5;
        let keys: Vec<_> = (0..12)
            .map(|i| heap.insert(100 + u64::from(i % 3), i).unwrap())
            .collect();
        heap.reset(keys[0], 100).unwrap();
        heap.check_invariants();
        assert!(heap.seq < 20, "renumbered");
        let fired: Vec<u32> = core::iter::from_fn(|| heap.poll(200))
            .map(|e| e.payload)
            .collect();
        assert_eq!(fired, [3, 6, 9, 0, 1, 4, 7, 10, 2, 5, 8, 11]);
    }
}
