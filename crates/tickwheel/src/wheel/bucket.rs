//! A hierarchical-wheel slot's contents: a vector of references to slab entries, deleted lazily.
//!
//! A [`Ref`] is `(index, seq, low)`: a timer's slab index, the insertion number
//! ([`Stamped::seq`]) it had when the reference was pushed, and the low 32 bits of its deadline. Every insert and reset gives a timer a new `seq`, so a
//! reference is *live* iff the slab slot at `index` is occupied and holds that `seq`; any other
//! reference is *dead* (its timer was cancelled, reset elsewhere, or fired) and is skipped.
//!
//! Cancel and reset therefore never touch the bucket: they read and write the one entry in the
//! slab and add one to the bucket's dead count. Compared with an intrusive doubly-linked list
//! this saves the two neighbours' cache lines on every removal, and a cascade or a fire walks
//! contiguous memory: a bucket with no dead references cascades without reading the slab at all
//! (the deadline is rebuilt from `low`), and otherwise the slab reads of consecutive timers are
//! independent, so the CPU overlaps their misses instead of chasing one `next` pointer after
//! another.
//!
//! # Invariants
//! - `dead` equals the number of dead references in `refs` (counted from `start` for the ready
//!   bucket, whose prefix before `start` has been handed out).
//! - References are pushed in `seq` order for any one deadline, so a bucket keeps first-in
//!   first-out order among equal deadlines without sorting.
//! - A bucket is compacted when `dead` exceeds both [`COMPACT_MIN`] and the live references, so
//!   it never holds more than about twice its live timers.
//!
//! # Costs
//! | operation | cost |
//! |---|---|
//! | push | O(1) amortised: one store at the end of a hot vector |
//! | mark dead | O(1); amortised O(1) compaction (each dead reference is dropped once) |
//! | memory | 12 B per reference (at most about 2× the live timers, plus `Vec` growth) |

use alloc::vec::Vec;

use core::num::NonZeroU32;

use crate::slab::Slab;
use crate::Tick;

/// Dead references a bucket tolerates before compaction is considered at all.
pub(crate) const COMPACT_MIN: u32 = 32;

/// A timer of the hierarchical wheel: payload, deadline, slab generation and insertion number.
/// 24 bytes for a `u64` payload.
#[derive(Debug)]
pub(crate) struct Stamped<T> {
    pub(crate) payload: T,
    pub(crate) deadline: Tick,
    pub(crate) generation: NonZeroU32,
    /// Insertion order (inserts and resets); names the one live reference to this timer.
    pub(crate) seq: u32,
}

crate::slab::generational!(Stamped);

/// A reference from a bucket to a slab entry: 12 bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Ref {
    pub(crate) index: u32,
    pub(crate) seq: u32,
    /// The low 32 bits of the timer's deadline. A timer below the top level agrees with the
    /// cursor on every bit from 30 up, so a cascade rebuilds its deadline from these without
    /// reading the slab.
    pub(crate) low: u32,
}

impl Ref {
    /// Whether this reference still names its timer.
    #[inline]
    pub(crate) fn is_live<T>(self, slab: &Slab<Stamped<T>>) -> bool {
        slab.try_at(self.index).is_some_and(|e| e.seq == self.seq)
    }
}

/// One slot's references, with lazy deletion.
#[derive(Default)]
pub(crate) struct Bucket {
    pub(crate) refs: Vec<Ref>,
    /// Dead references in `refs[start..]`.
    pub(crate) dead: u32,
    /// References before `start` were already handed out (only the ready bucket uses it).
    pub(crate) start: usize,
}

impl Bucket {
    #[inline]
    pub(crate) fn push(&mut self, r: Ref) {
        self.refs.push(r);
    }

