//! `LazyHeap`: a plain binary heap where cancel only marks the entry dead.
//!
//! The heap holds 12-byte elements `(deadline - base, seq, slab index)`; the slab entry holds
//! the payload, the full deadline and the `seq` of its one live element. An element is live iff
//! its slab slot is occupied and carries the same `seq` (seqs are never reused, so a reused slot
//! cannot revive a dead element). Cancel frees the slab slot at once and leaves the element
//! behind; reset pushes a new element and leaves the old one.
//!
//! # Concepts
//! - **Element**: `offset << 32 | seq` and a slab index, in a [`Binary`] heap, so the heap order
//!   is one 64-bit comparison. The offset counts from `base`.
//! - **Dead top**: a dead element that reaches the top is popped at once, so the top is live.
//! - **Sweep**: when the dead elements outnumber the live ones (and number more than
//!   [`LazyHeap::COMPACT_FLOOR`]), a cursor walks the array from its end to its start,
//!   [`SWEEP`] positions per cancel, reset and fire, and removes each dead element it finds in
//!   place (the last element takes its place and sifts). The heap stays a heap throughout, so
//!   nothing else changes while a sweep runs. This is CPython asyncio's rule (rebuild when
//!   over half is cancelled), spread over calls.
//! - **Outside store**: a timer whose deadline an offset cannot hold (before `base`, or
//!   `2^32` ticks or more after it: about 50 days of 1 ms ticks) waits in an ordered map keyed
//!   by `(deadline, seq)`, and is removed from it eagerly. When such a far deadline arrives and
//!   `base` could move forward by half the range or more, the heap is **rebased**: `base`
//!   becomes `min(now, earliest heap deadline)`, offsets shrink, and the outside timers that
//!   now fit move in, in O(n) once per 2^31 ticks at most.
//!
//! # Invariants
//! - Heap order over all elements, live or dead, by `(offset, seq)`, that is `(deadline, seq)`.
//! - The top element, if any, is live.
//! - `base <= now`, and a pending timer is in the heap iff `base <= deadline < base + 2^32`,
//!   else in `outside`; each pending timer has exactly one live element or outside entry, so
//!   `dead = heap.len() - (len() - outside.len())`.
//! - With no sweep running, `dead <= live` or `dead <= COMPACT_FLOOR` after every call. A
//!   sweep removes every element dead when it passes, but one a push's sift moves past the
//!   cursor (at most one per push), so it ends with `dead` at most the elements that died
//!   behind the cursor or were moved past it: at most two per call it lasted.
//! - `seq` is a `u32`; before it would wrap, the pending timers are renumbered in firing order,
//!   which keeps first-in first-out order among equal deadlines.
//!
//! # Costs
//! Work is counted in [`Stats::max_call_work`] units: one element compared or moved (see
//! [`Binary`]), one position a sweep looks at, one outside-store operation. With `h` the levels
//! of the largest array held so far (`⌊log2 C⌋ + 1` for a capacity of `C` elements):
//!
//! | operation | cost | work |
//! |---|---|---|
//! | insert | O(log n) push | `2h` (outside: 1) |
//! | cancel | O(1) mark, plus a sweep step and the dead tops it exposes | `SWEEP · (3h + 3)`, plus `4h + 2` per dead top |
//! | reset | O(log n) push, plus a sweep step and dead tops | `SWEEP · (3h + 3) + 2h + 1`, plus `4h + 2` per dead top |
//! | poll per fired timer | O(log n) pop, plus a sweep step and dead tops | `SWEEP · (3h + 3) + 4h + 2`, plus `4h + 2` per dead top |
//! | `next_deadline`, idle poll | O(1) | 0 |
//! | memory per timer | 12 B element (+ up to about as many dead ones) + 24 B slab slot (`u64` payload, deadline, seq, generation) | |
//!
//! [`Timer::work_bound`] is the largest of these, `SWEEP · (3h + 3) + 4h + 3`, plus `4h + 2`
//! for each dead top the worst call popped. **What it does not bound:**
//! - the dead tops a call pops. When the earliest live timer fires or is cancelled, every dead
//!   element ordered just behind it comes to the top and is popped in that call: as many as
//!   were cancelled behind it (at most the dead count, so about the live count). Each dead
//!   element is popped once, so this is O(log n) per cancel or reset amortised, but one call
//!   can pop many. No lazy heap can avoid it: the earliest live timer may sit behind every
//!   dead one, and finding it means looking at them. The indexed heap and the wheels remove a
//!   cancelled timer at once and have no such call;
//! - the rebase (O(n), at most once per 2^31 ticks) and the renumbering (O(n log n), once per
//!   2^32 inserts and resets). [`Timer::work_bound`] adds the most work one of these did;
//! - `drain` and `shrink_to_fit`.
//!
//! Follows CPython asyncio (compact when over half cancelled) and the `heapq` docs' recipe.

