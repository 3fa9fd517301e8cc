//! Staging: crowded coarse slots cascaded ahead of the cursor, a bounded piece per poll, so
//! that a poll that reaches one does not carry all of it down at once.
//!
//! When a poll finds nothing due, the earliest occupied slot of each level from 1 up that holds
//! more than [`STAGE_STEP`] references is *staged*: its bucket becomes the stage's `rest`, its
//! occupancy bit stays set (so `next_slot` still finds it when the cursor gets there) and its
//! bit in the wheel's `staged` words is set. Every later poll that gets past the idle check
//! cascades up to [`STAGE_STEP`] references of `rest`, earliest stage first, into the stage's
//! own levels, placed for the cursor at the slot's first tick `base`. While any `rest` is not
//! empty, `hint` stays at `now`, so an event loop that sleeps until `next_deadline` comes
//! straight back for the next piece; a push that makes the earliest slot of its level crowded
//! lowers `hint` the same way. When the cursor reaches a staged slot, what is left of its
//! `rest` cascades, and the stage's levels below the slot's level are swapped in for the
//! wheel's own, which are empty then (all of their timers were due before `base`).
//!
//! A push into a staged slot's range goes to the back of `rest` while `rest` holds anything,
//! and cascades one chunk of `rest` in the same call, so `rest` shrinks with every push; once
//! `rest` is empty, pushes go straight to their staged place. References to equal deadlines
//! thus stay in `seq` order. A reset never moves a timer in place from a staged slot (it takes
//! the general path), so a staged slot's marks are the ones it had when staging began.
//!
//! It pays where one coarse slot gathers a large share of the timers: in `worst_call`, a
//! million timers due at one tick, polled once per tick, cost no call more than 2,053 units of
//! work instead of 2,000,007.
//!
//! # Invariants
//! - A staged slot is on level 1 or higher with first tick `base > elapsed`. In the wheel's
//!   levels its bucket is empty, its occupancy bit set and its marks clear.
//! - Every live reference to a timer due in `[base, end]` (for a timer moved in place, every
//!   home there) is in `rest`, in `ready` (due at `base`) or in the stage's level slot of its
//!   deadline for the cursor at `base`, on a level below the slot's; nothing else is staged.
//! - References in `rest` were pushed before every staged reference to an equal deadline;
//!   staged buckets keep `seq` order among equal deadlines unless marked unsorted.
//! - An idle stage (kept for reuse) holds nothing.
//!
//! # Costs
//! | operation | cost |
//! |---|---|
//! | poll that stages | at most [`STAGE_STEP`] references carried, rounded up to a chunk |
//! | push into a staged range | one push, plus one chunk of `rest` carried while it is not empty |
//! | the cursor reaching a staged slot | what is left of `rest` (none when polls kept up), and a swap of the bucket tables below its level |
//! | memory | a 7,680 B bucket table per slot staged at once |

use super::cascade::To;
use super::level::{slot_start, Marks};
use super::*;

/// The most references one poll stages, and the crowding (references in the earliest slot of
/// a coarse level) from which a slot is staged rather than cascaded at once.
#[cfg(not(test))]
pub(super) const STAGE_STEP: usize = 2_048;
/// Small in the unit tests, so that their random operation sequences stage slots often.
#[cfg(test)]
pub(super) const STAGE_STEP: usize = 16;

/// No slot is staged.
const NONE: usize = usize::MAX;

/// The staged slot and the places its references have moved to.
pub(super) struct Stage {
    /// The staged slot, or [`NONE`].
    slot: usize,
    /// The staged slot's level.
    level: usize,
    /// The staged slot's first tick: the cursor the staged places are for.
    base: Tick,
    /// The staged slot's last tick.
    end: Tick,
    /// The slot's marks when staging began.
    marks: Marks,
    /// References not staged yet, oldest first.
    rest: Bucket,
    /// Staged references due at `base`.
    ready: Bucket,
    /// `ready` may be out of `seq` order.
    ready_unsorted: bool,
    /// Staged references due after `base`, on the levels below `level`.
    levels: Levels,
}

impl Stage {
    fn new() -> Self {
        Self {
            slot: NONE,
            level: 0,
            base: 0,
            end: 0,
            marks: Marks {
                moved: false,
                unsorted: false,
            },
            rest: Bucket::EMPTY,
            ready: Bucket::EMPTY,
            ready_unsorted: false,
            levels: Levels::new(),
        }
    }

    /// Whether `slot` of `level` is the staged slot.
    #[inline]
    pub(super) fn holds(&self, level: usize, slot: usize) -> bool {
        self.slot == slot && self.level == level
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
        self.is_active() && (self.base..=self.end).contains(&deadline)
    }

    /// The cursor the staged places are for.
    #[inline]
    pub(super) fn base(&self) -> Tick {
        self.base
    }

    pub(super) fn levels_mut(&mut self) -> &mut Levels {
        &mut self.levels
    }

