//! `Binary`: the lazy heap's array, a binary min-heap of 12-byte elements that counts its work.
//!
//! Hand-written rather than `std`'s `BinaryHeap` for two things that one does not offer: each
//! operation adds the elements it compared or moved to a work counter, and
//! [`remove`](Binary::remove) takes out the element at any position (the lazy heap's sweep
//! removes dead elements where it finds them, a few positions per call).
//!
//! # Invariants
//! - Heap order: no element's key is below its parent's.
//!
//! # Costs, in work units (one element compared or moved), with `h` the levels of the heap
//! | operation | work |
//! |---|---|
//! | `push` | at most `2h + 1`: one compare and one move a level up, one write |
//! | `pop` | at most `4h + 2`: the hole goes to the bottom (one compare and one move a level), the last element sifts back up (the same) |
//! | `remove` at a position | at most `3h + 3`: the last element takes its place and sifts up (two a level) or down (three a level: two compares, one move) |
//! | `peek`, `at` | 0 |
//! | `from_vec` | O(n) heapify; not counted (used by the calls that state no bound) |

use alloc::vec::Vec;

/// One element: `key = offset << 32 | seq` and the slab index, packed into 12 bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(C, packed(4))]
pub(super) struct Item {
    pub(super) key: u64,
    pub(super) index: u32,
}

impl Item {
    #[inline]
    pub(super) fn new(offset: u32, seq: u32, index: u32) -> Self {
        Self {
            key: u64::from(offset) << 32 | u64::from(seq),
            index,
        }
    }

    /// The deadline's offset from the heap's base.
    #[inline]
    pub(super) fn offset(self) -> u64 {
        self.key >> 32
    }

    #[inline]
    pub(super) fn seq(self) -> u32 {
        self.key as u32
    }
}

/// A binary min-heap of [`Item`]s by `key`.
#[derive(Debug, Default)]
pub(super) struct Binary {
    items: Vec<Item>,
}

impl Binary {
    pub(super) fn with_capacity(capacity: usize) -> Self {
        Self {
            items: Vec::with_capacity(capacity),
        }
    }

    /// A heap of `items`, heapified bottom-up in O(n).
    pub(super) fn from_vec(items: Vec<Item>) -> Self {
        let mut heap = Self { items };
        let mut ignored = 0;
        for pos in (0..heap.items.len() / 2).rev() {
            heap.sift_down(pos, heap.items.len(), &mut ignored);
        }
        heap
    }

    #[inline]
    pub(super) fn len(&self) -> usize {
        self.items.len()
    }

    #[inline]
    pub(super) fn capacity(&self) -> usize {
        self.items.capacity()
    }

    #[inline]
    pub(super) fn as_slice(&self) -> &[Item] {
        &self.items
    }

    /// The elements, in array order.
    pub(super) fn into_vec(self) -> Vec<Item> {
        self.items
    }

    #[inline]
    pub(super) fn peek(&self) -> Option<Item> {
        self.items.first().copied()
    }

    #[inline]
    pub(super) fn push(&mut self, item: Item, work: &mut u64) {
        self.items.push(item);
        self.sift_up(self.items.len() - 1, work);
    }

    /// Takes the top out. The hole runs down to the bottom along the smaller children and the
    /// last element sifts up from there, which compares less than sifting it down from the top
    /// (Floyd's method, as `std`'s `BinaryHeap::pop`).
    #[inline]
    pub(super) fn pop(&mut self, work: &mut u64) -> Option<Item> {
        let last = self.items.pop()?;
        *work += 1;
        let Some(&top) = self.items.first() else {
            return Some(last);
        };
        let len = self.items.len();
        let mut pos = 0;
        let mut child = 1;
        while child + 1 < len {
            *work += 2;
            if self.items[child + 1].key < self.items[child].key {
                child += 1;
            }
            self.items[pos] = self.items[child];
            pos = child;
            child = 2 * pos + 1;
        }
        if child < len {
            *work += 1;
            self.items[pos] = self.items[child];
            pos = child;
        }
        while pos > 0 {
            let parent = (pos - 1) / 2;
            *work += 1;
            if self.items[parent].key <= last.key {
                break;
            }
            self.items[pos] = self.items[parent];
            *work += 1;
            pos = parent;
        }
        self.items[pos] = last;
        *work += 1;
        Some(top)
    }

