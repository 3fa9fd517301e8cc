//! `LazyHeap`: a plain binary heap where cancel only marks the entry dead.
//!
//! The heap holds 12-byte elements `(deadline - base, seq, slab index)`; the slab entry holds
//! the payload, the full deadline and the `seq` of its one live element. An element is live iff
//! its slab slot is occupied and carries the same `seq` (seqs are never reused, so a reused slot
//! cannot revive a dead element). Cancel frees the slab slot at once and leaves the element
//! behind; reset pushes a new element and leaves the old one. Dead elements are popped as soon
//! as they reach the top, and when more than half of a heap larger than
//! [`LazyHeap::COMPACT_FLOOR`] is dead it is rebuilt from its live elements in O(n) (heapify),
//! as CPython's asyncio does for its `_scheduled` heap.
//!
//! An element stores its deadline as a `u32` offset from `base`, so the heap order is one
//! 64-bit comparison of `offset << 32 | seq`. A timer whose deadline is outside
//! `[base, base + 2^32)` (in the past of `base`, or about 50 days of 1 ms ticks away) waits in
//! the ordered `outside` store instead, keyed by `(deadline, seq)` and removed from eagerly.
//! When such a far deadline arrives and `base` could move forward by half the range or more,
//! the heap is rebased: `base` becomes `min(now, earliest heap deadline)`, offsets shrink, and
//! the outside timers that now fit move in, in O(n) once per 2^31 ticks at most.
//!
//! # Invariants
//! - Heap order over all elements, live or dead, by `(offset, seq)`, that is `(deadline, seq)`.
//! - The top element, if any, is live (dead tops are popped eagerly).
//! - `base <= now`, and a pending timer is in the heap iff `base <= deadline < base + 2^32`,
//!   else in `outside`; each pending timer has exactly one live element or outside entry, so
//!   `dead = heap.len() - (len() - outside.len())`.
//! - After any operation, `dead <= live in the heap` or `heap.len() <= COMPACT_FLOOR`.
//! - `seq` is a `u32`; before it would wrap, the pending timers are renumbered in firing order,
//!   which keeps first-in first-out order among equal deadlines.
//!
//! # Costs
//! | operation | cost |
//! |---|---|
//! | insert | O(log n) push (outside the range: O(log n) B-tree insert, or an O(n) rebase at most once per 2^31 ticks) |
//! | cancel | O(1) mark, plus amortised O(1) rebuild share and dead-top pops (outside: O(log n)) |
//! | reset | O(log n) push of a new element |
//! | poll per fired timer | O(log n) pop, plus dead elements skipped |
//! | `next_deadline`, idle poll | O(1) |
//! | memory per timer | 12 B element (+ up to as many dead ones) + 24 B slab slot (`u64` payload, deadline, seq, generation) |
//!
//! Follows CPython asyncio (compact when over half cancelled) and the `heapq` docs' recipe.

use alloc::collections::{BTreeMap, BinaryHeap};
use alloc::vec::Vec;
use core::cmp::Ordering;

use crate::slab::Slab;
use crate::stamped::Stamped;
use crate::{
    ConfigError, Expired, FromOptions, InsertError, Options, StaleKeyError, Stats, Tick, Timer,
    TimerKey,
};

/// Ticks an element's offset can express.
const RANGE: u64 = 1 << 32;

/// One heap element: `key = offset << 32 | seq` and the slab index, packed into 12 bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(C, packed(4))]
struct Item {
    key: u64,
    index: u32,
}

impl Item {
    #[inline]
    fn new(offset: u32, seq: u32, index: u32) -> Self {
        Self {
            key: u64::from(offset) << 32 | u64::from(seq),
            index,
        }
    }

    #[inline]
    fn offset(self) -> u64 {
        self.key >> 32
    }

    #[inline]
    fn seq(self) -> u32 {
        self.key as u32
    }

    /// Whether this element still names its timer.
    #[inline]
    fn is_live<T>(self, slab: &Slab<Stamped<T>>) -> bool {
        crate::stamped::is_live(slab, self.index, self.seq())
    }
}

// `BinaryHeap` is a max-heap; reverse the order so the earliest (deadline, seq) is on top.
impl Ord for Item {
    #[inline]
    fn cmp(&self, other: &Self) -> Ordering {
        let (mine, theirs) = (self.key, other.key);
        theirs.cmp(&mine)
    }
}

impl PartialOrd for Item {
    #[inline]
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
    /// Timers whose deadline is outside `[base, base + RANGE)`: `(deadline, seq) -> index`.
    outside: BTreeMap<(Tick, u32), u32>,
    /// The deadline an element's offset counts from; never after `now`.
    base: Tick,
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
            outside: BTreeMap::new(),
            base: options.start,
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

