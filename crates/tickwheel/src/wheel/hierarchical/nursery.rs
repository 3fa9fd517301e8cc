//! The hierarchical wheel's nursery: placements into the levels that have not been pushed into a
//! bucket yet, first in first out.
//!
//! A placement is `(index, seq)`: 8 bytes. The deadline a push into a slot needs is read from
//! the timer's entry when the placement leaves, in the same read that tells whether it is still
//! live (the entry holds that seq), so the ring does not store it; only `min` sees it. The
//! nursery works in one of two ways:
//! - **a batch** (the start): resets' placements wait here, up to [`BATCH`], and are pushed
//!   together when it fills, which keeps a reset's own path short; an insert made meanwhile
//!   waits behind them rather than overtake them, and an empty batch lets inserts go straight
//!   to their slots;
//! - **holding inserts** (after a compaction shows dead references piling up): every insert's
//!   placement waits here too, up to the ring's size ([`NURSERY`]); a full nursery pushes its
//!   older half. Request timeouts are the case this is for: a server cancels most of them
//!   within a few hundred operations (the response arrived), and those never cost a bucket
//!   push, a dead reference, or a compaction's read of it. The wheel goes back to a batch when
//!   fewer than a quarter of the placements it pushes had died meanwhile.
//!
//! Either way, a placement whose timer was cancelled or reset again since is dead and is
//! dropped when it leaves, without touching a bucket, and the wheel pushes everything before
//! its cursor could reach the earliest deadline held.
//!
//! A placement is pushed with the cursor of the moment it leaves, not the one it came in with.
//! That place is right: the cursor has not reached the placement's deadline, so the timer
//! belongs where its deadline and the current cursor say, and any timer due at the same tick
//! that was already in a bucket is in that same slot, ahead of it and older, as first-in
//! first-out order wants.
//!
//! # Invariants
//! - Placements are held in increasing `seq` order, at most the ring's size of them, and fewer
//!   than the limit (batch or ring) between the wheel's operations.
//! - `min` is at most every deadline a placement held was made with; `Tick::MAX` when none is
//!   held.
//! - `queue` is set iff anything is held or inserts are.
//! - A live placement's timer is not moved in place (a reset never moves in place a timer
//!   whose placement may be here: its home must be in a bucket).
//!
//! # Costs
//! | operation | cost |
//! |---|---|
//! | push | O(1): one 8 B store into a ring and a comparison |
//! | take the oldest | O(k) for k placements, copied out up to [`TAKE`] at a time |
//! | may it hold a seq | O(1): a comparison with the oldest placement's seq |
//! | memory | 4 KiB per wheel, allocated once |

use alloc::boxed::Box;

use crate::Tick;

/// Placements held at most by default. A full nursery pushes its oldest half, so a placement
/// waits for at least `NURSERY / 2` newer ones before it reaches a bucket.
pub(crate) const NURSERY: usize = 512;

/// Placements held at most while the wheel pushes inserts at once: then only resets'
/// placements wait here, and only to keep their slab access short.
pub(crate) const BATCH: usize = 32;

/// Placements copied out of the ring at a time by [`Nursery::take_oldest`].
pub(crate) const TAKE: usize = 64;

/// A placement into the levels not pushed yet: the timer's slab index and the seq it was given.
/// While the entry at `index` holds `seq`, the placement is live and the entry's deadline is
/// where it goes (a timer with a placement held is never moved in place, so that deadline is
/// whole).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Placement {
    pub(crate) index: u32,
    pub(crate) seq: u32,
}

/// A ring of [`Placement`]s in `seq` order.
pub(crate) struct Nursery {
    /// [`NURSERY`] places, of which the first `mask + 1` (a power of two) are used: a fixed
    /// size, so that an index masked with `NURSERY - 1` needs no bounds check.
    ring: Box<[Placement; NURSERY]>,
    /// Places used, less one.
    mask: usize,
    /// Position of the oldest placement.
    head: usize,
    /// Position of the next placement: `(head + len) & mask`.
    tail: usize,
    len: usize,
    /// At most every deadline held; `Tick::MAX` when empty.
    min: Tick,
    /// Whether inserts are held too.
    holding: bool,
    /// Placements held before a push must make room: the ring's size while holding inserts,
    /// else [`BATCH`] (or the ring's size if smaller).
    limit: usize,
    /// [`must_queue`](Self::must_queue): anything is held, or inserts are. Kept as one flag
    /// because the wheel's inlined insert tests it every time.
    queue: bool,
}

