//! The nodes: 64-slot arrays of intrusive FIFO lists, and what happens when a slot gets crowded.
//!
//! A node covers a range of `64^(level + 1)` ticks in 64 slots of `64^level` ticks each. Each
//! slot is either a list of timers threaded through the slab (`prev`/`next` in the entries,
//! head, tail and length here) or, once crowded, a *child* node over that slot's range, one
//! level finer. The wheel's levels are nodes too ([`Nodes::root`]).
//!
//! # Invariants
//! - A list of a node of level 1 or higher holds at most [`MAX_LIST`] timers. Pushing one
//!   more *splits* it: a child node of the level below takes its timers, in list order, and may
//!   split in turn. A level-0 list holds one tick, any number of timers.
//! - Every entry's `list` names the list it is in; lists keep the order of their pushes.
//! - Bit `s` of `occupied` is set iff slot `s` holds a non-empty list or a child; of `children`
//!   iff it holds a child (whose `parent` names the slot).
//! - A child node is never empty: the unlink that empties it releases it, and its parent slot
//!   becomes an empty list, and so on up. Root nodes (no parent) stay while empty.
//! - Released nodes wait in `free` for reuse, so steady churn allocates nothing.
//!
//! # Costs (units of [`Stats::max_call_work`](crate::Stats::max_call_work))
//! | operation | work |
//! |---|---|
//! | push | one per child node descended (at most `level`), plus a split's |
//! | split | one per timer moved, at most `MAX_LIST + 1` per level split, at most `level` splits in a chain |
//! | unlink, pop | none, plus one per node released (at most [`LEVELS`] − 1) |
//!
//! Nodes are boxed, so growing the arena copies pointers, never nodes.

use alloc::boxed::Box;
use alloc::vec::Vec;

use super::entry::Entry;
use super::level::{slot_floor, slot_for, LEVELS, SLOTS, SLOT_BITS};
use crate::slab::{Slab, NIL};
use crate::Tick;

/// The most timers a list above level 0 holds; one more splits it into a child node.
pub(crate) const MAX_LIST: u32 = 32;

/// A list: node index times 64 plus slot.
pub(crate) type ListId = u32;

#[inline(always)]
fn list_id(node: u32, slot: usize) -> ListId {
    node << SLOT_BITS | slot as u32
}

#[inline(always)]
fn split_id(list: ListId) -> (usize, usize) {
    ((list >> SLOT_BITS) as usize, (list as usize) & (SLOTS - 1))
}

/// A slot: a list (`head`, `tail`, `len`), or for a child slot the child's index in `head`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Slot {
    pub(crate) head: u32,
    pub(crate) tail: u32,
    pub(crate) len: u32,
}

impl Slot {
    const EMPTY: Slot = Slot {
        head: NIL,
        tail: NIL,
        len: 0,
    };
}

/// 64 slots over `64^(level + 1)` ticks from `base`.
pub(crate) struct Node {
    pub(crate) occupied: u64,
    pub(crate) children: u64,
    /// Slots span `64^level` ticks.
    pub(crate) level: u32,
    /// The slot this node hangs from, or `NIL` for a root (a level of the wheel).
    pub(crate) parent: ListId,
    /// The first tick of the range (a child's; a root's follows the cursor instead).
    pub(crate) base: Tick,
    pub(crate) slots: [Slot; SLOTS],
}

impl Node {
    fn new(level: usize, parent: ListId, base: Tick) -> Self {
        Self {
            occupied: 0,
            children: 0,
            level: level as u32,
            parent,
            base,
            slots: [Slot::EMPTY; SLOTS],
        }
    }
}

/// Every node, by index. Boxed (against clippy's `vec_box`) so that growing the arena moves
/// 8-byte pointers, not 800-byte nodes: no call copies the nodes.
#[allow(clippy::vec_box)]
pub(crate) struct Nodes {
    nodes: Vec<Box<Node>>,
    free: Vec<u32>,
}

impl Nodes {
    pub(crate) fn new() -> Self {
        Self {
            nodes: Vec::new(),
            free: Vec::new(),
        }
    }

    /// A new empty root node of `level`, for a level of the wheel.
    pub(crate) fn root(&mut self, level: usize) -> u32 {
        self.alloc(level, NIL, 0)
    }

