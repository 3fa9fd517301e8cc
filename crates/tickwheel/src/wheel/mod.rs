//! The timing-wheel designs and the pieces they share.
//!
//! Both wheels keep each timer in one slab entry with exactly one place, and that place is a
//! function of the timer's deadline and the wheel's cursor (the last tick fully swept), so
//! entries need not remember where they are:
//!
//! | deadline vs cursor | place |
//! |---|---|
//! | `deadline < cursor` | the overdue queue, ordered by `(deadline, insertion)` |
//! | `deadline == cursor` | the ready list, first-in first-out |
//! | `deadline > cursor` | a wheel slot (or the hierarchical wheel's overflow) |
//!
//! The hashed wheel links its entries ([`Entry`]) into intrusive lists ([`list`], [`due`],
//! [`ordered`]). The hierarchical wheel keeps vectors of references instead, deleted lazily
//! ([`bucket`]), with its arithmetic in [`level`].

pub(crate) mod bucket;
pub(crate) mod due;
pub(crate) mod hashed;
pub(crate) mod hierarchical;
pub(crate) mod level;
pub(crate) mod list;
pub(crate) mod moved;
pub(crate) mod nursery;
pub(crate) mod ordered;

use core::num::NonZeroU32;

use crate::slab::Slab;
use crate::{Expired, Tick};

/// A hashed-wheel timer: the payload, its deadline and its links in an intrusive list.
///
/// Entries kept in an [`ordered::Ordered`] store (overdue, overflow) are not in a list; they
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
