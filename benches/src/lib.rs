//! Benchmark support for tickwheel: one [`Adapter`] trait that lets a single benchmark function
//! drive every tickwheel implementation and the peers a user would pick instead,
//! and the [`workload`]s that the criterion suite (`benches/timers.rs`) and the memory probe
//! (`src/bin/memory.rs`) run through it. `scripts/bench.sh` runs both and writes the table.
//!
//! | adapter | structure | reset | notes |
//! |---|---|---|---|
//! | [`Tw<HashedWheel>`](Tw) … | the four tickwheel implementations | native | |
//! | [`DelayQueueAdapter`] | tokio-util `DelayQueue` on a paused current-thread runtime | native | the clock is moved by `tokio::time::advance` |
//! | [`TimerQueueAdapter`] | `timer-queue` (hierarchical wheel over a slab) | native | |
//! | [`HhwtAdapter`] | `hierarchical_hash_wheel_timer`'s cancellable quad wheel | cancel + insert | lazy cancel: garbage stays until its slot is ticked |
//! | [`LazyBinaryHeap`] | `std` `BinaryHeap` with a sequence check, rebuilt when half dead | cancel + insert | |
//! | [`BTreeTimer`] | `BTreeMap<(deadline, seq), payload>` | remove + insert | |
//!
//! Time is `u64` ticks of 1 ms for all of them; payloads are `u64`.

mod adapter;
mod rng;
pub mod workload;

pub use adapter::binary_heap::LazyBinaryHeap;
pub use adapter::btree::BTreeTimer;
pub use adapter::delay_queue::DelayQueueAdapter;
pub use adapter::floor::Floor;
pub use adapter::hhwt::HhwtAdapter;
pub use adapter::tickwheel::{Recorded, Tw, TwKind};
pub use adapter::timer_queue::TimerQueueAdapter;
pub use adapter::Adapter;
pub use rng::Rng;

/// Calls `$body` once per adapter, with `$a` bound to the adapter type, in report order
/// (tickwheel's four, then the peers).
///
/// ```
/// use tickwheel_benches::{for_each_adapter, Adapter};
/// let mut names = Vec::new();
/// for_each_adapter!(A => names.push(A::NAME));
/// assert_eq!(names.len(), 9);
/// ```
#[macro_export]
macro_rules! for_each_adapter {
    ($a:ident => $body:expr) => {{
        {
            type $a = $crate::Tw<::tickwheel::HashedWheel<u64>>;
            $body;
        }
        {
            type $a = $crate::Tw<::tickwheel::HierarchicalWheel<u64>>;
            $body;
        }
        {
            type $a = $crate::Tw<::tickwheel::IndexedHeap<u64>>;
            $body;
        }
        {
            type $a = $crate::Tw<::tickwheel::LazyHeap<u64>>;
            $body;
        }
        {
            type $a = $crate::DelayQueueAdapter;
            $body;
        }
        {
            type $a = $crate::TimerQueueAdapter;
            $body;
        }
        {
            type $a = $crate::HhwtAdapter;
            $body;
        }
        {
            type $a = $crate::LazyBinaryHeap;
            $body;
        }
        {
            type $a = $crate::BTreeTimer;
            $body;
        }
    }};
}
