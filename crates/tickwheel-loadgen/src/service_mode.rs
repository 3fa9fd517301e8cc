//! `--service`: the thread-safe [`TimerService`] under load from several producer threads, on
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
use tickwheel_service::{
    Builder, Delivery, Fired, ServiceKey, ServiceStats, TimerHandle, TimerService,
};

use crate::config::{Clock, Workload};
use crate::counter::CallClock;
use crate::error::Error;
use crate::measure::{Calls, Hist, Interval, Intervals, COST_MAX, LATENESS_MAX, TRIM};
use crate::op::Op;
use crate::outcome::Outcome;
use crate::real_clock::sleep_until;
use crate::server::IDLE;
use crate::slowdown::Slowed;
use crate::units::nanos;
use crate::workload::{Arrival, Generator};

/// Lateness as the driver's callback records it.
struct FireLog {
    lateness: Hist,
    intervals: Intervals,
    early: u64,
    idle_fired: u64,
    request_fired: u64,
}

impl FireLog {
    fn new(run: Duration) -> Self {
        Self {
            lateness: Hist::new(LATENESS_MAX),
            intervals: Intervals::for_run(LATENESS_MAX, run),
            early: 0,
            idle_fired: 0,
            request_fired: 0,
        }
    }

    /// The log, once the driver that wrote it is gone.
    fn take(log: Arc<Mutex<FireLog>>, run: Duration) -> FireLog {
        match Arc::try_unwrap(log) {
            Ok(m) => m.into_inner().unwrap_or_else(|e| e.into_inner()),
            Err(shared) => {
                let guard = shared.lock().unwrap_or_else(|e| e.into_inner());
                FireLog {
                    lateness: guard.lateness.clone(),
                    intervals: Intervals::for_run(LATENESS_MAX, run),
                    early: guard.early,
                    idle_fired: guard.idle_fired,
                    request_fired: guard.request_fired,
                }
            }
        }
    }

    /// The delivery callback's work: lateness against the intended deadline, early-fire check.
    fn record(&mut self, idle_due: &[AtomicU64], origin: Instant, fired: &Fired<u64>) {
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
        let at = fired.fired_at.saturating_duration_since(origin);
        self.intervals.advance(at);
        if fired.fired_at < fired.deadline {
            self.early += 1;
        } else {
            let late = nanos(fired.fired_at.saturating_duration_since(intended));
            self.lateness.record(late);
            self.intervals.record(late);
        }
        if fired.payload & IDLE != 0 {
            self.idle_fired += 1;
        } else {
            self.request_fired += 1;
        }
    }
}

/// What one producer thread measured, or all of them together.
struct Produced {
    calls: Calls,
    cost: [Hist; 5],
    intervals: Vec<Vec<Interval>>,
    lag: Hist,
    arrivals: u64,
    intended: u64,
    busy: Duration,
    peak_live: u64,
}

