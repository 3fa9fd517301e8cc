//! `HierarchicalWheel`: six levels of 64 slots, each level 64× coarser, with an occupancy
//! bitmap per level, cascading, and an ordered overflow beyond the top level.
//!
//! The cursor `elapsed` is the last tick fully swept. A timer due after it sits in the slot
//! chosen by [`level`](super::level) (the highest 6-bit group where deadline and cursor differ);
//! the earliest timer is therefore in the first set bit of the lowest non-empty level, found
//! with one `trailing_zeros`. When the cursor reaches a coarse slot, its timers move down
//! (cascade) to finer levels; a level-0 slot holds exactly one tick and is spliced whole onto
//! the ready list. Timers at or behind the cursor wait in the shared [`due`](super::due) queue;
//! timers more than one whole-wheel span (2^36 ticks) away wait in the overflow, ordered, and
//! enter the levels when the cursor enters their span.
//!
//! # Invariants
//! - Every timer is in exactly one place, determined by its deadline and `elapsed` (see
//!   [`wheel`](super)): due queue, level `level_for(elapsed, d)` slot `slot_for(d, level)`, or
//!   the overflow.
//! - A level's occupancy bit is set iff its slot list is non-empty.
//! - Equal deadlines leave first-in first-out: every insert and reset takes a new `seq`, and
//!   whenever timers become due together (a level-0 slot, or a cascade that lands on the
//!   cursor) the ready list is put in `seq` order. A reset that keeps a timer in the same slot
//!   therefore only rewrites the entry (one cache line) instead of relinking it and touching
//!   both neighbours. `seq` is a `u32`; before it would wrap, every pending timer is renumbered
//!   in firing order.
//! - `elapsed <= now`; the ready list is empty whenever `elapsed` moves.
//!
//! # Costs
//! | operation | cost |
//! |---|---|
//! | insert, cancel, reset | O(1): a few bit operations and a list push/unlink (overdue or overflow: O(log n)) |
//! | poll per fired timer | O(1) amortised: each timer cascades at most 5 times |
//! | poll with nothing due, `next_deadline` | O(1): at most 6 bitmap reads |
//! | jump of any length | O(levels) to find the next slot; no empty slot is visited |
//! | memory per timer | one 32 B slab slot (u64 payload); 3 KiB of slot heads per wheel |
//!
//! Follows tokio's time driver (6 × 64 slots at 1 ms, level from the highest differing bits)
//! and Varghese & Lauck's hierarchical scheme 7.

use alloc::vec::Vec;

use super::due::Due;
use super::level::{level_for, slot_for, span_end, span_start, Levels, LEVELS};
use super::list::List;
use super::ordered::Ordered;
use super::Entry;
use crate::slab::Slab;
use crate::{
    ConfigError, Expired, FromOptions, InsertError, Options, StaleKeyError, Stats, Tick, Timer,
    TimerKey,
};

/// A hierarchical timing wheel. See the module docs for the design and costs.
///
/// ```
/// use tickwheel::{FromOptions, HierarchicalWheel, Options, Timer};
///
/// // Start at a large tick (a long uptime) and jump ten years in one poll.
/// let start = 1u64 << 50;
/// let mut wheel = HierarchicalWheel::from_options(Options::new().start(start)).unwrap();
/// let ten_years = 10 * 365 * 24 * 3600 * 1000;
/// wheel.insert(start + ten_years, "far").unwrap();
/// wheel.insert(start + 5, "near").unwrap();
/// assert_eq!(wheel.poll(start + ten_years).unwrap().payload, "near");
/// assert_eq!(wheel.poll(start + ten_years).unwrap().payload, "far");
/// assert!(wheel.is_empty());
/// ```
pub struct HierarchicalWheel<T> {
    slab: Slab<Entry<T>>,
    levels: Levels,
    due: Due,
    /// Timers due beyond the whole-wheel span that contains `elapsed`.
    overflow: Ordered,
    /// The cursor: every timer due at or before it has left the levels. Only increases.
    elapsed: Tick,
    /// Latest `now` seen; only increases; `elapsed <= now`.
    now: Tick,
    /// A lower bound on every deadline in the levels and the overflow (`Tick::MAX` after a poll
    /// that found them empty). Lowered by every placement, recomputed by every poll that finds
    /// nothing due; an idle poll and `next_deadline` answer from it without a scan.
    hint: Tick,
    /// Next insertion sequence number (see the invariants).
    seq: u32,
    /// Reused buffer for putting the ready list in `seq` order.
    scratch: Vec<(u32, u32)>,
    stats: Stats,
}

