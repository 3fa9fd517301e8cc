//! `HashedWheel`: one ring of `2^k` slots; a timer waits in slot `deadline mod 2^k`, extra laps
//! included (Varghese & Lauck's scheme 6, the design of Netty's `HashedWheelTimer`).
//!
//! Each slot is a FIFO list in the slab plus a lower bound on the deadlines in it (`slot_min`),
//! and an occupancy bitmap marks the non-empty slots. `poll` moves the cursor (the last tick
//! fully swept) forward: it jumps over empty slots with the bitmap, skips a slot without
//! touching its list when `slot_min` says nothing in it is due this lap, and otherwise walks the
//! list once, a poll at a time: the cursor waits just before the slot's tick, and each poll
//! walks on to the next timer due at that tick and fires it, so a slot of a million due timers
//! costs each poll a few steps, not one poll the whole list. The walk's end refreshes
//! `slot_min` and moves the cursor onto the tick. A jump longer than one revolution skips straight to the slot that may hold the
//! earliest timer, taken from the [`jump`] list of least slot bounds, which one pass over the
//! ring refills once its 256 entries are used up, not once per firing tick.
//!
//! # Invariants
//! - Every timer is in exactly one place, determined by its deadline and the cursor (see
//!   [`wheel`](super)): due queue, or slot `deadline & mask` when `deadline > cursor`.
//! - `slot_min[s]` is at most every deadline in slot `s`; a slot's bit is set iff it is
//!   non-empty; `in_slots` counts the timers in slots.
//! - `bound` is at most every deadline in the slots. It says something only while it is above
//!   the cursor (every deadline in the slots is), so one at or below the cursor means "unknown".
//! - Slot lists are in insertion order, so equal deadlines (which share a slot) leave first-in
//!   first-out. `cursor <= now`; the ready list is empty whenever the cursor moves.
//! - During a visit, the slot of `cursor + 1` is being walked: every entry up to `visit_prev`
//!   is due later than that tick and at least `visit_min`; a timer inserted at that tick joins
//!   the slot's tail (it is after the cursor), where the walk meets it in order.
//!
//! # Costs
//! | operation | cost |
//! |---|---|
//! | insert, cancel, reset | O(1): one list push/unlink (overdue: O(log n)) |
//! | poll per tick swept | O(1) bitmap step; a slot that may be due this lap is walked over as many polls as it has due timers, each passing the later-lap entries before its timer |
//! | poll with nothing due | O(1) once the lower bound is known |
//! | `next_deadline` | O(1) when known; otherwise one scan of occupied slots, stopping early |
//! | worst single call ([`Stats::max_call_work`]) | a poll: the later-lap entries it walks past and the empty slots' bitmap words, plus, in a far jump, at most a refill of the jump list (one pass over the ring); a slot of later-lap timers only is walked whole |
//! | memory per timer | one 32 B slab slot (u64 payload); 16 B per ring slot + 1 bit |
//!
//! The default ring is 4096 slots: at 1 ms per tick one revolution is ~4.1 s, so typical request
//! deadlines fire on their first lap while the ring's heads (64 KiB) stay in L2. Netty defaults
//! to 512 slots of 100 ms.

use alloc::vec;
use alloc::vec::Vec;
use core::cell::Cell;

mod due;
mod entry;
mod jump;
mod list;
mod ordered;

use crate::slab::{Slab, NIL};
use crate::{
    ConfigError, Expired, FromOptions, InsertError, Options, StaleKeyError, Stats, Tick, Timer,
    TimerKey,
};
use due::Due;
use entry::{take, Entry};
use jump::Jump;
use list::List;

