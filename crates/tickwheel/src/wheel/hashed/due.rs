//! The hashed wheel's due queue: timers whose deadline is at or behind the cursor.
//!
//! The ready list holds the timers inserted or reset to exactly the cursor's tick, in first-in
//! first-out order (a slot's own due timers fire from the slot as its visit reaches them). The overdue store holds timers inserted or reset to a
//! deadline already behind the cursor, ordered by `(deadline, insertion)`; they all order before
//! the ready list, so the two together hand out timers in the contract's order.
//!
//! # Invariants
//! - Every ready entry's deadline equals the cursor; every overdue entry's is below it.
//! - The cursor moves only while the ready list is empty (the wheel drains it first).

use super::list::List;
use super::ordered::Ordered;
use super::Entry;
use crate::slab::Slab;
use crate::Tick;

#[derive(Default)]
pub(crate) struct Due {
    pub(crate) ready: List,
    overdue: Ordered,
}

impl Default for List {
    fn default() -> Self {
        List::EMPTY
    }
}

impl Due {
    /// Queues a timer whose deadline is `<= cursor`.
    #[inline]
    pub(crate) fn push<T>(&mut self, slab: &mut Slab<Entry<T>>, index: u32, cursor: Tick) {
        if slab.at(index).deadline == cursor {
            self.ready.push_back(slab, index);
        } else {
            self.overdue.insert(slab, index);
        }
    }

    /// Takes out a timer whose deadline is `<= cursor`.
    #[inline]
    pub(crate) fn remove<T>(&mut self, slab: &mut Slab<Entry<T>>, index: u32, cursor: Tick) {
        if slab.at(index).deadline == cursor {
            self.ready.unlink(slab, index);
        } else {
            self.overdue.remove(slab, index);
        }
    }

    /// The next timer to fire: overdue ones first, then the ready list.
    #[inline]
    pub(crate) fn pop<T>(&mut self, slab: &mut Slab<Entry<T>>) -> Option<u32> {
        if self.overdue.len() != 0 {
            return self.overdue.pop_first_until(Tick::MAX);
        }
        self.ready.pop_front(slab)
    }

    /// Nothing queued.
    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        self.overdue.len() == 0 && self.ready.is_empty()
    }

    /// The earliest deadline queued here.
    #[inline]
    pub(crate) fn first_deadline(&self, cursor: Tick) -> Option<Tick> {
        if self.overdue.len() == 0 {
            // The common case: skip the map.
            return (!self.ready.is_empty()).then_some(cursor);
        }
        self.overdue.first_deadline()
    }

    /// Every queued entry in firing order, checking the invariants above.
    pub(crate) fn collect<T>(&self, slab: &Slab<Entry<T>>, cursor: Tick) -> alloc::vec::Vec<u32> {
        let mut out = self.overdue.collect(slab);
        for &i in &out {
            assert!(
                slab.at(i).deadline < cursor,
                "overdue entry not behind the cursor"
            );
        }
        let ready = self.ready.collect(slab);
        for &i in &ready {
            assert_eq!(slab.at(i).deadline, cursor, "ready entry not at the cursor");
        }
        out.extend(ready);
        out
    }
}
