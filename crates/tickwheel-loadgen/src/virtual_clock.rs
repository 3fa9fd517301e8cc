//! The virtual-clock driver: deterministic discrete-event time.
//!
//! The timer is driven exactly as a single-threaded event loop would drive it. Three sources of
//! events are merged in time order: the next request arrival, the next response, and the
//! timer's own `next_deadline()` (the loop's wake-up). At each event the loop first polls the
//! timer at the event's tick (rounded down) until it yields nothing — whenever the tick has
//! advanced since the last poll; within one tick nothing new can come due, because every
//! deadline set in a tick lies in a later tick — and then handles the event.
//!
//! Lateness is `poll tick − deadline tick`; since the loop wakes at every `next_deadline()`, a
//! correct timer fires at lateness 0 and anything else shows up at once. Event order and every
//! count depend only on the seed, so all implementations must agree on them.

use std::time::{Duration, Instant};

use indicatif::ProgressBar;
use tickwheel::{Tick, Timer};

use crate::config::{nanos, Clock, Workload};
use crate::error::Error;
use crate::outcome::Outcome;
use crate::server::Server;
use crate::workload::Generator;

/// Runs `workload` against `timer` on virtual time.
///
/// # Errors
/// [`Error::Contract`] when the timer breaks its contract in a way the loop cannot go on from.
pub(crate) fn run<X: Timer<u64>>(
    timer: X,
    workload: &Workload,
    overhead_ns: u64,
    progress: &ProgressBar,
) -> Result<Outcome, Error> {
    let wall = Instant::now();
    let tick_ns = workload.tick_ns();
    let end_ns = nanos(workload.duration);
    let mut server = Server::open(timer, workload, overhead_ns)?;
    let mut generator = Generator::new(workload);
    let mut arrival = generator.next_arrival();
    let mut polled: Option<Tick> = None;
    progress.set_length(end_ns / 1_000_000);
    let mut events: u32 = 0;
    loop {
        let wake_ns = server.probe.next_deadline().map(|d| {
            let d = polled.map_or(d, |p| d.max(p + 1));
            d.saturating_mul(tick_ns)
        });
        let response_ns = server.next_response_ns();
        let arrival_ns = arrival.map(|a| a.at_ns);
        let Some(t) = [arrival_ns, response_ns, wake_ns]
            .into_iter()
            .flatten()
            .min()
        else {
            break;
        };
        if t > end_ns {
            break;
        }
        let now = t / tick_ns;
        if polled.map_or(true, |p| now > p) {
            server.close_intervals(Duration::from_nanos(t));
            while let Some(expired) = server.probe.poll(now) {
                let lateness = now.checked_sub(expired.deadline);
                server.fired(&expired, lateness)?;
            }
            polled = Some(now);
        }
        if response_ns == Some(t) {
            server.respond();
        } else if let (Some(a), Some(at)) = (arrival, arrival_ns) {
            if at == t {
                server.arrive(a)?;
                arrival = generator.next_arrival();
            }
        }
        events = events.wrapping_add(1);
        if events % (1 << 16) == 0 {
            progress.set_position(t / 1_000_000);
        }
    }
    progress.set_position(end_ns / 1_000_000);
    let end_tick = end_ns / tick_ns;
    Ok(server.finish(Clock::Virtual, end_tick, workload.duration, wall))
}

#[cfg(test)]
mod tests {
    use super::*;
    use tickwheel::{Kind, Options};

    fn small() -> Workload {
        Workload {
            connections: 2_000,
            rate: 40_000.0,
            duration: Duration::from_secs(3),
            idle_timeout: Duration::from_millis(700),
            request_timeout: Duration::from_millis(40),
            slow_fraction: 0.05,
            tick: Duration::from_millis(1),
            seed: 11,
        }
    }

    fn drive(kind: Kind, w: &Workload) -> Outcome {
        let timer = kind.build::<u64>(Options::new()).unwrap();
        run(timer, w, 0, &ProgressBar::hidden()).unwrap()
    }

    #[test]
    fn accounting_balances_and_agrees_across_implementations() {
        let w = small();
        let outcomes: Vec<Outcome> = Kind::ALL.iter().map(|&k| drive(k, &w)).collect();
        for o in &outcomes {
            assert_eq!(
                o.scheduled,
                o.fired + o.cancelled + o.overdue_at_end + o.pending_at_end,
                "{}: scheduled = fired + cancelled + overdue + pending",
                o.timer
            );
            assert_eq!(o.early_fires, 0, "{}", o.timer);
            assert_eq!(o.overdue_at_end, 0, "{}", o.timer);
            assert_eq!(o.fired, o.idle_fired + o.request_fired);
            assert_eq!(o.stats.inserted, o.scheduled);
            assert_eq!(o.stats.cancelled, o.cancelled);
            assert_eq!(o.stats.reset, o.reset);
            assert_eq!(o.stats.fired, o.fired);
            assert_eq!(o.lateness.count(), o.fired);
            // Every arrival inserts a deadline and resets or reopens its connection.
            assert_eq!(o.reset + (o.scheduled - o.arrivals - 2_000), o.arrivals);
            assert!(o.request_fired > 0 && o.idle_fired > 0 && o.cancelled > 0);
            // A late response finds its deadline already fired.
            assert!(o.late_responses <= o.request_fired);
            assert_eq!(
                o.lateness.max(),
                0,
                "{} polls at every next_deadline",
                o.timer
            );
        }
        let key = |o: &Outcome| (o.scheduled, o.cancelled, o.reset, o.fired, o.pending_at_end);
        for o in &outcomes[1..] {
            assert_eq!(
                key(o),
                key(&outcomes[0]),
                "{} vs {}",
                o.timer,
                outcomes[0].timer
            );
        }
        // About 5 % of requests are slow, so about 5 % of deadlines fire.
        let share = outcomes[0].request_fired as f64 / outcomes[0].arrivals as f64;
        assert!((0.04..0.06).contains(&share), "{share}");
    }

    #[test]
    fn one_interval_per_second_of_run_time() {
        let o = drive(Kind::Hierarchical, &small());
        assert_eq!(o.lateness_intervals.len(), 3);
        assert_eq!(o.cost_intervals.len(), 3);
        assert!(o
            .lateness_intervals
            .iter()
            .all(|i| i.length == Duration::from_secs(1)));
    }
}
