//! What recording costs: the hierarchical wheel bare and under a trace `Recorder` (writing to
//! `io::sink()`), on the churn workloads at 100k timers. Ids `trace/<workload>/<impl>/100000`.
//!
//! ```sh
//! cargo bench -p tickwheel-benches --bench trace
//! ```

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use tickwheel::HierarchicalWheel;
use tickwheel_benches::workload::{Runner, Workload};
use tickwheel_benches::{Adapter, Recorded, Tw};

const N: usize = 100_000;

fn one<A: Adapter>(c: &mut Criterion, workload: Workload) {
    let mut group = c.benchmark_group(format!("trace/{}", workload.name()));
    group.throughput(Throughput::Elements(workload.elements(N)));
    let mut runner: Option<Runner<A>> = None;
    group.bench_function(BenchmarkId::new(A::NAME, N), |b| {
        b.iter_custom(|iters| {
            runner
                .get_or_insert_with(|| Runner::new(workload, N))
                .run(iters)
        });
    });
    group.finish();
}

fn trace(c: &mut Criterion) {
    for workload in [
        Workload::ChurnIo,
        Workload::ChurnRandom,
        Workload::ResetLater,
    ] {
        one::<Tw<HierarchicalWheel<u64>>>(c, workload);
        one::<Recorded>(c, workload);
    }
}

criterion_group!(benches, trace);
criterion_main!(benches);
