//! Which pages of a slab hold a vacant slot: a bitset over pages with a summary level above
//! every 64 bits, so that the lowest such page at or after any page is found in one word per
//! level.
//!
//! The slab hands out the lowest page's vacant slots first, so after a burst the live timers
//! gather at low indices and the vacant tail can be released (see [`Slab`](super::Slab)).
//!
//! # Invariants
//! - Bit `i` of level `k + 1` is set iff word `i` of level `k` is non-zero.
//! - The top level is one word; level 0 has a bit for every page.
//!
//! # Costs
//! | operation | cost |
//! |---|---|
//! | set, clear | O(1) usually; O(levels) when a word turns empty or non-empty |
//! | lowest at or after `i` | O(levels): at most two words per level (3 levels up to 262,144 pages) |
//! | memory | one bit per page, plus 1/64 of that per level above |

use alloc::vec;
use alloc::vec::Vec;

/// A bitset over pages, finding the lowest set bit at or after a page.
#[derive(Debug, Clone)]
pub(crate) struct PageBits {
    /// `levels[0]` has a bit per page; each level above has a bit per word of the one below.
    levels: Vec<Vec<u64>>,
    /// Pages covered.
    pages: usize,
}

impl PageBits {
    pub(crate) fn new() -> Self {
        Self {
            levels: vec![Vec::new()],
            pages: 0,
        }
    }

    /// Pages covered.
    pub(crate) fn pages(&self) -> usize {
        self.pages
    }

    /// Covers one more page, clear.
    pub(crate) fn push_page(&mut self) {
        self.pages += 1;
        let mut bits = self.pages;
        let mut level = 0;
        loop {
            let words = bits.div_ceil(64);
            if level == self.levels.len() {
                // A new level above: its bits summarise the words of the one below.
                let below = &self.levels[level - 1];
                let mut words_here = vec![0u64; words];
                for (w, &word) in below.iter().enumerate() {
                    if word != 0 {
                        words_here[w / 64] |= 1 << (w % 64);
                    }
                }
                self.levels.push(words_here);
            } else if self.levels[level].len() < words {
                self.levels[level].push(0);
            }
            if words <= 1 {
                break;
            }
            bits = words;
            level += 1;
        }
    }

    /// Whether page `page` is set.
    #[inline]
    pub(crate) fn get(&self, page: usize) -> bool {
        self.levels[0][page / 64] & (1 << (page % 64)) != 0
    }

    /// Sets page `page`.
    #[inline(never)]
    pub(crate) fn set(&mut self, page: usize) {
        let mut i = page;
        for level in &mut self.levels {
            let word = &mut level[i / 64];
            let was_empty = *word == 0;
            *word |= 1 << (i % 64);
            if !was_empty {
                return;
            }
            i /= 64;
        }
    }

    /// Clears page `page`.
    #[inline]
    pub(crate) fn clear(&mut self, page: usize) {
        let mut i = page;
        for level in &mut self.levels {
            let word = &mut level[i / 64];
            *word &= !(1 << (i % 64));
            if *word != 0 {
                return;
            }
            i /= 64;
        }
    }

    /// The lowest set page at or after `from`, if any.
    #[inline]
    pub(crate) fn next_from(&self, from: usize) -> Option<usize> {
        let mut i = from;
        let mut level = 0;
        // Up: find the first level whose word at or after `i` has a set bit.
        loop {
            let words = &self.levels[level];
            let w = i / 64;
            let word = *words.get(w)? & (!0u64 << (i % 64));
            if word != 0 {
                i = w * 64 + word.trailing_zeros() as usize;
                break;
            }
            if level + 1 == self.levels.len() {
                return None;
            }
            level += 1;
            i = w + 1;
        }
        // Down: each set bit names a non-empty word below.
        while level > 0 {
            level -= 1;
            let word = self.levels[level][i];
            debug_assert_ne!(word, 0, "a summary bit names an empty word");
            i = i * 64 + word.trailing_zeros() as usize;
        }
        Some(i)
    }

    /// Bits for the first `pages` pages, set where `is_set` says (for a truncated slab).
    pub(crate) fn rebuild(pages: usize, is_set: impl Fn(usize) -> bool) -> Self {
        let mut bits = Self::new();
        for page in 0..pages {
            bits.push_page();
            if is_set(page) {
                bits.set(page);
            }
        }
        for level in &mut bits.levels {
            level.shrink_to_fit();
        }
        bits
    }

    /// Bytes of heap memory held.
    pub(crate) fn allocated_bytes(&self) -> usize {
        self.levels
            .iter()
            .map(|l| l.capacity() * core::mem::size_of::<u64>())
            .sum::<usize>()
            + self.levels.capacity() * core::mem::size_of::<Vec<u64>>()
    }

    /// Asserts the invariants.
    pub(crate) fn check(&self) {
        assert_eq!(self.levels[0].len(), self.pages.div_ceil(64));
        for k in 0..self.levels.len() - 1 {
            let (below, above) = (&self.levels[k], &self.levels[k + 1]);
            assert_eq!(above.len(), below.len().div_ceil(64), "summary level size");
            for (w, &word) in below.iter().enumerate() {
                let bit = above[w / 64] & (1 << (w % 64)) != 0;
                assert_eq!(
                    bit,
                    word != 0,
                    "summary bit {w} of level {} is wrong",
                    k + 1
                );
            }
        }
        assert!(self.levels.last().is_some_and(|top| top.len() <= 1));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        /// Against a plain `Vec<bool>` over up to 300,000 pages (three levels).
        #[test]
        fn agrees_with_a_vector_of_flags(
            pages in 1usize..300_000,
            ops in proptest::collection::vec((any::<bool>(), any::<u32>()), 0..200),
        ) {
            let mut bits = PageBits::new();
            for _ in 0..pages {
                bits.push_page();
            }
            let mut flags = vec![false; pages];
            for (set, at) in ops {
                let page = at as usize % pages;
                if set { bits.set(page) } else { bits.clear(page) }
                flags[page] = set;
                let from = (at as usize / 7) % pages;
                let want = (from..pages).find(|&p| flags[p]);
                prop_assert_eq!(bits.next_from(from), want);
                prop_assert_eq!(bits.get(page), set);
            }
            bits.check();
            let rebuilt = PageBits::rebuild(pages, |p| flags[p]);
            rebuilt.check();
            prop_assert_eq!(rebuilt.next_from(0), flags.iter().position(|&f| f));
        }
    }

    #[test]
    fn growing_keeps_set_bits_summarised() {
        let mut bits = PageBits::new();
        for page in 0..5000 {
            bits.push_page();
            if page % 97 == 0 {
                bits.set(page);
            }
            bits.check();
        }
        assert_eq!(bits.next_from(1), Some(97));
        assert_eq!(bits.next_from(4851), Some(4947));
        assert_eq!(bits.next_from(4948), None);
        assert_eq!(bits.next_from(9999), None);
    }
}