impl Produced {
    /// Every thread's figures added up (`busy` and `peak_live` the threads' sum and most).
    fn merge(parts: Vec<Produced>) -> Produced {
        let mut total = Produced {
            calls: Calls::default(),
            cost: std::array::from_fn(|_| Hist::new(COST_MAX)),
            intervals: Vec::new(),
            lag: Hist::new(LATENESS_MAX),
            arrivals: 0,
            intended: 0,
            busy: Duration::ZERO,
            peak_live: 0,
        };
        for r in parts {
            total.calls.inserted += r.calls.inserted;
            total.calls.cancelled += r.calls.cancelled;
            total.calls.cancel_misses += r.calls.cancel_misses;
            total.calls.reset += r.calls.reset;
            for (sum, part) in total.cost.iter_mut().zip(&r.cost) {
                let _ = sum.hist.add(&part.hist);
                sum.clamped += part.clamped;
            }
            let _ = total.lag.hist.add(&r.lag.hist);
            total.lag.clamped += r.lag.clamped;
            total.arrivals += r.arrivals;
            total.intended += r.intended;
            total.busy += r.busy;
            total.peak_live = total.peak_live.max(r.peak_live);
            total.intervals.extend(r.intervals);
        }
        total
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
    let log = Arc::new(Mutex::new(FireLog::new(workload.duration)));
    let (service, origin) = start::<X>(workload, slowdown, &idle_due, &log)?;
    progress.set_length(nanos(workload.duration) / 1_000_000);
    let shared = Shared {
        origin,
        end: origin + workload.duration,
        idle_due: &idle_due,
        clock: call_clock,
    };
    let produced = producers(&service, workload, threads, &shared, progress)?;
    let stopped = Instant::now();
    let (stats, left, overdue_at_end) = stop(service, stopped);
    let rss_after = crate::measure::peak_rss_bytes().unwrap_or(0);
    let log = FireLog::take(log, workload.duration);
    let run_time = stopped - origin;
    let p = Produced::merge(produced);
    Ok(Outcome {
        timer: name,
        clock: Clock::Real,
        threads: Some(threads),
        arrivals: p.arrivals,
        arrivals_intended: p.intended,
        scheduled: stats.scheduled,
        cancelled: stats.cancelled,
        late_responses: p.calls.cancel_misses,
        reset: stats.reset,
        fired: stats.fired,
        idle_fired: log.idle_fired,
        request_fired: log.request_fired,
        drained: 0,
        early_fires: log.early,
        overdue_at_end,
        pending_at_end: left - overdue_at_end,
        timer_calls: p.calls.total() + stats.fired,
        busy: p.busy / threads as u32,
        run_time,
        wall: wall.elapsed(),
        cost: p.cost,
        cost_intervals: crate::measure::merge_intervals(&p.intervals),
        lateness: log.lateness,
        lateness_intervals: log.intervals.finish(run_time),
        arrival_lag: Some(p.lag),
        peak_live: p.peak_live,
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

/// The service of `X` shards, its calls slowed `slowdown` times, delivering into `log`; and
/// its clock's origin.
fn start<X: Timer<u64> + FromOptions + Send + 'static>(
    workload: &Workload,
    slowdown: f64,
    idle_due: &Arc<Vec<AtomicU64>>,
    log: &Arc<Mutex<FireLog>>,
) -> Result<(TimerService<u64, Slowed<X>>, Instant), Error> {
    // The clock's origin is known only once the service exists; nothing fires before it is set
    // because nothing is scheduled before.
    let origin_cell: Arc<OnceLock<Instant>> = Arc::new(OnceLock::new());
    let delivery = Delivery::callback({
        let (log, idle_due, origin_cell) = (log.clone(), idle_due.clone(), origin_cell.clone());
        move |fired: Fired<u64>| {
            let origin = *origin_cell.get_or_init(|| fired.deadline);
            let mut log = log.lock().unwrap_or_else(|e| e.into_inner());
            log.record(&idle_due, origin, &fired);
        }
    });
    let connections = workload.connections as usize;
    let service = Builder::new()
        .resolution(workload.tick)
        .preallocate(connections + connections / 4)
        .thread_name("loadgen-timer-driver")
        .build_with(delivery, |o| {
            X::from_options(o).map(|t| Slowed::new(t, slowdown, false))
        })
        .map_err(|e| Error::Input(format!("cannot build the timer service: {e}")))?;
    let origin = service.clock().origin();
    let _ = origin_cell.set(origin);
    Ok((service, origin))
}

/// Shuts `service` down at `stopped`: its counters, the timers it held, and how many of them
/// were due by then. It shuts down first (joining the driver, so every fire is delivered and
/// counted), then the counters are read: read before, the driver could still fire between.
fn stop<X: Timer<u64>>(
    service: TimerService<u64, X>,
    stopped: Instant,
) -> (ServiceStats, u64, u64) {
    let clock = service.clock();
    let now_tick = clock.now_tick(stopped);
    let handle = service.handle();
    let unfired = service.shutdown();
    let overdue = unfired
        .iter()
        .filter(|u| u.deadline.is_some_and(|d| clock.now_tick(d) <= now_tick))
        .count();
    (handle.stats(), unfired.len() as u64, overdue as u64)
}

/// Runs `threads` producer threads, each with its [`share`] of `workload`, and returns what
/// each measured.
fn producers<X: Timer<u64> + Send + 'static>(
    service: &TimerService<u64, X>,
    workload: &Workload,
    threads: usize,
    shared: &Shared<'_>,
    progress: &ProgressBar,
) -> Result<Vec<Produced>, Error> {
    thread::scope(|scope| {
        let producers: Vec<_> = (0..threads)
            .map(|t| {
                let (handle, shared) = (service.handle(), &shared);
                let (base, part) = share(workload, t, threads);
                let bar = if t == 0 {
                    progress.clone()
                } else {
                    ProgressBar::hidden()
                };
                thread::Builder::new()
                    .name(format!("loadgen-producer-{t}"))
                    .spawn_scoped(scope, move || produce(&handle, &part, base, shared, &bar))
                    .map_err(|e| Error::io("starting a producer thread", "(thread)", e))
            })
            .collect::<Result<_, _>>()?;
        producers
            .into_iter()
            .map(|p| {
                p.join()
                    .map_err(|_| Error::Contract("a producer thread panicked".into()))?
            })
            .collect::<Result<Vec<_>, Error>>()
    })
}

/// Producer thread `t`'s share of `workload`: its first connection's index among all, and its
/// connections, rate and seed.
fn share(workload: &Workload, t: usize, threads: usize) -> (usize, Workload) {
    let share = workload.connections / threads as u32;
    let mut part = workload.clone();
    part.connections = if t + 1 == threads {
        workload.connections - t as u32 * share
    } else {
        share
    };
    part.rate = workload.rate / threads as f64;
    part.seed = workload.seed.wrapping_add(t as u64);
    (t * share as usize, part)
}

/// What every producer thread shares: the run's start and end, the idle deadlines the
/// delivery callback reads, the call clock.
struct Shared<'a> {
    origin: Instant,
    end: Instant,
    idle_due: &'a [AtomicU64],
    clock: &'a CallClock,
}

/// One producer's connections: their idle timers' keys, the requests awaiting a response, and
/// every call it made, timed as [`Probe`](crate::measure::Probe) does.
struct Producer<'a, X: Timer<u64>> {
    handle: &'a TimerHandle<u64, X>,
    shared: &'a Shared<'a>,
    /// Its first connection's index among all.
    base: usize,
    tick_ns: u64,
    idle_ns: u64,
    request_ns: u64,
    idle: Vec<ServiceKey>,
    responses: BinaryHeap<Reverse<(u64, u64, ServiceKey)>>,
    seq: u64,
    calls: Calls,
    cost: [Hist; 5],
    intervals: Intervals,
}

