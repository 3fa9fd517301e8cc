//! [`Far`]: the hashed wheel's timers due more than one revolution after the cursor, one FIFO
//! list per deadline (a *group*), so that a whole deadline joins the ring in one step.
//!
//! A group moves into its slot as soon as the cursor comes within a revolution of its
//! deadline (at most [`MOVES_PER_STEP`] groups each time the cursor moves); until then an
//! insert at that deadline joins the group's tail, so equal deadlines keep first-in first-out
//! order across the move. A hash table finds a deadline's group; a binary min-heap of
//! `(deadline, group)`, each group knowing its heap position, gives the least deadline and
//! takes a group out wherever it is. Groups and the heap live in [`Paged`] arrays, and freed
//! groups on a free list, so that growing copies nothing and, once the store has reached its
//! working set, nothing allocates (the steady-state allocation test holds every design to
//! that; a `BTreeMap` would allocate and free nodes as deadlines come and go).
//!
//! # Invariants
//! - Every live group is non-empty, holds timers of its deadline only, in insertion order, and
//!   is in the table under its deadline and in the heap at its `pos`.
//! - The heap is ordered by deadline, least first; deadlines are distinct.
//!
//! # Costs
//! | operation | cost |
//! |---|---|
//! | push | O(1) into an existing group; O(log g) for a new one (g groups) |
//! | remove | O(1) for a timer with neighbours on both sides; O(1) at a list end; O(log g) when its group empties |
//! | least deadline | O(1) |
//! | move the least group into the ring | O(log g), however many timers it holds |
//! | memory | a 24 B group, a 16 B heap slot and a 5 B table bucket (plus the table's spare room) per far deadline |

use hashbrown::hash_table::Entry;
use hashbrown::HashTable;

use super::list::List;
use super::paged::Paged;
use super::Entry as TimerEntry;
use crate::slab::{Slab, NIL};
use crate::Tick;

/// Far groups moved into the ring each time the cursor moves, at most.
pub(super) const MOVES_PER_STEP: usize = 4;

/// One far deadline's timers.
#[derive(Clone, Copy)]
struct Group {
    deadline: Tick,
    list: List,
    /// The group's place in the heap; for a free group, the next free one (`NIL`: none).
    pos: u32,
}

/// A new group for `deadline` at heap position `pos`, from the free list or the arena's end.
#[inline(never)]
fn new_group(groups: &mut Paged<Group>, free: &mut u32, deadline: Tick, pos: usize) -> u32 {
    let group = Group {
        deadline,
        list: List::EMPTY,
        pos: pos as u32,
    };
    if *free == NIL {
        groups.push(group);
        (groups.len() - 1) as u32
    } else {
        let g = *free;
        *free = groups[g as usize].pos;
        groups[g as usize] = group;
        g
    }
}

/// The hash of a deadline: one folded multiply (deadlines are not chosen by an adversary who
/// sees the wheel, and a poor spread costs probe length only, never correctness).
#[inline]
fn hash(deadline: Tick) -> u64 {
    let m = u128::from(deadline) * 0x9E37_79B9_7F4A_7C15;
    (m >> 64) as u64 ^ m as u64
}

/// Timers due more than a revolution ahead; see the module docs.
pub(super) struct Far {
    /// Live group indices, found by their group's deadline.
    by_deadline: HashTable<u32>,
    groups: Paged<Group>,
    /// The first free group (`NIL`: none).
    free: u32,
    /// `(deadline, group)`, a binary min-heap by deadline.
    heap: Paged<(Tick, u32)>,
}

impl Far {
    /// An empty store with room for `deadlines` far deadlines before its table grows.
    pub(super) fn with_capacity(deadlines: usize) -> Self {
        Self {
            by_deadline: HashTable::with_capacity(deadlines),
            groups: Paged::new(Group {
                deadline: 0,
                list: List::EMPTY,
                pos: NIL,
            }),
            free: NIL,
            heap: Paged::new((0, NIL)),
        }
    }

