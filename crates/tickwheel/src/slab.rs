//! A generational slab: the one storage under every implementation.
//!
//! Entries live in one `Vec`; a vacant slot links to the next vacant slot (a LIFO free list, so
//! a freed slot is the next one reused while it is still in cache). Each slot carries a
//! generation that moves on when the slot is vacated, which is what makes a [`TimerKey`] stale.
//!
//! An occupied slot's generation lives inside the entry as a `NonZeroU32` (see
//! [`Generational`]): its zero niche lets the slot enum tell occupied from vacant without a tag
//! word, so a slot is exactly as large as its entry. Generations skip 0 when they wrap, so a key
//! of generation 0 is always stale.
//!
//! Each slab starts its slots at its own generation, [`GENERATION_STRIDE`] further along the
//! `u32` circle than the slab created before it, so a key issued by one timer names a
//! generation that no slot of another timer holds. A foreign key is accepted only where one
//! timer has reused that slot as many more times than the other as their starting generations
//! lie apart: among the first `n` timers of a process at least about 2³² / (2.6 · n) reuses of
//! one slot (for a thousand timers, 1.6 million), which no caller reaches by mistake. On targets
//! without 32-bit atomics every slab starts at 1 and keys are not bound to their timer.
//!
//! # Invariants
//! - `len` equals the number of occupied slots; the free list holds every vacant slot once.
//! - An occupied slot's generation equals the generation of the key that was issued for it.
//! - `len <= limit`, and the slot count never exceeds `u32::MAX` (keys hold a `u32` index).
//!
//! # Costs
//! | operation | cost |
//! |---|---|
//! | insert | O(1); amortised O(1) when the `Vec` grows, no allocation when a slot is reused |
//! | remove / get by key | O(1), one bounds check and one generation compare |
//! | memory | one slot per timer at peak; slots are reused, never returned |

use alloc::vec::Vec;

use core::num::NonZeroU32;
#[cfg(target_has_atomic = "32")]
use core::sync::atomic::{AtomicU32, Ordering};

use crate::TimerKey;

/// Marks "no slot" in free-list and intrusive-list links.
pub(crate) const NIL: u32 = u32::MAX;

/// An entry that stores its own slot's generation.
pub(crate) trait Generational {
    fn generation(&self) -> NonZeroU32;
    fn set_generation(&mut self, generation: NonZeroU32);
}

/// Implements [`Generational`] for an entry type `$ty<T>` with a `generation: NonZeroU32` field.
macro_rules! generational {
    ($ty:ident) => {
        impl<T> $crate::slab::Generational for $ty<T> {
            #[inline]
            fn generation(&self) -> core::num::NonZeroU32 {
                self.generation
            }
            #[inline]
            fn set_generation(&mut self, generation: core::num::NonZeroU32) {
                self.generation = generation;
            }
        }
    };
}
pub(crate) use generational;

/// The generation a fresh entry is built with; the slab overwrites it on insert.
pub(crate) const FIRST_GENERATION: NonZeroU32 = NonZeroU32::MIN;

/// How far apart successive slabs start their generations: 2³² / φ, odd, so the starting
/// generations of any number of slabs stay spread over the whole circle.
pub(crate) const GENERATION_STRIDE: u32 = 0x9E37_79B9;

/// The starting generation of a new slab.
fn starting_generation() -> NonZeroU32 {
    #[cfg(target_has_atomic = "32")]
    {
        static NEXT: AtomicU32 = AtomicU32::new(1);
        let generation = NEXT.fetch_add(GENERATION_STRIDE, Ordering::Relaxed);
        NonZeroU32::new(generation).unwrap_or(FIRST_GENERATION)
    }
    #[cfg(not(target_has_atomic = "32"))]
    {
        FIRST_GENERATION
    }
}

enum Slot<E> {
    Occupied(E),
    Vacant {
        /// The generation the next occupant gets.
        generation: NonZeroU32,
        next_free: u32,
    },
}

pub(crate) struct Slab<E> {
    slots: Vec<Slot<E>>,
    /// Head of the free list, or `NIL`.
    free_head: u32,
    len: usize,
    /// Most occupied slots allowed at once (the timer's capacity).
    limit: usize,
    /// The generation of every slot this slab creates.
    first: NonZeroU32,
}

