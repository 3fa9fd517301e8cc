//! The hierarchical wheel wrapped in a trace `Recorder` writing to `io::sink()`: what recording
//! a server's timer calls adds to each call (the trace's encoding and buffering, not a disk).

use std::io::Sink;
use std::time::Duration;

use tickwheel::trace::Recorder;
use tickwheel::{FromOptions, HierarchicalWheel, Options, Timer, TimerKey};

use super::Adapter;

/// [`HierarchicalWheel`] under a [`Recorder`].
pub struct Recorded(Recorder<HierarchicalWheel<u64>, Sink>);

impl std::fmt::Debug for Recorded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Recorded")
            .field("records", &self.0.records())
            .finish()
    }
}

impl Adapter for Recorded {
    type Key = TimerKey;
    const NAME: &'static str = "tw-hierarchical+trace";
    const IS_TICKWHEEL: bool = true;
    const NATIVE_RESET: bool = true;

    fn with_capacity(capacity: usize) -> Self {
        let wheel = HierarchicalWheel::from_options(Options::new().preallocate(capacity))
            .expect("valid options");
        Self(Recorder::new(
            wheel,
            std::io::sink(),
            Duration::from_millis(1),
        ))
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
