//! `HierarchicalWheel`: six levels of 64 slots, each level 64× coarser, with an occupancy
//! bitmap per level, cascading, and an ordered overflow beyond the top level.
//!
//! The cursor `elapsed` is the last tick fully swept. A timer due after it sits in the slot
//! chosen by [`level`](super::level) (the highest 6-bit group where deadline and cursor differ);
//! the earliest timer is therefore in the first set bit of the lowest non-empty level, found
//! with one `trailing_zeros`. When the cursor reaches a coarse slot, its timers move down
//! (cascade) to finer levels; a level-0 slot holds exactly one tick and becomes the ready
//! bucket whole. Timers behind the cursor (inserted or reset into the past) wait in the ordered
//! overdue store; timers more than one whole-wheel span (2^36 ticks) away wait in the ordered
//! overflow and enter the levels when the cursor enters their span.
//!
//! Slots are [`bucket`](super::bucket)s: vectors of `(index, seq, low deadline bits)` references into the slab with
//! lazy deletion. Cancel and reset write only the timer's own slab entry (and a counter), never
//! a neighbour; a cascade or a fire walks a vector, so the misses on the entries it reads
//! overlap instead of following a linked list one miss at a time.
//!
//! A reset that pushes a timer later while its reference sits in a slot of level 1 or higher
//! moves it *in place* ([`moved`]): the entry records the new deadline, the
//! reference stays as the timer's home, and the slot is marked. A marked slot of level 2 or
//! higher carries its references down unread (a home goes to the place of its own deadline,
//! which stays marked); a marked level-1 slot reads the entries and places each moved timer
//! where its deadline now says, so the reads come a 64-tick slot at a time. A keep-alive timer
//! refreshed every second with a 30 s timeout is then placed about once per 30 resets and
//! leaves no dead references. Where it comes down, references pushed meanwhile may follow it
//! in first-in first-out order, so that slot is marked unsorted; the mark travels down with
//! cascades, and a marked level-0 slot is sorted by `seq` when it comes due.
//!
//! Any other `reset` does not push at once either: its placement into the levels waits in the
//! [`nursery`](super::nursery), a ring of placements in `seq` order, pushed 32 at a time. At a
//! million timers a reset's one slab access usually misses; keeping the push out of that path
//! leaves few enough instructions after the miss for the CPU to start the next resets' misses
//! under it (see `docs/bench-profile.md`). Inserts queue behind a non-empty nursery, and once
//! a compaction shows that dead references pile up, the nursery holds inserts too (up to 1024
//! placements, the older half pushed when full) for as long as at least a quarter of what it
//! pushes has died meanwhile: a request timeout cancelled within a few hundred operations then
//! never reaches a bucket, so it leaves no dead reference for a compaction to read.
//!
//! # Invariants
//! - Every pending timer has exactly one live reference, in the place its deadline and
//!   `elapsed` determine: the overdue store (`deadline < elapsed`), the ready bucket
//!   (`deadline == elapsed`), level `level_for(elapsed, d)` slot `slot_for(d, level)`, or the
//!   overflow. The two ordered stores are keyed by `(deadline, seq)` and removed from eagerly;
//!   buckets keep dead references, counted (see [`bucket`](super::bucket)); every push that
//!   takes a new chunk (the only way the arena grows) finds them within three times the
//!   pending timers (plus a slack), compacting first if it must, while cancels and fires leave
//!   them where they lie. A placement bound for a level slot may still wait in the nursery,
//!   which holds only such placements, in `seq` order, behind every reference already pushed;
//!   while it is non-empty, every placement into the levels joins it. Every deadline it holds
//!   is after `elapsed`: `poll` pushes them all before the cursor could reach one. A timer
//!   whose placement it holds is never moved in place.
//! - A timer moved in place has its one live reference (its home) in a slot of level 1 or
//!   higher whose moved mark is set, at or before its deadline ([`moved`]).
//! - A level's occupancy bit is set iff its slot's bucket holds any reference.
//! - Equal deadlines leave first-in first-out: every insert and reset takes a new `seq`, and
//!   references to one deadline are pushed in `seq` order (cascades keep their order), except
//!   in a slot marked unsorted, which is sorted by `seq` before it is handed out. Seqs stay
//!   below 2^31 (the top bit marks a moved entry); before they would reach it, every pending
//!   timer is renumbered in firing order and every place rebuilt.
//! - `elapsed <= now`; the ready bucket holds no live reference whenever `elapsed` moves.
//! - `hint` is at most every pending deadline, so an idle `poll` is one comparison.
//!
//! # Costs
//! | operation | cost |
//! |---|---|
//! | insert | O(1) amortised: a few bit operations and a push at the end of a slot's vector, or into the nursery and later (if still pending) from there (a push that takes a chunk may compact first: amortised O(1) per dead reference it drops) |
//! | cancel, reset | O(1) amortised: the timer's own entry, a counter, and (reset) a push into the nursery, or for a later deadline nothing more; overdue or overflow: O(log n) |
//! | poll per fired timer | O(1) amortised: each timer cascades at most 5 times; dead references are skipped once; a marked level-1 slot reads one entry per reference (coarser marked slots carry theirs down unread); a slot marked unsorted is sorted (O(k log k)) |
//! | poll with nothing due, `next_deadline` | O(1): a comparison with the cached lower bound |
//! | jump of any length | O(levels) to find the next slot; no empty slot is visited |
//! | memory per timer | a 24 B slab slot (u64 payload) + a 12 B reference (up to 3× under churn: the arena grows only for a push that found them within that) + `Vec` growth; 12 KiB of buckets and an 8 KiB nursery per wheel |
//!
//! Follows tokio's time driver (6 × 64 slots at 1 ms, level from the highest differing bits)
//! and Varghese & Lauck's hierarchical scheme 7; lazy deletion as in asyncio's heap.

use alloc::collections::BTreeMap;
use alloc::vec::Vec;

use super::bucket::{Bucket, Chunks, Ref, CHUNK};
use super::level::{in_levels, level_for, slot_for, span_end, span_start, Levels, LEVELS, SLOTS};
use super::moved::{self, is_moved, MOVED};
use super::nursery::{Nursery, Placement, TAKE};
use crate::slab::Slab;
use crate::stamped::{self, Stamped};
use crate::{
    ConfigError, Expired, FromOptions, InsertError, Options, StaleKeyError, Stats, Tick, Timer,
    TimerKey,
};

/// Timers kept in order rather than in a slot: `(deadline, seq) -> index`.
type Ordered = BTreeMap<(Tick, u32), u32>;

/// Whether a timer due at `deadline` is kept in an ordered store (overdue or overflow) rather
/// than referenced from a bucket (the ready bucket or a level slot), with the cursor at
/// `elapsed`.
#[inline(always)]
fn in_ordered_store(elapsed: Tick, deadline: Tick) -> bool {
    deadline != elapsed && !in_levels(elapsed, deadline)
}

/// A push that takes a new chunk and finds the references above `COMPACT_RATIO` times the
/// pending timers (plus [`COMPACT_SLACK`]) compacts the buckets first. A compaction that reads
/// every reference's entry, live or dead, costs `r / (r - 1)` slab reads per dead reference it
/// drops: 2 at a ratio of 2, 1.5 at 3 (one that finds the dead gathered in a few slots reads
/// little more than those).
/// At 3, dead references may take up to 24 B per pending timer when the arena grows (12 B at 2);
/// `docs/bench-profile.md` has the measurements that chose it.
const COMPACT_RATIO: usize = 3;

/// Dead references tolerated beyond the live ones before the buckets are compacted.
const COMPACT_SLACK: usize = 64;

