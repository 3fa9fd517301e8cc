#!/usr/bin/env bash
# CI's load-generator gate: short `compare`s on the virtual clock (tick-exact, then as the loop
# sees it) and on the real clock, and the threaded service.
# Fails (exit 1) when any timer fires early, when implementations disagree on the counts of the
# same seeded workload, or when a threshold below is crossed; exit 2 is bad input or I/O.
# Thresholds are generous on purpose: CI runs on a shared 2-core machine. Reports land in
# target/loadgen-gate/{virtual-ticks,virtual,real,service}/ (report.json, *.hgrm, *.hlog,
# lateness.svg, cost.svg).
set -euo pipefail
cd "$(dirname "$0")/.."

out="${LOADGEN_GATE_OUT:-target/loadgen-gate}"
# `cargo run` rather than a path under target/, so CARGO_TARGET_DIR is honoured.
loadgen() { cargo run --release --quiet -p tickwheel-loadgen -- "$@"; }

echo "== loadgen gate: virtual clock, tick-exact (every fire in the tick of its deadline)"
loadgen compare --clock virtual --lateness ticks --repeat 1 --duration 10s \
  --connections 50000 --rate 100000 \
  --max-lateness max=0ns \
  --out "$out/virtual-ticks"

echo "== loadgen gate: virtual clock, lateness as the event loop sees it, 3 repetitions"
loadgen compare --clock virtual --duration 10s --connections 50000 --rate 100000 \
  --max-lateness p99=20ms --max-lateness max=1s \
  --max-cost insert.p99=50us --max-cost cancel.p99=50us \
  --max-cost reset.p99=50us --max-cost fire.p99=500us \
  --out "$out/virtual"

echo "== loadgen gate: real clock"
loadgen compare --clock real --repeat 1 --duration 2s --connections 5000 --rate 10000 \
  --request-timeout 50ms --slow-fraction 0.05 \
  --max-lateness p50=5ms --max-lateness p99=50ms --max-lateness max=1s \
  --out "$out/real"

echo "== loadgen gate: the threaded service, 1 and 2 producer threads"
loadgen run --timer hierarchical --clock real --service --threads 2 --repeat 1 --duration 2s \
  --connections 5000 --rate 10000 --request-timeout 50ms --slow-fraction 0.05 \
  --max-lateness p50=5ms --max-lateness p99=50ms --max-lateness max=1s \
  --out "$out/service"
