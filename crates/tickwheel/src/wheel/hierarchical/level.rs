//! One level of the hierarchical wheel, and the arithmetic that picks a level and a slot.
//!
//! Level `l` has 64 slots of `64^l` ticks each, so it spans `64^(l+1)` ticks; eleven levels
//! cover all 64 bits of a tick, so every deadline after the cursor has a slot and no timer waits
//! outside the levels. A timer due at `deadline` while the wheel's cursor is at `elapsed` goes
//! to the level of the highest 6-bit group in which the two differ: level 0 if they share
//! everything above the low 6 bits, and so on.
//!
//! | level | slot width | level span | at 1 ms per tick |
//! |---|---|---|---|
//! | 0 | 1 | 64 | 64 ms |
//! | 1 | 64 | 4 096 | ~4 s |
//! | 2 | 4 096 | 262 144 | ~4.4 min |
//! | 3 | 262 144 | 16 777 216 | ~4.7 h |
//! | 4 | 2^24 | 2^30 | ~12.4 days |
//! | 5 | 2^30 | 2^36 | ~2.2 years |
//! | 6 to 10 | 2^36 to 2^60 | 2^42 to 2^64 | ~139 years and more |
//!
//! The top level's slots 16 to 63 lie past `u64::MAX` and stay empty.
//!
//! Because a level-`l` timer agrees with the cursor on every group above `l`, and (for `l > 0`)
//! its group `l` is above the cursor's, its slot is strictly after the cursor's slot on that
//! level: a level never wraps, and the first set bit of its occupancy word is its earliest slot.
//! A level's timers are all earlier than the next level's.
//!
//! Levels below [`FAR`] hold timers that agree with the cursor from bit 30 up, so a 32-bit
//! `low` rebuilds their deadlines; from [`FAR`] up, a cascade reads each deadline from the slab.

use alloc::boxed::Box;

use super::bucket::{Bucket, Chunks, Compacted, Ref};
use crate::slab::Slab;
use crate::stamped::Stamped;
use crate::Tick;

/// Number of levels: the fewest 6-bit groups that cover a `u64`.
pub(crate) const LEVELS: usize = 11;
/// The first level whose timers may differ from the cursor at bit 32 or above.
pub(crate) const FAR: usize = 5;
/// Slots per level; 64 so that one `u64` is a level's occupancy bitmap.
pub(crate) const SLOTS: usize = 64;
/// log2 of [`SLOTS`].
const SLOT_BITS: u32 = 6;

/// The level for a timer due at `deadline > elapsed`: below [`LEVELS`] for any two ticks.
#[inline]
pub(crate) fn level_for(elapsed: Tick, deadline: Tick) -> usize {
    // A chain of tests, lowest level first, rather than a bit scan and a division: the branch
    // predictor learns where a workload's timers land (request and idle timeouts keep to one
    // or two levels), and the slot's address then waits for no arithmetic. Without `lzcnt` in
    // the target, `leading_zeros` is `bsr`, several cycles on AMD's cores, and the division
    // adds a multiply; the `insert` workload measured about 15 % faster this way
    // (`docs/bench-profile.md`). Deadlines in the cursor's own 64-tick block are on level 0.
    let differ = elapsed ^ deadline;
    if differ >> 12 == 0 {
        usize::from(differ >> 6 != 0)
    } else if differ >> 18 == 0 {
        2
    } else if differ >> 24 == 0 {
        3
    } else if differ >> 30 == 0 {
        4
    } else if differ >> 36 == 0 {
        5
    } else {
        // Levels 6 to 10 (more than 2^36 ticks apart): the group, as above.
        (63 - differ.leading_zeros() as usize) / SLOT_BITS as usize
    }
}

/// Whether a timer due at `deadline` belongs in the levels (not the ready bucket, not the
/// overdue store): after the cursor.
#[inline(always)]
pub(crate) fn in_levels(elapsed: Tick, deadline: Tick) -> bool {
    deadline > elapsed
}

/// The slot of `deadline` on `level`.
#[inline]
pub(crate) fn slot_for(deadline: Tick, level: usize) -> usize {
    ((deadline >> (SLOT_BITS * level as u32)) & (SLOTS as u64 - 1)) as usize
}

