//! [`Entry`]: a timer in the slab.

use core::num::NonZeroU32;

use crate::slab::NIL;
use crate::Tick;

/// A pending timer: its payload and deadline, and the list it is in (a
/// [`ListId`](super::nodes::ListId)), so a cancel unlinks it without looking for it. Its
/// neighbours in that list are in the nodes' links.
///
/// With a `u64` payload this is 24 bytes: 8 + 8 + two `u32`s.
pub(crate) struct Entry<T> {
    pub(crate) payload: T,
    pub(crate) deadline: Tick,
    pub(crate) list: u32,
    pub(crate) generation: NonZeroU32,
}

impl<T> Entry<T> {
    pub(crate) fn new(deadline: Tick, payload: T) -> Self {
        Self {
            payload,
            deadline,
            list: NIL,
            generation: crate::slab::FIRST_GENERATION,
        }
    }
}

crate::slab::generational!(Entry);
