//! Staging: crowded coarse slots cascaded ahead of the cursor, a bounded piece per call, so
//! that the poll that reaches one does not carry all of it down at once.
//!
//! A slot of level 1 or higher that holds more than [`CROWDED`] references and is the
//! earliest of its level is *staged*: its bit in the `staged` words of the levels that hold
//! it is set, and from then on its
//! references are cascaded from the front of its bucket into a stage of its own (a bucket
//! table placed for the cursor at the slot's first tick, `base`), while pushes go on filling
//! the bucket's back. Every staging step leaves the bucket's last chunk in place, so pushes
//! keep their fast path. When the cursor reaches the slot, what is left cascades (at most a
//! chunk, when the calls before kept up) and the stage's levels below the slot's level are
//! swapped in for the wheel's own, which are empty then (all of their timers were due before
//! `base`); the slots that are now the earliest of their levels are staged in turn.
//!
//! A stage's own slot that is the earliest of its level there and grows past [`EAGER`] is
//! staged in turn, into a stage whose *parent* is that stage; when the parent is swapped in,
//! its child stages the wheel's slot. Chains are at most ten stages long, each a level lower
//! than its parent.
//!
//! When staging starts:
//! - past [`EAGER`] references, at any level and in any bucket table: at once, by the push
//!   that crowds the slot, so that a poll after a stall (no poll came when `next_deadline`
//!   asked, and none staged anything) finds the earliest slot of each level staged;
//! - levels 4 to 10 (slots of 2^24 ticks and more): as soon as the slot is crowded and the
//!   earliest of its level, by the push that crowds it;
//! - lower levels, where I/O timeouts gather and mostly die before the cursor gets there: just
//!   in time, once `now` is within [`lead`] ticks of `base` (`hint` is lowered so that a poll
//!   comes then), so that little staging work is spent on timers that are cancelled or reset
//!   first.
//!
//! Besides the push that crowds a slot, an idle poll and every cascade of a coarse slot (the
//! cursor entering its next slot, in a run of fires after a stall as well) check whether the
//! earliest slot of each level is crowded. Crowded means more than [`CROWDED`] references, or
//! half that from level [`FAR`] up.
//!
//! What carries a staged slot on: every poll that gets past the idle check and finds nothing
//! due ([`STAGE_STEP`], earliest stage first, `hint` kept at `now` while a stage has more than
//! that left), every poll that fires (a chunk), every push that takes a new chunk in a slot
//! of the wheel's levels (two chunks), so the bucket shrinks while pushes go on, and every
//! push that takes a new chunk in a slot staged in turn (a chunk, so that a staging step does
//! not set off a growing cascade of steps down the chain; such a bucket stops growing).
//!
//! A reset that moves a timer in place from a staged slot marks both places its reference may
//! be in (the slot's bucket, and its staged place) as homes; where the staged place is a slot
//! staged in turn, the timer takes the general path instead.
//!
//! In `worst_call` at a million timers the most work in one call runs from 128 units (farther
//! jump) to 2,250 (the stall); the wheel's module docs say which calls are not bounded.
//!
//! # Invariants
//! - A staged slot is on level 1 or higher with first tick `base > elapsed`, and its
//!   occupancy bit is set. It is in the wheel's levels, or in its parent stage's on a level
//!   below the parent's (and then `base` is the slot's first tick for the cursor at the
//!   parent's `base`). Every staged bit has exactly one stage, and every stage its bit.
//! - Every live reference to a timer due in the slot's `64^level` ticks from `base` (for a
//!   timer moved in place, every home there) is in the slot's own bucket, in `ready` (due at
//!   `base`) or in the stage's level slot of its deadline for the cursor at `base`, on a level
//!   below the slot's (where that slot is staged in turn, the same holds for it); nothing
//!   else is staged.
//! - References still in the slot's bucket were pushed after every staged reference to an
//!   equal deadline, or were overtaken when they came down (then they go to the overtaken
//!   store, as on the wheel's own level 0). A staged slot stays occupied even when its bucket
//!   is empty.
//! - An idle stage (kept for reuse) holds nothing.
//!
//! # Costs
//! | operation | cost |
//! |---|---|
//! | poll that finds nothing due | at most [`STAGE_STEP`] references carried, rounded up to a chunk |
//! | poll that fires, push that takes a new chunk in a staged slot | one chunk, two chunks |
//! | push that takes a new chunk in a slot staged in turn | one chunk, and so on down its chain (at most ten) |
//! | the cursor reaching a staged slot | what is left in its bucket (a chunk when the calls before kept up), and a swap of the bucket tables below its level |
//! | memory | a bucket table (see the wheel's cost table) per slot staged at once |

