//! `HierarchicalWheel`: eleven levels of 64 slots over every `u64` tick, where a crowded slot
//! becomes a finer wheel of its own, so that every call does bounded work by the shape of the
//! structure alone.
//!
//! # Concepts
//! 1. **Cursor** (`elapsed`): the last tick swept; it only moves forward, and only while no
//!    timer is due behind it.
//! 2. **Levels** ([`level`]): a deadline sits at the highest 6-bit group in which it differs
//!    from the cursor, in the slot of its own value of that group; a level-`l` slot spans
//!    `64^l` ticks. Deadlines behind the cursor land in slots below the cursor's, so they fire
//!    first, and in deadline order.
//! 3. **Lists** ([`nodes`]): a slot is an intrusive FIFO list of timers; links live in an
//!    array beside the slab. Cancel and reset unlink at once and leave nothing behind.
//! 4. **Split** ([`nodes`]): a list above level 0 holds at most [`MAX_LIST`] timers; the next
//!    push makes it a child node, 64 slots one level finer over the same range.
//! 5. **Nodes**: each level is a node, and so is every child. A node left empty is released;
//!    released nodes are reused.
//! 6. **Cascade**: when the cursor reaches a slot, a list's timers are placed anew one level
//!    or more down (at most `MAX_LIST` of them), and a child node simply becomes the level
//!    below (every lower level is empty then).
//! 7. **Hint**: a lower bound on every deadline, so an idle poll is one comparison.
//!
//! # Invariants
//! - Every pending timer is in exactly one list: the one reached from slot
//!   `slot_for(d, level_for(elapsed, d))` of its level's node through the children on the way.
//!   `overdue` counts the timers due before `elapsed`.
//! - A list above level 0 holds at most `MAX_LIST` timers; a level-0 list holds one tick.
//! - Every list is in push order, so equal deadlines (which always share a list) leave first
//!   in, first out; a reset is a new push. A split and a cascade move a list's timers in
//!   order into empty lists.
//! - The cursor slot of every level above 0 is empty; `elapsed <= now`; `hint` is at most
//!   every pending deadline.
//!
//! # Costs and the bound on work
//! Work is counted in [`Stats::max_call_work`] units: one per timer moved by a split or a
//! cascade, one per child node descended, released or promoted, one per level searched.
//!
//! | operation | cost | most work in one call |
//! |---|---|---|
//! | insert | O(1): a level, a descent through at most 10 child nodes, an append | 10 descents + a chain of at most 10 splits of `MAX_LIST + 1` timers |
//! | cancel | O(1): unlink; release the nodes left empty | 10 nodes released |
//! | reset | cancel + insert | both |
//! | poll, per fired timer | O(1) amortised: each timer moves at most once per level | at most 11 searches of 11 levels, 10 list cascades of `MAX_LIST` timers, 10 promotions; a timer due behind the cursor: 10 splits of `MAX_LIST` |
//! | poll with nothing due, `next_deadline` | O(1): one comparison with the hint | 0 |
//! | `drain`, `shrink_to_fit` | O(n log n): every timer in firing order, placed anew | not bounded |
//! | memory | a 24 B slab entry and an 8 B link per timer (`u64` payload), a node (~800 B) per crowded slot | |
//!
//! Every call but `drain` and `shrink_to_fit` therefore does at most
//! [`HierarchicalWheel::max_call_work_bound`] = `LEVELS · (MAX_LIST + 2 · LEVELS)` = 594
//! units, however the timers are spread, however far `now` jumps and however often the caller
//! polls. The model test asserts it after every operation.
//!
//! Follows tokio's time driver (64 slots per level, the level from the highest differing
//! bits) and Varghese & Lauck's hierarchical scheme 7, with eager unlinking as in the Linux
//! timer wheel.

use alloc::vec::Vec;

mod entry;
mod invariants;
mod level;
mod nodes;
#[cfg(test)]
mod tests;

use crate::slab::{Slab, NIL};
use crate::{
    ConfigError, Expired, FromOptions, InsertError, Options, StaleKeyError, Stats, Tick, Timer,
    TimerKey,
};
use entry::Entry;
use level::{above, below, level_for, slot_for, slot_start, span, LEVELS};
use nodes::{list_id, Nodes, MAX_LIST};