impl<'a, X: Timer<u64>> Producer<'a, X> {
    /// A producer for `workload`'s connections, numbered from `base`, each idle timer
    /// scheduled.
    fn open_all(
        handle: &'a TimerHandle<u64, X>,
        workload: &Workload,
        base: usize,
        shared: &'a Shared<'a>,
    ) -> Result<Self, Error> {
        let connections = workload.connections as usize;
        let mut p = Self {
            handle,
            shared,
            base,
            tick_ns: workload.tick_ns(),
            idle_ns: nanos(workload.idle_timeout),
            request_ns: nanos(workload.request_timeout),
            idle: Vec::with_capacity(connections),
            responses: BinaryHeap::new(),
            seq: 0,
            calls: Calls::default(),
            cost: std::array::from_fn(|_| Hist::new(COST_MAX)),
            intervals: Intervals::for_run(COST_MAX, workload.duration),
        };
        for (i, due) in Generator::initial_idle_deadlines(workload).enumerate() {
            let key = p.open(i, due)?;
            shared.idle_due[base + i].store(due, Ordering::Relaxed);
            p.idle.push(key);
        }
        Ok(p)
    }

    /// Runs `f` as one `op` call, timed.
    #[inline]
    fn time<R>(&mut self, op: Op, f: impl FnOnce(&TimerHandle<u64, X>) -> R) -> R {
        let (result, ns) = self.shared.clock.time(|| f(self.handle));
        self.cost[op as usize].record(ns);
        self.intervals.record(ns);
        result
    }

    /// Schedules connection `i`'s idle timer at `due` ns.
    fn open(&mut self, i: usize, due: u64) -> Result<ServiceKey, Error> {
        let conn = (self.base + i) as u64;
        let tick = due.div_ceil(self.tick_ns);
        let key = self
            .time(Op::Insert, |h| h.schedule_at_tick(tick, IDLE | conn))
            .map_err(refused)?;
        self.calls.inserted += 1;
        Ok(key)
    }

