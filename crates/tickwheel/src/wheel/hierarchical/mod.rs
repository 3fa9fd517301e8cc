//! `HierarchicalWheel`: eleven levels of 64 slots, each level 64× coarser, enough for every
//! `u64` deadline, with an occupancy bitmap per level and cascading.
//!
//! The cursor `elapsed` is the last tick fully swept. A timer due after it sits in the slot
//! chosen by [`level`] (the highest 6-bit group where deadline and cursor differ);
//! the earliest timer is therefore in the first set bit of the lowest non-empty level, found
//! with one `trailing_zeros`. When the cursor reaches a coarse slot, its timers move down
//! (cascade) to finer levels; a level-0 slot holds exactly one tick and becomes the ready
//! bucket whole. Timers behind the cursor (inserted or reset into the past) wait in the ordered
//! overdue store.
//!
//! Slots are [`bucket`]s: chunk lists of `(index, seq, low deadline bits)` references into the slab with
//! lazy deletion. Cancel and reset write only the timer's own slab entry (and a counter), never
//! a neighbour; a cascade or a fire walks a slot's chunks, so the misses on the entries it reads
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
//! in first-in first-out order: a level-0 slot and the ready bucket hand references out in
//! the order they hold, so a reference that would come down behind a later `seq` there goes
//! to the [`overtaken`] store instead, and the fire of its tick merges the two by `seq`.
//!
//! A coarse slot that gathers more than [`CROWDED`](stage::CROWDED) references is
//! cascaded ahead of the cursor, a bounded piece per call, into places kept apart until the
//! cursor gets there ([`stage`]).
//!
//! Any other `reset` does not push at once either: its placement into the levels waits in the
//! [`nursery`], a ring of placements in `seq` order, pushed 32 at a time. At a
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
//!   (`deadline == elapsed`), or level `level_for(elapsed, d)` slot `slot_for(d, level)`.
//!   The overdue store is keyed by `(deadline, seq)` and removed from eagerly;
//!   buckets keep dead references, counted (see [`bucket`]); a push that takes a new chunk
//!   (the only way the arena grows) or a cancel that finds them above three times the pending
//!   timers (plus a slack) starts a compaction pass, which such pushes and every
//!   [`CANCEL_STEP`](compact::CANCEL_STEP)th cancel carry on a step at a time ([`compact`]).
//!   A placement bound for a level slot may still wait in the nursery, which holds only such
//!   placements, in `seq` order, behind every reference already pushed;
//!   while it is non-empty, every placement into the levels joins it. Every deadline it holds
//!   is after `elapsed`: `poll` pushes them all before the cursor could reach one. A timer
//!   whose placement it holds is never moved in place.
//! - A timer moved in place has its one live reference (its home) in a slot of level 1 or
//!   higher whose moved mark is set, at or before its deadline ([`moved`]).
//! - A level's occupancy bit is set iff its slot's bucket holds any reference, or (level 0)
//!   the overtaken store holds one due in that slot, or the slot is staged.
//! - Equal deadlines leave first-in first-out: every insert and reset takes a new `seq`; a
//!   level-0 bucket (the wheel's or a stage's) and the ready bucket hold increasing `seq`s,
//!   and the overtaken store holds, in `(deadline, seq)` order, the references that came down
//!   behind a later one. Coarser buckets may hold any order. Seqs stay
//!   below 2^31 (the top bit marks a moved entry); before they would reach it, every pending
//!   timer is renumbered in firing order and every place rebuilt.
//! - `elapsed <= now`; the ready bucket holds no live reference whenever `elapsed` moves.
//! - `hint` is at most every pending deadline, so an idle `poll` is one comparison.
//!
//! # Costs
//! | operation | cost |
//! |---|---|
//! | insert | O(1) amortised: a few bit operations and a push at the end of a slot's last chunk, or into the nursery and later (if still pending) from there (a push that takes a chunk may take a compaction step first: amortised O(1) per dead reference dropped) |
//! | cancel, reset | O(1) amortised: the timer's own entry, a counter, and (reset) a push into the nursery, or for a later deadline nothing more; overdue: O(log n) |
//! | poll per fired timer | O(1) amortised: each timer cascades at most once per level above its own (5 times within 2^36 ticks); dead references are skipped once; a marked level-1 slot reads one entry per reference (coarser marked slots carry theirs down unread); a reference overtaken on the way to level 0 costs a binary-heap push and pop (O(log k)) |
//! | poll with nothing due, `next_deadline` | O(1): a comparison with the cached lower bound |
//! | jump of any length | O(levels) to find the next slot; no empty slot is visited |
//! | worst single call ([`Stats::max_call_work`]) | bounded while polls come when `next_deadline` asks, and after a stall up to the slots that were the earliest of their levels, with the exceptions below |
//! | memory per timer | a 24 B slab slot (u64 payload) + a 12 B reference (up to 4× under churn: a pass starts above 3× and reads four chunks per chunk pushes take) + the slab's `Vec` growth; 14,080 B of buckets (704 of 20 B) and a 4 KiB nursery per wheel, another 14,080 B per slot staged at once, and 16 B per overtaken reference until its tick (room for an eighth of `preallocate` is reserved, so that a herd does not make one call copy the store) |
//!
//! # The worst single call
//! While the caller polls at least when [`next_deadline`](Timer::next_deadline) asks, one
//! call does one bounded piece of deferred work, and a poll also its own cascades:
//! - a compaction step (1,024 references and 64 buckets), taken only by a cancel, an insert or
//!   reset whose push takes a chunk (which then stages nothing), or a poll that did less than
//!   a chunk's worth of other work; the pushes of a flush or a cascade take none;
//! - or a nursery flush (512 placements);
//! - or [`STAGE_STEP`](stage::STAGE_STEP) references staged (rounded up to a chunk);
//! - and in a poll, a chunk left at a staged slot and one uncrowded slot's cascade
//!   ([`CROWDED`](stage::CROWDED) references at most, half that from level
//!   [`FAR`], where a cascade reads every entry) per level.
//!
//! No timer waits outside the levels, so this holds however far a deadline lies and however
//! far `now` jumps (`farther jump` and `span crossing` in the `worst_call` example).
//!
//! A poll after a stall (polls did not come when `next_deadline` asked, so none staged the
//! slots ahead) that reaches the slots that were the earliest of their levels when the stall
//! began cascades, per level it comes down through, at most [`EAGER`](stage::EAGER)
//! references and two chunks more: past that, such a slot is staged by its own pushes
//! (`stall` in `worst_call`).
//!
//! Three calls are not bounded:
//! - a poll after a stall that reaches a crowded slot which became the earliest of its level
//!   during the stall: it is staged from then on, the fires before it carry a chunk of it on
//!   each, and what they left cascades at once;
//! - a poll reads every dead reference between the cursor and the next live timer; compaction
//!   keeps the dead under three times the pending timers, not away from the cursor
//!   (`cancelled ahead` in `worst_call`);
//! - renumbering, once per 2^31 inserts and resets, rebuilds every place.
//!
//! Follows tokio's time driver (64 slots per level at 1 ms, level from the highest differing
//! bits; tokio stops at 6 levels and files later deadlines in its top level) and Varghese &
//! Lauck's hierarchical scheme 7; lazy deletion as in asyncio's heap.