use super::cascade::To;
use super::level::slot_start;
use super::*;

/// The most references one poll stages. At a million timers a staged reference can cost a
/// slab miss, about 100 ns (a marked level-1 slot reads its entries): steps of 512 made polls
/// of 50 to 75 µs in `worst_call`'s io churn (`docs/bench-profile.md`).
#[cfg(not(test))]
pub(super) const STAGE_STEP: usize = 256;
/// Small in the unit tests, so that their random operation sequences stage slots often.
#[cfg(test)]
pub(super) const STAGE_STEP: usize = 16;

/// The crowding (references in one coarse slot) from which a slot is staged rather than
/// cascaded at once when the cursor gets there: a cascade of this many unread references
/// takes about 30 µs at a million timers. From 512 instead, expire 100k stages every level-1
/// slot (+16 % instructions).
#[cfg(not(test))]
pub(super) const CROWDED: usize = 1024;
/// Small in the unit tests, and apart from [`STAGE_STEP`], so that both limits are met.
#[cfg(test)]
pub(super) const CROWDED: usize = 32;

/// References a push that takes a new chunk in a staged slot stages: two chunks per chunk
/// pushed, so a staged slot's own bucket shrinks while pushes go on.
pub(super) const PUSH_STEP: usize = 2 * CHUNK;

/// The crowding from which the earliest slot of a level is staged by the push that crowds
/// it, whatever its level, and in a stage's levels as in the wheel's (a stage's slot is then
/// staged in turn). A poll after a stall, which no poll before staged anything for, then
/// finds no such slot holding more than about this many references to cascade at once
/// (`stall` in `worst_call`: about 40 µs at a million timers; 8,192 made it 100 µs). Staging
/// every slot past it instead, not only the earliest, doubled the instructions of
/// `churn_random` at 100k timers (`docs/bench-profile.md`). The unit tests use it as it is.
pub(super) const EAGER: usize = 2_048;

/// The first level whose crowded slots are staged as soon as they are the earliest of their
/// level; below it, just in time (see the module docs).
const EARLY_LEVEL: usize = 4;

/// The ticks before its first tick at which a slot of `len` references starts staging just in
/// time: one poll per tick then carries [`STAGE_STEP`] each, with two ticks to spare.
fn lead(len: usize) -> Tick {
    (len / STAGE_STEP) as Tick + 2
}

/// The crowding threshold of `level`: half of [`CROWDED`] from [`FAR`] up, where a cascade
/// reads every entry (`farther jump` in `worst_call`: slots of about 1,000 references took
/// 60 µs each at [`CROWDED`]).
fn crowded(level: usize) -> usize {
    if level >= FAR {
        CROWDED / 2
    } else {
        CROWDED
    }
}

/// No slot is staged.
const NONE: usize = usize::MAX;

/// A staged slot and the places its references have moved to.
pub(super) struct Stage {
    /// The stage whose levels hold the staged slot, or [`NONE`] for the wheel's own.
    parent: usize,
    /// The staged slot, or [`NONE`] for an idle stage kept for reuse.
    slot: usize,
    /// The staged slot's level.
    level: usize,
    /// The staged slot's first tick: the cursor the staged places are for.
    base: Tick,
    /// Staged references due at `base`.
    ready: Bucket,
    /// Staged references due after `base`, on the levels below `level`.
    levels: Levels,
    /// Bit `s` of `staged[l]` is set iff slot `s` of level `l` of `levels` is staged in turn.
    staged: [u64; LEVELS],
}

impl Stage {
    fn new() -> Self {
        Self {
            parent: NONE,
            slot: NONE,
            level: 0,
            base: 0,
            ready: Bucket::EMPTY,
            levels: Levels::new(),
            staged: [0; LEVELS],
        }
    }

    /// Whether `slot` of `level` in the levels of `parent` (`None`: the wheel's own) is the
    /// staged slot.
    #[inline]
    pub(super) fn holds(&self, parent: Option<usize>, level: usize, slot: usize) -> bool {
        self.slot == slot && self.level == level && self.parent() == parent
    }

    /// The stage whose levels hold the staged slot (`None`: the wheel's own).
    #[inline]
    pub(super) fn parent(&self) -> Option<usize> {
        (self.parent != NONE).then_some(self.parent)
    }

