//! A hierarchical-wheel timer pushed later *in place*: the encoding of its slab entry.
//!
//! A keep-alive refresh pushes a timer later, again and again, long before it could fire. The
//! wheel need not move its reference each time: a timer due later than its reference says is
//! still found in time, because the cursor reaches the reference's slot (its *home*) before
//! the new deadline. So when a reset moves a timer later and its home is a slot of levels 1 to
//! 4 (below [`FAR`](super::level::FAR), whose cascades are never marked), the reset rewrites
//! the entry only and marks the home slot;
//! a marked slot of level 2 or higher carries its references down unread to the places of
//! their own (home) deadlines, marking those, and the cascade of a marked level-1 slot reads
//! each entry and places a moved timer where its deadline now says. A timer refreshed every
//! second with a 30 s timeout is then placed about once per 30 resets, and its old places leave
//! no dead references behind.
//!
//! The entry must then say two things its usual fields say one of: which reference is live
//! (the home's `seq`) and where the timer comes in first-in first-out order (the reset's new
//! `seq`). A moved entry sets [`MOVED`] in `seq` (the wheel's seqs stay below it) and keeps
//! the new order in the rest of `seq`; its `deadline` field holds the home's `seq` in the high
//! half and the low 32 bits of the new deadline in the low half. The wheel moves a timer in
//! place only when the new deadline agrees with the cursor on every bit from 32 up, and the
//! cursor cannot pass the home (which is at or before the new deadline) while the timer is
//! moved, so the high bits of the cursor complete the deadline whenever it is read.
//!
//! # Invariants
//! - A moved entry's home is a live reference of seq `home` in a slot of levels 1 to 4 whose
//!   moved mark is set; no other reference to it is live. Levels from [`FAR`](super::level::FAR) up hold no home.
//! - Its deadline is at or after the home's deadline and agrees with the cursor from bit 32 up.
//! - The order seq and the home seq are below [`MOVED`].
//!
//! # Costs
//! | operation | cost |
//! |---|---|
//! | liveness, deadline | a branch-free select on the entry's fields |
//! | memory | none: the 24 B entry is reused |

use crate::slab::Slab;
use crate::stamped::{Stamped, Word};
use crate::Tick;

/// The `seq` bit of an entry moved in place. Seqs are renumbered before they reach it.
pub(crate) const MOVED: u32 = 1 << 31;

/// The low 32 bits of a tick.
const LOW: Tick = u32::MAX as Tick;

/// Whether an entry's `seq` says it was moved in place.
#[inline(always)]
pub(crate) fn is_moved(seq: u32) -> bool {
    seq & MOVED != 0
}

/// Whether a timer due at `deadline` may be recorded in a moved entry with the cursor at
/// `elapsed`: the two agree from bit 32 up.
#[inline(always)]
pub(crate) fn encodable(elapsed: Tick, deadline: Tick) -> bool {
    (elapsed ^ deadline) >> 32 == 0
}

/// Rewrites an entry as moved in place to `deadline` with order `seq`, its home reference
/// having seq `home`. The caller checked [`encodable`].
#[inline(always)]
pub(crate) fn move_in_place<T>(e: &mut Stamped<T>, home: u32, deadline: Tick, seq: u32) {
    debug_assert!(!is_moved(home) && !is_moved(seq));
    e.word = Word::packed(home, deadline as u32);
    e.seq = seq | MOVED;
}

/// Whether a moved entry may move in place again to `deadline` with the cursor at `elapsed`:
/// the new deadline is encodable and not before the current one. Both then agree with the
/// cursor from bit 32 up, so their low halves decide.
#[inline(always)]
pub(crate) fn may_move_again<T>(e: &Stamped<T>, elapsed: Tick, deadline: Tick) -> bool {
    debug_assert!(is_moved(e.seq));
    encodable(elapsed, deadline) && deadline as u32 >= e.word.low()
}

/// Moves a moved entry in place again (the caller checked [`may_move_again`]): the same home,
/// a new deadline and order seq.
#[inline(always)]
pub(crate) fn move_again<T>(e: &mut Stamped<T>, deadline: Tick, seq: u32) {
    debug_assert!(is_moved(e.seq) && !is_moved(seq));
    e.word = Word::packed(e.word.home(), deadline as u32);
    e.seq = seq | MOVED;
}

/// The seq of the one live reference to an entry: its own seq, or a moved entry's home.
#[inline(always)]
pub(crate) fn live_seq<T>(e: &Stamped<T>) -> u32 {
    if is_moved(e.seq) {
        e.word.home()
    } else {
        e.seq
    }
}

/// Whether the reference `(index, seq)` names a pending timer: its ordinary reference, or a
/// moved timer's home.
#[inline]
pub(crate) fn is_live<T>(slab: &Slab<Stamped<T>>, index: u32, seq: u32) -> bool {
    slab.try_at(index).is_some_and(|e| live_seq(e) == seq)
}

/// An entry's `(deadline, order seq)` with the cursor at `elapsed`.
#[inline]
pub(crate) fn unpacked<T>(e: &Stamped<T>, elapsed: Tick) -> (Tick, u32) {
    if is_moved(e.seq) {
        ((elapsed & !LOW) | Tick::from(e.word.low()), e.seq & !MOVED)
    } else {
        (e.deadline(), e.seq)
    }
}

/// Rewrites a moved entry as an ordinary one (deadline and order seq); its home reference is
/// dead from then on. No-op for an ordinary entry.
#[inline]
pub(crate) fn settle<T>(e: &mut Stamped<T>, elapsed: Tick) {
    let (deadline, seq) = unpacked(e, elapsed);
    e.set_deadline(deadline);
    e.seq = seq;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_moved_entry_names_its_home_and_keeps_its_order_and_deadline() {
        let elapsed = (7u64 << 32) | 100;
        let mut e = Stamped::new(elapsed + 50, 'x', 9);
        assert_eq!(
            (live_seq(&e), unpacked(&e, elapsed)),
            (9, (elapsed + 50, 9))
        );
        let later = elapsed + 3_000_000_000;
        assert!(encodable(elapsed, later) && !encodable(elapsed, elapsed + (1 << 32)));
        move_in_place(&mut e, 9, later, 41);
        assert!(is_moved(e.seq));
        assert_eq!(live_seq(&e), 9, "the home stays live");
        // The cursor may move up to the home before the entry is settled.
        assert_eq!(unpacked(&e, elapsed + 40), (later, 41));
        // Again, later: the home stays; earlier, or beyond bit 32, it may not.
        assert!(may_move_again(&e, elapsed, later) && may_move_again(&e, elapsed, later + 9));
        assert!(!may_move_again(&e, elapsed, later - 1));
        assert!(!may_move_again(&e, elapsed, elapsed + (1 << 32)));
        move_again(&mut e, later + 9, 50);
        assert_eq!((live_seq(&e), unpacked(&e, elapsed)), (9, (later + 9, 50)));
        settle(&mut e, elapsed + 40);
        assert_eq!((e.deadline(), e.seq, live_seq(&e)), (later + 9, 50, 50));
        settle(&mut e, elapsed + 40);
        assert_eq!(
            (e.deadline(), e.seq),
            (later + 9, 50),
            "settling twice changes nothing"
        );
    }
}
