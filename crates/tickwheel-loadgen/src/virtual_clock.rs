//! The virtual-clock driver: deterministic discrete-event time, with the loop's own work
//! charged.
//!
//! The timer is driven exactly as a single-threaded event loop would drive it. Three sources of
//! events are merged in time order: the next request arrival, the next response, and the
//! timer's own `next_deadline()` (the loop's wake-up). At each event the loop first polls the
//! timer at the event's tick (rounded down) until it yields nothing — whenever the tick has
//! advanced since the last poll; within one tick nothing new can come due, because every
//! deadline set in a tick lies in a later tick — and then handles the event.
//!
//! **Which events happen, in which order, and what they do to the timer depend only on the
//! seed**: every call gets the tick of the event's intended time. So the counts are identical
//! across implementations and repetitions, and the run checks that they are.
//!
//! **When the loop handles them depends on the timer**: the loop keeps its own clock, which
//! each timer call advances by its measured cost (see [`Probe`](crate::measure::Probe)) and
//! each event (arrival, response, fired timer) by `--handler-cost`. An event that comes due
//! while the loop is busy is handled when the loop is free, in the same order as before. A fired
//! timer is handed to the application at the loop's clock just after the `poll` that returned
//! it, so:
//!
//! - lateness = hand-over instant − the timer's intended deadline instant, in ns. It includes
//!   tick rounding, the same for every implementation: the deadline rounds up to its tick and
//!   the loop wakes at tick boundaries, so with a 1 ms tick a timer is up to 1 ms late from
//!   rounding alone;
//! - a slow call (a lazy-heap rebuild, 0.6 ms at 100,000 timers) makes every timer due behind
//!   it late by as much.
//!
//! **The timer's own lateness.** A measured cost includes whatever stopped the thread during the
//! call: on a busy machine a preemption of several milliseconds lands in a few calls, and every
//! timer due behind them is late by as much, whichever implementation runs. So with `--repeat`
//! 2 or more (and `--lateness loop`), every repetition notes each call's cost in a
//! [`CallCosts`] log, in call order, keeping each call's minimum over the repetitions: the seed
//! fixes the calls, so call `i` is the same call in every repetition, as
//! [`slowest`](crate::slowest) relies on too. Then one more, *charged* pass drives the same
//! workload on a fresh timer with each call charged its minimum cost instead of timed. Its
//! lateness is the headline (`--lateness-costs min`, the default): the timer's own, with the
//! machine's preemptions left out unless one hit the same call in every repetition. The charged
//! pass must make exactly the calls the repetitions made (the log checks their number and kinds,
//! the caller the outcome's counts); otherwise the run fails with [`Error::Contract`].
//! `--lateness-costs measured` shows the repetitions' own lateness instead; `report.json` keeps
//! both.
//!
//! With `--lateness ticks` lateness is instead `(poll tick − deadline tick) × tick`: 0 for a
//! correct timer, since the loop wakes at every `next_deadline()`.

use std::time::{Duration, Instant};

use indicatif::ProgressBar;
use tickwheel::{Tick, Timer};

use crate::config::{Clock, LatenessView, Workload};
use crate::counter::CallClock;
use crate::error::Error;
use crate::measure::CallCosts;
use crate::outcome::Outcome;
use crate::server::Server;
use crate::units::nanos;
use crate::workload::Generator;

/// [`run_then`] without a cost log or an end hook.
///
/// # Errors
/// [`Error::Contract`] when the timer breaks its contract in a way the loop cannot go on from.
#[cfg(test)]
pub(crate) fn run<X: Timer<u64>>(
    timer: X,
    workload: &Workload,
    view: LatenessView,
    clock: &CallClock,
    progress: &ProgressBar,
) -> Result<Outcome, Error> {
    run_then(timer, workload, view, clock, None, progress, |_| Ok(()))
}

