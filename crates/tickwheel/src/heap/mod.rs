//! The heap designs: exact ordering by `(deadline, seq)`, O(log n) per operation.

pub(crate) mod indexed;
pub(crate) mod lazy;