/// Seqs stay below this; the next insert or reset renumbers. Above it is the
/// [`MOVED`] bit.
const SEQ_LIMIT: u32 = MOVED - 1;

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
    slab: Slab<Stamped<T>>,
    levels: Levels,
    /// The chunks of every bucket: the levels' and `ready`.
    chunks: Chunks,
    /// Timers due exactly at `elapsed`, handed out from its cursor.
    ready: Bucket,
    /// Timers due before `elapsed`.
    overdue: Ordered,
    /// Timers due beyond the whole-wheel span that contains `elapsed`.
    overflow: Ordered,
    /// The cursor: every timer due at or before it has left the levels. Only increases.
    elapsed: Tick,
    /// Latest `now` seen; only increases; `elapsed <= now`.
    now: Tick,
    /// A lower bound on every pending deadline (`Tick::MAX` after a poll that found the wheel
    /// empty). Lowered by every placement, recomputed by every poll that finds nothing due; an
    /// idle poll and `next_deadline` answer from it without a scan.
    hint: Tick,
    /// A timer fired since `hint` was last recomputed (for [`Stats::empty_wakeups`]).
    fired_since_hint: bool,
    /// Next insertion sequence number (see the invariants).
    seq: u32,
    /// Placements into the levels not pushed yet, in `seq` order.
    nursery: Nursery,
    /// The ready bucket received a timer moved in place during a cascade and must be sorted
    /// by `seq` before it hands anything out.
    ready_unsorted: bool,
    /// Reused buffer for sorting a bucket.
    scratch: Vec<Ref>,
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
            chunks: Chunks::new(pre, LEVELS * SLOTS + 1),
            ready: Bucket::EMPTY,
            overdue: Ordered::new(),
            overflow: Ordered::new(),
            elapsed: options.start,
            now: options.start,
            hint: Tick::MAX,
            fired_since_hint: false,
            seq: 0,
            nursery: Nursery::new(),
            ready_unsorted: false,
            scratch: Vec::new(),
            stats: Stats::default(),
        }
    }

    /// Every pending timer's index, from its one live reference (for renumbering, drain and
    /// checks).
    fn all_indices(&self) -> Vec<u32> {
        let mut out: Vec<u32> = self.overdue.values().copied().collect();
        out.extend(
            self.nursery
                .iter()
                .filter(|p| stamped::is_live(&self.slab, p.index, p.seq))
                .map(|p| p.index),
        );
        let live = |b: &Bucket| self.chunks.collect_live(b, &self.slab);
        out.extend(live(&self.ready).iter().map(|r| r.index));
        for (_, _, bucket) in self.levels.buckets() {
            out.extend(live(bucket).iter().map(|r| r.index));
        }
        out.extend(self.overflow.values().copied());
        out
    }

    /// Every pending timer in firing order: by deadline, then `seq`.
    fn firing_order(&self) -> Vec<u32> {
        let mut order = self.all_indices();
        order.sort_unstable_by_key(|&i| moved::unpacked(self.slab.at(i), self.elapsed));
        order
    }

    /// Forgets every place (the slab keeps the timers), keeping allocations.
    fn clear_places(&mut self) {
        self.nursery.clear();
        self.ready_unsorted = false;
        self.levels.clear();
        self.ready = Bucket::EMPTY;
        self.chunks.reset();
        self.overdue.clear();
        self.overflow.clear();
    }

    /// Gives the pending timers seqs `0..n` in firing order and rebuilds every place (which
    /// drops every dead reference), once per 2^32 inserts and resets.
    #[cold]
    fn renumber(&mut self) {
        // The firing order takes the nursery's live placements in too.
        let order = self.firing_order();
        self.clear_places();
        self.place_in_order(&order);
    }

    /// Places the timers `order` lists (every pending one, in firing order, with every place
    /// cleared), giving them seqs `0..n`.
    fn place_in_order(&mut self, order: &[u32]) {
        for (n, &index) in order.iter().enumerate() {
            let e = self.slab.at_mut(index);
            moved::settle(e, self.elapsed);
            e.seq = n as u32;
            let deadline = e.deadline;
            self.place(index, deadline, n as u32);
        }
        self.seq = order.len() as u32;
    }

    /// Puts a timer's reference where its deadline says. The slot and ready cases are inline;
    /// the ordered stores (past deadlines, beyond the top level) are out of line, so the hot
    /// path saves no registers for them.
    #[inline(always)]
    fn place(&mut self, index: u32, deadline: Tick, seq: u32) {
        self.lower_hint(deadline);
        if in_levels(self.elapsed, deadline) {
            self.push_to_levels(index, deadline, seq);
        } else if deadline == self.elapsed {
            let r = Ref::to(index, seq, deadline);
            if Chunks::push_needs_chunk(&self.ready) {
                self.maybe_compact();
            }
            self.chunks.push(&mut self.ready, r);
        } else {
            self.place_ordered(index, deadline, seq);
        }
    }

    /// Pushes a reference into the level slot its deadline picks; the caller checked that the
    /// deadline is in the levels and lowered `hint`.
    #[inline(always)]
    fn push_to_levels(&mut self, index: u32, deadline: Tick, seq: u32) {
        let level = level_for(self.elapsed, deadline);
        let slot = slot_for(deadline, level);
        // The reference is built in each branch: one shared value passed to the call below
        // went through the stack and stalled the fast path's store on reading it back.
        if Chunks::push_needs_chunk(self.levels.bucket(level, slot)) {
            self.push_to_new_chunk(level, slot, index, deadline, seq);
        } else {
            let r = Ref::to(index, seq, deadline);
            self.levels.push_to_tail(&mut self.chunks, level, slot, r);
        }
    }

    /// [`push_to_levels`](Self::push_to_levels) into a slot that needs a new chunk, the one
    /// place the arena may grow: compacts first if the references are above the bound. Once
    /// per [`CHUNK`] pushes into a slot, so out of line, which keeps the push's registers free.
    #[inline(never)]
    fn push_to_new_chunk(
        &mut self,
        level: usize,
        slot: usize,
        index: u32,
        deadline: Tick,
        seq: u32,
    ) {
        self.maybe_compact();
        let r = Ref::to(index, seq, deadline);
        // The compaction may have left this slot's tail chunk with room: `push` tests again.
        self.levels.push(&mut self.chunks, level, slot, r);
    }

    /// Keeps `hint` at most every pending deadline. Written only when it falls, which is
    /// rare once a wheel holds timers.
    #[inline(always)]
    fn lower_hint(&mut self, deadline: Tick) {
        if deadline < self.hint {
            self.hint = deadline;
        }
    }

    /// Puts a new timer in the slab with order `seq`, which it then consumes; a refused
    /// insert takes no seq.
    #[inline(always)]
    fn store(&mut self, deadline: Tick, payload: T, seq: u32) -> Result<TimerKey, InsertError<T>> {
        match self.slab.insert(Stamped::new(deadline, payload, seq)) {
            Ok(key) => {
                self.seq = seq + 1;
                Ok(key)
            }
            Err(entry) => {
                self.stats.rejected += 1;
                Err(InsertError::Full(entry.payload))
            }
        }
    }

    /// [`place`](Self::place) for an insert or a reset: a placement into the levels goes to
    /// the nursery when that holds inserts or anything at all (behind every placement made
    /// before it).
    #[inline(always)]
    fn place_in_turn(&mut self, index: u32, deadline: Tick, seq: u32) {
        if self.nursery.must_queue() && in_levels(self.elapsed, deadline) {
            self.defer(index, deadline, seq);
        } else {
            self.place(index, deadline, seq);
        }
    }

    /// Records a placement into the levels (the caller checked the deadline is there) in the
    /// nursery, and makes room if that filled it, so the nursery is never full between
    /// operations. Besides sparing a timer cancelled soon its push, this keeps `reset` short:
    /// its slab access is the one likely to miss, and with the push (level, slot, chunk
    /// bookkeeping) moved out of it, the few instructions left let the out-of-order window
    /// reach the next operations' misses and overlap them.
    #[inline(always)]
    fn defer(&mut self, index: u32, deadline: Tick, seq: u32) {
        self.lower_hint(deadline);
        self.nursery.push(Placement { index, seq }, deadline);
        if self.nursery.is_full() {
            self.make_room();
        }
    }

    /// [`Timer::reset`] in every case: renumbering, the ordered stores, a stale key.
    #[inline(never)]
    fn reset_anywhere(&mut self, key: TimerKey, deadline: Tick) -> Result<(), StaleKeyError> {
        if self.seq >= SEQ_LIMIT {
            self.renumber();
        }
        let seq = self.seq;
        let e = self.slab.get_mut(key).ok_or(StaleKeyError { key })?;
        // A timer moved in place has its home in a bucket: nothing to unplace.
        let old = (!is_moved(e.seq)).then_some((e.deadline, e.seq));
        e.deadline = deadline;
        e.seq = seq;
        self.seq += 1;
        self.stats.reset += 1;
        // The entry holds the new seq now, so the old reference counts as dead.
        if let Some((old, old_seq)) = old {
            self.unplace(key.index, old, old_seq);
        }
        self.place_in_turn(key.index, deadline, seq);
        Ok(())
    }

    /// [`Timer::insert`] in every case: renumbering, a deferred batch, a compaction, the
    /// ready bucket and the ordered stores.
    #[inline(never)]
    fn insert_anywhere(&mut self, deadline: Tick, payload: T) -> Result<TimerKey, InsertError<T>> {
        if self.seq >= SEQ_LIMIT {
            self.renumber();
        }
        let seq = self.seq;
        let key = self.store(deadline, payload, seq)?;
        self.place_in_turn(key.index, deadline, seq);
        Ok(key)
    }

    /// Empties a full nursery enough for more placements. One holding inserts pushes its
    /// older half, and stops holding inserts if fewer than a quarter of those had died (the
    /// compaction that started it was not caused by young cancels); one holding a batch of
    /// resets pushes it all, so that inserts stop queueing behind it.
    #[inline(never)]
    fn make_room(&mut self) {
        if self.nursery.holds_inserts() {
            let half = self.nursery.capacity() / 2;
            let dead = self.flush(half);
            if 4 * dead >= half {
                return;
            }
            self.nursery.set_holds_inserts(false);
        }
        self.flush(self.nursery.len());
    }

    /// Pushes the `n` oldest placements of the nursery (at most all it holds) into their
    /// slots, in order, and drops the dead ones (their timers were cancelled or reset since);
    /// returns how many were dead. The cursor has not reached any of their deadlines (`poll`
    /// pushes them all first), so each live one still belongs in the levels, where the current
    /// cursor puts it.
    #[inline(never)]
    fn flush(&mut self, n: usize) -> usize {
        let mut dead = 0;
        let mut left = n;
        let mut batch = [Placement::default(); TAKE];
        while left > 0 {
            let k = self.nursery.take_oldest(left, &mut batch);
            if k == 0 {
                break;
            }
            left -= k;
            for p in &batch[..k] {
                // Live iff the entry still holds the placement's seq; its deadline is then the
                // one the placement was made with.
                let Some(deadline) = stamped::live_deadline(&self.slab, p.index, p.seq) else {
                    dead += 1;
                    continue;
                };
                debug_assert!(in_levels(self.elapsed, deadline));
                self.push_to_levels(p.index, deadline, p.seq);
            }
        }
        self.stats.stale_skipped += dead as u64;
        dead
    }

    /// [`place`](Self::place) for a deadline behind the cursor or beyond the top level.
    #[cold]
    #[inline(never)]
    fn place_ordered(&mut self, index: u32, deadline: Tick, seq: u32) {
        if deadline < self.elapsed {
            self.overdue.insert((deadline, seq), index);
        } else {
            self.overflow.insert((deadline, seq), index);
        }
    }

    /// Retires the place of a timer that was cancelled or took a new seq. A reference in a
    /// bucket just goes dead where it is; an ordered store drops its key now.
    #[inline(always)]
    fn unplace(&mut self, index: u32, deadline: Tick, seq: u32) {
        if in_ordered_store(self.elapsed, deadline) {
            self.unplace_ordered(index, deadline, seq);
        }
    }

    /// [`unplace`](Self::unplace) for a deadline behind the cursor or beyond the top level.
    #[cold]
    #[inline(never)]
    fn unplace_ordered(&mut self, index: u32, deadline: Tick, seq: u32) {
        let store = if deadline < self.elapsed {
            &mut self.overdue
        } else {
            &mut self.overflow
        };
        let removed = store.remove(&(deadline, seq));
        debug_assert_eq!(removed, Some(index), "ordered store lost a timer");
    }

    /// Called before every push that takes a new chunk, and only there: compacts when
    /// references exceed [`COMPACT_RATIO`] times the pending timers (plus [`COMPACT_SLACK`]).
    /// A cancel or a fire only turns a reference dead where it lies, in a chunk that is already
    /// allocated; what dead references would cost is growth of the arena, and only a push into
    /// a full chunk grows it, so the check waits for one, once per [`CHUNK`] pushes into a
    /// slot rather than on every insert. (A wheel whose timers are all cancelled is dropped or
    /// reused without ever reading their dead references.)
    #[inline(always)]
    fn maybe_compact(&mut self) {
        // The chunks in use bound the references in O(1); only above the bound are they counted.
        let bound = self.refs_bound();
        if self.chunks.in_use() * CHUNK > bound && self.refs() > bound {
            self.compact();
        }
    }

    /// References in the buckets (the levels' and `ready`), live or dead: counted over the
    /// occupied slots when a compaction may be due, not kept by every push. A counter updated
    /// per push measured 4–5 % of `insert` (`docs/bench-profile.md`).
    fn refs(&self) -> usize {
        self.levels.refs() + self.ready.len()
    }

    /// The most references a push may find in the buckets without compacting first:
    /// [`COMPACT_RATIO`] times the pending timers, plus [`COMPACT_SLACK`].
    #[inline(always)]
    fn refs_bound(&self) -> usize {
        COMPACT_RATIO * self.slab.len() + COMPACT_SLACK
    }

    /// Drops dead references where they gather first, then everywhere if that was not enough:
    /// one slab read per reference read, and no bucket read twice.
    ///
    /// First the crowded slots, each holding more than an eighth of all references (at most
    /// seven). Short-lived timers gather there: request deadlines a few seconds out, cancelled
    /// when the response comes, all land in the one or two coarse slots the cursor is a few
    /// seconds behind, and every one leaves a dead reference. If that brings the references
    /// down to 1.5 times the pending timers, the other buckets (long timeouts, mostly live) are
    /// left unread; otherwise every other bucket is compacted too. Amortised O(1) per dead
    /// reference either way: it starts above 3 references per pending timer, so a compaction
    /// that stops early has dropped at least half of what it read, and one that goes on drops
    /// every dead reference, two thirds or more of all.
    #[cold]
    #[inline(never)]
    fn compact(&mut self) {
        let refs = self.refs();
        let crowded = self.levels.slots_longer_than(refs / 8);
        let mut dropped = self.levels.compact(&mut self.chunks, &self.slab, crowded);
        let live = self.slab.len();
        if refs - dropped > live + live / 2 {
            let others = crowded.map(|word| !word);
            dropped += self.levels.compact(&mut self.chunks, &self.slab, others);
            dropped += self.chunks.compact(&mut self.ready, &self.slab);
        }
        self.stats.compactions += 1;
        // Dead references piled up: see whether holding inserts in the nursery would have
        // spared them (`make_room` decides after one round).
        self.nursery.set_holds_inserts(true);
        self.stats.stale_skipped += dropped as u64;
    }

    /// Live timers still to hand out at the cursor: the overdue store, then the ready bucket.
    #[inline]
    fn due_is_empty(&self) -> bool {
        self.overdue.is_empty() && self.ready.is_empty()
    }

    /// The next due timer, out of the slab: overdue ones first (all earlier), then the ready
    /// bucket in order, dropping its dead references on the way.
    #[inline]
    fn pop_due(&mut self) -> Option<Expired<T>> {
        if !self.overdue.is_empty() {
            let (_, index) = self.overdue.pop_first()?;
            return Some(self.take(index));
        }
        self.warm_ready_chunk();
        let mut skipped = 0;
        let mut fired = None;
        while let Some(r) = self.chunks.pop(&mut self.ready) {
            if let Some((key, e)) = self.slab.take_if(r.index, |e| e.seq == r.seq) {
                fired = Some(e.into_expired(key));
                break;
            }
            skipped += 1;
        }
        self.stats.stale_skipped += skipped;
        fired
    }

    /// When the ready bucket's cursor enters a chunk, reads the slab entries of all its (up to
    /// 64) references in one tight loop. The reads are independent, so their cache misses
    /// overlap (tens in flight) instead of one per `poll` call, and the next polls find their
    /// entries in cache. No `unsafe` prefetch: plain loads whose values feed a `black_box`.
    #[inline]
    fn warm_ready_chunk(&self) {
        let refs = self.chunks.fresh_chunk(&self.ready);
        if refs.len() >= 2 {
            self.warm(refs);
        }
    }

    /// Reads the slab entries of up to a chunk of references in one tight loop, so their
    /// misses overlap before the code that needs them reads them one by one: the ready
    /// bucket's pops, a cascade of moved timers.
    #[inline]
    fn warm(&self, refs: &[Ref]) {
        let mut sum = 0u32;
        for r in refs {
            if let Some(e) = self.slab.try_at(r.index) {
                sum = sum.wrapping_add(e.seq);
            }
        }
        core::hint::black_box(sum);
    }

    /// The earliest occupied slot: `(level, slot, first tick of the slot)`.
    #[inline]
    fn next_slot(&self) -> Option<(usize, usize, Tick)> {
        self.levels.next_slot(self.elapsed)
    }

    /// Moves the cursor forward to `t`; on entering a new whole-wheel span, brings the overflow
    /// timers of that span into the levels. The caller guarantees nothing in the levels is due
    /// before `t` and nothing live is left at the cursor.
    fn advance_to(&mut self, t: Tick) {
        debug_assert!(t >= self.elapsed && self.due_is_empty());
        if t == self.elapsed {
            return;
        }
        // What is left in the ready bucket is dead.
        self.chunks.clear(&mut self.ready);
        let crossed = span_start(t) != span_start(self.elapsed);
        self.elapsed = t;
        if crossed {
            while let Some(entry) = self.overflow.first_entry() {
                if entry.key().0 > span_end(t) {
                    break;
                }
                let ((deadline, seq), index) = entry.remove_entry();
                self.place(index, deadline, seq);
                self.stats.cascaded += 1;
            }
        }
    }

    /// Empties one slot at the cursor: a level-0 slot is due whole; a coarser one cascades.
    fn process(&mut self, level: usize, slot: usize, start: Tick) {
        self.advance_to(start);
        self.stats.slots_scanned += 1;
        let (mut bucket, marks) = self.levels.take(level, slot);
        if level == 0 {
            // Every live timer here is due exactly at `start`: the bucket becomes the ready
            // bucket as it is, in `seq` order unless a moved timer came down into it.
            debug_assert!(self.ready.is_empty(), "advance_to empties the ready bucket");
            debug_assert!(!marks.moved, "no timer is moved in place from level 0");
            self.ready = bucket;
            if marks.unsorted {
                self.chunks.sort_by_seq(&self.ready, &mut self.scratch);
            }
            return;
        }
        // Below the top level a deadline agrees with the cursor on bits 30 and up: rebuild it
        // from the reference's low half and leave the slab alone. Dead references move down
        // with the live ones and are dropped when the slab is read anyway. A level-1 slot that
        // may be the home of timers moved in place reads every entry instead; a coarser one
        // carries its references down as they are (a home goes to the place of its own
        // deadline, which is at or before its timer's), so the reads are spread over the
        // level-1 cascades instead of one burst for a whole coarse slot.
        let top = level == LEVELS - 1;
        debug_assert!(
            !(top && marks.moved),
            "no timer is moved in place from the top level"
        );
        let read = marks.moved && level == 1;
        let high = self.elapsed & !u64::from(u32::MAX);
        let mut batch = [Ref::default(); CHUNK];
        loop {
            let n = self.chunks.take_chunk(&mut bucket, &mut batch);
            if n == 0 {
                break;
            }
            if read {
                self.warm(&batch[..n]);
            }
            for &r in &batch[..n] {
                if read {
                    self.cascade_read(r, high, marks.unsorted);
                } else if marks.moved {
                    self.carry_home(r, high, marks.unsorted);
                } else if !top {
                    self.cascade_one(r.index, high | u64::from(r.low), r.seq, marks.unsorted);
                } else {
                    match self.slab.try_at(r.index) {
                        Some(e) if e.seq == r.seq => {
                            let deadline = e.deadline;
                            self.cascade_one(r.index, deadline, r.seq, marks.unsorted);
                        }
                        _ => self.stats.stale_skipped += 1,
                    }
                }
            }
            self.stats.cascaded += n as u64;
        }
        if core::mem::take(&mut self.ready_unsorted) {
            self.chunks.sort_by_seq(&self.ready, &mut self.scratch);
        }
    }

    /// Places one cascading timer; from a slot out of `seq` order, its new slot is marked so.
    #[inline(always)]
    fn cascade_one(&mut self, index: u32, deadline: Tick, seq: u32, unsorted: bool) {
        self.place(index, deadline, seq);
        if unsorted {
            self.mark_unsorted(deadline);
        }
    }

    /// Cascades one reference of a slot that may be the home of timers moved in place: a
    /// live ordinary timer moves down, a moved one whose home this is settles and goes where
    /// its deadline says (behind references that may come after it in `seq` order, so that
    /// place is marked unsorted), a dead reference is dropped.
    fn cascade_read(&mut self, r: Ref, high: Tick, unsorted: bool) {
        let Some(e) = self.slab.try_at(r.index) else {
            self.stats.stale_skipped += 1;
            return;
        };
        if e.seq == r.seq {
            self.cascade_one(r.index, high | u64::from(r.low), r.seq, unsorted);
        } else if is_moved(e.seq) && moved::live_seq(e) == r.seq {
            let e = self.slab.at_mut(r.index);
            moved::settle(e, self.elapsed);
            let (deadline, seq) = (e.deadline, e.seq);
            self.cascade_one(r.index, deadline, seq, true);
        } else {
            self.stats.stale_skipped += 1;
        }
    }

    /// Cascades one reference of a coarse slot that may be the home of timers moved in place,
    /// without reading the slab: to a slot that cascades, marked moved since it may now be a
    /// home. A reference whose deadline `home` lands in level 0 or at the cursor could name a
    /// moved timer that a fire must not see as due, so that one is read and settled now.
    #[inline(always)]
    fn carry_home(&mut self, r: Ref, high: Tick, unsorted: bool) {
        let home = high | u64::from(r.low);
        let level = level_for(self.elapsed, home);
        if level > 0 && in_levels(self.elapsed, home) {
            // The reference is the same `(index, seq, low)`, in the place of `home`.
            let slot = slot_for(home, level);
            self.levels.push(&mut self.chunks, level, slot, r);
            self.levels.mark_moved(level, slot);
            if unsorted {
                self.levels.mark_unsorted(level, slot);
            }
        } else {
            self.cascade_read(r, high, unsorted);
        }
    }

    /// Marks the place of a timer due at `deadline` as possibly out of `seq` order (the
    /// ordered stores are keyed by `seq` and never are).
    fn mark_unsorted(&mut self, deadline: Tick) {
        if in_levels(self.elapsed, deadline) {
            let level = level_for(self.elapsed, deadline);
            self.levels.mark_unsorted(level, slot_for(deadline, level));
        } else if deadline == self.elapsed {
            self.ready_unsorted = true;
        }
    }

    /// Takes a timer (already out of every place) out of the slab.
    fn take(&mut self, index: u32) -> Expired<T> {
        let key = self.slab.key_at(index);
        self.slab.remove_at(index).into_expired(key)
    }

    /// [`poll`](Timer::poll) past the idle check: fires, cascades, or moves the cursor.
    #[inline(never)]
    fn poll_due(&mut self) -> Option<Expired<T>> {
        let now = self.now;
        if self.nursery.min() <= now {
            // The cursor could reach a placement not pushed yet: push them all. Otherwise they
            // wait, which neither hides a due timer nor misplaces one (see `nursery`).
            self.flush(usize::MAX);
        }
        loop {
            if let Some(expired) = self.pop_due() {
                self.stats.fired += 1;
                self.fired_since_hint = true;
                return Some(expired);
            }
            match self.next_slot() {
                Some((level, slot, start)) if start <= now => self.process(level, slot, start),
                Some(_) => break,
                None => match self.overflow.first_key_value() {
                    // Levels are empty: jump the cursor to the start of that timer's span.
                    Some((&(d, _), _)) if d <= now => self.advance_to(span_start(d)),
                    _ => break,
                },
            }
        }
        // Nothing is due by `now`. The earliest slot's start stays the same when the cursor
        // moves up to `now` (no slot boundary is crossed before it).
        let placed = match self.next_slot() {
            Some((_, _, start)) => start,
            None => self
                .overflow
                .first_key_value()
                .map_or(Tick::MAX, |(&(d, _), _)| d),
        };
        self.hint = placed.min(self.nursery.min());
        // `now` reached what `next_deadline` answered and nothing was due: an early answer,
        // unless this poll only ends a run of fires.
        if !core::mem::take(&mut self.fired_since_hint) {
            self.stats.empty_wakeups += 1;
        }
        // Bring the cursor up so later inserts land on fine levels.
        self.advance_to(now);
        None
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
    // Inlined into the caller with one test for the uncommon cases (renumbering, a deadline
    // outside the levels), which the out of line `insert_anywhere` handles. Inlined, the
    // `insert` workload measured about 18 % faster (`docs/bench-profile.md`).
    #[inline(always)]
    fn insert(&mut self, deadline: Tick, payload: T) -> Result<TimerKey, InsertError<T>> {
        let seq = self.seq;
        if seq >= SEQ_LIMIT || !in_levels(self.elapsed, deadline) {
            return self.insert_anywhere(deadline, payload);
        }
        let key = self.store(deadline, payload, seq)?;
        if self.nursery.must_queue() {
            // Behind the placements held, or held itself while young timers die in numbers.
            self.defer(key.index, deadline, seq);
        } else {
            self.lower_hint(deadline);
            self.push_to_levels(key.index, deadline, seq);
        }
        Ok(key)
    }

    // Inlined into the caller, like `insert` and `reset`: a few loads and stores around the
    // one slab access, which then overlaps with the caller's next operations.
    #[inline(always)]
    fn cancel(&mut self, key: TimerKey) -> Option<T> {
        // The reference goes dead where it lies; the next push compacts if it must.
        let entry = self.slab.remove(key)?;
        if !is_moved(entry.seq) {
            self.unplace(key.index, entry.deadline, entry.seq);
        }
        self.stats.cancelled += 1;
        Some(entry.payload)
    }

    // Inlined into the caller. Out of line, the compiler made it a call that saves six
    // registers, and `churn_io` at a million timers measured about a third slower
    // (`docs/bench-profile.md`): at that size the entry read below usually misses, and less
    // work between that miss and the caller's next ones lets them overlap.
    #[inline(always)]
    fn reset(&mut self, key: TimerKey, deadline: Tick) -> Result<(), StaleKeyError> {
        // The common case, a timer in a bucket moved within the levels, makes no call but the
        // flush of a full batch and defers its placement; everything else takes the general
        // path, out of line.
        let elapsed = self.elapsed;
        if self.seq >= SEQ_LIMIT || !in_levels(elapsed, deadline) {
            return self.reset_anywhere(key, deadline);
        }
        let seq = self.seq;
        let Some(e) = self.slab.get_mut(key) else {
            return Err(StaleKeyError { key });
        };
        if is_moved(e.seq) {
            // Moved in place before: it may move again as long as it does not move earlier
            // than its last deadline (which is at or after its home).
            if !moved::may_move_again(e, elapsed, deadline) {
                return self.reset_anywhere(key, deadline);
            }
            moved::move_again(e, deadline, seq);
            self.seq += 1;
            self.stats.reset += 1;
            return Ok(());
        }
        let old = e.deadline;
        if in_ordered_store(elapsed, old) {
            return self.reset_anywhere(key, deadline);
        }
        let level = level_for(elapsed, old);
        if deadline >= old
            && (1..LEVELS - 1).contains(&level)
            && moved::encodable(elapsed, deadline)
            && !self.nursery.may_hold(e.seq)
        {
            // Later, from a slot that cascades below the top level: the reference stays where
            // it is, as the home, and the cascade of that slot places the timer (see `moved`).
            // The top level holds no homes: its cascade reads each deadline from the slab and
            // carries nothing down unread.
            moved::move_in_place(e, e.seq, deadline, seq);
            self.seq += 1;
            self.stats.reset += 1;
            self.levels.mark_moved(level, slot_for(old, level));
            return Ok(());
        }
        // The entry takes the new seq, so its old reference counts as dead where it lies.
        e.deadline = deadline;
        e.seq = seq;
        self.seq += 1;
        self.stats.reset += 1;
        self.defer(key.index, deadline, seq);
        Ok(())
    }

    #[inline]
    fn poll(&mut self, now: Tick) -> Option<Expired<T>> {
        self.now = self.now.max(now);
        if self.now < self.hint {
            // Idle turn: nothing can be due yet (a timer due at or behind the cursor lowered
            // `hint` when it was placed). The cursor may lag `now`; that only costs a later
            // insert a coarser level. Inlined, so an event loop's idle turn makes no call.
            return None;
        }
        self.poll_due()
    }

    fn next_deadline(&self) -> Option<Tick> {
        // `hint` is at most every pending deadline (a slot's start, or an exact deadline).
        (self.slab.len() != 0).then_some(self.hint)
    }

    fn deadline(&self, key: TimerKey) -> Option<Tick> {
        self.slab
            .get(key)
            .map(|e| moved::unpacked(e, self.elapsed).0)
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
        // Every accepted timer is pending, cancelled, fired or drained, so inserts need no
        // counter of their own: one store fewer on the insert path.
        let s = self.stats;
        Stats {
            inserted: self.slab.len() as u64 + s.cancelled + s.fired + s.drained,
            ..s
        }
    }

    fn drain(&mut self) -> Vec<Expired<T>> {
        // The firing order takes the nursery's live placements in too.
        let order = self.firing_order();
        for &index in &order {
            moved::settle(self.slab.at_mut(index), self.elapsed);
        }
        self.clear_places();
        self.hint = Tick::MAX;
        self.stats.drained += order.len() as u64;
        order.into_iter().map(|index| self.take(index)).collect()
    }

    fn shrink_to_fit(&mut self) {
        // A renumbering into a fresh arena: the references come back packed, the dead ones
        // dropped, and the slab's tail is released.
        let order = self.firing_order();
        self.clear_places();
        self.chunks = Chunks::new(0, 0);
        self.scratch = Vec::new();
        self.place_in_order(&order);
        self.chunks.shrink_to_fit();
        self.slab.shrink_to_fit();
    }

    fn allocated_bytes(&self) -> usize {
        // A B-tree entry of `((Tick, u32), u32)` with node overhead: about 1.5× its 16 bytes.
        let ordered = (self.overdue.len() + self.overflow.len()) * 24;
        self.slab.allocated_bytes()
            + self.scratch.capacity() * core::mem::size_of::<Ref>()
            + self.levels.allocated_bytes()
            + self.chunks.allocated_bytes()
            + self.nursery.allocated_bytes()
            + ordered
    }

    fn name(&self) -> &'static str {
        "hierarchical"
    }

    fn check_invariants(&self) {
        self.slab.check();
        assert!(self.elapsed <= self.now, "cursor ahead of now");
        for (&(d, seq), &i) in &self.overdue {
            let e = self.slab.at(i);
            assert_eq!((e.deadline, e.seq), (d, seq), "overdue key disagrees");
            assert!(d < self.elapsed, "overdue timer not behind the cursor");
            assert!(
                self.hint <= d,
                "hint {} above overdue deadline {d}",
                self.hint
            );
        }
        let ready = self.chunks.collect_live(&self.ready, &self.slab);
        assert!(!self.ready_unsorted, "the ready bucket was left unsorted");
        for r in &ready {
            assert!(
                !is_moved(self.slab.at(r.index).seq),
                "a timer moved in place has its home in the ready bucket"
            );
            assert_eq!(
                self.slab.at(r.index).deadline,
                self.elapsed,
                "ready timer not at the cursor"
            );
            assert!(self.hint <= self.elapsed, "hint above a ready timer");
        }
        for pair in ready.windows(2) {
            assert!(
                pair[0].seq < pair[1].seq,
                "ready bucket out of first-in first-out order"
            );
        }
        for (l, s, bucket) in self.levels.buckets() {
            assert_eq!(
                self.levels.is_marked(l, s),
                !bucket.is_empty(),
                "occupancy bit of level {l} slot {s} is wrong"
            );
            let marks = self.levels.marks(l, s);
            let live = self.chunks.collect_live(bucket, &self.slab);
            let high = self.elapsed & !u64::from(u32::MAX);
            for r in &live {
                let e = self.slab.at(r.index);
                let d = if is_moved(e.seq) {
                    // The home of a timer moved in place: the reference's deadline decides
                    // the slot, and the timer is due at or after it.
                    assert!(l > 0 && marks.moved, "unmarked home in level {l} slot {s}");
                    let home = high | u64::from(r.low);
                    let (due, order) = moved::unpacked(e, self.elapsed);
                    assert!(due >= home, "timer moved in place earlier than its home");
                    assert!(
                        moved::encodable(self.elapsed, due) && order < self.seq,
                        "moved entry {due}/{order} does not decode"
                    );
                    home
                } else {
                    e.deadline
                };
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
            }
            if !marks.unsorted {
                let ordinary: Vec<_> = live
                    .iter()
                    .map(|r| self.slab.at(r.index))
                    .filter(|e| !is_moved(e.seq))
                    .collect();
                for pair in ordinary.windows(2) {
                    assert!(
                        pair[0].deadline != pair[1].deadline || pair[0].seq < pair[1].seq,
                        "equal deadlines out of first-in first-out order in level {l} slot {s}"
                    );
                }
            }
        }
        for (&(d, seq), &i) in &self.overflow {
            let e = self.slab.at(i);
            assert_eq!((e.deadline, e.seq), (d, seq), "overflow key disagrees");
            assert!(
                d > self.elapsed && level_for(self.elapsed, d) >= LEVELS,
                "overflow holds a timer the levels should"
            );
            assert!(self.hint <= d, "hint {} above deadline {d}", self.hint);
        }
        assert!(
            self.nursery.len() <= self.nursery.capacity() && !self.nursery.is_full(),
            "nursery left full after an operation"
        );
        let held: Vec<Placement> = self.nursery.iter().collect();
        for p in &held {
            assert!(p.seq < self.seq, "nursery placement from the future");
            if let Some(d) = stamped::live_deadline(&self.slab, p.index, p.seq) {
                assert!(
                    self.nursery.min() <= d,
                    "nursery bound above a deadline held"
                );
                assert!(
                    in_levels(self.elapsed, d),
                    "nursery placement {d} outside the levels"
                );
                assert!(self.hint <= d, "hint above a nursery deadline");
            } else {
                assert!(
                    self.slab
                        .try_at(p.index)
                        .map_or(true, |e| moved::live_seq(e) != p.seq),
                    "a timer moved in place while its placement was in the nursery"
                );
            }
        }
        for pair in held.windows(2) {
            assert!(pair[0].seq < pair[1].seq, "nursery placements out of order");
        }
        let refs: usize = self
            .levels
            .buckets()
            .map(|(_, _, b)| b.len())
            .sum::<usize>()
            + self.ready.len();
        assert_eq!(
            refs,
            self.refs(),
            "a slot holds references but is not marked occupied"
        );
        // Every push that took a chunk found the references within the bound (or compacted
        // first); each bucket has taken fewer than a chunk's worth of pushes since, and
        // otherwise only cancels and fires (which add none) and timers entering from the
        // overflow (pending at that push) can have changed them.
        let unchecked = (CHUNK - 1) * (LEVELS * SLOTS + 1);
        assert!(
            refs <= (COMPACT_RATIO + 1) * self.slab.slots() + COMPACT_SLACK + 1 + unchecked,
            "{} references for at most {} pending timers and not compacted",
            refs,
            self.slab.slots()
        );
        let owned: usize = self
            .levels
            .buckets()
            .map(|(_, _, b)| self.chunks.chunks_of(b))
            .sum::<usize>()
            + self.chunks.chunks_of(&self.ready);
        assert_eq!(
            owned + self.chunks.free_chunks(),
            self.chunks.total_chunks(),
            "a chunk is lost or in two lists"
        );
        let mut all = self.all_indices();
        for &i in &all {
            let e = self.slab.at(i);
            let order = moved::unpacked(e, self.elapsed).1;
            assert!(
                order < self.seq && moved::live_seq(e) < self.seq,
                "seq from the future"
            );
        }
        let placed = all.len();
        all.sort_unstable();
        all.dedup();
        assert_eq!(all.len(), placed, "a timer has two live references");
        assert_eq!(placed, self.slab.len(), "a timer is in no place");
    }
}

