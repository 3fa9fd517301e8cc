//! `HashedWheel`: a ring of `2^k` one-tick slots, slot `deadline mod 2^k`, holding the timers due
//! within one revolution of the cursor; timers due later wait in [`far`], grouped by deadline,
//! and join the ring a whole deadline at a time as the cursor comes within a revolution.
//!
//! Because the ring only holds the next revolution, a slot holds a single deadline: when its
//! tick comes, all of it is due, and it fires from its head a timer per poll. Netty's
//! `HashedWheelTimer` (scheme 6 of Varghese & Lauck) keeps every lap in the slot instead, and a
//! visit walks past all later-lap timers in it; here no call walks past a timer it does not
//! fire. An occupancy bitmap finds the next non-empty slot, and the least far deadline is the
//! top of the far store's heap, so a far jump costs no ring pass per firing tick either.
//!
//! # Invariants
//! - Every timer is in exactly one place: the due queue when `deadline <= cursor`; the ring
//!   when `cursor < deadline <= horizon`; the far store when `deadline > horizon`. The horizon is
//!   `cursor + 2^k`, or one less than the least far deadline if that is smaller. It never
//!   decreases (a far insert is past it, and the least far deadline only grows otherwise), so
//!   a timer's deadline alone says where it is.
//! - Each slot holds timers of one deadline, in insertion order, so equal deadlines leave first
//!   in, first out; a slot's bit is set iff it is non-empty.
//! - `in_wheel` counts the timers in the ring and the far store; `busy_slots` the non-empty
//!   slots.
//! - `bound` is at most every deadline in the ring and the far store. It says something only
//!   while it is above the cursor, so one at or below the cursor means "unknown".
//! - `cursor <= now`; the ready list is empty whenever the cursor moves.
//!
//! # Costs
//! | operation | cost |
//! |---|---|
//! | insert, cancel, reset | O(1) in the ring; far: O(1) into an existing group, O(log g) otherwise (g far deadlines); overdue O(log n) |
//! | poll | O(1) per fired timer, plus at most one pass over the ring's bitmap and twice [`far::MOVES_PER_STEP`] far groups moved, O(log g) each |
//! | poll with nothing due | O(1) once the lower bound is known |
//! | `next_deadline` | O(1) when known; otherwise one pass over the bitmap |
//! | worst single call ([`Stats::max_call_work`]) | a poll, [`HashedWheel::max_call_work_bound`]: `2^k / 64 + 1 + 2 · MOVES_PER_STEP + 2` units |
//! | memory | one 32 B slab slot per timer (u64 payload); 4 B per ring slot + 1 bit; about 45 B per far deadline |
//!
//! A poll does at most one pass over the bitmap: a pass that finds nothing ends the poll
//! (everything up to `now` is empty) or means the ring is empty up to the horizon, and then
//! the next pass starts at the slot just pulled in. The cursor moves at most twice in a poll
//! that fires: onto the tick before the slot it fires from, and onto that tick once the slot
//! is empty.
//!
//! The default ring is 2^16 slots: at 1 ms per tick one revolution is ~65 s, so request and
//! idle timeouts go straight into their slot and fire from it in O(1), for 256 KiB of slot
//! heads. A ring shorter than the common timeout keeps every call bounded but sends those
//! timers through the far store. [`Options::preallocate`] also reserves the far store's table
//! for as many deadlines, so that no insert up to that many rehashes it.

use alloc::vec;
use alloc::vec::Vec;
use core::cell::Cell;

mod due;
mod entry;
mod far;
mod list;
mod ordered;
mod paged;
mod slot;

use crate::slab::Slab;
use crate::{
    ConfigError, Expired, FromOptions, InsertError, Options, StaleKeyError, Stats, Tick, Timer,
    TimerKey,
};
use due::Due;
use entry::{take, Entry};
use far::Far;
use slot::Slot;

