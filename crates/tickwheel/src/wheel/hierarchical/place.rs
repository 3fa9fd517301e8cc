//! Placement: where a timer's one live reference goes (the ready bucket, a level slot, the
//! nursery, or the overdue store), pushing it there, and taking it out of the overdue store.

use super::nursery::BATCH;
use super::*;

impl<T> HierarchicalWheel<T> {
    /// Puts a timer's reference where its deadline says. The slot and ready cases are inline;
    /// the overdue store (past deadlines) is out of line, so the hot path saves no registers
    /// for it.
    #[inline(always)]
    pub(super) fn place(&mut self, index: u32, deadline: Tick, seq: u32) {
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
            self.place_overdue(index, deadline, seq);
        }
    }

    /// Pushes a reference into the level slot its deadline picks; the caller checked that the
    /// deadline is in the levels and lowered `hint`.
    #[inline(always)]
    pub(super) fn push_to_levels(&mut self, index: u32, deadline: Tick, seq: u32) {
        let level = level_for(self.elapsed, deadline);
        let slot = slot_for(deadline, level);
        self.push_to_slot(level, slot, index, deadline, seq);
    }

    /// [`push_to_levels`](Self::push_to_levels) into `slot` of `level`, which the deadline
    /// picks.
    #[inline(always)]
    fn push_to_slot(&mut self, level: usize, slot: usize, index: u32, deadline: Tick, seq: u32) {
        // The reference is built in each branch: one shared value passed to the call below
        // went through the stack and stalled the fast path's store on reading it back.
        if Chunks::push_needs_chunk(self.levels.bucket(level, slot)) {
            self.push_to_new_chunk(level, slot, index, deadline, seq);
        } else {
            let r = Ref::to(index, seq, deadline);
            self.levels.push_to_tail(&mut self.chunks, level, slot, r);
        }
    }

    /// [`push_to_levels`](Self::push_to_levels) for a timer that may come after a later
    /// `seq` pushed into its level-0 slot (a cascade, a nursery flush): there it is
    /// overtaken instead, so that the slot keeps `seq` order.
    #[inline(always)]
    pub(super) fn push_in_order(&mut self, index: u32, deadline: Tick, seq: u32) {
        let level = level_for(self.elapsed, deadline);
        let slot = slot_for(deadline, level);
        if level == 0 && self.overtakes(self.levels.bucket(0, slot), seq) {
            self.overtake(index, deadline, seq);
            self.levels.mark_occupied(0, slot);
        } else {
            self.push_to_slot(level, slot, index, deadline, seq);
        }
    }

    /// [`push_to_levels`](Self::push_to_levels) into a slot that needs a new chunk, the one
    /// place the arena may grow: compacts first if the references are above the bound. Once
    /// per [`CHUNK`] pushes into a slot, so out of line, which keeps the push's registers free.
    #[inline(never)]
    pub(super) fn push_to_new_chunk(
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
        if level > 0 {
            self.after_new_chunk(level, slot);
        }
    }

    /// Keeps `hint` at most every pending deadline. Written only when it falls, which is
    /// rare once a wheel holds timers.
    #[inline(always)]
    pub(super) fn lower_hint(&mut self, deadline: Tick) {
        if deadline < self.hint {
            self.hint = deadline;
        }
    }

    /// Puts a new timer in the slab with order `seq`, which it then consumes; a refused
    /// insert takes no seq.
    #[inline(always)]
    pub(super) fn store(
        &mut self,
        deadline: Tick,
        payload: T,
        seq: u32,
    ) -> Result<TimerKey, InsertError<T>> {
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
    pub(super) fn place_in_turn(&mut self, index: u32, deadline: Tick, seq: u32) {
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
    pub(super) fn defer(&mut self, index: u32, deadline: Tick, seq: u32) {
        self.lower_hint(deadline);
        self.nursery.push(Placement { index, seq }, deadline);
        if self.nursery.is_full() {
            self.make_room();
        }
    }

    /// Empties a full nursery enough for more placements. One holding inserts pushes its
    /// older half, and stops holding inserts if fewer than a quarter of those had died (the
    /// compaction that started it was not caused by young cancels); one holding a batch of
    /// resets pushes it all, so that inserts stop queueing behind it.
    #[inline(never)]
    pub(super) fn make_room(&mut self) {
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

    /// [`Timer::reset`] in every case: renumbering, the ordered stores, a stale key.
    #[inline(never)]
    pub(super) fn reset_anywhere(
        &mut self,
        key: TimerKey,
        deadline: Tick,
    ) -> Result<(), StaleKeyError> {
        if self.seq >= SEQ_LIMIT {
            self.renumber();
        }
        let seq = self.seq;
        let e = self.slab.get_mut(key).ok_or(StaleKeyError { key })?;
        // A timer moved in place has its home in a bucket: nothing to unplace.
        let old = (!is_moved(e.seq)).then_some((e.deadline(), e.seq));
        e.set_deadline(deadline);
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
    pub(super) fn insert_anywhere(
        &mut self,
        deadline: Tick,
        payload: T,
    ) -> Result<TimerKey, InsertError<T>> {
        if self.seq >= SEQ_LIMIT {
            self.renumber();
        }
        let seq = self.seq;
        let key = self.store(deadline, payload, seq)?;
        self.place_in_turn(key.index, deadline, seq);
        Ok(key)
    }

    /// Pushes the `n` oldest placements of the nursery (at most all it holds) into their
    /// slots, in order, and drops the dead ones (their timers were cancelled or reset since);
    /// returns how many were dead. The cursor has not reached any of their deadlines (`poll`
    /// pushes them all first), so each live one still belongs in the levels, where the current
    /// cursor puts it.
    #[inline(never)]
    pub(super) fn flush(&mut self, n: usize) -> usize {
        let start = self.work;
        // The pushes of a flush longer than a batch earn compaction credit but take no step:
        // the step waits for a later call, so that one call does not do both.
        let was = self.busy;
        self.busy |= n.min(self.nursery.len()) > BATCH;
        let mut dead = 0;
        let mut left = n;
        let mut batch = [Placement::default(); TAKE];
        while left > 0 {
            let k = self.nursery.take_oldest(left, &mut batch);
            if k == 0 {
                break;
            }
            left -= k;
            self.work += k as u64;
            for p in &batch[..k] {
                // Live iff the entry still holds the placement's seq; its deadline is then the
                // one the placement was made with.
                let Some(deadline) = stamped::live_deadline(&self.slab, p.index, p.seq) else {
                    dead += 1;
                    continue;
                };
                debug_assert!(in_levels(self.elapsed, deadline));
                // A cascade may have pushed a later seq into its level-0 slot meanwhile.
                self.push_in_order(p.index, deadline, p.seq);
            }
        }
        self.stats.stale_skipped += dead as u64;
        self.busy = was;
        self.note_work(start);
        dead
    }

    /// [`place`](Self::place) for a deadline behind the cursor.
    #[cold]
    #[inline(never)]
    pub(super) fn place_overdue(&mut self, index: u32, deadline: Tick, seq: u32) {
        self.overdue.insert((deadline, seq), index);
    }

    /// Retires the place of a timer that was cancelled or took a new seq. A reference in a
    /// bucket just goes dead where it is; the overdue store drops its key now.
    #[inline(always)]
    pub(super) fn unplace(&mut self, index: u32, deadline: Tick, seq: u32) {
        if is_overdue(self.elapsed, deadline) {
            self.unplace_overdue(index, deadline, seq);
        }
    }

    /// [`unplace`](Self::unplace) for a deadline behind the cursor.
    #[cold]
    #[inline(never)]
    pub(super) fn unplace_overdue(&mut self, index: u32, deadline: Tick, seq: u32) {
        let removed = self.overdue.remove(&(deadline, seq));
        debug_assert_eq!(removed, Some(index), "overdue store lost a timer");
    }
}