#[cfg(test)]
mod tests {
    use super::super::nursery::BATCH;
    use super::*;

    /// Fires shrink the pending count without a cancel or reset. A mass expiry leaves the
    /// dead references other timers left behind in chunks already allocated, and compacts
    /// nothing; the next push that needs a new chunk finds them above the bound and compacts
    /// instead of growing the arena.
    #[test]
    fn after_a_mass_expiry_the_next_push_compacts() {
        let mut wheel = HierarchicalWheel::new();
        for i in 0..1_000 {
            wheel.insert(100, i).unwrap();
        }
        let far: Vec<_> = (0..500).map(|i| wheel.insert(50_000, i).unwrap()).collect();
        // Earlier, so each reset places the timer anew and leaves a dead reference: once the
        // 1 000 near timers fire, the far ones' dead references alone exceed the bound.
        for round in 1..=COMPACT_RATIO as Tick {
            for &key in &far {
                wheel.reset(key, 50_000 - round).unwrap();
            }
        }
        // Push the last resets' placements, which wait in the nursery.
        wheel.flush(usize::MAX);
        wheel.check_invariants();
        let before = wheel.stats().compactions;
        let mut fired = 0;
        while let Some(e) = wheel.poll(100) {
            assert_eq!(e.deadline, 100);
            fired += 1;
            wheel.check_invariants();
        }
        assert_eq!(fired, 1_000);
        assert_eq!(wheel.stats().compactions, before, "fires compact nothing");
        assert!(wheel.refs() > wheel.refs_bound());
        let chunks = wheel.chunks.allocated_bytes();
        // An empty slot: the push takes a chunk.
        let key = wheel.insert(60_000, 7).unwrap();
        wheel.check_invariants();
        assert_eq!(
            wheel.stats().compactions,
            before + 1,
            "the insert compacted"
        );
        assert_eq!(wheel.refs(), wheel.len(), "only live references are left");
        assert_eq!(
            wheel.chunks.allocated_bytes(),
            chunks,
            "the arena did not grow"
        );
        assert_eq!(wheel.cancel(key), Some(7));
    }

