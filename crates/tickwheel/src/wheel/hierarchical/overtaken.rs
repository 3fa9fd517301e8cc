//! Overtaken timers: references that came down to level 0 (or to the ready bucket) behind a
//! reference with a later `seq`, kept in `(deadline, seq)` order instead of in their bucket.
//!
//! A timer moved in place ([`moved`](super::moved)) is placed when its home cascades, after
//! references that took their seqs later and were pushed first. At level 0, where a bucket is
//! handed out in the order it holds, such a reference would break first-in first-out order.
//! It goes here instead: a binary heap, so each one costs a push (O(1) on average, O(log n) at
//! worst) when it comes down and a pop when it fires, and no call sorts a whole slot. The fire
//! of a level-0 slot merges its bucket with the heap's entries at that tick by `seq`.
//!
//! Entries are deleted lazily, like bucket references: a cancelled or reset timer's entry
//! stays until it is popped at its tick. The wheel keeps the occupancy bit of a
//! level-0 slot set while this store holds an entry due in it, so the cursor stops there.
//!
//! # Invariants
//! - Every entry is due at or after `elapsed`, at the ready bucket's tick or in a level-0 slot
//!   (of the wheel, or of a stage) whose occupancy bit is set.
//! - A live entry is its timer's one live reference.
//!
//! # Costs
//! | operation | cost |
//! |---|---|
//! | push | O(1) average, O(log n) worst |
//! | first, pop | O(1), O(log n) |
//! | memory | 16 B per entry |

use alloc::collections::BinaryHeap;
use core::cmp::Reverse;

use crate::Tick;

/// One overtaken reference: its deadline, `seq` and slab index.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Entry {
    pub(crate) deadline: Tick,
    pub(crate) seq: u32,
    pub(crate) index: u32,
}

/// The overtaken references, earliest `(deadline, seq)` first.
#[derive(Default)]
pub(crate) struct Overtaken {
    heap: BinaryHeap<Reverse<Entry>>,
}

impl Overtaken {
    /// A store with room for `n` entries.
    pub(crate) fn with_capacity(n: usize) -> Self {
        Self {
            heap: BinaryHeap::with_capacity(n),
        }
    }

    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }

    pub(crate) fn push(&mut self, deadline: Tick, seq: u32, index: u32) {
        self.heap.push(Reverse(Entry {
            deadline,
            seq,
            index,
        }));
    }

    /// The earliest entry.
    #[inline]
    pub(crate) fn first(&self) -> Option<Entry> {
        self.heap.peek().map(|e| e.0)
    }

    /// Takes the earliest entry out.
    pub(crate) fn pop(&mut self) -> Option<Entry> {
        self.heap.pop().map(|e| e.0)
    }

    /// Every entry, in no particular order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = Entry> + '_ {
        self.heap.iter().map(|e| e.0)
    }

    pub(crate) fn clear(&mut self) {
        self.heap.clear();
    }

    /// Releases the heap's memory once it is empty.
    pub(crate) fn shrink_to_fit(&mut self) {
        self.heap.shrink_to_fit();
    }

    /// Bytes of heap memory held.
    pub(crate) fn allocated_bytes(&self) -> usize {
        self.heap.capacity() * core::mem::size_of::<Entry>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec::Vec;

    /// The size the cost table states.
    #[test]
    fn an_entry_is_16_bytes() {
        assert_eq!(core::mem::size_of::<Entry>(), 16);
    }

    #[test]
    fn entries_come_out_by_deadline_then_seq() {
        let mut o = Overtaken::default();
        for (d, s) in [(5, 9), (3, 7), (5, 2), (3, 8)] {
            o.push(d, s, s);
        }
        let out: Vec<(Tick, u32)> = core::iter::from_fn(|| o.pop())
            .map(|e| (e.deadline, e.seq))
            .collect();
        assert_eq!(out, [(3, 7), (3, 8), (5, 2), (5, 9)]);
    }
}