/// A hashed timing wheel. See the module docs for the design and costs.
///
/// ```
/// use tickwheel::{FromOptions, HashedWheel, Options, Timer};
///
/// let mut wheel = HashedWheel::from_options(Options::new().hashed_slots(64)).unwrap();
/// wheel.insert(64 * 3 + 1, "third lap").unwrap();
/// wheel.insert(1, "first lap").unwrap();
/// assert_eq!(wheel.poll(1).unwrap().payload, "first lap");
/// assert_eq!(wheel.poll(100), None);
/// assert_eq!(wheel.poll(193).unwrap().payload, "third lap");
/// ```
pub struct HashedWheel<T> {
    slab: Slab<Entry<T>>,
    slots: Box<[List]>,
    /// A lower bound on the deadlines in each slot (meaningless for empty slots).
    slot_min: Box<[Tick]>,
    /// Bit `s % 64` of word `s / 64` is set iff slot `s` is non-empty.
    occupied: Box<[u64]>,
    /// `slots.len() - 1`.
    mask: u64,
    due: Due,
    /// Timers in slots (not in the due queue).
    in_slots: usize,
    /// A lower bound on every deadline in the slots, known only while above the cursor (a bound
    /// at or below it tells nothing, since every deadline in the slots is after it). A cache that
    /// `next_deadline` may fill in through `&self`.
    bound: Cell<Tick>,
    /// A timer fired since the last sweep that found nothing (for [`Stats::empty_wakeups`]).
    fired_since_look: bool,
    /// The cursor: every timer due at or before it has left the slots. Only increases.
    cursor: Tick,
    /// Latest `now` seen; only increases.
    now: Tick,
    /// Work done so far, and the most one call did (see [`Stats::max_call_work`]); cells, so
    /// that `next_deadline`'s scan through `&self` counts too.
    work: Cell<u64>,
    max_work: Cell<u64>,
    /// The slots a far jump visits next.
    jump: Jump,
    /// A slot visit in progress: the tick `cursor + 1` whose slot is being walked, a poll
    /// firing each of its due timers as the walk reaches it.
    visiting: bool,
    /// The last entry the visit walked past and kept (`NIL`: none yet, walk from the head).
    visit_prev: u32,
    /// The least deadline among the entries the visit kept.
    visit_min: Tick,
    stats: Stats,
}

use alloc::boxed::Box;

impl<T> HashedWheel<T> {
    /// The default ring size (see the module docs for why).
    pub const DEFAULT_SLOTS: usize = 4096;

    /// An empty, unbounded wheel of [`DEFAULT_SLOTS`](Self::DEFAULT_SLOTS) slots at tick 0.
    ///
    /// ```
    /// let wheel: tickwheel::HashedWheel<u64> = tickwheel::HashedWheel::new();
    /// assert_eq!(wheel.slots(), 4096);
    /// ```
    #[must_use]
    pub fn new() -> Self {
        Self::with(Options::new())
    }

    /// The ring size.
    ///
    /// ```
    /// use tickwheel::{FromOptions, HashedWheel, Options};
    /// let wheel = HashedWheel::<()>::from_options(Options::new().hashed_slots(512)).unwrap();
    /// assert_eq!(wheel.slots(), 512);
    /// ```
    #[must_use]
    pub fn slots(&self) -> usize {
        self.slots.len()
    }

    fn with(options: Options) -> Self {
        let n = options.hashed_slots;
        let pre = options
            .preallocate
            .min(options.capacity.unwrap_or(usize::MAX));
        Self {
            slab: Slab::new(options.capacity, pre),
            slots: vec![List::EMPTY; n].into_boxed_slice(),
            slot_min: vec![0; n].into_boxed_slice(),
            occupied: vec![0; n.div_ceil(64)].into_boxed_slice(),
            mask: n as u64 - 1,
            due: Due::default(),
            in_slots: 0,
            bound: Cell::new(0),
            fired_since_look: false,
            cursor: options.start,
            now: options.start,
            work: Cell::new(0),
            max_work: Cell::new(0),
            jump: Jump::default(),
            visiting: false,
            visit_prev: NIL,
            visit_min: Tick::MAX,
            stats: Stats::default(),
        }
    }

    #[inline(always)]
    fn add_work(&self, units: u64) {
        self.work.set(self.work.get() + units);
    }