    /// Cancels never compact, however many references they leave dead: a wheel emptied by
    /// cancels reads none of them. The first push after that drops them all at once.
    #[test]
    fn cancels_leave_compaction_to_the_next_push() {
        let mut wheel = HierarchicalWheel::new();
        let keys: Vec<_> = (0..10_000u64)
            .map(|i| wheel.insert(1 + i * 7, i).unwrap())
            .collect();
        let chunks = wheel.chunks.allocated_bytes();
        for (i, &key) in keys.iter().enumerate() {
            assert_eq!(wheel.cancel(key), Some(i as u64));
        }
        wheel.check_invariants();
        assert_eq!(wheel.stats().compactions, 0, "no cancel compacted");
        assert_eq!((wheel.refs(), wheel.len()), (10_000, 0));
        let key = wheel.insert(5, 1).unwrap();
        wheel.check_invariants();
        assert_eq!(wheel.stats().compactions, 1);
        assert_eq!(wheel.refs(), 1, "every dead reference dropped");
        assert_eq!(
            wheel.chunks.allocated_bytes(),
            chunks,
            "the arena did not grow"
        );
        assert_eq!(wheel.poll(5).map(|e| e.key), Some(key));
    }

    /// A push that needs a new chunk may compact its own slot first, and then finds room in
    /// the tail chunk after all: it must push there, not link a chunk behind a tail with room
    /// (which would hand out stale references and lose the last ones).
    #[test]
    fn a_push_that_compacts_its_own_slot_uses_the_room_it_freed() {
        let mut wheel = HierarchicalWheel::new();
        let deadline = 1_000;
        // Two full chunks in one slot; all but every sixteenth timer cancelled.
        let keys: Vec<_> = (0..2 * CHUNK as u64)
            .map(|i| wheel.insert(deadline, i).unwrap())
            .collect();
        assert_eq!(refs_in_slot_of(&wheel, deadline), 2 * CHUNK);
        let mut kept = Vec::new();
        for (i, &key) in keys.iter().enumerate() {
            if i % 16 == 0 {
                kept.push(i as u64);
            } else {
                assert_eq!(wheel.cancel(key), Some(i as u64));
            }
        }
        let chunks = wheel.chunks.allocated_bytes();
        // The slot's tail chunk is full: this push needs a new chunk, and compacts first.
        wheel.insert(deadline, 1_000).unwrap();
        kept.push(1_000);
        wheel.check_invariants();
        assert_eq!(wheel.stats().compactions, 1);
        assert_eq!(refs_in_slot_of(&wheel, deadline), kept.len());
        assert_eq!(
            wheel.chunks.allocated_bytes(),
            chunks,
            "the arena did not grow"
        );
        let fired: Vec<_> = core::iter::from_fn(|| wheel.poll(deadline))
            .map(|e| e.payload)
            .collect();
        assert_eq!(fired, kept, "each survivor once, in insertion order");
        wheel.check_invariants();
    }