    /// No reference at all, live or dead, from `start` on.
    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        self.start == self.refs.len()
    }

    /// Live references from `start` on.
    #[inline]
    pub(crate) fn live(&self) -> usize {
        self.refs.len() - self.start - self.dead as usize
    }

    /// Counts one more dead reference; `true` when the bucket should now be compacted.
    #[inline]
    pub(crate) fn mark_dead(&mut self) -> bool {
        self.dead += 1;
        self.dead > COMPACT_MIN && self.dead as usize > self.live()
    }

    /// Drops every dead reference (and the handed-out prefix), keeping the order of the rest.
    /// Returns how many references were dropped.
    pub(crate) fn compact<T>(&mut self, slab: &Slab<Stamped<T>>) -> usize {
        let before = self.refs.len();
        self.refs.drain(..self.start);
        self.refs.retain(|r| r.is_live(slab));
        self.start = 0;
        self.dead = 0;
        before - self.refs.len()
    }

    /// The next live reference from `start` on, skipping (and uncounting) dead ones; the second
    /// value is how many dead ones were skipped.
    #[inline]
    pub(crate) fn pop_live<T>(&mut self, slab: &Slab<Stamped<T>>) -> (Option<Ref>, u64) {
        let mut skipped = 0;
        while let Some(&r) = self.refs.get(self.start) {
            self.start += 1;
            if r.is_live(slab) {
                return (Some(r), skipped);
            }
            self.dead -= 1;
            skipped += 1;
        }
        (None, skipped)
    }

    /// Empties the bucket, keeping its allocation.
    #[inline]
    pub(crate) fn clear(&mut self) {
        self.refs.clear();
        self.dead = 0;
        self.start = 0;
    }

    /// The live references from `start` on, checking `dead` against them. For invariant checks.
    pub(crate) fn collect_live<T>(&self, slab: &Slab<Stamped<T>>) -> Vec<Ref> {
        let rest = &self.refs[self.start..];
        let live: Vec<Ref> = rest.iter().copied().filter(|r| r.is_live(slab)).collect();
        assert_eq!(
            rest.len() - live.len(),
            self.dead as usize,
            "bucket dead count disagrees with its references"
        );
        live
    }

    /// Bytes of heap memory held.
    pub(crate) fn allocated_bytes(&self) -> usize {
        self.refs.capacity() * core::mem::size_of::<Ref>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stamped(seq: u32) -> Stamped<u32> {
        Stamped {
            payload: seq,
            deadline: 0,
            generation: crate::slab::FIRST_GENERATION,
            seq,
        }
    }

    #[test]
    fn dead_references_are_skipped_and_compacted_in_order() {
        let mut slab = Slab::new(None, 0);
        let mut bucket = Bucket::default();
        let keys: Vec<_> = (0..100u32)
            .map(|seq| {
                let key = slab.insert(stamped(seq)).unwrap();
                bucket.push(Ref {
                    index: key.index,
                    seq,
                    low: 0,
                });
                key
            })
            .collect();
        // Cancel the even ones; the bucket asks for compaction once dead outnumber live.
        let mut asked = None;
        for (n, key) in keys.iter().enumerate().filter(|(n, _)| n % 2 == 0) {
            slab.remove_at(key.index);
            if bucket.mark_dead() && asked.is_none() {
                asked = Some(n);
            }
        }
        assert_eq!(asked, None, "50 dead of 100 is not more than the live ones");
        // Reuse a freed slot with a new seq: the old reference to it must stay dead.
        let reused = slab.insert(stamped(1_000)).unwrap();
        assert_eq!(bucket.collect_live(&slab).len(), 50);
        assert!(!Ref {
            index: reused.index,
            seq: 98,
            low: 0,
        }
        .is_live(&slab));
        assert_eq!(bucket.compact(&slab), 50);
        let seqs: Vec<u32> = bucket.refs.iter().map(|r| r.seq).collect();
        assert_eq!(seqs, (0..100).filter(|s| s % 2 == 1).collect::<Vec<_>>());
        // Popping hands them out in order and counts nothing dead.
        let (first, skipped) = bucket.pop_live(&slab);
        assert_eq!((first.map(|r| r.seq), skipped), (Some(1), 0));
        assert_eq!(bucket.live(), 49);
    }

    #[test]
    fn compaction_is_asked_for_once_dead_outnumber_live() {
        let mut slab = Slab::new(None, 0);
        let mut bucket = Bucket::default();
        for seq in 0..(2 * COMPACT_MIN + 10) {
            let key = slab.insert(stamped(seq)).unwrap();
            bucket.push(Ref {
                index: key.index,
                seq,
                low: 0,
            });
        }
        let total = bucket.refs.len() as u32;
        let mut asked_at = None;
        for seq in 0..total {
            slab.remove_at(seq);
            if bucket.mark_dead() {
                asked_at = Some(seq + 1);
                break;
            }
        }
        // Dead must exceed both COMPACT_MIN and the live count: 38 dead > 36 live.
        assert_eq!(asked_at, Some(total / 2 + 1));
        bucket.compact(&slab);
        assert_eq!(
            (bucket.refs.len(), bucket.dead),
            ((total / 2 - 1) as usize, 0)
        );
    }
}
