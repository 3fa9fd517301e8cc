//! Schedule + cancel throughput through the thread-safe `TimerService`, with 1, 2 and 4
//! producer threads, against the obvious alternative: one `Mutex<HierarchicalWheel>` shared by
//! every thread.
//!
//! One element is one schedule plus one cancel, the life of an I/O timeout whose response came
//! in time. Each producer keeps a window of 64 live timeouts (schedule now + 5 s, cancel the one
//! scheduled 64 steps earlier), on top of 100,000 idle timers due in 60–120 s, so the structures
//! are not trivially small. Both sides read the clock and convert it to a tick per schedule, as
//! a server would. Criterion's time per element is wall time divided by the elements done by
//! all threads together, so with perfect scaling it halves from 1 to 2 threads (this machine
//! has 2 cores; 4 threads oversubscribe it).
//!
//! After criterion it prints a small table of wall and CPU nanoseconds per element for a fixed
//! run of each configuration: on a loaded machine wall time mostly shows waiting for a core,
//! CPU time shows what contention costs.
//!
//! ```text
//! cargo bench -p tickwheel-benches --bench service
//! cargo bench -p tickwheel-benches --bench service -- cpu   # only the CPU table
//! ```

use std::collections::VecDeque;
use std::sync::{Barrier, Mutex};
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use tickwheel::{HierarchicalWheel, TickClock, Timer, TimerKey};
use tickwheel_service::{Builder, Delivery, ServiceKey, TimerHandle, TimerService};

const THREADS: [usize; 3] = [1, 2, 4];
const PRELOAD: u64 = 100_000;
const WINDOW: usize = 64;
const TIMEOUT: Duration = Duration::from_secs(5);

/// Runs `per_thread(thread, ops)` on `threads` threads started together; returns the wall time.
fn timed(threads: usize, iters: u64, per_thread: impl Fn(usize, u64) + Sync) -> Duration {
    let barrier = Barrier::new(threads + 1);
    std::thread::scope(|s| {
        for t in 0..threads {
            let (barrier, per_thread) = (&barrier, &per_thread);
            // Spread the remainder so the threads together do exactly `iters`.
            let ops = iters / threads as u64 + u64::from((t as u64) < iters % threads as u64);
            s.spawn(move || {
                barrier.wait();
                per_thread(t, ops);
            });
        }
        barrier.wait();
        let start = Instant::now();
        // Leaving the scope joins every thread.
        start
    })
    .elapsed()
}

/// The baseline: one lock around one wheel.
struct Locked {
    timer: Mutex<HierarchicalWheel<u64>>,
    clock: TickClock,
}

impl Locked {
    fn new() -> Self {
        let clock = TickClock::new(TickClock::DEFAULT_RESOLUTION).unwrap();
        let mut timer = HierarchicalWheel::new();
        let now = Instant::now();
        for i in 0..PRELOAD {
            let at = clock.deadline_after(
                now,
                Duration::from_secs(60) + Duration::from_micros(i * 600),
            );
            timer.insert(at, i).unwrap();
        }
        Self {
            timer: Mutex::new(timer),
            clock,
        }
    }

    fn churn(&self, ops: u64) {
        let mut window: VecDeque<TimerKey> = VecDeque::with_capacity(WINDOW + 1);
        for i in 0..ops {
            let at = self.clock.deadline_after(Instant::now(), TIMEOUT);
            let key = self.timer.lock().unwrap().insert(at, i).unwrap();
            window.push_back(key);
            if window.len() > WINDOW {
                let old = window.pop_front().unwrap();
                self.timer.lock().unwrap().cancel(old).unwrap();
            }
        }
        let mut timer = self.timer.lock().unwrap();
        for key in window {
            timer.cancel(key).unwrap();
        }
    }
}

