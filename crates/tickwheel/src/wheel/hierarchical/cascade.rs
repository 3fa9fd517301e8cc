//! Cascading: moving the cursor to the next occupied slot and carrying that slot's references
//! down to the level their deadlines now call for (moved-in-place homes included), either at
//! once when the cursor reaches the slot or ahead of it ([`stage`]).

use super::*;

/// Where a cascade puts the references it carries down.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum To {
    /// The wheel's own places, for the cursor where it is (at the slot's first tick).
    Main,
    /// The staged places of this stage (an index in the wheel's stages), for the cursor at
    /// the staged slot's first tick.
    Stage(usize),
}

impl<T> HierarchicalWheel<T> {
    /// The earliest occupied slot: `(level, slot, first tick of the slot)`.
    #[inline]
    pub(super) fn next_slot(&self) -> Option<(usize, usize, Tick)> {
        self.levels.next_slot(self.elapsed)
    }

    /// Moves the cursor forward to `t`. The caller guarantees nothing in the levels is due
    /// before `t` and nothing live is left at the cursor.
    pub(super) fn advance_to(&mut self, t: Tick) {
        debug_assert!(t >= self.elapsed && self.due_is_empty());
        if t == self.elapsed {
            return;
        }
        // What is left in the ready bucket is dead.
        self.chunks.clear(&mut self.ready);
        self.elapsed = t;
    }

    /// Empties one slot at the cursor: a level-0 slot is due whole; a coarser one cascades
    /// (a staged one has cascaded already, or finishes now, and its staged places take over).
    pub(super) fn process(&mut self, level: usize, slot: usize, start: Tick) {
        self.pass
            .bucket_moves(|table, l, s| table == 0 && (l, s) == (level, slot));
        self.advance_to(start);
        self.stats.slots_scanned += 1;
        self.work += 1;
        if self.is_staged(level, slot) {
            self.finish_stage(level, slot);
            return;
        }
        let (mut bucket, marks) = self.levels.take(level, slot);
        if level == 0 {
            // Every live timer here is due exactly at `start`: the bucket becomes the ready
            // bucket as it is, in `seq` order (the overtaken store holds the rest).
            debug_assert!(self.ready.is_empty(), "advance_to empties the ready bucket");
            debug_assert!(!marks.moved, "no timer is moved in place from level 0");
            self.ready = bucket;
            return;
        }
        let mut batch = [Ref::default(); CHUNK];
        let was = core::mem::replace(&mut self.busy, true);
        loop {
            let n = self.chunks.take_chunk(&mut bucket, &mut batch);
            if n == 0 {
                break;
            }
            self.cascade_batch(&batch[..n], level, marks, To::Main);
        }
        self.busy = was;
        // The cursor entered a new slot of this level: the next one may be crowded.
        self.begin_crowded();
    }

    /// Cascades `batch` (up to a chunk of references), taken from a slot of `level` with
    /// `marks`, to `to`.
    ///
    /// Below level [`FAR`] a deadline agrees with the cursor on bits 30 and up: it is rebuilt
    /// from the reference's low half and the slab is left alone. Dead references move down with
    /// the live ones and are dropped when the slab is read anyway. A level-1 slot that may be
    /// the home of timers moved in place reads every entry instead; a coarser one carries its
    /// references down as they are (a home goes to the place of its own deadline, which is at
    /// or before its timer's), so the reads are spread over the level-1 cascades instead of one
    /// burst for a whole coarse slot.
    pub(super) fn cascade_batch(&mut self, batch: &[Ref], level: usize, marks: Marks, to: To) {
        let n = batch.len();
        let far = level >= FAR;
        debug_assert!(
            !(far && marks.moved),
            "no timer is moved in place from level {level}"
        );
        let read = marks.moved && level == 1;
        let high = self.base(to) & !u64::from(u32::MAX);
        if read || far {
            self.warm(batch);
        }
        for &r in batch {
            if read {
                self.cascade_read(r, high, to);
            } else if marks.moved {
                self.carry_home(r, high, to);
            } else if !far {
                self.cascade_one(r.index, high | u64::from(r.low), r.seq, to);
            } else {
                match self.slab.try_at(r.index) {
                    Some(e) if e.seq == r.seq => {
                        let deadline = e.deadline();
                        self.cascade_one(r.index, deadline, r.seq, to);
                    }
                    _ => self.stats.stale_skipped += 1,
                }
            }
        }
        self.stats.cascaded += n as u64;
        self.work += n as u64;
    }