impl Nursery {
    /// A nursery of [`NURSERY`] places.
    pub(crate) fn new() -> Self {
        Self::with_capacity(NURSERY)
    }

    /// A nursery of `capacity` places, a power of two from 2 to [`NURSERY`].
    pub(crate) fn with_capacity(capacity: usize) -> Self {
        assert!((2..=NURSERY).contains(&capacity) && capacity.is_power_of_two());
        Self {
            ring: Box::new([Placement::default(); NURSERY]),
            mask: capacity - 1,
            head: 0,
            tail: 0,
            len: 0,
            min: Tick::MAX,
            holding: false,
            limit: BATCH.min(capacity),
            queue: false,
        }
    }

    #[inline(always)]
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Places in the ring: the most placements held while holding inserts.
    #[inline(always)]
    pub(crate) fn capacity(&self) -> usize {
        self.mask + 1
    }

    /// Whether a push must make room first.
    #[inline(always)]
    pub(crate) fn is_full(&self) -> bool {
        self.len >= self.limit
    }

    /// Whether the nursery holds inserts too, not only a batch of resets.
    #[inline(always)]
    pub(crate) fn holds_inserts(&self) -> bool {
        self.holding
    }

    /// Holds inserts too (up to its capacity) or only a batch (up to [`BATCH`]). A nursery
    /// holding more than the new limit is full until pushed.
    pub(crate) fn set_holds_inserts(&mut self, on: bool) {
        self.holding = on;
        self.limit = if on {
            self.capacity()
        } else {
            BATCH.min(self.capacity())
        };
        self.queue = on || self.len != 0;
    }

    /// A lower bound on every deadline held (`Tick::MAX` when empty).
    #[inline(always)]
    pub(crate) fn min(&self) -> Tick {
        self.min
    }

    /// Appends a placement of a timer due at `deadline`; the caller checked that the nursery
    /// is not full and that `seq` is newer than every seq held.
    #[inline(always)]
    pub(crate) fn push(&mut self, p: Placement, deadline: Tick) {
        debug_assert!(self.len < self.limit);
        self.ring[self.tail % NURSERY] = p;
        self.tail = (self.tail + 1) & self.mask;
        self.len += 1;
        self.queue = true;
        if deadline < self.min {
            self.min = deadline;
        }
    }

    /// Moves up to `want` (at most [`TAKE`]) of the oldest placements into `out`, oldest first,
    /// and returns how many: at most one copy up to the ring's end, so possibly fewer than
    /// `want` while more are held.
    #[inline]
    pub(crate) fn take_oldest(&mut self, want: usize, out: &mut [Placement; TAKE]) -> usize {
        let n = want
            .min(self.len)
            .min(TAKE)
            .min(self.capacity() - self.head);
        out[..n].copy_from_slice(&self.ring[self.head..self.head + n]);
        self.head = (self.head + n) & self.mask;
        self.len -= n;
        if self.len == 0 {
            self.min = Tick::MAX;
            self.queue = self.holding;
        }
        n
    }

    /// Whether a new placement into the levels must queue here rather than be pushed at once:
    /// the nursery holds inserts, or holds anything (a placement may not pass an older one).
    #[inline(always)]
    pub(crate) fn must_queue(&self) -> bool {
        debug_assert_eq!(self.queue, self.len != 0 || self.holding);
        self.queue
    }

    /// Whether a placement made with `seq` would still be here: it is no older than the oldest
    /// one held. (A timer with such a seq may also have been placed elsewhere directly, in the
    /// ready bucket, an ordered store, or by a cascade; the answer is then a harmless "maybe".)
    #[inline(always)]
    pub(crate) fn may_hold(&self, seq: u32) -> bool {
        self.len != 0 && seq >= self.ring[self.head % NURSERY].seq
    }

