//! The nodes: 64-slot arrays of intrusive FIFO lists, and what happens when a slot gets crowded.
//!
//! A node covers a range of `64^(level + 1)` ticks in 64 slots of `64^level` ticks each. Each
//! slot is either a list of timers (head, tail and length in the slot) or, once crowded, a
//! *child* node over that slot's range, one level finer. The wheel's levels are nodes too
//! ([`Nodes::root`]).
//!
//! A list's links are not in the slab entries but in `links`, an array beside the slab with
//! one [`Link`] per slab index. Linking a timer in or out then writes its neighbours' links
//! with plain stores, which the CPU retires without waiting for their cache lines; a store
//! into a slab entry would first read it (to check the slot is occupied), and at a million
//! timers each such read is a cache miss that stalls the call.
//!
//! # Invariants
//! - A list of a node of level 1 or higher holds at most [`MAX_LIST`] timers. Pushing one
//!   more *splits* it: a child node of the level below takes its timers, in list order, and may
//!   split in turn. A level-0 list holds one tick, any number of timers.
//! - Every entry's `list` names the list it is in; lists keep the order of their pushes;
//!   `links` has an element for every slab index.
//! - Bit `s` of `occupied` is set iff slot `s` holds a non-empty list or a child (whose
//!   `parent` names the slot).
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
pub(crate) fn list_id(node: u32, slot: usize) -> ListId {
    node << SLOT_BITS | slot as u32
}

#[inline(always)]
fn split_id(list: ListId) -> (usize, usize) {
    ((list >> SLOT_BITS) as usize, (list as usize) & (SLOTS - 1))
}

/// A slot: a list (`head`, `tail`, `len`), or a child (`len` is [`CHILD`], `head` the
/// child's index), so a descent reads only the slot's own cache line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Slot {
    pub(crate) head: u32,
    pub(crate) tail: u32,
    pub(crate) len: u32,
}

/// The `len` of a slot that holds a child.
pub(crate) const CHILD: u32 = u32::MAX;

impl Slot {
    const EMPTY: Slot = Slot {
        head: NIL,
        tail: NIL,
        len: 0,
    };

    fn child(node: u32) -> Slot {
        Slot {
            head: node,
            tail: NIL,
            len: CHILD,
        }
    }

    /// Whether the slot holds a child node.
    #[inline(always)]
    pub(crate) fn is_child(&self) -> bool {
        self.len == CHILD
    }
}

/// 64 slots over `64^(level + 1)` ticks from `base`.
pub(crate) struct Node {
    pub(crate) occupied: u64,
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
            level: level as u32,
            parent,
            base,
            slots: [Slot::EMPTY; SLOTS],
        }
    }
}

/// A timer's neighbours in its list (`NIL` at the ends).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Link {
    pub(crate) prev: u32,
    pub(crate) next: u32,
}

impl Link {
    const NONE: Link = Link {
        prev: NIL,
        next: NIL,
    };
}

/// Every node, by index, and the lists' links. Boxed (against clippy's `vec_box`) so that growing the arena moves
/// 8-byte pointers, not 800-byte nodes: no call copies the nodes.
#[allow(clippy::vec_box)]
pub(crate) struct Nodes {
    nodes: Vec<Box<Node>>,
    free: Vec<u32>,
    /// The list links of slab index `i`.
    links: Vec<Link>,
}

impl Nodes {
    /// No nodes; the links of `timers` timers, made now so that no insert makes them.
    pub(crate) fn new(timers: usize) -> Self {
        Self {
            nodes: Vec::new(),
            free: Vec::new(),
            links: alloc::vec![Link::NONE; timers],
        }
    }

    /// Makes room for the links of slab indices below `slots`: fills the links' whole
    /// allocation, so that a growing slab resizes them once per doubling, not once per insert.
    #[inline(always)]
    pub(crate) fn cover(&mut self, slots: usize) {
        if self.links.len() < slots {
            self.grow_links(slots);
        }
    }

    #[cold]
    fn grow_links(&mut self, slots: usize) {
        self.links.reserve(slots - self.links.len());
        self.links.resize(self.links.capacity(), Link::NONE);
    }

    /// Keeps the links of slab indices below `slots` only, and their memory.
    pub(crate) fn shrink_links(&mut self, slots: usize) {
        self.links.truncate(slots);
        self.links.shrink_to_fit();
    }

    /// The timer after `index` in its list, or `NIL`.
    #[inline(always)]
    pub(crate) fn next(&self, index: u32) -> u32 {
        self.links[index as usize].next
    }

    /// The links of timer `index`.
    pub(crate) fn link(&self, index: u32) -> Link {
        self.links[index as usize]
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
            + self.links.capacity() * core::mem::size_of::<Link>()
    }

