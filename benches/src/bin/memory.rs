//! Memory per live timer: for each implementation and peer, a fresh process inserts 1M timers
//! (`u64` payloads, the `insert` workload's deadlines, no preallocation) and reports the growth
//! of its resident set divided by 1M.
//!
//! Run without arguments it starts itself once per implementation (`memory --one NAME`), so one
//! structure's freed pages never hide another's growth, and prints a tab-separated table:
//! `name  peak_rss_bytes_per_timer  rss_bytes_per_timer  allocated_bytes_per_timer`
//! (the last is the structure's own count where it has one, `-` otherwise).

use std::process::{Command, ExitCode};

use tickwheel_benches::workload::insert_deadlines;
use tickwheel_benches::{for_each_adapter, Adapter};

/// Timers per measurement.
const TIMERS: usize = 1_000_000;

/// A `kB` field of `/proc/self/status`, in bytes.
fn status_bytes(field: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with(field))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// Builds `TIMERS` timers in `A` and prints one table row.
fn measure<A: Adapter>() -> Result<(), String> {
    let deadlines = insert_deadlines(TIMERS);
    let mut timer = A::with_capacity(0);
    // Reset the peak (VmHWM) to the current resident set; best effort.
    let _ = std::fs::write("/proc/self/clear_refs", "5");
    let before = status_bytes("VmRSS:").ok_or("no VmRSS in /proc/self/status")?;
    timer.scope(|t| {
        for (i, &d) in deadlines.iter().enumerate() {
            t.insert(d, i as u64);
        }
    });
    let peak = status_bytes("VmHWM:").ok_or("no VmHWM in /proc/self/status")?;
    let after = status_bytes("VmRSS:").ok_or("no VmRSS in /proc/self/status")?;
    assert_eq!(timer.len(), TIMERS);
    let per = |bytes: u64| bytes as f64 / TIMERS as f64;
    let allocated = timer
        .allocated_bytes()
        .map_or_else(|| "-".to_owned(), |b| format!("{:.1}", per(b as u64)));
    println!(
        "{}\t{:.1}\t{:.1}\t{}",
        A::NAME,
        per(peak.saturating_sub(before)),
        per(after.saturating_sub(before)),
        allocated
    );
    Ok(())
}

/// Measures the implementation called `name` in this process.
fn one(name: &str) -> Result<(), String> {
    let mut result = Err(format!("unknown implementation `{name}`"));
    for_each_adapter!(A => if A::NAME == name {
        result = measure::<A>();
    });
    result
}

/// Starts one child process per implementation and relays their rows.
fn all() -> Result<(), String> {
    let exe = std::env::current_exe().map_err(|e| format!("cannot find myself: {e}"))?;
    println!("name\tpeak_rss_bytes_per_timer\trss_bytes_per_timer\tallocated_bytes_per_timer");
    let mut names = Vec::new();
    for_each_adapter!(A => names.push(A::NAME));
    for name in names {
        let out = Command::new(&exe)
            .args(["--one", name])
            .output()
            .map_err(|e| format!("cannot run {}: {e}", exe.display()))?;
        if !out.status.success() {
            return Err(format!(
                "{name}: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
        print!("{}", String::from_utf8_lossy(&out.stdout));
    }
    Ok(())
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.as_slice() {
        [] => all(),
        [flag, name] if flag == "--one" => one(name),
        _ => Err("usage: memory [--one NAME]".to_owned()),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("memory: {e}");
            ExitCode::FAILURE
        }
    }
}
