//! The criterion suite: every workload of `tickwheel_benches::workload` at every size, on the
//! four tickwheel implementations and the five peers. Ids are `workload/implementation/size`;
//! throughput is in elements (operations), so criterion also reports operations per second.
//!
//! Fresh-structure workloads (insert, insert_cancel, expire) build their structure outside the
//! timed region each iteration (`iter_custom`) and use flat sampling; steady-state workloads
//! build theirs once, on first use, so a filtered-out benchmark costs nothing.
//!
//! `scripts/bench.sh` runs this and turns the results into `docs/bench-results.md`.

use criterion::measurement::WallTime;
use criterion::{
    criterion_group, criterion_main, BenchmarkGroup, BenchmarkId, Criterion, SamplingMode,
    Throughput,
};
use tickwheel_benches::workload::{Runner, Workload, SIZES};
use tickwheel_benches::{for_each_adapter, Adapter};

/// One implementation on one workload at one size.
fn one<A: Adapter>(group: &mut BenchmarkGroup<'_, WallTime>, workload: Workload, n: usize) {
    let mut runner: Option<Runner<A>> = None;
    group.bench_function(BenchmarkId::new(A::NAME, n), |b| {
        b.iter_custom(|iters| {
            runner
                .get_or_insert_with(|| Runner::new(workload, n))
                .run(iters)
        });
    });
}

/// Every workload, size and implementation.
fn timers(c: &mut Criterion) {
    for workload in Workload::ALL {
        let mut group = c.benchmark_group(workload.name());
        if workload.is_fresh() {
            group.sampling_mode(SamplingMode::Flat);
        }
        for n in SIZES {
            group.throughput(Throughput::Elements(workload.elements(n)));
            for_each_adapter!(A => one::<A>(&mut group, workload, n));
        }
        group.finish();
    }
}

criterion_group!(benches, timers);
criterion_main!(benches);
