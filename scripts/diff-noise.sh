#!/usr/bin/env bash
# Measures how far `tickwheel-loadgen diff` can be trusted as a CI gate on this machine. Each
# pair is three `compare --repeat 5` runs of this build:
#   a: the baseline, on the machine as it is (run this script on a quiet machine);
#   b: the candidate, the same build, with HOG busy threads running beside it;
#   c: the candidate made 1.3x slower for real (`--slowdown 1.3`: every timer call spins out to
#      1.3 times its own cost), beside the same hog.
# and four diffs:
#   same build, quiet baseline, busy candidate  (a -> b): clean, exit 0, is right;
#   same build, busy baseline, quiet candidate  (b -> a): clean, exit 0, is right;
#   1.3x slower, quiet baseline, busy candidate (a -> c): flagged, exit 1, is right;
#   b's heap result renamed to the hierarchical wheel's (another timer under the same name)
#                                               (a -> b'): flagged, exit 1, is right.
# Usage: scripts/diff-noise.sh [PAIRS] [DURATION] [HOG]
#   defaults: 20 pairs of 10s runs (the CI recipe's), 2 hog threads: about 31 minutes on 2
#   cores.
#   HOG: busy-looping threads (`sh` loops), as another tenant's load: 2 on a 2-core machine
#        puts every measured call next to a CPU hog; 0 runs the candidates on the machine as it
#        is. The script starts them before each candidate run and stops them after it; each is
#        also bounded by `timeout` (DIFF_NOISE_HOG_SECS, default 600 s), so none outlives the
#        script.
# Output: a line per pair and a summary; every report and diff under DIFF_NOISE_OUT
# (default target/diff-noise).
#
# scripts/diff-noise.sh --paired [STUDIES] [DURATION] [HOG] [PAIRS] measures the paired gate
# instead (`tickwheel-loadgen paired`, docs/ci-gate.md): each study runs three gates of PAIRS
# pairs of `compare --repeat 3 --duration DURATION`, with HOG busy threads beside both builds
# throughout (a shared runner is busy for both alike): this build against itself, and against
# itself made 1.3x and 1.1x slower for real (`--slowdown`). Defaults: 20 studies, 5s, 2
# threads, 5 pairs. It prints each gate's exit and median ratios, then how many studies came
# out right, the ratio ranges, and one gate's wall time.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${1:-}" = "--paired" ]; then
  shift
  studies="${1:-20}" duration="${2:-5s}" hog="${3:-2}" pairs="${4:-5}"
  out="${DIFF_NOISE_OUT:-target/diff-noise-paired}"
  mkdir -p "$out"
  cargo build --release --quiet -p tickwheel-loadgen
  bin="$(cd "${CARGO_TARGET_DIR:-target}/release" && pwd)/tickwheel-loadgen"
  for f in 1.3 1.1; do
    printf '#!/bin/sh\nexec "%s" "$@" --slowdown %s\n' "$bin" "$f" >"$out/slow-$f.sh"
    chmod +x "$out/slow-$f.sh"
  done
  export HOG_SECS="${DIFF_NOISE_HOG_SECS:-3600}"
  # shellcheck source=hog.sh
  source scripts/hog.sh
  # gate NAME HEAD: one paired gate of $bin against HEAD; prints "EXIT SECONDS MEDIANS".
  gate() {
    local status=0 t0=$SECONDS
    "$bin" paired --base "$bin" --head "$2" --pairs "$pairs" --out "$out/$1" \
      -- compare --repeat 3 --duration "$duration" >"$out/$1.txt" 2>&1 || status=$?
    echo "$status $((SECONDS - t0)) $(python3 -c "import json,sys; print(' '.join('%s=%.3f' % (j['timer'], j['median']) for j in json.load(open(sys.argv[1]))['implementations']))" "$out/$1/paired.json")"
  }
  same=0 slow13=0 slow11=0
  start_hog "$hog"
  for i in $(seq 1 "$studies"); do
    read -r s1 t1 m1 <<<"$(gate "$i-same" "$bin")"
    read -r s2 _ m2 <<<"$(gate "$i-slow13" "$out/slow-1.3.sh")"
    read -r s3 _ m3 <<<"$(gate "$i-slow11" "$out/slow-1.1.sh")"
    [ "$s1" = 0 ] && same=$((same + 1))
    [ "$s2" = 1 ] && slow13=$((slow13 + 1))
    [ "$s3" = 1 ] && slow11=$((slow11 + 1))
    echo "study $i: same build exit $s1 ($m1; ${t1}s); 1.3x slower exit $s2 ($m2); 1.1x slower exit $s3 ($m3)"
  done
  stop_hog
  echo "same build: $same of $studies clean (exit 0)"
  echo "1.3x slower: flagged (exit 1) in $slow13 of $studies"
  echo "1.1x slower: flagged (exit 1) in $slow11 of $studies"
  exit 0