    /// The element at array position `pos`.
    #[inline]
    pub(super) fn at(&self, pos: usize) -> Item {
        self.items[pos]
    }

    /// Takes the element at `pos` out: the last element takes its place and sifts. Returns
    /// whether it sifted up, which moves an element from before `pos` into `pos`.
    pub(super) fn remove(&mut self, pos: usize, work: &mut u64) -> bool {
        let last = self.items.pop().expect("remove from a non-empty heap");
        *work += 1;
        if pos >= self.items.len() {
            return false;
        }
        self.items[pos] = last;
        *work += 1;
        if pos > 0 && last.key < self.items[(pos - 1) / 2].key {
            self.sift_up(pos, work);
            true
        } else {
            self.sift_down(pos, self.items.len(), work);
            false
        }
    }

    fn sift_up(&mut self, mut pos: usize, work: &mut u64) {
        let item = self.items[pos];
        while pos > 0 {
            let parent = (pos - 1) / 2;
            *work += 1;
            if self.items[parent].key <= item.key {
                break;
            }
            self.items[pos] = self.items[parent];
            *work += 1;
            pos = parent;
        }
        self.items[pos] = item;
        *work += 1;
    }

    fn sift_down(&mut self, mut pos: usize, len: usize, work: &mut u64) {
        let item = self.items[pos];
        loop {
            let mut child = 2 * pos + 1;
            if child >= len {
                break;
            }
            if child + 1 < len && self.items[child + 1].key < self.items[child].key {
                child += 1;
            }
            *work += 2;
            if item.key <= self.items[child].key {
                break;
            }
            self.items[pos] = self.items[child];
            *work += 1;
            pos = child;
        }
        self.items[pos] = item;
        *work += 1;
    }

    /// Asserts heap order.
    pub(super) fn check(&self) {
        for pos in 1..self.items.len() {
            assert!(
                self.items[(pos - 1) / 2].key <= self.items[pos].key,
                "element {pos} orders before its parent"
            );
        }
    }
}

/// The levels of a binary heap of `n` elements: a sift passes at most this many.
#[inline]
pub(super) fn levels(n: usize) -> u64 {
    u64::from(usize::BITS - n.leading_zeros())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_rng::xorshift;

    #[test]
    fn elements_are_12_bytes() {
        assert_eq!(core::mem::size_of::<Item>(), 12);
    }

    /// Random pushes, pops and removals anywhere against a sorted model, with each
    /// operation's work under its stated bound.
    #[test]
    fn pops_in_key_order_within_the_work_bound() {
        let mut rng = xorshift(7);
        let mut heap = Binary::default();
        let mut model: Vec<u64> = Vec::new();
        for step in 0..20_000u32 {
            let h = levels(heap.len() + 1);
            let mut work = 0;
            match rng() % 8 {
                0..=3 => {
                    let key = rng() % 1_000;
                    heap.push(Item { key, index: step }, &mut work);
                    model.push(key);
                    assert!(work <= 2 * h + 1, "push did {work} with {h} levels");
                }
                4..=6 => {
                    let got = heap.pop(&mut work).map(|i| i.key);
                    model.sort_unstable();
                    let want = (!model.is_empty()).then(|| model.remove(0));
                    assert_eq!(got, want);
                    assert!(work <= 4 * h + 2, "pop did {work} with {h} levels");
                }
                _ => {
                    if heap.len() > 0 {
                        let pos = (rng() % heap.len() as u64) as usize;
                        let key = heap.at(pos).key;
                        heap.remove(pos, &mut work);
                        let at = model.iter().position(|&k| k == key).unwrap();
                        model.swap_remove(at);
                        assert!(work <= 3 * h + 3, "remove did {work} with {h} levels");
                    }
                }
            }
            heap.check();
        }
        let keys: Vec<u64> = heap.into_vec().iter().map(|i| i.key).collect();
        let mut rebuilt =
            Binary::from_vec(keys.iter().map(|&key| Item { key, index: 0 }).collect());
        rebuilt.check();
        model.sort_unstable();
        let mut work = 0;
        let drained: Vec<u64> =
            core::iter::from_fn(|| rebuilt.pop(&mut work).map(|i| i.key)).collect();
        assert_eq!(drained, model);
    }
}