/// The first tick of `slot` on `level`, in the level span that contains `elapsed`.
#[inline]
pub(crate) fn slot_start(elapsed: Tick, level: usize, slot: usize) -> Tick {
    // The level's span has `6 * (level + 1)` bits, all 64 of them on the top level.
    let span_bits = SLOT_BITS * (level as u32 + 1);
    let within = u64::MAX >> 64u32.saturating_sub(span_bits);
    (elapsed & !within) + ((slot as u64) << (SLOT_BITS * level as u32))
}

/// All eleven levels: 64 slot buckets per level and one occupancy word per level. The buckets'
/// chunks live in the wheel's [`Chunks`] arena, passed in.
///
/// The occupancy words sit together in two cache lines, apart from the buckets, so finding
/// the earliest slot reads them however the buckets are spread.
pub(crate) struct Levels {
    /// Bit `s` of `occupied[l]` is set iff `slots[l][s]` holds a reference (live or dead), or
    /// (level 0) the wheel's overtaken store holds one due in that slot.
    occupied: [u64; LEVELS],
    /// Bit `s` of `moved[l]` is set if `slots[l][s]` may be the home of a timer moved in place
    /// (see [`moved`](super::moved)): its cascade must read the entries.
    moved: [u64; LEVELS],
    slots: Box<[[Bucket; SLOTS]; LEVELS]>,
}

/// What a slot's marks said when it was taken.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Marks {
    /// It may be the home of a timer moved in place.
    pub(crate) moved: bool,
}

impl Levels {
    pub(crate) fn new() -> Self {
        Self {
            occupied: [0; LEVELS],
            moved: [0; LEVELS],
            slots: Box::new([[Bucket::EMPTY; SLOTS]; LEVELS]),
        }
    }

    /// Marks a slot as the home of a timer moved in place.
    #[inline(always)]
    pub(crate) fn mark_moved(&mut self, level: usize, slot: usize) {
        self.moved[level] |= 1 << slot;
    }

    /// A slot's marks.
    pub(crate) fn marks(&self, level: usize, slot: usize) -> Marks {
        Marks {
            moved: self.moved[level] & (1 << slot) != 0,
        }
    }

    /// A slot's bucket.
    #[inline(always)]
    pub(crate) fn bucket(&self, level: usize, slot: usize) -> &Bucket {
        &self.slots[level][slot]
    }

    #[inline(always)]
    pub(crate) fn push(&mut self, chunks: &mut Chunks, level: usize, slot: usize, r: Ref) {
        chunks.push(&mut self.slots[level][slot], r);
        self.mark_occupied(level, slot);
    }

    /// [`push`](Self::push) into a slot whose tail chunk has room
    /// ([`Chunks::push_to_tail`]). Such a slot holds references already, so its occupancy bit
    /// is set: an empty bucket has no chunk, and its first push takes the other way.
    #[inline(always)]
    pub(crate) fn push_to_tail(&mut self, chunks: &mut Chunks, level: usize, slot: usize, r: Ref) {
        debug_assert!(self.occupied[level] & (1 << slot) != 0);
        chunks.push_to_tail(&mut self.slots[level][slot], r);
    }

    /// Sets a slot's occupancy bit (a push does it too): for a level-0 slot that the
    /// overtaken store holds a timer for.
    #[inline(always)]
    pub(crate) fn mark_occupied(&mut self, level: usize, slot: usize) {
        // Usually set already. Testing first leaves the word unwritten, so inserts to one
        // level do not chain through it: an unconditional OR measured 5 % slower.
        if self.occupied[level] & (1 << slot) == 0 {
            self.occupied[level] |= 1 << slot;
        }
    }

    /// References in every slot, live or dead: the occupied slots' lengths.
    pub(crate) fn refs(&self) -> usize {
        let mut n = 0;
        for (level, slots) in self.slots.iter().enumerate() {
            let mut word = self.occupied[level];
            while word != 0 {
                n += slots[word.trailing_zeros() as usize].len();
                word &= word - 1;
            }
        }
        n
    }

