//! `--service`: the thread-safe [`TimerService`](tickwheel_service::TimerService) under load from several producer threads, on
//! the real clock.
//!
//! The workload is split evenly: producer thread `t` of `n` owns connections
//! `t·c/n .. (t+1)·c/n` and generates `rate/n` requests per second with seed `seed + t`, through
//! its own clone of the service handle. Each producer runs the same open-loop event loop as the
//! real-clock driver — arrivals and responses at their intended instants, sleeping in between —
//! but never polls: it schedules, cancels and resets, and the service's own driver thread fires.
//! A reset that finds its idle timer already fired (`KeyError::NotPending`) reopens the
//! connection with a new schedule; a cancel that finds it fired is a late response.
//!
//! Lateness is measured in the delivery callback on the driver thread: `fired_at` minus the
//! intended deadline (for an idle timer, the earlier of the deadline the producer last recorded
//! and the service's rounded-up deadline, so a reset racing the fire can only overstate it). An
//! early fire is `fired_at` before the service's deadline.
//!
//! Cost per call (schedule, cancel, reset) is timed in the producers as in [`Probe`](crate::measure::Probe)
//! — lock waits included, so contention shows — and merged over threads. The fire cost is the
//! driver's and is not sampled here. `ops_per_sec` is the call capacity: threads × calls ÷ time
//! spent inside calls. Bytes per timer is not reported (0 in the JSON, `n/a` in the table): the
//! service does not expose its shards' `allocated_bytes`, and RSS growth is dominated by thread
//! stacks and histograms at these sizes.
//!
//! Each implementation runs once per thread count in 1, 2, 4, … up to `--threads` (and
//! `--threads` itself), so the table shows how the service scales.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::thread;
use std::time::{Duration, Instant};

use indicatif::ProgressBar;
use tickwheel::{FromOptions, Stats, Timer};
use tickwheel_service::{Builder, Delivery, Fired, ServiceKey, TimerHandle};

use crate::config::{Clock, Workload};
use crate::counter::CallClock;
use crate::error::Error;
use crate::measure::{Calls, Hist, Interval, Intervals, COST_MAX, LATENESS_MAX, TRIM};
use crate::op::Op;
use crate::outcome::Outcome;
use crate::server::IDLE;
use crate::slowdown::Slowed;
use crate::units::nanos;
use crate::workload::Generator;

/// Lateness as the driver's callback records it.
struct FireLog {
    lateness: Hist,
    intervals: Intervals,
    early: u64,
    idle_fired: u64,
    request_fired: u64,
}

/// What one producer thread measured.
struct Produced {
    calls: Calls,
    cost: [Hist; 5],
    intervals: Vec<Interval>,
    lag: Hist,
    arrivals: u64,
    intended: u64,
    busy: Duration,
}

/// Every call timed, as [`Probe`](crate::measure::Probe) does.
struct Sampler {
    clock: CallClock,
    cost: [Hist; 5],
    intervals: Intervals,
}

impl Sampler {
    #[inline]
    fn time<R>(&mut self, op: Op, f: impl FnOnce() -> R) -> R {
        let (result, ns) = self.clock.time(f);
        self.cost[op as usize].record(ns);
        if op != Op::Idle {
            self.intervals.record(ns);
        }
        result
    }
}

