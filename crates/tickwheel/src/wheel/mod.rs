//! The timing-wheel designs, a folder each; they share no code.
//!
//! - [`hashed`]: a ring of one-tick slots for the next revolution, with entries linked into
//!   intrusive lists, and the crate's [`IndexedHeap`](crate::IndexedHeap) for every other
//!   timer.
//! - [`hierarchical`]: eleven levels of 64 slots, intrusive first-in first-out lists whose
//!   links sit in an array beside the slab, and a crowded slot split into a child node.

pub(crate) mod hashed;
pub(crate) mod hierarchical;
