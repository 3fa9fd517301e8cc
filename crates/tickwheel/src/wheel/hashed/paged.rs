//! [`Paged`]: a growable array in fixed pages, so that growing it never copies what it holds.
//!
//! A `Vec` doubles by copying everything into a new allocation: at a million 24 B groups that
//! is one insert copying 24 MB. Here a push that needs room allocates one more page of
//! [`PAGE`] elements and copies nothing but the page table (16 B per page).
//!
//! # Invariants
//! - Elements `0..len` are live; pages beyond `len` are kept for reuse until `shrink_to_fit`.
//!
//! # Costs
//! | operation | cost |
//! |---|---|
//! | index | O(1): two loads |
//! | push | O(1); a new page every [`PAGE`] pushes, O(PAGE) to fill |
//! | pop | O(1), keeps the page |

use alloc::boxed::Box;
use alloc::vec::Vec;

/// Elements per page.
pub(super) const PAGE: usize = 1024;

/// A growable array of `Copy` elements in pages of [`PAGE`]; see the module docs.
pub(super) struct Paged<T> {
    pages: Vec<Box<[T]>>,
    len: usize,
    /// What a fresh page is filled with.
    fill: T,
}

impl<T: Copy> Paged<T> {
    pub(super) const fn new(fill: T) -> Self {
        Self {
            pages: Vec::new(),
            len: 0,
            fill,
        }
    }

    /// What a fresh page is filled with.
    pub(super) fn fill(&self) -> T {
        self.fill
    }

    #[inline]
    pub(super) fn len(&self) -> usize {
        self.len
    }

    #[inline]
    pub(super) fn push(&mut self, value: T) {
        if self.len == self.pages.len() * PAGE {
            self.pages
                .push(alloc::vec![self.fill; PAGE].into_boxed_slice());
        }
        self.len += 1;
        let last = self.len - 1;
        self[last] = value;
    }

    #[inline]
    pub(super) fn pop(&mut self) -> Option<T> {
        if self.len == 0 {
            return None;
        }
        self.len -= 1;
        Some(self[self.len])
    }

    /// Forgets every element, keeping the pages.
    pub(super) fn clear(&mut self) {
        self.len = 0;
    }

    /// Frees the pages beyond the live elements.
    pub(super) fn shrink_to_fit(&mut self) {
        self.pages.truncate(self.len.div_ceil(PAGE));
        self.pages.shrink_to_fit();
    }

    /// Bytes held, spare pages included.
    pub(super) fn allocated_bytes(&self) -> usize {
        self.pages.capacity() * core::mem::size_of::<Box<[T]>>()
            + self.pages.len() * PAGE * core::mem::size_of::<T>()
    }

    /// The live elements in order.
    pub(super) fn iter(&self) -> impl Iterator<Item = T> + '_ {
        (0..self.len).map(|i| self[i])
    }
}

impl<T> core::ops::Index<usize> for Paged<T> {
    type Output = T;

    #[inline]
    fn index(&self, i: usize) -> &T {
        &self.pages[i / PAGE][i % PAGE]
    }
}

impl<T> core::ops::IndexMut<usize> for Paged<T> {
    #[inline]
    fn index_mut(&mut self, i: usize) -> &mut T {
        &mut self.pages[i / PAGE][i % PAGE]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Elements survive growth across pages, pops keep pages for reuse, and a shrink frees
    /// only the pages past the live elements.
    #[test]
    fn grows_by_pages_and_keeps_its_elements() {
        let mut p = Paged::new(0u32);
        for i in 0..(3 * PAGE as u32 + 5) {
            p.push(i);
        }
        assert_eq!(p.len(), 3 * PAGE + 5);
        assert!(p.iter().enumerate().all(|(i, v)| v == i as u32));
        for _ in 0..2 * PAGE {
            p.pop();
        }
        assert_eq!(p.pages.len(), 4, "pops keep their pages");
        p.shrink_to_fit();
        assert_eq!(p.pages.len(), 2);
        assert_eq!(p[PAGE + 4], PAGE as u32 + 4);
        p[0] = 7;
        assert_eq!(p.pop(), Some(PAGE as u32 + 4));
        assert_eq!(p[0], 7);
    }
}