    /// Whether `slot` of `level` of this stage's levels is staged in turn.
    #[inline]
    pub(super) fn is_staged(&self, level: usize, slot: usize) -> bool {
        self.staged[level] & (1 << slot) != 0
    }

    /// The staged bits of this stage's levels, one word per level.
    pub(super) fn staged(&self) -> &[u64; LEVELS] {
        &self.staged
    }

    /// The staged slot: `(level, slot)`.
    pub(super) fn slot(&self) -> (usize, usize) {
        (self.level, self.slot)
    }

    /// Whether a slot is staged.
    #[inline]
    pub(super) fn is_active(&self) -> bool {
        self.slot != NONE
    }

    /// Whether a timer due at `deadline` belongs to the staged slot.
    #[inline]
    pub(super) fn covers(&self, deadline: Tick) -> bool {
        // The slot spans `64^level` ticks from `base`.
        self.is_active() && deadline >= self.base && (deadline - self.base) >> (6 * self.level) == 0
    }

    /// The cursor the staged places are for.
    #[inline]
    pub(super) fn base(&self) -> Tick {
        self.base
    }

    pub(super) fn levels(&self) -> &Levels {
        &self.levels
    }

    pub(super) fn levels_mut(&mut self) -> &mut Levels {
        &mut self.levels
    }

    /// The staged references due at `base`.
    pub(super) fn ready_mut(&mut self) -> &mut Bucket {
        &mut self.ready
    }

    /// Every staged bucket: `ready`, then the staged level slots.
    pub(super) fn buckets(&self) -> impl Iterator<Item = &Bucket> + '_ {
        core::iter::once(&self.ready).chain(self.levels.buckets().map(|(_, _, b)| b))
    }

    /// References staged, live or dead.
    pub(super) fn refs(&self) -> usize {
        self.ready.len() + self.levels.refs()
    }

    /// Forgets everything staged (the caller resets the arena).
    pub(super) fn clear(&mut self) {
        self.parent = NONE;
        self.slot = NONE;
        self.ready = Bucket::EMPTY;
        self.levels.clear();
        self.staged = [0; LEVELS];
    }

    /// The checks of the module docs for the wheel's cursor at `elapsed`, the levels that hold
    /// the staged slot (`parent`, placed for the cursor at `parent_base`), and the wheel's
    /// `hint`, with `overtaken` the level-0 slots the overtaken store holds entries
    /// for; `live` lists a bucket's live references, `deadline` gives a live reference's
    /// deadline (its home for a timer moved in place) and whether it is moved.
    pub(super) fn check(
        &self,
        (parent, parent_base): (&Levels, Tick),
        overtaken: u64,
        elapsed: Tick,
        hint: Tick,
        live: impl Fn(&Bucket) -> Vec<Ref>,
        deadline: impl Fn(&Ref) -> (Tick, bool),
    ) {
        if !self.is_active() {
            assert!(
                self.buckets().all(Bucket::is_empty),
                "references in an idle stage"
            );
            return;
        }
        let (level, slot) = (self.level, self.slot);
        assert!((1..LEVELS).contains(&level), "staged slot on level {level}");
        assert_eq!(
            self.base,
            slot_start(parent_base, level, slot),
            "staged base"
        );
        assert!(self.base > elapsed, "the cursor passed a staged slot");
        assert!(parent.is_marked(level, slot), "staged slot not occupied");
        for r in live(&self.ready) {
            let (d, moved) = deadline(&r);
            assert!(d == self.base && !moved, "staged ready holds {d}");
            assert!(hint <= d, "hint above a staged deadline");
        }
        for (l, s, bucket) in self.levels.buckets() {
            let held = l == 0 && overtaken & (1 << s) != 0;
            assert_eq!(
                self.levels.is_marked(l, s),
                !bucket.is_empty() || held || self.is_staged(l, s),
                "staged occupancy bit of level {l} slot {s} is wrong"
            );
            assert!(
                !self.is_staged(l, s) || (1..level).contains(&l),
                "a stage's level {l} slot {s} is staged in turn"
            );
            let marks = self.levels.marks(l, s);
            for r in live(bucket) {
                let (d, moved) = deadline(&r);
                assert!(l < level, "staged reference on level {l}");
                assert!(self.covers(d) && d > self.base, "staged {d} out of range");
                assert_eq!(level_for(self.base, d), l, "staged {d} on the wrong level");
                assert_eq!(slot_for(d, l), s, "staged {d} in the wrong slot");
                assert!(!moved || (l > 0 && marks.moved), "unmarked staged home");
                assert!(hint <= d, "hint above a staged deadline");
            }
        }
    }
}

