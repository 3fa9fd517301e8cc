//! `HashedWheel`: a ring of `2^k` one-tick slots for the timers due within one revolution of
//! the cursor, and the crate's own [`IndexedHeap`] for every other timer.
//!
//! # Concepts
//! 1. **Ring**: a timer due at `d` sits in slot `d mod 2^k`, and goes there only when `d` is
//!    at most one revolution after the cursor, so a slot holds one deadline.
//! 2. **Slot list** ([`slot`]): a first-in first-out list through the slab entries. Cancel
//!    unlinks at once.
//! 3. **Bitmap**: bit `s` is set iff slot `s` is non-empty; a poll finds the next busy slot a
//!    64-slot word at a time.
//! 4. **Cursor**: every ring deadline is after it; it moves forward only, onto a tick once
//!    that tick's slot is empty.
//! 5. **Far heap**: an [`IndexedHeap`] of slab indices holds every timer that was not within a
//!    revolution when placed (further, or at or behind the cursor) until it fires.
//! 6. **Older first**: at equal deadlines the far heap fires first. A deadline goes to the
//!    heap only while it is over a revolution ahead (or behind the cursor, where the ring has
//!    none), and the cursor only moves forward, so its far timers were placed before its ring
//!    timers.
//!
//! # Invariants
//! - Every timer is in one place, which its entry's `far` flag names: the ring, in slot
//!   `deadline mod 2^k`, with `cursor < deadline <= cursor + 2^k`; or the far heap, under the
//!   key kept in its entry. `in_ring` counts the ring's timers.
//! - Each slot holds one deadline, in placement order; its bit is set iff it is non-empty.
//! - `bound` is at most every ring deadline while above the cursor (else unknown); `cursor <=
//!   now`.
//!
//! # Costs and the bound on work
//! Work is counted in [`Stats::max_call_work`] units: one per bitmap word read, slot visited
//! and timer fired from the ring, plus the far heap's own (elements compared or moved). A poll
//! reads the bitmap at most once: up to the earlier of `now` and the heap's first due
//! deadline, it fires the first busy slot, or else moves the cursor there and fires from the
//! heap.
//!
//! | operation | cost | most work in one call |
//! |---|---|---|
//! | insert, cancel, reset | O(1) in the ring; O(log n) in the heap (n timers there) | 2; the heap's bound |
//! | poll | O(1) per timer fired from the ring, O(log n) from the heap | a pass over the bitmap (`2^k / 64 + 1` words), a slot, a fire and the heap's bound |
//! | poll with nothing due, `next_deadline` | O(1) once the ring's bound is known | a pass over the bitmap |
//! | `drain`, `shrink_to_fit` | O(n log n) | not bounded |
//! | memory | a 32 B slab slot per timer (`u64` payload), 4 B and a bit per ring slot; 28 B more per timer in the heap | |
//!
//! [`HashedWheel::max_call_work_bound`] adds these up; the heap's part grows with the most
//! timers it has held (57 units at a million) and leaves out its renumbering once per `2^32`
//! placements there. Follows Netty's `HashedWheelTimer` (Varghese & Lauck's scheme 6).

use alloc::boxed::Box;
use alloc::vec;
use alloc::vec::Vec;
use core::cell::Cell;

mod slot;

use crate::slab::Slab;
use crate::{ConfigError, Expired, FromOptions, IndexedHeap, InsertError, Options};
use crate::{StaleKeyError, Stats, Tick, Timer, TimerKey};
use slot::{take, Entry, Slot};