use alloc::collections::BTreeMap;
use alloc::vec::Vec;

use super::binary::{levels, Binary, Item};
use crate::slab::Slab;
use crate::stamped::Stamped;
use crate::{
    ConfigError, Expired, FromOptions, InsertError, Options, StaleKeyError, Stats, Tick, Timer,
    TimerKey,
};

/// Ticks an element's offset can express.
const RANGE: u64 = 1 << 32;

/// Positions a sweep looks at per cancel, reset and fire.
pub(crate) const SWEEP: u64 = 8;

/// Whether `item` still names its timer.
#[inline]
fn is_live<T>(item: Item, slab: &Slab<Stamped<T>>) -> bool {
    crate::stamped::is_live(slab, item.index, item.seq())
}

/// A binary heap with lazy deletion, swept a few positions per call.
///
/// Insert pushes a 12-byte element; cancel only frees the timer's slot, leaving its element
/// dead in the heap until it reaches the top or a sweep finds it; reset pushes a new element.
/// When the dead elements outnumber the live ones, a sweep removes them a few positions per
/// call, so no call pays for a whole rebuild. Every call's work is bounded by
/// [`Timer::work_bound`] but the dead elements it pops: firing or cancelling the earliest timer
/// pops, in that call, every dead element ordered just behind it.
///
/// | operation | cost |
/// |---|---|
/// | insert, reset, poll per fired timer | O(log n) |
/// | cancel | O(1), plus a bounded sweep step |
/// | `next_deadline`, idle poll | O(1) |
/// | memory per timer | 12 B element (+ up to about as many dead ones) + 24 B slot |
///
/// [`Options::preallocate`] makes room for `9/4` elements per timer, so the dead ones fit too.
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
/// assert!(heap.stats().max_call_work <= heap.work_bound().unwrap());
/// ```
pub struct LazyHeap<T> {
    slab: Slab<Stamped<T>>,
    heap: Binary,
    /// Timers whose deadline is outside `[base, base + RANGE)`: `(deadline, seq) -> index`.
    outside: BTreeMap<(Tick, u32), u32>,
    /// The deadline an element's offset counts from; never after `now`.
    base: Tick,
    /// Next sequence number; renumbered before it would wrap (see `renumber`).
    seq: u32,
    now: Tick,
    /// Array positions the running sweep has yet to look at (`0`: no sweep runs).
    sweep: usize,
    stats: Stats,
    /// Work of the call in progress, and the dead tops it popped.
    work: u64,
    popped: u64,
    /// The most dead tops one call popped.
    max_popped: u64,
    /// The most work a rebase or renumbering did.
    max_rare: u64,
    /// The largest capacity the array had before a rebase, renumbering, `drain` or
    /// `shrink_to_fit` replaced it (the array never shrinks otherwise), so `levels` of the
    /// larger of it and today's capacity covers every heap held so far.
    peak: usize,
}

