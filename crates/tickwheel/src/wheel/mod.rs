//! The timing-wheel designs and the pieces they share.
//!
//! Both wheels keep each timer in one slab entry with exactly one place, and that place is a
//! function of the timer's deadline and the wheel's cursor (the last tick fully swept), so
//! entries need not remember where they are:
//!
//! | deadline vs cursor | place |
//! |---|---|
//! | `deadline < cursor` | the overdue queue, ordered by `(deadline, insertion)` |
//! | `deadline == cursor` | the ready list, first-in first-out |
//! | `deadline > cursor` | a wheel slot (or the hashed wheel's far store past its horizon) |
//!
//! Each design is a folder: [`hashed`] links its entries into intrusive lists;
//! [`hierarchical`] keeps chunk lists of references instead, deleted lazily.

pub(crate) mod hashed;
pub(crate) mod hierarchical;