impl<T> HierarchicalWheel<T> {
    /// An empty, unbounded wheel at tick 0.
    ///
    /// ```
    /// let wheel: tickwheel::HierarchicalWheel<u64> = tickwheel::HierarchicalWheel::new();
    /// assert_eq!(tickwheel::Timer::next_deadline(&wheel), None);
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
            levels: Levels::new(),
            due: Due::default(),
            overflow: Ordered::default(),
            elapsed: options.start,
            now: options.start,
            hint: Tick::MAX,
            seq: 0,
            scratch: Vec::new(),
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

    /// Every pending timer, wherever it is (for renumbering, drain and checks).
    fn all_indices(&self) -> Vec<u32> {
        let mut out = self.due.collect(&self.slab, self.elapsed);
        for (_, _, list) in self.levels.lists() {
            out.extend(list.collect(&self.slab));
        }
        out.extend(self.overflow.collect(&self.slab));
        out
    }

    /// Gives the pending timers seqs `0..n` in firing order, once per 2^32 inserts and resets.
    #[cold]
    fn renumber(&mut self) {
        let mut order = self.all_indices();
        order.sort_unstable_by_key(|&i| {
            let e = self.slab.at(i);
            (e.deadline, e.seq)
        });
        for (n, &i) in order.iter().enumerate() {
            self.slab.at_mut(i).seq = n as u32;
        }
        self.seq = order.len() as u32;
    }

    /// Puts the ready list (all due at the cursor) in `seq` order, if it is not already.
    fn sort_ready(&mut self) {
        let mut scratch = core::mem::take(&mut self.scratch);
        scratch.clear();
        let mut sorted = true;
        let mut cur = self.due.ready.head;
        while cur != crate::slab::NIL {
            let e = self.slab.at(cur);
            if scratch.last().is_some_and(|&(s, _)| s > e.seq) {
                sorted = false;
            }
            scratch.push((e.seq, cur));
            cur = e.next;
        }
        if !sorted {
            scratch.sort_unstable();
            self.due.ready = List::EMPTY;
            for &(_, index) in &scratch {
                self.due.ready.push_back(&mut self.slab, index);
            }
        }
        self.scratch = scratch;
    }

    /// Puts a timer (already in the slab, unlinked) where its deadline says.
    #[inline]
    fn place(&mut self, index: u32, deadline: Tick) {
        if deadline <= self.elapsed {
            self.due.push(&mut self.slab, index, self.elapsed);
            return;
        }
        self.hint = self.hint.min(deadline);
        let level = level_for(self.elapsed, deadline);
        if level < LEVELS {
            self.levels
                .push(&mut self.slab, index, level, slot_for(deadline, level));
        } else {
            self.overflow.insert(&mut self.slab, index);
        }
    }

    /// Takes a timer out of wherever it is.
    #[inline]
    fn unplace(&mut self, index: u32, deadline: Tick) {
        if deadline <= self.elapsed {
            self.due.remove(&mut self.slab, index, self.elapsed);
            return;
        }
        let level = level_for(self.elapsed, deadline);
        if level < LEVELS {
            self.levels
                .remove(&mut self.slab, index, level, slot_for(deadline, level));
        } else {
            self.overflow.remove(&self.slab, index);
        }
    }

    /// The earliest occupied slot: `(level, slot, first tick of the slot)`.
    #[inline]
    fn next_slot(&self) -> Option<(usize, usize, Tick)> {
        self.levels.next_slot(self.elapsed)
    }

    /// Moves the cursor forward to `t`; on entering a new whole-wheel span, brings the overflow
    /// timers of that span into the levels. The caller guarantees nothing in the levels is due
    /// before `t` and the ready list is empty.
    fn advance_to(&mut self, t: Tick) {
        debug_assert!(t >= self.elapsed && self.due.ready.is_empty());
        let crossed = span_start(t) != span_start(self.elapsed);
        self.elapsed = t;
        if crossed {
            while let Some(index) = self.overflow.pop_first_until(span_end(t)) {
                let deadline = self.slab.at(index).deadline;
                self.place(index, deadline);
                self.stats.cascaded += 1;
            }
        }
    }

