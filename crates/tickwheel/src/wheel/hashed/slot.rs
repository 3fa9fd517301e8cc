//! [`Slot`]: a ring slot's FIFO list, circular through `next`, so that a slot is one 4 B tail.
//!
//! The slot names its tail, and the tail's `next` is the head; `prev` links run from the tail
//! back to the head, whose `prev` is `NIL`. A push touches only the tail's entry and the new
//! one, as with a head-and-tail list, in half the ring (2^16 slots in 256 KiB rather than
//! 512 KiB; the ring is a fixed floor under the wheel's memory).
//!
//! # Invariants
//! - `tail == NIL` iff the slot is empty; otherwise following `next` from the tail's `next`
//!   (the head) returns to the head after the tail, and `prev` mirrors `next` except at the
//!   head, whose `prev` is `NIL`.
//!
//! # Costs
//! O(1) push, unlink and pop; a whole [`List`] joins an empty slot in O(1).

use super::list::List;
use super::Entry;
use crate::slab::{Slab, NIL};

/// A ring slot: the tail of a list circular through `next` (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Slot {
    tail: u32,
}

impl Slot {
    pub(crate) const EMPTY: Slot = Slot { tail: NIL };

    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        self.tail == NIL
    }

    /// An empty slot takes a whole list, in its order.
    #[inline]
    pub(crate) fn from_list<T>(list: List, slab: &mut Slab<Entry<T>>) -> Slot {
        if list.is_empty() {
            return Slot::EMPTY;
        }
        slab.at_mut(list.tail).next = list.head;
        Slot { tail: list.tail }
    }

    #[inline]
    pub(crate) fn push_back<T>(&mut self, slab: &mut Slab<Entry<T>>, index: u32) {
        let tail = self.tail;
        self.tail = index;
        if tail == NIL {
            let e = slab.at_mut(index);
            e.prev = NIL;
            e.next = index;
            return;
        }
        let head = core::mem::replace(&mut slab.at_mut(tail).next, index);
        let e = slab.at_mut(index);
        e.prev = tail;
        e.next = head;
    }

    #[inline]
    pub(crate) fn unlink<T>(&mut self, slab: &mut Slab<Entry<T>>, index: u32) {
        let (prev, next) = {
            let e = slab.at(index);
            (e.prev, e.next)
        };
        if next == index {
            self.tail = NIL; // the only entry
            return;
        }
        if prev == NIL {
            // The head: the tail now leads to the second entry, which becomes the head.
            slab.at_mut(self.tail).next = next;
            slab.at_mut(next).prev = NIL;
            return;
        }
        slab.at_mut(prev).next = next;
        if self.tail == index {
            self.tail = prev; // `next` is the head, whose `prev` stays `NIL`
        } else {
            slab.at_mut(next).prev = prev;
        }
    }

    #[inline]
    pub(crate) fn pop_front<T>(&mut self, slab: &mut Slab<Entry<T>>) -> Option<u32> {
        if self.tail == NIL {
            return None;
        }
        let head = slab.at(self.tail).next;
        self.unlink(slab, head);
        Some(head)
    }

    /// Walks the list from its head, checking its links; returns the entries in order. For
    /// invariant checks and `drain`.
    pub(crate) fn collect<T>(&self, slab: &Slab<Entry<T>>) -> alloc::vec::Vec<u32> {
        let mut out = alloc::vec::Vec::new();
        if self.tail == NIL {
            return out;
        }
        let head = slab.at(self.tail).next;
        let mut prev = NIL;
        let mut cur = head;
        loop {
            assert!(out.len() <= slab.len(), "slot list does not close");
            let e = slab.at(cur);
            assert_eq!(e.prev, prev, "broken prev link at {cur}");
            out.push(cur);
            if cur == self.tail {
                assert_eq!(e.next, head, "the tail does not lead to the head");
                return out;
            }
            prev = cur;
            cur = e.next;
        }
    }
}