/// A hashed timing wheel: a ring of `2^k` one-tick slots (2^16 by default: about 65 s of
/// 1 ms ticks) for the timers due within one revolution, and a far store grouped by deadline
/// for the rest, which joins the ring a whole deadline at a time as the cursor comes near.
///
/// A slot holds a single deadline, so when its tick comes all of it is due and it fires a
/// timer per poll; an occupancy bitmap finds the next busy slot. Unlike Netty's
/// `HashedWheelTimer`, which keeps every lap in a slot and walks past the later ones, no call
/// here walks past a timer it does not fire, and every call but `drain` and `shrink_to_fit`
/// does at most [`max_call_work_bound`](Self::max_call_work_bound) units of work (1,035 for
/// the default ring). Pick it when most timeouts are shorter than one revolution.
///
/// | operation | cost |
/// |---|---|
/// | insert, cancel, reset | O(1) in the ring; a far deadline O(log g) for g far deadlines (O(1) into an existing one) |
/// | poll per fired timer | O(1), plus at most one pass over the ring's bitmap |
/// | poll with nothing due | O(1) once the next deadline is known |
/// | memory | a 32 B slab slot per timer (`u64` payload), 4 B and a bit per ring slot (256 KiB by default), about 45 B per far deadline |
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
/// // The default ring's bound on one call's work.
/// assert_eq!(HashedWheel::<()>::new().max_call_work_bound(), 1_035);
/// ```
pub struct HashedWheel<T> {
    slab: Slab<Entry<T>>,
    slots: Box<[Slot]>,
    /// Bit `s % 64` of word `s / 64` is set iff slot `s` is non-empty.
    occupied: Box<[u64]>,
    /// `slots.len() - 1`.
    mask: u64,
    due: Due,
    far: Far,
    /// Timers in the ring and the far store.
    in_wheel: usize,
    /// Non-empty slots.
    busy_slots: usize,
    /// A lower bound on every deadline in the ring and the far store, known only while above
    /// the cursor. A cache that `next_deadline` may fill in through `&self`.
    bound: Cell<Tick>,
    /// A timer fired since the last sweep that found nothing (for [`Stats::empty_wakeups`]).
    fired_since_look: bool,
    /// The cursor: every timer due at or before it has left the ring. Only increases.
    cursor: Tick,
    /// Latest `now` seen; only increases.
    now: Tick,
    /// Work done so far, and the most one call did (see [`Stats::max_call_work`]); cells, so
    /// that `next_deadline`'s scan through `&self` counts too.
    work: Cell<u64>,
    max_work: Cell<u64>,
    stats: Stats,
}

use alloc::boxed::Box;

impl<T> HashedWheel<T> {
    /// The default ring size, 2^16 slots: at 1 ms per tick one revolution is about 65 s, so
    /// request and idle timeouts go straight into their slot and fire from it in O(1), for
    /// 256 KiB of slot heads. A shorter ring keeps every call bounded but sends longer
    /// timeouts through the far store.
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

    /// The most work units one call can do on this wheel, the bound that
    /// [`Stats::max_call_work`] stays under. The largest is a poll's: one pass over the
    /// ring's bitmap (a unit per word, plus one for a pass that starts mid-word), the cursor
    /// moved twice with up to four far groups pulled in each time (a unit each), one slot
    /// visited and one timer fired.
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
        self.occupied.len() as u64 + 1 + 2 * far::MOVES_PER_STEP as u64 + 2
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
            due: Due::default(),
            far: Far::with_capacity(pre),
            in_wheel: 0,
            busy_slots: 0,
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

    /// The last tick the ring holds: a revolution past the cursor, or just before the least far
    /// deadline if that is nearer (see the module invariants).
    #[inline]
    fn horizon(&self) -> Tick {
        let lap = self.cursor.saturating_add(self.mask + 1);
        match self.far.first() {
            Some(first) => lap.min(first - 1),
            None => lap,
        }
    }