impl<T> HierarchicalWheel<T> {
    /// Whether `slot` of `level` is staged: one test of a bit.
    #[inline(always)]
    pub(super) fn is_staged(&self, level: usize, slot: usize) -> bool {
        self.staged[level] & (1 << slot) != 0
    }

    /// The levels that hold stage `i`'s slot: the wheel's own, or its parent stage's.
    fn source(&self, i: usize) -> &Levels {
        match self.stages[i].parent() {
            None => &self.levels,
            Some(p) => &self.stages[p].levels,
        }
    }

    /// [`source`](Self::source), to take from, beside the arena.
    fn source_mut(&mut self, i: usize) -> (&mut Levels, &mut Chunks) {
        let levels = match self.stages[i].parent() {
            None => &mut self.levels,
            Some(p) => &mut self.stages[p].levels,
        };
        (levels, &mut self.chunks)
    }

    /// References left to stage in stage `i`'s slot (0 for an idle stage).
    fn stage_left(&self, i: usize) -> usize {
        let s = &self.stages[i];
        if s.is_active() {
            self.source(i).bucket(s.level, s.slot).len()
        } else {
            0
        }
    }

    /// The earliest stage with more than a chunk left in its slot: the one a step carries on.
    fn next_to_stage(&self) -> Option<usize> {
        (0..self.stages.len())
            .filter(|&i| self.stage_left(i) > CHUNK)
            .min_by_key(|&i| self.stages[i].base)
    }

    /// The index in `stages` of the stage of `slot` on `level` (which is staged) in the levels
    /// of `parent` (`None`: the wheel's own).
    fn stage_of(&self, parent: Option<usize>, level: usize, slot: usize) -> usize {
        let found = self
            .stages
            .iter()
            .position(|s| s.holds(parent, level, slot));
        found.expect("a staged slot has its stage")
    }

    /// Stages `slot` of `level` (1 or higher, occupied, not staged) in the levels of `parent`
    /// (`None`: the wheel's own): from now on its bucket is cascaded into a stage of its own,
    /// from the front.
    fn begin_stage(&mut self, parent: Option<usize>, level: usize, slot: usize) {
        debug_assert!(level > 0);
        let parent_base = match parent {
            None => {
                debug_assert!(!self.is_staged(level, slot));
                self.staged[level] |= 1 << slot;
                self.elapsed
            }
            Some(p) => {
                let ps = &mut self.stages[p];
                debug_assert!(level < ps.level && !ps.is_staged(level, slot));
                ps.staged[level] |= 1 << slot;
                ps.base
            }
        };
        let i = match self.stages.iter().position(|s| !s.is_active()) {
            Some(i) => i,
            None => {
                self.stages.push(Stage::new());
                self.stages.len() - 1
            }
        };
        let base = slot_start(parent_base, level, slot);
        // A poll at `base` swaps the stage in and then stages its crowded slots in turn.
        self.lower_hint(base);
        self.stage_pending = true;
        let s = &mut self.stages[i];
        s.parent = parent.unwrap_or(NONE);
        s.slot = slot;
        s.level = level;
        s.base = base;
    }

    /// After a push that took a new chunk in `slot` of `level` (1 or higher): stages the slot
    /// once it is crowded if it is the earliest of its level (see
    /// [`begin_or_wait`](Self::begin_or_wait) for when), and carries a staged slot's bucket on
    /// by [`PUSH_STEP`]. Later slots wait until they are the earliest: their timers may yet be
    /// cancelled, and a cascade done early is wasted on them.
    pub(super) fn after_new_chunk(&mut self, level: usize, slot: usize) {
        if self.is_staged(level, slot) {
            // Not in a call that took a compaction step: one bounded piece per call.
            if !self.staging && !self.pass.stepped_for(self.seq) {
                let start = self.work;
                let i = self.stage_of(None, level, slot);
                self.stage_some(i, PUSH_STEP);
                self.note_work(start);
            }
            return;
        }
        if self.levels.bucket(level, slot).len() > crowded(level) {
            if let Some((first, start)) = self.levels.first_of(level, self.elapsed) {
                if first == slot {
                    self.begin_or_wait(level, slot, start);
                }
            }
        }
    }