/// Runs `workload` through a service of `X` shards with `threads` producers, the shards' calls
/// slowed `slowdown` times (see [`slowdown`](crate::slowdown)).
///
/// # Errors
/// [`Error::Input`] when the service cannot be built; [`Error::Contract`] when it refuses a
/// schedule of an unbounded service or a producer thread panics.
pub(crate) fn run<X>(
    name: &'static str,
    workload: &Workload,
    threads: usize,
    call_clock: &CallClock,
    slowdown: f64,
    progress: &ProgressBar,
) -> Result<Outcome, Error>
where
    X: Timer<u64> + FromOptions + Send + 'static,
{
    let wall = Instant::now();
    let started = std::time::SystemTime::now();
    let connections = workload.connections as usize;
    let idle_due: Arc<Vec<AtomicU64>> =
        Arc::new((0..connections).map(|_| AtomicU64::new(0)).collect());
    let log = Arc::new(Mutex::new(FireLog {
        lateness: Hist::new(LATENESS_MAX),
        intervals: Intervals::for_run(LATENESS_MAX, workload.duration),
        early: 0,
        idle_fired: 0,
        request_fired: 0,
    }));
    // The clock's origin is known only once the service exists; nothing fires before it is set
    // because nothing is scheduled before.
    let origin_cell: Arc<OnceLock<Instant>> = Arc::new(OnceLock::new());
    let delivery = Delivery::callback({
        let log = log.clone();
        let idle_due = idle_due.clone();
        let origin_cell = origin_cell.clone();
        move |fired: Fired<u64>| {
            let origin = *origin_cell.get_or_init(|| fired.deadline);
            record_fire(&log, &idle_due, origin, &fired);
        }
    });
    let service = Builder::new()
        .resolution(workload.tick)
        .preallocate(connections + connections / 4)
        .thread_name("loadgen-timer-driver")
        .build_with(delivery, |o| {
            X::from_options(o).map(|t| Slowed::new(t, slowdown))
        })
        .map_err(|e| Error::Input(format!("cannot build the timer service: {e}")))?;
    let clock = service.clock();
    let origin = clock.origin();
    let _ = origin_cell.set(origin);
    let end = origin + workload.duration;
    progress.set_length(nanos(workload.duration) / 1_000_000);

    let share = connections / threads;
    let mut producers = Vec::with_capacity(threads);
    for t in 0..threads {
        let base = t * share;
        let count = if t + 1 == threads {
            connections - base
        } else {
            share
        };
        let mut part = workload.clone();
        part.connections = count as u32;
        part.rate = workload.rate / threads as f64;
        part.seed = workload.seed.wrapping_add(t as u64);
        let handle = service.handle();
        let idle_due = idle_due.clone();
        let call_clock = call_clock.clone();
        let bar = if t == 0 {
            progress.clone()
        } else {
            ProgressBar::hidden()
        };
        producers.push(
            thread::Builder::new()
                .name(format!("loadgen-producer-{t}"))
                .spawn(move || {
                    produce(
                        &handle,
                        &part,
                        base,
                        origin,
                        end,
                        &idle_due,
                        &call_clock,
                        &bar,
                    )
                })
                .map_err(|e| Error::io("starting a producer thread", "(thread)", e))?,
        );
    }
    let mut results = Vec::with_capacity(threads);
    let mut peak_live = 0u64;
    for producer in producers {
        let produced = producer
            .join()
            .map_err(|_| Error::Contract("a producer thread panicked".into()))??;
        peak_live = peak_live.max(produced.1);
        results.push(produced.0);
    }
    let stopped = Instant::now();
    let now_tick = clock.now_tick(stopped);
    // Shut down first (joining the driver, so every fire is delivered and counted), then read
    // the counters: read before, the driver could still fire between the two.
    let handle = service.handle();
    let unfired = service.shutdown();
    let stats = handle.stats();
    let overdue_at_end = unfired
        .iter()
        .filter(|u| u.deadline.is_some_and(|d| clock.now_tick(d) <= now_tick))
        .count() as u64;
    let rss_after = crate::measure::peak_rss_bytes().unwrap_or(0);
    let log = match Arc::try_unwrap(log) {
        Ok(m) => m.into_inner().unwrap_or_else(|e| e.into_inner()),
        Err(shared) => {
            let guard = shared.lock().unwrap_or_else(|e| e.into_inner());
            FireLog {
                lateness: guard.lateness.clone(),
                intervals: Intervals::for_run(LATENESS_MAX, workload.duration),
                early: guard.early,
                idle_fired: guard.idle_fired,
                request_fired: guard.request_fired,
            }
        }
    };
    let run_time = stopped - origin;
    let lateness_intervals = log.intervals;
    let mut calls = Calls::default();
    let mut cost: [Hist; 5] = std::array::from_fn(|_| Hist::new(COST_MAX));
    let mut lag = Hist::new(LATENESS_MAX);
    let (mut arrivals, mut intended, mut busy) = (0, 0, Duration::ZERO);
    let mut per_thread_intervals = Vec::new();
    for r in results {
        calls.inserted += r.calls.inserted;
        calls.cancelled += r.calls.cancelled;
        calls.cancel_misses += r.calls.cancel_misses;
        calls.reset += r.calls.reset;
        for (total, part) in cost.iter_mut().zip(&r.cost) {
            let _ = total.hist.add(&part.hist);
            total.clamped += part.clamped;
        }
        let _ = lag.hist.add(&r.lag.hist);
        lag.clamped += r.lag.clamped;
        arrivals += r.arrivals;
        intended += r.intended;
        busy += r.busy;
        per_thread_intervals.push(r.intervals);
    }
    calls.fired = stats.fired;
    Ok(Outcome {
        timer: name,
        clock: Clock::Real,
        threads: Some(threads),
        arrivals,
        arrivals_intended: intended,
        scheduled: stats.scheduled,
        cancelled: stats.cancelled,
        late_responses: calls.cancel_misses,
        reset: stats.reset,
        fired: stats.fired,
        idle_fired: log.idle_fired,
        request_fired: log.request_fired,
        drained: 0,
        early_fires: log.early,
        overdue_at_end,
        pending_at_end: unfired.len() as u64 - overdue_at_end,
        timer_calls: calls.total(),
        busy: busy / threads as u32,
        run_time,
        wall: wall.elapsed(),
        cost,
        cost_intervals: crate::measure::merge_intervals(&per_thread_intervals),
        lateness: log.lateness,
        lateness_intervals: lateness_intervals.finish(run_time),
        arrival_lag: Some(lag),
        peak_live,
        // The service does not expose its shards' allocated_bytes; see the module doc.
        allocated_at_peak: 0,
        peak_rss_bytes: Some(rss_after),
        started,
        run_costs: None,
        stats: Stats {
            inserted: stats.scheduled,
            cancelled: stats.cancelled,
            reset: stats.reset,
            fired: stats.fired,
            ..Stats::default()
        },
        slow_calls: crate::slowest::SlowCalls::default(),
        call_costs: None,
        min_cost: None,
    })
}