    /// Every staged bucket with what it is: `rest`, `ready`, then the staged level slots.
    pub(super) fn buckets(&self) -> impl Iterator<Item = &Bucket> + '_ {
        [&self.rest, &self.ready]
            .into_iter()
            .chain(self.levels.buckets().map(|(_, _, b)| b))
    }

    /// References staged or waiting to be, live or dead.
    pub(super) fn refs(&self) -> usize {
        self.rest.len() + self.ready.len() + self.levels.refs()
    }

    /// Marks the place of a timer due at `deadline` (covered) as possibly out of `seq` order:
    /// all of `rest` while that holds anything (the reference may be anywhere in it).
    pub(super) fn mark_unsorted(&mut self, deadline: Tick) {
        if !self.rest.is_empty() {
            self.marks.unsorted = true;
        } else if deadline == self.base {
            self.ready_unsorted = true;
        } else {
            let level = level_for(self.base, deadline);
            self.levels.mark_unsorted(level, slot_for(deadline, level));
        }
    }

    /// Forgets everything staged (the caller resets the arena).
    pub(super) fn clear(&mut self) {
        self.slot = NONE;
        self.rest = Bucket::EMPTY;
        self.ready = Bucket::EMPTY;
        self.ready_unsorted = false;
        self.levels.clear();
    }

    /// The checks of the module docs for the wheel's cursor at `elapsed`; `live` lists a
    /// bucket's live references, `deadline` a live reference's deadline (its home for a timer
    /// moved in place) and whether it is moved.
    pub(super) fn check(
        &self,
        main: &Levels,
        elapsed: Tick,
        live: impl Fn(&Bucket) -> Vec<Ref>,
        deadline: impl Fn(&Ref) -> (Tick, bool),
    ) {
        if !self.is_active() {
            assert!(
                self.buckets().all(Bucket::is_empty),
                "references staged with no slot staged"
            );
            return;
        }
        let (level, slot) = (self.level, self.slot);
        assert!((1..LEVELS).contains(&level), "staged slot on level {level}");
        assert_eq!(self.base, slot_start(elapsed, level, slot), "staged base");
        assert_eq!(self.end, self.base + (1 << (6 * level)) - 1, "staged end");
        assert!(self.base > elapsed, "the cursor passed the staged slot");
        assert!(
            main.bucket(level, slot).is_empty() && main.is_marked(level, slot),
            "staged slot not held empty and occupied"
        );
        let marks = main.marks(level, slot);
        assert!(!marks.moved && !marks.unsorted, "staged slot marked");
        for r in live(&self.rest) {
            let (d, _) = deadline(&r);
            assert!(self.covers(d), "rest holds {d}, outside the staged slot");
        }
        for r in live(&self.ready) {
            let (d, moved) = deadline(&r);
            assert!(d == self.base && !moved, "staged ready holds {d}");
        }
        for (l, s, bucket) in self.levels.buckets() {
            assert_eq!(
                self.levels.is_marked(l, s),
                !bucket.is_empty(),
                "staged occupancy bit of level {l} slot {s} is wrong"
            );
            let marks = self.levels.marks(l, s);
            for r in live(bucket) {
                let (d, moved) = deadline(&r);
                assert!(l < level, "staged reference on level {l}");
                assert!(self.covers(d) && d > self.base, "staged {d} out of range");
                assert_eq!(level_for(self.base, d), l, "staged {d} on the wrong level");
                assert_eq!(slot_for(d, l), s, "staged {d} in the wrong slot");
                assert!(!moved || (l > 0 && marks.moved), "unmarked staged home");
            }
        }
    }
}

impl<T> HierarchicalWheel<T> {
    /// Whether `slot` of `level` is staged: one test of a bit, for the paths that must not
    /// push into or move in place from a staged slot.
    #[inline(always)]
    pub(super) fn is_staged(&self, level: usize, slot: usize) -> bool {
        self.staged[level] & (1 << slot) != 0
    }

    /// The index in `stages` of the stage of `slot` on `level` (which is staged).
    fn stage_of(&self, level: usize, slot: usize) -> usize {
        let found = self.stages.iter().position(|s| s.holds(level, slot));
        found.expect("a staged slot has its stage")
    }