    fn alloc(&mut self, level: usize, parent: ListId, base: Tick) -> u32 {
        if let Some(index) = self.free.pop() {
            *self.nodes[index as usize] = Node::new(level, parent, base);
            return index;
        }
        self.nodes.push(Box::new(Node::new(level, parent, base)));
        (self.nodes.len() - 1) as u32
    }

    /// Returns an empty node to the free list.
    pub(crate) fn release(&mut self, node: u32) {
        debug_assert_eq!(self.nodes[node as usize].occupied, 0);
        self.free.push(node);
    }

    #[inline(always)]
    pub(crate) fn node(&self, node: u32) -> &Node {
        &self.nodes[node as usize]
    }

    /// Every node index ever made, free ones included (for traversals and checks).
    pub(crate) fn count(&self) -> usize {
        self.nodes.len()
    }

    /// Nodes waiting for reuse.
    pub(crate) fn free(&self) -> &[u32] {
        &self.free
    }

    pub(crate) fn allocated_bytes(&self) -> usize {
        self.nodes.capacity() * core::mem::size_of::<Box<Node>>()
            + self.nodes.len() * core::mem::size_of::<Node>()
            + self.free.capacity() * core::mem::size_of::<u32>()
    }

    /// The list a timer due at `deadline` goes to, from slot `slot_for(deadline, level)` of
    /// root `node`, through the children on the way; and the nodes descended.
    #[inline(always)]
    pub(crate) fn find(&self, mut node: u32, deadline: Tick) -> (ListId, u64) {
        let mut work = 0;
        loop {
            let n = &self.nodes[node as usize];
            let slot = slot_for(deadline, n.level as usize);
            if n.children & (1 << slot) == 0 {
                return (list_id(node, slot), work);
            }
            node = n.slots[slot].head;
            work += 1;
        }
    }

    /// Appends timer `index`, due at `deadline`, to its list under root `node` (splitting a
    /// list that gets crowded); returns the work done.
    #[inline(always)]
    pub(crate) fn push<T>(
        &mut self,
        slab: &mut Slab<Entry<T>>,
        node: u32,
        deadline: Tick,
        index: u32,
    ) -> u64 {
        let (list, work) = self.find(node, deadline);
        let len = self.append(slab, list, index);
        if len > MAX_LIST && self.nodes[(list >> SLOT_BITS) as usize].level > 0 {
            return work + self.split(slab, list);
        }
        work
    }

    /// Appends timer `index` to `list`; returns the list's new length.
    #[inline(always)]
    fn append<T>(&mut self, slab: &mut Slab<Entry<T>>, list: ListId, index: u32) -> u32 {
        let (node, slot) = split_id(list);
        let n = &mut self.nodes[node];
        let s = &mut n.slots[slot];
        let tail = s.tail;
        s.tail = index;
        s.len += 1;
        let len = s.len;
        if tail == NIL {
            s.head = index;
            n.occupied |= 1 << slot;
        } else {
            slab.at_mut(tail).next = index;
        }
        let e = slab.at_mut(index);
        e.prev = tail;
        e.next = NIL;
        e.list = list;
        len
    }

    /// Makes crowded `list` a child node one level finer and moves its timers there, in
    /// order; a child slot that gets crowded splits in turn. Returns the timers moved.
    fn split<T>(&mut self, slab: &mut Slab<Entry<T>>, list: ListId) -> u64 {
        let (node, slot) = split_id(list);
        let level = self.nodes[node].level as usize;
        let Slot { head, .. } = self.nodes[node].slots[slot];
        let base = slot_floor(slab.at(head).deadline, level);
        let child = self.alloc(level - 1, list, base);
        let n = &mut self.nodes[node];
        n.children |= 1 << slot;
        n.slots[slot] = Slot {
            head: child,
            tail: NIL,
            len: 0,
        };
        let mut work = 0;
        let mut crowded = None;
        let mut cur = head;
        while cur != NIL {
            let (next, deadline) = {
                let e = slab.at(cur);
                (e.next, e.deadline)
            };
            let to = list_id(child, slot_for(deadline, level - 1));
            if self.append(slab, to, cur) > MAX_LIST {
                crowded = Some(to);
            }
            work += 1;
            cur = next;
        }
        match crowded {
            Some(to) if level > 1 => work + self.split(slab, to),
            _ => work,
        }
    }