/// A hashed timing wheel: a ring of `2^k` one-tick slots (2^16 by default: about 65 s of
/// 1 ms ticks) for the timers due within one revolution, and an [`IndexedHeap`] for the rest.
///
/// A slot holds a single deadline, so when its tick comes all of it is due and it fires a
/// timer per poll; an occupancy bitmap finds the next busy slot. A timer further than one
/// revolution (or placed at or behind the cursor) waits in the heap until it fires, in
/// O(log n). Unlike Netty's `HashedWheelTimer`, no call walks past a timer of a later lap, and
/// every call but `drain` and `shrink_to_fit` does at most
/// [`max_call_work_bound`](Self::max_call_work_bound) units of work. Memory: a 32 B slab slot
/// per timer (`u64` payload), 4 B and a bit per ring slot, 28 B more per timer in the heap.
/// Pick it when most timeouts are shorter than one revolution.
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
/// // The default ring's bound on one call's work, with no timer in the heap yet.
/// assert_eq!(HashedWheel::<()>::new().max_call_work_bound(), 1_034);
/// ```
pub struct HashedWheel<T> {
    slab: Slab<Entry<T>>,
    slots: Box<[Slot]>,
    /// Bit `s % 64` of word `s / 64` is set iff slot `s` is non-empty.
    occupied: Box<[u64]>,
    /// `slots.len() - 1`.
    mask: u64,
    /// Every timer not in the ring, by slab index.
    far: IndexedHeap<u32>,
    /// Room to reserve in `far` when its first timer comes (see [`Options::preallocate`]).
    far_room: usize,
    /// Timers in the ring.
    in_ring: usize,
    /// A lower bound on every ring deadline while above the cursor (see the invariants).
    bound: Cell<Tick>,
    /// A timer fired since the last sweep that found nothing (for [`Stats::empty_wakeups`]).
    fired_since_look: bool,
    /// The cursor: every ring deadline is after it. Only increases.
    cursor: Tick,
    /// Latest `now` seen; only increases.
    now: Tick,
    /// Work done so far and the most one call did; cells, for `next_deadline`'s `&self` scan.
    work: Cell<u64>,
    max_work: Cell<u64>,
    stats: Stats,
}

impl<T> HashedWheel<T> {
    /// The default ring size, 2^16 slots: at 1 ms per tick one revolution is about 65 s, so
    /// request and idle timeouts fire from their slot in O(1), for 256 KiB of slot tails.
    ///
    /// ```
    /// let wheel: tickwheel::HashedWheel<u64> = tickwheel::HashedWheel::new();
    /// assert_eq!(wheel.slots(), tickwheel::HashedWheel::<u64>::DEFAULT_SLOTS);
    /// ```
    pub const DEFAULT_SLOTS: usize = 1 << 16;

    /// An empty, unbounded wheel of [`DEFAULT_SLOTS`](Self::DEFAULT_SLOTS) slots at tick 0.
    ///
    /// ```
    /// let wheel: tickwheel::HashedWheel<u64> = tickwheel::HashedWheel::new();
    /// assert_eq!(wheel.slots(), 1 << 16);
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

    /// The most work units one call can do on this wheel now, the bound that
    /// [`Stats::max_call_work`] stays under: one pass over the ring's bitmap (a unit per word,
    /// plus one for a pass that starts mid-word), a slot visited, a timer fired, and the heap's
    /// own bound, which grows with the most timers it has held (57 units at a million). The
    /// heap's renumbering, once per `2^32` timers placed in it, is left out.
    ///
    /// ```
    /// use tickwheel::{FromOptions, HashedWheel, Options, Timer};
    ///
    /// let mut wheel = HashedWheel::from_options(Options::new().hashed_slots(64)).unwrap();
    /// for i in 0..1_000u64 {
    ///     wheel.insert(i * 1_000, i).unwrap();
    /// }
    /// while wheel.poll(u64::MAX).is_some() {}
    /// assert!(wheel.stats().max_call_work <= wheel.max_call_work_bound());
    /// ```
    #[must_use]
    pub fn max_call_work_bound(&self) -> u64 {
        self.occupied.len() as u64 + 1 + 2 + self.far.work_bound().unwrap_or(0)
    }

