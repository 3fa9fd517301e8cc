//! The real-clock driver: the timer inside an event loop on the monotonic clock.
//!
//! The loop handles every arrival and response whose intended instant has passed, polls the
//! timer at the current tick ([`TickClock::now_tick`], rounding down), then sleeps until the
//! earliest of the next arrival, the next response and `next_deadline()`.
//!
//! Every instant is the *intended* one: a request's deadline is its intended arrival plus the
//! timeout, even when the loop handles the arrival late, so a stalled loop shows up as lateness
//! instead of hiding itself (no coordinated omission). Lateness is the instant `poll` returned
//! the timer minus its intended deadline instant, in nanoseconds. How late arrivals were handled
//! is kept too, and arrivals still waiting when the run ends are reported as a rate shortfall.
//! With `--handler-cost`, the loop spins that long per event (arrival, response, fired timer),
//! as an application's own work would keep it busy.

use std::thread;
use std::time::{Duration, Instant};

use indicatif::ProgressBar;
use tickwheel::{TickClock, Timer};

use crate::config::{Clock, Workload};
use crate::counter::CallClock;
use crate::error::Error;
use crate::measure::{Hist, LATENESS_MAX};
use crate::outcome::Outcome;
use crate::server::Server;
use crate::units::nanos;
use crate::workload::Generator;

/// Runs `workload` against `timer` in real time.
///
/// # Errors
/// [`Error::Input`] for a tick the clock refuses; [`Error::Contract`] when the timer breaks its
/// contract in a way the loop cannot go on from.
pub(crate) fn run<X: Timer<u64>>(
    timer: X,
    workload: &Workload,
    call_clock: &CallClock,
    progress: &ProgressBar,
) -> Result<Outcome, Error> {
    let wall = Instant::now();
    let tick_ns = workload.tick_ns();
    let mut server = Server::open(timer, workload, call_clock, None)?;
    let mut generator = Generator::new(workload);
    let mut arrival = generator.next_arrival();
    let mut lag = Hist::new(LATENESS_MAX);
    let clock = TickClock::new(workload.tick).map_err(|e| Error::Input(e.to_string()))?;
    let origin = clock.origin();
    let end = origin + workload.duration;
    progress.set_length(nanos(workload.duration) / 1_000_000);
    let mut last_progress = origin;
    let mut now;
    loop {
        now = Instant::now();
        // Events are handled up to the end of the run, the timer polled at the real now.
        let now_ns = nanos(now.min(end) - origin);
        let real_ns = nanos(now - origin);
        // Responses and arrivals whose intended time has passed, in time order.
        loop {
            let response_ns = server.next_response_ns().filter(|&t| t <= now_ns);
            let arrival_ns = arrival.map(|a| a.at_ns).filter(|&t| t <= now_ns);
            match (response_ns, arrival_ns, arrival) {
                (Some(r), Some(a), _) if r <= a => server.respond(),
                (Some(_), None, _) => server.respond(),
                (_, Some(a), Some(next)) => {
                    lag.record(real_ns - a);
                    server.arrive(next)?;
                    arrival = generator.next_arrival();
                }
                _ => break,
            }
            spin(workload.handler_cost);
        }
        let tick = clock.now_tick(now);
        server.close_intervals(now - origin);
        while let Some(expired) = server.probe.poll(tick) {
            let fired_ns = nanos(Instant::now() - origin);
            let lateness = fired_ns.checked_sub(server.due_ns(&expired));
            let lateness = lateness.filter(|_| tick >= expired.deadline);
            server.fired(&expired, lateness)?;
            spin(workload.handler_cost);
        }
        if now >= end {
            break;
        }
        // Sleep until the next thing to do (never past the end).
        let timer_ns = server.probe.next_deadline();
        let timer_ns = timer_ns.map(|d| d.max(tick + 1).saturating_mul(tick_ns));
        let wake_ns = [
            arrival.map(|a| a.at_ns),
            server.next_response_ns(),
            timer_ns,
        ];
        sleep_until(origin, wake_ns.into_iter().flatten().min(), end);
        if now.duration_since(last_progress) >= Duration::from_millis(100) {
            progress.set_position(nanos(now - origin) / 1_000_000);
            last_progress = now;
        }
    }
    // Arrivals whose intended time fell within the run but were never handled.
    let intended = server.arrivals + generator.count_rest(arrival);
    // The last poll was at `now`: what is due by then and still pending is overdue.
    let final_tick = clock.now_tick(now);
    let run_time = now - origin;
    let mut outcome = server.finish(Clock::Real, final_tick, run_time, wall, call_clock)?;
    outcome.arrival_lag = Some(lag);
    outcome.arrivals_intended = intended;
    Ok(outcome)
}

/// Spins for `handler`, as an application's own work per event would keep the loop busy.
fn spin(handler: Duration) {
    if !handler.is_zero() {
        let until = Instant::now() + handler;
        while Instant::now() < until {
            std::hint::spin_loop();
        }
    }
}

/// Sleeps until `wake_ns` after `origin`, never past `end` (until `end` when there is nothing
/// to wake for).
pub(crate) fn sleep_until(origin: Instant, wake_ns: Option<u64>, end: Instant) {
    let wake = wake_ns
        .and_then(|ns| origin.checked_add(Duration::from_nanos(ns)))
        .map_or(end, |w| w.min(end));
    let before = Instant::now();
    if wake > before {
        thread::sleep(wake - before);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tickwheel::{Kind, Options};

    #[test]
    fn real_run_keeps_strict_invariants() {
        let w = Workload {
            connections: 500,
            rate: 5_000.0,
            duration: Duration::from_millis(600),
            idle_timeout: Duration::from_millis(200),
            request_timeout: Duration::from_millis(20),
            slow_fraction: 0.1,
            tick: Duration::from_millis(1),
            seed: 3,
            handler_cost: Duration::ZERO,
            herd: false,
        };
        let clock = CallClock::new();
        for kind in Kind::ALL {
            let timer = kind.build::<u64>(Options::new()).unwrap();
            let o = run(timer, &w, &clock, &ProgressBar::hidden()).unwrap();
            assert_eq!(o.early_fires, 0, "{kind}");
            assert_eq!(
                o.scheduled,
                o.fired + o.cancelled + o.overdue_at_end + o.pending_at_end,
                "{kind}"
            );
            assert!(o.fired > 0 && o.arrivals > 1_000, "{kind}: {o:?}");
            // Generous: a loaded machine may stall, but not for seconds.
            assert!(o.lateness.max() < 2_000_000_000, "{kind}");
            assert!(o.arrivals <= o.arrivals_intended);
        }
    }
}
