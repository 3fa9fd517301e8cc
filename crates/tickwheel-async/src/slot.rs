//! [`Slot`]: what a timer of the async service carries, and how it wakes its task.
//!
//! A slot is shared (`Arc`) by one armed [`Sleep`](crate::Sleep) and the service's copy of
//! its payload; the sleep makes it, holding that poll's waker, at the poll that arms the timer.
//! It is one small lock around one `Option<Waker>`, so the three parties agree:
//! - the driver [`finish`](Slot::finish)es it (fired, or shut down) and wakes the waker, under
//!   the lock;
//! - a poll checks the state and stores its waker under the lock, so a fire either happened
//!   before (the poll sees it) or comes after (it finds the waker): no wake-up is lost;
//! - a sleep dropped (or reset) after its timer left the service [`forget`](Slot::forget)s its
//!   waker under the lock, so once the drop returns, nothing wakes its task.
//!
//! The ended states are kept in the same `Option<Waker>`, as one of two marker wakers that
//! wake nothing: a separate state byte would take the slot's allocation from 40 to 48 bytes
//! (64 with the allocator's header), 16 bytes more per pending sleep.

use std::sync::{Arc, LazyLock};
use std::task::{Context, Wake, Waker};

use parking_lot::Mutex;

/// How a slot ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Done {
    /// Its deadline came.
    Fired,
    /// The service shut down first.
    Shutdown,
}

/// A waker that wakes nothing; two of them mark the ended states.
struct Marker;

impl Wake for Marker {
    fn wake(self: Arc<Self>) {}
}

static FIRED: LazyLock<Waker> = LazyLock::new(|| Waker::from(Arc::new(Marker)));
static SHUTDOWN: LazyLock<Waker> = LazyLock::new(|| Waker::from(Arc::new(Marker)));

fn ended(w: &Waker) -> Option<Done> {
    if w.will_wake(&FIRED) {
        Some(Done::Fired)
    } else if w.will_wake(&SHUTDOWN) {
        Some(Done::Shutdown)
    } else {
        None
    }
}

/// One armed timer's shared state: a task's waker (pending), `None` (its sleep let go of it),
/// or a marker (ended).
pub(crate) struct Slot {
    state: Mutex<Option<Waker>>,
}

impl Slot {
    /// A pending slot whose task is `cx`'s: made by the poll that arms its timer, before the
    /// schedule, so a fire at once finds the waker.
    pub(crate) fn waiting(cx: &Context<'_>) -> Arc<Self> {
        Arc::new(Self {
            state: Mutex::new(Some(cx.waker().clone())),
        })
    }

    /// Ends the slot (the first end counts) and wakes its task, if one is registered.
    pub(crate) fn finish(&self, how: Done) {
        let marker = match how {
            Done::Fired => &*FIRED,
            Done::Shutdown => &*SHUTDOWN,
        };
        let mut s = self.state.lock();
        if s.as_ref().and_then(ended).is_some() {
            return;
        }
        if let Some(task) = s.replace(marker.clone()) {
            task.wake();
        }
    }

    /// How the slot ended, or `None` with `cx`'s waker registered (replacing an older one).
    pub(crate) fn poll(&self, cx: &Context<'_>) -> Option<Done> {
        let mut s = self.state.lock();
        match &*s {
            Some(w) => {
                if let Some(done) = ended(w) {
                    return Some(done);
                }
                if !w.will_wake(cx.waker()) {
                    *s = Some(cx.waker().clone());
                }
            }
            None => *s = Some(cx.waker().clone()),
        }
        None
    }

    /// Drops the registered waker: nothing wakes the task through this slot from now on.
    pub(crate) fn forget(&self) {
        let mut s = self.state.lock();
        let task = match &*s {
            Some(w) if ended(w).is_none() => s.take(),
            _ => None,
        };
        drop(s);
        drop(task);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The size the module docs rely on: 24 bytes, 40 with the `Arc`'s two counts.
    #[test]
    fn a_slot_is_24_bytes() {
        assert_eq!(std::mem::size_of::<Slot>(), 24);
    }
}
