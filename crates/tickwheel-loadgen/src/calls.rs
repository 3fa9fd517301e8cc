//! The timer's own calls, each in a function of its own that is never inlined: the points
//! where `--cost simulated` counts (see [`simulated`](crate::simulated)). Callgrind collects
//! events only while one of these functions runs (`--toggle-collect`), so the simulated cost is
//! the timer's code and nothing of the harness around it: not the cycle counter's reads, not
//! the event generator, not the bookkeeping of a call's result.
//!
//! The ground floor of the crate: it imports nothing from the crate, so the measurement and the
//! simulated cost both name these functions. Each costs a call and a return more than an
//! inlined call, in every mode alike.

use tickwheel::{Expired, InsertError, StaleKeyError, Tick, Timer, TimerKey};

/// The pattern that matches every function here, as callgrind names them.
pub(crate) const TOGGLE: &str = "tickwheel_loadgen::calls::*";

/// The call kinds, in report order, with the name callgrind gives each one's function.
pub(crate) const KINDS: [(&str, &str); 5] = [
    ("insert", "tickwheel_loadgen::calls::insert"),
    ("cancel", "tickwheel_loadgen::calls::cancel"),
    ("reset", "tickwheel_loadgen::calls::reset"),
    ("poll", "tickwheel_loadgen::calls::poll"),
    ("next_deadline", "tickwheel_loadgen::calls::next_deadline"),
];

/// [`Timer::insert`].
#[inline(never)]
pub(crate) fn insert<X: Timer<u64>>(
    timer: &mut X,
    deadline: Tick,
    payload: u64,
) -> Result<TimerKey, InsertError<u64>> {
    timer.insert(deadline, payload)
}

/// [`Timer::cancel`].
#[inline(never)]
pub(crate) fn cancel<X: Timer<u64>>(timer: &mut X, key: TimerKey) -> Option<u64> {
    timer.cancel(key)
}

/// [`Timer::reset`].
#[inline(never)]
pub(crate) fn reset<X: Timer<u64>>(
    timer: &mut X,
    key: TimerKey,
    deadline: Tick,
) -> Result<(), StaleKeyError> {
    timer.reset(key, deadline)
}

/// [`Timer::poll`].
#[inline(never)]
pub(crate) fn poll<X: Timer<u64>>(timer: &mut X, now: Tick) -> Option<Expired<u64>> {
    timer.poll(now)
}

/// [`Timer::next_deadline`].
#[inline(never)]
pub(crate) fn next_deadline<X: Timer<u64>>(timer: &mut X) -> Option<Tick> {
    timer.next_deadline()
}
