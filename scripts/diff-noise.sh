#!/usr/bin/env bash
# Measures how far `tickwheel-loadgen diff` can be trusted on this machine:
#   false alarms: PAIRS back-to-back pairs of `compare --repeat 5` of the same build, each pair
#                 diffed (exit 0 = clean);
#   detection:    each pair's second report with every timing figure scaled by 1.3 (a slower
#                 build), and the heap's result renamed to the hierarchical wheel's (another
#                 timer under the same name), each diffed against the first report (exit 1 =
#                 flagged).
# Usage: scripts/diff-noise.sh [PAIRS] [DURATION] [HOG]   (default 20 pairs of 5s runs, no hog;
#        ~25 min)
#   HOG: busy-looping threads (`sh` loops) to run alongside each pair's second run, the
#        candidate, as another tenant's load would: 2 on a 2-core machine puts every measured
#        call next to a CPU hog. The script starts them before that run and stops them after it;
#        each is also bounded by `timeout` (DIFF_NOISE_HOG_SECS, default 600 s), so none
#        outlives the script. With the default min-cost lateness, a clean diff under a hog means
#        the headline lateness left the preemptions out.
set -euo pipefail
cd "$(dirname "$0")/.."
pairs="${1:-20}"
duration="${2:-5s}"
hog="${3:-0}"
hog_secs="${DIFF_NOISE_HOG_SECS:-600}"
out="${DIFF_NOISE_OUT:-target/diff-noise}"
mkdir -p "$out"
cargo build --release --quiet -p tickwheel-loadgen
bin="${CARGO_TARGET_DIR:-target}/release/tickwheel-loadgen"
hog_pids=()
start_hog() {
  for _ in $(seq 1 "$hog"); do
    timeout "$hog_secs" sh -c 'while :; do :; done' &
    hog_pids+=("$!")
  done
}
stop_hog() {
  for pid in ${hog_pids[@]+"${hog_pids[@]}"}; do
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
  hog_pids=()
}
trap stop_hog EXIT
clean=0 slow=0 swapped=0
for i in $(seq 1 "$pairs"); do
  for side in a b; do
    if [ "$side" = b ] && [ "$hog" -gt 0 ]; then
      start_hog
    fi
    "$bin" compare --repeat 5 --duration "$duration" --out "$out/$i$side" >"$out/$i$side.txt" 2>&1
    stop_hog
  done
  python3 - "$out/$i" <<'PY'
import json, sys
base = sys.argv[1]
report = json.load(open(base + "b/report.json"))
slow = json.loads(json.dumps(report))
def scale_cost(c):
    for k in ("p50", "p99", "max"):
        c[k] = round(c[k] * 1.3)
    for k in ("runs_p50", "runs_p99", "runs_mean", "mean"):
        c[k] *= 1.3
def scale(figures):
    figures["ops_per_sec"] /= 1.3
    for name in ("lateness", "lateness_min_cost", "lateness_measured"):
        if name in figures:
            for k in ("p50", "p90", "p99", "p999", "p9999", "max"):
                figures[name][k] = round(figures[name][k] * 1.3)
    for c in figures["cost"].values():
        scale_cost(c)
for r in slow["results"]:
    scale(r)
    for rep in r["repetitions"]:
        scale(rep)
json.dump(slow, open(base + "-slow.json", "w"))
swap = json.loads(json.dumps(report))
heap = next(r for r in swap["results"] if r["timer"] == "heap")
heap["timer"] = "hierarchical"
swap["results"] = [heap]
json.dump(swap, open(base + "-swap.json", "w"))
PY
  if "$bin" diff "$out/${i}a/report.json" "$out/${i}b/report.json" >"$out/$i-same.diff"; then
    clean=$((clean + 1))
  fi
  if ! "$bin" diff "$out/${i}a/report.json" "$out/$i-slow.json" >"$out/$i-slow.diff"; then
    slow=$((slow + 1))
  fi
  if ! "$bin" diff "$out/${i}a/report.json" "$out/$i-swap.json" >"$out/$i-swap.diff"; then
    swapped=$((swapped + 1))
  fi
  echo "pair $i: same build $(grep -c '^verdict .*: ok' "$out/$i-same.diff" || true) of 4 ok; \
1.3x slower flagged on $(grep -c '^verdict .*: REGRESSION' "$out/$i-slow.diff" || true) of 4; \
swapped: $(grep '^verdict' "$out/$i-swap.diff" | cut -d'(' -f1)"
done
echo "same build: $clean of $pairs pairs diff clean (exit 0)"
echo "1.3x slower: flagged in $slow of $pairs"
echo "heap under the hierarchical wheel's name: flagged in $swapped of $pairs"