/// Runs `workload` against `timer` on virtual time, timing calls with `clock`, every call's
/// cost noted in (or charged from) `costs`, calling `at_end` on the timer
/// once the workload is over, before the cost runs and the final drain (`--record` stops its
/// trace there).
///
/// # Errors
/// [`Error::Contract`] when the timer breaks its contract in a way the loop cannot go on from,
/// or when the run made other calls than the earlier repetitions of `costs`.
pub(crate) fn run_then<X: Timer<u64>>(
    timer: X,
    workload: &Workload,
    view: LatenessView,
    clock: &CallClock,
    costs: Option<CallCosts>,
    progress: &ProgressBar,
    at_end: impl FnOnce(&mut X) -> Result<(), Error>,
) -> Result<Outcome, Error> {
    let wall = Instant::now();
    let tick_ns = workload.tick_ns();
    let end_ns = nanos(workload.duration);
    let handler_ns = nanos(workload.handler_cost);
    let mut server = Server::open(timer, workload, clock, costs)?;
    let mut generator = Generator::new(workload);
    let mut arrival = generator.next_arrival();
    let mut polled: Option<Tick> = None;
    // The loop's own clock: when it is free to take the next event, in ns since the start.
    let mut free_ns: u64 = server.probe.take_spent_ns();
    progress.set_length(end_ns / 1_000_000);
    let mut events: u32 = 0;
    loop {
        let next = server.probe.next_deadline();
        free_ns = free_ns.saturating_add(server.probe.take_spent_ns());
        let wake_ns = next.map(|d| {
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
        free_ns = free_ns.max(t);
        let now = t / tick_ns;
        if polled.map_or(true, |p| now > p) {
            server.close_intervals(Duration::from_nanos(t));
            free_ns = poll_due(&mut server, now, free_ns, view, (tick_ns, handler_ns))?;
            polled = Some(now);
        }
        if response_ns == Some(t) {
            server.respond();
            free_ns = free_ns.saturating_add(handler_ns);
        } else if let (Some(a), Some(at)) = (arrival, arrival_ns) {
            if at == t {
                server.arrive(a)?;
                arrival = generator.next_arrival();
                free_ns = free_ns.saturating_add(handler_ns);
            }
        }
        free_ns = free_ns.saturating_add(server.probe.take_spent_ns());
        events = events.wrapping_add(1);
        if events % (1 << 16) == 0 {
            progress.set_position(t / 1_000_000);
        }
    }
    progress.set_position(end_ns / 1_000_000);
    at_end(server.probe.timer_mut())?;
    let end_tick = end_ns / tick_ns;
    server.finish(
        Clock::Virtual,
        end_tick.max(polled.unwrap_or(0)),
        workload.duration,
        wall,
        clock,
    )
}

/// Polls the timer at tick `now` until it yields nothing, each fired timer handed over at the
/// loop's clock `free_ns`; returns that clock, advanced by the calls and the handler's work.
fn poll_due<X: Timer<u64>>(
    server: &mut Server<X>,
    now: Tick,
    mut free_ns: u64,
    view: LatenessView,
    (tick_ns, handler_ns): (u64, u64),
) -> Result<u64, Error> {
    while let Some(expired) = server.probe.poll(now) {
        free_ns = free_ns.saturating_add(server.probe.take_spent_ns());
        let lateness = if now < expired.deadline {
            None
        } else {
            match view {
                LatenessView::Loop => free_ns.checked_sub(server.due_ns(&expired)),
                LatenessView::Ticks => Some((now - expired.deadline).saturating_mul(tick_ns)),
            }
        };
        server.fired(&expired, lateness)?;
        free_ns = free_ns.saturating_add(handler_ns);
    }
    Ok(free_ns.saturating_add(server.probe.take_spent_ns()))
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
            handler_cost: Duration::ZERO,
            herd: false,
        }
    }

    fn drive_view(kind: Kind, w: &Workload, view: LatenessView) -> Outcome {
        let timer = kind.build::<u64>(Options::new()).unwrap();
        run(timer, w, view, &CallClock::new(), &ProgressBar::hidden()).unwrap()
    }

    fn drive(kind: Kind, w: &Workload) -> Outcome {
        drive_view(kind, w, LatenessView::Ticks)
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
                "{} polls at every next_deadline, so tick lateness is 0",
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
    fn a_charged_pass_makes_the_same_calls_no_later_and_refuses_other_calls() {
        let w = small();
        let clock = CallClock::new();
        let drive_log = |w: &Workload, log: CallCosts| {
            let timer = Kind::Hashed.build::<u64>(Options::new()).unwrap();
            let view = LatenessView::Loop;
            let hidden = ProgressBar::hidden();
            run_then(timer, w, view, &clock, Some(log), &hidden, |_| Ok(()))
        };
        let mut log = CallCosts::new();
        let mut reps = Vec::new();
        for _ in 0..2 {
            let mut o = drive_log(&w, log).unwrap();
            log = o.call_costs.take().unwrap();
            reps.push(o);
        }
        assert_eq!(log.len() as u64, reps[0].timer_calls);
        let key = |o: &Outcome| (o.scheduled, o.cancelled, o.reset, o.fired, o.timer_calls);
        let mut charged = drive_log(&w, log.clone().charging()).unwrap();
        assert_eq!(key(&charged), key(&reps[0]));
        let calls = charged.call_costs.take().unwrap().calls().unwrap();
        assert_eq!(calls.total(), charged.timer_calls);
        // Each call costs at most what it cost in either repetition, so each fire is handed
        // over no later: every percentile is at most either repetition's.
        for rep in &reps {
            for q in [0.5, 0.9, 0.99, 0.999, 1.0] {
                assert!(
                    charged.lateness.quantile(q) <= rep.lateness.quantile(q),
                    "q {q}: {} > {}",
                    charged.lateness.quantile(q),
                    rep.lateness.quantile(q)
                );
            }
        }
        // Another seed makes other calls: the charged pass is refused, never shown.
        let mut other = w.clone();
        other.seed += 1;
        let err = drive_log(&other, log.charging()).unwrap_err();
        assert!(matches!(err, Error::Contract(_)), "{err}");
        assert!(err.to_string().contains("charged pass"), "{err}");
    }

    #[test]
    fn the_preallocation_covers_every_timer_pending_at_once() {
        let w = small();
        for kind in Kind::ALL {
            let o = drive(kind, &w);
            // Idle timers alone fill the connections; request deadlines come on top.
            assert!(o.peak_live > u64::from(w.connections), "{}", o.timer);
            assert!(
                o.peak_live <= w.timers_to_preallocate() as u64,
                "{}: {} pending at once, {} preallocated",
                o.timer,
                o.peak_live,
                w.timers_to_preallocate()
            );
        }
        // An absurd rate reserves a bounded amount, not its product with the timeout.
        let mut huge = w.clone();
        huge.rate = 1e15;
        huge.request_timeout = Duration::from_secs(3_600);
        assert_eq!(
            huge.timers_to_preallocate(),
            2_000 + crate::config::MAX_PREALLOCATED_REQUESTS
        );
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

    #[test]
    fn last_interval_runs_to_the_end_and_keeps_every_fire() {
        let mut w = small();
        w.duration = Duration::from_millis(2_500);
        let o = drive(Kind::Hierarchical, &w);
        let lengths: Vec<Duration> = o.lateness_intervals.iter().map(|i| i.length).collect();
        assert_eq!(
            lengths,
            [1000, 1000, 500].map(Duration::from_millis),
            "whole seconds, then the rest"
        );
        let mut total = 0;
        for i in &o.lateness_intervals {
            let h: hdrhistogram::Histogram<u64> = hdrhistogram::serialization::Deserializer::new()
                .deserialize(&mut i.encoded.as_slice())
                .unwrap();
            total += h.len();
        }
        assert_eq!(total, o.lateness.count(), "the intervals hold every fire");
    }

    #[test]
    fn loop_lateness_charges_costs_without_changing_what_happens() {
        let w = small();
        let ticks = drive_view(Kind::Hierarchical, &w, LatenessView::Ticks);
        let looped = drive_view(Kind::Hierarchical, &w, LatenessView::Loop);
        let mut busy = w.clone();
        busy.handler_cost = Duration::from_micros(20);
        let handled = drive_view(Kind::Hierarchical, &busy, LatenessView::Loop);
        let key = |o: &Outcome| {
            (
                o.scheduled,
                o.cancelled,
                o.reset,
                o.fired,
                o.idle_fired,
                o.pending_at_end,
            )
        };
        assert_eq!(key(&ticks), key(&looped), "the view changes no event");
        assert_eq!(key(&ticks), key(&handled), "a busy loop changes no event");
        for o in [&looped, &handled] {
            assert_eq!(o.early_fires, 0);
            assert_eq!(o.lateness.count(), o.fired);
        }
        // Tick rounding alone: deadlines are uniform within their tick, so the median fire is
        // about half a tick late, never a whole tick at p50.
        let p50 = looped.lateness.quantile(0.5);
        assert!((200_000..800_000).contains(&p50), "p50 {p50} ns");
        // 20 µs per event at 40k requests/s (two events each) keeps the loop 160 % busy: it
        // falls further and further behind, and every fire shows it.
        assert!(
            handled.lateness.quantile(0.5) > 10 * looped.lateness.quantile(0.5),
            "{} vs {}",
            handled.lateness.quantile(0.5),
            looped.lateness.quantile(0.5)
        );
        assert!(handled.lateness.max() > 100_000_000);
    }
}
