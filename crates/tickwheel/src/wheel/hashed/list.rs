//! Intrusive doubly-linked FIFO lists threaded through the slab.
//!
//! A list is just a head and a tail index; the links live in the entries. Push, unlink and
//! splice are O(1) and allocate nothing, which is what makes a wheel's insert and cancel O(1).
//!
//! # Invariants
//! - `head == NIL` iff `tail == NIL` iff the list is empty.
//! - Following `next` from `head` reaches `tail`; `prev` mirrors `next`; the ends point to `NIL`.

use super::Entry;
use crate::slab::{Slab, NIL};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct List {
    pub(crate) head: u32,
    pub(crate) tail: u32,
}

impl List {
    pub(crate) const EMPTY: List = List {
        head: NIL,
        tail: NIL,
    };

    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        self.head == NIL
    }

    #[inline]
    pub(crate) fn push_back<T>(&mut self, slab: &mut Slab<Entry<T>>, index: u32) {
        let tail = self.tail;
        {
            let e = slab.at_mut(index);
            e.prev = tail;
            e.next = NIL;
        }
        if tail == NIL {
            self.head = index;
        } else {
            slab.at_mut(tail).next = index;
        }
        self.tail = index;
    }

    #[inline]
    pub(crate) fn unlink<T>(&mut self, slab: &mut Slab<Entry<T>>, index: u32) {
        let (prev, next) = {
            let e = slab.at(index);
            (e.prev, e.next)
        };
        if prev == NIL {
            self.head = next;
        } else {
            slab.at_mut(prev).next = next;
        }
        if next == NIL {
            self.tail = prev;
        } else {
            slab.at_mut(next).prev = prev;
        }
    }

    /// Unlinks `index` if it has neighbours on both sides, which leaves its list's ends as
    /// they are (so the caller need not know the list); returns whether it did.
    #[inline]
    pub(crate) fn unlink_inner<T>(slab: &mut Slab<Entry<T>>, index: u32) -> bool {
        let (prev, next) = {
            let e = slab.at(index);
            (e.prev, e.next)
        };
        if prev == NIL || next == NIL {
            return false;
        }
        slab.at_mut(prev).next = next;
        slab.at_mut(next).prev = prev;
        true
    }

    #[inline]
    pub(crate) fn pop_front<T>(&mut self, slab: &mut Slab<Entry<T>>) -> Option<u32> {
        if self.head == NIL {
            return None;
        }
        let index = self.head;
        self.unlink(slab, index);
        Some(index)
    }

    /// Walks the list, checking its links; returns the entries in order. For invariant checks.
    pub(crate) fn collect<T>(&self, slab: &Slab<Entry<T>>) -> alloc::vec::Vec<u32> {
        let mut out = alloc::vec::Vec::new();
        let mut prev = NIL;
        let mut cur = self.head;
        while cur != NIL {
            assert!(out.len() <= slab.len(), "list has a cycle");
            let e = slab.at(cur);
            assert_eq!(e.prev, prev, "broken prev link at {cur}");
            out.push(cur);
            prev = cur;
            cur = e.next;
        }
        assert_eq!(self.tail, prev, "tail is not the last entry");
        out
    }
}
