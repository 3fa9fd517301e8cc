//! [`HierarchicalWheel::invariants`]: every invariant of the module docs, checked in full (the
//! contract and model tests call it after every operation).

use super::*;

impl<T> HierarchicalWheel<T> {
    /// Panics, naming the invariant, if any does not hold.
    pub(super) fn invariants(&self) {
        self.slab.check();
        assert!(self.elapsed <= self.now, "cursor ahead of now");
        for (&(d, seq), &i) in &self.overdue {
            let e = self.slab.at(i);
            assert_eq!((e.deadline(), e.seq), (d, seq), "overdue key disagrees");
            assert!(d < self.elapsed, "overdue timer not behind the cursor");
            assert!(
                self.hint <= d,
                "hint {} above overdue deadline {d}",
                self.hint
            );
        }
        let ready = self.chunks.collect_live(&self.ready, &self.slab);
        for o in self.overtaken.iter() {
            let d = o.deadline;
            assert!(d >= self.elapsed, "overtaken entry {d} behind the cursor");
            if let Some(e) = self.slab.try_at(o.index).filter(|e| e.seq == o.seq) {
                assert_eq!(e.deadline(), d, "overtaken entry disagrees with its timer");
                assert!(self.hint <= d, "hint above an overtaken deadline");
            }
            let (_, base) = self.overtaken_table(d);
            assert!(
                d == base || (in_levels(base, d) && level_for(base, d) == 0),
                "overtaken {d} not on level 0 of its table"
            );
        }
        // Level-0 slots of the wheel and of each stage that the overtaken store holds
        // entries for.
        let (main_overtaken, stage_overtaken) = self.overtaken_slots();
        for r in &ready {
            assert!(
                !is_moved(self.slab.at(r.index).seq),
                "a timer moved in place has its home in the ready bucket"
            );
            assert_eq!(
                self.slab.at(r.index).deadline(),
                self.elapsed,
                "ready timer not at the cursor"
            );
            assert!(self.hint <= self.elapsed, "hint above a ready timer");
        }
        self.check_increasing(&self.ready, "the ready bucket");
        for (l, s, bucket) in self.levels.buckets() {
            let overtaken = l == 0 && main_overtaken & (1 << s) != 0;
            assert_eq!(
                self.levels.is_marked(l, s),
                !bucket.is_empty() || self.is_staged(l, s) || overtaken,
                "occupancy bit of level {l} slot {s} is wrong"
            );
            if l == 0 {
                self.check_increasing(bucket, "a level-0 bucket");
            }
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
                    e.deadline()
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
        }
        let high = self.elapsed & !u64::from(u32::MAX);
        for (stage, &overtaken) in self.stages.iter().zip(&stage_overtaken) {
            let mut parent = (&self.levels, self.elapsed);
            if stage.is_active() {
                let (l, s) = stage.slot();
                match stage.parent() {
                    None => assert!(self.is_staged(l, s), "a stage's slot is not marked staged"),
                    Some(p) => {
                        let ps = &self.stages[p];
                        assert!(ps.is_active(), "a stage's parent is idle");
                        assert!(ps.is_staged(l, s), "a stage's slot is not marked staged");
                        parent = (ps.levels(), ps.base());
                    }
                }
                let parent_id = stage.parent();
                let holders = self.stages.iter().filter(|o| o.holds(parent_id, l, s));
                assert_eq!(holders.count(), 1, "a staged slot has two stages");
            }
            // The stage's ready bucket, then its level-0 buckets.
            for bucket in stage.buckets().take(1 + SLOTS) {
                self.check_increasing(bucket, "a staged level-0 bucket");
            }
            stage.check(
                parent,
                overtaken,
                self.elapsed,
                self.hint,
                |b| self.chunks.collect_live(b, &self.slab),
                |r| {
                    let e = self.slab.at(r.index);
                    if is_moved(e.seq) {
                        (high | u64::from(r.low), true)
                    } else {
                        (e.deadline(), false)
                    }
                },
            );
        }
        // Each active stage has its own staged bit (checked above), so as many bits as active
        // stages means every bit has its stage.
        let bits = |words: &[u64; LEVELS]| words.iter().map(|w| w.count_ones()).sum::<u32>();
        let set = bits(&self.staged) + self.stages.iter().map(|s| bits(s.staged())).sum::<u32>();
        let active = self.stages.iter().filter(|s| s.is_active()).count();
        assert_eq!(set as usize, active, "a staged slot has no stage");
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
            + self.ready.len()
            + self
                .stages
                .iter()
                .flat_map(Stage::buckets)
                .map(Bucket::len)
                .sum::<usize>();
        assert_eq!(
            refs,
            self.refs(),
            "a slot holds references but is not marked occupied"
        );
        // A push that takes a chunk and finds the references above the bound starts a pass,
        // and such pushes carry it on four chunks' worth per chunk they take, so references
        // stay within one more time the most timers pending (the slab's slots); besides, each
        // bucket may have taken fewer than a chunk's worth of pushes since its last check.
        let unchecked = (CHUNK - 1) * ((LEVELS + 1) * (LEVELS * SLOTS + 2));
        assert!(
            refs <= (COMPACT_RATIO + 1) * self.slab.slots() + COMPACT_SLACK + 1 + unchecked,
            "{} references for at most {} pending timers: compaction fell behind",
            refs,
            self.slab.slots()
        );
        let owned: usize = self
            .levels
            .buckets()
            .map(|(_, _, b)| self.chunks.chunks_of(b))
            .sum::<usize>()
            + self.chunks.chunks_of(&self.ready)
            + self
                .stages
                .iter()
                .flat_map(Stage::buckets)
                .map(|b| self.chunks.chunks_of(b))
                .sum::<usize>();
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

    /// Panics unless `bucket` (level 0, the ready bucket, or a stage's) holds increasing
    /// `seq`s, live references and dead.
    fn check_increasing(&self, bucket: &Bucket, what: &str) {
        let seqs: Vec<u32> = self.chunks.iter(bucket).map(|r| r.seq).collect();
        for pair in seqs.windows(2) {
            assert!(
                pair[0] < pair[1],
                "{what} is out of first-in first-out order"
            );
        }
    }

    /// The bucket table an overtaken reference due at `d` belongs to: the stage covering it
    /// (`None`: the wheel's own), with that table's cursor.
    pub(super) fn overtaken_table(&self, d: Tick) -> (Option<usize>, Tick) {
        // The innermost stage: one staged in turn covers part of its parent's range.
        let covering = (0..self.stages.len()).filter(|&i| self.stages[i].covers(d));
        match covering.min_by_key(|&i| self.stages[i].slot().0) {
            Some(i) => (Some(i), self.stages[i].base()),
            None => (None, self.elapsed),
        }
    }

    /// The level-0 slots the overtaken store holds references for: the wheel's word, and one
    /// per stage. A reference due at a table's cursor is in no slot (it is due at once there).
    pub(super) fn overtaken_slots(&self) -> (u64, Vec<u64>) {
        let mut main = 0u64;
        let mut staged = alloc::vec![0u64; self.stages.len()];
        for e in self.overtaken.iter() {
            let d = e.deadline;
            match self.overtaken_table(d) {
                (_, base) if d == base => {}
                (Some(i), _) => staged[i] |= 1 << slot_for(d, 0),
                (None, _) => main |= 1 << slot_for(d, 0),
            }
        }
        (main, staged)
    }
}
