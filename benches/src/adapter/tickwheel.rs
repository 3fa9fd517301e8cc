//! tickwheel's four implementations, through their own `Timer` trait.

use tickwheel::{
    FromOptions, HashedWheel, HierarchicalWheel, IndexedHeap, LazyHeap, Options, Timer, TimerKey,
};

use super::Adapter;

/// A tickwheel implementation with its report name.
pub trait TwKind: Timer<u64> + FromOptions {
    /// The name in reports.
    const NAME: &'static str;
}

impl TwKind for HashedWheel<u64> {
    const NAME: &'static str = "tw-hashed";
}
impl TwKind for HierarchicalWheel<u64> {
    const NAME: &'static str = "tw-hierarchical";
}
impl TwKind for IndexedHeap<u64> {
    const NAME: &'static str = "tw-heap";
}
impl TwKind for LazyHeap<u64> {
    const NAME: &'static str = "tw-lazy-heap";
}

/// Drives a tickwheel implementation `X` (built with `Options::new().preallocate(n)`).
pub struct Tw<X>(pub X);

impl<X: TwKind> std::fmt::Debug for Tw<X> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tw")
            .field("name", &X::NAME)
            .field("len", &self.0.len())
            .finish()
    }
}

impl<X: TwKind> Adapter for Tw<X> {
    type Key = TimerKey;
    const NAME: &'static str = X::NAME;
    const IS_TICKWHEEL: bool = true;
    const NATIVE_RESET: bool = true;

    fn with_capacity(capacity: usize) -> Self {
        Self(X::from_options(Options::new().preallocate(capacity)).expect("valid options"))
    }

    #[inline(always)]
    fn insert(&mut self, deadline: u64, payload: u64) -> TimerKey {
        match self.0.insert(deadline, payload) {
            Ok(key) => key,
            Err(_) => unreachable!("unbounded timer refused an insert"),
        }
    }

    #[inline(always)]
    fn cancel(&mut self, key: TimerKey) -> bool {
        self.0.cancel(key).is_some()
    }

    #[inline(always)]
    fn reset(&mut self, key: TimerKey, deadline: u64, _payload: u64) -> TimerKey {
        let _ = self.0.reset(key, deadline);
        key
    }

    #[inline(always)]
    fn poll(&mut self, now: u64) -> Option<u64> {
        self.0.poll(now).map(|e| e.payload)
    }

    #[inline(always)]
    fn next_deadline(&mut self) -> Option<u64> {
        self.0.next_deadline()
    }

    fn len(&self) -> usize {
        self.0.len()
    }

    fn allocated_bytes(&self) -> Option<usize> {
        Some(self.0.allocated_bytes())
    }
}