    /// The response due first: its request deadline cancelled (a miss is a late response).
    fn respond(&mut self) {
        if let Some(Reverse((_, _, key))) = self.responses.pop() {
            match self.time(Op::Cancel, |h| h.cancel(key)) {
                Ok(_) => self.calls.cancelled += 1,
                Err(_) => self.calls.cancel_misses += 1,
            }
        }
    }

    /// An arrival: its connection's idle timer pushed later (reopened if it fired), and a
    /// request deadline scheduled until its response.
    fn arrive(&mut self, a: Arrival) -> Result<(), Error> {
        let i = a.conn as usize;
        let due = a.at_ns.saturating_add(self.idle_ns);
        let (key, tick) = (self.idle[i], due.div_ceil(self.tick_ns));
        if self.time(Op::Reset, |h| h.reset_at_tick(key, tick)).is_ok() {
            self.calls.reset += 1;
        } else {
            // The idle timer fired: the connection closed; this request reopens it.
            self.idle[i] = self.open(i, due)?;
        }
        self.shared.idle_due[self.base + i].store(due, Ordering::Relaxed);
        let request_due = a.at_ns.saturating_add(self.request_ns);
        let tick = request_due.div_ceil(self.tick_ns);
        let key = self
            .time(Op::Insert, |h| {
                h.schedule_at_tick(tick, request_due & !IDLE)
            })
            .map_err(refused)?;
        self.calls.inserted += 1;
        self.seq += 1;
        let at = a.at_ns.saturating_add(a.service_ns);
        self.responses.push(Reverse((at, self.seq, key)));
        Ok(())
    }
}

fn refused(e: tickwheel_service::ScheduleError<u64>) -> Error {
    Error::Contract(format!("the service refused a schedule: {e}"))
}

/// One producer thread: its share of connections and requests, through its own handle.
fn produce<X: Timer<u64>>(
    handle: &TimerHandle<u64, X>,
    workload: &Workload,
    base: usize,
    shared: &Shared<'_>,
    progress: &ProgressBar,
) -> Result<Produced, Error> {
    let origin = shared.origin;
    let mut p = Producer::open_all(handle, workload, base, shared)?;
    let mut generator = Generator::new(workload);
    let mut arrival = generator.next_arrival();
    let mut lag = Hist::new(LATENESS_MAX);
    let (mut arrivals, mut peak_live) = (0u64, 0u64);
    let mut last_check = origin;
    let mut now;
    loop {
        now = Instant::now();
        let now_ns = nanos(now.min(shared.end) - origin);
        let real_ns = nanos(now - origin);
        p.intervals.advance(now - origin);
        loop {
            let response_ns = p.responses.peek().map(|r| r.0 .0).filter(|&t| t <= now_ns);
            let arrival_ns = arrival.map(|a| a.at_ns).filter(|&t| t <= now_ns);
            match (response_ns, arrival_ns, arrival) {
                (Some(r), Some(a), _) if r <= a => p.respond(),
                (Some(_), None, _) => p.respond(),
                (_, Some(_), Some(a)) => {
                    arrival = generator.next_arrival();
                    arrivals += 1;
                    lag.record(real_ns.saturating_sub(a.at_ns));
                    p.arrive(a)?;
                }
                _ => break,
            }
        }
        if now >= shared.end {
            break;
        }
        if now.duration_since(last_check) >= Duration::from_millis(100) {
            peak_live = peak_live.max(handle.pending() as u64);
            progress.set_position(nanos(now - origin) / 1_000_000);
            last_check = now;
        }
        let next_response = p.responses.peek().map(|r| r.0 .0);
        let wake_ns = [arrival.map(|a| a.at_ns), next_response];
        sleep_until(origin, wake_ns.into_iter().flatten().min(), shared.end);
    }
    let calls = p.calls;
    let counts = [
        calls.inserted,
        calls.cancelled + calls.cancel_misses,
        calls.reset,
    ];
    let busy_ns: f64 = counts
        .iter()
        .zip(&p.cost)
        .map(|(&n, h)| n as f64 * h.trimmed_mean(TRIM))
        .sum();
    Ok(Produced {
        calls,
        cost: p.cost,
        intervals: vec![p.intervals.finish(now - origin)],
        lag,
        arrivals,
        intended: arrivals + generator.count_rest(arrival),
        busy: Duration::from_nanos(busy_ns as u64),
        peak_live,
    })
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
