//! Cost runs: each operation's cost per call, resolved to a fraction of a nanosecond.
//!
//! A single call is timed to the counter's resolution only (up to 10 ns, see
//! [`counter`](crate::counter)), too coarse for calls of 2–25 ns. So when a run ends, before its
//! accounting, each implementation also times [`RUNS`] runs of [`CALLS_PER_RUN`] identical calls
//! per operation on the state the run left it in (its live timers, its cursor), and divides each
//! run's time by its length. The per-call figures then resolve the counter's resolution ÷ 64.
//!
//! Every round adds and removes its own timers only, whose payload is [`MARK`]:
//! - **insert**: 64 timers at a request deadline (`now` + the request timeout);
//! - **reset**: those 64 pushed to an idle deadline (`now` + the idle timeout);
//! - **cancel**: those 64 cancelled, each returning its payload;
//! - **fire**: 64 timers inserted at `now` (untimed), then 64 polls at `now`, each returning one.
//!
//! Nothing of the run is due at `now` (the driver polled it empty), so the run's own timers and
//! counts are untouched; a poll that returns anything but a marked timer is a broken contract.

use tickwheel::{Tick, Timer, TimerKey};

use crate::counter::CallClock;
use crate::error::Error;
use crate::measure::{Hist, COST_MAX};

/// Calls per timed run.
pub(crate) const CALLS_PER_RUN: u32 = 64;
/// Runs per operation.
pub(crate) const RUNS: u32 = 1_000;
/// The payload of every timer the cost runs add: no workload payload has every bit set.
pub(crate) const MARK: u64 = u64::MAX;

/// Per operation (insert, cancel, reset, fire), the cost per call of each run, in picoseconds.
pub(crate) type RunCosts = [Hist; 4];

/// Times the runs on `timer` at tick `now`, nothing being due there.
///
/// # Errors
/// [`Error::Contract`] when the timer refuses an insert, loses or misplaces one of the runs'
/// own timers, or fires a timer of the run.
pub(crate) fn measure<X: Timer<u64>>(
    timer: &mut X,
    clock: &CallClock,
    now: Tick,
    request_ticks: u64,
    idle_ticks: u64,
) -> Result<RunCosts, Error> {
    let mut costs: RunCosts = std::array::from_fn(|_| Hist::new(COST_MAX.saturating_mul(1_000)));
    let mut keys: Vec<Option<TimerKey>> = vec![None; CALLS_PER_RUN as usize];
    let mut faults = 0u32;
    let request_due = now.saturating_add(request_ticks.max(1));
    let idle_due = now.saturating_add(idle_ticks.max(1));
    for _ in 0..RUNS {
        let insert = clock.time_run(CALLS_PER_RUN, |i| {
            keys[i as usize] = timer.insert(request_due, MARK).ok();
        });
        let reset = clock.time_run(CALLS_PER_RUN, |i| {
            if let Some(key) = keys[i as usize] {
                faults += u32::from(timer.reset(key, idle_due).is_err());
            }
        });
        let cancel = clock.time_run(CALLS_PER_RUN, |i| {
            let cancelled = keys[i as usize].take().and_then(|key| timer.cancel(key));
            faults += u32::from(cancelled != Some(MARK));
        });
        for _ in 0..CALLS_PER_RUN {
            faults += u32::from(timer.insert(now, MARK).is_err());
        }
        let fire = clock.time_run(CALLS_PER_RUN, |_| {
            faults += u32::from(timer.poll(now).map(|e| e.payload) != Some(MARK));
        });
        if faults > 0 {
            return Err(Error::Contract(format!(
                "{}: the cost runs' own timers went wrong at tick {now} ({faults} calls refused, \
                 lost or answered by another timer)",
                timer.name()
            )));
        }
        for (hist, ps) in costs.iter_mut().zip([insert, cancel, reset, fire]) {
            hist.record(ps);
        }
    }
    Ok(costs)
}

#[cfg(test)]
mod tests {
    use super::*;
    use tickwheel::{Kind, Options};

    #[test]
    fn runs_leave_the_timer_as_they_found_it() {
        let clock = CallClock::new();
        for kind in Kind::ALL {
            let mut timer = kind.build::<u64>(Options::new()).unwrap();
            for i in 0..1_000u64 {
                timer.insert(100 + i, i).unwrap();
            }
            assert_eq!(timer.poll(50), None);
            let costs = measure(&mut timer, &clock, 50, 200, 10_000).unwrap();
            assert_eq!(timer.len(), 1_000, "{kind}");
            for hist in &costs {
                assert_eq!(hist.count(), u64::from(RUNS));
                assert!(hist.quantile(0.5) > 0, "{kind}");
            }
            // The run's own timers still fire, in order.
            let fired: Vec<u64> = std::iter::from_fn(|| timer.poll(10_000).map(|e| e.payload))
                .take(3)
                .collect();
            assert_eq!(fired, [0, 1, 2], "{kind}");
        }
    }

    #[test]
    fn a_timer_due_at_now_is_caught() {
        let clock = CallClock::new();
        let mut timer = Kind::Hierarchical.build::<u64>(Options::new()).unwrap();
        timer.insert(10, 7).unwrap();
        let err = measure(&mut timer, &clock, 10, 200, 10_000).unwrap_err();
        assert!(err.to_string().contains("cost runs"), "{err}");
    }
}