    #[inline]
    fn place(&mut self, index: u32, deadline: Tick) {
        if deadline <= self.cursor {
            self.place_due(index);
            return;
        }
        if deadline <= self.horizon() {
            let s = self.slot_of(deadline);
            if self.slots[s].is_empty() {
                self.occupied[s / 64] |= 1 << (s % 64);
                self.busy_slots += 1;
            }
            self.slots[s].push_back(&mut self.slab, index);
        } else {
            self.place_far(index, deadline);
        }
        self.in_wheel += 1;
        // An unknown bound (at or below the cursor) stays unknown; no branch on the hot path.
        self.bound.set(if self.in_wheel == 1 {
            deadline
        } else {
            self.bound.get().min(deadline)
        });
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

    /// [`place`](Self::place) for a deadline past the horizon, out of line for the same reason.
    #[inline(never)]
    fn place_far(&mut self, index: u32, deadline: Tick) {
        self.far.push(&mut self.slab, index, deadline);
    }

    #[inline]
    fn unplace(&mut self, index: u32, deadline: Tick) {
        if deadline <= self.cursor {
            self.due.remove(&mut self.slab, index, self.cursor);
            return;
        }
        if deadline <= self.horizon() {
            let s = self.slot_of(deadline);
            self.slots[s].unlink(&mut self.slab, index);
            if self.slots[s].is_empty() {
                self.occupied[s / 64] &= !(1 << (s % 64));
                self.busy_slots -= 1;
            }
        } else {
            self.far.remove(&mut self.slab, index, deadline);
        }
        self.in_wheel -= 1;
        // `bound` stays a valid lower bound.
    }

    /// Moves the lists of far deadlines that came within a revolution of the cursor into their
    /// slots, at most [`far::MOVES_PER_STEP`] of them. Each slot is empty: the ring holds no
    /// deadline at or past the least far one, and none a revolution or more before it.
    #[inline]
    fn pull_far(&mut self) {
        let lap = self.cursor.saturating_add(self.mask + 1);
        for _ in 0..far::MOVES_PER_STEP {
            match self.far.first() {
                Some(first) if first <= lap => {}
                _ => return,
            }
            self.move_first_far();
        }
    }

    #[inline(never)]
    fn move_first_far(&mut self) {
        let Some((deadline, list)) = self.far.pop_first() else {
            return;
        };
        self.add_work(1);
        let s = self.slot_of(deadline);
        debug_assert!(self.slots[s].is_empty(), "a far list met an occupied slot");
        self.slots[s] = Slot::from_list(list, &mut self.slab);
        self.occupied[s / 64] |= 1 << (s % 64);
        self.busy_slots += 1;
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

    /// The earliest deadline in the ring and the far store: the first occupied slot after the
    /// cursor (its one deadline), or else the least far deadline.
    fn earliest(&self) -> Option<Tick> {
        if self.busy_slots != 0 {
            let first = self.cursor + 1;
            let span = (self.horizon() - self.cursor) as usize;
            if let Some(d) = self.next_occupied(self.slot_of(first), span) {
                return Some(first + d as u64);
            }
        }
        self.far.first()
    }

    /// The cached lower bound, computing it when unknown.
    fn lower_bound(&self) -> Option<Tick> {
        if self.in_wheel == 0 {
            return None;
        }
        let b = self.bound.get();
        if b > self.cursor {
            return Some(b);
        }
        let b = self.earliest()?;
        self.bound.set(b);
        Some(b)
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

    /// Moves the cursor to `to` and pulls in the far deadlines that came within a revolution.
    #[inline]
    fn advance(&mut self, to: Tick) {
        self.cursor = to;
        self.pull_far();
    }

    /// [`poll`](Timer::poll) past the idle check: fires, or sweeps the cursor towards `now`.
    #[inline(never)]
    fn poll_due(&mut self) -> Option<Expired<T>> {
        let start = self.work.get();
        let fired = self.sweep();
        self.note_work(start);
        fired
    }

    /// [`poll_due`](Self::poll_due)'s work. Each pass of the loop fires, returns, or moves the
    /// cursor past a stretch it has seen empty, and at most two of them look at the ring.
    #[inline(always)]
    fn sweep(&mut self) -> Option<Expired<T>> {
        let now = self.now;
        loop {
            if let Some(index) = self.due.pop(&mut self.slab) {
                return Some(self.fire(index));
            }
            if self.cursor >= now {
                return self.found_nothing();
            }
            if self.in_wheel == 0 || self.bound.get() > now {
                // Nothing can be due yet: `next_deadline` answered no earlier than this.
                self.advance(now);
                return None;
            }
            if self.busy_slots == 0 {
                // Only far timers: skip to just before the first, which then joins the ring.
                let to = self.far.first().map_or(now, |first| now.min(first - 1));
                self.advance(to);
                continue;
            }
            let end = now.min(self.horizon());
            let first = self.cursor + 1;
            let span = (end - self.cursor) as usize;
            let Some(dist) = self.next_occupied(self.slot_of(first), span) else {
                self.advance(end);
                continue;
            };
            // Slot of tick `t` holds timers due at `t` only: fire its head.
            let t = first + dist as u64;
            let s = self.slot_of(t);
            if t > first {
                self.stats.slots_scanned += 1;
                self.add_work(1);
                self.advance(t - 1);
            }
            let index = self.slots[s].pop_front(&mut self.slab)?;
            self.in_wheel -= 1;
            if self.slots[s].is_empty() {
                self.occupied[s / 64] &= !(1 << (s % 64));
                self.busy_slots -= 1;
                self.advance(t);
            }
            self.add_work(1);
            return Some(self.fire(index));
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
        let mut order = self.due.collect(&self.slab, self.cursor);
        for list in self.slots.iter() {
            order.extend(list.collect(&self.slab));
        }
        for (_, list) in self.far.lists() {
            order.extend(list.collect(&self.slab));
        }
        // Each list holds one deadline, so a stable sort keeps first-in first-out.
        order.sort_by_key(|&i| self.slab.at(i).deadline);
        self.due = Due::default();
        self.far.clear();
        self.slots.fill(Slot::EMPTY);
        self.occupied.fill(0);
        self.in_wheel = 0;
        self.busy_slots = 0;
        self.stats.drained += order.len() as u64;
        order
            .into_iter()
            .map(|index| take(&mut self.slab, index))
            .collect()
    }

    fn shrink_to_fit(&mut self) {
        // The ring is the fixed floor; slots link through slab indices, which do not move.
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
        assert!(self.cursor <= self.now, "cursor ahead of now");
        let horizon = self.horizon();
        assert!(horizon >= self.cursor, "horizon behind the cursor");
        let mut in_ring = 0;
        let mut busy = 0;
        for (s, list) in self.slots.iter().enumerate() {
            let bit = self.occupied[s / 64] & (1 << (s % 64)) != 0;
            assert_eq!(bit, !list.is_empty(), "occupancy bit of slot {s} is wrong");
            let entries = list.collect(&self.slab);
            let Some(&head) = entries.first() else {
                continue;
            };
            let d = self.slab.at(head).deadline;
            assert!(
                d > self.cursor && d <= horizon,
                "slot {s} holds {d}, outside the ring's ({}, {horizon}]",
                self.cursor
            );
            assert_eq!(self.slot_of(d), s, "timer {d} in the wrong slot");
            let b = self.bound.get();
            assert!(b <= d, "wheel lower bound {b} above deadline {d}");
            for &i in &entries {
                assert_eq!(self.slab.at(i).deadline, d, "slot {s} holds two deadlines");
            }
            in_ring += entries.len();
            busy += 1;
        }
        assert_eq!(busy, self.busy_slots, "busy_slots is wrong");
        let in_far = self.far.check(&self.slab);
        assert_eq!(in_ring + in_far, self.in_wheel, "in_wheel is wrong");
        if let Some(first) = self.far.first() {
            assert!(first > horizon, "a far deadline at or before the horizon");
            assert!(
                self.bound.get() <= first,
                "wheel lower bound above a far deadline"
            );
        }
        let due = self.due.collect(&self.slab, self.cursor).len();
        assert_eq!(
            due + in_ring + in_far,
            self.slab.len(),
            "a timer is in no place or in two"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A far jump past many firing ticks costs a few units per fired timer: the next deadline
    /// is the far store's first key, with no pass over the ring to find it. 20,000 timers over
    /// 2^33 ticks, each its own firing tick (a pass over the default ring is 2,049 units).
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
        assert!(per_fire < 20, "{per_fire} units of work per fired timer");
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
                        3 => now + 65 + (r >> 20) % 200, // just past the ring: many far groups
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
        assert_eq!(
            wheel.stats().max_call_work,
            wheel.max_call_work_bound(),
            "the bound is reached here, so it is tight"
        );
    }
}
