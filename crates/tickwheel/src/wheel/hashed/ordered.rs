//! An ordered side store for the rare timers the hashed wheel cannot slot: deadlines already
//! behind the cursor (overdue).
//!
//! A `BTreeMap` keyed by `(deadline, insertion number)` keeps them in exactly the contract's
//! order; the entry keeps its insertion number in its (unused) list links so it can be found
//! again for cancel or reset in O(log n).
//!
//! # Costs
//! O(log n) insert, remove and pop; O(1)-ish first. No hashing.

use alloc::collections::BTreeMap;

use super::Entry;
use crate::slab::Slab;
use crate::Tick;

#[derive(Default)]
pub(crate) struct Ordered {
    map: BTreeMap<(Tick, u64), u32>,
    /// Next insertion number; only increases.
    seq: u64,
}

impl Ordered {
    pub(crate) fn len(&self) -> usize {
        self.map.len()
    }

    pub(crate) fn insert<T>(&mut self, slab: &mut Slab<Entry<T>>, index: u32) {
        let seq = self.seq;
        self.seq += 1;
        let e = slab.at_mut(index);
        e.prev = (seq >> 32) as u32;
        e.next = seq as u32;
        self.map.insert((e.deadline, seq), index);
    }

    pub(crate) fn remove<T>(&mut self, slab: &Slab<Entry<T>>, index: u32) {
        let e = slab.at(index);
        let seq = (u64::from(e.prev) << 32) | u64::from(e.next);
        let removed = self.map.remove(&(e.deadline, seq));
        debug_assert_eq!(removed, Some(index), "ordered store lost an entry");
    }

    pub(crate) fn first_deadline(&self) -> Option<Tick> {
        self.map.first_key_value().map(|(&(d, _), _)| d)
    }

    /// Pops the first entry if its deadline is at most `limit`.
    pub(crate) fn pop_first_until(&mut self, limit: Tick) -> Option<u32> {
        let entry = self.map.first_entry()?;
        if entry.key().0 > limit {
            return None;
        }
        Some(entry.remove())
    }

    /// Every entry in order, checking each one's stored key. For invariant checks.
    pub(crate) fn collect<T>(&self, slab: &Slab<Entry<T>>) -> alloc::vec::Vec<u32> {
        self.map
            .iter()
            .map(|(&(d, seq), &index)| {
                let e = slab.at(index);
                assert_eq!(e.deadline, d, "ordered store key disagrees with deadline");
                assert_eq!((u64::from(e.prev) << 32) | u64::from(e.next), seq);
                assert!(seq < self.seq);
                index
            })
            .collect()
    }
}
