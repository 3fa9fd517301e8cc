//! [`Slot`]: what a timer of the async service carries, and how it wakes its task.
//!
//! A slot is shared (`Arc`) by one [`Sleep`](crate::Sleep) and the service's copy of its
//! payload. It holds the sleep's state and the waker last registered, both under one small
//! lock, so the three parties agree:
//! - the driver [`finish`](Slot::finish)es it (fired, or shut down) and wakes the waker, under
//!   the lock;
//! - a poll checks the state and stores its waker under the lock, so a fire either happened
//!   before (the poll sees it) or comes after (it finds the waker): no wake-up is lost;
//! - a dropped sleep [`forget`](Slot::forget)s its waker under the lock, so once the drop
//!   returns, nothing wakes its task.

use std::sync::Arc;
use std::task::{Context, Waker};

use parking_lot::Mutex;

/// Not fired yet.
const PENDING: u8 = 0;

/// How a slot ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Done {
    /// Its deadline came.
    Fired,
    /// The service shut down first.
    Shutdown,
}

#[derive(Default)]
struct State {
    /// `PENDING`, or `Done as u8 + 1`.
    done: u8,
    waker: Option<Waker>,
}

/// One armed timer's shared state.
#[derive(Default)]
pub(crate) struct Slot {
    state: Mutex<State>,
}

impl Slot {
    /// A pending slot.
    pub(crate) fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    /// Ends the slot and wakes its task, if one is registered.
    pub(crate) fn finish(&self, how: Done) {
        let mut s = self.state.lock();
        if s.done == PENDING {
            s.done = how as u8 + 1;
        }
        if let Some(w) = s.waker.take() {
            w.wake();
        }
    }

    /// How the slot ended, or `None` with `cx`'s waker registered (replacing an older one).
    pub(crate) fn poll(&self, cx: &Context<'_>) -> Option<Done> {
        let mut s = self.state.lock();
        match s.done {
            PENDING => {
                match &s.waker {
                    Some(w) if w.will_wake(cx.waker()) => {}
                    _ => s.waker = Some(cx.waker().clone()),
                }
                None
            }
            1 => Some(Done::Fired),
            _ => Some(Done::Shutdown),
        }
    }

    /// Drops the registered waker: nothing wakes the task through this slot from now on.
    pub(crate) fn forget(&self) {
        let waker = self.state.lock().waker.take();
        drop(waker);
    }
}