    /// The offset of `deadline` from `base`, if an element can hold it.
    #[inline]
    fn offset(&self, deadline: Tick) -> Option<u32> {
        deadline
            .checked_sub(self.base)
            .and_then(|d| u32::try_from(d).ok())
    }

    #[inline]
    fn deadline_of(&self, item: Item) -> Tick {
        self.base + item.offset()
    }

    /// Timers waiting in the heap (the rest wait outside).
    #[inline]
    fn in_heap(&self) -> usize {
        self.slab.len() - self.outside.len()
    }

    /// Puts timer `index` where its deadline says: an element, or the outside store.
    #[inline]
    fn place(&mut self, index: u32, deadline: Tick, seq: u32) {
        match self.offset(deadline) {
            Some(offset) => self.heap.push(Item::new(offset, seq, index)),
            None => self.place_outside(index, deadline, seq),
        }
    }

    /// [`place`](Self::place) for a deadline outside the range: rebases first when the range
    /// can move forward by half its width or more, so far deadlines come back into the heap.
    #[cold]
    #[inline(never)]
    fn place_outside(&mut self, index: u32, deadline: Tick, seq: u32) {
        if deadline >= self.base {
            self.settle_top();
            let floor = self
                .heap
                .peek()
                .map_or(self.now, |&top| self.deadline_of(top).min(self.now));
            if floor - self.base >= RANGE / 2 {
                self.rebase(floor);
                if let Some(offset) = self.offset(deadline) {
                    self.heap.push(Item::new(offset, seq, index));
                    return;
                }
            }
        }
        self.outside.insert((deadline, seq), index);
    }

    /// Moves `base` forward to `base` (at most the earliest live element's deadline), drops the
    /// dead elements, and takes in the outside timers that the new range holds. O(n).
    #[cold]
    fn rebase(&mut self, base: Tick) {
        let shift = base - self.base;
        let slab = &self.slab;
        let mut items: Vec<Item> = core::mem::take(&mut self.heap)
            .into_iter()
            .filter(|i| i.is_live(slab))
            .map(|i| Item::new((i.offset() - shift) as u32, i.seq(), i.index))
            .collect();
        self.base = base;
        let mut inside = self.outside.split_off(&(base, 0));
        if let Some(end) = base.checked_add(RANGE) {
            let mut beyond = inside.split_off(&(end, 0));
            self.outside.append(&mut beyond);
        }
        items.extend(
            inside
                .into_iter()
                .map(|((deadline, seq), index)| Item::new((deadline - base) as u32, seq, index)),
        );
        self.heap = BinaryHeap::from(items);
        self.stats.compactions += 1;
    }

    /// Empties the heap and the outside store and returns the pending timers as
    /// `(deadline, seq, index)`, in firing order.
    fn take_in_firing_order(&mut self) -> Vec<(Tick, u32, u32)> {
        let base = self.base;
        let slab = &self.slab;
        let mut order: Vec<(Tick, u32, u32)> = core::mem::take(&mut self.heap)
            .into_iter()
            .filter(|i| i.is_live(slab))
            .map(|i| (base + i.offset(), i.seq(), i.index))
            .collect();
        order.extend(
            core::mem::take(&mut self.outside)
                .into_iter()
                .map(|((deadline, seq), index)| (deadline, seq, index)),
        );
        order.sort_unstable();
        order
    }

    /// Drops dead elements and gives the pending timers seqs `0..n` in firing order, so a `u32`
    /// seq never wraps (O(n log n) once per 2^32 inserts and resets).
    #[cold]
    fn renumber(&mut self) {
        let order = self.take_in_firing_order();
        let mut items = Vec::with_capacity(order.len());
        for (n, &(deadline, _, index)) in order.iter().enumerate() {
            let seq = n as u32;
            self.slab.at_mut(index).seq = seq;
            match self.offset(deadline) {
                Some(offset) => items.push(Item::new(offset, seq, index)),
                None => {
                    self.outside.insert((deadline, seq), index);
                }
            }
        }
        self.seq = order.len() as u32;
        self.heap = BinaryHeap::from(items);
    }

    /// Pops dead elements off the top, so the top is live.
    #[inline]
    fn settle_top(&mut self) {
        while let Some(&top) = self.heap.peek() {
            if top.is_live(&self.slab) {
                break;
            }
            self.heap.pop();
            self.stats.stale_skipped += 1;
        }
    }