    /// References in the level slot of `deadline`, with the cursor at 0.
    fn refs_in_slot_of(wheel: &HierarchicalWheel<u64>, deadline: Tick) -> usize {
        let (level, slot) = (
            level_for(0, deadline),
            slot_for(deadline, level_for(0, deadline)),
        );
        wheel
            .levels
            .buckets()
            .find(|&(l, s, _)| (l, s) == (level, slot))
            .map_or(0, |(_, _, b)| b.len())
    }

    /// Requests cancelled right after they are set leave their dead references in the one
    /// coarse slot their deadlines share: a compaction drops those and stops there when that
    /// is enough, leaving the long timeouts' slots unread. When the dead are spread out
    /// instead, it compacts every bucket.
    #[test]
    fn a_compaction_reads_the_crowded_slot_first_and_stops_when_that_is_enough() {
        let mut wheel = HierarchicalWheel::new();
        // Long timeouts in ten level-2 slots, 100 each, one cancelled in each.
        let idle: Vec<Vec<_>> = (0..10)
            .map(|k| {
                let deadline = 100_000 + k * 4_096;
                (0..100)
                    .map(|i| wheel.insert(deadline, i).unwrap())
                    .collect()
            })
            .collect();
        for slot in &idle {
            assert_eq!(wheel.cancel(slot[0]), Some(0));
        }
        let before = wheel.stats().compactions;
        let request = loop {
            let key = wheel.insert(5_000, 7).unwrap();
            wheel.check_invariants();
            if wheel.stats().compactions > before {
                break key;
            }
            assert_eq!(wheel.cancel(key), Some(7));
        };
        // The insert that compacted pushed its own reference after the compaction.
        assert_eq!(
            refs_in_slot_of(&wheel, 5_000),
            1,
            "the requests' slot is clean"
        );
        for k in 0..10 {
            assert_eq!(
                refs_in_slot_of(&wheel, 100_000 + k * 4_096),
                100,
                "a long timeouts' slot was read"
            );
        }
        assert_eq!(wheel.refs(), 1_001);
        assert_eq!(wheel.cancel(request), Some(7));

        // Cancel most long timeouts: no slot holds an eighth of the references, so the
        // compaction that the next insert starts reads them all.
        let before = wheel.stats().compactions;
        for slot in &idle {
            for &key in &slot[1..80] {
                assert!(wheel.cancel(key).is_some());
                wheel.check_invariants();
            }
        }
        assert_eq!(wheel.stats().compactions, before, "cancels never compact");
        // Since the compaction above, the nursery holds inserts: push this one, into an empty
        // slot, so that it takes a chunk.
        let key = wheel.insert(200_000, 9).unwrap();
        assert!(wheel.nursery.holds_inserts() && wheel.nursery.len() == 1);
        wheel.flush(usize::MAX);
        assert!(wheel.stats().compactions > before, "the push compacted");
        assert_eq!(wheel.cancel(key), Some(9));
        assert!(
            wheel.refs() < 2 * wheel.len(),
            "{} references left for {} timers",
            wheel.refs(),
            wheel.len()
        );
    }

