//! `LazyHeap`: a binary heap where cancel only marks the entry dead (CPython asyncio's timer).
//!
//! # Concepts
//! - **Element**: `(deadline, seq, slab index)`, 16 bytes in `std`'s [`BinaryHeap`], ordered by
//!   `(deadline, seq)`; `seq` counts inserts and resets. The slab entry holds the payload, the
//!   deadline and the `seq` of its one **live** element (slot occupied, same `seq`). Cancel
//!   frees the slot, leaving the element dead; reset takes a new `seq` and pushes a new element.
//! - **Dead top**: a call that may leave a dead element on top pops dead ones until the top is
//!   live, so `poll` and `next_deadline` read the top alone.
//! - **Rebuild**: when more than half as many elements are dead as live (and more than
//!   [`LazyHeap::COMPACT_FLOOR`]), the call that made it so rebuilds the heap from the live
//!   ones, in one sequential pass over the slab. That is cheaper than popping dead tops, each
//!   an O(log n) sift through cold lines, hence sooner than asyncio's "dead outnumber live".
//!   Before `seq` would wrap, a rebuild also renumbers the live ones `0..n` in firing order.
//!
//! # Invariants
//! - Every pending timer has exactly one live element, so `dead = heap.len() - len()`.
//! - The top element, if any, is live; after every call
//!   `dead <= max(live / 2, COMPACT_FLOOR)`.
//!
//! # Costs
//! The work-unit table and the bound are on [`LazyHeap`], where users read them.

use alloc::collections::BinaryHeap;
use alloc::vec::Vec;
use core::cmp::Reverse;
use core::num::NonZeroU32;

use crate::slab::{Slab, FIRST_GENERATION};
use crate::{
    ConfigError, Expired, FromOptions, InsertError, Options, StaleKeyError, Stats, Tick, Timer,
    TimerKey,
};

/// A timer's slab entry: what `deadline`, `get` and `poll` give back, and the `seq` of its one
/// live element.
struct Entry<T> {
    payload: T,
    deadline: Tick,
    generation: NonZeroU32,
    seq: u32,
}

crate::slab::generational!(Entry);

/// A heap element, `deadline << 64 | seq << 32 | slab index` in 16 bytes. Its order is the
/// firing order `(deadline, seq)` (a `seq` names one element, so the index never decides),
/// reversed for `std`'s max-heap.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Element(Reverse<u128>);

impl Element {
    #[inline]
    fn new(deadline: Tick, seq: u32, index: u32) -> Self {
        let bits = u128::from(deadline) << 64 | u128::from(seq) << 32 | u128::from(index);
        Self(Reverse(bits))
    }

    #[inline]
    fn deadline(self) -> Tick {
        (self.0 .0 >> 64) as Tick
    }

    #[inline]
    fn seq(self) -> u32 {
        (self.0 .0 >> 32) as u32
    }

    #[inline]
    fn index(self) -> u32 {
        self.0 .0 as u32
    }

    /// Whether this element still names its timer.
    #[inline]
    fn is_live<T>(self, slab: &Slab<Entry<T>>) -> bool {
        slab.try_at(self.index())
            .is_some_and(|e| e.seq == self.seq())
    }
}

/// A binary heap with lazy deletion, rebuilt from its live timers: CPython asyncio's timer heap.
///
/// Cancel only frees the timer's slot, leaving its element dead until it reaches the top or the
/// heap is rebuilt; reset pushes a new element. Fast on insert-heavy work; the price is a call
/// that pops a run of dead elements or rebuilds the heap. With `n` the most timers pending at
/// once so far and `F` = [`LazyHeap::COMPACT_FLOOR`], a work unit is one element pushed or
/// popped (an O(log n) sift), or one slot or element looked at by a rebuild:
///
/// | operation | cost | work units |
/// |---|---|---|
/// | insert | O(log n) push | 1 |
/// | cancel | O(1) mark, plus the dead tops it exposes | the dead tops |
/// | reset, poll per fired timer | O(log n) push or pop, plus the dead tops it exposes | 1 + the dead tops |
/// | the cancel, reset or fire that tips the rule | O(n) rebuild (O(n log n) when it renumbers, once per 2^32 inserts and resets) | at most `n + max(n / 2, F) + 1` |
/// | `next_deadline`, idle poll | O(1) | 0 |
/// | memory per timer | 16 B element (+ up to half as many dead ones) + 24 B slot (`u64` payload) | |
///
/// [`Timer::work_bound`] is `n + max(n / 2, F) + 2`: when the earliest live timer sits behind
/// every dead element, one call pops them all (O(n log n) time), and a rebuild looks at every
/// slot or element. Each dead element is popped or dropped once, so both are O(log n) per
/// cancel or reset amortised. `drain` is O(n log n), `shrink_to_fit` O(n).
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
    slab: Slab<Entry<T>>,
    heap: BinaryHeap<Element>,
    /// The next `seq`; a renumbering rebuild restarts it before it would wrap.
    seq: u32,
    now: Tick,
    stats: Stats,
    /// The most slots the slab had before a `shrink_to_fit` or `drain` released some, so the
    /// bound never drops below a call already made.
    peak: usize,
}