    fn with(options: Options) -> Self {
        let n = options.hashed_slots;
        let pre = options
            .preallocate
            .min(options.capacity.unwrap_or(usize::MAX));
        Self {
            slab: Slab::new(options.capacity, pre),
            slots: vec![Slot::EMPTY; n].into_boxed_slice(),
            occupied: vec![0; n.div_ceil(64)].into_boxed_slice(),
            mask: n as u64 - 1,
            far: IndexedHeap::with(Options::new().start(options.start)),
            far_room: pre,
            in_ring: 0,
            bound: Cell::new(0),
            fired_since_look: false,
            cursor: options.start,
            now: options.start,
            work: Cell::new(0),
            max_work: Cell::new(0),
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

    /// Whether the ring takes `deadline`: within one revolution after the cursor.
    #[inline(always)]
    fn in_reach(&self, deadline: Tick) -> bool {
        deadline > self.cursor && deadline - self.cursor <= self.mask + 1
    }

    /// Places timer `index`, due at `deadline`: in the ring if it is due within a revolution
    /// after the cursor, in the far heap otherwise.
    #[inline(never)]
    fn place(&mut self, index: u32, deadline: Tick) {
        if self.in_reach(deadline) {
            let s = self.slot_of(deadline);
            if self.slots[s].is_empty() {
                self.occupied[s / 64] |= 1 << (s % 64);
            }
            self.slots[s].push_back(&mut self.slab, index);
            self.slab.at_mut(index).far = false;
            self.in_ring += 1;
            // An unknown bound (at or below the cursor) stays unknown; no branch on the hot path.
            self.bound.set(self.bound.get().min(deadline));
        } else {
            self.place_far(index, deadline);
        }
    }

    /// [`place`](Self::place) into the far heap, out of line so that the heap's code does not
    /// weigh on the ring's path.
    #[inline(never)]
    fn place_far(&mut self, index: u32, deadline: Tick) {
        if self.far_room != 0 {
            // The first far timer: the heap reserves the preallocation now, so that none of
            // its inserts copies its arrays, and a wheel that never needs it holds none.
            let room = core::mem::take(&mut self.far_room);
            self.far = IndexedHeap::with(Options::new().start(self.now).preallocate(room));
        }
        let Ok(key) = self.far.insert(deadline, index) else {
            unreachable!("the far heap is unbounded and holds fewer timers than the slab");
        };
        self.far_done();
        let e = self.slab.at_mut(index);
        (e.far, e.prev, e.next) = (true, key.index, key.generation);
    }

    /// Ends a call on the far heap: counts its work.
    #[inline]
    fn far_done(&mut self) {
        self.add_work(self.far.last_call_work());
    }

    /// Takes timer `index` out of its place.
    #[inline]
    fn unplace(&mut self, index: u32) {
        let e = self.slab.at(index);
        if e.far {
            let out = self.far.cancel(e.far_key());
            debug_assert_eq!(out, Some(index), "a far timer not in the far heap");
            self.far_done();
            return;
        }
        self.unlink_ring(self.slot_of(e.deadline), index);
        // `bound` stays a valid lower bound.
    }

    /// Unlinks ring timer `index` from slot `s`; returns whether that emptied the slot.
    fn unlink_ring(&mut self, s: usize, index: u32) -> bool {
        self.slots[s].unlink(&mut self.slab, index);
        self.in_ring -= 1;
        let emptied = self.slots[s].is_empty();
        if emptied {
            self.occupied[s / 64] &= !(1 << (s % 64));
        }
        emptied
    }

    /// The first busy slot at or after ring position `start`, looking at most `len` slots
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

    /// The first ring deadline, from one pass over the bitmap, which refreshes the bound.
    fn ring_first(&self) -> Option<Tick> {
        let first = self.cursor + 1;
        let dist = self.next_occupied(self.slot_of(first), self.slots.len())?;
        let t = first + dist as u64;
        self.bound.set(t);
        Some(t)
    }

    fn fire(&mut self, index: u32) -> Expired<T> {
        self.stats.fired += 1;
        self.fired_since_look = true;
        take(&mut self.slab, index)
    }

    #[inline(never)]
    fn poll_due(&mut self) -> Option<Expired<T>> {
        let start = self.work.get();
        let fired = self.sweep();
        self.note_work(start);
        fired
    }

    /// [`poll_due`](Self::poll_due)'s work: the ring fires the deadlines before the far heap's
    /// first due one (older first at a tie), found in one pass over the bitmap; then the heap.
    #[inline(always)]
    fn sweep(&mut self) -> Option<Expired<T>> {
        let now = self.now;
        let far_due = self.far.next_deadline().filter(|&f| f <= now);
        let end = far_due.map_or(now, |f| f.saturating_sub(1));
        let (b, mut looked) = (self.bound.get(), false);
        if end > self.cursor {
            // Unless the ring is empty or its known bound is past `end`: look.
            if self.in_ring != 0 && (b <= self.cursor || b <= end) {
                looked = true;
                if let Some(t) = self.ring_first().filter(|&t| t <= end) {
                    return Some(self.fire_slot(t));
                }
            }
            self.cursor = end; // nothing in the ring up to `end`
        }
        if let Some(expired) = far_due.and_then(|_| self.far.poll(now)) {
            self.far_done();
            return Some(self.fire(expired.payload));
        }
        // A look found nothing: an early `next_deadline`, unless this ends a run of fires.
        if !core::mem::take(&mut self.fired_since_look) && looked {
            self.stats.empty_wakeups += 1;
        }
        None
    }

    /// Fires the head of the slot of tick `t`, the first busy one after the cursor; the cursor
    /// moves onto the tick before it, and onto `t` once the slot is empty.
    fn fire_slot(&mut self, t: Tick) -> Expired<T> {
        let s = self.slot_of(t);
        if t > self.cursor + 1 {
            self.stats.slots_scanned += 1;
            self.add_work(1);
            self.cursor = t - 1;
        }
        let Some(index) = self.slots[s].head(&self.slab) else {
            unreachable!("the bitmap marks an empty slot");
        };
        if self.unlink_ring(s, index) {
            self.cursor = t;
        }
        self.add_work(1);
        self.fire(index)
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
                let start = self.work.get();
                self.place(key.index, deadline);
                self.note_work(start);
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
        let start = self.work.get();
        self.unplace(index);
        self.note_work(start);
        self.stats.cancelled += 1;
        Some(self.slab.remove_at(index).payload)
    }

    fn reset(&mut self, key: TimerKey, deadline: Tick) -> Result<(), StaleKeyError> {
        let index = self.slab.resolve(key).ok_or(StaleKeyError { key })?;
        let start = self.work.get();
        let e = self.slab.at(index);
        if e.far && !self.in_reach(deadline) {
            // From the far heap to the far heap: one sift there.
            let moved = self.far.reset(e.far_key(), deadline);
            debug_assert!(moved.is_ok(), "a far timer not in the far heap");
            self.far_done();
            self.slab.at_mut(index).deadline = deadline;
        } else {
            self.unplace(index);
            self.slab.at_mut(index).deadline = deadline;
            self.place(index, deadline);
        }
        self.note_work(start);
        self.stats.reset += 1;
        Ok(())
    }

    #[inline]
    fn poll(&mut self, now: Tick) -> Option<Expired<T>> {
        self.now = self.now.max(now);
        if self.cursor >= self.now && self.far.next_deadline().map_or(true, |f| f > self.now) {
            return None; // idle turn, inlined: nothing new can be due
        }
        self.poll_due()
    }

    fn next_deadline(&self) -> Option<Tick> {
        let b = self.bound.get();
        if b > self.cursor && self.in_ring != 0 {
            return Some(self.far.next_deadline().map_or(b, |f| f.min(b))); // known: no work
        }
        let start = self.work.get();
        let ring = if self.in_ring == 0 {
            None
        } else {
            self.ring_first()
        };
        self.note_work(start);
        ring.into_iter().chain(self.far.next_deadline()).min()
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
        Some(self.max_call_work_bound())
    }

    fn stats(&self) -> Stats {
        Stats {
            max_call_work: self.max_work.get(),
            ..self.stats
        }
    }

    fn drain(&mut self) -> Vec<Expired<T>> {
        // Firing order: by deadline, the far heap's (older) before the ring's at a tie, and
        // each in its own order, which a stable sort keeps.
        let far = self
            .far
            .drain()
            .into_iter()
            .map(|e| (e.deadline, false, e.payload));
        let mut order: Vec<(Tick, bool, u32)> = far.collect();
        for index in self.slots.iter().flat_map(|slot| slot.collect(&self.slab)) {
            order.push((self.slab.at(index).deadline, true, index));
        }
        order.sort_by_key(|&(deadline, in_ring, _)| (deadline, in_ring));
        self.slots.fill(Slot::EMPTY);
        self.occupied.fill(0);
        self.in_ring = 0;
        self.stats.drained += order.len() as u64;
        order
            .into_iter()
            .map(|(_, _, index)| take(&mut self.slab, index))
            .collect()
    }

    fn shrink_to_fit(&mut self) {
        // The ring is the fixed floor; slots link through slab indices, which do not move,
        // and the far heap keeps its keys.
        self.slab.shrink_to_fit();
        self.far.shrink_to_fit();
    }

    fn allocated_bytes(&self) -> usize {
        self.slab.allocated_bytes()
            + self.slots.len() * core::mem::size_of::<Slot>()
            + self.occupied.len() * 8
            + self.far.allocated_bytes()
    }

    fn name(&self) -> &'static str {
        "hashed"
    }

    fn check_invariants(&self) {
        self.slab.check();
        self.far.check_invariants();
        assert!(self.cursor <= self.now, "cursor ahead of now");
        let (b, mut in_ring) = (self.bound.get(), 0);
        for (s, slot) in self.slots.iter().enumerate() {
            let bit = self.occupied[s / 64] >> (s % 64) & 1 == 1;
            assert_eq!(bit, !slot.is_empty(), "occupancy bit of slot {s}");
            // One revolution after the cursor holds one deadline per slot.
            for i in slot.collect(&self.slab) {
                let (d, far) = (self.slab.at(i).deadline, self.slab.at(i).far);
                let home = self.in_reach(d) && self.slot_of(d) == s;
                assert!(home && !far, "slot {s} holds {d}, cursor {}", self.cursor);
                assert!(b <= self.cursor || b <= d, "ring bound {b} above {d}");
                in_ring += 1;
            }
        }
        assert_eq!(in_ring, self.in_ring, "in_ring is wrong");
        let mut in_far = 0;
        for (index, e) in self.slab.occupied().filter(|(_, e)| e.far) {
            let found = (self.far.get(e.far_key()), self.far.deadline(e.far_key()));
            assert_eq!(found, (Some(&index), Some(e.deadline)), "far timer {index}");
            in_far += 1;
        }
        assert_eq!(in_far, self.far.len(), "the far heap holds a timer twice");
        assert_eq!(in_ring + in_far, self.slab.len(), "a timer in no place");
    }
}
#[cfg(test)]
mod tests {
    use super::*;