impl<E: Generational> Slab<E> {
    pub(crate) fn new(limit: Option<usize>, preallocate: usize) -> Self {
        // Index NIL is reserved as the "no link" marker.
        let limit = limit.unwrap_or(usize::MAX).min(NIL as usize);
        Self {
            slots: Vec::with_capacity(preallocate.min(limit)),
            free_head: NIL,
            len: 0,
            limit,
            first: starting_generation(),
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Slots ever created: the most entries the slab has held at once (slots are reused,
    /// never returned).
    pub(crate) fn peak(&self) -> usize {
        self.slots.len()
    }

    /// The capacity limit, or `None` when unbounded (up to `u32::MAX - 1` entries).
    pub(crate) fn limit(&self) -> Option<usize> {
        (self.limit < NIL as usize).then_some(self.limit)
    }

    /// Whether an insert would be refused (the limit, or the `u32` index space, is reached).
    #[inline]
    pub(crate) fn is_full(&self) -> bool {
        self.len >= self.limit
    }

    /// Stores `value`; hands it back when the slab is full.
    pub(crate) fn insert(&mut self, mut value: E) -> Result<TimerKey, E> {
        if self.is_full() {
            return Err(value);
        }
        self.len += 1;
        if self.free_head != NIL {
            let index = self.free_head;
            let slot = &mut self.slots[index as usize];
            let Slot::Vacant {
                generation,
                next_free,
            } = *slot
            else {
                unreachable!("free list points at an occupied slot")
            };
            self.free_head = next_free;
            value.set_generation(generation);
            *slot = Slot::Occupied(value);
            Ok(TimerKey {
                index,
                generation: generation.get(),
            })
        } else {
            let index = self.slots.len() as u32;
            value.set_generation(self.first);
            self.slots.push(Slot::Occupied(value));
            Ok(TimerKey {
                index,
                generation: self.first.get(),
            })
        }
    }

    /// Checks a key and returns its index when it names an occupied slot of that generation.
    #[inline]
    pub(crate) fn resolve(&self, key: TimerKey) -> Option<u32> {
        match self.slots.get(key.index as usize) {
            Some(Slot::Occupied(value)) if value.generation().get() == key.generation => {
                Some(key.index)
            }
            _ => None,
        }
    }

    pub(crate) fn get(&self, key: TimerKey) -> Option<&E> {
        match self.slots.get(key.index as usize) {
            Some(Slot::Occupied(value)) if value.generation().get() == key.generation => {
                Some(value)
            }
            _ => None,
        }
    }

    /// The entry a key names, mutably: one bounds check and one generation compare.
    #[inline]
    pub(crate) fn get_mut(&mut self, key: TimerKey) -> Option<&mut E> {
        match self.slots.get_mut(key.index as usize) {
            Some(Slot::Occupied(value)) if value.generation().get() == key.generation => {
                Some(value)
            }
            _ => None,
        }
    }

    /// Vacates the slot a key names and returns its entry; `None` for a stale key.
    #[inline]
    pub(crate) fn remove(&mut self, key: TimerKey) -> Option<E> {
        self.take_if(key.index, |e| e.generation().get() == key.generation)
            .map(|(_, e)| e)
    }

    /// Vacates slot `index` if it is occupied by an entry `keep` accepts, returning the key it
    /// had and the entry: one slot access where a check, a key and a removal would take three.
    #[inline]
    pub(crate) fn take_if(
        &mut self,
        index: u32,
        keep: impl FnOnce(&E) -> bool,
    ) -> Option<(TimerKey, E)> {
        let slot = self.slots.get_mut(index as usize)?;
        let generation = match slot {
            Slot::Occupied(value) if keep(value) => value.generation(),
            _ => return None,
        };
        let vacant = Slot::Vacant {
            generation: generation.checked_add(1).unwrap_or(FIRST_GENERATION),
            next_free: self.free_head,
        };
        let Slot::Occupied(value) = core::mem::replace(slot, vacant) else {
            unreachable!("checked occupied above")
        };
        self.free_head = index;
        self.len -= 1;
        let key = TimerKey {
            index,
            generation: generation.get(),
        };
        Some((key, value))
    }

    /// The key of an occupied slot.
    #[inline]
    pub(crate) fn key_at(&self, index: u32) -> TimerKey {
        match &self.slots[index as usize] {
            Slot::Occupied(value) => TimerKey {
                index,
                generation: value.generation().get(),
            },
            Slot::Vacant { .. } => unreachable!("key of a vacant slot"),
        }
    }

    /// The entry in an occupied slot; the caller knows it is occupied (an internal link).
    #[inline]
    pub(crate) fn at(&self, index: u32) -> &E {
        match &self.slots[index as usize] {
            Slot::Occupied(value) => value,
            Slot::Vacant { .. } => unreachable!("link to a vacant slot"),
        }
    }

    #[inline]
    pub(crate) fn at_mut(&mut self, index: u32) -> &mut E {
        match &mut self.slots[index as usize] {
            Slot::Occupied(value) => value,
            Slot::Vacant { .. } => unreachable!("link to a vacant slot"),
        }
    }

    /// The entry at `index` if that slot is occupied (used by designs that keep possibly-dead
    /// indices, such as the lazy heap).
    #[inline]
    pub(crate) fn try_at(&self, index: u32) -> Option<&E> {
        match self.slots.get(index as usize) {
            Some(Slot::Occupied(value)) => Some(value),
            _ => None,
        }
    }

    /// Vacates an occupied slot, moving its generation on so that old keys go stale.
    pub(crate) fn remove_at(&mut self, index: u32) -> E {
        let slot = &mut self.slots[index as usize];
        let generation = match slot {
            Slot::Occupied(value) => value
                .generation()
                .checked_add(1)
                .unwrap_or(FIRST_GENERATION),
            Slot::Vacant { .. } => unreachable!("removing a vacant slot"),
        };
        let old = core::mem::replace(
            slot,
            Slot::Vacant {
                generation,
                next_free: self.free_head,
            },
        );
        self.free_head = index;
        self.len -= 1;
        match old {
            Slot::Occupied(value) => value,
            Slot::Vacant { .. } => unreachable!(),
        }
    }

    /// Bytes of heap memory the slab holds (its whole allocation).
    pub(crate) fn allocated_bytes(&self) -> usize {
        self.slots.capacity() * core::mem::size_of::<Slot<E>>()
    }

    /// Asserts the slab's invariants.
    pub(crate) fn check(&self) {
        let occupied = self
            .slots
            .iter()
            .filter(|s| matches!(s, Slot::Occupied(_)))
            .count();
        assert_eq!(occupied, self.len, "slab len disagrees with occupied slots");
        let mut free = 0;
        let mut cursor = self.free_head;
        while cursor != NIL {
            free += 1;
            assert!(free <= self.slots.len(), "free list has a cycle");
            match self.slots[cursor as usize] {
                Slot::Vacant { next_free, .. } => cursor = next_free,
                Slot::Occupied(_) => panic!("free list reaches an occupied slot"),
            }
        }
        assert_eq!(
            free + self.len,
            self.slots.len(),
            "free list misses vacant slots"
        );
        assert!(self.len <= self.limit, "slab holds more than its limit");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug)]
    struct Value {
        x: u64,
        generation: NonZeroU32,
    }

    impl Generational for Value {
        fn generation(&self) -> NonZeroU32 {
            self.generation
        }
        fn set_generation(&mut self, generation: NonZeroU32) {
            self.generation = generation;
        }
    }

    fn value(x: u64) -> Value {
        Value {
            x,
            generation: FIRST_GENERATION,
        }
    }

    #[test]
    fn reuse_makes_old_key_stale() {
        let mut slab = Slab::new(None, 0);
        let a = slab.insert(value(1)).unwrap();
        assert_eq!(slab.remove_at(a.index).x, 1);
        let b = slab.insert(value(2)).unwrap();
        assert_eq!(a.index, b.index, "the freed slot is reused first");
        assert_ne!(a, b);
        assert_eq!(slab.resolve(a), None);
        assert_eq!(slab.get(b).map(|v| v.x), Some(2));
        assert_eq!(
            slab.resolve(TimerKey::from_u64(u64::from(b.index))),
            None,
            "generation 0"
        );
        slab.check();
    }

    #[test]
    fn generation_wraps_past_zero() {
        let mut slab = Slab::new(None, 0);
        let a = slab.insert(value(1)).unwrap();
        slab.at_mut(a.index).generation = NonZeroU32::MAX;
        let a = slab.key_at(a.index);
        slab.remove_at(a.index);
        let b = slab.insert(value(2)).unwrap();
        assert_eq!(b.generation, 1, "u32::MAX wraps to 1, never 0");
        assert_eq!(slab.resolve(a), None);
    }

    #[test]
    fn limit_hands_value_back() {
        let mut slab = Slab::new(Some(1), 0);
        slab.insert(value(1)).unwrap();
        assert_eq!(slab.insert(value(2)).err().map(|v| v.x), Some(2));
        assert_eq!(slab.limit(), Some(1));
    }

    #[test]
    fn slot_is_as_small_as_its_entry() {
        // The generation's zero niche carries the occupied/vacant tag.
        assert_eq!(core::mem::size_of::<Slot<Value>>(), 16);
    }
}