fi
pairs="${1:-20}"
duration="${2:-10s}"
hog="${3:-2}"
hog_secs="${DIFF_NOISE_HOG_SECS:-600}"
out="${DIFF_NOISE_OUT:-target/diff-noise}"
mkdir -p "$out"
cargo build --release --quiet -p tickwheel-loadgen
bin="${CARGO_TARGET_DIR:-target}/release/tickwheel-loadgen"
export HOG_SECS="$hog_secs"
# shellcheck source=hog.sh
source scripts/hog.sh
# run NAME HOGGED [FLAGS...]: one `compare --repeat 5` into $out/NAME.
run() {
  local name="$1" hogged="$2"
  shift 2
  [ "$hogged" = yes ] && start_hog "$hog"
  "$bin" compare --repeat 5 --duration "$duration" --out "$out/$name" "$@" >"$out/$name.txt" 2>&1
  stop_hog
}
# verdicts FILE: the per-implementation verdict words of one diff.
verdicts() {
  grep '^verdict' "$1" | sed 's/^verdict \([^:]*\): \([A-Za-z]*\).*/\1 \2/' | tr '\n' ' '
}
# diff_into A B FILE: the exit status of `diff A B`, its output kept in FILE.
diff_into() {
  local status=0
  "$bin" diff "$1" "$2" >"$3" || status=$?
  echo "$status"
}
clean=0 reverse=0 slow=0 swapped=0
for i in $(seq 1 "$pairs"); do
  run "${i}a" no
  run "${i}b" yes
  run "${i}c" yes --slowdown 1.3
  python3 - "$out/$i" <<'PY'
import json, sys
base = sys.argv[1]
swap = json.load(open(base + "b/report.json"))
heap = next(r for r in swap["results"] if r["timer"] == "heap")
heap["timer"] = "hierarchical"
swap["results"] = [heap]
json.dump(swap, open(base + "-swap.json", "w"))
PY
  s_same=$(diff_into "$out/${i}a/report.json" "$out/${i}b/report.json" "$out/$i-same.diff")
  s_rev=$(diff_into "$out/${i}b/report.json" "$out/${i}a/report.json" "$out/$i-reverse.diff")
  s_slow=$(diff_into "$out/${i}a/report.json" "$out/${i}c/report.json" "$out/$i-slow.diff")
  s_swap=$(diff_into "$out/${i}a/report.json" "$out/$i-swap.json" "$out/$i-swap.diff")
  [ "$s_same" = 0 ] && clean=$((clean + 1))
  [ "$s_rev" = 0 ] && reverse=$((reverse + 1))
  [ "$s_slow" = 1 ] && slow=$((slow + 1))
  [ "$s_swap" = 1 ] && swapped=$((swapped + 1))
  load=$(python3 -c "import json,sys; c=json.load(open(sys.argv[1]))['context']; print(c['load_start'], '->', c['load_end'])" "$out/${i}b/report.json")
  echo "pair $i: quiet->busy exit $s_same ($(verdicts "$out/$i-same.diff")); \
busy->quiet exit $s_rev; 1.3x slower exit $s_slow ($(verdicts "$out/$i-slow.diff")); \
swapped exit $s_swap; busy side load $load"
done
echo "same build, quiet baseline, busy candidate: $clean of $pairs diff clean (exit 0)"
echo "same build, busy baseline, quiet candidate: $reverse of $pairs diff clean (exit 0)"
echo "1.3x slower for real, quiet baseline, busy candidate: flagged (exit 1) in $slow of $pairs"
echo "heap under the hierarchical wheel's name: flagged (exit 1) in $swapped of $pairs"