    /// The top level holds no homes of timers moved in place (its cascade relies on that), even
    /// where a top-level timer's new deadline agrees with the cursor from bit 32 up, which is
    /// all the moved encoding needs: such a reset places the timer anew, and it fires on time.
    #[test]
    fn a_reset_never_moves_a_top_level_timer_in_place() {
        let mut wheel = HierarchicalWheel::new();
        let old = 1 << 30;
        assert_eq!(
            level_for(wheel.elapsed, old),
            LEVELS - 1,
            "a top-level deadline"
        );
        let key = wheel.insert(old, 1u64).unwrap();
        let later = old + 5;
        assert!(moved::encodable(wheel.elapsed, later));
        wheel.reset(key, later).unwrap();
        wheel.check_invariants();
        assert!(
            !is_moved(wheel.slab.get(key).unwrap().seq),
            "moved in place from the top level"
        );
        assert_eq!(wheel.poll(later - 1), None);
        let fired = wheel.poll(later).unwrap();
        assert_eq!((fired.key, fired.deadline, fired.payload), (key, later, 1));
        assert_eq!(wheel.poll(u64::MAX / 2), None);
    }

    /// A keep-alive refresh moves the timer in place: no reference is pushed or left dead, the
    /// entry answers with its new deadline, and the timer fires at that deadline, not at its
    /// home's. Timers scheduled at the same deadline after the refresh, but pushed there
    /// before the home's cascade placed it, still fire after it.
    #[test]
    fn later_resets_move_in_place_and_keep_their_turn() {
        let mut wheel = HierarchicalWheel::new();
        let b = wheel.insert(5_000, 'b').unwrap();
        let a = wheel.insert(100, 'a').unwrap();
        for d in [300, 1_000, 5_000] {
            wheel.reset(a, d).unwrap();
            assert!(is_moved(wheel.slab.get(a).unwrap().seq), "moved in place");
            assert_eq!(wheel.deadline(a), Some(d));
            wheel.check_invariants();
        }
        let c = wheel.insert(5_000, 'c').unwrap();
        assert_eq!(
            (wheel.refs(), wheel.stats().reset),
            (3, 3),
            "nothing pushed"
        );
        // The home (level 1, slot of 64..127) cascades long before 5 000 and settles `a`.
        assert_eq!(wheel.poll(100), None);
        assert!(
            !is_moved(wheel.slab.get(a).unwrap().seq),
            "settled by the cascade"
        );
        wheel.check_invariants();
        // A moved timer may move again, or earlier than its home (placed anew), or be cancelled.
        let d = wheel.insert(200, 'd').unwrap();
        wheel.reset(d, 4_000).unwrap();
        assert!(is_moved(wheel.slab.get(d).unwrap().seq));
        wheel.reset(d, 150).unwrap();
        assert!(
            !is_moved(wheel.slab.get(d).unwrap().seq),
            "earlier: placed anew"
        );
        let e = wheel.insert(300, 'e').unwrap();
        wheel.reset(e, 4_500).unwrap();
        assert_eq!(wheel.cancel(e), Some('e'));
        wheel.check_invariants();
        let fired: Vec<(Tick, char)> = core::iter::from_fn(|| wheel.poll(4_999))
            .map(|x| (x.deadline, x.payload))
            .collect();
        assert_eq!(fired, [(150, 'd')], "nothing early");
        let fired: Vec<(Tick, char)> = core::iter::from_fn(|| wheel.poll(5_000))
            .map(|x| (x.deadline, x.payload))
            .collect();
        assert_eq!(fired, [(5_000, 'b'), (5_000, 'a'), (5_000, 'c')]);
        assert!(wheel.is_empty() && wheel.deadline(b).is_none() && wheel.deadline(c).is_none());
        wheel.check_invariants();
    }