    /// After a staging push that took a new chunk in `slot` of `level` (1 or higher) of stage
    /// `i`'s levels: carries that slot on by a chunk if it is staged in turn, so that its
    /// bucket does not grow, or stages it once it holds more than [`EAGER`] if it is the
    /// earliest of its level there.
    fn after_staged_chunk(&mut self, i: usize, level: usize, slot: usize) {
        if self.stages[i].is_staged(level, slot) {
            let j = self.stage_of(Some(i), level, slot);
            self.stage_some(j, CHUNK);
        } else if self.stages[i].levels.bucket(level, slot).len() > EAGER {
            let s = &self.stages[i];
            if s.levels
                .first_of(level, s.base)
                .is_some_and(|(first, _)| first == slot)
            {
                self.begin_stage(Some(i), level, slot);
            }
        }
    }

    /// Stages the crowded `slot` of `level` (the earliest of its level), starting at `start`,
    /// now if its level is staged early, it holds more than [`EAGER`] or its [`lead`] has come;
    /// otherwise lowers `hint` so that a poll comes then.
    fn begin_or_wait(&mut self, level: usize, slot: usize, start: Tick) {
        let len = self.levels.bucket(level, slot).len();
        if level >= EARLY_LEVEL || len > EAGER || start.saturating_sub(lead(len)) <= self.now {
            self.begin_stage(None, level, slot);
        } else {
            self.lower_hint(start - lead(len));
        }
    }

    /// [`Timer::reset`] to a later deadline of a timer whose reference is in the staged `slot`
    /// of `level` (the caller checked that it may move in place otherwise): the reference may
    /// still be in the slot's own bucket or staged already, so both places are marked as
    /// homes. A reference staged at the stage's cursor or on its level 0 is not a place a home
    /// may be; that timer takes the general path.
    #[inline(never)]
    pub(super) fn reset_staged(
        &mut self,
        key: TimerKey,
        deadline: Tick,
        level: usize,
        slot: usize,
    ) -> Result<(), StaleKeyError> {
        let old = self.slab.at(key.index).deadline();
        let i = self.stage_of(None, level, slot);
        let base = self.stages[i].base;
        let l = level_for(base, old);
        if old == base || l == 0 || self.stages[i].is_staged(l, slot_for(old, l)) {
            return self.reset_anywhere(key, deadline);
        }
        self.stages[i].levels.mark_moved(l, slot_for(old, l));
        self.levels.mark_moved(level, slot);
        let seq = self.seq;
        let e = self.slab.at_mut(key.index);
        moved::move_in_place(e, e.seq, deadline, seq);
        self.seq += 1;
        self.stats.reset += 1;
        Ok(())
    }

    /// Stages the earliest slot of each coarse level if it is crowded and not staged yet, or
    /// lowers `hint` to when it should be.
    pub(super) fn begin_crowded(&mut self) {
        for level in 1..LEVELS {
            if let Some((slot, start)) = self.levels.first_of(level, self.elapsed) {
                if !self.is_staged(level, slot)
                    && self.levels.bucket(level, slot).len() > crowded(level)
                {
                    self.begin_or_wait(level, slot, start);
                }
            }
        }
    }

    /// After a poll that fired a timer while a stage has references left in its slot:
    /// carries one chunk of the earliest such slot on, so that a run of fires (a far jump
    /// draining) stages the next crowded slot before the cursor gets there.
    #[inline(never)]
    pub(super) fn stage_on_fire(&mut self) {
        match self.next_to_stage() {
            Some(i) => {
                self.stage_some(i, CHUNK);
            }
            None => self.stage_pending = false,
        }
    }

    /// At the end of a poll that found nothing due: stages the earliest slot of each coarse
    /// level if it is crowded, then carries up to [`STAGE_STEP`] references of the staged
    /// slots' buckets on, earliest slot first. Returns whether a staged slot's bucket still
    /// holds more than [`STAGE_STEP`].
    pub(super) fn stage_ahead(&mut self) -> bool {
        self.begin_crowded();
        let mut budget = STAGE_STEP;
        loop {
            let Some(i) = self.next_to_stage() else {
                return false;
            };
            if budget == 0 {
                return self.stage_left(i) > STAGE_STEP;
            }
            budget = budget.saturating_sub(self.stage_some(i, budget));
        }
    }