/// A hierarchical timing wheel: eleven levels of 64 slots over every `u64` tick.
///
/// A deadline sits at the level of the highest 6-bit group in which it differs from the
/// wheel's cursor (a level-`l` slot spans `64^l` ticks), in a first-in first-out list; cancel
/// and reset unlink it at once. A list above level 0 holds at most 32 timers: the next one
/// turns the slot into a finer wheel of its own over the same range. When the cursor reaches
/// a slot, its list moves a level or more down. So every call but `drain` and `shrink_to_fit`
/// does at most [`max_call_work_bound`](Self::max_call_work_bound) units of work (594: timers
/// moved, nodes and levels visited), however the timers are spread and however far `now`
/// jumps. Pick it for many timers, most cancelled or pushed later: I/O timeouts.
///
/// | operation | cost |
/// |---|---|
/// | insert, cancel, reset | O(1) |
/// | poll per fired timer | O(1) amortised: a timer moves at most once per level |
/// | poll with nothing due, `next_deadline` | O(1): one comparison |
/// | memory per timer | 32 B (a 24 B slab entry and an 8 B link, `u64` payload), plus about 800 B per crowded slot |
///
/// `next_deadline` may answer early, with the start of the slot the earliest timer waits in:
/// an event loop wakes at most once per level a timer crosses.
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
    nodes: Nodes,
    /// The root node of each level.
    levels: [u32; LEVELS],
    /// The cursor (see the invariants).
    elapsed: Tick,
    /// Latest `now` seen; only increases; `elapsed <= now`.
    now: Tick,
    /// Pending timers due before `elapsed` (in slots below the cursor's).
    overdue: usize,
    /// At most every pending deadline; an idle poll is one comparison with it.
    hint: Tick,
    /// A timer fired since `hint` was last recomputed (for [`Stats::empty_wakeups`]).
    fired_since_hint: bool,
    /// Work done so far (see [`Stats::max_call_work`]).
    work: u64,
    stats: Stats,
}

