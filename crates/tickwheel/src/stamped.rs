//! The slab entry of the lazy heap: payload, deadline, generation and the insertion number
//! (`seq`) that names the one live reference to the timer.
//!
//! Such a design keeps references `(index, seq)` to entries and never searches for them on
//! cancel or reset: the entry takes a new `seq` (or leaves the slab) and every older reference
//! to it is dead from then on, because seqs are never reused while a reference could hold one.
//!
//! # Costs
//! | operation | cost |
//! |---|---|
//! | liveness of a reference | one slab read |
//! | memory | 24 B for a `u64` payload |

use core::num::NonZeroU32;

use crate::slab::{Slab, FIRST_GENERATION};
use crate::{Expired, Tick, TimerKey};

/// An entry's deadline word.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Word(Tick);

impl Word {
    /// The word of a deadline.
    #[inline(always)]
    pub(crate) const fn deadline(deadline: Tick) -> Self {
        Self(deadline)
    }

    /// The deadline.
    #[inline(always)]
    pub(crate) const fn plain(self) -> Tick {
        self.0
    }
}

#[derive(Debug)]
pub(crate) struct Stamped<T> {
    pub(crate) payload: T,
    /// The deadline.
    pub(crate) word: Word,
    pub(crate) generation: NonZeroU32,
    /// Insertion order (inserts and resets); names the one live reference to this timer.
    pub(crate) seq: u32,
}

crate::slab::generational!(Stamped);

impl<T> Stamped<T> {
    /// A fresh entry (the slab sets the generation on insert).
    #[inline]
    pub(crate) fn new(deadline: Tick, payload: T, seq: u32) -> Self {
        Self {
            payload,
            word: Word::deadline(deadline),
            generation: FIRST_GENERATION,
            seq,
        }
    }

    /// The deadline.
    #[inline(always)]
    pub(crate) fn deadline(&self) -> Tick {
        self.word.plain()
    }

    /// Sets the deadline.
    #[inline(always)]
    pub(crate) fn set_deadline(&mut self, deadline: Tick) {
        self.word = Word::deadline(deadline);
    }

    /// The entry, taken out of the slab under `key`, as the timer that came due.
    #[inline]
    pub(crate) fn into_expired(self, key: TimerKey) -> Expired<T> {
        Expired {
            key,
            deadline: self.word.plain(),
            payload: self.payload,
        }
    }
}

/// Whether the reference `(index, seq)` still names its timer.
#[inline]
pub(crate) fn is_live<T>(slab: &Slab<Stamped<T>>, index: u32, seq: u32) -> bool {
    live_deadline(slab, index, seq).is_some()
}

/// The deadline of the timer at `index` if a reference made with `seq` is live there: the
/// entry is occupied and holds exactly that seq.
#[inline]
pub(crate) fn live_deadline<T>(slab: &Slab<Stamped<T>>, index: u32, seq: u32) -> Option<Tick> {
    slab.try_at(index)
        .filter(|e| e.seq == seq)
        .map(Stamped::deadline)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reference_dies_with_a_new_seq_and_with_its_slot() {
        assert_eq!(core::mem::size_of::<Stamped<u64>>(), 24);
        let mut slab = Slab::new(None, 0);
        let key = slab.insert(Stamped::new(5, 'a', 7)).unwrap();
        assert!(is_live(&slab, key.index, 7));
        slab.at_mut(key.index).seq = 8;
        assert!(!is_live(&slab, key.index, 7) && is_live(&slab, key.index, 8));
        let entry = slab.remove_at(key.index);
        assert!(!is_live(&slab, key.index, 8));
        let fired = entry.into_expired(key);
        assert_eq!((fired.key, fired.deadline, fired.payload), (key, 5, 'a'));
    }
}