use alloc::collections::BTreeMap;
use alloc::vec::Vec;

pub(crate) mod bucket;
pub(crate) mod level;
pub(crate) mod moved;
pub(crate) mod nursery;

mod cascade;
mod compact;
mod fire;
mod invariants;
mod overtaken;
mod place;
mod renumber;
mod stage;
#[cfg(test)]
mod tests;

use crate::slab::Slab;
use crate::stamped::{self, Stamped};
use crate::{
    ConfigError, Expired, FromOptions, InsertError, Options, StaleKeyError, Stats, Tick, Timer,
    TimerKey,
};
use bucket::{Bucket, Chunks, Ref, CHUNK};
use compact::{COMPACT_RATIO, COMPACT_SLACK};
use level::{in_levels, level_for, slot_for, Levels, Marks, FAR, LEVELS, SLOTS};
use moved::{is_moved, MOVED};
use nursery::{Nursery, Placement, TAKE};
use overtaken::Overtaken;
use stage::Stage;

/// Timers kept in order rather than in a slot: `(deadline, seq) -> index`.
type Ordered = BTreeMap<(Tick, u32), u32>;

/// Whether a timer due at `deadline` is kept in the overdue store rather than referenced
/// from a bucket (the ready bucket or a level slot), with the cursor at `elapsed`.
#[inline(always)]
fn is_overdue(elapsed: Tick, deadline: Tick) -> bool {
    deadline < elapsed
}

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
    /// References that came down to level 0 or the ready bucket behind a later `seq`.
    overtaken: Overtaken,
    /// Crowded slots being cascaded ahead of the cursor (and idle stages kept for reuse).
    stages: Vec<Stage>,
    /// Bit `s` of `staged[l]` is set iff slot `s` of level `l` is staged.
    staged: [u64; LEVELS],
    /// A staging step is running (a push it makes into a staged slot does not start another).
    staging: bool,
    /// A flush longer than a batch or a slot's cascade is running: its pushes earn
    /// compaction credit but take no step (one bounded piece per call).
    busy: bool,
    /// A staged slot may have references left to stage: a poll that fires carries some on.
    stage_pending: bool,
    /// The compaction pass in progress, if any.
    pass: compact::Pass,
    /// Work done so far (see [`Stats::max_call_work`]): the calls that can do more than a
    /// few units read it before and after.
    work: u64,
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
            elapsed: options.start,
            now: options.start,
            hint: Tick::MAX,
            fired_since_hint: false,
            seq: 0,
            nursery: Nursery::new(),
            overtaken: Overtaken::with_capacity(pre / 8),
            stages: Vec::new(),
            staged: [0; LEVELS],
            staging: false,
            busy: false,
            stage_pending: false,
            pass: compact::Pass::IDLE,
            work: 0,
            stats: Stats::default(),
        }
    }
}