    /// Unlinks timer `index` from its list, releasing nodes left empty; returns the work.
    #[inline(always)]
    pub(crate) fn unlink<T>(&mut self, slab: &mut Slab<Entry<T>>, index: u32) -> u64 {
        let (prev, next, list) = {
            let e = slab.at(index);
            (e.prev, e.next, e.list)
        };
        if prev != NIL {
            slab.at_mut(prev).next = next;
        }
        if next != NIL {
            slab.at_mut(next).prev = prev;
        }
        let (node, slot) = split_id(list);
        let s = &mut self.nodes[node].slots[slot];
        if prev == NIL {
            s.head = next;
        }
        if next == NIL {
            s.tail = prev;
        }
        s.len -= 1;
        if s.len == 0 {
            return self.emptied(list);
        }
        0
    }

    /// Removes and returns the head of non-empty `list`, releasing nodes left empty; and the
    /// work.
    #[inline]
    pub(crate) fn pop_front<T>(&mut self, slab: &mut Slab<Entry<T>>, list: ListId) -> (u32, u64) {
        let (node, slot) = split_id(list);
        let head = self.nodes[node].slots[slot].head;
        (head, self.unlink(slab, head))
    }

    /// Takes a whole list out of its slot, leaving it empty (a root's slot: nothing is
    /// released); returns its head.
    pub(crate) fn take_list(&mut self, list: ListId) -> u32 {
        let (node, slot) = split_id(list);
        let n = &mut self.nodes[node];
        debug_assert!(n.children & (1 << slot) == 0);
        let head = n.slots[slot].head;
        n.slots[slot] = Slot::EMPTY;
        n.occupied &= !(1 << slot);
        head
    }

    /// Takes the child out of slot `slot` of root `node` and makes it a root; returns it.
    pub(crate) fn take_child(&mut self, node: u32, slot: usize) -> u32 {
        let n = &mut self.nodes[node as usize];
        debug_assert!(n.children & (1 << slot) != 0);
        let child = n.slots[slot].head;
        n.slots[slot] = Slot::EMPTY;
        n.occupied &= !(1 << slot);
        n.children &= !(1 << slot);
        self.nodes[child as usize].parent = NIL;
        child
    }

    /// Splits `list` (of level 1 or higher) whatever its length, so that its timers can be
    /// taken in deadline order from the child; returns the work.
    pub(crate) fn split_now<T>(&mut self, slab: &mut Slab<Entry<T>>, list: ListId) -> u64 {
        self.split(slab, list)
    }

    /// A list just became empty: clears its bit and releases every node this leaves empty,
    /// up to a root. Returns the nodes released.
    fn emptied(&mut self, mut list: ListId) -> u64 {
        let mut work = 0;
        loop {
            let (node, slot) = split_id(list);
            let n = &mut self.nodes[node];
            n.occupied &= !(1 << slot);
            n.children &= !(1 << slot);
            n.slots[slot] = Slot::EMPTY;
            if n.occupied != 0 || n.parent == NIL {
                return work;
            }
            list = n.parent;
            self.free.push(node as u32);
            work += 1;
        }
    }

    /// The list ids of every non-empty list, in no particular order (for drain, shrink and
    /// checks): walks the nodes reachable from `roots`.
    pub(crate) fn lists(&self, roots: &[u32; LEVELS]) -> Vec<ListId> {
        let mut out = Vec::new();
        let mut stack: Vec<u32> = roots.to_vec();
        while let Some(node) = stack.pop() {
            let n = &self.nodes[node as usize];
            let mut bits = n.occupied;
            while bits != 0 {
                let slot = bits.trailing_zeros() as usize;
                bits &= bits - 1;
                if n.children & (1 << slot) != 0 {
                    stack.push(n.slots[slot].head);
                } else {
                    out.push(list_id(node, slot));
                }
            }
        }
        out
    }

    /// The slot a list id names.
    pub(crate) fn slot(&self, list: ListId) -> Slot {
        let (node, slot) = split_id(list);
        self.nodes[node].slots[slot]
    }
}
