//! Compaction: when and where dead references are dropped. References above
//! [`COMPACT_RATIO`] times the pending timers start a pass over the buckets, crowded slots
//! first; pushes that take a new chunk, every [`CANCEL_STEP`]th cancel and polls that find
//! nothing due carry it on, a bounded step at a time. Cancels take part so that a burst of
//! them (clients leaving en masse) does not leave all its dead references for the one poll
//! that reaches them: of a million timers, all but one cancelled, that poll reads about a
//! thousand references (a test pins it for ten thousand timers). A step is the one bounded
//! piece of its call: the pushes of a nursery flush or of a slot's cascade earn credit but
//! take no step, a push that took one stages nothing, and a poll takes one only if it did
//! less than a chunk's worth of other work. At a million timers a step takes about 45 µs
//! (`worst_call`), the largest piece any bounded call does.
//!
//! A pass visits the wheel's crowded slots (each holding more than an eighth of all
//! references) and crowded stages first. Short-lived timers gather there: request deadlines a
//! few seconds out, cancelled when the response comes, all land in the one or two coarse slots
//! the cursor is a few seconds behind, and every one leaves a dead reference. If that brings
//! the references down to 1.5 times the pending timers, the pass ends and the other buckets
//! (long timeouts, mostly live) are left unread; otherwise it visits every other bucket too.
//! Amortised O(1) per dead reference either way: it starts above 3 references per pending
//! timer, so a pass that stops early has dropped at least half of what it read, and one that
//! goes on drops every dead reference, two thirds or more of all.
//!
//! # Invariants
//! - A pass is idle or visiting one bucket table (the wheel's, then each stage's), with the
//!   slots of that table it has not visited yet.
//! - A pass stopped inside a bucket resumes after the chunk it stopped at only while that
//!   chunk has not been freed and the bucket has not moved to another slot (a cascade takes
//!   it, a level-0 slot becomes the ready bucket, a stage's tables are swapped in); otherwise
//!   it goes on with the next bucket.
//!
//! # Costs
//! | operation | cost |
//! |---|---|
//! | push that takes a new chunk, pass idle | O(1); O(slots) to count the references when the chunks in use exceed the bound |
//! | poll that finds nothing due, pass running | a step, if the poll did less than a chunk's worth of other work |
//! | every [`CANCEL_STEP`]th cancel | O(1) when the chunks in use are within the bound; else O(slots) to count the references, and a step |
//! | push that takes a new chunk, pass running | a step per [`WINDOW`] / [`STEP_CHUNKS`] such pushes, at most one per insert or reset, none in a flush or a cascade: up to [`WINDOW`] chunks (1,024 references) and [`STEP_VISITS`] buckets |

use super::bucket::{Compacted, WINDOW};
use super::*;
use crate::slab::NIL;

/// References above `COMPACT_RATIO` times the pending timers (plus [`COMPACT_SLACK`]), found
/// by a push that takes a new chunk, start a compaction pass. A pass that reads every
/// reference's entry, live or dead, costs `r / (r - 1)` slab reads per dead reference it
/// drops: 2 at a ratio of 2, 1.5 at 3 (one that finds the dead gathered in a few slots reads
/// little more than those). At 3, dead references may take up to about 36 B per pending timer
/// (a pass lets the arena grow by a third); `docs/bench-profile.md` has the measurements that
/// chose it.
pub(super) const COMPACT_RATIO: usize = 3;

/// Dead references tolerated beyond the live ones before a pass starts.
pub(super) const COMPACT_SLACK: usize = 64;

/// Chunks' worth of references a pass reads per chunk a push takes: four times as fast as
/// pushes can fill new chunks, so a pass is over before the arena grows by a third. They are
/// read a step of [`WINDOW`] chunks at a time, so that few windows end in a chunk padded
/// with dead references.
pub(super) const STEP_CHUNKS: usize = 4;

/// Cancels per step they take: a step reads up to [`WINDOW`] chunks (1,024 references), so
/// cancels read up to 4 references each, as fast as pushes that take chunks.
pub(super) const CANCEL_STEP: u64 = 256;

/// The most buckets one step visits (empty ones included).
pub(super) const STEP_VISITS: usize = 64;

/// Which buckets a pass is visiting.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    Idle,
    /// The crowded slots and stages.
    Crowded,
    /// Every other bucket.
    Rest,
}

/// A pass stopped inside a bucket: its slot (`LEVELS` for a table's ready bucket), the chunk
/// after which it goes on, and what shows that the chunk is still there.
#[derive(Clone, Copy, Debug)]
struct Inside {
    level: usize,
    slot: usize,
    after: u32,
    freed: u32,
}

/// A compaction pass in progress (see the module docs).
#[derive(Clone, Debug)]
pub(super) struct Pass {
    phase: Phase,
    /// The table being visited: 0 for the wheel's own, `i + 1` for stage `i`.
    table: usize,
    /// The current table's slots not visited yet, one word per level.
    todo: [u64; LEVELS],
    /// The current table's ready bucket is not visited yet.
    todo_ready: bool,
    inside: Option<Inside>,
    /// The wheel's crowded slots when the pass began.
    crowded: [u64; LEVELS],
    /// References when the pass began, and dropped since.
    refs: usize,
    dropped: usize,
    /// References the next step may read.
    credit: usize,
    /// The `seq` at the last step: one step per insert or reset.
    stepped_at: Option<u32>,
}

