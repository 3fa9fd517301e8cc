//! tickwheel's four implementations, through their own `Timer` trait.

use std::io::Sink;
use std::time::Duration;

use tickwheel::trace::Recorder;
use tickwheel::{
    FromOptions, HashedWheel, HierarchicalWheel, IndexedHeap, LazyHeap, Options, Timer, TimerKey,
};

use super::Adapter;

/// A tickwheel timer with its report name and how to build it.
pub trait TwKind: Timer<u64> {
    /// The name in reports.
    const NAME: &'static str;

    /// An empty timer with room for `capacity` timers reserved.
    fn preallocated(capacity: usize) -> Self;
}

macro_rules! tw_kind {
    ($($ty:ty => $name:literal),* $(,)?) => {
        $(
            impl TwKind for $ty {
                const NAME: &'static str = $name;
                fn preallocated(capacity: usize) -> Self {
                    <$ty>::from_options(Options::new().preallocate(capacity)).expect("valid options")
                }
            }
        )*
    };
}

tw_kind! {
    HashedWheel<u64> => "tw-hashed",
    HierarchicalWheel<u64> => "tw-hierarchical",
    IndexedHeap<u64> => "tw-heap",
    LazyHeap<u64> => "tw-lazy-heap",
}

/// The hierarchical wheel under a trace `Recorder` writing to `io::sink()`: what recording a
/// server's timer calls adds to each call (the encoding and buffering, not a disk).
impl TwKind for Recorder<HierarchicalWheel<u64>, Sink> {
    const NAME: &'static str = "tw-hierarchical+trace";
    fn preallocated(capacity: usize) -> Self {
        Recorder::new(
            HierarchicalWheel::preallocated(capacity),
            std::io::sink(),
            Duration::from_millis(1),
        )
    }
}

/// [`Tw`] of the recorded hierarchical wheel.
pub type Recorded = Tw<Recorder<HierarchicalWheel<u64>, Sink>>;

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
        Self(X::preallocated(capacity))
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
