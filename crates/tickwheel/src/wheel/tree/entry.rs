//! [`Entry`]: a timer in the slab, with its links in the one list it sits in.

use core::num::NonZeroU32;

use crate::slab::NIL;
use crate::Tick;

/// A pending timer: its payload and deadline, its neighbours in its list, and the list itself
/// (a [`ListId`](super::nodes::ListId)), so a cancel unlinks it without looking for it.
///
/// With a `u64` payload this is 32 bytes: 8 + 8 + four `u32`s.
pub(crate) struct Entry<T> {
    pub(crate) payload: T,
    pub(crate) deadline: Tick,
    pub(crate) prev: u32,
    pub(crate) next: u32,
    pub(crate) list: u32,
    pub(crate) generation: NonZeroU32,
}

impl<T> Entry<T> {
    pub(crate) fn new(deadline: Tick, payload: T) -> Self {
        Self {
            payload,
            deadline,
            prev: NIL,
            next: NIL,
            list: NIL,
            generation: crate::slab::FIRST_GENERATION,
        }
    }
}

crate::slab::generational!(Entry);