impl Pass {
    pub(super) const IDLE: Pass = Pass {
        phase: Phase::Idle,
        table: 0,
        todo: [0; LEVELS],
        todo_ready: false,
        inside: None,
        crowded: [0; LEVELS],
        refs: 0,
        dropped: 0,
        credit: 0,
        stepped_at: None,
    };

    /// Whether the insert or reset that took `seq` took a step.
    #[inline(always)]
    pub(super) fn stepped_for(&self, seq: u32) -> bool {
        self.stepped_at == Some(seq)
    }

    /// Whether a pass is running.
    #[inline(always)]
    pub(super) fn is_running(&self) -> bool {
        self.phase != Phase::Idle
    }

    /// A bucket is moving to another slot (or being taken whole): if `moves(table, level,
    /// slot)` says it is the one the pass stopped inside, the pass goes on with its next
    /// bucket instead.
    #[inline]
    pub(super) fn bucket_moves(&mut self, moves: impl Fn(usize, usize, usize) -> bool) {
        if let Some(at) = self.inside {
            if moves(self.table, at.level, at.slot) {
                self.inside = None;
            }
        }
    }
}

impl<T> HierarchicalWheel<T> {
    /// Called before every push that takes a new chunk: starts a pass when references exceed
    /// [`COMPACT_RATIO`] times the pending timers (plus [`COMPACT_SLACK`]), and carries a
    /// running one on. Only such a push grows the arena, so the check waits for one, once per
    /// [`CHUNK`] pushes into a slot rather than on every insert; cancels make their own check
    /// every [`CANCEL_STEP`] ([`compact_on_cancel`](Self::compact_on_cancel)).
    #[inline(always)]
    pub(super) fn maybe_compact(&mut self) {
        if self.compaction_may_be_due() {
            self.compact_some();
        }
    }

    /// Whether a pass runs or may have to start: the chunks in use bound the references in
    /// O(1), and only above the bound are they counted.
    #[inline(always)]
    fn compaction_may_be_due(&self) -> bool {
        self.pass.is_running() || self.chunks.in_use() * CHUNK > self.refs_bound()
    }

    /// References in the buckets (the levels' and `ready`), live or dead: counted over the
    /// occupied slots when a compaction may be due, not kept by every push. A counter updated
    /// per push measured about 4 % of `insert` (`docs/bench-profile.md`).
    pub(super) fn refs(&self) -> usize {
        self.levels.refs() + self.ready.len() + self.stages.iter().map(Stage::refs).sum::<usize>()
    }

    /// The most references a push may find in the buckets without compacting first:
    /// [`COMPACT_RATIO`] times the pending timers, plus [`COMPACT_SLACK`].
    #[inline(always)]
    pub(super) fn refs_bound(&self) -> usize {
        COMPACT_RATIO * self.slab.len() + COMPACT_SLACK
    }

    /// Starts a pass if the references are above the bound, and takes a step of it once the
    /// pushes have earned one: [`STEP_CHUNKS`] chunks' worth per chunk taken, a step reading
    /// [`WINDOW`] chunks, at most one step per insert or reset.
    #[cold]
    #[inline(never)]
    fn compact_some(&mut self) {
        if !self.pass.is_running() {
            if !self.start_pass() {
                return;
            }
            // The push that starts it takes the first step.
            self.pass.credit = WINDOW * CHUNK - STEP_CHUNKS * CHUNK;
        }
        self.pass.credit += STEP_CHUNKS * CHUNK;
        if self.pass.credit < WINDOW * CHUNK || self.pass.stepped_at == Some(self.seq) || self.busy
        {
            return;
        }
        self.pass.stepped_at = Some(self.seq);
        let start = self.work;
        self.compact_step();
        self.note_work(start);
    }

    /// Starts a pass if the references (counted over the occupied slots) are above the bound;
    /// returns whether it did.
    fn start_pass(&mut self) -> bool {
        let refs = self.refs();
        if refs <= self.refs_bound() {
            return false;
        }
        let crowded = self.levels.slots_longer_than(refs / 8);
        self.pass = Pass {
            phase: Phase::Crowded,
            todo: crowded,
            crowded,
            refs,
            ..Pass::IDLE
        };
        self.stats.compactions += 1;
        // Dead references piled up: see whether holding inserts in the nursery would have
        // spared them (`make_room` decides after one round).
        self.nursery.set_holds_inserts(true);
        true
    }

    /// Every [`CANCEL_STEP`]th cancel: starts a pass if the references are above the bound,
    /// and takes a full step of a running one, so that the dead references a burst of cancels
    /// leaves are dropped while it goes on, not all read by the one poll that reaches them.
    #[cold]
    #[inline(never)]
    pub(super) fn compact_on_cancel(&mut self) {
        if !self.compaction_may_be_due() || !(self.pass.is_running() || self.start_pass()) {
            return;
        }
        let start = self.work;
        self.full_step();
        self.note_work(start);
    }

