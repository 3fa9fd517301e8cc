//! A generational slab: the one storage under every implementation.
//!
//! Entries live in one `Vec`; a vacant slot links to the next vacant slot of its *page*
//! ([`PAGE`] slots). Each page keeps its own LIFO free list (a freed slot is the next one its
//! page reuses, while it is still in cache), and an insert takes a slot from the lowest page
//! that has one ([`pages`]). After a burst the live timers therefore gather at low indices,
//! and [`Slab::shrink_to_fit`] releases the vacant tail without moving any timer, so every key
//! stays valid. Each slot carries a generation that moves on when the slot is vacated, which
//! is what makes a [`TimerKey`] stale.
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
//! A slot released by a shrink comes back at a generation past every one it issued.
//!
//! # Invariants
//! - `len` equals the number of occupied slots; each page's free list holds every vacant slot
//!   of that page once.
//! - `low` is the lowest page with a vacant slot, or `NIL` when there is none; its list's head
//!   is `low_head` (its entry in `heads` is `NIL`), and `free_pages` holds every other page with a
//!   vacant slot. While the vacant slots stay in one page, which is how a server's churn
//!   goes, insert and remove are what a single free list costs plus one compare.
//! - An occupied slot's generation equals the generation of the key that was issued for it;
//!   every generation a slot index ever issued lies in `[start, fresh)` along the circle from
//!   `start`, for slots created after a shrink as for the rest.
//! - `len <= limit`, and the slot count never exceeds `u32::MAX` (keys hold a `u32` index).
//!
//! # Costs
//! | operation | cost |
//! |---|---|
//! | insert | O(1); O(levels of [`pages`]) when it takes a page's last vacant slot; amortised O(1) when the `Vec` grows |
//! | remove / get by key | O(1), one bounds check and one generation compare |
//! | shrink_to_fit | O(slots): the vacant tail is released, one page's list rebuilt |
//! | memory | one slot per timer up to the highest live index; 4 B per page and 1 bit |

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

mod pages;

use pages::PageBits;

/// Slots per page: the unit the free lists prefer low indices in.
pub(crate) const PAGE: usize = 1 << PAGE_SHIFT;
const PAGE_SHIFT: u32 = 10;

enum Slot<E> {
    Occupied(E),
    Vacant {
        /// The generation the next occupant gets.
        generation: NonZeroU32,
        /// The next vacant slot of the same page, or `NIL`.
        next_free: u32,
    },
}

pub(crate) struct Slab<E> {
    slots: Vec<Slot<E>>,
    /// Each page's free-list head, or `NIL`; `NIL` for the low page, whose head is `low_head`.
    heads: Vec<u32>,
    /// The pages whose free list is non-empty.
    free_pages: PageBits,
    /// The lowest page with a vacant slot, or `NIL`.
    low: u32,
    /// The low page's free-list head (`NIL` iff `low` is).
    low_head: u32,
    len: usize,
    /// Most occupied slots allowed at once (the timer's capacity).
    limit: usize,
    /// The generation this slab's first slots started at.
    start: NonZeroU32,
    /// The generation a newly created slot gets: `start`, or past every generation a released
    /// slot issued.
    fresh: NonZeroU32,
}