    /// Ends a call that began when the work count was `start`: keeps the largest.
    #[inline]
    fn note_work(&self, start: u64) {
        let w = self.work.get() - start;
        if w > self.max_work.get() {
            self.max_work.set(w);
        }
    }

    #[inline]
    fn slot_of(&self, deadline: Tick) -> usize {
        (deadline & self.mask) as usize
    }

    #[inline]
    fn place(&mut self, index: u32, deadline: Tick) {
        if deadline <= self.cursor {
            self.place_due(index);
            return;
        }
        let s = self.slot_of(deadline);
        if self.slots[s].is_empty() {
            self.occupied[s / 64] |= 1 << (s % 64);
            self.slot_min[s] = deadline;
        } else if deadline < self.slot_min[s] {
            self.slot_min[s] = deadline;
        }
        self.slots[s].push_back(&mut self.slab, index);
        if deadline < self.jump.floor {
            self.jump.clear();
        }
        // An unknown bound (at or below the cursor) stays unknown; no branch on the hot path.
        self.bound.set(if self.in_slots == 0 {
            deadline
        } else {
            self.bound.get().min(deadline)
        });
        self.in_slots += 1;
    }

    /// [`place`](Self::place) for an insert, as a call of its own: the caller's insert loop
    /// keeps the slab insert inline and calls this, which saves one register. Left to the
    /// compiler, whether `place` was inlined into the insert, and the insert into its caller,
    /// changed with unrelated code elsewhere in the program, and with it about 17 % of the
    /// insert time (`docs/bench-profile.md`).
    #[inline(never)]
    fn place_inserted(&mut self, index: u32, deadline: Tick) {
        self.place(index, deadline);
    }

    /// [`place`](Self::place) for a deadline at or behind the cursor: rare, and kept out of
    /// line so that the ordered map's code does not weigh on the slot path.
    #[cold]
    #[inline(never)]
    fn place_due(&mut self, index: u32) {
        self.due.push(&mut self.slab, index, self.cursor);
    }

    #[inline]
    fn unplace(&mut self, index: u32, deadline: Tick) {
        if deadline <= self.cursor {
            self.due.remove(&mut self.slab, index, self.cursor);
            return;
        }
        let s = self.slot_of(deadline);
        if index == self.visit_prev {
            // The visit walks on from the entry before this one.
            self.visit_prev = self.slab.at(index).prev;
        }
        self.slots[s].unlink(&mut self.slab, index);
        if self.slots[s].is_empty() {
            self.occupied[s / 64] &= !(1 << (s % 64));
        }
        // `slot_min` and `bound` stay valid lower bounds.
        self.in_slots -= 1;
    }

    /// The first occupied slot at or after ring position `start`, looking at most `len` slots
    /// ahead (wrapping); returns its distance from `start`.
    fn next_occupied(&self, start: usize, len: usize) -> Option<usize> {
        let n = self.slots.len();
        let mut pos = start;
        let mut dist = 0;
        while dist < len {
            self.add_work(1);
            let word = self.occupied[pos / 64] >> (pos % 64);
            if word != 0 {
                let d = dist + word.trailing_zeros() as usize;
                return (d < len).then_some(d);
            }
            let step = 64 - pos % 64;
            dist += step;
            pos = (pos + step) & (n - 1);
        }
        None
    }

    /// One pass over the occupied slots in ring order from the cursor, returning a lower bound
    /// on every deadline in the slots. Stops as soon as no later slot can beat the bound. Its
    /// one caller, [`lower_bound`](Self::lower_bound), has already answered for empty slots.
    fn scan_bound(&self) -> Option<Tick> {
        let n = self.slots.len();
        let first = self.cursor.checked_add(1)?;
        let mut best = Tick::MAX;
        let mut dist = 0;
        while let Some(d) = self.next_occupied((first as usize + dist) & (n - 1), n - dist) {
            dist += d;
            let Some(t) = first.checked_add(dist as u64) else {
                break;
            };
            let s = (t & self.mask) as usize;
            self.add_work(1);
            // Timers in slot `s` are due after the cursor, so no earlier than `t`.
            best = best.min(self.slot_min[s].max(t));
            if best <= t {
                break;
            }
            dist += 1;
        }
        Some(best)
    }

