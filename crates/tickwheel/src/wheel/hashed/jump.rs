//! [`Jump`]: the slots a far jump visits next, so that a jump past many firing ticks does not
//! scan the whole ring again for each one.
//!
//! A poll whose `now` is more than a lap ahead goes straight to the slot that may hold the
//! earliest timer: the one with the least *bound* `max(slot_min[s], t_s)`, where `t_s` is the
//! first tick after the cursor that falls in slot `s`. One pass over the occupied slots keeps
//! the [`K`] least bounds, in order, and `floor`, the least bound of every occupied slot it
//! left out. A slot's bound only grows while
//! the wheel is swept (a visit refreshes `slot_min`, a moving cursor raises `t_s`), so the least
//! entry, re-checked against its slot before use, is the least bound of all. Only a placement
//! can lower a bound; one below `floor` empties the list (every entry is at most `floor`, so a
//! placement at or above it lowers no slot's bound below its entry). Two slots never share a
//! bound: a slot's bound is a tick of that slot.
//!
//! # Invariants
//! - Every entry is a lower bound on its slot's bound, and at most `floor`; entries are sorted
//!   by bound, the least last.
//! - Every occupied slot without an entry has a bound at or above `floor` (`floor` is 0 when
//!   the list is empty and unknown).
//!
//! # Costs
//! | operation | cost |
//! |---|---|
//! | refill | one pass over the occupied slots, O(slots · log K) |
//! | the next slot of a jump | O(1), plus O(K) per entry that went stale and is kept |
//! | a placement below `floor` | O(1): the list is dropped |
//! | memory | K × 16 B, once a far jump has happened |
//!
//! The list pays on the far-jump case of `examples/worst_call.rs` (a million timers spread over
//! 2^33 ticks, drained by polls past all of them), which otherwise scans the whole ring once per
//! firing tick.

use alloc::vec::Vec;

use crate::Tick;

/// Least bounds kept per pass over the ring.
pub(super) const K: usize = 256;

/// The least slot bounds of the last pass over the ring; see the module docs.
#[derive(Debug, Default)]
pub(super) struct Jump {
    /// `(bound, slot)`, the least bound last.
    pub(super) entries: Vec<(Tick, u32)>,
    /// At most the bound of every occupied slot without an entry.
    pub(super) floor: Tick,
}

impl Jump {
    /// Forgets every entry (the next far jump refills).
    #[inline]
    pub(super) fn clear(&mut self) {
        self.entries.clear();
        self.floor = 0;
    }

    /// Keeps `(bound, slot)` in order, if it is below `floor` (otherwise the slot is one of
    /// those `floor` bounds).
    pub(super) fn keep(&mut self, bound: Tick, slot: u32) {
        if bound < self.floor {
            let at = self.entries.partition_point(|&(b, _)| b > bound);
            self.entries.insert(at, (bound, slot));
        }
    }
}