    /// Cascades about `n` references (whole chunks) from the front of stage `i`'s slot to
    /// their staged places, leaving the slot's last chunk where it is (pushes are filling
    /// it; taking it would send the next push to a new chunk, one reference at a time);
    /// returns how many.
    pub(super) fn stage_some(&mut self, i: usize, n: usize) -> usize {
        self.stage_from(i, n, CHUNK)
    }

    /// [`stage_some`](Self::stage_some) down to `keep` references left in the slot.
    fn stage_from(&mut self, i: usize, n: usize, keep: usize) -> usize {
        let (level, slot) = (self.stages[i].level, self.stages[i].slot);
        let was = core::mem::replace(&mut self.staging, true);
        let mut done = 0;
        let mut batch = [Ref::default(); CHUNK];
        while done < n && self.source(i).bucket(level, slot).len() > keep {
            let (source, chunks) = self.source_mut(i);
            let k = source.take_chunk(chunks, level, slot, &mut batch);
            if k == 0 {
                break;
            }
            // Read each time: a reset may have marked the slot moved meanwhile.
            let marks = self.source(i).marks(level, slot);
            self.cascade_batch(&batch[..k], level, marks, To::Stage(i));
            done += k;
        }
        self.staging = was;
        done
    }

    /// Puts a cascading timer due in stage `i`'s range in its staged place; on level 0 or at
    /// `base`, behind a later `seq`, it is overtaken (see
    /// [`cascade_one`](Self::cascade_one)).
    pub(super) fn stage_push(&mut self, i: usize, index: u32, deadline: Tick, seq: u32) {
        let r = Ref::to(index, seq, deadline);
        let s = &self.stages[i];
        if deadline == s.base {
            if self.overtakes(&s.ready, seq) {
                self.overtake(index, deadline, seq);
            } else {
                self.chunks.push(&mut self.stages[i].ready, r);
            }
            return;
        }
        let l = level_for(s.base, deadline);
        let slot = slot_for(deadline, l);
        if l == 0 && self.overtakes(s.levels.bucket(0, slot), seq) {
            self.overtake(index, deadline, seq);
            self.stages[i].levels.mark_occupied(0, slot);
        } else {
            self.push_to_stage(i, l, slot, r);
        }
    }

    /// Pushes `r` into `slot` of `level` of stage `i`'s levels, and carries that slot on or
    /// stages it if the push took a new chunk there (see
    /// [`after_staged_chunk`](Self::after_staged_chunk)).
    pub(super) fn push_to_stage(&mut self, i: usize, level: usize, slot: usize, r: Ref) {
        let levels = &mut self.stages[i].levels;
        let new_chunk = level > 0 && Chunks::push_needs_chunk(levels.bucket(level, slot));
        levels.push(&mut self.chunks, level, slot, r);
        if new_chunk {
            self.after_staged_chunk(i, level, slot);
        }
    }

    /// Forgets every stage (the caller resets the arena).
    pub(super) fn clear_stages(&mut self) {
        for stage in self.stages.iter_mut() {
            stage.clear();
        }
        self.staged = [0; LEVELS];
    }

    /// The cursor reached the staged `slot` of `level`: cascades what is left in its bucket,
    /// then swaps its staged levels in (the wheel's own below `level` are empty).
    pub(super) fn finish_stage(&mut self, level: usize, slot: usize) {
        let i = self.stage_of(None, level, slot);
        // The wheel's slots below `level` and its ready bucket swap with the stage's.
        self.pass.bucket_moves(|table, l, _| {
            table == i + 1 || (table == 0 && (l < level || l == LEVELS))
        });
        self.stage_from(i, usize::MAX, 0);
        let (left, _) = self.levels.take(level, slot);
        debug_assert!(left.is_empty());
        debug_assert!(self.ready.is_empty(), "advance_to empties the ready bucket");
        let s = &mut self.stages[i];
        self.levels.swap_below(&mut s.levels, level);
        self.staged[..level].swap_with_slice(&mut s.staged[..level]);
        self.work += level as u64;
        self.ready = core::mem::replace(&mut s.ready, Bucket::EMPTY);
        s.slot = NONE;
        self.staged[level] &= !(1 << slot);
        // The stages of its slots that were staged in turn now stage the wheel's own slots.
        for s in self.stages.iter_mut().filter(|s| s.parent == i) {
            s.parent = NONE;
        }
        // The swapped-in slots may be crowded, and a slot further on is now the earliest of
        // its level.
        self.begin_crowded();
    }
}
