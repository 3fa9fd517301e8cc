//! A ring slot's first-in first-out list of timers, linked through their slab [`Entry`]s and
//! circular through `next`, so that a slot is one 4 B tail.
//!
//! The slot names its tail, and the tail's `next` is the head; `prev` links run from the tail
//! back to the head, whose `prev` is `NIL`. A push touches only the tail's entry and the new
//! one. `tail == NIL` iff the slot is empty. Push, unlink and head are O(1).

use core::num::NonZeroU32;

use crate::slab::{Slab, NIL};
use crate::{Expired, Tick, TimerKey};

/// A hashed-wheel timer. In the ring, `prev` and `next` are its neighbours in its slot's
/// list; in the far heap (`far`), they are the heap's key for it. With a `u64` payload this
/// is 32 bytes: 8 + 8 + three `u32`s and the flag.
pub(crate) struct Entry<T> {
    pub(crate) payload: T,
    pub(crate) deadline: Tick,
    pub(crate) prev: u32,
    pub(crate) next: u32,
    pub(crate) generation: NonZeroU32,
    pub(crate) far: bool,
}

impl<T> Entry<T> {
    pub(crate) fn new(deadline: Tick, payload: T) -> Self {
        let (prev, next, generation) = (NIL, NIL, crate::slab::FIRST_GENERATION);
        let far = false;
        Self {
            payload,
            deadline,
            prev,
            next,
            generation,
            far,
        }
    }

    /// The far heap's key for this timer (only meaningful while `far`).
    pub(crate) fn far_key(&self) -> TimerKey {
        TimerKey {
            index: self.prev,
            generation: self.next,
        }
    }
}

crate::slab::generational!(Entry);

/// Removes timer `index` from the slab and hands it out.
pub(crate) fn take<T>(slab: &mut Slab<Entry<T>>, index: u32) -> Expired<T> {
    let key = slab.key_at(index);
    let entry = slab.remove_at(index);
    let (deadline, payload) = (entry.deadline, entry.payload);
    Expired {
        key,
        deadline,
        payload,
    }
}

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

    /// Appends timer `index`.
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

    /// The first timer in, if any.
    pub(crate) fn head<T>(&self, slab: &Slab<Entry<T>>) -> Option<u32> {
        (self.tail != NIL).then(|| slab.at(self.tail).next)
    }

    /// Walks the list from its head, checking its links; returns the entries in order. For
    /// invariant checks and `drain`.
    pub(crate) fn collect<T>(&self, slab: &Slab<Entry<T>>) -> alloc::vec::Vec<u32> {
        let mut out = alloc::vec::Vec::new();
        let (mut prev, mut cur) = (NIL, self.head(slab).unwrap_or(NIL));
        while prev != self.tail {
            assert!(out.len() < slab.len(), "slot list does not close");
            assert_eq!(slab.at(cur).prev, prev, "broken prev link at {cur}");
            out.push(cur);
            (prev, cur) = (cur, slab.at(cur).next);
        }
        assert!(
            out.first().map_or(true, |&head| head == cur),
            "the tail leads elsewhere"
        );
        out
    }
}