/// The delivery callback's work: lateness against the intended deadline, early-fire check.
fn record_fire(log: &Mutex<FireLog>, idle_due: &[AtomicU64], origin: Instant, fired: &Fired<u64>) {
    let intended = if fired.payload & IDLE != 0 {
        let conn = (fired.payload & !IDLE) as usize;
        let recorded = idle_due
            .get(conn)
            .map_or(u64::MAX, |d| d.load(Ordering::Relaxed));
        let recorded = origin.checked_add(Duration::from_nanos(recorded));
        recorded.map_or(fired.deadline, |r| r.min(fired.deadline))
    } else {
        origin + Duration::from_nanos(fired.payload)
    };
    let mut log = log.lock().unwrap_or_else(|e| e.into_inner());
    let at = fired.fired_at.saturating_duration_since(origin);
    log.intervals.advance(at);
    if fired.fired_at < fired.deadline {
        log.early += 1;
    } else {
        let late = nanos(fired.fired_at.saturating_duration_since(intended));
        log.lateness.record(late);
        log.intervals.record(late);
    }
    if fired.payload & IDLE != 0 {
        log.idle_fired += 1;
    } else {
        log.request_fired += 1;
    }
}

/// One producer thread: its share of connections and requests, through its own handle.
/// Returns what it measured and the most timers it saw pending.
#[allow(clippy::too_many_arguments)]
fn produce<X: Timer<u64>>(
    handle: &TimerHandle<u64, X>,
    workload: &Workload,
    base: usize,
    origin: Instant,
    end: Instant,
    idle_due: &[AtomicU64],
    clock: &CallClock,
    progress: &ProgressBar,
) -> Result<(Produced, u64), Error> {
    let tick_ns = workload.tick_ns();
    let tick = |ns: u64| ns.div_ceil(tick_ns);
    let idle_ns = nanos(workload.idle_timeout);
    let request_ns = nanos(workload.request_timeout);
    let mut sampler = Sampler {
        clock: clock.clone(),
        cost: std::array::from_fn(|_| Hist::new(COST_MAX)),
        intervals: Intervals::for_run(COST_MAX, workload.duration),
    };
    let mut calls = Calls::default();
    let refused = |e: tickwheel_service::ScheduleError<u64>| {
        Error::Contract(format!("the service refused a schedule: {e}"))
    };
    let mut idle: Vec<ServiceKey> = Vec::with_capacity(workload.connections as usize);
    for (i, due) in Generator::initial_idle_deadlines(workload).enumerate() {
        let conn = base + i;
        let key = sampler
            .time(Op::Insert, || {
                handle.schedule_at_tick(tick(due), IDLE | conn as u64)
            })
            .map_err(refused)?;
        idle_due[conn].store(due, Ordering::Relaxed);
        calls.inserted += 1;
        idle.push(key);
    }
    let mut generator = Generator::new(workload);
    let mut arrival = generator.next_arrival();
    let mut responses: BinaryHeap<Reverse<(u64, u64, ServiceKey)>> = BinaryHeap::new();
    let mut lag = Hist::new(LATENESS_MAX);
    let (mut arrivals, mut seq, mut peak_live) = (0u64, 0u64, 0u64);
    let mut last_check = origin;
    let mut now;
    loop {
        now = Instant::now();
        let now_ns = nanos(now.min(end) - origin);
        let real_ns = nanos(now - origin);
        sampler.intervals.advance(now - origin);
        loop {
            let response_ns = responses.peek().map(|r| r.0 .0).filter(|&t| t <= now_ns);
            let arrival_ns = arrival.map(|a| a.at_ns).filter(|&t| t <= now_ns);
            let take_response = match (response_ns, arrival_ns) {
                (Some(r), Some(a)) => r <= a,
                (Some(_), None) => true,
                (None, Some(_)) => false,
                (None, None) => break,
            };
            if take_response {
                if let Some(Reverse((_, _, key))) = responses.pop() {
                    match sampler.time(Op::Cancel, || handle.cancel(key)) {
                        Ok(_) => calls.cancelled += 1,
                        Err(_) => calls.cancel_misses += 1,
                    }
                }
                continue;
            }
            let Some(a) = arrival else { break };
            arrival = generator.next_arrival();
            arrivals += 1;
            lag.record(real_ns.saturating_sub(a.at_ns));
            let i = a.conn as usize;
            let conn = base + i;
            let due = a.at_ns.saturating_add(idle_ns);
            if sampler
                .time(Op::Reset, || handle.reset_at_tick(idle[i], tick(due)))
                .is_ok()
            {
                calls.reset += 1;
            } else {
                // The idle timer fired: the connection closed; this request reopens it.
                idle[i] = sampler
                    .time(Op::Insert, || {
                        handle.schedule_at_tick(tick(due), IDLE | conn as u64)
                    })
                    .map_err(refused)?;
                calls.inserted += 1;
            }
            idle_due[conn].store(due, Ordering::Relaxed);
            let request_due = a.at_ns.saturating_add(request_ns);
            let key = sampler
                .time(Op::Insert, || {
                    handle.schedule_at_tick(tick(request_due), request_due & !IDLE)
                })
                .map_err(refused)?;
            calls.inserted += 1;
            seq += 1;
            responses.push(Reverse((a.at_ns.saturating_add(a.service_ns), seq, key)));
        }
        if now >= end {
            break;
        }
        if now.duration_since(last_check) >= Duration::from_millis(100) {
            peak_live = peak_live.max(handle.pending() as u64);
            progress.set_position(nanos(now - origin) / 1_000_000);
            last_check = now;
        }
        let wake_ns = [arrival.map(|a| a.at_ns), responses.peek().map(|r| r.0 .0)]
            .into_iter()
            .flatten()
            .min();
        let wake = wake_ns
            .and_then(|ns| origin.checked_add(Duration::from_nanos(ns)))
            .map_or(end, |w| w.min(end));
        let before = Instant::now();
        if wake > before {
            thread::sleep(wake - before);
        }
    }
    let mut intended = arrivals;
    let end_ns = nanos(workload.duration);
    while arrival.is_some_and(|a| a.at_ns <= end_ns) {
        intended += 1;
        arrival = generator.next_arrival();
    }
    let counts = [
        calls.inserted,
        calls.cancelled + calls.cancel_misses,
        calls.reset,
        0,
        0,
    ];
    let busy_ns: f64 = counts
        .iter()
        .zip(&sampler.cost)
        .map(|(&n, h)| n as f64 * h.trimmed_mean(TRIM))
        .sum();
    Ok((
        Produced {
            calls,
            cost: sampler.cost,
            intervals: sampler.intervals.finish(now - origin),
            lag,
            arrivals,
            intended,
            busy: Duration::from_nanos(busy_ns as u64),
        },
        peak_live,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use tickwheel::HierarchicalWheel;

    #[test]
    fn service_run_keeps_strict_invariants() {
        let w = Workload {
            connections: 400,
            rate: 4_000.0,
            duration: Duration::from_millis(500),
            idle_timeout: Duration::from_millis(150),
            request_timeout: Duration::from_millis(20),
            slow_fraction: 0.1,
            tick: Duration::from_millis(1),
            seed: 5,
            handler_cost: Duration::ZERO,
            herd: false,
        };
        let clock = CallClock::new();
        let o = run::<HierarchicalWheel<u64>>(
            "hierarchical",
            &w,
            2,
            &clock,
            1.0,
            &ProgressBar::hidden(),
        )
        .unwrap();
        assert_eq!(o.early_fires, 0);
        assert_eq!(
            o.scheduled,
            o.fired + o.cancelled + o.overdue_at_end + o.pending_at_end
        );
        assert_eq!(o.fired, o.idle_fired + o.request_fired);
        assert_eq!(o.lateness.count(), o.fired);
        assert!(o.fired > 0 && o.cancelled > 0 && o.reset > 0);
        assert!(o.lateness.max() < 2_000_000_000);
        assert_eq!(o.threads, Some(2));
    }
}
