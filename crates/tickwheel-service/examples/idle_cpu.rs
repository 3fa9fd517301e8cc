//! Measures the CPU an idle service uses while it holds many far-future timers.
//!
//! ```text
//! cargo run --release -p tickwheel-service --example idle_cpu              # 1M timers, 5 s
//! cargo run --release -p tickwheel-service --example idle_cpu -- 100000 10 # 100k timers, 10 s
//! ```
//! It schedules the timers 1–2 hours out, lets the driver settle, then reads the process's and
//! the driver thread's user + system time from `/proc` over the window. A sleeping driver uses
//! ~0; a 1 ms ticker (Netty's `HashedWheelTimer` default) would wake 1,000 times a second.

use std::time::{Duration, Instant};

use tickwheel_service::{Builder, Delivery, TimerService};

/// Linux reports times in clock ticks of 1/100 s (USER_HZ) in `/proc/*/stat`.
const TICKS_PER_SECOND: f64 = 100.0;
const DRIVER: &str = "idle-driver";

/// utime + stime from a `/proc/.../stat` line, in clock ticks.
fn cpu_ticks(stat: &str) -> Option<u64> {
    // Fields after the ")" that closes the name; utime and stime are fields 14 and 15.
    let fields: Vec<&str> = stat[stat.rfind(')')? + 2..].split_whitespace().collect();
    Some(fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?)
}

fn process_ticks() -> Option<u64> {
    cpu_ticks(&std::fs::read_to_string("/proc/self/stat").ok()?)
}

fn driver_ticks() -> Option<u64> {
    for task in std::fs::read_dir("/proc/self/task").ok()? {
        let dir = task.ok()?.path();
        if std::fs::read_to_string(dir.join("comm")).ok()?.trim() == DRIVER {
            return cpu_ticks(&std::fs::read_to_string(dir.join("stat")).ok()?);
        }
    }
    None
}

fn main() {
    let args: Vec<u64> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let timers = args.first().copied().unwrap_or(1_000_000);
    let seconds = args.get(1).copied().unwrap_or(5);
    let (delivery, _fired) = Delivery::<u64>::channel();
    let service: TimerService<u64> = Builder::new()
        .thread_name(DRIVER)
        .preallocate(timers as usize)
        .build(delivery)
        .expect("service");
    let start = Instant::now();
    std::thread::scope(|s| {
        for t in 0..4 {
            let h = service.handle();
            s.spawn(move || {
                for i in (t..timers).step_by(4) {
                    let out = Duration::from_secs(3_600) + Duration::from_millis(i % 3_600_000);
                    let _ = h.schedule_after(out, i).expect("unbounded");
                }
            });
        }
    });
    println!(
        "scheduled {timers} timers 1-2 h out in {:?} ({} shards)",
        start.elapsed(),
        service.stats().shards
    );
    std::thread::sleep(Duration::from_secs(1));
    let (p0, d0, w0) = (process_ticks(), driver_ticks(), service.stats().wakeups);
    let t0 = Instant::now();
    std::thread::sleep(Duration::from_secs(seconds));
    let wall = t0.elapsed().as_secs_f64();
    let (p1, d1, w1) = (process_ticks(), driver_ticks(), service.stats().wakeups);
    match (p0, p1, d0, d1) {
        (Some(p0), Some(p1), Some(d0), Some(d1)) => {
            let process = (p1 - p0) as f64 / TICKS_PER_SECOND;
            let driver = (d1 - d0) as f64 / TICKS_PER_SECOND;
            println!(
                "idle for {wall:.1} s: process CPU {process:.2} s ({:.3} %), driver thread CPU {driver:.2} s ({:.3} %), {} driver wake-ups",
                100.0 * process / wall,
                100.0 * driver / wall,
                w1 - w0
            );
        }
        _ => println!("/proc is not available: cannot measure CPU time here"),
    }
    assert_eq!(service.pending() as u64, timers);
}
