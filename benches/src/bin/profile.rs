//! Runs one workload on one implementation for a fixed number of iterations, outside criterion,
//! so a profiler sees only that: `perf record`, or `valgrind --tool=callgrind` for instruction
//! and simulated cache-miss counts that do not depend on what else the machine is doing.
//!
//! ```sh
//! cargo build --release -p tickwheel-benches --bin profile
//! valgrind --tool=callgrind --cache-sim=yes target/release/profile churn_io tw-hierarchical 100000 200000
//! ```
//!
//! It prints the setup time and ns per operation of the timed part.

use std::process::ExitCode;
use std::time::Instant;

use tickwheel_benches::workload::{Runner, Workload};
use tickwheel_benches::{for_each_adapter, Adapter};

/// Builds the runner (untimed) and runs `iters` iterations.
fn profile<A: Adapter>(workload: Workload, n: usize, iters: u64) {
    let start = Instant::now();
    let mut runner = Runner::<A>::new(workload, n);
    let setup = start.elapsed();
    let timed = runner.run(iters);
    let ops = workload.elements(n) * iters;
    println!(
        "{}/{}/{n}: setup {setup:.2?}, {iters} iterations, {ops} operations, {:.1} ns/op",
        workload.name(),
        A::NAME,
        timed.as_nanos() as f64 / ops as f64
    );
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [workload, name, n, iters] = args.as_slice() else {
        eprintln!("usage: profile WORKLOAD IMPLEMENTATION N ITERATIONS");
        return ExitCode::from(2);
    };
    let Some(workload) = Workload::ALL.into_iter().find(|w| w.name() == workload) else {
        eprintln!("profile: unknown workload `{workload}`");
        return ExitCode::from(2);
    };
    let (Ok(n), Ok(iters)) = (n.parse::<usize>(), iters.parse::<u64>()) else {
        eprintln!("profile: N and ITERATIONS must be numbers");
        return ExitCode::from(2);
    };
    if name == tickwheel_benches::Floor::NAME {
        if matches!(workload, Workload::Expire | Workload::PollIdle) {
            eprintln!(
                "profile: the floor never fires; it has no `{}`",
                workload.name()
            );
            return ExitCode::from(2);
        }
        profile::<tickwheel_benches::Floor>(workload, n, iters);
        return ExitCode::SUCCESS;
    }
    if name == tickwheel_benches::Recorded::NAME {
        profile::<tickwheel_benches::Recorded>(workload, n, iters);
        return ExitCode::SUCCESS;
    }
    let mut found = false;
    for_each_adapter!(A => if A::NAME == name {
        found = true;
        profile::<A>(workload, n, iters);
    });
    if found {
        ExitCode::SUCCESS
    } else {
        eprintln!("profile: unknown implementation `{name}`");
        ExitCode::from(2)
    }
}
