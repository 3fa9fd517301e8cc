//! Firing: handing due timers out of the ordered overdue store and the ready bucket, in
//! deadline and `seq` order, one per call.

use super::*;

impl<T> HierarchicalWheel<T> {
    /// Live timers still to hand out at the cursor: the overdue store, then the ready bucket.
    #[inline]
    pub(super) fn due_is_empty(&self) -> bool {
        self.overdue.is_empty() && self.ready.is_empty()
    }

    /// The next due timer, out of the slab: overdue ones first (all earlier), then the ready
    /// bucket in order, dropping its dead references on the way.
    #[inline]
    pub(super) fn pop_due(&mut self) -> Option<Expired<T>> {
        if !self.overdue.is_empty() {
            let (_, index) = self.overdue.pop_first()?;
            return Some(self.take(index));
        }
        if !self.overtaken.is_empty() {
            return self.pop_merged();
        }
        self.warm_ready_chunk();
        let mut skipped = 0;
        let mut fired = None;
        while let Some(r) = self.chunks.pop(&mut self.ready) {
            fired = self.take_live(r.index, r.seq);
            if fired.is_some() {
                break;
            }
            skipped += 1;
        }
        self.count_pop(skipped);
        fired
    }

    /// The timer a due reference names, out of the slab, if the reference is live.
    #[inline(always)]
    fn take_live(&mut self, index: u32, seq: u32) -> Option<Expired<T>> {
        let (key, e) = self.slab.take_if(index, |e| e.seq == seq)?;
        Some(e.into_expired(key))
    }

    /// Counts a pop that dropped `skipped` dead references on its way.
    #[inline(always)]
    fn count_pop(&mut self, skipped: u64) {
        self.stats.stale_skipped += skipped;
        self.work += skipped + 1;
    }

    /// [`pop_due`](Self::pop_due) while the overtaken store holds references: the ready
    /// bucket and the overtaken ones due at the cursor, merged by `seq`.
    #[cold]
    #[inline(never)]
    fn pop_merged(&mut self) -> Option<Expired<T>> {
        let mut skipped = 0;
        let mut fired = None;
        loop {
            let due = self
                .overtaken
                .first()
                .filter(|e| e.deadline == self.elapsed);
            let front = self.chunks.front(&self.ready);
            let (index, seq) = match (due, front) {
                (Some(e), Some(r)) if r.seq < e.seq => {
                    self.chunks.pop(&mut self.ready);
                    (r.index, r.seq)
                }
                (Some(e), _) => {
                    self.overtaken.pop();
                    (e.index, e.seq)
                }
                (None, Some(r)) => {
                    self.chunks.pop(&mut self.ready);
                    (r.index, r.seq)
                }
                (None, None) => break,
            };
            fired = self.take_live(index, seq);
            if fired.is_some() {
                break;
            }
            skipped += 1;
        }
        self.count_pop(skipped);
        fired
    }

    /// When the ready bucket's cursor enters a chunk, reads the slab entries of all its (up to
    /// 64) references in one tight loop. The reads are independent, so their cache misses
    /// overlap (tens in flight) instead of one per `poll` call, and the next polls find their
    /// entries in cache. No `unsafe` prefetch: plain loads whose values feed a `black_box`.
    #[inline]
    pub(super) fn warm_ready_chunk(&self) {
        let refs = self.chunks.fresh_chunk(&self.ready);
        if refs.len() >= 2 {
            self.warm(refs);
        }
    }

    /// Reads the slab entries of up to a chunk of references in one tight loop, so their
    /// misses overlap before the code that needs them reads them one by one: the ready
    /// bucket's pops, a cascade of moved timers.
    #[inline]
    pub(super) fn warm(&self, refs: &[Ref]) {
        let mut sum = 0u32;
        for r in refs {
            if let Some(e) = self.slab.try_at(r.index) {
                sum = sum.wrapping_add(e.seq);
            }
        }
        core::hint::black_box(sum);
    }

    /// Takes a timer (already out of every place) out of the slab.
    pub(super) fn take(&mut self, index: u32) -> Expired<T> {
        let key = self.slab.key_at(index);
        self.slab.remove_at(index).into_expired(key)
    }

    /// [`poll`](Timer::poll) past the idle check: fires, cascades, or moves the cursor.
    #[inline(never)]
    pub(super) fn poll_due(&mut self) -> Option<Expired<T>> {
        let start = self.work;
        let fired = self.sweep();
        self.note_work(start);
        fired
    }

    /// [`poll_due`](Self::poll_due)'s work.
    #[inline(always)]
    fn sweep(&mut self) -> Option<Expired<T>> {
        let now = self.now;
        let start = self.work;
        if self.nursery.min() <= now {
            // The cursor could reach a placement not pushed yet: push them all. Otherwise they
            // wait, which neither hides a due timer nor misplaces one (see `nursery`).
            self.flush(usize::MAX);
        }
        loop {
            if let Some(expired) = self.pop_due() {
                self.stats.fired += 1;
                self.fired_since_hint = true;
                if self.stage_pending {
                    self.stage_on_fire();
                }
                return Some(expired);
            }
            match self.next_slot() {
                Some((level, slot, start)) if start <= now => self.process(level, slot, start),
                _ => break,
            }
        }
        // Nothing is due by `now`. The earliest slot's start stays the same when the cursor
        // moves up to `now` (no slot boundary is crossed before it).
        let placed = self.next_slot().map_or(Tick::MAX, |(_, _, start)| start);
        self.hint = placed.min(self.nursery.min());
        if self.stage_ahead() {
            // More to stage: the next poll comes back for it.
            self.hint = self.hint.min(now);
        }
        // One bounded piece per call: a compaction step only if the poll did less than a
        // chunk's worth of other work (pushes and cancels carry the pass on meanwhile).
        if self.pass.is_running() && self.work - start < CHUNK as u64 {
            self.full_step();
        }
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