    /// At the end of a poll that found nothing due: stages the earliest occupied slot of each
    /// coarse level if it is crowded and not staged yet, then stages up to [`STAGE_STEP`]
    /// references, earliest slot first. Returns whether references are left to stage.
    pub(super) fn stage_ahead(&mut self) -> bool {
        for level in 1..LEVELS {
            let Some((slot, start)) = self.levels.first_of(level, self.elapsed) else {
                continue;
            };
            if self.is_staged(level, slot) || self.levels.bucket(level, slot).len() <= STAGE_STEP {
                continue;
            }
            let (rest, marks) = self.levels.take(level, slot);
            self.levels.hold(level, slot);
            self.staged[level] |= 1 << slot;
            let i = match self.stages.iter().position(|s| !s.is_active()) {
                Some(i) => i,
                None => {
                    self.stages.push(Stage::new());
                    self.stages.len() - 1
                }
            };
            let s = &mut self.stages[i];
            s.slot = slot;
            s.level = level;
            s.base = start;
            s.end = start + (1 << (6 * level)) - 1;
            s.marks = marks;
            s.rest = rest;
        }
        let mut budget = STAGE_STEP;
        loop {
            let next = (0..self.stages.len())
                .filter(|&i| !self.stages[i].rest.is_empty())
                .min_by_key(|&i| self.stages[i].base);
            let Some(i) = next else {
                return false;
            };
            if budget == 0 {
                return true;
            }
            budget = budget.saturating_sub(self.stage_some(i, budget));
        }
    }

    /// Cascades about `n` references of stage `i`'s `rest` (whole chunks) to their staged
    /// places; returns how many.
    pub(super) fn stage_some(&mut self, i: usize, n: usize) -> usize {
        let mut done = 0;
        let (level, marks) = (self.stages[i].level, self.stages[i].marks);
        while done < n {
            let mut rest = core::mem::replace(&mut self.stages[i].rest, Bucket::EMPTY);
            // A staged cascade pushes nothing into its own `rest`: what it carries goes to
            // staged places, or (a timer moved in place that settles later) beyond the slot.
            let k = self.cascade_chunk(&mut rest, level, marks, To::Stage(i));
            debug_assert!(self.stages[i].rest.is_empty());
            self.stages[i].rest = rest;
            if k == 0 {
                break;
            }
            done += k;
        }
        done
    }

    /// Puts a cascading timer due in stage `i`'s range in its staged place.
    pub(super) fn stage_push(
        &mut self,
        i: usize,
        index: u32,
        deadline: Tick,
        seq: u32,
        unsorted: bool,
    ) {
        let r = Ref::to(index, seq, deadline);
        let s = &mut self.stages[i];
        if deadline == s.base {
            self.chunks.push(&mut s.ready, r);
            s.ready_unsorted |= unsorted;
        } else {
            let l = level_for(s.base, deadline);
            let slot = slot_for(deadline, l);
            s.levels.push(&mut self.chunks, l, slot, r);
            if unsorted {
                s.levels.mark_unsorted(l, slot);
            }
        }
    }

    /// A push into a staged slot (which the wheel's levels hold empty): behind `rest` while
    /// that holds anything, carrying one chunk of it on, else straight to its staged place.
    #[inline(never)]
    pub(super) fn push_staged(
        &mut self,
        level: usize,
        slot: usize,
        index: u32,
        deadline: Tick,
        seq: u32,
    ) {
        let i = self.stage_of(level, slot);
        if self.stages[i].rest.is_empty() {
            self.stage_push(i, index, deadline, seq, false);
        } else {
            let r = Ref::to(index, seq, deadline);
            self.chunks.push(&mut self.stages[i].rest, r);
            self.stage_some(i, 1);
        }
    }

    /// Drops the dead references of everything staged; returns how many.
    pub(super) fn compact_stages(&mut self) -> usize {
        let mut dropped = 0;
        for s in self.stages.iter_mut() {
            dropped += self.chunks.compact(&mut s.rest, &self.slab);
            dropped += self.chunks.compact(&mut s.ready, &self.slab);
            dropped += s
                .levels
                .compact(&mut self.chunks, &self.slab, [u64::MAX; LEVELS]);
        }
        dropped
    }

    /// The stage covering `deadline`, if any.
    pub(super) fn stage_covering(&mut self, deadline: Tick) -> Option<&mut Stage> {
        self.stages.iter_mut().find(|s| s.covers(deadline))
    }

    /// Forgets every stage (the caller resets the arena).
    pub(super) fn clear_stages(&mut self) {
        for stage in self.stages.iter_mut() {
            stage.clear();
        }
        self.staged = [0; LEVELS];
    }

    /// The cursor reached the staged `slot` of `level`: cascades what is left of its `rest`,
    /// then swaps its staged levels in (the wheel's own below `level` are empty).
    pub(super) fn finish_stage(&mut self, level: usize, slot: usize) {
        let i = self.stage_of(level, slot);
        let (held, marks) = self.levels.take(level, slot);
        debug_assert!(held.is_empty() && !marks.moved && !marks.unsorted);
        self.stage_some(i, usize::MAX);
        debug_assert!(self.ready.is_empty(), "advance_to empties the ready bucket");
        let s = &mut self.stages[i];
        self.levels.swap_below(&mut s.levels, level);
        self.work += level as u64;
        self.ready = core::mem::replace(&mut s.ready, Bucket::EMPTY);
        let unsorted = core::mem::take(&mut s.ready_unsorted);
        s.slot = NONE;
        self.staged[level] &= !(1 << slot);
        if unsorted {
            self.sort_ready();
        }
    }
}
