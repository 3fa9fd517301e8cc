#!/usr/bin/env bash
# What CI runs, and what a person runs before pushing: format, lints, docs, then the tests.
set -euo pipefail
cd "$(dirname "$0")/.."

# A fresh machine has the toolchain; make sure the lint components are there too.
if command -v rustup >/dev/null 2>&1; then
  rustup component add rustfmt clippy >/dev/null 2>&1 || true
fi

echo "== cargo fmt"
cargo fmt --all --check
echo "== cargo clippy"
cargo clippy --workspace --all-targets --features tickwheel-async/stream,tickwheel-async/hyper -- -D warnings
echo "== cargo doc (private items too: the module docs are the design notes)"
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --document-private-items --quiet
echo "== core crate without std (no_std + alloc, as docs/design.md states)"
cargo build -p tickwheel --no-default-features --quiet
echo "== benchmarks build (CI builds them; it does not run them)"
cargo bench --workspace --no-run --quiet
scripts/install-test-tools.sh
echo "== load generator gate"
scripts/loadgen-gate.sh
echo "== paired gate on the simulated cost, this commit against itself (docs/ci-gate.md)"
COST=simulated OUT=target/paired-gate scripts/paired-gate.sh HEAD -- compare --duration 3s
echo "== tests"
scripts/test.sh