impl<T> HierarchicalWheel<T> {
    /// The most work any single call does, in [`Stats::max_call_work`] units:
    /// `LEVELS · (MAX_LIST + 2 · LEVELS)`.
    ///
    /// ```
    /// use tickwheel::{HierarchicalWheel, Timer};
    ///
    /// assert_eq!(HierarchicalWheel::<()>::max_call_work_bound(), 594);
    /// let mut wheel = HierarchicalWheel::new();
    /// for i in 0..10_000 {
    ///     wheel.insert(5_000, i).unwrap();
    /// }
    /// while wheel.poll(5_000).is_some() {}
    /// assert!(wheel.stats().max_call_work <= HierarchicalWheel::<()>::max_call_work_bound());
    /// ```
    #[must_use]
    pub const fn max_call_work_bound() -> u64 {
        (LEVELS as u64) * (MAX_LIST as u64 + 2 * LEVELS as u64)
    }

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
        let mut nodes = Nodes::new(pre);
        let levels = core::array::from_fn(|level| nodes.root(level));
        Self {
            slab: Slab::new(options.capacity, pre),
            nodes,
            levels,
            elapsed: options.start,
            now: options.start,
            overdue: 0,
            hint: Tick::MAX,
            fired_since_hint: false,
            work: 0,
            stats: Stats::default(),
        }
    }

    /// Ends a call that began when `work` was `start`: keeps the largest.
    #[inline(always)]
    fn note_work(&mut self, start: u64) {
        let done = self.work - start;
        if done > self.stats.max_call_work {
            self.stats.max_call_work = done;
        }
    }

    /// Links timer `index`, due at `deadline`, into its place.
    #[inline(always)]
    fn place(&mut self, index: u32, deadline: Tick) {
        if deadline < self.elapsed {
            self.overdue += 1;
        }
        if deadline < self.hint {
            self.hint = deadline;
        }
        let level = level_for(self.elapsed, deadline);
        self.work += self
            .nodes
            .push(&mut self.slab, self.levels[level], level, deadline, index);
    }

    /// Unlinks timer `index` from its place.
    #[inline(always)]
    fn unplace(&mut self, index: u32) {
        let e = self.slab.at(index);
        if e.deadline < self.elapsed {
            self.overdue -= 1;
        }
        let list = e.list;
        self.work += self.nodes.unlink(index, list);
    }

    /// Hands timer `index` (unlinked) out of the slab.
    fn take(&mut self, index: u32) -> Expired<T> {
        let key = self.slab.key_at(index);
        let entry = self.slab.remove_at(index);
        Expired {
            key,
            deadline: entry.deadline,
            payload: entry.payload,
        }
    }

    /// The poll that may fire: finds the next due timer, cascading on the way, or moves the
    /// cursor up to `now` when none is due.
    #[inline(never)]
    fn poll_due(&mut self) -> Option<Expired<T>> {
        let start = self.work;
        let due = self.next_due();
        self.note_work(start);
        let index = due?;
        let expired = self.take(index);
        if expired.deadline < self.elapsed {
            self.overdue -= 1;
        }
        self.stats.fired += 1;
        self.fired_since_hint = true;
        Some(expired)
    }

    /// Unlinks and returns the next due timer, if any.
    fn next_due(&mut self) -> Option<u32> {
        loop {
            if self.overdue > 0 {
                return Some(self.pop_overdue());
            }
            let ready = self.levels[0];
            let cursor = slot_for(self.elapsed, 0);
            if self.nodes.node(ready).occupied & (1 << cursor) != 0 {
                let (index, work) = self.nodes.pop_front(list_id(ready, cursor));
                self.work += work;
                return Some(index);
            }
            let Some((level, slot)) = self.earliest_ahead() else {
                self.idle(Tick::MAX);
                return None;
            };
            let start = slot_start(self.elapsed, level, slot);
            if start > self.now {
                let bound = self.tighten(level, slot, start);
                self.idle(bound);
                return None;
            }
            self.stats.slots_scanned += 1;
            self.elapsed = start;
            if level > 0 {
                self.cascade(level, slot);
            }
        }
    }

    /// Nothing is due up to `now`: the cursor comes up to it, and `hint` to `bound`.
    fn idle(&mut self, bound: Tick) {
        // `now` reached what `next_deadline` answered and nothing was due: an early answer,
        // unless this poll only ends a run of fires.
        if !core::mem::take(&mut self.fired_since_hint) {
            self.stats.empty_wakeups += 1;
        }
        self.elapsed = self.now;
        self.hint = bound;
    }

    /// The first occupied slot after the cursor: the lowest level that has one, its lowest.
    fn earliest_ahead(&mut self) -> Option<(usize, usize)> {
        for level in 0..LEVELS {
            self.work += 1;
            let bits =
                self.nodes.node(self.levels[level]).occupied & above(slot_for(self.elapsed, level));
            if bits != 0 {
                return Some((level, bits.trailing_zeros() as usize));
            }
        }
        None
    }

    /// A lower bound on the deadlines in slot `slot` of root `level`, which starts at
    /// `start`: the start of the first slot of the children it holds.
    fn tighten(&mut self, level: usize, slot: usize, start: Tick) -> Tick {
        let mut node = self.nodes.node(self.levels[level]);
        let mut slot = slot;
        let mut bound = start;
        while node.slots[slot].is_child() {
            self.work += 1;
            node = self.nodes.node(node.slots[slot].head);
            slot = node.occupied.trailing_zeros() as usize;
            bound = node.base + span(node.level as usize) * slot as u64;
        }
        bound
    }

    /// The cursor has just moved onto the start of slot `slot` of `level` (1 or higher):
    /// its timers move down. A list's timers are placed anew; a child node becomes the level
    /// below whole, and its own first slot, which the cursor is on, moves down in turn.
    fn cascade(&mut self, mut level: usize, mut slot: usize) {
        loop {
            let root = self.levels[level];
            if !self.nodes.node(root).slots[slot].is_child() {
                let mut cur = self.nodes.take_list(list_id(root, slot));
                while cur != NIL {
                    let next = self.nodes.next(cur);
                    let deadline = self.slab.at(cur).deadline;
                    let to = level_for(self.elapsed, deadline);
                    self.work +=
                        1 + self
                            .nodes
                            .push(&mut self.slab, self.levels[to], to, deadline, cur);
                    self.stats.cascaded += 1;
                    cur = next;
                }
                return;
            }
            // Every level below is empty: the child takes the place of the one below.
            let child = self.nodes.take_child(root, slot);
            let below_root = core::mem::replace(&mut self.levels[level - 1], child);
            self.nodes.release(below_root);
            self.work += 1;
            level -= 1;
            slot = 0;
            if level == 0 || self.nodes.node(child).occupied & 1 == 0 {
                return;
            }
        }
    }

    /// Unlinks the earliest overdue timer: the lowest occupied slot below the cursor on the
    /// highest level that has one, split down to a level-0 list.
    fn pop_overdue(&mut self) -> u32 {
        let mut found = None;
        for level in (0..LEVELS).rev() {
            self.work += 1;
            let bits =
                self.nodes.node(self.levels[level]).occupied & below(slot_for(self.elapsed, level));
            if bits != 0 {
                found = Some((self.levels[level], bits.trailing_zeros() as usize));
                break;
            }
        }
        let (mut node, mut slot) = found.expect("an overdue timer sits below the cursor");
        loop {
            let n = self.nodes.node(node);
            let level = n.level as usize;
            let list = list_id(node, slot);
            if n.slots[slot].is_child() {
                self.work += 1;
                node = n.slots[slot].head;
                slot = self.nodes.node(node).occupied.trailing_zeros() as usize;
            } else if level == 0 || n.slots[slot].len == 1 {
                let (index, work) = self.nodes.pop_front(list);
                self.work += work;
                return index;
            } else {
                // A list of mixed deadlines: sort it one level finer.
                self.work += self.nodes.split(&mut self.slab, list, level);
            }
        }
    }

    /// Every pending timer in firing order.
    fn firing_order(&self) -> Vec<u32> {
        let mut all: Vec<(Tick, u32)> = Vec::with_capacity(self.slab.len());
        for list in self.nodes.lists(&self.levels) {
            let mut cur = self.nodes.slot(list).head;
            while cur != NIL {
                all.push((self.slab.at(cur).deadline, cur));
                cur = self.nodes.next(cur);
            }
        }
        // Equal deadlines share one list, in first-in first-out order: a stable sort keeps it.
        all.sort_by_key(|&(deadline, _)| deadline);
        all.into_iter().map(|(_, index)| index).collect()
    }

    /// Fresh, empty nodes and levels.
    fn clear_places(&mut self) {
        self.nodes = Nodes::new(0);
        self.nodes.cover(self.slab.slots());
        let nodes = &mut self.nodes;
        self.levels = core::array::from_fn(|level| nodes.root(level));
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
    #[inline]
    fn insert(&mut self, deadline: Tick, payload: T) -> Result<TimerKey, InsertError<T>> {
        let key = match self.slab.insert(Entry::new(deadline, payload)) {
            Ok(key) => key,
            Err(entry) => {
                self.stats.rejected += 1;
                return Err(InsertError::Full(entry.payload));
            }
        };
        let start = self.work;
        self.nodes.cover(self.slab.slots());
        self.place(key.index, deadline);
        self.note_work(start);
        Ok(key)
    }

    #[inline]
    fn cancel(&mut self, key: TimerKey) -> Option<T> {
        let index = self.slab.resolve(key)?;
        let start = self.work;
        self.unplace(index);
        self.note_work(start);
        self.stats.cancelled += 1;
        Some(self.slab.remove_at(index).payload)
    }

    #[inline]
    fn reset(&mut self, key: TimerKey, deadline: Tick) -> Result<(), StaleKeyError> {
        let Some(index) = self.slab.resolve(key) else {
            return Err(StaleKeyError { key });
        };
        let start = self.work;
        self.unplace(index);
        self.slab.at_mut(index).deadline = deadline;
        self.place(index, deadline);
        self.note_work(start);
        self.stats.reset += 1;
        Ok(())
    }

    #[inline]
    fn poll(&mut self, now: Tick) -> Option<Expired<T>> {
        if now > self.now {
            self.now = now;
        }
        if self.now < self.hint {
            return None;
        }
        self.poll_due()
    }

    fn next_deadline(&self) -> Option<Tick> {
        (self.slab.len() != 0).then_some(self.hint)
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

    fn work_bound(&self) -> Option<u64> {
        Some(Self::max_call_work_bound())
    }

    fn stats(&self) -> Stats {
        let s = self.stats;
        Stats {
            inserted: self.slab.len() as u64 + s.cancelled + s.fired + s.drained,
            ..s
        }
    }

    fn drain(&mut self) -> Vec<Expired<T>> {
        let order = self.firing_order();
        self.clear_places();
        self.overdue = 0;
        self.hint = Tick::MAX;
        self.stats.drained += order.len() as u64;
        order.into_iter().map(|index| self.take(index)).collect()
    }

    fn shrink_to_fit(&mut self) {
        // Every timer placed anew, in firing order, into fresh nodes.
        let order = self.firing_order();
        self.clear_places();
        for index in order {
            let deadline = self.slab.at(index).deadline;
            let level = level_for(self.elapsed, deadline);
            self.nodes
                .push(&mut self.slab, self.levels[level], level, deadline, index);
        }
        self.slab.shrink_to_fit();
        self.nodes.shrink_links(self.slab.slots());
    }

    fn allocated_bytes(&self) -> usize {
        self.slab.allocated_bytes() + self.nodes.allocated_bytes()
    }

    fn name(&self) -> &'static str {
        "hierarchical"
    }

    fn check_invariants(&self) {
        self.invariants();
    }
}