impl<T> HierarchicalWheel<T> {
    /// Ends a call that began when [`work`](Self::work) was `start`: keeps the largest.
    #[inline]
    fn note_work(&mut self, start: u64) {
        self.stats.max_call_work = self.stats.max_call_work.max(self.work - start);
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
        // The reference goes dead where it lies, for a compaction pass to drop; every
        // `CANCEL_STEP`th cancel carries a pass a step on.
        let entry = self.slab.remove(key)?;
        if !is_moved(entry.seq) {
            self.unplace(key.index, entry.deadline(), entry.seq);
        }
        self.stats.cancelled += 1;
        if self.stats.cancelled % compact::CANCEL_STEP == 0 {
            self.compact_on_cancel();
        }
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
        let old = e.deadline();
        if is_overdue(elapsed, old) {
            return self.reset_anywhere(key, deadline);
        }
        let level = level_for(elapsed, old);
        if deadline >= old
            && (1..FAR).contains(&level)
            && moved::encodable(elapsed, deadline)
            && !self.nursery.may_hold(e.seq)
        {
            let slot = slot_for(old, level);
            if self.staged[level] & (1 << slot) != 0 {
                return self.reset_staged(key, deadline, level, slot);
            }
            // Later, from a slot of a level below `FAR`: the reference stays where it is, as
            // the home, and the cascade of that slot places the timer (see `moved`). Levels
            // from `FAR` up hold no homes: their cascades read each deadline from the slab and
            // carry nothing down unread.
            moved::move_in_place(e, e.seq, deadline, seq);
            self.seq += 1;
            self.stats.reset += 1;
            self.levels.mark_moved(level, slot);
            return Ok(());
        }
        // The entry takes the new seq, so its old reference counts as dead where it lies.
        e.set_deadline(deadline);
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
        self.stages = Vec::new();
        self.chunks = Chunks::new(0, 0);
        self.place_in_order(&order);
        self.chunks.shrink_to_fit();
        self.overtaken.shrink_to_fit();
        self.slab.shrink_to_fit();
    }

    fn allocated_bytes(&self) -> usize {
        // A B-tree entry of `((Tick, u32), u32)` with node overhead: about 1.5× its 16 bytes.
        let ordered = self.overdue.len() * 24;
        self.slab.allocated_bytes()
            + self.overtaken.allocated_bytes()
            + (1 + self.stages.len()) * self.levels.allocated_bytes()
            + self.chunks.allocated_bytes()
            + self.nursery.allocated_bytes()
            + ordered
    }

    fn name(&self) -> &'static str {
        "hierarchical"
    }

    fn check_invariants(&self) {
        self.invariants();
    }
}
