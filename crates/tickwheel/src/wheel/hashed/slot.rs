//! [`Slot`]: a ring slot's FIFO list, circular, so that a slot is one 4 B head.
//!
//! The entries' links run in a circle: the head's `prev` is the tail. A push reads the tail
//! from the head, so a slot needs no tail field, which halves the ring (2^16 slots in 256 KiB
//! rather than 512 KiB; the ring is a fixed floor under the wheel's memory).
//!
//! # Invariants
//! - `head == NIL` iff the slot is empty; otherwise following `next` from the head returns to
//!   it, and `prev` mirrors `next`.
//!
//! # Costs
//! O(1) push, unlink and pop; a whole [`List`] joins an empty slot in O(1).

use super::list::List;
use super::Entry;
use crate::slab::{Slab, NIL};

/// A ring slot: the head of a circular FIFO list (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Slot {
    head: u32,
}

impl Slot {
    pub(crate) const EMPTY: Slot = Slot { head: NIL };

    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        self.head == NIL
    }

    /// An empty slot takes a whole list, in its order.
    #[inline]
    pub(crate) fn from_list<T>(list: List, slab: &mut Slab<Entry<T>>) -> Slot {
        if list.is_empty() {
            return Slot::EMPTY;
        }
        slab.at_mut(list.head).prev = list.tail;
        slab.at_mut(list.tail).next = list.head;
        Slot { head: list.head }
    }

    #[inline]
    pub(crate) fn push_back<T>(&mut self, slab: &mut Slab<Entry<T>>, index: u32) {
        let head = self.head;
        if head == NIL {
            let e = slab.at_mut(index);
            e.prev = index;
            e.next = index;
            self.head = index;
            return;
        }
        let tail = slab.at(head).prev;
        {
            let e = slab.at_mut(index);
            e.prev = tail;
            e.next = head;
        }
        slab.at_mut(tail).next = index;
        slab.at_mut(head).prev = index;
    }

    #[inline]
    pub(crate) fn unlink<T>(&mut self, slab: &mut Slab<Entry<T>>, index: u32) {
        let (prev, next) = {
            let e = slab.at(index);
            (e.prev, e.next)
        };
        if next == index {
            self.head = NIL; // the only entry
            return;
        }
        slab.at_mut(prev).next = next;
        slab.at_mut(next).prev = prev;
        if self.head == index {
            self.head = next;
        }
    }

    #[inline]
    pub(crate) fn pop_front<T>(&mut self, slab: &mut Slab<Entry<T>>) -> Option<u32> {
        let index = self.head;
        if index == NIL {
            return None;
        }
        self.unlink(slab, index);
        Some(index)
    }

    /// Walks the circle, checking its links; returns the entries in order. For invariant
    /// checks and `drain`.
    pub(crate) fn collect<T>(&self, slab: &Slab<Entry<T>>) -> alloc::vec::Vec<u32> {
        let mut out = alloc::vec::Vec::new();
        if self.head == NIL {
            return out;
        }
        let mut cur = self.head;
        loop {
            assert!(out.len() <= slab.len(), "slot circle does not close");
            let e = slab.at(cur);
            assert_eq!(slab.at(e.next).prev, cur, "broken prev link at {}", e.next);
            out.push(cur);
            cur = e.next;
            if cur == self.head {
                return out;
            }
        }
    }
}
