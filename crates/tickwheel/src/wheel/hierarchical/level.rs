//! Level and slot arithmetic: where a deadline sits, seen from the cursor.
//!
//! A deadline `d` seen from the cursor `e` belongs to level `level_for(e, d)`, the highest 6-bit
//! group in which the two differ (level 0 when they are equal), and to slot
//! `slot_for(d, level)`, its own value of that group. A slot of level `l` spans `64^l` ticks.
//! Eleven levels cover every `u64` (level 10 uses 16 of its 64 slots).
//!
//! The same function sorts deadlines behind the cursor: `d < e` lands in a slot *below* the
//! cursor's own slot of its level, `d > e` in one *above* it, and `d == e` in the cursor's
//! slot of level 0. A level's cursor slot is empty at every level above 0.

use crate::Tick;

/// Bits of a deadline that pick the slot within a level.
pub(crate) const SLOT_BITS: u32 = 6;
/// Slots per level (and per node).
pub(crate) const SLOTS: usize = 1 << SLOT_BITS;
/// Levels: enough 6-bit groups for every `u64`.
pub(crate) const LEVELS: usize = 11;

/// The level of deadline `d` seen from cursor `e`: the highest 6-bit group in which they differ.
#[inline(always)]
pub(crate) fn level_for(e: Tick, d: Tick) -> usize {
    let differing = (e ^ d) | (SLOTS as u64 - 1);
    (63 - differing.leading_zeros() as usize) / SLOT_BITS as usize
}

/// The slot of deadline `d` in a level (or node) whose slots span `64^level` ticks.
#[inline(always)]
pub(crate) fn slot_for(d: Tick, level: usize) -> usize {
    ((d >> (SLOT_BITS as usize * level)) & (SLOTS as u64 - 1)) as usize
}

/// Ticks a slot of `level` spans: `64^level`.
#[inline(always)]
pub(crate) fn span(level: usize) -> u64 {
    1 << (SLOT_BITS as usize * level)
}

/// The first tick of the `level` slot that holds tick `t`.
#[inline(always)]
pub(crate) fn slot_floor(t: Tick, level: usize) -> Tick {
    let shift = SLOT_BITS as usize * level;
    t >> shift << shift
}

/// The first tick of slot `slot` of `level`, in the `level + 1` slot that holds tick `t`.
#[inline]
pub(crate) fn slot_start(t: Tick, level: usize, slot: usize) -> Tick {
    let above = SLOT_BITS as usize * (level + 1);
    let prefix = if above >= 64 { 0 } else { t >> above << above };
    prefix | ((slot as u64) << (SLOT_BITS as usize * level))
}

/// The slots of a 64-bit occupancy word strictly above `slot`.
#[inline(always)]
pub(crate) fn above(slot: usize) -> u64 {
    (!0u64 << slot) << 1
}

/// The slots of a 64-bit occupancy word strictly below `slot`.
#[inline(always)]
pub(crate) fn below(slot: usize) -> u64 {
    (1u64 << slot) - 1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_follow_the_highest_differing_group() {
        assert_eq!(level_for(0, 0), 0);
        assert_eq!(level_for(0, 63), 0);
        assert_eq!(level_for(0, 64), 1);
        assert_eq!(level_for(100, 64), 0);
        assert_eq!(level_for(64, 63), 1);
        assert_eq!(level_for(0, 1 << 36), 6);
        assert_eq!(level_for(0, u64::MAX), 10);
        assert_eq!(level_for(u64::MAX, 0), 10);
        assert_eq!(slot_for(u64::MAX, 10), 15);
    }

    #[test]
    fn slot_starts_and_masks() {
        assert_eq!(slot_start(70, 0, 5), 69);
        assert_eq!(slot_start(70, 1, 3), 192);
        assert_eq!(slot_start(u64::MAX, 10, 15), 15 << 60);
        assert_eq!(slot_floor(4_100, 2), 4_096);
        assert_eq!(above(63), 0);
        assert_eq!(above(0), !1);
        assert_eq!(below(0), 0);
        assert_eq!(below(63), u64::MAX >> 1);
    }
}