impl<E: Generational> Slab<E> {
    pub(crate) fn new(limit: Option<usize>, preallocate: usize) -> Self {
        // Index NIL is reserved as the "no link" marker.
        let limit = limit.unwrap_or(usize::MAX).min(NIL as usize);
        let start = starting_generation();
        Self {
            slots: Vec::with_capacity(preallocate.min(limit)),
            heads: Vec::new(),
            free_pages: PageBits::new(),
            low: NIL,
            low_head: NIL,
            len: 0,
            limit,
            start,
            fresh: start,
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Slots that exist: at least one past the highest live index, at most the most entries
    /// held at once since the last shrink.
    pub(crate) fn slots(&self) -> usize {
        self.slots.len()
    }

    /// Every occupied slot's index and entry, in index order: one sequential pass over
    /// [`Slab::slots`] slots.
    pub(crate) fn occupied(&self) -> impl Iterator<Item = (u32, &E)> {
        (0..)
            .zip(&self.slots)
            .filter_map(|(index, slot)| match slot {
                Slot::Occupied(value) => Some((index, value)),
                Slot::Vacant { .. } => None,
            })
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
    #[inline(always)]
    pub(crate) fn insert(&mut self, mut value: E) -> Result<TimerKey, E> {
        if self.is_full() {
            return Err(value);
        }
        self.len += 1;
        if self.low_head != NIL {
            let index = self.low_head;
            let slot = &mut self.slots[index as usize];
            let Slot::Vacant {
                generation,
                next_free,
            } = *slot
            else {
                unreachable!("free list points at an occupied slot")
            };
            value.set_generation(generation);
            *slot = Slot::Occupied(value);
            self.low_head = next_free;
            if next_free == NIL {
                self.low_page_used_up();
            }
            Ok(TimerKey {
                index,
                generation: generation.get(),
            })
        } else {
            let index = self.slots.len() as u32;
            if index as usize % PAGE == 0 {
                self.add_page();
            }
            value.set_generation(self.fresh);
            self.slots.push(Slot::Occupied(value));
            Ok(TimerKey {
                index,
                generation: self.fresh.get(),
            })
        }
    }

    /// The low page has just given its last vacant slot: the lowest page in `free_pages`, if
    /// any, becomes `low`.
    #[inline]
    fn low_page_used_up(&mut self) {
        if self.len == self.slots.len() {
            self.low = NIL;
        } else {
            self.take_lowest_page();
        }
    }

    #[inline(never)]
    fn take_lowest_page(&mut self) {
        let next = self
            .free_pages
            .next_from(self.low as usize + 1)
            .expect("a vacant slot outside the low page is in free_pages");
        self.free_pages.clear(next);
        self.low = next as u32;
        self.low_head = core::mem::replace(&mut self.heads[next], NIL);
    }

    #[cold]
    fn add_page(&mut self) {
        self.heads.push(NIL);
        self.free_pages.push_page();
    }

    /// Links a just-vacated slot into its page's free list; returns the link it gets.
    #[inline(always)]
    fn link_free(&mut self, index: u32) -> u32 {
        self.len -= 1;
        let page = index >> PAGE_SHIFT;
        if page == self.low {
            core::mem::replace(&mut self.low_head, index)
        } else if self.low == NIL {
            // No slot was vacant: this one's page becomes the low page.
            self.low = page;
            self.low_head = index;
            NIL
        } else if page > self.low {
            let next = core::mem::replace(&mut self.heads[page as usize], index);
            if next == NIL {
                self.free_pages.set(page as usize);
            }
            next
        } else {
            self.become_low(index, page)
        }
    }

    /// [`link_free`](Self::link_free) into a page below `low`, which is some page: no page
    /// below it has a vacant slot, so `page` becomes the low page and the old one goes back to
    /// `free_pages`, its list with it.
    #[inline(never)]
    fn become_low(&mut self, index: u32, page: u32) -> u32 {
        self.heads[self.low as usize] = self.low_head;
        self.free_pages.set(self.low as usize);
        self.low = page;
        self.low_head = index;
        NIL
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

    /// Vacates the slot a key names and returns its entry; `None` for a stale key.
    #[cfg(test)]
    pub(crate) fn remove(&mut self, key: TimerKey) -> Option<E> {
        self.take_if(key.index, |e| e.generation().get() == key.generation)
            .map(|(_, e)| e)
    }

    /// Vacates slot `index` if it is occupied by an entry `keep` accepts, returning the key it
    /// had and the entry: one slot access where a check, a key and a removal would take three.
    #[cfg(test)]
    pub(crate) fn take_if(
        &mut self,
        index: u32,
        keep: impl FnOnce(&E) -> bool,
    ) -> Option<(TimerKey, E)> {
        let generation = match self.slots.get(index as usize)? {
            Slot::Occupied(value) if keep(value) => value.generation(),
            _ => return None,
        };
        let value = self.vacate(index, generation);
        let key = TimerKey {
            index,
            generation: generation.get(),
        };
        Some((key, value))
    }

    /// Vacates occupied slot `index`, whose occupant has `generation`, and returns the occupant.
    #[inline(always)]
    fn vacate(&mut self, index: u32, generation: NonZeroU32) -> E {
        let next_free = self.link_free(index);
        let vacant = Slot::Vacant {
            generation: generation.checked_add(1).unwrap_or(FIRST_GENERATION),
            next_free,
        };
        match core::mem::replace(&mut self.slots[index as usize], vacant) {
            Slot::Occupied(value) => value,
            Slot::Vacant { .. } => unreachable!("vacating a vacant slot"),
        }
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
    #[inline(always)]
    pub(crate) fn remove_at(&mut self, index: u32) -> E {
        let generation = match &self.slots[index as usize] {
            Slot::Occupied(value) => value.generation(),
            Slot::Vacant { .. } => unreachable!("removing a vacant slot"),
        };
        self.vacate(index, generation)
    }

    /// The distance of `generation` along the circle from this slab's first one.
    fn age(&self, generation: NonZeroU32) -> u32 {
        generation.get().wrapping_sub(self.start.get())
    }

    /// Releases the vacant slots after the highest occupied one and the memory they took.
    /// No occupied slot moves, so every key stays valid; a released slot, when it is created
    /// again, starts past every generation it issued, so its old keys stay stale. O(slots).
    pub(crate) fn shrink_to_fit(&mut self) {
        let keep = self
            .slots
            .iter()
            .rposition(|s| matches!(s, Slot::Occupied(_)))
            .map_or(0, |i| i + 1);
        if self.low != NIL {
            self.heads[self.low as usize] = self.low_head;
        }
        for slot in &self.slots[keep..] {
            if let Slot::Vacant { generation, .. } = *slot {
                if self.age(generation) > self.age(self.fresh) {
                    self.fresh = generation;
                }
            }
        }
        self.slots.truncate(keep);
        self.slots.shrink_to_fit();
        let pages = keep.div_ceil(PAGE);
        self.heads.truncate(pages);
        self.heads.shrink_to_fit();
        // The last page kept may have linked released slots: relink its vacant slots, lowest
        // first.
        if let Some(last) = pages.checked_sub(1) {
            let mut head = NIL;
            for index in (last * PAGE..keep).rev() {
                if let Slot::Vacant { next_free, .. } = &mut self.slots[index] {
                    *next_free = head;
                    head = index as u32;
                }
            }
            self.heads[last] = head;
        }
        let heads = &self.heads;
        self.free_pages = PageBits::rebuild(pages, |p| heads[p] != NIL);
        (self.low, self.low_head) = match self.free_pages.next_from(0) {
            Some(page) => {
                self.free_pages.clear(page);
                (page as u32, core::mem::replace(&mut self.heads[page], NIL))
            }
            None => (NIL, NIL),
        };
    }

    /// Bytes of heap memory the slab holds (its whole allocation).
    pub(crate) fn allocated_bytes(&self) -> usize {
        self.slots.capacity() * core::mem::size_of::<Slot<E>>()
            + self.heads.capacity() * core::mem::size_of::<u32>()
            + self.free_pages.allocated_bytes()
    }

    /// Asserts the slab's invariants.
    pub(crate) fn check(&self) {
        let occupied = self
            .slots
            .iter()
            .filter(|s| matches!(s, Slot::Occupied(_)))
            .count();
        assert_eq!(occupied, self.len, "slab len disagrees with occupied slots");
        assert_eq!(
            self.heads.len(),
            self.slots.len().div_ceil(PAGE),
            "page count"
        );
        assert_eq!(self.free_pages.pages(), self.heads.len(), "page bits count");
        self.free_pages.check();
        let mut free = 0;
        for (page, &head) in self.heads.iter().enumerate() {
            let head = if page as u32 == self.low {
                assert_eq!(head, NIL, "the low page's list is outside low_head");
                self.low_head
            } else {
                head
            };
            assert_eq!(
                self.free_pages.get(page),
                head != NIL && page as u32 != self.low,
                "page {page}'s bit disagrees with its free list"
            );
            let mut cursor = head;
            let mut in_page = 0;
            while cursor != NIL {
                free += 1;
                in_page += 1;
                assert!(in_page <= PAGE, "page {page}'s free list has a cycle");
                assert_eq!(cursor as usize / PAGE, page, "free list leaves its page");
                match self.slots[cursor as usize] {
                    Slot::Vacant { next_free, .. } => cursor = next_free,
                    Slot::Occupied(_) => panic!("free list reaches an occupied slot"),
                }
            }
        }
        assert_eq!(
            free + self.len,
            self.slots.len(),
            "free lists miss vacant slots"
        );
        let lowest = (0..self.heads.len()).find(|&p| {
            if p as u32 == self.low {
                self.low_head != NIL
            } else {
                self.heads[p] != NIL
            }
        });
        assert_eq!(
            self.low == NIL,
            self.low_head == NIL,
            "low and low_head disagree"
        );
        assert_eq!(
            self.low,
            lowest.map_or(NIL, |p| p as u32),
            "low is not the lowest page with a vacant slot"
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
    fn inserts_take_the_lowest_page_first() {
        let mut slab = Slab::new(None, 0);
        let keys: Vec<TimerKey> = (0..4 * PAGE as u64)
            .map(|x| slab.insert(value(x)).unwrap())
            .collect();
        // Free in insertion order: a single LIFO list would hand out the last page first.
        for &k in &keys {
            slab.remove(k).unwrap();
        }
        slab.check();
        for x in 0..PAGE as u64 {
            let k = slab.insert(value(x)).unwrap();
            assert!((k.index as usize) < PAGE, "slot {} is past page 0", k.index);
        }
        slab.check();
        let k = slab.insert(value(0)).unwrap();
        assert_eq!(k.index as usize / PAGE, 1, "page 1 once page 0 is full");
    }

    #[test]
    fn shrink_releases_the_vacant_tail_and_keeps_keys() {
        let mut slab = Slab::new(None, 0);
        let keys: Vec<TimerKey> = (0..100_000u64)
            .map(|x| slab.insert(value(x)).unwrap())
            .collect();
        let peak = slab.allocated_bytes();
        for &k in &keys[..] {
            slab.remove(k).unwrap();
        }
        let live: Vec<(TimerKey, u64)> = (0..1000u64)
            .map(|x| (slab.insert(value(x)).unwrap(), x))
            .collect();
        slab.shrink_to_fit();
        slab.check();
        // Within a page the free list is LIFO, so the live timers fill page 0 from its top.
        assert_eq!(slab.slots(), PAGE);
        let after = slab.allocated_bytes();
        assert!(after * 10 < peak, "{after} B after, {peak} B at peak");
        for &(k, x) in &live {
            assert_eq!(slab.get(k).map(|v| v.x), Some(x), "a live key survives");
        }
        // Keys of released slots stay stale when those slots are created again.
        let again: Vec<TimerKey> = (0..99_000u64)
            .map(|x| slab.insert(value(x)).unwrap())
            .collect();
        slab.check();
        for &k in &keys {
            if let Some(v) = slab.get(k) {
                panic!("old key {k:?} reaches a new timer ({})", v.x);
            }
        }
        assert_eq!(again.len(), 99_000);
    }

    #[test]
    fn shrink_of_an_empty_slab_releases_everything() {
        let mut slab = Slab::new(None, 0);
        let k = slab.insert(value(7)).unwrap();
        slab.remove(k);
        slab.shrink_to_fit();
        slab.check();
        assert_eq!(slab.allocated_bytes(), core::mem::size_of::<Vec<u64>>());
        let k2 = slab.insert(value(8)).unwrap();
        assert_eq!(k2.index, k.index);
        assert_ne!(k2, k, "a recreated slot issues a new generation");
        assert_eq!(slab.resolve(k), None);
    }

    #[test]
    fn slot_is_as_small_as_its_entry() {
        // The generation's zero niche carries the occupied/vacant tag.
        assert_eq!(core::mem::size_of::<Slot<Value>>(), 16);
    }
}