    /// The bound of occupied slot `s`: no timer in it is due before this tick (`None`: after
    /// the last tick).
    fn slot_bound(&self, s: usize) -> Option<Tick> {
        let first = self.cursor.checked_add(1)?;
        let t = first.checked_add((s as u64).wrapping_sub(first) & self.mask)?;
        Some(self.slot_min[s].max(t))
    }

    /// One pass over the occupied slots: keeps the [`jump::K`] least bounds in [`Jump`].
    fn refill_jump(&mut self) {
        let mut least = alloc::collections::BinaryHeap::with_capacity(jump::K + 1);
        let mut floor = Tick::MAX;
        for (w, &word) in self.occupied.iter().enumerate() {
            self.add_work(1);
            let mut bits = word;
            while bits != 0 {
                let s = w * 64 + bits.trailing_zeros() as usize;
                bits &= bits - 1;
                self.add_work(1);
                let Some(b) = self.slot_bound(s) else {
                    continue;
                };
                least.push((b, s as u32));
                if least.len() > jump::K {
                    if let Some((out, _)) = least.pop() {
                        floor = floor.min(out);
                    }
                }
            }
        }
        let mut entries = least.into_sorted_vec();
        entries.reverse();
        self.jump.entries = entries;
        self.jump.floor = floor;
    }

    /// The least bound over the slots, for a far jump: the least entry of [`Jump`], re-checked
    /// against its slot (refilled when it runs out).
    fn jump_target(&mut self) -> Option<Tick> {
        if self.in_slots == 0 {
            return None;
        }
        let mut refilled = false;
        loop {
            let Some(&(b, s)) = self.jump.entries.last() else {
                if refilled {
                    return self.lower_bound();
                }
                self.refill_jump();
                refilled = true;
                continue;
            };
            self.add_work(1);
            self.jump.entries.pop();
            let s = s as usize;
            if self.slots[s].is_empty() {
                continue;
            }
            match self.slot_bound(s) {
                Some(now) if now == b => {
                    self.jump.entries.push((b, s as u32));
                    return Some(b);
                }
                Some(now) => self.jump.keep(now, s as u32),
                None => {}
            }
        }
    }

    /// The cached lower bound, computing it when unknown.
    fn lower_bound(&self) -> Option<Tick> {
        if self.in_slots == 0 {
            return None;
        }
        let b = self.bound.get();
        if b > self.cursor {
            return Some(b);
        }
        let b = self.scan_bound()?;
        self.bound.set(b);
        Some(b)
    }

    /// Starts the visit of the slot of tick `t` (the first tick after the cursor that may hold
    /// a timer): unless its lower bound says nothing in it is due this lap, the cursor stays
    /// just before `t` while [`visit_step`](Self::visit_step) walks the slot.
    fn start_visit(&mut self, t: Tick) {
        let s = self.slot_of(t);
        self.stats.slots_scanned += 1;
        self.add_work(1);
        if self.slot_min[s] > t {
            self.cursor = t; // nothing in this slot is due on this lap
            return;
        }
        self.cursor = t - 1;
        self.visiting = true;
        self.visit_prev = NIL;
        self.visit_min = Tick::MAX;
    }

    /// Walks the visited slot on to its next timer due at `cursor + 1` and takes it out of the
    /// slot; at the end of the slot, refreshes its lower bound, ends the visit and moves the
    /// cursor there. Timers pushed meanwhile join the slot's tail, so the walk meets them in
    /// first-in first-out order.
    fn visit_step(&mut self) -> Option<u32> {
        let t = self.cursor + 1;
        let s = self.slot_of(t);
        let mut cur = match self.visit_prev {
            NIL => self.slots[s].head,
            prev => self.slab.at(prev).next,
        };
        while cur != NIL {
            self.add_work(1);
            let (next, deadline) = {
                let e = self.slab.at(cur);
                (e.next, e.deadline)
            };
            if deadline == t {
                self.slots[s].unlink(&mut self.slab, cur);
                self.in_slots -= 1;
                if self.slots[s].is_empty() {
                    self.occupied[s / 64] &= !(1 << (s % 64));
                }
                return Some(cur);
            }
            self.visit_min = self.visit_min.min(deadline);
            self.visit_prev = cur;
            cur = next;
        }
        self.slot_min[s] = self.visit_min;
        self.visiting = false;
        self.visit_prev = NIL;
        self.cursor = t;
        None
    }

