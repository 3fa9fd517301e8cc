#!/usr/bin/env bash
# How often the wall-clock paired gate raises a false alarm on this machine: one commit built
# twice, in two directories (as scripts/paired-gate.sh builds a base and a checkout), judged
# against itself RUNS times by `tickwheel-loadgen paired` with the gate's default command and
# pairs. Then, for each tolerance, how many of the RUNS gates would have flagged an
# implementation: a default tolerance must leave at least 19 of 20 clean.
#
#   scripts/paired-study.sh [RUNS] [REV] [-- COMMAND...]
#
# RUNS defaults to 20, REV to HEAD, COMMAND to the gate's default. PAIRS (default 5) and OUT
# (target/paired-study) are read from the environment. Takes about RUNS × PAIRS × 2 runs of
# COMMAND (about an hour for the defaults on 2 cores).
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-20}; [ $# -gt 0 ] && shift
rev=HEAD
if [ $# -gt 0 ] && [ "$1" != "--" ]; then rev=$1; shift; fi
[ "${1:-}" = "--" ] && shift
command=("$@")
[ ${#command[@]} -eq 0 ] && command=(compare --duration 5s --repeat 3)
out=${OUT:-target/paired-study}
pairs=${PAIRS:-5}

one=target/paired-study-a; two=target/paired-study-b
for dir in "$one" "$two"; do
  git worktree remove --force "$dir" >/dev/null 2>&1 || rm -rf "$dir"
done
git worktree prune
git worktree add --detach "$one" "$rev" >/dev/null
git worktree add --detach "$two" "$rev" >/dev/null
trap 'git worktree remove --force "$one" >/dev/null 2>&1; git worktree remove --force "$two" >/dev/null 2>&1 || true' EXIT
echo "== paired study: building $(git rev-parse --short "$rev") twice"
for dir in "$one" "$two"; do
  cargo build --release --quiet -p tickwheel-loadgen --manifest-path "$dir/Cargo.toml" \
    --target-dir "$dir-target"
done
rm -rf "$out"; mkdir -p "$out"
for i in $(seq 1 "$runs"); do
  echo "== gate $i of $runs (load $(cut -d' ' -f1 /proc/loadavg))"
  # Tolerance 0: every ratio is kept in paired.json, and judged below at each tolerance.
  "$two-target/release/tickwheel-loadgen" paired --base "$one-target/release/tickwheel-loadgen" \
    --pairs "$pairs" --tolerance 0 --out "$out/gate-$i" -- "${command[@]}" >"$out/gate-$i.log" 2>&1 || true
done
python3 - "$out" "$runs" <<'PY'
import json, sys, os
out, runs = sys.argv[1], int(sys.argv[2])
gates = [json.load(open(os.path.join(out, f"gate-{i}", "paired.json"))) for i in range(1, runs + 1)]
medians = {}
for g in gates:
    for j in g["implementations"]:
        medians.setdefault(j["timer"], []).append(j["median"])
singles = [r for g in gates for j in g["implementations"] for r in j["ratios"]]
print(f"{runs} gates of one build against itself, {len(singles)} single pairs: "
      f"single-pair ratios {min(singles):.3f}-{max(singles):.3f}")
for t, m in medians.items():
    print(f"  {t:<13} gate medians {min(m):.3f}-{max(m):.3f}")
worst = sorted(min(j["median"] for j in g["implementations"]) for g in gates)
print("tolerance  gates flagged (of %d)" % runs)
for tol in (0.05, 0.075, 0.10, 0.125, 0.15, 0.20, 0.25):
    print(f"  {tol:<8} {sum(1 for w in worst if w < 1 - tol)}")
PY