    /// Empties one slot at the cursor: a level-0 slot is due whole; a coarser one cascades.
    fn process(&mut self, level: usize, slot: usize, start: Tick) {
        self.advance_to(start);
        self.stats.slots_scanned += 1;
        let mut list = self.levels.take(level, slot);
        if level == 0 {
            // Every timer here is due exactly at `start`.
            self.due.ready.append(&mut self.slab, &mut list);
        } else {
            while let Some(index) = list.pop_front(&mut self.slab) {
                let deadline = self.slab.at(index).deadline;
                self.place(index, deadline);
                self.stats.cascaded += 1;
            }
        }
        // Same-slot resets leave timers behind newer ones: restore first-in first-out order.
        self.sort_ready();
    }

    fn fire(&mut self, index: u32) -> Expired<T> {
        self.stats.fired += 1;
        super::take(&mut self.slab, index)
    }
}

impl<T> Default for HierarchicalWheel<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> FromOptions for HierarchicalWheel<T> {
    fn from_options(options: Options) -> Result<Self, ConfigError> {
        options.validate()?;
        Ok(Self::with(options))
    }
}

impl<T> Timer<T> for HierarchicalWheel<T> {
    fn insert(&mut self, deadline: Tick, payload: T) -> Result<TimerKey, InsertError<T>> {
        // Refuse before taking a seq, so a refused insert never triggers a renumbering; the
        // slab's own check below still covers the u32 index space.
        if self.slab.limit().is_some_and(|l| self.slab.len() >= l) {
            self.stats.rejected += 1;
            return Err(InsertError::Full(payload));
        }
        let mut entry = Entry::new(deadline, payload);
        entry.seq = self.next_seq();
        match self.slab.insert(entry) {
            Ok(key) => {
                self.place(key.index, deadline);
                self.stats.inserted += 1;
                Ok(key)
            }
            Err(entry) => {
                self.stats.rejected += 1;
                Err(InsertError::Full(entry.payload))
            }
        }
    }

    fn cancel(&mut self, key: TimerKey) -> Option<T> {
        let index = self.slab.resolve(key)?;
        self.unplace(index, self.slab.at(index).deadline);
        self.stats.cancelled += 1;
        Some(self.slab.remove_at(index).payload)
    }

    fn reset(&mut self, key: TimerKey, deadline: Tick) -> Result<(), StaleKeyError> {
        let index = self.slab.resolve(key).ok_or(StaleKeyError { key })?;
        let seq = self.next_seq();
        self.stats.reset += 1;
        let old = self.slab.at(index).deadline;
        if old > self.elapsed && deadline > self.elapsed {
            let level = level_for(self.elapsed, old);
            if level < LEVELS
                && level_for(self.elapsed, deadline) == level
                && slot_for(old, level) == slot_for(deadline, level)
            {
                // Same slot: rewrite the entry in place; its new seq orders it when it is due.
                let e = self.slab.at_mut(index);
                e.deadline = deadline;
                e.seq = seq;
                self.hint = self.hint.min(deadline);
                return Ok(());
            }
        }
        // Take it out where its old deadline put it (the due queue reads the entry's deadline).
        self.unplace(index, old);
        let e = self.slab.at_mut(index);
        e.deadline = deadline;
        e.seq = seq;
        self.place(index, deadline);
        Ok(())
    }

    fn poll(&mut self, now: Tick) -> Option<Expired<T>> {
        self.now = self.now.max(now);
        let now = self.now;
        if now < self.hint && self.due.is_empty() {
            // Idle turn: nothing can be due yet. The cursor may lag `now`; that only costs a
            // later insert a coarser level.
            return None;
        }
        loop {
            if let Some(index) = self.due.pop(&mut self.slab) {
                return Some(self.fire(index));
            }
            match self.next_slot() {
                Some((level, slot, start)) if start <= now => self.process(level, slot, start),
                Some(_) => break,
                None => match self.overflow.first_deadline() {
                    // Levels are empty: jump the cursor to the start of that timer's span.
                    Some(d) if d <= now => self.advance_to(span_start(d)),
                    _ => break,
                },
            }
        }
        // Nothing is due by `now`. The earliest slot's start stays the same when the cursor
        // moves up to `now` (no slot boundary is crossed before it).
        self.hint = match self.next_slot() {
            Some((_, _, start)) => start,
            None => self.overflow.first_deadline().unwrap_or(Tick::MAX),
        };
        // Bring the cursor up so later inserts land on fine levels.
        self.advance_to(now);
        None
    }