impl<T> LazyHeap<T> {
    /// A rebuild waits until more than this many elements are dead (CPython waits for 100).
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
            peak: 0,
        }
    }

    /// `n + max(n / 2, F) + 2`, with `n` the most timers pending at once so far.
    fn bound(&self) -> u64 {
        let n = self.peak.max(self.slab.slots());
        (n + (n / 2).max(Self::COMPACT_FLOOR) + 2) as u64
    }

    #[inline]
    fn record(&mut self, work: u64) {
        self.stats.max_call_work = self.stats.max_call_work.max(work);
    }

    /// Whether more than half as many elements are dead as live (and more than the floor).
    #[inline]
    fn rebuild_due(&self) -> bool {
        let live = self.slab.len();
        self.heap.len() - live > (live / 2).max(Self::COMPACT_FLOOR)
    }

    /// The next `seq`, and the work of the renumbering rebuild that runs before it would wrap.
    #[inline]
    fn next_seq(&mut self) -> (u32, Option<u64>) {
        let work = (self.seq == u32::MAX).then(|| self.rebuild(true));
        let seq = self.seq;
        self.seq += 1;
        (seq, work)
    }

    /// Rebuilds if the rule is now met, else pops dead elements off the top until it is live;
    /// returns the work.
    #[inline]
    fn tidy(&mut self) -> u64 {
        if self.rebuild_due() {
            return self.rebuild(false);
        }
        let mut popped = 0;
        while self.heap.peek().is_some_and(|top| !top.is_live(&self.slab)) {
            self.heap.pop();
            popped += 1;
        }
        self.stats.stale_skipped += popped;
        popped
    }

    /// Rebuilds the heap from its live elements, with `renumber` also giving them seqs `0..n`
    /// in firing order. Returns the work: the slots or elements looked at.
    #[cold]
    #[inline(never)]
    fn rebuild(&mut self, renumber: bool) -> u64 {
        let (mut items, work) = self.take_live();
        if renumber {
            items.sort_unstable_by(|a, b| b.cmp(a)); // the earliest (greatest) first
            for (seq, e) in (0..).zip(items.iter_mut()) {
                *e = Element::new(e.deadline(), seq, e.index());
                self.slab.at_mut(e.index()).seq = seq;
            }
            self.seq = items.len() as u32;
        }
        self.heap = BinaryHeap::from(items);
        self.stats.compactions += 1;
        work
    }

    /// Empties the heap and returns its live elements, unordered, with the slots or elements
    /// looked at. While the slab has at most twice as many slots as the heap has elements, one
    /// sequential pass over the slots makes each live element afresh from its timer; otherwise
    /// each element is checked against its slot, a lookup apiece.
    fn take_live(&mut self) -> (Vec<Element>, u64) {
        let mut items = core::mem::take(&mut self.heap).into_vec();
        let slots = self.slab.slots();
        if slots <= 2 * items.len() {
            items.clear();
            items.extend(
                self.slab
                    .occupied()
                    .map(|(i, e)| Element::new(e.deadline, e.seq, i)),
            );
            (items, slots as u64)
        } else {
            let work = items.len() as u64;
            items.retain(|e| e.is_live(&self.slab));
            (items, work)
        }
    }

    /// Takes timer `index` out of the slab (its element is gone or dead) and returns it.
    #[inline]
    fn take(&mut self, index: u32) -> Expired<T> {
        let key = self.slab.key_at(index);
        let entry = self.slab.remove_at(index);
        Expired {
            key,
            deadline: entry.deadline,
            payload: entry.payload,
        }
    }

    /// Takes the top out (live, and due) and returns it.
    #[inline]
    fn fire(&mut self) -> Expired<T> {
        let top = self.heap.pop().expect("a due top");
        let expired = self.take(top.index());
        self.stats.fired += 1;
        let work = 1 + self.tidy();
        self.record(work);
        expired
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
    #[inline(always)]
    fn insert(&mut self, deadline: Tick, payload: T) -> Result<TimerKey, InsertError<T>> {
        let entry = Entry {
            payload,
            deadline,
            generation: FIRST_GENERATION,
            seq: self.seq,
        };
        let key = match self.slab.insert(entry) {
            Ok(key) => key,
            Err(entry) => {
                self.stats.rejected += 1;
                return Err(InsertError::Full(entry.payload));
            }
        };
        // The seq is taken once the slab has room, so a refused insert never renumbers; a
        // renumbering leaves the new entry alone (it has no element yet) and moves `self.seq`.
        let (seq, renumbered) = self.next_seq();
        if let Some(work) = renumbered {
            self.slab.at_mut(key.index).seq = seq;
            self.record(work + 1);
        }
        // A live push keeps the top live and the dead count: no tidying is due. Its one unit
        // of work is counted by `stats`.
        self.heap.push(Element::new(deadline, seq, key.index));
        self.stats.inserted += 1;
        Ok(key)
    }

    #[inline]
    fn cancel(&mut self, key: TimerKey) -> Option<T> {
        let index = self.slab.resolve(key)?;
        let entry = self.slab.remove_at(index);
        self.stats.cancelled += 1;
        // The top is the one element whose death needs tidying at once.
        let old = Element::new(entry.deadline, entry.seq, index);
        if self.rebuild_due() || self.heap.peek() == Some(&old) {
            let work = self.tidy();
            self.record(work);
        }
        Some(entry.payload)
    }

    #[inline]
    fn reset(&mut self, key: TimerKey, deadline: Tick) -> Result<(), StaleKeyError> {
        let index = self.slab.resolve(key).ok_or(StaleKeyError { key })?;
        // Take the seq first: a renumbering changes the timer's current one.
        let (seq, renumbered) = self.next_seq();
        let mut work = renumbered.unwrap_or(0);
        let entry = self.slab.at_mut(index);
        let old = Element::new(entry.deadline, entry.seq, index);
        entry.seq = seq;
        entry.deadline = deadline;
        let was_top = self.heap.peek() == Some(&old);
        self.heap.push(Element::new(deadline, seq, index));
        self.stats.reset += 1;
        if was_top || self.rebuild_due() {
            work += self.tidy();
        }
        self.record(work + 1);
        Ok(())
    }

    #[inline]
    fn poll(&mut self, now: Tick) -> Option<Expired<T>> {
        self.now = self.now.max(now);
        if self.heap.peek()?.deadline() > self.now {
            return None; // idle turn
        }
        Some(self.fire())
    }

    fn next_deadline(&self) -> Option<Tick> {
        self.heap.peek().map(|top| top.deadline())
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
        let mut stats = self.stats;
        if stats.inserted > 0 {
            stats.max_call_work = stats.max_call_work.max(1);
        }
        stats
    }

    fn work_bound(&self) -> Option<u64> {
        Some(self.bound())
    }

    fn drain(&mut self) -> Vec<Expired<T>> {
        self.peak = self.peak.max(self.slab.slots());
        let (mut order, _) = self.take_live();
        order.sort_unstable_by(|a, b| b.cmp(a)); // the earliest (greatest) first
        self.stats.drained += order.len() as u64;
        order.into_iter().map(|e| self.take(e.index())).collect()
    }

    fn shrink_to_fit(&mut self) {
        self.peak = self.peak.max(self.slab.slots());
        let (items, _) = self.take_live();
        self.heap = BinaryHeap::from(items);
        self.heap.shrink_to_fit();
        self.slab.shrink_to_fit();
    }

    fn allocated_bytes(&self) -> usize {
        self.slab.allocated_bytes() + self.heap.capacity() * core::mem::size_of::<Element>()
    }

    fn name(&self) -> &'static str {
        "lazy-heap"
    }

    fn check_invariants(&self) {
        self.slab.check();
        let items = self.heap.as_slice(); // in heap order: `std` keeps it
        if let Some(top) = self.heap.peek() {
            assert!(top.is_live(&self.slab), "the top element is dead");
        }
        // A seq names one element, so two live elements never share a slot: counting them
        // against `len` shows every pending timer has exactly one.
        let live = items.iter().filter(|e| e.is_live(&self.slab)).count();
        for e in items.iter().filter(|e| e.is_live(&self.slab)) {
            let deadline = self.slab.at(e.index()).deadline;
            assert_eq!(
                deadline,
                e.deadline(),
                "a live element disagrees with its timer"
            );
            assert!(e.seq() < self.seq, "a live element's seq is not yet issued");
        }
        assert_eq!(live, self.slab.len(), "each timer needs one live element");
        let dead = items.len() - live;
        assert!(
            dead <= (live / 2).max(Self::COMPACT_FLOOR),
            "{dead} dead, {live} live"
        );
        let (work, bound) = (self.stats().max_call_work, self.bound());
        assert!(
            work <= bound,
            "a call did {work} units of work, over the bound {bound}"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn elements_are_16_bytes_and_slots_24() {
        assert_eq!(core::mem::size_of::<Element>(), 16);
        assert_eq!(core::mem::size_of::<Entry<u64>>(), 24);
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
        assert_eq!(heap.stats().compactions, 1);
        let fired: Vec<u32> = core::iter::from_fn(|| heap.poll(200))
            .map(|e| e.payload)
            .collect();
        assert_eq!(fired, [3, 6, 9, 0, 1, 7, 10, 2, 5, 8, 11]);
    }

    /// The insert that renumbers gives its own timer a seq of the new numbering, also when
    /// nothing else is pending.
    #[test]
    fn seq_wrap_on_an_empty_heap() {
        let mut heap: LazyHeap<u32> = LazyHeap::new();
        heap.seq = u32::MAX;
        let key = heap.insert(5, 7).unwrap();
        heap.check_invariants();
        assert_eq!(heap.seq, 1);
        assert_eq!(heap.deadline(key), Some(5));
        assert_eq!(heap.poll(5).map(|e| e.payload), Some(7));
    }

    /// Deadlines anywhere on the `u64` line share one heap: no range, no rebase. The case
    /// that once broke the stated bound (a far insert after a poll near `3 << 30`) does one
    /// unit of work.
    #[test]
    fn far_deadlines_need_no_rebase() {
        let mut heap: LazyHeap<u64> = LazyHeap::new();
        for i in 0..1_000 {
            heap.insert(3 << 30, i).unwrap();
        }
        assert_eq!(heap.poll((3 << 30) - 1), None);
        heap.insert((1 << 32) + 5, 1_000).unwrap();
        heap.insert(u64::MAX, 1_001).unwrap();
        heap.insert(3, 1_002).unwrap();
        heap.check_invariants();
        assert_eq!(heap.stats().max_call_work, 1);
        let fired: Vec<u64> = core::iter::from_fn(|| heap.poll(u64::MAX))
            .map(|e| e.payload)
            .collect();
        let mut want = vec![1_002];
        want.extend(0..1_000);
        want.extend([1_000, 1_001]);
        assert_eq!(fired, want);
    }

    /// With many more slots than elements (after a burst has fired), a rebuild checks the
    /// elements against their slots instead of reading every slot.
    #[test]
    fn a_rebuild_after_a_burst_reads_the_elements() {
        let mut heap: LazyHeap<u64> = LazyHeap::new();
        for i in 0..1_000 {
            heap.insert(1, i).unwrap();
        }
        assert_eq!(core::iter::from_fn(|| heap.poll(1)).count(), 1_000);
        let keys: Vec<_> = (0..200).map(|i| heap.insert(10 + i, i).unwrap()).collect();
        for &key in &keys[1..=67] {
            heap.cancel(key);
            heap.check_invariants();
        }
        assert_eq!(heap.stats().compactions, 1, "67 dead is over half of 133");
        assert_eq!(heap.heap.len(), 133);
        assert_eq!(
            heap.stats().max_call_work,
            200,
            "the 200 elements, not the slots"
        );
        let fired: Vec<u64> = core::iter::from_fn(|| heap.poll(u64::MAX))
            .map(|e| e.payload)
            .collect();
        let want: Vec<u64> = core::iter::once(0).chain(68..200).collect();
        assert_eq!(fired, want);
    }

    /// 1,000 timers due at ticks 10 to 1,009, payload `i` at tick `10 + i`, and their keys.
    fn thousand_timers() -> (LazyHeap<u64>, Vec<TimerKey>) {
        let mut heap = LazyHeap::new();
        let keys = (0..1_000)
            .map(|i| heap.insert(10 + i, i).unwrap())
            .collect();
        (heap, keys)
    }

    /// The call that tips the rule rebuilds at once, reading the 1,000 slots, within the
    /// bound; a fire behind a run of dead elements pops them all in one call, within the bound
    /// too.
    #[test]
    fn rebuilds_and_dead_runs_stay_within_the_bound() {
        let (mut heap, keys) = thousand_timers();
        for &key in &keys[1..=333] {
            heap.cancel(key);
            heap.check_invariants();
        }
        assert_eq!(heap.stats().compactions, 0, "333 dead is half of 667 live");
        heap.cancel(keys[334]);
        heap.check_invariants();
        assert_eq!(heap.stats().compactions, 1, "334 dead is over half of 666");
        assert_eq!(heap.heap.len(), 666);
        assert_eq!(heap.stats().max_call_work, 1_000, "one pass over the slots");
        let (mut heap, keys) = thousand_timers();
        for &key in &keys[1..=333] {
            heap.cancel(key);
        }
        assert_eq!(heap.poll(10).map(|e| e.payload), Some(0));
        heap.check_invariants();
        assert_eq!(heap.stats().compactions, 0);
        assert_eq!(heap.stats().stale_skipped, 333);
        assert_eq!(heap.stats().max_call_work, 334, "one pop and 333 dead tops");
        assert_eq!(heap.work_bound(), Some(1_000 + 500 + 2));
    }
}