    /// Rebuilds when more than half of the heap is dead, else pops dead tops.
    #[inline]
    fn tidy(&mut self) {
        let live = self.in_heap();
        if self.heap.len() - live > live && self.heap.len() > Self::COMPACT_FLOOR {
            self.compact();
        } else {
            self.settle_top();
        }
    }

    /// Drops every dead element and re-heapifies: O(n), once per as many dead elements.
    #[cold]
    #[inline(never)]
    fn compact(&mut self) {
        let slab = &self.slab;
        self.heap.retain(|i| i.is_live(slab));
        self.stats.compactions += 1;
    }

    /// Takes the earliest timer (the heap's top, or the first outside) out and returns it.
    #[inline(never)]
    fn fire(&mut self, from_heap: bool) -> Option<Expired<T>> {
        let index = if from_heap {
            self.heap.pop()?.index
        } else {
            self.outside.pop_first()?.1
        };
        let key = self.slab.key_at(index);
        let entry = self.slab.remove_at(index);
        self.stats.fired += 1;
        self.tidy();
        Some(entry.into_expired(key))
    }

    /// The earliest pending timer: `(deadline, seq)` and whether it is the heap's top.
    #[inline]
    fn earliest(&self) -> Option<((Tick, u32), bool)> {
        let top = self.heap.peek().map(|&i| (self.deadline_of(i), i.seq()));
        match (top, self.outside.first_key_value()) {
            (Some(t), Some((&o, _))) if o < t => Some((o, false)),
            (Some(t), _) => Some((t, true)),
            (None, Some((&o, _))) => Some((o, false)),
            (None, None) => None,
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
    #[inline]
    fn insert(&mut self, deadline: Tick, payload: T) -> Result<TimerKey, InsertError<T>> {
        // Refuse before taking a seq, so a refused insert never triggers a renumbering; the
        // slab's own check below still covers the u32 index space.
        if self.slab.is_full() {
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
        self.place(key.index, deadline, seq);
        self.stats.inserted += 1;
        // A live push keeps the top live and the dead count; it can only break the rebuild
        // rule by lifting a small, mostly dead heap over the compaction floor.
        if self.heap.len() == Self::COMPACT_FLOOR + 1 {
            self.tidy();
        }
        Ok(key)
    }

    fn cancel(&mut self, key: TimerKey) -> Option<T> {
        let index = self.slab.resolve(key)?;
        let entry = self.slab.remove_at(index);
        if self.offset(entry.deadline()).is_none() {
            self.outside.remove(&(entry.deadline(), entry.seq));
        }
        self.stats.cancelled += 1;
        self.tidy();
        Some(entry.payload)
    }

    fn reset(&mut self, key: TimerKey, deadline: Tick) -> Result<(), StaleKeyError> {
        let index = self.slab.resolve(key).ok_or(StaleKeyError { key })?;
        // Take the seq first: a renumbering changes the timer's current one.
        let seq = self.next_seq();
        let entry = self.slab.at_mut(index);
        let old = (entry.deadline(), entry.seq);
        entry.seq = seq;
        entry.set_deadline(deadline);
        if self.offset(old.0).is_none() {
            self.outside.remove(&old);
        }
        self.place(index, deadline, seq);
        self.stats.reset += 1;
        self.tidy();
        Ok(())
    }

    #[inline]
    fn poll(&mut self, now: Tick) -> Option<Expired<T>> {
        self.now = self.now.max(now);
        let ((deadline, _), from_heap) = self.earliest()?;
        if deadline > self.now {
            return None; // idle turn, inlined
        }
        self.fire(from_heap)
    }

    fn next_deadline(&self) -> Option<Tick> {
        self.earliest().map(|((deadline, _), _)| deadline)
    }

    fn deadline(&self, key: TimerKey) -> Option<Tick> {
        self.slab.get(key).map(|e| e.deadline())
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
        let order = self.take_in_firing_order();
        self.stats.drained += order.len() as u64;
        order
            .into_iter()
            .map(|(_, _, index)| {
                let key = self.slab.key_at(index);
                self.slab.remove_at(index).into_expired(key)
            })
            .collect()
    }

    fn shrink_to_fit(&mut self) {
        let slab = &self.slab;
        let mut items = core::mem::take(&mut self.heap).into_vec();
        items.retain(|i| i.is_live(slab));
        items.shrink_to_fit();
        // The live elements keep their order: a heap built from them pops them alike.
        self.heap = BinaryHeap::from(items);
        self.slab.shrink_to_fit();
    }

    fn allocated_bytes(&self) -> usize {
        // A B-tree entry of `((Tick, u32), u32)` with node overhead: about 1.5× its 16 bytes.
        self.slab.allocated_bytes()
            + self.heap.capacity() * core::mem::size_of::<Item>()
            + self.outside.len() * 24
    }

    fn name(&self) -> &'static str {
        "lazy-heap"
    }

    fn check_invariants(&self) {
        self.slab.check();
        assert!(self.base <= self.now, "base after now");
        let items = self.heap.as_slice();
        for (pos, item) in items.iter().enumerate() {
            if pos > 0 {
                assert!(
                    items[(pos - 1) / 2] >= *item,
                    "element {pos} orders before its parent"
                );
            }
        }
        if let Some(&top) = self.heap.peek() {
            assert!(top.is_live(&self.slab), "the top element is dead");
        }
        // Seqs are unique per element, so no two live elements share a slot; heap deadlines are
        // in the range and outside ones are not, so no timer is in both: `live + outside == len`
        // means every pending timer has exactly one place.
        let mut live = 0;
        for &item in items.iter().filter(|i| i.is_live(&self.slab)) {
            live += 1;
            assert_eq!(
                self.slab.at(item.index).deadline(),
                self.deadline_of(item),
                "live element disagrees with its timer's deadline"
            );
        }
        for (&(deadline, seq), &index) in &self.outside {
            let entry = self.slab.try_at(index).expect("outside timer not pending");
            assert_eq!(
                (entry.deadline(), entry.seq),
                (deadline, seq),
                "outside entry disagrees with its timer"
            );
            assert!(
                self.offset(deadline).is_none(),
                "outside timer {deadline} fits the range from {}",
                self.base
            );
        }
        assert_eq!(
            live + self.outside.len(),
            self.slab.len(),
            "each timer needs exactly one live element or outside entry"
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
    fn elements_are_12_bytes() {
        assert_eq!(core::mem::size_of::<Item>(), 12);
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

    /// A renumbering also renumbers the outside store, in the same firing order.
    #[test]
    fn seq_wrap_renumbers_outside_timers() {
        let mut heap: LazyHeap<u32> = LazyHeap::new();
        heap.seq = u32::MAX - 3;
        for i in 0..8 {
            let deadline = if i % 2 == 0 { RANGE + 7 } else { 7 };
            heap.insert(deadline, i).unwrap();
        }
        heap.check_invariants();
        assert_eq!(heap.outside.len(), 4);
        let fired: Vec<u32> = core::iter::from_fn(|| heap.poll(u64::MAX))
            .map(|e| e.payload)
            .collect();
        assert_eq!(fired, [1, 3, 5, 7, 0, 2, 4, 6]);
    }

    /// Far deadlines wait outside; once time has moved on by half the range, a far insert moves
    /// the range forward and takes them in, without changing the order or losing a timer.
    #[test]
    fn far_deadlines_rebase_into_the_heap() {
        let mut heap: LazyHeap<u64> = LazyHeap::new();
        let far = [RANGE + 10, RANGE + 10, 2 * RANGE, 3 * RANGE];
        for (i, &d) in far.iter().enumerate() {
            heap.insert(d, i as u64).unwrap();
        }
        let near = heap.insert(RANGE / 2 + 5, 9).unwrap();
        heap.check_invariants();
        assert_eq!(heap.outside.len(), 4);
        assert_eq!(heap.poll(RANGE / 2 + 4), None);
        let rebuilt = heap.stats().compactions;
        // `near` bounds the new base from above: the range may start no later than it.
        heap.insert(2 * RANGE + 1, 4).unwrap();
        heap.check_invariants();
        assert_eq!(heap.stats().compactions, rebuilt + 1, "rebased");
        assert_eq!(heap.base, RANGE / 2 + 4);
        assert_eq!(
            heap.outside.len(),
            3,
            "2·RANGE, 2·RANGE + 1 and 3·RANGE stay outside"
        );
        assert_eq!(heap.deadline(near), Some(RANGE / 2 + 5));
        // A timer put into the past of `base` waits outside and fires first.
        heap.insert(3, 5).unwrap();
        heap.check_invariants();
        let fired: Vec<(u64, u64)> = core::iter::from_fn(|| heap.poll(u64::MAX))
            .map(|e| (e.deadline, e.payload))
            .collect();
        assert_eq!(
            fired,
            [
                (3, 5),
                (RANGE / 2 + 5, 9),
                (RANGE + 10, 0),
                (RANGE + 10, 1),
                (2 * RANGE, 2),
                (2 * RANGE + 1, 4),
                (3 * RANGE, 3),
            ]
        );
        heap.check_invariants();
    }
}

#[cfg(test)]
mod layout {
    #[test]
    fn slot_is_24_bytes() {
        assert_eq!(core::mem::size_of::<crate::stamped::Stamped<u64>>(), 24);
    }
}
