#!/usr/bin/env bash
# Runs tickwheel-async's tests RUNS times in a row while HOG busy threads hog the CPU, as on a
# loaded CI runner: the timing tests (never early, drop cancels, races against the fire,
# shutdown, the echo servers on loopback) must hold however slow the machine is.
# Usage: scripts/async-under-load.sh [RUNS] [HOG]   (default 5 runs, 2 hog threads)
# Each run's output is kept in ASYNC_UNDER_LOAD_OUT (default target/async-under-load)/run-N.log,
# so a failure names its test. Exits 1 at the first failing run.
set -euo pipefail
cd "$(dirname "$0")/.."
runs="${1:-5}"
hog="${2:-2}"
out="${ASYNC_UNDER_LOAD_OUT:-target/async-under-load}"
mkdir -p "$out"
# shellcheck source=hog.sh
source scripts/hog.sh
# Built before the hogs start: the runs measure the tests, not the compiler.
cargo test -p tickwheel-async --all-features --no-run --quiet
start_hog "$hog"
for i in $(seq 1 "$runs"); do
  start=$(date +%s)
  if cargo test -p tickwheel-async --all-features --no-fail-fast >"$out/run-$i.log" 2>&1; then
    echo "run $i of $runs: passed ($(( $(date +%s) - start )) s, load $(cut -d' ' -f1 /proc/loadavg))"
  else
    echo "run $i of $runs: FAILED; the failing tests:"
    grep -E '^(test .* FAILED|---- )' "$out/run-$i.log" || tail -20 "$out/run-$i.log"
    exit 1
  fi
done
echo "$runs of $runs runs passed beside $hog busy threads"