impl<T> LazyHeap<T> {
    /// A sweep starts only when more than this many elements are dead (CPython uses 100).
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
            // Room for the dead elements too: up to about as many as the live ones, and a
            // quarter more while a sweep runs, so no push copies the array to grow it.
            heap: Binary::with_capacity(pre.saturating_mul(9) / 4),
            outside: BTreeMap::new(),
            base: options.start,
            seq: 0,
            now: options.start,
            sweep: 0,
            stats: Stats::default(),
            work: 0,
            popped: 0,
            max_popped: 0,
            max_rare: 0,
            peak: 0,
        }
    }

    /// The most work one call may do (see the module docs).
    fn bound(&self) -> u64 {
        let h = levels(self.peak.max(self.heap.capacity()));
        (SWEEP * (3 * h + 3) + 4 * h + 3 + (4 * h + 2) * self.max_popped).max(self.max_rare)
    }

    /// Starts a call's work count.
    #[inline]
    fn begin(&mut self) {
        self.work = 0;
        self.popped = 0;
    }

    /// Ends a call: records its work.
    #[inline]
    fn end(&mut self) {
        if self.work > self.stats.max_call_work {
            self.stats.max_call_work = self.work;
        }
        if self.popped > self.max_popped {
            self.max_popped = self.popped;
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

    #[inline]
    fn push(&mut self, item: Item) {
        self.heap.push(item, &mut self.work);
    }

    /// Replaces the array with `heap`, remembering the old one's capacity for the bound.
    fn replace_heap(&mut self, heap: Binary) -> Binary {
        self.peak = self.peak.max(self.heap.capacity());
        core::mem::replace(&mut self.heap, heap)
    }

    /// Puts timer `index` where its deadline says: an element, or the outside store.
    #[inline]
    fn place(&mut self, index: u32, deadline: Tick, seq: u32) {
        match self.offset(deadline) {
            Some(offset) => self.push(Item::new(offset, seq, index)),
            None => self.place_outside(index, deadline, seq),
        }
    }

    /// [`place`](Self::place) for a deadline outside the range: rebases first when the range
    /// can move forward by half its width or more, so far deadlines come back into the heap.
    #[cold]
    #[inline(never)]
    fn place_outside(&mut self, index: u32, deadline: Tick, seq: u32) {
        if deadline >= self.base {
            let floor = self
                .heap
                .peek()
                .map_or(self.now, |top| self.deadline_of(top).min(self.now));
            if floor - self.base >= RANGE / 2 {
                self.rebase(floor);
                if let Some(offset) = self.offset(deadline) {
                    self.push(Item::new(offset, seq, index));
                    return;
                }
            }
        }
        self.work += 1;
        self.outside.insert((deadline, seq), index);
    }

    /// Moves `base` forward to `base` (at most the earliest live element's deadline), drops the
    /// dead elements, and takes in the outside timers that the new range holds. O(n).
    #[cold]
    fn rebase(&mut self, base: Tick) {
        let shift = base - self.base;
        let old = self.replace_heap(Binary::default());
        let slab = &self.slab;
        let mut items: Vec<Item> = old
            .into_vec()
            .into_iter()
            .filter(|&i| is_live(i, slab))
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
        self.rare(items.len());
        self.heap = Binary::from_vec(items);
        self.sweep = 0;
        self.stats.compactions += 1;
    }

    /// Counts the work of a rebase or renumbering that placed `n` timers anew.
    fn rare(&mut self, n: usize) {
        self.work += n as u64;
        self.max_rare = self.max_rare.max(self.work);
    }

    /// Empties the heap and the outside store and returns the pending timers as
    /// `(deadline, seq, index)`, in firing order.
    fn take_in_firing_order(&mut self) -> Vec<(Tick, u32, u32)> {
        let base = self.base;
        self.sweep = 0;
        let old = self.replace_heap(Binary::default());
        let slab = &self.slab;
        let mut order: Vec<(Tick, u32, u32)> = old
            .into_vec()
            .into_iter()
            .filter(|&i| is_live(i, slab))
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
        self.rare(order.len());
        self.seq = order.len() as u32;
        self.heap = Binary::from_vec(items);
    }

    /// Pops dead elements off the top, so the top is live.
    #[inline]
    fn settle_top(&mut self) {
        while let Some(top) = self.heap.peek() {
            if is_live(top, &self.slab) {
                break;
            }
            self.heap.pop(&mut self.work);
            self.popped += 1;
            self.stats.stale_skipped += 1;
        }
    }

    /// One sweep step: looks at up to [`SWEEP`] positions below the cursor and removes the
    /// dead elements there.
    fn sweep_step(&mut self) {
        self.sweep = self.sweep.min(self.heap.len());
        for _ in 0..SWEEP {
            let Some(pos) = self.sweep.checked_sub(1) else {
                break;
            };
            self.work += 1;
            if is_live(self.heap.at(pos), &self.slab) || !self.heap.remove(pos, &mut self.work) {
                // Live, or removed with the last element (already looked at) sifting down
                // into `pos`: move on. A sift up brought an element from before the cursor
                // into `pos`; look at `pos` again.
                self.sweep = pos;
            }
        }
        if self.sweep == 0 {
            self.stats.compactions += 1;
        }
    }

    /// After a call that may have made an element dead or taken a live one: a sweep step (or
    /// the start of a sweep when more than half of the elements are dead), then the dead tops.
    #[inline]
    fn tidy(&mut self) {
        if self.sweep > 0 {
            self.sweep_step();
        }
        if self.sweep == 0 {
            let live = self.in_heap();
            let dead = self.heap.len() - live;
            if dead > live && dead > Self::COMPACT_FLOOR {
                self.sweep = self.heap.len();
            }
        }
        self.settle_top();
    }

    /// Takes the earliest timer (the heap's top, or the first outside) out and returns it.
    #[inline(never)]
    fn fire(&mut self, from_heap: bool) -> Option<Expired<T>> {
        self.begin();
        let index = if from_heap {
            self.heap.pop(&mut self.work)?.index
        } else {
            self.work += 1;
            self.outside.pop_first()?.1
        };
        let key = self.slab.key_at(index);
        let entry = self.slab.remove_at(index);
        self.stats.fired += 1;
        self.tidy();
        self.end();
        Some(entry.into_expired(key))
    }

    /// The earliest pending timer: `(deadline, seq)` and whether it is the heap's top.
    #[inline]
    fn earliest(&self) -> Option<((Tick, u32), bool)> {
        let top = self.heap.peek().map(|i| (self.deadline_of(i), i.seq()));
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
        self.work = 0;
        let seq = self.next_seq();
        let key = match self.slab.insert(Stamped::new(deadline, payload, seq)) {
            Ok(key) => key,
            Err(entry) => {
                self.stats.rejected += 1;
                return Err(InsertError::Full(entry.payload));
            }
        };
        // A live push keeps the top live and the dead count, so no sweep is due, and pops
        // nothing.
        self.place(key.index, deadline, seq);
        self.stats.inserted += 1;
        if self.work > self.stats.max_call_work {
            self.stats.max_call_work = self.work;
        }
        Ok(key)
    }

    fn cancel(&mut self, key: TimerKey) -> Option<T> {
        let index = self.slab.resolve(key)?;
        self.begin();
        let entry = self.slab.remove_at(index);
        if self.offset(entry.deadline()).is_none() {
            self.work += 1;
            self.outside.remove(&(entry.deadline(), entry.seq));
        }
        self.stats.cancelled += 1;
        self.tidy();
        self.end();
        Some(entry.payload)
    }

    fn reset(&mut self, key: TimerKey, deadline: Tick) -> Result<(), StaleKeyError> {
        let index = self.slab.resolve(key).ok_or(StaleKeyError { key })?;
        self.begin();
        // Take the seq first: a renumbering changes the timer's current one.
        let seq = self.next_seq();
        let entry = self.slab.at_mut(index);
        let old = (entry.deadline(), entry.seq);
        entry.seq = seq;
        entry.set_deadline(deadline);
        if self.offset(old.0).is_none() {
            self.work += 1;
            self.outside.remove(&old);
        }
        self.place(index, deadline, seq);
        self.stats.reset += 1;
        self.tidy();
        self.end();
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

    fn work_bound(&self) -> Option<u64> {
        Some(self.bound())
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
        let old = self.replace_heap(Binary::default());
        let slab = &self.slab;
        let mut items = old.into_vec();
        items.retain(|&i| is_live(i, slab));
        items.shrink_to_fit();
        // The live elements keep their order: a heap built from them pops them alike.
        self.heap = Binary::from_vec(items);
        self.sweep = 0;
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
        self.heap.check();
        if let Some(top) = self.heap.peek() {
            assert!(is_live(top, &self.slab), "the top element is dead");
        }
        // Seqs are unique per element, so no two live elements share a slot; heap deadlines are
        // in the range and outside ones are not, so no timer is in both: `live + outside == len`
        // means every pending timer has exactly one place.
        let items = self.heap.as_slice();
        let mut live = 0;
        for &item in items.iter().filter(|&&i| is_live(i, &self.slab)) {
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
            self.sweep > 0 || dead <= live || dead <= Self::COMPACT_FLOOR,
            "more than half dead ({dead} of {}) and no sweep running",
            items.len()
        );
        assert!(
            self.stats.max_call_work <= self.bound(),
            "a call did {} units of work, over the bound {}",
            self.stats.max_call_work,
            self.bound()
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