    /// The occupied slots holding more than `min_len` references, one word per level.
    pub(crate) fn slots_longer_than(&self, min_len: usize) -> [u64; LEVELS] {
        let mut out = [0; LEVELS];
        for (level, slots) in self.slots.iter().enumerate() {
            let mut word = self.occupied[level];
            while word != 0 {
                let slot = word.trailing_zeros() as usize;
                word &= word - 1;
                if slots[slot].len() > min_len {
                    out[level] |= 1 << slot;
                }
            }
        }
        out
    }

    /// [`Chunks::compact_some`] on `slot` of `level`. A level-0 slot keeps a reference
    /// rather than emptying (its occupancy also follows the overtaken store); a coarser one
    /// that empties loses its marks, unless it is `staged`.
    pub(crate) fn compact_some<T>(
        &mut self,
        chunks: &mut Chunks,
        slab: &Slab<Stamped<T>>,
        (level, slot): (usize, usize),
        after: u32,
        max: usize,
        staged: bool,
    ) -> Compacted {
        let bucket = &mut self.slots[level][slot];
        let done = chunks.compact_some(bucket, slab, after, max, level == 0);
        if bucket.is_empty() && !staged {
            self.occupied[level] &= !(1 << slot);
            self.moved[level] &= !(1 << slot);
        }
        done
    }

    /// The occupancy words: bit `s` of word `l` for slot `s` of level `l`.
    pub(crate) fn occupied(&self) -> [u64; LEVELS] {
        self.occupied
    }

    /// Empties a slot and returns its bucket, which keeps the chunks, with the slot's marks
    /// (which it clears).
    #[inline]
    pub(crate) fn take(&mut self, level: usize, slot: usize) -> (Bucket, Marks) {
        let marks = self.marks(level, slot);
        let bit = !(1 << slot);
        self.occupied[level] &= bit;
        self.moved[level] &= bit;
        let bucket = core::mem::replace(&mut self.slots[level][slot], Bucket::EMPTY);
        (bucket, marks)
    }

    /// Takes the first chunk's worth of a slot's references into `out` and returns how many,
    /// leaving its bit and marks as they are (a staged slot stays occupied while empty).
    pub(crate) fn take_chunk(
        &mut self,
        chunks: &mut Chunks,
        level: usize,
        slot: usize,
        out: &mut [Ref; super::bucket::CHUNK],
    ) -> usize {
        chunks.take_chunk(&mut self.slots[level][slot], out)
    }

    /// Swaps the levels below `level` with `other`'s.
    pub(crate) fn swap_below(&mut self, other: &mut Levels, level: usize) {
        self.occupied[..level].swap_with_slice(&mut other.occupied[..level]);
        self.moved[..level].swap_with_slice(&mut other.moved[..level]);
        self.slots[..level].swap_with_slice(&mut other.slots[..level]);
    }

    /// The earliest occupied slot of `level`, with its first tick.
    #[inline]
    pub(crate) fn first_of(&self, level: usize, elapsed: Tick) -> Option<(usize, Tick)> {
        let word = self.occupied[level];
        let slot = word.trailing_zeros() as usize;
        (word != 0).then(|| (slot, slot_start(elapsed, level, slot)))
    }

    /// Forgets every slot (the caller resets the arena).
    pub(crate) fn clear(&mut self) {
        self.occupied = [0; LEVELS];
        self.moved = [0; LEVELS];
        *self.slots = [[Bucket::EMPTY; SLOTS]; LEVELS];
    }

    /// The earliest occupied slot: `(level, slot, first tick of the slot)` for the cursor at
    /// `elapsed`. The lowest non-empty level holds the earliest timers, and its first set bit is
    /// its earliest slot.
    #[inline]
    pub(crate) fn next_slot(&self, elapsed: Tick) -> Option<(usize, usize, Tick)> {
        let level = self.occupied.iter().position(|&w| w != 0)?;
        let slot = self.occupied[level].trailing_zeros() as usize;
        Some((level, slot, slot_start(elapsed, level, slot)))
    }

