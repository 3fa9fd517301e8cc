//! The timer operations whose cost is measured (insert, cancel, reset, fire, idle); they also
//! index the per-operation arrays.
//!
//! The ground floor of the crate: it imports nothing from the crate, so both the measurement
//! and the slowest-call analysis use it.

/// The operations whose cost is sampled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Op {
    /// `insert`.
    Insert = 0,
    /// `cancel` (of a pending timer, or a miss on a key that fired).
    Cancel = 1,
    /// `reset`.
    Reset = 2,
    /// A `poll` that returned a timer.
    Fire = 3,
    /// A `poll` that returned nothing, and `next_deadline`.
    Idle = 4,
}