    /// The list a timer due at `deadline` goes to, from slot `slot_for(deadline, level)` of
    /// root `node` of `level`, through the children on the way; its level, and the nodes
    /// descended.
    #[inline(always)]
    pub(crate) fn find(&self, mut node: u32, mut level: usize, deadline: Tick) -> (ListId, usize) {
        loop {
            let slot = slot_for(deadline, level);
            let s = &self.nodes[node as usize].slots[slot];
            if !s.is_child() {
                return (list_id(node, slot), level);
            }
            node = s.head;
            level -= 1;
        }
    }

    /// Appends timer `index`, due at `deadline`, to its list under root `node` of `level`
    /// (splitting a list that gets crowded); returns the work done.
    #[inline(always)]
    pub(crate) fn push<T>(
        &mut self,
        slab: &mut Slab<Entry<T>>,
        node: u32,
        level: usize,
        deadline: Tick,
        index: u32,
    ) -> u64 {
        let (list, at) = self.find(node, level, deadline);
        let work = (level - at) as u64;
        let len = self.append(slab, list, index);
        if len > MAX_LIST && at > 0 {
            return work + self.split(slab, list, at);
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
            self.links[tail as usize].next = index;
        }
        self.links[index as usize] = Link {
            prev: tail,
            next: NIL,
        };
        slab.at_mut(index).list = list;
        len
    }

    /// Makes `list` (of level 1 or higher, crowded, or due and of mixed deadlines) a child
    /// node one level finer and moves its timers there, in order; a child slot that gets
    /// crowded splits in turn. Returns the timers moved.
    pub(crate) fn split<T>(
        &mut self,
        slab: &mut Slab<Entry<T>>,
        list: ListId,
        level: usize,
    ) -> u64 {
        let (node, slot) = split_id(list);
        let Slot { head, .. } = self.nodes[node].slots[slot];
        let base = slot_floor(slab.at(head).deadline, level);
        let child = self.alloc(level - 1, list, base);
        self.nodes[node].slots[slot] = Slot::child(child);
        let mut work = 0;
        let mut crowded = None;
        let mut cur = head;
        while cur != NIL {
            let next = self.links[cur as usize].next;
            let deadline = slab.at(cur).deadline;
            let to = list_id(child, slot_for(deadline, level - 1));
            if self.append(slab, to, cur) > MAX_LIST {
                crowded = Some(to);
            }
            work += 1;
            cur = next;
        }
        match crowded {
            Some(to) if level > 1 => work + self.split(slab, to, level - 1),
            _ => work,
        }
    }

    /// Unlinks timer `index` from `list`, the list it is in, releasing nodes left empty;
    /// returns the work.
    #[inline(always)]
    pub(crate) fn unlink(&mut self, index: u32, list: ListId) -> u64 {
        let Link { prev, next } = self.links[index as usize];
        if prev != NIL {
            self.links[prev as usize].next = next;
        }
        if next != NIL {
            self.links[next as usize].prev = prev;
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
    pub(crate) fn pop_front(&mut self, list: ListId) -> (u32, u64) {
        let (node, slot) = split_id(list);
        let head = self.nodes[node].slots[slot].head;
        (head, self.unlink(head, list))
    }

    /// Takes a whole list out of its slot, leaving it empty (a root's slot: nothing is
    /// released); returns its head.
    pub(crate) fn take_list(&mut self, list: ListId) -> u32 {
        let (node, slot) = split_id(list);
        let n = &mut self.nodes[node];
        debug_assert!(!n.slots[slot].is_child());
        let head = n.slots[slot].head;
        n.slots[slot] = Slot::EMPTY;
        n.occupied &= !(1 << slot);
        head
    }

    /// Takes the child out of slot `slot` of root `node` and makes it a root; returns it.
    pub(crate) fn take_child(&mut self, node: u32, slot: usize) -> u32 {
        let n = &mut self.nodes[node as usize];
        debug_assert!(n.slots[slot].is_child());
        let child = n.slots[slot].head;
        n.slots[slot] = Slot::EMPTY;
        n.occupied &= !(1 << slot);
        self.nodes[child as usize].parent = NIL;
        child
    }

    /// A list just became empty: clears its bit and releases every node this leaves empty,
    /// up to a root. Returns the nodes released.
    fn emptied(&mut self, mut list: ListId) -> u64 {
        let mut work = 0;
        loop {
            let (node, slot) = split_id(list);
            let n = &mut self.nodes[node];
            n.occupied &= !(1 << slot);
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
                if n.slots[slot].is_child() {
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