    fn fire(&mut self, index: u32) -> Expired<T> {
        self.stats.fired += 1;
        self.fired_since_look = true;
        take(&mut self.slab, index)
    }

    /// The end of a sweep that reached `now` past the slots' lower bound and found nothing
    /// due: an early `next_deadline` answer, unless this poll only ends a run of fires.
    fn found_nothing(&mut self) -> Option<Expired<T>> {
        if !core::mem::take(&mut self.fired_since_look) {
            self.stats.empty_wakeups += 1;
        }
        None
    }

    /// [`poll`](Timer::poll) past the idle check: fires, or sweeps the cursor towards `now`.
    #[inline(never)]
    fn poll_due(&mut self) -> Option<Expired<T>> {
        let start = self.work.get();
        let fired = self.sweep();
        self.note_work(start);
        fired
    }

    /// [`poll_due`](Self::poll_due)'s work.
    #[inline(always)]
    fn sweep(&mut self) -> Option<Expired<T>> {
        let now = self.now;
        let n = self.slots.len() as u64;
        loop {
            if let Some(index) = self.due.pop(&mut self.slab) {
                return Some(self.fire(index));
            }
            if self.visiting {
                match self.visit_step() {
                    Some(index) => return Some(self.fire(index)),
                    None => continue,
                }
            }
            if self.cursor >= now {
                return self.found_nothing();
            }
            if self.in_slots == 0 || self.bound.get() > now {
                // Nothing can be due yet: `next_deadline` answered no earlier than this.
                self.cursor = now;
                return None;
            }
            if now - self.cursor > n {
                // A jump longer than a lap: skip straight to the slot with the least bound.
                match self.jump_target() {
                    Some(b) if b <= now => {
                        if b > self.cursor + 1 {
                            self.cursor = b - 1;
                        }
                    }
                    _ => {
                        self.cursor = now;
                        return None;
                    }
                }
            }
            // Sweep at most one lap: ticks cursor+1 ..= end.
            let first = self.cursor + 1;
            let end = now.min(self.cursor.saturating_add(n));
            let span = (end - first + 1) as usize;
            match self.next_occupied((first & self.mask) as usize, span) {
                None => self.cursor = end,
                Some(dist) => self.start_visit(first + dist as u64),
            }
        }
    }
}

impl<T> Default for HashedWheel<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> FromOptions for HashedWheel<T> {
    fn from_options(options: Options) -> Result<Self, ConfigError> {
        options.validate()?;
        let n = options.hashed_slots;
        if !n.is_power_of_two() || !(64..=1 << 24).contains(&n) {
            return Err(ConfigError::WheelSlots(n));
        }
        Ok(Self::with(options))
    }
}