    /// The least far deadline, if any.
    #[inline]
    pub(super) fn first(&self) -> Option<Tick> {
        (self.heap.len() != 0).then(|| self.heap[0].0)
    }

    /// Appends a timer to its deadline's group.
    #[inline]
    pub(super) fn push<T>(&mut self, slab: &mut Slab<TimerEntry<T>>, index: u32, deadline: Tick) {
        let groups = &mut self.groups;
        let g = match self.by_deadline.entry(
            hash(deadline),
            |&g| groups[g as usize].deadline == deadline,
            |&g| hash(groups[g as usize].deadline),
        ) {
            Entry::Occupied(e) => *e.get(),
            Entry::Vacant(e) => {
                let g = new_group(groups, &mut self.free, deadline, self.heap.len());
                e.insert(g);
                self.heap.push((deadline, g));
                self.sift_up(self.heap.len() - 1);
                g
            }
        };
        self.groups[g as usize].list.push_back(slab, index);
    }

    /// The group of `deadline`, if it has one.
    #[inline]
    fn group_of(&self, deadline: Tick) -> Option<u32> {
        self.by_deadline
            .find(hash(deadline), |&g| {
                self.groups[g as usize].deadline == deadline
            })
            .copied()
    }

    /// Takes `deadline`'s group out of the table.
    fn forget(&mut self, deadline: Tick) {
        let groups = &self.groups;
        if let Ok(e) = self
            .by_deadline
            .find_entry(hash(deadline), |&g| groups[g as usize].deadline == deadline)
        {
            e.remove();
        }
    }

    /// Takes a timer out of its deadline's group.
    #[inline]
    pub(super) fn remove<T>(&mut self, slab: &mut Slab<TimerEntry<T>>, index: u32, deadline: Tick) {
        if List::unlink_inner(slab, index) {
            return; // neither end of its list: the group keeps the same ends
        }
        let Some(g) = self.group_of(deadline) else {
            debug_assert!(false, "far timer without a group");
            return;
        };
        let list = &mut self.groups[g as usize].list;
        list.unlink(slab, index);
        if list.is_empty() {
            self.forget(deadline);
            let pos = self.groups[g as usize].pos as usize;
            self.heap_remove(pos);
            self.release(g);
        }
    }

    /// Takes out the group of the least deadline.
    pub(super) fn pop_first(&mut self) -> Option<(Tick, List)> {
        if self.heap.len() == 0 {
            return None;
        }
        let g = self.heap[0].1;
        self.heap_remove(0);
        let Group { deadline, list, .. } = self.groups[g as usize];
        self.forget(deadline);
        self.release(g);
        Some((deadline, list))
    }

    fn release(&mut self, g: u32) {
        let group = &mut self.groups[g as usize];
        group.list = List::EMPTY;
        group.pos = self.free;
        self.free = g;
    }

    /// Puts `(deadline, g)` at heap position `pos` and tells the group.
    #[inline]
    fn set(&mut self, pos: usize, item: (Tick, u32)) {
        self.heap[pos] = item;
        self.groups[item.1 as usize].pos = pos as u32;
    }

    fn sift_up(&mut self, mut pos: usize) {
        let item = self.heap[pos];
        while pos > 0 {
            let parent = (pos - 1) / 2;
            let p = self.heap[parent];
            if p.0 <= item.0 {
                break;
            }
            self.set(pos, p);
            pos = parent;
        }
        self.set(pos, item);
    }

    fn sift_down(&mut self, mut pos: usize) {
        let item = self.heap[pos];
        let len = self.heap.len();
        loop {
            let left = 2 * pos + 1;
            if left >= len {
                break;
            }
            let right = left + 1;
            let child = if right < len && self.heap[right].0 < self.heap[left].0 {
                right
            } else {
                left
            };
            let c = self.heap[child];
            if c.0 >= item.0 {
                break;
            }
            self.set(pos, c);
            pos = child;
        }
        self.set(pos, item);
    }

