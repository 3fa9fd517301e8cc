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
//! | `push` | at most `2h`: a compare and a move a level up (at most `h - 1` levels), the stopping compare, one write |
//! | `pop` | at most `4h + 2`: the hole goes down to the bottom along the smaller children (a compare and a move a level), the last element sifts up from there (the same) |
//! | `remove` at a position | at most `3h + 2`: the last element takes its place and sifts up (a compare and a move a level) or down (two compares and a move) |
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
        let mut items = items;
        for pos in (0..items.len() / 2).rev() {
            sift_down(&mut items, pos);
        }
        Self { items }
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
        let pos = self.items.len();
        self.items.push(item);
        *work += sift_up(&mut self.items, pos).1;
    }

    /// Takes the top out; the last element fills its place.
    #[inline]
    pub(super) fn pop(&mut self, work: &mut u64) -> Option<Item> {
        let last = self.items.pop()?;
        let items = &mut self.items[..];
        let Some(&top) = items.first() else {
            *work += 1;
            return Some(last);
        };
        // Floyd's method, as `std`'s `BinaryHeap::pop`: the hole runs down to the bottom along
        // the smaller children (a compare and a move a level), then the last element, one of
        // the largest, sifts up from there, which compares less than sifting it down.
        let end = items.len() - 1;
        let (mut pos, mut child) = (0, 1);
        while child < end {
            child += usize::from(items[child + 1].key < items[child].key);
            items[pos] = items[child];
            pos = child;
            child = 2 * pos + 1;
        }
        if child == end {
            items[pos] = items[child];
            pos = child;
        }
        items[pos] = last;
        *work += 1 + 2 * depth(pos) + sift_up(items, pos).1;
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
        if pos > 0 && last.key < self.items[(pos - 1) / 2].key {
            *work += 1 + sift_up(&mut self.items, pos).1;
            true
        } else {
            *work += 1 + sift_down(&mut self.items, pos);
            false
        }
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

/// The depth of array position `pos` (the root's is 0).
#[inline]
fn depth(pos: usize) -> u64 {
    u64::from(usize::BITS - 1 - (pos + 1).leading_zeros())
}

/// Sifts `items[pos]` up to its place; returns where it landed and the work: a compare and a
/// move a level it rises, the compare that stops it, the final write.
#[inline]
fn sift_up(items: &mut [Item], mut pos: usize) -> (usize, u64) {
    let item = items[pos];
    let mut levels = 0;
    while pos > 0 {
        let parent = (pos - 1) / 2;
        let above = items[parent];
        if above.key <= item.key {
            break;
        }
        items[pos] = above;
        pos = parent;
        levels += 1;
    }
    items[pos] = item;
    (pos, 2 * levels + 2)
}

/// Sifts `items[pos]` down to its place; returns the work: two compares and a move a level it
/// sinks, the compares that stop it, the final write.
fn sift_down(items: &mut [Item], mut pos: usize) -> u64 {
    let item = items[pos];
    let len = items.len();
    let mut levels = 0;
    loop {
        let mut child = 2 * pos + 1;
        if child >= len {
            break;
        }
        if child + 1 < len && items[child + 1].key < items[child].key {
            child += 1;
        }
        if item.key <= items[child].key {
            break;
        }
        items[pos] = items[child];
        pos = child;
        levels += 1;
    }
    items[pos] = item;
    3 * levels + 3
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
                    assert!(work <= 2 * h, "push did {work} with {h} levels");
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
                        assert!(work <= 3 * h + 2, "remove did {work} with {h} levels");
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