impl<T> Timer<T> for HashedWheel<T> {
    #[inline(always)]
    fn insert(&mut self, deadline: Tick, payload: T) -> Result<TimerKey, InsertError<T>> {
        match self.slab.insert(Entry::new(deadline, payload)) {
            Ok(key) => {
                self.place_inserted(key.index, deadline);
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
        // Take it out where its old deadline put it (the due queue reads the entry's deadline).
        self.unplace(index, self.slab.at(index).deadline);
        self.slab.at_mut(index).deadline = deadline;
        self.place(index, deadline);
        self.stats.reset += 1;
        Ok(())
    }

    #[inline]
    fn poll(&mut self, now: Tick) -> Option<Expired<T>> {
        self.now = self.now.max(now);
        if self.cursor >= self.now && self.due.is_empty() {
            return None; // idle turn, inlined: nothing new can be due
        }
        self.poll_due()
    }

    fn next_deadline(&self) -> Option<Tick> {
        let start = self.work.get();
        let next = self
            .due
            .first_deadline(self.cursor)
            .or_else(|| self.lower_bound());
        self.note_work(start);
        next
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
        Stats {
            max_call_work: self.max_work.get(),
            ..self.stats
        }
    }

    fn drain(&mut self) -> Vec<Expired<T>> {
        let mut order = self.due.collect(&self.slab, self.cursor);
        for list in self.slots.iter() {
            order.extend(list.collect(&self.slab));
        }
        order.sort_by_key(|&i| self.slab.at(i).deadline);
        self.due = Due::default();
        self.jump.clear();
        self.visiting = false;
        self.visit_prev = NIL;
        self.slots.fill(List::EMPTY);
        self.occupied.fill(0);
        self.in_slots = 0;
        self.stats.drained += order.len() as u64;
        order
            .into_iter()
            .map(|index| take(&mut self.slab, index))
            .collect()
    }

    fn shrink_to_fit(&mut self) {
        // The ring is the fixed floor; slots link through slab indices, which do not move.
        self.slab.shrink_to_fit();
    }

    fn allocated_bytes(&self) -> usize {
        self.slab.allocated_bytes()
            + self.slots.len() * (core::mem::size_of::<List>() + core::mem::size_of::<Tick>())
            + self.occupied.len() * 8
            + self.jump.entries.capacity() * core::mem::size_of::<(Tick, u32)>()
    }

    fn name(&self) -> &'static str {
        "hashed"
    }

    fn check_invariants(&self) {
        self.slab.check();
        assert!(self.cursor <= self.now, "cursor ahead of now");
        // The far-jump list: entries at most `floor`, in order, each a lower bound on its
        // slot's bound; every other occupied slot's bound at or above `floor`.
        let entries = &self.jump.entries;
        assert!(
            entries.windows(2).all(|w| w[0].0 >= w[1].0),
            "jump entries out of order"
        );
        for (s, list) in self.slots.iter().enumerate() {
            if list.is_empty() {
                continue;
            }
            let Some(bound) = self.slot_bound(s) else {
                continue;
            };
            match entries.iter().find(|&&(_, e)| e as usize == s) {
                Some(&(b, _)) => {
                    assert!(b <= bound, "jump entry {b} above slot {s}'s bound {bound}");
                    assert!(b <= self.jump.floor, "jump entry {b} above the floor");
                }
                None => assert!(
                    bound >= self.jump.floor,
                    "slot {s}'s bound {bound} below the jump floor {}",
                    self.jump.floor
                ),
            }
        }
        let mut seen = self.due.collect(&self.slab, self.cursor).len();
        let mut in_slots = 0;
        for (s, list) in self.slots.iter().enumerate() {
            let bit = self.occupied[s / 64] & (1 << (s % 64)) != 0;
            assert_eq!(bit, !list.is_empty(), "occupancy bit of slot {s} is wrong");
            for index in list.collect(&self.slab) {
                let d = self.slab.at(index).deadline;
                assert!(
                    d > self.cursor,
                    "slot {s} holds a timer at or behind the cursor"
                );
                assert_eq!(self.slot_of(d), s, "timer {d} in the wrong slot");
                assert!(
                    self.slot_min[s] <= d,
                    "slot {s} lower bound above a deadline"
                );
                let b = self.bound.get();
                assert!(b <= d, "wheel lower bound {b} above deadline {d}");
                in_slots += 1;
            }
        }
        assert_eq!(in_slots, self.in_slots, "in_slots count is wrong");
        if self.visiting {
            let s = self.slot_of(self.cursor + 1);
            let walked = self.slots[s].collect(&self.slab);
            let upto = match self.visit_prev {
                NIL => 0,
                prev => {
                    1 + walked
                        .iter()
                        .position(|&i| i == prev)
                        .expect("visit left its slot")
                }
            };
            for &i in &walked[..upto] {
                let d = self.slab.at(i).deadline;
                assert!(d > self.cursor + 1, "the visit walked past a due timer");
                assert!(self.visit_min <= d, "visit bound above a deadline walked");
            }
        } else {
            assert_eq!(self.visit_prev, NIL, "a visit position with no visit");
        }
        seen += in_slots;
        assert_eq!(seen, self.slab.len(), "a timer is in no place or in two");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A far jump past many firing ticks scans the ring about once per [`jump::K`] of them,
    /// not once per tick: 20,000 timers over 2^33 ticks, each its own firing tick, cost a
    /// few dozen units each (a whole-ring scan is over 4,000).
    #[test]
    fn a_far_jump_does_not_rescan_the_ring_for_each_firing_tick() {
        let mut wheel = HashedWheel::new();
        let n = 20_000u64;
        for i in 0..n {
            wheel
                .insert(1 + (i.wrapping_mul(0x9E37_79B9_7F4A_7C15) % (1 << 33)), i)
                .unwrap();
        }
        let start = wheel.work.get();
        let mut last = 0;
        for _ in 0..n {
            let e = wheel.poll(1 << 34).unwrap();
            assert!(e.deadline >= last);
            last = e.deadline;
        }
        assert_eq!(wheel.poll(1 << 34), None);
        let per_fire = (wheel.work.get() - start) / n;
        assert!(per_fire < 100, "{per_fire} units of work per fired timer");
    }

    /// A slot full of due timers is walked a timer per poll, not whole in one: 10,000 timers at
    /// one tick (with timers of later laps among them, some cancelled mid-walk, more inserted
    /// at that tick meanwhile) fire in first-in first-out order, no poll doing more than the
    /// later-lap entries it passes plus a few units.
    #[test]
    fn a_crowded_slot_is_walked_a_timer_per_poll() {
        let mut wheel = HashedWheel::new();
        let laps = HashedWheel::<u64>::DEFAULT_SLOTS as u64;
        let mut keys = Vec::new();
        for i in 0..10_000u64 {
            keys.push(wheel.insert(100, i).unwrap());
            if i % 1_000 == 0 {
                wheel.insert(100 + laps, 1_000_000 + i).unwrap();
            }
        }
        let mut fired = Vec::new();
        while let Some(e) = wheel.poll(100) {
            assert_eq!(e.deadline, 100);
            fired.push(e.payload);
            if fired.len() == 10 {
                // Cancel timers the walk has not reached, and the one it reaches next.
                for &k in &keys[10..20] {
                    assert!(wheel.cancel(k).is_some());
                }
                wheel.insert(100, 20_000).unwrap();
            }
            wheel.check_invariants();
        }
        let expected: Vec<u64> = (0..10)
            .chain(20..10_000)
            .chain(core::iter::once(20_000))
            .collect();
        assert_eq!(
            fired, expected,
            "first-in first-out, cancelled ones left out"
        );
        let max = wheel.stats().max_call_work;
        assert!(max <= 8, "one poll did {max} units");
        assert_eq!(wheel.len(), 10);
    }

    /// The work counter sees a far jump's scans of the ring: with timers a lap or more apart,
    /// each poll that jumps looks at every word of the ring's bitmap at least once.
    #[test]
    fn the_work_counter_sees_the_ring_scans_of_a_far_jump() {
        let mut wheel = HashedWheel::new();
        for i in 1..=100u64 {
            wheel.insert(i * 1_000_000, i).unwrap();
        }
        assert_eq!(wheel.stats().max_call_work, 0);
        // The first jump knows its bound from the inserts; the second must scan for one.
        assert_eq!(wheel.poll(u64::MAX / 2).map(|e| e.payload), Some(1));
        assert_eq!(wheel.poll(u64::MAX / 2).map(|e| e.payload), Some(2));
        let words = (HashedWheel::<u64>::DEFAULT_SLOTS / 64) as u64;
        let max = wheel.stats().max_call_work;
        assert!(max >= words, "a ring scan of {words} words counted {max}");
    }
}
