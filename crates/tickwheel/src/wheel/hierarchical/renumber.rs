//! Renumbering: before seqs would reach the moved bit, every pending timer gets a new seq in
//! firing order and every place is rebuilt; also what `drain` and `shrink_to_fit` rebuild from.

use super::*;

impl<T> HierarchicalWheel<T> {
    /// Every pending timer's index, from its one live reference (for renumbering, drain and
    /// checks).
    pub(super) fn all_indices(&self) -> Vec<u32> {
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
        for bucket in self.stages.iter().flat_map(Stage::buckets) {
            out.extend(live(bucket).iter().map(|r| r.index));
        }
        out.extend(
            self.overtaken
                .iter()
                .filter(|e| stamped::is_live(&self.slab, e.index, e.seq))
                .map(|e| e.index),
        );
        out
    }

    /// Every pending timer in firing order: by deadline, then `seq`.
    pub(super) fn firing_order(&self) -> Vec<u32> {
        // Deadline, seq and index packed into one 16-byte key, so each entry is read once
        // rather than twice per comparison (about twenty per timer), reads that miss at a
        // million timers: renumbering 1M took about a third of the time (`docs/bench-profile.md`).
        let key = |i: u32| {
            let (deadline, seq) = moved::unpacked(self.slab.at(i), self.elapsed);
            (u128::from(deadline) << 64) | (u128::from(seq) << 32) | u128::from(i)
        };
        let mut keyed: Vec<u128> = self.all_indices().into_iter().map(key).collect();
        keyed.sort_unstable();
        keyed.into_iter().map(|k| k as u32).collect()
    }

    /// Forgets every place (the slab keeps the timers), keeping allocations.
    pub(super) fn clear_places(&mut self) {
        self.pass = compact::Pass::IDLE;
        self.nursery.clear();
        self.overtaken.clear();
        self.levels.clear();
        self.clear_stages();
        self.stage_pending = false;
        self.ready = Bucket::EMPTY;
        self.chunks.reset();
        self.overdue.clear();
    }

    /// Gives the pending timers seqs `0..n` in firing order and rebuilds every place (which
    /// drops every dead reference), once per 2^31 inserts and resets.
    #[cold]
    pub(super) fn renumber(&mut self) {
        let start = self.work;
        // The firing order takes the nursery's live placements in too.
        let order = self.firing_order();
        self.clear_places();
        self.place_in_order(&order);
        self.work += order.len() as u64;
        self.note_work(start);
    }

    /// Places the timers `order` lists (every pending one, in firing order, with every place
    /// cleared), giving them seqs `0..n`.
    pub(super) fn place_in_order(&mut self, order: &[u32]) {
        for (n, &index) in order.iter().enumerate() {
            let e = self.slab.at_mut(index);
            moved::settle(e, self.elapsed);
            e.seq = n as u32;
            let deadline = e.deadline();
            self.place(index, deadline, n as u32);
        }
        self.seq = order.len() as u32;
    }
}