    /// Every bucket with its level and slot, in order. For renumbering, drain and checks.
    pub(crate) fn buckets(&self) -> impl Iterator<Item = (usize, usize, &Bucket)> + '_ {
        self.slots
            .iter()
            .enumerate()
            .flat_map(|(l, level)| level.iter().enumerate().map(move |(s, b)| (l, s, b)))
    }

    /// Whether bit `slot` of `level` is set.
    pub(crate) fn is_marked(&self, level: usize, slot: usize) -> bool {
        self.occupied[level] & (1 << slot) != 0
    }

    /// Bytes of heap memory held (the bucket table; the chunks are the arena's).
    pub(crate) fn allocated_bytes(&self) -> usize {
        core::mem::size_of::<[[Bucket; SLOTS]; LEVELS]>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The size the wheel's cost table states.
    #[test]
    fn the_bucket_table_is_14080_bytes() {
        assert_eq!(core::mem::size_of::<Bucket>(), 20);
        assert_eq!(core::mem::size_of::<[[Bucket; SLOTS]; LEVELS]>(), 14_080);
    }

    /// The level/slot rules checked against their definition: the level is the highest 6-bit
    /// group where `elapsed` and `deadline` differ, and the slot's range contains the deadline
    /// and starts after the cursor's slot.
    fn check_one(elapsed: Tick, deadline: Tick) {
        let level = level_for(elapsed, deadline);
        let group = |t: Tick, l: usize| (t >> (6 * l)) & 63;
        let highest_diff = (0..11).rev().find(|&g| {
            let shift = 6 * g as u32;
            shift < 64 && (elapsed >> shift) & 63 != (deadline >> shift) & 63
        });
        assert_eq!(
            level,
            highest_diff.unwrap_or(0),
            "level of {deadline} at {elapsed}"
        );
        assert!(level < LEVELS, "level {level} of {deadline} at {elapsed}");
        let slot = slot_for(deadline, level);
        let start = slot_start(elapsed, level, slot);
        let width = 1u64 << (6 * level);
        assert!(start <= deadline && deadline - start < width, "slot range");
        if level > 0 {
            assert!(slot as u64 > group(elapsed, level), "slot not after cursor");
            assert!(start > elapsed);
        }
        if level < FAR {
            assert_eq!(
                (elapsed ^ deadline) >> 30,
                0,
                "a near level's deadline differs above bit 30"
            );
        }
    }

    /// No deadline after the cursor, however far, is left without a slot.
    #[test]
    fn every_later_deadline_has_a_slot() {
        let edges = [
            0u64,
            1,
            63,
            64,
            4095,
            (1 << 36) - 2,
            (1 << 36) - 1,
            1 << 36,
            (1 << 60) - 1,
            1 << 60,
            u64::MAX - 1,
            u64::MAX,
        ];
        for &e in &edges {
            for &d in &edges {
                for (e, d) in [(e, d), (e, d.wrapping_add(5)), (e.wrapping_add(3), d)] {
                    if d > e {
                        check_one(e, d);
                    }
                }
            }
        }
    }

    #[test]
    fn exhaustive_small_ranges() {
        for elapsed in 0..300u64 {
            for deadline in elapsed + 1..elapsed + 5_000 {
                check_one(elapsed, deadline);
            }
        }
    }

    #[test]
    fn level_boundaries() {
        for level in 0..LEVELS as u32 + 2 {
            for base in [
                0u64,
                1,
                63,
                64,
                4095,
                4096,
                (1 << 36) - 1,
                1 << 40,
                u64::MAX - (1 << 37),
            ] {
                let b = 1u64.checked_shl(6 * level).unwrap_or(0);
                for delta in [1, b.saturating_sub(1), b, b + 1, 2 * b] {
                    if let Some(d) = base.checked_add(delta.max(1)) {
                        check_one(base, d);
                    }
                }
            }
        }
        check_one(0, u64::MAX);
        check_one(u64::MAX - 1, u64::MAX);
        assert_eq!(level_for(0, 63), 0);
        assert_eq!(level_for(0, 64), 1);
        assert_eq!(level_for(0, (1 << 36) - 1), 5);
        assert_eq!(level_for(0, 1 << 36), 6);
        assert_eq!(level_for(0, u64::MAX), LEVELS - 1);
        assert_eq!(slot_start(u64::MAX - 1, LEVELS - 1, 15), 15 << 60);
    }
}