    fn next_deadline(&self) -> Option<Tick> {
        if self.slab.len() == 0 {
            return None;
        }
        // With the due queue empty, some timer is in the levels or the overflow, and `hint` is
        // at most its deadline.
        self.due.first_deadline(self.elapsed).or(Some(self.hint))
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
        // Walk every place in an order that keeps equal deadlines first-in first-out (they
        // always share one place), then sort stably by deadline.
        let mut order = self.all_indices();
        order.sort_unstable_by_key(|&i| {
            let e = self.slab.at(i);
            (e.deadline, e.seq)
        });
        self.due = Due::default();
        self.overflow = Ordered::default();
        self.levels = Levels::new();
        self.hint = Tick::MAX;
        self.stats.drained += order.len() as u64;
        order
            .into_iter()
            .map(|index| super::take(&mut self.slab, index))
            .collect()
    }

    fn allocated_bytes(&self) -> usize {
        self.slab.allocated_bytes()
            + self.levels.allocated_bytes()
            + self.overflow.len() * 3 * core::mem::size_of::<(Tick, u64, u32)>() / 2
    }

    fn name(&self) -> &'static str {
        "hierarchical"
    }

    fn check_invariants(&self) {
        self.slab.check();
        assert!(self.elapsed <= self.now, "cursor ahead of now");
        let due = self.due.collect(&self.slab, self.elapsed);
        let ready: Vec<u32> = due
            .iter()
            .copied()
            .filter(|&i| self.slab.at(i).deadline == self.elapsed)
            .collect();
        for pair in ready.windows(2) {
            assert!(
                self.slab.at(pair[0]).seq < self.slab.at(pair[1]).seq,
                "ready list out of first-in first-out order"
            );
        }
        for i in self.all_indices() {
            assert!(self.slab.at(i).seq < self.seq, "seq from the future");
        }
        let mut seen = due.len();
        for (l, s, list) in self.levels.lists() {
            assert_eq!(
                self.levels.is_marked(l, s),
                !list.is_empty(),
                "occupancy bit of level {l} slot {s} is wrong"
            );
            for index in list.collect(&self.slab) {
                let d = self.slab.at(index).deadline;
                assert!(
                    d > self.elapsed,
                    "level {l} holds a timer at or behind the cursor"
                );
                assert_eq!(
                    level_for(self.elapsed, d),
                    l,
                    "timer {d} on the wrong level"
                );
                assert_eq!(slot_for(d, l), s, "timer {d} in the wrong slot");
                assert!(self.hint <= d, "hint {} above deadline {d}", self.hint);
                seen += 1;
            }
        }
        for index in self.overflow.collect(&self.slab) {
            let d = self.slab.at(index).deadline;
            assert!(
                d > self.elapsed && level_for(self.elapsed, d) >= LEVELS,
                "overflow holds a timer the levels should"
            );
            assert!(self.hint <= d, "hint {} above deadline {d}", self.hint);
            seen += 1;
        }
        assert_eq!(seen, self.slab.len(), "a timer is in no place or in two");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Same-slot resets leave timers in place; first-in first-out order still holds when they
    /// come due, also across the `u32` seq renumbering.
    #[test]
    fn same_slot_resets_keep_fifo_across_seq_wrap() {
        let mut wheel: HierarchicalWheel<u32> = HierarchicalWheel::new();
        wheel.seq = u32::MAX - 4;
        // Level 2 (deadlines 4096..262143 ticks away): slot width 4096.
        let keys: Vec<_> = (0..8u32)
            .map(|i| wheel.insert(5_000 + u64::from(i % 2), i).unwrap())
            .collect();
        // Reset within the same slot: 0 and 2 move to the back of their deadlines.
        wheel.reset(keys[0], 5_000).unwrap();
        wheel.reset(keys[2], 5_000).unwrap();
        // And one across slots.
        wheel.reset(keys[3], 9_000).unwrap();
        wheel.check_invariants();
        assert!(wheel.seq < 20, "renumbered");
        let fired: Vec<u32> = core::iter::from_fn(|| wheel.poll(10_000))
            .map(|e| e.payload)
            .collect();
        assert_eq!(fired, [4, 6, 0, 2, 1, 5, 7, 3]);
    }
}
