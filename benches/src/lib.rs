//! Benchmark support for tickwheel: adapters that let one benchmark function drive every
//! tickwheel implementation and the peers a user would pick instead (see `DESIGN.md` §8).
//!
//! The criterion benchmarks live in `benches/`; `scripts/bench.sh` runs them and writes the
//! comparison table.