    /// A coarse slot holding homes cascades without reading them: each home goes down to the
    /// level-1 slot of its own deadline, and only that slot's cascade settles its timers, so a
    /// slot full of refreshed timers is read a 64-tick slot at a time.
    #[test]
    fn a_coarse_cascade_carries_homes_down_unread() {
        let mut wheel = HierarchicalWheel::new();
        // Homes at 5 000, 5 016, ..., 6 008: level 2, the slot of 4 096..8 191.
        let keys: Vec<_> = (0..64u64)
            .map(|i| wheel.insert(5_000 + 16 * i, i).unwrap())
            .collect();
        for (i, &k) in (0u64..).zip(&keys) {
            wheel.reset(k, 9_000 + i).unwrap();
        }
        let x = wheel.insert(5_100, 100).unwrap();
        let moved = |w: &HierarchicalWheel<u64>| {
            keys.iter()
                .filter(|&&k| is_moved(w.slab.get(k).unwrap().seq))
                .count()
        };
        assert_eq!(moved(&wheel), 64);
        // Reaching 5 000 cascades the level-2 slot (its homes go down unread), then the
        // level-1 slot of 4 992..5 055, which settles the homes at 5 000, 5 016, 5 032 and
        // 5 048. Reading the whole level-2 slot would have settled all 64.
        assert_eq!(wheel.poll(5_000), None);
        assert_eq!(moved(&wheel), 60, "one level-1 slot settled its four");
        wheel.check_invariants();
        let fired: Vec<_> = core::iter::from_fn(|| wheel.poll(8_999))
            .map(|e| (e.deadline, e.payload))
            .collect();
        assert_eq!(fired, [(5_100, 100)], "nothing early");
        assert!(wheel.deadline(x).is_none());
        let fired: Vec<_> = core::iter::from_fn(|| wheel.poll(10_000))
            .map(|e| (e.deadline, e.payload))
            .collect();
        let expected: Vec<_> = (0..64u64).map(|i| (9_000 + i, i)).collect();
        assert_eq!(fired, expected);
        wheel.check_invariants();
    }

