//! [`Entry`]: a hashed-wheel timer in the slab, and [`take`], how one leaves it.

use core::num::NonZeroU32;

use crate::slab::Slab;
use crate::{Expired, Tick};

/// A hashed-wheel timer: the payload, its deadline and its links in an intrusive list.
///
/// Entries kept in an [`Ordered`](super::ordered::Ordered) store (overdue, overflow) are not in a list; they
/// keep their insertion number split across `prev` and `next` instead.
pub(crate) struct Entry<T> {
    pub(crate) payload: T,
    pub(crate) deadline: Tick,
    pub(crate) prev: u32,
    pub(crate) next: u32,
    pub(crate) generation: NonZeroU32,
}

impl<T> Entry<T> {
    pub(crate) fn new(deadline: Tick, payload: T) -> Self {
        Self {
            payload,
            deadline,
            prev: crate::slab::NIL,
            next: crate::slab::NIL,
            generation: crate::slab::FIRST_GENERATION,
        }
    }
}

crate::slab::generational!(Entry);

/// Takes a timer out of the slab (it must already be unlinked) and hands it back as `Expired`:
/// what the hashed wheel does when a timer fires or is drained.
#[inline]
pub(crate) fn take<T>(slab: &mut Slab<Entry<T>>, index: u32) -> Expired<T> {
    let key = slab.key_at(index);
    let entry = slab.remove_at(index);
    Expired {
        key,
        deadline: entry.deadline,
        payload: entry.payload,
    }
}