fn service() -> TimerService<u64> {
    let (delivery, _fired) = Delivery::channel();
    let service = Builder::new().build(delivery).unwrap();
    // Preload from several threads so the idle timers spread over the shards.
    std::thread::scope(|s| {
        for t in 0..4u64 {
            let h = service.handle();
            s.spawn(move || {
                for i in (t..PRELOAD).step_by(4) {
                    let _ = h
                        .schedule_after(Duration::from_secs(60) + Duration::from_micros(i * 600), i)
                        .unwrap();
                }
            });
        }
    });
    service
}

fn churn_service(handle: &TimerHandle<u64>, ops: u64) {
    let mut window: VecDeque<ServiceKey> = VecDeque::with_capacity(WINDOW + 1);
    for i in 0..ops {
        window.push_back(handle.schedule_after(TIMEOUT, i).unwrap());
        if window.len() > WINDOW {
            handle.cancel(window.pop_front().unwrap()).unwrap();
        }
    }
    for key in window {
        handle.cancel(key).unwrap();
    }
}

fn schedule_cancel(c: &mut Criterion) {
    let mut group = c.benchmark_group("service_schedule_cancel");
    group
        .throughput(Throughput::Elements(1))
        .sample_size(20)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    let locked = Locked::new();
    let service = service();
    for threads in THREADS {
        group.bench_function(BenchmarkId::new("mutex-wheel", threads), |b| {
            b.iter_custom(|iters| timed(threads, iters, |_, ops| locked.churn(ops)));
        });
        group.bench_function(BenchmarkId::new("service", threads), |b| {
            b.iter_custom(|iters| {
                let handles: Vec<_> = (0..threads).map(|_| service.handle()).collect();
                timed(threads, iters, |t, ops| churn_service(&handles[t], ops))
            });
        });
    }
    group.finish();
    assert_eq!(
        service.pending() as u64,
        PRELOAD,
        "every churned timer was cancelled"
    );
    let stats = service.stats();
    assert_eq!(stats.fired, 0, "nothing was due");
    eprintln!(
        "service: {} shards, {} scheduled, {} driver wake-ups, {} turns",
        stats.shards, stats.scheduled, stats.wakeups, stats.turns
    );
}

/// utime + stime of this process in seconds, from `/proc/self/stat` (10 ms resolution).
fn process_cpu() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    let fields: Vec<&str> = stat[stat.rfind(')')? + 2..].split_whitespace().collect();
    let ticks: u64 = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    Some(ticks as f64 / 100.0)
}

/// Wall time per element hides contention on a loaded machine (threads wait for a core, not
/// for a lock). CPU time per element does not: a contended lock burns CPU spinning and in
/// futex calls. So after criterion, run a fixed amount of work per configuration and print
/// both, with the load average, to stderr.
fn cpu_per_element(c: &mut Criterion) {
    let _ = c;
    const OPS: u64 = 3_000_000;
    let locked = Locked::new();
    let service = service();
    eprintln!(
        "\nschedule+cancel, {OPS} elements per run; load average {}",
        std::fs::read_to_string("/proc/loadavg")
            .unwrap_or_default()
            .trim()
    );
    eprintln!(
        "{:<14} {:>7} {:>12} {:>12}",
        "structure", "threads", "wall ns/el", "cpu ns/el"
    );
    for threads in THREADS {
        for name in ["mutex-wheel", "service"] {
            let cpu0 = process_cpu();
            let wall = if name == "service" {
                let handles: Vec<_> = (0..threads).map(|_| service.handle()).collect();
                timed(threads, OPS, |t, ops| churn_service(&handles[t], ops))
            } else {
                timed(threads, OPS, |_, ops| locked.churn(ops))
            };
            let cpu = process_cpu().zip(cpu0).map(|(b, a)| b - a);
            let per = |secs: f64| secs * 1e9 / OPS as f64;
            eprintln!(
                "{name:<14} {threads:>7} {:>12.1} {:>12}",
                per(wall.as_secs_f64()),
                cpu.map_or("n/a".into(), |c| format!("{:.1}", per(c)))
            );
        }
    }
}

criterion_group!(benches, schedule_cancel, cpu_per_element);
criterion_main!(benches);