    /// A full step of the running pass, whatever its credit: what a poll that finds nothing
    /// due takes (so that dead references are gone before the cursor carries them down), and
    /// every [`CANCEL_STEP`]th cancel.
    #[cold]
    #[inline(never)]
    pub(super) fn full_step(&mut self) {
        self.pass.credit = self.pass.credit.max(WINDOW * CHUNK);
        self.compact_step();
    }

    /// One step of the pass: up to its credit in references (at most [`WINDOW`] chunks) and
    /// [`STEP_VISITS`] buckets.
    pub(super) fn compact_step(&mut self) {
        let mut budget = self.pass.credit.min(WINDOW * CHUNK);
        let (mut read, mut visits) = (0, 0);
        while budget > 0 && visits < STEP_VISITS {
            let Some((level, slot, after)) = self.next_bucket() else {
                self.pass = Pass::IDLE;
                return;
            };
            visits += 1;
            let max = budget.div_ceil(CHUNK).min(WINDOW);
            let done = self.compact_bucket(level, slot, after, max);
            read += done.read.max(1);
            budget = budget.saturating_sub(done.read.max(1));
            self.pass.dropped += done.dropped;
            self.stats.stale_skipped += done.dropped as u64;
            self.work += 1 + done.read as u64;
            self.pass.inside = done.resume.map(|after| Inside {
                level,
                slot,
                after,
                freed: if after == NIL {
                    0
                } else {
                    self.chunks.times_freed(after)
                },
            });
        }
        self.pass.credit = self.pass.credit.saturating_sub(read);
    }

    /// Runs the pass in progress to its end, a full step at a time, checking the invariants
    /// after each; returns the steps taken.
    #[cfg(test)]
    pub(super) fn finish_pass(&mut self) -> usize {
        let mut steps = 0;
        while self.pass.is_running() {
            self.pass.credit = WINDOW * CHUNK;
            self.compact_step();
            self.invariants();
            steps += 1;
            assert!(steps < 1_000_000, "a pass that does not end");
        }
        steps
    }

    /// The bucket a step goes on with: `(level, slot, after)` in the current table, or `None`
    /// when the pass is over.
    fn next_bucket(&mut self) -> Option<(usize, usize, u32)> {
        if let Some(at) = self.pass.inside.take() {
            let there = at.after == NIL || self.chunks.times_freed(at.after) == at.freed;
            if there {
                return Some((at.level, at.slot, at.after));
            }
        }
        loop {
            if let Some(level) = self.pass.todo.iter().position(|&w| w != 0) {
                let word = &mut self.pass.todo[level];
                let slot = word.trailing_zeros() as usize;
                *word &= *word - 1;
                return Some((level, slot, NIL));
            }
            if core::mem::take(&mut self.pass.todo_ready) {
                return Some((LEVELS, 0, NIL));
            }
            if !self.next_table() {
                return None;
            }
        }
    }

    /// Moves the pass on to its next table, or its next phase; false when it is over.
    fn next_table(&mut self) -> bool {
        let crowded = self.pass.refs / 8;
        loop {
            let i = self.pass.table;
            self.pass.table += 1;
            let Some(stage) = self.stages.get(i) else {
                break;
            };
            let refs = stage.refs();
            if refs > 0 && (refs > crowded) == (self.pass.phase == Phase::Crowded) {
                self.pass.todo = stage.levels().occupied();
                self.pass.todo_ready = true;
                return true;
            }
        }
        let live = self.slab.len();
        if self.pass.phase == Phase::Rest
            || self.pass.refs.saturating_sub(self.pass.dropped) <= live + live / 2
        {
            return false;
        }
        self.pass.phase = Phase::Rest;
        self.pass.table = 0;
        let occupied = self.levels.occupied();
        for (l, word) in self.pass.todo.iter_mut().enumerate() {
            *word = occupied[l] & !self.pass.crowded[l];
        }
        self.pass.todo_ready = true;
        true
    }

    /// Compacts up to `max` chunks of one bucket of the current table, after chunk `after`.
    fn compact_bucket(&mut self, level: usize, slot: usize, after: u32, max: usize) -> Compacted {
        let staged = level < LEVELS && self.is_staged(level, slot);
        let (chunks, slab) = (&mut self.chunks, &self.slab);
        match self.pass.table {
            0 if level == LEVELS => chunks.compact_some(&mut self.ready, slab, after, max, true),
            0 => self
                .levels
                .compact_some(chunks, slab, (level, slot), after, max, staged),
            t => match self.stages.get_mut(t - 1) {
                Some(stage) if level == LEVELS => {
                    chunks.compact_some(stage.ready_mut(), slab, after, max, true)
                }
                Some(stage) => {
                    let staged = stage.is_staged(level, slot);
                    stage
                        .levels_mut()
                        .compact_some(chunks, slab, (level, slot), after, max, staged)
                }
                None => Compacted::DONE,
            },
        }
    }
}
