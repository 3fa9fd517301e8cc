//! `std::collections::BinaryHeap` with lazy deletion: the asyncio / `heapq` recipe.
//!
//! Payloads live in a slot vector with a free list; each slot holds the sequence number of the
//! timer that owns it (0 when free). A heap entry `(deadline, seq, slot)` is live only while its
//! slot still holds its `seq`, so cancel is O(1) (clear the slot) and dead entries are skipped
//! at the top. When dead entries outnumber live ones the heap is rebuilt with `retain`
//! (asyncio compacts at > 50 % cancelled). Reset is cancel + insert.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use super::Adapter;

#[derive(Clone, Copy, Debug)]
struct Slot {
    /// The owning timer's sequence number; 0 when the slot is free.
    seq: u64,
    payload: u64,
}

/// A binary min-heap of `(deadline, seq, slot)` with lazy deletion.
#[derive(Debug)]
pub struct LazyBinaryHeap {
    heap: BinaryHeap<Reverse<(u64, u64, u32)>>,
    slots: Vec<Slot>,
    free: Vec<u32>,
    next_seq: u64,
    live: usize,
}

impl LazyBinaryHeap {
    fn release(&mut self, slot: u32) -> u64 {
        let s = &mut self.slots[slot as usize];
        s.seq = 0;
        self.free.push(slot);
        self.live -= 1;
        s.payload
    }

    /// Drops dead entries from the top; returns the live top.
    fn top(&mut self) -> Option<(u64, u64, u32)> {
        while let Some(&Reverse(entry)) = self.heap.peek() {
            if self.slots[entry.2 as usize].seq == entry.1 {
                return Some(entry);
            }
            self.heap.pop();
        }
        None
    }
}

impl Adapter for LazyBinaryHeap {
    type Key = (u32, u64);
    const NAME: &'static str = "binaryheap-lazy";
    const IS_TICKWHEEL: bool = false;
    const NATIVE_RESET: bool = false;

    fn with_capacity(capacity: usize) -> Self {
        Self {
            heap: BinaryHeap::with_capacity(capacity),
            slots: Vec::with_capacity(capacity),
            free: Vec::new(),
            next_seq: 1,
            live: 0,
        }
    }

    #[inline(always)]
    fn insert(&mut self, deadline: u64, payload: u64) -> (u32, u64) {
        let seq = self.next_seq;
        self.next_seq += 1;
        let slot = match self.free.pop() {
            Some(slot) => {
                self.slots[slot as usize] = Slot { seq, payload };
                slot
            }
            None => {
                self.slots.push(Slot { seq, payload });
                (self.slots.len() - 1) as u32
            }
        };
        self.live += 1;
        self.heap.push(Reverse((deadline, seq, slot)));
        (slot, seq)
    }

    #[inline(always)]
    fn cancel(&mut self, (slot, seq): (u32, u64)) -> bool {
        if self.slots.get(slot as usize).map(|s| s.seq) != Some(seq) {
            return false;
        }
        self.release(slot);
        if self.heap.len() > 64 && self.heap.len() > 2 * self.live {
            let slots = &self.slots;
            self.heap
                .retain(|Reverse((_, seq, slot))| slots[*slot as usize].seq == *seq);
        }
        true
    }

    #[inline(always)]
    fn reset(&mut self, key: (u32, u64), deadline: u64, payload: u64) -> (u32, u64) {
        let payload = if self.slots.get(key.0 as usize).map(|s| s.seq) == Some(key.1) {
            self.slots[key.0 as usize].payload
        } else {
            payload
        };
        self.cancel(key);
        self.insert(deadline, payload)
    }

    #[inline(always)]
    fn poll(&mut self, now: u64) -> Option<u64> {
        let (deadline, _, slot) = self.top()?;
        if deadline > now {
            return None;
        }
        self.heap.pop();
        Some(self.release(slot))
    }

    #[inline(always)]
    fn next_deadline(&mut self) -> Option<u64> {
        self.top().map(|(deadline, _, _)| deadline)
    }

    fn len(&self) -> usize {
        self.live
    }
}