    /// Drain and the seq renumbering read moved entries through their encoding.
    #[test]
    fn drain_and_renumbering_settle_moved_timers() {
        let mut wheel = HierarchicalWheel::new();
        let keys: Vec<_> = (0..6u64)
            .map(|i| wheel.insert(100 + i, i).unwrap())
            .collect();
        for (i, &k) in keys.iter().enumerate().rev() {
            wheel.reset(k, 9_000 + (i as u64 % 2)).unwrap();
        }
        wheel.seq = SEQ_LIMIT;
        let extra = wheel.insert(9_000, 99).unwrap();
        assert!(wheel.seq < 10, "renumbered");
        wheel.check_invariants();
        assert_eq!(wheel.deadline(keys[4]), Some(9_000));
        assert_eq!(wheel.deadline(extra), Some(9_000));
        let drained: Vec<(Tick, u64)> = wheel
            .drain()
            .into_iter()
            .map(|x| (x.deadline, x.payload))
            .collect();
        let want = [
            (9_000, 4),
            (9_000, 2),
            (9_000, 0),
            (9_000, 99),
            (9_001, 5),
            (9_001, 3),
        ];
        assert_eq!(drained[..6], want);
        assert_eq!(drained[6], (9_001, 1));
    }

    /// A reset's placement waits in the nursery; an insert made meanwhile queues behind it,
    /// so equal deadlines fire in the order of their last insert or reset, whether the batch
    /// is pushed by filling up or by the poll that reaches them.
    #[test]
    fn inserts_queue_behind_deferred_resets() {
        for filler in [0, BATCH - 3, 3 * BATCH] {
            let mut wheel = HierarchicalWheel::new();
            // Resets to earlier deadlines, which place the timer anew (a later one may stay
            // where it is: see `moved`).
            let a = wheel.insert(710, 'a').unwrap();
            let b = wheel.insert(710, 'b').unwrap();
            let others: Vec<_> = (0..8).map(|_| wheel.insert(1_000, '-').unwrap()).collect();
            wheel.reset(a, 700).unwrap();
            assert_eq!(wheel.nursery.len(), 1, "the reset waits");
            wheel.insert(700, 'c').unwrap();
            wheel.reset(b, 700).unwrap();
            for i in 0..filler {
                wheel
                    .reset(others[i % others.len()], 999 - i as u64)
                    .unwrap();
            }
            wheel.check_invariants();
            assert_eq!(wheel.next_deadline(), Some(700));
            assert_eq!(wheel.poll(699), None);
            let order: Vec<char> = core::iter::from_fn(|| wheel.poll(700))
                .map(|e| e.payload)
                .collect();
            assert_eq!(order, ['a', 'c', 'b'], "with {filler} resets after");
            wheel.check_invariants();
        }
    }

    /// Resets within one slot and across slots order as new insertions when they come due,
    /// also across the `u32` seq renumbering (which rebuilds every place).
    #[test]
    fn same_slot_resets_keep_fifo_across_seq_wrap() {
        let mut wheel: HierarchicalWheel<u32> = HierarchicalWheel::new();
        wheel.seq = SEQ_LIMIT - 4;
        // Level 2 (deadlines 4096..262143 ticks away): slot width 4096.
        let keys: Vec<_> = (0..8u32)
            .map(|i| wheel.insert(5_000 + u64::from(i % 2), i).unwrap())
            .collect();
        // Reset to the same deadline: 0 and 2 move to the back of it.
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

    /// One step of [`the_nursery_never_changes_what_fires`].
    #[derive(Clone, Debug)]
    enum Step {
        /// Insert due `now + d`, or at `now - d` when `past`.
        Insert { d: u64, past: bool },
        /// Cancel the `i`th timer ever inserted (modulo), most often a young one.
        Cancel(usize),
        /// Reset the `i`th timer ever inserted to `now + d`.
        Reset(usize, u64),
        /// Move the clock by `step` and poll until nothing is due.
        Poll(u64),
        /// Hold inserts in the nursery from now on, as a compaction does.
        Hold,
    }

    fn nursery_step() -> impl proptest::strategy::Strategy<Value = Step> {
        use proptest::prelude::*;
        let d = prop_oneof![
            3 => 0u64..80,
            3 => 4_000u64..4_200,
            2 => Just(4_096u64),
            1 => 60u64..70,
            1 => 200_000u64..300_000,
        ];
        prop_oneof![
            6 => (d.clone(), proptest::bool::weighted(0.05))
                .prop_map(|(d, past)| Step::Insert { d, past }),
            4 => any::<usize>().prop_map(Step::Cancel),
            4 => (any::<usize>(), d).prop_map(|(i, d)| Step::Reset(i, d)),
            2 => prop_oneof![Just(0u64), 1u64..70, 4_000u64..4_200].prop_map(Step::Poll),
            1 => Just(Step::Hold),
        ]
    }

    /// Runs `steps` against a hierarchical wheel with a nursery of `capacity` and against the
    /// lazy heap (itself checked against the reference model in `tests/model.rs`); they must
    /// agree on every answer, and the wheel must pass its invariant check after every step.
    fn agree_with_the_heap(capacity: usize, steps: &[Step]) {
        use crate::LazyHeap;
        let mut wheel: HierarchicalWheel<usize> = HierarchicalWheel::new();
        wheel.nursery = Nursery::with_capacity(capacity);
        let mut heap: LazyHeap<usize> = LazyHeap::new();
        let mut keys: Vec<(TimerKey, TimerKey)> = Vec::new();
        let mut now: Tick = 0;
        for (n, step) in steps.iter().enumerate() {
            match *step {
                Step::Insert { d, past } => {
                    let at = if past { now.saturating_sub(d) } else { now + d };
                    let id = keys.len();
                    keys.push((wheel.insert(at, id).unwrap(), heap.insert(at, id).unwrap()));
                }
                // Mostly the latest timers: the young cancels the nursery is for.
                Step::Cancel(i) if !keys.is_empty() => {
                    let back = i % 8.min(keys.len());
                    let i = if i % 4 == 0 { i } else { keys.len() - 1 - back };
                    let (w, h) = keys[i % keys.len()];
                    assert_eq!(wheel.cancel(w), heap.cancel(h), "cancel at step {n}");
                }
                Step::Reset(i, d) if !keys.is_empty() => {
                    let (w, h) = keys[i % keys.len()];
                    assert_eq!(
                        wheel.reset(w, now + d).is_ok(),
                        heap.reset(h, now + d).is_ok(),
                        "reset at step {n}"
                    );
                }
                Step::Cancel(_) | Step::Reset(..) => {}
                Step::Poll(by) => {
                    now += by;
                    loop {
                        let (w, h) = (wheel.poll(now), heap.poll(now));
                        assert_eq!(
                            w.as_ref().map(|e| (e.deadline, e.payload)),
                            h.as_ref().map(|e| (e.deadline, e.payload)),
                            "fired at step {n}"
                        );
                        if w.is_none() {
                            break;
                        }
                    }
                }
                Step::Hold => wheel.nursery.set_holds_inserts(true),
            }
            wheel.check_invariants();
            assert_eq!(wheel.len(), heap.len(), "len at step {n}");
            assert!(
                wheel.next_deadline() <= heap.next_deadline() || heap.is_empty(),
                "next_deadline later than the earliest at step {n}"
            );
        }
        let rest = |v: Vec<Expired<usize>>| -> Vec<(Tick, usize)> {
            v.iter().map(|e| (e.deadline, e.payload)).collect()
        };
        assert_eq!(rest(wheel.drain()), rest(heap.drain()), "drain");
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig {
            cases: if cfg!(debug_assertions) { 200 } else { 2_000 },
            ..proptest::prelude::ProptestConfig::default()
        })]

        /// Placements held in the nursery, pushed when it fills, pushed all at once when the
        /// cursor could reach them, dropped when their timer was cancelled or reset since, and
        /// the nursery switching between holding inserts and not: none of it changes what
        /// fires, when, or in which order.
        #[test]
        fn the_nursery_never_changes_what_fires(
            capacity in proptest::sample::select(vec![2usize, 4, 8, 64]),
            steps in proptest::collection::vec(nursery_step(), 1..400),
        ) {
            agree_with_the_heap(capacity, &steps);
        }
    }
}