    /// A far jump past many firing ticks costs one heap removal per fired timer: the next
    /// deadline is the far heap's first, with no pass over the ring to find it. 20,000 timers
    /// over 2^33 ticks, each its own firing tick (a pass over the default ring is 1,025 units).
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
        let heap = wheel.far.work_bound().unwrap();
        assert!(
            per_fire <= heap && heap < 100,
            "{per_fire} units of work per fired timer (a heap removal: at most {heap})"
        );
        assert!(wheel.stats().max_call_work <= wheel.max_call_work_bound());
    }

    /// A slot full of due timers fires a timer per poll: 10,000 timers at one tick (with timers
    /// a lap later among them, some cancelled mid-way, more inserted at that tick meanwhile)
    /// fire in first-in first-out order, no poll doing more than a few units.
    #[test]
    fn a_crowded_slot_fires_a_timer_per_poll() {
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
                // Cancel timers not fired yet, among them the next one.
                for &k in &keys[10..20] {
                    assert!(wheel.cancel(k).is_some());
                }
                wheel.insert(100, 20_000).unwrap();
            }
        }
        wheel.check_invariants();
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

    /// The work counter sees a poll's pass over the ring's bitmap: a timer a revolution ahead
    /// is found after a look at every word.
    #[test]
    fn the_work_counter_sees_a_pass_over_the_ring() {
        let mut wheel = HashedWheel::new();
        let n = HashedWheel::<u64>::DEFAULT_SLOTS as u64;
        wheel.insert(n - 1, 1).unwrap();
        assert_eq!(wheel.stats().max_call_work, 0);
        assert_eq!(wheel.poll(n).map(|e| e.payload), Some(1));
        let words = n / 64;
        let max = wheel.stats().max_call_work;
        assert!(max >= words, "a pass over {words} words counted {max}");
        assert!(max <= wheel.max_call_work_bound());
    }

    /// Random inserts, cancels, resets and polls on a 64-slot ring, many timers sharing a few
    /// far deadlines (herds) and polls jumping up to many revolutions: the invariants hold
    /// after every call, timers fire in the contract's order, and no call does more work than
    /// the stated bound, which some poll reaches.
    #[test]
    fn no_call_exceeds_the_bound_on_random_operations() {
        let mut wheel = HashedWheel::from_options(Options::new().hashed_slots(64)).unwrap();
        let mut next = crate::test_rng::xorshift(0x9E37_79B9_7F4A_7C15);
        let mut keys = Vec::new();
        let mut now = 0u64;
        for round in 0..200_000u64 {
            let r = next();
            match r % 10 {
                0..=3 => {
                    let d = match r % 7 {
                        0 => now + 5_000,           // a herd far ahead
                        1 => now.saturating_sub(3), // overdue
                        2 => u64::MAX,
                        3 => now + 65 + (r >> 20) % 200, // just past the ring
                        _ => now + 1 + (r >> 20) % 500,
                    };
                    keys.push(wheel.insert(d, round).unwrap());
                }
                4 if !keys.is_empty() => {
                    let k = keys.swap_remove((r >> 8) as usize % keys.len());
                    wheel.cancel(k);
                }
                5 if !keys.is_empty() => {
                    let k = keys[(r >> 8) as usize % keys.len()];
                    let _ = wheel.reset(k, now + (r >> 24) % 3_000);
                }
                _ => {
                    now += match r % 97 {
                        0 => 10_000,
                        _ => (r >> 30) % 4,
                    };
                    let next = wheel.next_deadline();
                    let mut last = 0;
                    while let Some(e) = wheel.poll(now) {
                        assert!(e.deadline <= now, "fired early");
                        assert!(e.deadline >= last, "out of order");
                        assert!(next.is_some_and(|n| n <= e.deadline), "late next_deadline");
                        last = e.deadline;
                    }
                }
            }
            if round % 1_000 == 0 {
                wheel.check_invariants();
            }
            assert!(
                wheel.stats().max_call_work <= wheel.max_call_work_bound(),
                "a call did {} units, over the bound {}",
                wheel.stats().max_call_work,
                wheel.max_call_work_bound()
            );
        }
        wheel.check_invariants();
        // Some call does a whole pass over the bitmap and more: the bound is loose by at most
        // part of one heap call.
        let heap = wheel.far.work_bound().unwrap();
        assert!(
            wheel.stats().max_call_work + heap >= wheel.max_call_work_bound(),
            "the most work in a call, {}, is far below the bound {}",
            wheel.stats().max_call_work,
            wheel.max_call_work_bound()
        );
    }
}
