//! Compaction: when dead references are dropped. A push that takes a new chunk first checks
//! the references against [`COMPACT_RATIO`] times the pending timers, and compacts the
//! crowded slots first.

use super::*;

/// A push that takes a new chunk and finds the references above `COMPACT_RATIO` times the
/// pending timers (plus [`COMPACT_SLACK`]) compacts the buckets first. A compaction that reads
/// every reference's entry, live or dead, costs `r / (r - 1)` slab reads per dead reference it
/// drops: 2 at a ratio of 2, 1.5 at 3 (one that finds the dead gathered in a few slots reads
/// little more than those).
/// At 3, dead references may take up to 24 B per pending timer when the arena grows (12 B at 2);
/// `docs/bench-profile.md` has the measurements that chose it.
pub(super) const COMPACT_RATIO: usize = 3;

/// Dead references tolerated beyond the live ones before the buckets are compacted.
pub(super) const COMPACT_SLACK: usize = 64;

impl<T> HierarchicalWheel<T> {
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

    /// Called before every push that takes a new chunk, and only there: compacts when
    /// references exceed [`COMPACT_RATIO`] times the pending timers (plus [`COMPACT_SLACK`]).
    /// A cancel or a fire only turns a reference dead where it lies, in a chunk that is already
    /// allocated; what dead references would cost is growth of the arena, and only a push into
    /// a full chunk grows it, so the check waits for one, once per [`CHUNK`] pushes into a
    /// slot rather than on every insert. (A wheel whose timers are all cancelled is dropped or
    /// reused without ever reading their dead references.)
    #[inline(always)]
    pub(super) fn maybe_compact(&mut self) {
        // The chunks in use bound the references in O(1); only above the bound are they counted.
        let bound = self.refs_bound();
        if self.chunks.in_use() * CHUNK > bound && self.refs() > bound {
            self.compact();
        }
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

    /// Drops dead references where they gather first, then everywhere if that was not enough:
    /// one slab read per reference read, and no bucket read twice.
    ///
    /// A staged slot's staged references count as one more slot here.
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
    pub(super) fn compact(&mut self) {
        let refs = self.refs();
        let start = self.work;
        let crowded = self.levels.slots_longer_than(refs / 8);
        let keep = self.staged;
        let mut dropped = self
            .levels
            .compact(&mut self.chunks, &self.slab, crowded, keep);
        let crowded_stages: Vec<bool> = self.stages.iter().map(|s| s.refs() > refs / 8).collect();
        dropped += self.compact_stages(|i| crowded_stages[i]);
        let live = self.slab.len();
        if refs - dropped > live + live / 2 {
            let others = crowded.map(|word| !word);
            dropped += self
                .levels
                .compact(&mut self.chunks, &self.slab, others, keep);
            dropped += self.chunks.compact(&mut self.ready, &self.slab);
            dropped += self.compact_stages(|i| !crowded_stages[i]);
        }
        dropped += self.compact_overtaken();
        self.stats.compactions += 1;
        // Dead references piled up: see whether holding inserts in the nursery would have
        // spared them (`make_room` decides after one round).
        self.nursery.set_holds_inserts(true);
        self.stats.stale_skipped += dropped as u64;
        // Counted as every reference it may have read.
        self.work += refs as u64;
        self.note_work(start);
    }

    /// Drops the overtaken store's dead entries, then sets the occupancy bits of level 0 (the
    /// wheel's and every stage's) from its buckets and the entries left, which the bucket
    /// compaction may have cleared; returns how many it dropped.
    fn compact_overtaken(&mut self) -> usize {
        let slab = &self.slab;
        let dropped = self
            .overtaken
            .retain(|e| stamped::is_live(slab, e.index, e.seq));
        let (main, staged) = self.overtaken_slots();
        self.levels.occupy_level0(main);
        for (s, word) in self.stages.iter_mut().zip(staged) {
            s.levels_mut().occupy_level0(word);
        }
        dropped
    }

    /// The bucket table an overtaken reference due at `d` belongs to: the stage covering it
    /// (`None`: the wheel's own), with that table's cursor.
    pub(super) fn overtaken_table(&self, d: Tick) -> (Option<usize>, Tick) {
        match self.stages.iter().position(|s| s.covers(d)) {
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