    /// Takes the group at heap position `pos` out of the heap.
    fn heap_remove(&mut self, pos: usize) {
        let Some(last) = self.heap.pop() else {
            return;
        };
        if pos == self.heap.len() {
            return;
        }
        self.set(pos, last);
        if pos > 0 && last.0 < self.heap[(pos - 1) / 2].0 {
            self.sift_up(pos);
        } else {
            self.sift_down(pos);
        }
    }

    /// Forgets every group (their timers are drained).
    pub(super) fn clear(&mut self) {
        self.by_deadline.clear();
        self.groups.clear();
        self.heap.clear();
        self.free = NIL;
    }

    /// Gives back spare room: live groups move to the front of a fresh arena.
    pub(super) fn shrink_to_fit(&mut self) {
        let mut groups = Paged::new(self.groups.fill());
        for pos in 0..self.heap.len() {
            let group = self.groups[self.heap[pos].1 as usize];
            let g = groups.len() as u32;
            groups.push(group);
            self.heap[pos].1 = g;
        }
        self.groups = groups;
        self.free = NIL;
        self.heap.shrink_to_fit();
        self.by_deadline.clear();
        self.by_deadline.shrink_to_fit(|_| 0);
        for pos in 0..self.heap.len() {
            let g = self.heap[pos].1;
            let groups = &self.groups;
            self.by_deadline
                .insert_unique(hash(groups[g as usize].deadline), g, |&g| {
                    hash(groups[g as usize].deadline)
                });
        }
    }

    /// Bytes held, spare room included.
    pub(super) fn allocated_bytes(&self) -> usize {
        // hashbrown: a group index and a control byte per bucket, buckets a power of two at
        // least 8/7 of the capacity.
        let buckets = if self.by_deadline.capacity() == 0 {
            0
        } else {
            (self.by_deadline.capacity() * 8 / 7).next_power_of_two()
        };
        buckets * (core::mem::size_of::<u32>() + 1)
            + self.groups.allocated_bytes()
            + self.heap.allocated_bytes()
    }

    /// Every group's deadline and list, in no particular order.
    pub(super) fn lists(&self) -> impl Iterator<Item = (Tick, &List)> {
        self.heap.iter().map(|(_, g)| {
            let group = &self.groups[g as usize];
            (group.deadline, &group.list)
        })
    }

    /// Checks the invariants above; returns the timers held.
    pub(super) fn check<T>(&self, slab: &Slab<TimerEntry<T>>) -> usize {
        assert_eq!(
            self.by_deadline.len(),
            self.heap.len(),
            "table and heap disagree"
        );
        let mut held = 0;
        for (pos, (deadline, g)) in self.heap.iter().enumerate() {
            let group = &self.groups[g as usize];
            assert_eq!(deadline, group.deadline, "heap slot and group disagree");
            assert_eq!(
                group.pos as usize, pos,
                "group {g} does not know its heap place"
            );
            assert_eq!(
                self.group_of(group.deadline),
                Some(g),
                "group not in the table"
            );
            if pos > 0 {
                assert!(
                    self.heap[(pos - 1) / 2].0 < deadline,
                    "far heap out of order"
                );
            }
            let entries = group.list.collect(slab);
            assert!(
                !entries.is_empty(),
                "far group of {} is empty",
                group.deadline
            );
            for i in entries {
                assert_eq!(
                    slab.at(i).deadline,
                    group.deadline,
                    "far group holds another deadline"
                );
                held += 1;
            }
        }
        let mut free = 0;
        let mut g = self.free;
        while g != NIL {
            free += 1;
            assert!(free <= self.groups.len(), "free groups form a cycle");
            g = self.groups[g as usize].pos;
        }
        assert_eq!(free + self.heap.len(), self.groups.len(), "a group is lost");
        held
    }
}