    /// The cursor a cascade to `to` places for.
    #[inline(always)]
    fn base(&self, to: To) -> Tick {
        match to {
            To::Main => self.elapsed,
            To::Stage(i) => self.stages[i].base(),
        }
    }

    /// Places one cascading timer. Level 0 and the ready bucket hand references out in the
    /// order they hold them: a reference that would follow a later `seq` there is overtaken
    /// and goes to the overtaken store instead.
    #[inline(always)]
    pub(super) fn cascade_one(&mut self, index: u32, deadline: Tick, seq: u32, to: To) {
        if let To::Stage(i) = to {
            if self.stages[i].covers(deadline) {
                self.stage_push(i, index, deadline, seq);
                return;
            }
        }
        if in_levels(self.elapsed, deadline) {
            self.lower_hint(deadline);
            self.push_in_order(index, deadline, seq);
        } else if deadline == self.elapsed && self.overtakes(&self.ready, seq) {
            self.overtake(index, deadline, seq);
        } else {
            self.place(index, deadline, seq);
        }
    }

    /// Whether a reference with `seq` pushed into `bucket` would follow a later one.
    #[inline(always)]
    pub(super) fn overtakes(&self, bucket: &Bucket, seq: u32) -> bool {
        self.chunks.last(bucket).is_some_and(|r| r.seq > seq)
    }

    /// Puts an overtaken timer in the overtaken store (the caller sets the occupancy bit of
    /// its level-0 slot).
    #[inline(never)]
    pub(super) fn overtake(&mut self, index: u32, deadline: Tick, seq: u32) {
        self.lower_hint(deadline);
        self.overtaken.push(deadline, seq, index);
    }

    /// Cascades one reference of a slot that may be the home of timers moved in place: a
    /// live ordinary timer moves down, a moved one whose home this is settles and goes where
    /// its deadline says, a dead reference is dropped.
    pub(super) fn cascade_read(&mut self, r: Ref, high: Tick, to: To) {
        let Some(e) = self.slab.try_at(r.index) else {
            self.stats.stale_skipped += 1;
            return;
        };
        if e.seq == r.seq {
            self.cascade_one(r.index, high | u64::from(r.low), r.seq, to);
        } else if is_moved(e.seq) && moved::live_seq(e) == r.seq {
            let e = self.slab.at_mut(r.index);
            moved::settle(e, self.elapsed);
            let (deadline, seq) = (e.deadline(), e.seq);
            self.cascade_one(r.index, deadline, seq, to);
        } else {
            self.stats.stale_skipped += 1;
        }
    }

    /// Cascades one reference of a coarse slot that may be the home of timers moved in place,
    /// without reading the slab: to a slot that cascades, marked moved since it may now be a
    /// home. A reference whose deadline `home` lands in level 0 or at the cursor could name a
    /// moved timer that a fire must not see as due, so that one is read and settled now.
    #[inline(always)]
    pub(super) fn carry_home(&mut self, r: Ref, high: Tick, to: To) {
        let home = high | u64::from(r.low);
        let base = self.base(to);
        let level = level_for(base, home);
        if level > 0 && in_levels(base, home) {
            // The reference is the same `(index, seq, low)`, in the place of `home`.
            let slot = slot_for(home, level);
            match to {
                To::Main => {
                    let new_chunk = Chunks::push_needs_chunk(self.levels.bucket(level, slot));
                    self.levels.push(&mut self.chunks, level, slot, r);
                    self.levels.mark_moved(level, slot);
                    if new_chunk {
                        self.after_new_chunk(level, slot);
                    }
                }
                To::Stage(i) => {
                    self.stages[i].levels_mut().mark_moved(level, slot);
                    self.push_to_stage(i, level, slot, r);
                }
            }
        } else {
            self.cascade_read(r, high, to);
        }
    }
}