    /// The placements held, oldest first.
    pub(crate) fn iter(&self) -> impl Iterator<Item = Placement> + '_ {
        (0..self.len).map(move |i| self.ring[(self.head + i) & self.mask])
    }

    /// Forgets every placement.
    pub(crate) fn clear(&mut self) {
        self.head = 0;
        self.tail = 0;
        self.len = 0;
        self.min = Tick::MAX;
        self.queue = self.holding;
    }

    /// Bytes of heap memory held.
    pub(crate) fn allocated_bytes(&self) -> usize {
        core::mem::size_of::<[Placement; NURSERY]>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The size the cost table states.
    #[test]
    fn the_ring_is_4_kib() {
        assert_eq!(core::mem::size_of::<[Placement; NURSERY]>(), 4 * 1024);
    }

    fn at(seq: u32) -> Placement {
        Placement {
            index: seq * 10,
            seq,
        }
    }

    fn take_all(n: &mut Nursery) -> alloc::vec::Vec<Placement> {
        let mut out = alloc::vec::Vec::new();
        let mut batch = [Placement::default(); TAKE];
        loop {
            let k = n.take_oldest(usize::MAX, &mut batch);
            if k == 0 {
                return out;
            }
            out.extend_from_slice(&batch[..k]);
        }
    }

    #[test]
    fn placements_leave_in_order_across_the_ring_end_and_min_resets_when_empty() {
        let mut n = Nursery::new();
        n.set_holds_inserts(true);
        assert!(
            n.must_queue(),
            "a nursery holding inserts queues them even when empty"
        );
        assert_eq!((n.len(), n.min()), (0, Tick::MAX));
        assert!(!n.may_hold(0), "an empty nursery holds nothing");
        // Walk the head most of the way round, then fill across the ring's end.
        let mut batch = [Placement::default(); TAKE];
        for s in 0..NURSERY as u32 - 3 {
            n.push(at(s), 1_000);
            assert_eq!(n.take_oldest(5, &mut batch), 1);
            assert_eq!(batch[0], at(s));
        }
        let base = NURSERY as u32;
        for s in 0..NURSERY as u32 {
            assert!(!n.is_full());
            n.push(at(base + s), 900 + Tick::from(s % 7));
        }
        assert!(n.is_full());
        assert_eq!(n.min(), 900);
        assert!(n.may_hold(base) && n.may_hold(base + 5) && !n.may_hold(base - 1));
        let held: alloc::vec::Vec<u32> = n.iter().map(|p| p.seq).collect();
        assert_eq!(
            held,
            (base..base + NURSERY as u32).collect::<alloc::vec::Vec<_>>()
        );
        // The first take stops at the ring's end: three placements before it.
        assert_eq!(n.take_oldest(TAKE, &mut batch), 3);
        assert_eq!(n.min(), 900, "the bound stays while any placement is held");
        let rest = take_all(&mut n);
        let seqs: alloc::vec::Vec<u32> = rest.iter().map(|p| p.seq).collect();
        assert_eq!(
            seqs,
            (base + 3..base + NURSERY as u32).collect::<alloc::vec::Vec<_>>()
        );
        assert_eq!((n.len(), n.min()), (0, Tick::MAX));
        assert!(n.must_queue());
        n.push(at(7), 3);
        n.clear();
        assert_eq!((n.len(), n.min()), (0, Tick::MAX));
    }

    #[test]
    fn a_batch_nursery_queues_only_while_it_holds_something() {
        let mut n = Nursery::new();
        assert!(!n.holds_inserts() && !n.must_queue());
        for s in 0..BATCH as u32 {
            assert!(!n.is_full());
            n.push(at(s), 50);
            assert!(n.must_queue());
        }
        assert!(n.is_full(), "a batch is full at {BATCH}");
        n.set_holds_inserts(true);
        assert!(!n.is_full() && n.must_queue());
        n.set_holds_inserts(false);
        assert!(n.is_full(), "back to a batch, still holding {BATCH}");
        assert_eq!(take_all(&mut n).len(), BATCH);
        assert!(
            !n.must_queue(),
            "empty and holding no inserts: pushes go straight in"
        );
    }
}
